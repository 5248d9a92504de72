/* cmd_classify.c — `anatomist classify [--explain] [--context CTX]`: kernel names on
 * stdin, one per line, to "name<TAB>class" (and the deciding rule with --explain) on
 * stdout, line by line as they come (names of any length; a trailing \r is dropped; empty
 * lines are skipped). Each name is printed as given, mangled or not, but for its control
 * bytes, shown as \xNN (util.h ana_text_escape): names come from traces.
 * Part of cli/, the top layer: called by main.c (the commands) or by the commands (their
 * helpers); may call every layer below. */
#include "analyses/classify.h"
#include "cli/cli.h"
#include "model/util.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

static const char ana_classify_usage[] =
    "Usage: anatomist classify [--explain] [--context CTX] < NAMES\n"
    "\n"
    "Reads kernel names on standard input, one per line (mangled \"_Z...\" or demangled),\n"
    "and prints each with its class of the time anatomy: contraction, normalization,\n"
    "elementwise, communication, memory or other (docs/classification.md).\n"
    "Output: NAME<TAB>CLASS, one line per non-empty input line, in input order.\n"
    "\n"
    "Options:\n"
    "  --explain        add a third column: the rule that decided\n"
    "  --context CTX    classify as if every kernel ran inside this API call:\n"
    "                   gemm, conv, attention, comm, memory, library or none (default)\n"
    "  -h, --help       show this help\n"
    "\n"
    "Examples:\n"
    "  echo ampere_sgemm_128x64_tn | anatomist classify\n"
    "  anatomist classify --explain < kernel-names.txt\n"
    "  echo 'void at::native::im2col_kernel<float>(...)' | anatomist classify --context conv\n"
    "\n"
    "Exit status: 0 success, 2 usage error.\n";

enum { ANA_OPT_EXPLAIN = 256, ANA_OPT_CONTEXT };

static int ana_parse_ctx(const char *text)
{
    for (int c = 0; c < ANA_CTX_COUNT; c++)
        if (strcmp(text, ana_ctx_name(c)) == 0)
            return c;
    return -1;
}

static void ana_classify_stream(FILE *in, FILE *out, int ctx, int explain)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, in)) >= 0) {
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = 0;
        if (n == 0)
            continue;
        ana_classification c = ana_classify(line, ctx);
        char *shown = ana_text_escape(line, (size_t)n);
        if (explain)
            fprintf(out, "%s\t%s\t%s\n", shown, ana_class_name(c.cls),
                    ana_classify_rule_name(c.rule));
        else
            fprintf(out, "%s\t%s\n", shown, ana_class_name(c.cls));
        free(shown);
    }
    free(line);
}

int ana_cmd_classify(int argc, char **argv)
{
    static const struct option opts[] = {
        { "explain", no_argument, NULL, ANA_OPT_EXPLAIN },
        { "context", required_argument, NULL, ANA_OPT_CONTEXT },
        { "help", no_argument, NULL, 'h' },
        { 0, 0, 0, 0 },
    };
    int explain = 0, ctx = ANA_CTX_NONE, c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case ANA_OPT_EXPLAIN: explain = 1; break;
        case ANA_OPT_CONTEXT:
            ctx = ana_parse_ctx(optarg);
            if (ctx < 0)
                return ana_cli_usage_error("classify", "classify: --context wants gemm, conv, "
                                                       "attention, comm, memory, library or "
                                                       "none, not '%s'", optarg);
            break;
        case 'h': fputs(ana_classify_usage, stdout); return ANA_EXIT_OK;
        default: return ana_cli_bad_option("classify", argv, c);
        }
    }
    if (optind < argc)
        return ana_cli_usage_error("classify", "classify: reads names on standard input; "
                                               "unexpected operand '%s'", argv[optind]);
    ana_classify_stream(stdin, stdout, ctx, explain);
    return ANA_EXIT_OK;
}
