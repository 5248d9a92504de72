/* cmd_diff.c — `anatomist diff BASE HEAD [--format markdown|json|html|folded] [--metric M]
 * [-o FILE] [--top N] [--fail-on SPEC] [--no-symbols]`: what changed between two runs
 * (diff.h), for a pull request; exit status 1 when a --fail-on threshold is crossed, so CI
 * can gate on it. The folded format is the merged flame of one metric (flame.h).
 * Part of cli/, the top layer: called by main.c (the commands) or by the commands (their
 * helpers); may call every layer below. */
#include "cli/cli.h"
#include "analyses/diff.h"
#include "views/diff_write.h"
#include "views/flame.h"
#include "views/html.h"
#include "analyses/ranks_diff.h"
#include "analyses/report.h"
#include "model/util.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char ana_diff_usage[] =
    "Usage: anatomist diff BASE HEAD [--format markdown|json|html|folded] [--metric M]\n"
    "                      [-o FILE] [--top N] [--fail-on SPEC] [--no-symbols] [-j N]\n"
    "       anatomist diff --base B [--base B...] --head H [--head H...] [--format\n"
    "                      markdown|json] [-o FILE] [--fail-on SPEC]   (two jobs)\n"
    "\n"
    "What changed from the run traced in BASE to the run traced in HEAD (docs/diff.md):\n"
    "  * headline figures: median step time, peak memory, GPU busy, idle and total time,\n"
    "    memory live at the end, kernel launches, model FLOPs utilisation;\n"
    "  * GPU time by class (contraction, normalization, elementwise, communication,\n"
    "    memory, other), the mean per step (the whole run when a run has no steps);\n"
    "  * device memory by category at the peak (weights, optimizer, gradients,\n"
    "    activations, temporary, functionality, unattributed);\n"
    "  * the kernels whose GPU time changed most, new and vanished kernels, and the\n"
    "    allocation sites (call stacks by function name) whose bytes at the peak changed\n"
    "    most;\n"
    "  * a one-line verdict. Every figure is the one `anatomist report --json` prints.\n"
    "\n"
    "Two jobs of many ranks (docs/ranks.md): BASE and HEAD directories of traces (every\n"
    "*.anat inside), or each side given as a list with --base and --head (traces,\n"
    "directories, or `report --json` documents of the ranks): the merged figures of each\n"
    "job side by side (step time: the median of the ranks' median step times; peak\n"
    "memory: the largest rank's; GPU time: sums over ranks), work and collective time per\n"
    "step, each rank's median step time, and both jobs' stragglers. Markdown or json\n"
    "(schema anatomist.ranks-diff/1); --fail-on takes the same keys.\n"
    "\n"
    "Options:\n"
    "  --format F      markdown (default: a pull-request comment under 60 KB), json\n"
    "                  (schema anatomist.diff/1), or html (one self-contained page with\n"
    "                  differential flame graphs: red grew, blue shrank), or folded\n"
    "                  (differential folded stacks of --metric, 'stack base head' a line:\n"
    "                  flamegraph.pl draws them as a differential flame graph)\n"
    "  --metric M      with --format folded: gpu-time (default), peak-memory,\n"
    "                  leaked-memory, alloc-bytes or alloc-count (docs/flame.md)\n"
    "  -o, --output FILE  write there instead of standard output\n"
    "  --top N         kernels and sites listed; 0 = all (default 10)\n"
    "  --fail-on SPEC  exit 1 when a threshold is crossed, e.g.\n"
    "                  'peak-memory>+5%,step-time>+3%,memory:activations>+100MiB'\n"
    "                  (KEY OP VALUE, OP one of > >= < <=; VALUE +5% a relative change,\n"
    "                  +100MiB / -2ms a change, 70GiB unsigned: HEAD's own value)\n"
    "  --no-symbols    do not open the programs' ELF files: sites show module+offset\n"
    "  --base P, --head P  a job's traces, directories or report JSON documents (repeat\n"
    "                  for each file); with them, no BASE HEAD operands\n"
    "  -j, --jobs N    threads that read the trace ahead of the command and run its\n"
    "                  analyses (default: one per online CPU; 1: none, the command alone)\n"
    "  -h, --help      show this help\n"
    "\n"
    "Metric keys: step-time, peak-memory, gpu-busy, gpu-idle, gpu-time, memory-at-end,\n"
    "kernel-launches, mfu, time:CLASS (time:contraction...), memory:CATEGORY\n"
    "(memory:weights...). A figure a run does not know (step-time without steps) is\n"
    "never crossed; a line on stderr says so.\n"
    "\n"
    "Examples:\n"
    "  anatomist diff main.anat pr.anat > comment.md\n"
    "  anatomist diff main.anat pr.anat --fail-on 'peak-memory>+5%,step-time>+3%'\n"
    "  anatomist diff main.anat pr.anat --format html -o diff.html\n"
    "  anatomist diff main.anat pr.anat --format folded | flamegraph.pl > diff.svg\n"
    "  anatomist diff traces-main/ traces-pr/ --fail-on 'step-time>+3%'\n"
    "  anatomist diff --base r0.json --base r1.json --head pr/r0.json --head pr/r1.json\n"
    "\n"
    "Exit status: 0 success, 1 a --fail-on threshold was crossed (the output is still\n"
    "written), 2 usage error or unreadable/corrupt trace.\n";

enum { ANA_DIFF_OPT_TOP = 256, ANA_DIFF_OPT_FORMAT, ANA_DIFF_OPT_FAIL_ON,
       ANA_DIFF_OPT_NO_SYMBOLS, ANA_DIFF_OPT_METRIC, ANA_DIFF_OPT_BASE, ANA_DIFF_OPT_HEAD };
enum { ANA_DIFF_MD, ANA_DIFF_JSON, ANA_DIFF_HTML, ANA_DIFF_FOLDED };

typedef struct ana_diff_args {
    int format;
    int metric; /* of --format folded; -1 while parsing: not given */
    const char *output;
    size_t top;
    int symbols;
    ana_diff_limit lim[ANA_DIFF_MAX_LIMITS];
    size_t n_lim;
    char **sets[2]; /* --base, --head: a job each (ranks.h) */
    size_t n_set[2], cap_set[2];
    int jobs;       /* compare two jobs */
} ana_diff_args;

static void ana_diff_add_set(ana_diff_args *a, int side, char *path)
{
    ANA_GROW(a->sets[side], a->cap_set[side], a->n_set[side] + 1);
    a->sets[side][a->n_set[side]++] = path;
}

/* Two jobs: --base/--head lists, or BASE and HEAD of which one is a directory or JSON. */
static int ana_diff_jobs(int argc, char **argv, ana_diff_args *a)
{
    int n = argc - optind;
    if (a->n_set[0] || a->n_set[1]) {
        if (n || !a->n_set[0] || !a->n_set[1])
            return ana_cli_usage_error("diff", "--base and --head go together and replace "
                                       "the BASE HEAD operands");
    } else if (n == 2 && ana_ranks_wanted(argv + optind, 1) + ana_ranks_wanted(argv + optind + 1, 1)) {
        ana_diff_add_set(a, 0, argv[optind]);
        ana_diff_add_set(a, 1, argv[optind + 1]);
    } else {
        return -2; /* two traces */
    }
    a->jobs = 1;
    if (a->format != ANA_DIFF_MD && a->format != ANA_DIFF_JSON)
        return ana_cli_usage_error("diff", "two jobs are compared in markdown or json");
    if (a->metric >= 0)
        return ana_cli_usage_error("diff", "--metric is for --format folded of two traces");
    return ANA_EXIT_OK;
}

static int ana_diff_format(const char *s)
{
    return strcmp(s, "markdown") == 0 || strcmp(s, "md") == 0 ? ANA_DIFF_MD
           : strcmp(s, "json") == 0                           ? ANA_DIFF_JSON
           : strcmp(s, "html") == 0                           ? ANA_DIFF_HTML
           : strcmp(s, "folded") == 0                         ? ANA_DIFF_FOLDED
                                                              : -1;
}

/* --fail-on may be given several times: the limits add up. */
static int ana_diff_fail_on(ana_diff_args *a, const char *spec)
{
    char err[256];
    size_t n;
    if (ana_diff_limits_parse(spec, a->lim + a->n_lim, ANA_DIFF_MAX_LIMITS - a->n_lim, &n, err,
                              sizeof(err)) != 0)
        return ana_cli_usage_error("diff", "bad --fail-on %s", err);
    a->n_lim += n;
    return ANA_EXIT_OK;
}

static int ana_diff_parse(int argc, char **argv, ana_diff_args *a)
{
    static const struct option opts[] = {
        { "format", required_argument, NULL, ANA_DIFF_OPT_FORMAT },
        { "output", required_argument, NULL, 'o' },
        { "top", required_argument, NULL, ANA_DIFF_OPT_TOP },
        { "fail-on", required_argument, NULL, ANA_DIFF_OPT_FAIL_ON },
        { "no-symbols", no_argument, NULL, ANA_DIFF_OPT_NO_SYMBOLS },
        { "metric", required_argument, NULL, ANA_DIFF_OPT_METRIC },
        { "base", required_argument, NULL, ANA_DIFF_OPT_BASE },
        { "head", required_argument, NULL, ANA_DIFF_OPT_HEAD },
        { "jobs", required_argument, NULL, 'j' },
        { "help", no_argument, NULL, 'h' },
        { 0, 0, 0, 0 },
    };
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":hj:o:", opts, NULL)) != -1) {
        switch (c) {
        case 'o': a->output = optarg; break;
        case ANA_DIFF_OPT_NO_SYMBOLS: a->symbols = 0; break;
        case ANA_DIFF_OPT_FORMAT:
            if ((a->format = ana_diff_format(optarg)) < 0)
                return ana_cli_usage_error("diff", "unknown --format '%s' (markdown, json, html "
                                           "or folded)", optarg);
            break;
        case ANA_DIFF_OPT_METRIC:
            if (ana_cli_metric("diff", optarg, &a->metric) != 0)
                return ANA_EXIT_BAD;
            break;
        case ANA_DIFF_OPT_TOP:
            if (ana_cli_top("diff", optarg, &a->top) != 0)
                return ANA_EXIT_BAD;
            break;
        case ANA_DIFF_OPT_FAIL_ON:
            if (ana_diff_fail_on(a, optarg) != ANA_EXIT_OK)
                return ANA_EXIT_BAD;
            break;
        case ANA_DIFF_OPT_BASE: ana_diff_add_set(a, 0, optarg); break;
        case ANA_DIFF_OPT_HEAD: ana_diff_add_set(a, 1, optarg); break;
        case 'j':
            if (ana_cli_jobs("diff", optarg) != 0)
                return ANA_EXIT_BAD;
            break;
        case 'h': fputs(ana_diff_usage, stdout); return -1;
        default: return ana_cli_bad_option("diff", argv, c);
        }
    }
    int jobs = ana_diff_jobs(argc, argv, a);
    if (jobs != -2)
        return jobs;
    if (argc - optind != 2)
        return ana_cli_usage_error("diff", "diff wants two traces, BASE and HEAD (%d given)",
                                   argc - optind);
    if (a->output && (!*a->output || strcmp(a->output, argv[optind]) == 0 ||
                      strcmp(a->output, argv[optind + 1]) == 0))
        return ana_cli_usage_error("diff", "-o wants a file name other than the traces");
    if (a->metric >= 0 && a->format != ANA_DIFF_FOLDED)
        return ana_cli_usage_error("diff", "--metric is for --format folded (the other formats "
                                   "hold every metric)");
    if (a->metric < 0)
        a->metric = ANA_FLAME_GPU_TIME;
    return ANA_EXIT_OK;
}

typedef struct ana_diff_job {
    const ana_diff_args *a;
    const ana_diff *d;
    const ana_report *rb, *rh;
} ana_diff_job;

/* The merged flame of base and head: "stack base head" lines (difffolded.pl's format). */
static void ana_diff_folded(const ana_report *rb, const ana_report *rh, int metric, FILE *f)
{
    ana_flame merged;
    ana_flame_build_diff(rb, rh, metric, &merged);
    ana_flame_write_folded(&merged, f);
    ana_flame_free(&merged);
}

/* Writes the document; 0, or -1 when writing failed. */
static int ana_diff_emit(FILE *f, void *ctx)
{
    const ana_diff_job *job = ctx;
    if (job->a->format == ANA_DIFF_FOLDED)
        ana_diff_folded(job->rb, job->rh, job->a->metric, f);
    else if (job->a->format == ANA_DIFF_JSON)
        ana_diff_write_json(job->d, f);
    else if (job->a->format == ANA_DIFF_MD)
        ana_diff_write_markdown(job->d, f);
    else if (ana_html_write_diff(job->d, job->rb, job->rh, f) != 0)
        return -1;
    return ferror(f) ? -1 : 0;
}

typedef struct ana_diff_jobs_out {
    const ana_ranks_diff *x;
    int json;
} ana_diff_jobs_out;

static int ana_diff_jobs_emit(FILE *f, void *ctx)
{
    const ana_diff_jobs_out *o = ctx;
    if (o->json)
        ana_ranks_diff_write_json(o->x, f);
    else
        ana_ranks_diff_write_markdown(o->x, f);
    return ferror(f) ? -1 : 0;
}

/* Two jobs of many ranks (ranks_diff.h). */
static int ana_diff_run_jobs(const ana_diff_args *a)
{
    ana_ranks rb, rh;
    if (ana_ranks_load("diff", a->sets[0], a->n_set[0], &rb) != 0)
        return ANA_EXIT_BAD;
    if (ana_ranks_load("diff", a->sets[1], a->n_set[1], &rh) != 0) {
        ana_ranks_free(&rb);
        return ANA_EXIT_BAD;
    }
    ana_ranks_diff *x = ana_ranks_diff_new(&rb, &rh);
    size_t crossed = ana_ranks_diff_check(x, a->lim, a->n_lim, stderr);
    ana_diff_jobs_out o = { x, a->format == ANA_DIFF_JSON };
    int rc = ana_cli_write_output("diff", a->output, ana_diff_jobs_emit, NULL, &o);
    if (rc == ANA_EXIT_OK && crossed)
        rc = ANA_EXIT_FAIL;
    ana_ranks_diff_free(x);
    ana_ranks_free(&rh);
    ana_ranks_free(&rb);
    return rc;
}

int ana_cmd_diff(int argc, char **argv)
{
    ana_diff_args a = { .format = ANA_DIFF_MD, .metric = -1, .top = 10, .symbols = 1 };
    int rc = ana_diff_parse(argc, argv, &a);
    ana_text_names(a.format == ANA_DIFF_MD); /* markdown is read by people (util.h) */
    if (rc == ANA_EXIT_OK && a.jobs)
        rc = ana_diff_run_jobs(&a);
    free(a.sets[0]);
    free(a.sets[1]);
    if (rc != ANA_EXIT_OK || a.jobs)
        return rc < 0 ? ANA_EXIT_OK : rc; /* -1: --help */
    ana_trace *tb = ana_cli_load(argv[optind], ANA_LOAD_ALL);
    ana_trace *th = tb ? ana_cli_load(argv[optind + 1], ANA_LOAD_ALL) : NULL;
    if (!th) {
        if (tb)
            ana_trace_free(tb);
        return ANA_EXIT_BAD;
    }
    ana_report_opts ro = { .top = 10, .symbols = a.symbols, .min_gap_ns = ANA_GPU_MIN_GAP_NS };
    ana_report rb, rh;
    ana_report_build(&rb, tb, &ro);
    ana_report_build(&rh, th, &ro);
    ana_diff *d = ana_diff_new(&rb, &rh);
    ana_diff_set_top(d, a.top);
    size_t crossed = ana_diff_check(d, a.lim, a.n_lim, stderr);
    ana_diff_job job = { &a, d, &rb, &rh };
    rc = ana_cli_write_output("diff", a.output, ana_diff_emit, NULL, &job);
    if (rc == ANA_EXIT_OK && crossed)
        rc = ANA_EXIT_FAIL;
    ana_diff_free(d);
    ana_report_free(&rh);
    ana_report_free(&rb);
    ana_trace_free(th);
    ana_trace_free(tb);
    return rc;
}
