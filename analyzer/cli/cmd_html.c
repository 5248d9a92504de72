/* cmd_html.c — `anatomist html TRACE [-o FILE] [--top N] [--no-symbols]`: the report as
 * one self-contained interactive page (html.h, docs/html.md).
 * Part of cli/, the top layer: called by main.c (the commands) or by the commands (their
 * helpers); may call every layer below. */
#include "cli/cli.h"
#include "views/html.h"
#include "analyses/ranks.h"
#include "views/ranks_write.h"
#include "analyses/report.h"
#include "model/util.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char ana_html_usage[] =
    "Usage: anatomist html TRACE [-o FILE] [--top N] [--no-symbols] [-j N]\n"
    "       anatomist html DIR|TRACE...|REPORT.json... [-o FILE] [--top N]   (a job's ranks)\n"
    "\n"
    "Writes the report of a trace (an .anat file or a PyTorch profiler JSON trace) as one\n"
    "self-contained HTML page that works offline (no network, no CDN: styles, scripts and\n"
    "data are inside the file; docs/html.md):\n"
    "  * summary cards: step time, GPU busy and idle time, peak memory, MFU, the OOM;\n"
    "  * GPU time by class (contraction, normalization, elementwise, communication,\n"
    "    memory, other) in each step, as stacked bars;\n"
    "  * device memory over time, stacked by category (weights, optimizer, gradients,\n"
    "    activations, temporary, functionality, unattributed), the peak and the OOM marked;\n"
    "  * interactive flame graphs of GPU time, memory at the peak, memory leaked and bytes\n"
    "    allocated: click to zoom, search, tooltips;\n"
    "  * the GEMM, NCCL and kernel tables, memory by category, the OOM post-mortem and the\n"
    "    advice.\n"
    "Every figure on the page is the same figure as in `anatomist report --json`.\n"
    "Given a job's ranks (a directory of traces, several traces, or their `report --json`\n"
    "documents; docs/ranks.md): the job page, with the time anatomy summed over the ranks,\n"
    "memory, the per-rank table, the stragglers and the collective skew (default output:\n"
    "DIR.html for a directory; -o is needed for a list).\n"
    "\n"
    "Options:\n"
    "  -o, --output FILE  where to write the page; - for standard output\n"
    "                     (default: TRACE with its extension replaced by .html)\n"
    "  --top N            rows per ranked list, as in `anatomist report`; 0 = all\n"
    "                     (default 10)\n"
    "  --no-symbols       do not open the program's ELF files: frames show module+offset only\n"
    "  -j, --jobs N       threads that read the trace ahead of the command and run its\n"
    "                     analyses (default: one per online CPU; 1: none, the command alone)\n"
    "  -h, --help         show this help\n"
    "\n"
    "Examples:\n"
    "  anatomist run -o train.anat -- python train.py\n"
    "  anatomist html train.anat                  # writes train.html\n"
    "  anatomist html train.anat -o /tmp/report.html\n"
    "\n"
    "Exit status: 0 success, 2 usage error, unreadable/corrupt trace or the page could not\n"
    "be written.\n";

enum { ANA_HTML_OPT_TOP = 256, ANA_HTML_OPT_NO_SYMBOLS };

/* TRACE with its extension (after the last '.' of the last component) replaced by .html. */
static char *ana_html_default_output(const char *trace)
{
    const char *slash = strrchr(trace, '/');
    const char *dot = strrchr(slash ? slash + 1 : trace, '.');
    size_t stem = dot && dot != (slash ? slash + 1 : trace) ? (size_t)(dot - trace)
                                                            : strlen(trace);
    char *out = ana_xmalloc(stem + sizeof(".html"));
    memcpy(out, trace, stem);
    memcpy(out + stem, ".html", sizeof(".html"));
    return out;
}

static int ana_html_stream(FILE *f, void *r)
{
    return ana_html_write_report(r, f);
}

typedef struct ana_html_job {
    const ana_ranks *rs;
    size_t top;
} ana_html_job;

static int ana_html_ranks_stream(FILE *f, void *ctx)
{
    const ana_html_job *job = ctx;
    return ana_html_write_ranks(job->rs, job->top, f);
}

/* The job page of several ranks; the default page of a directory is DIR.html. */
static int ana_html_ranks(char **paths, size_t n, const char *output, size_t top)
{
    char *def = NULL;
    if (!output && n == 1) {
        size_t len = strlen(paths[0]);
        while (len > 1 && paths[0][len - 1] == '/')
            len--;
        def = ana_xmalloc(len + sizeof(".html"));
        memcpy(def, paths[0], len);
        memcpy(def + len, ".html", sizeof(".html"));
    } else if (!output || !*output) {
        return ana_cli_usage_error("html", "html: name the job's page with -o FILE");
    }
    ana_ranks rs;
    if (ana_ranks_load("html", paths, n, &rs) != 0) {
        free(def);
        return ANA_EXIT_BAD;
    }
    const char *dst = output ? output : def;
    ana_html_job job = { &rs, top };
    int rc = ana_cli_write_output("html", dst, ana_html_ranks_stream, NULL, &job);
    if (rc == ANA_EXIT_OK && strcmp(dst, "-") != 0)
        fprintf(stderr, "anatomist: html: wrote %s\n", dst);
    ana_ranks_free(&rs);
    free(def);
    return rc;
}

int ana_cmd_html(int argc, char **argv)
{
    static const struct option opts[] = {
        { "output", required_argument, NULL, 'o' },
        { "top", required_argument, NULL, ANA_HTML_OPT_TOP },
        { "no-symbols", no_argument, NULL, ANA_HTML_OPT_NO_SYMBOLS },
        { "jobs", required_argument, NULL, 'j' },
        { "help", no_argument, NULL, 'h' },
        { 0, 0, 0, 0 },
    };
    ana_report_opts ro = { .top = 10, .symbols = 1, .min_gap_ns = ANA_GPU_MIN_GAP_NS };
    const char *output = NULL;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":hj:o:", opts, NULL)) != -1) {
        switch (c) {
        case 'o': output = optarg; break;
        case ANA_HTML_OPT_NO_SYMBOLS: ro.symbols = 0; break;
        case ANA_HTML_OPT_TOP:
            if (ana_cli_top("html", optarg, &ro.top) != 0)
                return ANA_EXIT_BAD;
            break;
        case 'j':
            if (ana_cli_jobs("html", optarg) != 0)
                return ANA_EXIT_BAD;
            break;
        case 'h': fputs(ana_html_usage, stdout); return ANA_EXIT_OK;
        default: return ana_cli_bad_option("html", argv, c);
        }
    }
    if (ana_ranks_wanted(argv + optind, (size_t)(argc - optind)))
        return ana_html_ranks(argv + optind, (size_t)(argc - optind), output, ro.top);
    const char *path = ana_cli_one_trace("html", argc, argv);
    if (!path)
        return ANA_EXIT_BAD;
    if (output && !*output)
        return ana_cli_usage_error("html", "html: -o wants a file name (or - for standard output)");
    char *def = output ? NULL : ana_html_default_output(path);
    if (strcmp(output ? output : def, path) == 0) {
        free(def);
        return ana_cli_usage_error("html", "html: the page would replace the trace %s; "
                                           "choose another file with -o", path);
    }
    ana_report r;
    if (ana_cli_report_open(path, &ro, &r) != 0) {
        free(def);
        return ANA_EXIT_BAD;
    }
    const char *dst = output ? output : def;
    int rc = ana_cli_write_output("html", dst, ana_html_stream, NULL, &r);
    if (rc == ANA_EXIT_OK && strcmp(dst, "-") != 0)
        fprintf(stderr, "anatomist: html: wrote %s\n", dst);
    ana_cli_report_close(&r);
    free(def);
    return rc;
}
