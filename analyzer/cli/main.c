/* main.c — `anatomist`: dispatch to subcommands, top-level help and version. */
#include "cli/cli.h"
#include "views/flame.h"
#include "analyses/report.h"
#include "model/util.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef ANA_VERSION
#define ANA_VERSION "0.0.0"
#endif

static const char ana_main_usage[] =
    "Usage: anatomist COMMAND [OPTIONS] [ARGS]\n"
    "\n"
    "Anatomist profiles CUDA programs: where GPU memory and time go.\n"
    "\n"
    "Commands:\n"
    "  run [OPTIONS] -- PROGRAM [ARGS...]   run PROGRAM under the profiler, write a trace\n"
    "  info TRACE [--json]                  what a trace holds: format, records, process\n"
    "  report TRACE [--json] [--top N]      memory peak, leaks, failed allocations, kernels\n"
    "  oom TRACE [--json]                   what was live when memory ran out, what would fit\n"
    "  recover TRACE...                     write a killed process's last records into its trace\n"
    "  flame TRACE [--metric M] -o FILE     flame graph (html, svg, folded) of GPU time or memory\n"
    "  html TRACE -o report.html            the report as one self-contained interactive page\n"
    "  diff BASE HEAD [--format F]          what changed between two runs (markdown for a PR)\n"
    "  export TRACE --format F -o FILE      to Perfetto/Chrome JSON, SQLite or folded stacks\n"
    "  help [COMMAND]                       this text, or a command's help\n"
    "\n"
    "Options:\n"
    "  -h, --help       show this help\n"
    "  -V, --version    show the version of anatomist and of the trace format\n"
    "\n"
    "Examples:\n"
    "  anatomist run -- python train.py --bf16\n"
    "  anatomist run --sim --sim-memory 16GiB -- ./train_mlp\n"
    "  anatomist report anatomist-1234.anat\n"
    "\n"
    "Exit status:\n"
    "  0  success\n"
    "  1  the profiled program failed (run passes on the program's own status)\n"
    "  2  usage error, unreadable or corrupt trace, or anatomist could not start\n"
    "\n"
    "Run 'anatomist COMMAND --help' for the options of a command.\n";

int ana_cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fputs("anatomist: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    if (cmd)
        fprintf(stderr, "\nTry 'anatomist %s --help' for more information.\n", cmd);
    else
        fputs("\nTry 'anatomist --help' for more information.\n", stderr);
    return ANA_EXIT_BAD;
}

int ana_cli_bad_option(const char *cmd, char **argv, int c)
{
    const char *arg = argv[optind - 1];
    if (c == ':')
        return ana_cli_usage_error(cmd, "%s: option '%s' needs a value", cmd, arg);
    if (optopt && strncmp(arg, "--", 2) != 0)
        return ana_cli_usage_error(cmd, "%s: unknown option '-%c'", cmd, optopt);
    return ana_cli_usage_error(cmd, "%s: unknown option '%s'", cmd, arg);
}

int ana_cli_top(const char *cmd, const char *arg, size_t *top)
{
    uint64_t v;
    if (ana_parse_uint(arg, 1000000, &v) != 0)
        return ana_cli_usage_error(cmd, "%s: --top wants a number of rows (0 = all), not '%s'",
                                   cmd, arg);
    *top = (size_t)v;
    return 0;
}

int ana_cli_metric(const char *cmd, const char *arg, int *metric)
{
    char names[256] = "";
    if ((*metric = ana_flame_metric_parse(arg)) >= 0)
        return 0;
    for (int m = 0; m < ANA_FLAME_METRICS; m++)
        snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
                 m ? (m + 1 == ANA_FLAME_METRICS ? " or " : ", ") : "", ana_flame_metric_name(m));
    return ana_cli_usage_error(cmd, "%s: unknown metric '%s' (%s)", cmd, arg, names);
}

const char *ana_cli_one_trace(const char *cmd, int argc, char **argv)
{
    if (optind >= argc) {
        ana_cli_usage_error(cmd, "%s: which trace? (anatomist %s TRACE)", cmd, cmd);
        return NULL;
    }
    if (argc - optind > 1) {
        ana_cli_usage_error(cmd, "%s: one trace at a time ('%s' is extra)", cmd, argv[optind + 1]);
        return NULL;
    }
    return argv[optind];
}

ana_trace *ana_cli_load(const char *path, unsigned flags)
{
    struct stat st;
    ana_error err;
    ana_trace *t;
    char msg[1024];
    if (stat(path, &st) != 0) {
        fprintf(stderr, "anatomist: cannot open %s: %s\n", path, strerror(errno));
        return NULL;
    }
    if (S_ISDIR(st.st_mode)) {
        fprintf(stderr, "anatomist: %s is a directory, not a trace\n", path);
        return NULL;
    }
    if (ana_trace_load(path, flags, &t, &err) != 0) {
        ana_error_format(&err, msg, sizeof(msg));
        fprintf(stderr, "anatomist: %s\n", msg);
        return NULL;
    }
    /* A live file that cannot be read (planted FIFO, link, garbage) is left out, not
     * fatal: the trace itself is whole. Say so once, or the records it held go missing
     * without a word. */
    if (t->stats.live_error[0])
        fprintf(stderr, "anatomist: note: %s; the trace is read without it\n",
                t->stats.live_error);
    return t;
}

int ana_cli_report_open(const char *path, const ana_report_opts *ro, ana_report *r)
{
    ana_trace *t = ana_cli_load(path, ANA_LOAD_ALL);
    if (!t)
        return -1;
    ana_report_build(r, t, ro);
    return 0;
}

void ana_cli_report_close(ana_report *r)
{
    ana_trace *t = (ana_trace *)r->t; /* loaded by ana_cli_report_open */
    ana_report_free(r);
    ana_trace_free(t);
}

static int ana_main_dispatch(const char *cmd, int argc, char **argv)
{
    if (strcmp(cmd, "run") == 0)
        return ana_cmd_run(argc, argv);
    if (strcmp(cmd, "info") == 0)
        return ana_cmd_info(argc, argv);
    if (strcmp(cmd, "report") == 0)
        return ana_cmd_report(argc, argv);
    if (strcmp(cmd, "classify") == 0)
        return ana_cmd_classify(argc, argv);
    if (strcmp(cmd, "oom") == 0)
        return ana_cmd_oom(argc, argv);
    if (strcmp(cmd, "recover") == 0)
        return ana_cmd_recover(argc, argv);
    if (strcmp(cmd, "flame") == 0)
        return ana_cmd_flame(argc, argv);
    if (strcmp(cmd, "html") == 0)
        return ana_cmd_html(argc, argv);
    if (strcmp(cmd, "diff") == 0)
        return ana_cmd_diff(argc, argv);
    if (strcmp(cmd, "export") == 0)
        return ana_cmd_export(argc, argv);
    return -1;
}

static int ana_main_help(int argc, char **argv)
{
    if (argc < 2) {
        fputs(ana_main_usage, stdout);
        return ANA_EXIT_OK;
    }
    char *sub[] = { argv[1], "--help", NULL };
    int rc = ana_main_dispatch(argv[1], 2, sub);
    if (rc < 0)
        return ana_cli_usage_error(NULL, "unknown command '%s'", argv[1]);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(ana_main_usage, stderr);
        return ANA_EXIT_BAD;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0)
        return ana_main_help(1, argv);
    if (strcmp(cmd, "help") == 0)
        return ana_main_help(argc - 1, argv + 1);
    if (strcmp(cmd, "-V") == 0 || strcmp(cmd, "--version") == 0) {
        printf("anatomist %s (trace format %d.%d)\n", ANA_VERSION, ANA_FORMAT_MAJOR,
               ANA_FORMAT_MINOR);
        return ANA_EXIT_OK;
    }
    if (cmd[0] == '-')
        return ana_cli_usage_error(NULL, "unknown option '%s' (a command comes first)", cmd);
    ana_cli_tty_guard();
    int rc = ana_main_dispatch(cmd, argc - 1, argv + 1);
    if (rc < 0)
        return ana_cli_usage_error(NULL, "unknown command '%s' (commands: run, info, report, oom, recover, flame, html, diff, export, classify)",
                                   cmd);
    return rc;
}
