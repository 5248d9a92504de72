/* cmd_html.c — `anatomist html TRACE [-o FILE] [--top N] [--no-symbols]`: the report as
 * one self-contained interactive page (html.h, docs/html.md). */
#include "cli.h"
#include "html.h"
#include "report.h"
#include "util.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char ana_html_usage[] =
    "Usage: anatomist html TRACE [-o FILE] [--top N] [--no-symbols]\n"
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
    "\n"
    "Options:\n"
    "  -o, --output FILE  where to write the page; - for standard output\n"
    "                     (default: TRACE with its extension replaced by .html)\n"
    "  --top N            rows per ranked list, as in `anatomist report`; 0 = all\n"
    "                     (default 10)\n"
    "  --no-symbols       do not open the program's ELF files: frames show module+offset only\n"
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

int ana_cmd_html(int argc, char **argv)
{
    static const struct option opts[] = {
        { "output", required_argument, NULL, 'o' },
        { "top", required_argument, NULL, ANA_HTML_OPT_TOP },
        { "no-symbols", no_argument, NULL, ANA_HTML_OPT_NO_SYMBOLS },
        { "help", no_argument, NULL, 'h' },
        { 0, 0, 0, 0 },
    };
    ana_report_opts ro = { .top = 10, .symbols = 1, .min_gap_ns = ANA_GPU_MIN_GAP_NS };
    const char *output = NULL;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
        switch (c) {
        case 'o': output = optarg; break;
        case ANA_HTML_OPT_NO_SYMBOLS: ro.symbols = 0; break;
        case ANA_HTML_OPT_TOP:
            if (ana_cli_top("html", optarg, &ro.top) != 0)
                return ANA_EXIT_BAD;
            break;
        case 'h': fputs(ana_html_usage, stdout); return ANA_EXIT_OK;
        default: return ana_cli_bad_option("html", argv, c);
        }
    }
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
