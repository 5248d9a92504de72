/* cmd_flame.c — `anatomist flame TRACE [--metric M] [--format html|svg|folded] [-o FILE]
 * [--no-symbols]`: one flame graph of a trace (flame.h, docs/flame.md).
 * Part of cli/, the top layer: called by main.c (the commands) or by the commands (their
 * helpers); may call every layer below. */
#include "cli/cli.h"
#include "views/flame.h"
#include "views/html.h"
#include "analyses/report.h"
#include "model/util.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char ana_flame_usage[] =
    "Usage: anatomist flame TRACE [--metric METRIC] [--format FORMAT] [-o FILE]\n"
    "                       [--no-symbols] [-j N]\n"
    "\n"
    "A flame graph of the trace: the host call stacks (outermost frame at the bottom,\n"
    "symbolized and demangled, with inlined functions as frames of their own when the\n"
    "program has debug info) with the GPU work or the memory they caused as the top\n"
    "frames, each as wide as its share of the metric (docs/flame.md).\n"
    "\n"
    "Metrics:\n"
    "  gpu-time       GPU time (ns) of every kernel, copy and set; top frames are the\n"
    "                 kernel's class and name (contraction;matmul_fwd), or memory;memcpy\n"
    "                 HtoD (pageable), memory;memset  (default)\n"
    "  peak-memory    device bytes live at the device memory peak; top frame the\n"
    "                 allocation's category: [weights], [optimizer], [gradients],\n"
    "                 [activations], [temporary], [functionality], [unattributed]\n"
    "  leaked-memory  device bytes still allocated when the trace ended\n"
    "  alloc-bytes    bytes of every successful device allocation\n"
    "  alloc-count    number of successful device allocations\n"
    "\n"
    "Options:\n"
    "  --metric M      one of the metrics above (default gpu-time)\n"
    "  --format F      folded (frame;frame;frame value, one stack a line: flamegraph.pl,\n"
    "                  inferno, speedscope), svg (interactive: hover, click to zoom,\n"
    "                  Ctrl-F to search) or html (one offline page, the flame graph of\n"
    "                  `anatomist html`: click to zoom, search with the share matched,\n"
    "                  tooltips); default: from the -o extension (.folded/.txt, .svg,\n"
    "                  .html), else folded\n"
    "  -o FILE         write to FILE (default, and -: standard output)\n"
    "  --no-symbols    do not open the program's ELF files: frames show module+offset only\n"
    "  -j, --jobs N    threads that read the trace ahead of the command and run its\n"
    "                  analyses (default: one per online CPU; 1: none, the command alone)\n"
    "  -h, --help      show this help\n"
    "\n"
    "Examples:\n"
    "  anatomist flame train.anat -o gpu.svg\n"
    "  anatomist flame train.anat --metric peak-memory -o peak.html\n"
    "  anatomist flame train.anat --metric alloc-bytes > allocs.folded\n"
    "  anatomist flame train.anat | flamegraph.pl > gpu.svg\n"
    "\n"
    "Exit status: 0 success (also when the metric is 0 everywhere: the output is then\n"
    "empty, and a line on stderr says so), 2 usage error, unreadable/corrupt trace or\n"
    "unwritable output.\n";

enum { ANA_FLAME_FOLDED, ANA_FLAME_SVG, ANA_FLAME_HTML };
enum { ANA_FLAME_OPT_METRIC = 256, ANA_FLAME_OPT_FORMAT, ANA_FLAME_OPT_NO_SYMBOLS };

typedef struct ana_flame_args {
    int metric, format; /* format -1: from the output's extension */
    const char *out, *path;
    int symbols;
} ana_flame_args;

static int ana_flame_format_parse(const char *s)
{
    return strcmp(s, "folded") == 0 ? ANA_FLAME_FOLDED
           : strcmp(s, "svg") == 0  ? ANA_FLAME_SVG
           : strcmp(s, "html") == 0 ? ANA_FLAME_HTML
                                    : -1;
}

static int ana_flame_format_of(const char *out)
{
    const char *dot = out ? strrchr(out, '.') : NULL;
    if (dot && strcmp(dot, ".svg") == 0)
        return ANA_FLAME_SVG;
    if (dot && (strcmp(dot, ".html") == 0 || strcmp(dot, ".htm") == 0))
        return ANA_FLAME_HTML;
    return ANA_FLAME_FOLDED;
}

static int ana_flame_parse(int argc, char **argv, ana_flame_args *a)
{
    static const struct option opts[] = {
        { "metric", required_argument, NULL, ANA_FLAME_OPT_METRIC },
        { "format", required_argument, NULL, ANA_FLAME_OPT_FORMAT },
        { "output", required_argument, NULL, 'o' },
        { "no-symbols", no_argument, NULL, ANA_FLAME_OPT_NO_SYMBOLS },
        { "jobs", required_argument, NULL, 'j' },
        { "help", no_argument, NULL, 'h' },
        { 0, 0, 0, 0 },
    };
    int c;
    *a = (ana_flame_args){ .metric = ANA_FLAME_GPU_TIME, .format = -1, .symbols = 1 };
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":hj:o:", opts, NULL)) != -1) {
        switch (c) {
        case ANA_FLAME_OPT_METRIC:
            if (ana_cli_metric("flame", optarg, &a->metric) != 0)
                return ANA_EXIT_BAD;
            break;
        case ANA_FLAME_OPT_FORMAT:
            if ((a->format = ana_flame_format_parse(optarg)) < 0)
                return ana_cli_usage_error("flame", "flame: unknown format '%s' (folded, svg "
                                           "or html)", optarg);
            break;
        case 'o': a->out = optarg; break;
        case ANA_FLAME_OPT_NO_SYMBOLS: a->symbols = 0; break;
        case 'j':
            if (ana_cli_jobs("flame", optarg) != 0)
                return ANA_EXIT_BAD;
            break;
        case 'h': fputs(ana_flame_usage, stdout); return -1;
        default: return ana_cli_bad_option("flame", argv, c);
        }
    }
    if (a->out && strcmp(a->out, "-") == 0)
        a->out = NULL;
    if (a->format < 0)
        a->format = ana_flame_format_of(a->out);
    a->path = ana_cli_one_trace("flame", argc, argv);
    return a->path ? ANA_EXIT_OK : ANA_EXIT_BAD;
}

typedef struct ana_flame_job {
    const ana_flame *f;
    const ana_flame_args *a;
    const char *title;   /* the SVG's: metric, unit and trace */
    const char *command; /* the page's heading: the traced command line, or NULL */
} ana_flame_job;

/* Writes the flame in the chosen format; 0, or -1 when writing failed. */
static int ana_flame_emit(FILE *out, void *ctx)
{
    const ana_flame_job *job = ctx;
    if (job->a->format == ANA_FLAME_SVG)
        ana_flame_write_svg(job->f, out, job->title);
    else if (job->a->format == ANA_FLAME_HTML)
        return ana_html_write_flame(job->f, job->command, job->a->path, out);
    else
        ana_flame_write_folded(job->f, out);
    return ferror(out) ? -1 : 0;
}

int ana_cmd_flame(int argc, char **argv)
{
    ana_flame_args a;
    int rc = ana_flame_parse(argc, argv, &a);
    if (rc != ANA_EXIT_OK)
        return rc < 0 ? ANA_EXIT_OK : rc;
    ana_report_opts ro = { .top = 0, .symbols = a.symbols, .min_gap_ns = ANA_GPU_MIN_GAP_NS };
    ana_report r;
    ana_flame f;
    char title[512];
    if (ana_cli_report_open(a.path, &ro, &r) != 0)
        return ANA_EXIT_BAD;
    ana_flame_build(&r, a.metric, &f);
    snprintf(title, sizeof(title), "%s (%s): %.400s", ana_flame_metric_name(a.metric),
             ana_flame_metric_unit(a.metric), a.path);
    if (f.total == 0)
        fprintf(stderr, "anatomist: flame: %s is 0 everywhere in %s: the flame graph is empty\n",
                ana_flame_metric_name(a.metric), a.path);
    char *cmd = ana_report_cmdline(r.t);
    ana_flame_job job = { &f, &a, title, cmd[0] ? cmd : NULL };
    rc = ana_cli_write_output("flame", a.out, ana_flame_emit, NULL, &job);
    free(cmd);
    ana_flame_free(&f);
    ana_cli_report_close(&r);
    return rc;
}
