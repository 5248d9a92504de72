/* cmd_export.c — `anatomist export TRACE [--format chrome|sqlite|folded] [-o FILE]
 * [--metric M] [--no-symbols] [-q]`: a trace in formats other tools read (export.h,
 * flame.h; docs/export.md). A file is written under FILE.tmp and renamed when complete,
 * so a failed export never leaves a partial FILE.
 * Part of cli/, the top layer: called by main.c (the commands) or by the commands (their
 * helpers); may call every layer below. */
#include "cli/cli.h"
#include "views/export.h"
#include "views/flame.h"
#include "analyses/report.h"
#include "model/util.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char ana_export_usage[] =
    "Usage: anatomist export TRACE [--format FORMAT] [-o FILE] [--metric METRIC]\n"
    "                        [--no-symbols] [-q] [-j N]\n"
    "\n"
    "Writes the trace in a format other tools read (docs/export.md):\n"
    "  chrome   Chrome trace event JSON, for Perfetto (ui.perfetto.dev) and\n"
    "           chrome://tracing: a process per GPU with a track per CUDA stream (kernels,\n"
    "           copies, sets) and the GPU time of NVTX ranges; the host process with a\n"
    "           track per thread (API calls linked to their GPU work, allocations, GEMMs,\n"
    "           collectives, NVTX ranges) and a counter of device memory by category\n"
    "  sqlite   an SQLite database with a table per kind of thing (kernels, copies,\n"
    "           memsets, api_calls, allocations, gemms, collectives, ranges, steps,\n"
    "           stacks, strings, ...), to query with SQL like an Nsight Systems export\n"
    "  folded   folded stacks of one flame-graph metric (frame;frame;frame value), for\n"
    "           flamegraph.pl, inferno or speedscope\n"
    "\n"
    "Options:\n"
    "  --format F      chrome, sqlite or folded; default: from the -o extension (.json,\n"
    "                  .sqlite or .db, .folded)\n"
    "  -o FILE         the file to write (-: standard output, chrome and folded only;\n"
    "                  the default for them); an existing FILE is replaced\n"
    "  --metric M      folded only: gpu-time (default), peak-memory, leaked-memory,\n"
    "                  alloc-bytes or alloc-count (anatomist flame --help)\n"
    "  --no-symbols    do not open the program's ELF files: frames show module+offset only\n"
    "  -q, --quiet     no summary line on stderr\n"
    "  -j, --jobs N    threads that read the trace ahead of the command and run its\n"
    "                  analyses (default: one per online CPU; 1: none, the command alone)\n"
    "  -h, --help      show this help\n"
    "\n"
    "Examples:\n"
    "  anatomist export train.anat -o train.json        # open in ui.perfetto.dev\n"
    "  anatomist export train.anat -o train.sqlite\n"
    "  sqlite3 train.sqlite 'SELECT * FROM kernel_summary LIMIT 10'\n"
    "  anatomist export train.anat --format folded --metric peak-memory -o peak.folded\n"
    "\n"
    "Exit status: 0 success, 2 usage error, unreadable/corrupt trace or unwritable output\n"
    "(nothing is left at FILE then).\n";

enum { ANA_EXPORT_CHROME, ANA_EXPORT_SQLITE, ANA_EXPORT_FOLDED };
enum { ANA_EXPORT_OPT_FORMAT = 256, ANA_EXPORT_OPT_METRIC, ANA_EXPORT_OPT_NO_SYMBOLS };
static const char *const ana_export_format_names[] = { "chrome", "sqlite", "folded" };

typedef struct ana_export_args {
    int format, metric; /* -1: not given */
    const char *out;    /* NULL: standard output */
    const char *path;
    int symbols, quiet;
} ana_export_args;

static int ana_export_format_parse(const char *s)
{
    for (int i = 0; i < 3; i++)
        if (strcmp(s, ana_export_format_names[i]) == 0)
            return i;
    return -1;
}

static int ana_export_format_of(const char *out)
{
    const char *dot = out ? strrchr(out, '.') : NULL;
    if (!dot)
        return -1;
    if (strcmp(dot, ".json") == 0)
        return ANA_EXPORT_CHROME;
    if (strcmp(dot, ".sqlite") == 0 || strcmp(dot, ".db") == 0 || strcmp(dot, ".sqlite3") == 0)
        return ANA_EXPORT_SQLITE;
    if (strcmp(dot, ".folded") == 0)
        return ANA_EXPORT_FOLDED;
    return -1;
}

/* What the options say together; ANA_EXIT_OK, or ANA_EXIT_BAD with the message printed. */
static int ana_export_check(ana_export_args *a)
{
    if (a->out && strcmp(a->out, "-") == 0)
        a->out = NULL;
    if (a->format < 0 && (a->format = ana_export_format_of(a->out)) < 0)
        return ana_cli_usage_error("export", "export: which format? Give --format chrome, "
                                   "sqlite or folded, or an -o FILE ending in .json, .sqlite, "
                                   ".db or .folded");
    if (a->format == ANA_EXPORT_SQLITE && !a->out)
        return ana_cli_usage_error("export", "export: sqlite writes a database file: give "
                                   "-o FILE (e.g. -o trace.sqlite)");
    if (a->metric >= 0 && a->format != ANA_EXPORT_FOLDED)
        return ana_cli_usage_error("export", "export: --metric is for --format folded");
    if (a->metric < 0)
        a->metric = ANA_FLAME_GPU_TIME;
    return ANA_EXIT_OK;
}

/* ANA_EXIT_OK, ANA_EXIT_BAD (message printed), or -1 after --help. */
static int ana_export_parse(int argc, char **argv, ana_export_args *a)
{
    static const struct option opts[] = {
        { "format", required_argument, NULL, ANA_EXPORT_OPT_FORMAT },
        { "output", required_argument, NULL, 'o' },
        { "metric", required_argument, NULL, ANA_EXPORT_OPT_METRIC },
        { "no-symbols", no_argument, NULL, ANA_EXPORT_OPT_NO_SYMBOLS },
        { "quiet", no_argument, NULL, 'q' },
        { "jobs", required_argument, NULL, 'j' },
        { "help", no_argument, NULL, 'h' },
        { 0, 0, 0, 0 },
    };
    int c;
    *a = (ana_export_args){ .format = -1, .metric = -1, .symbols = 1 };
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":hj:o:q", opts, NULL)) != -1) {
        switch (c) {
        case ANA_EXPORT_OPT_FORMAT:
            if ((a->format = ana_export_format_parse(optarg)) < 0)
                return ana_cli_usage_error("export", "export: unknown format '%s' (chrome, "
                                           "sqlite or folded)", optarg);
            break;
        case ANA_EXPORT_OPT_METRIC:
            if (ana_cli_metric("export", optarg, &a->metric) != 0)
                return ANA_EXIT_BAD;
            break;
        case 'o': a->out = optarg; break;
        case 'q': a->quiet = 1; break;
        case ANA_EXPORT_OPT_NO_SYMBOLS: a->symbols = 0; break;
        case 'j':
            if (ana_cli_jobs("export", optarg) != 0)
                return ANA_EXIT_BAD;
            break;
        case 'h': fputs(ana_export_usage, stdout); return -1;
        default: return ana_cli_bad_option("export", argv, c);
        }
    }
    a->path = ana_cli_one_trace("export", argc, argv);
    if (!a->path)
        return ANA_EXIT_BAD;
    return ana_export_check(a);
}

/* chrome or folded to out; 0, or -1 when writing failed. */
static int ana_export_stream(const ana_report *r, const ana_export_args *a, FILE *out)
{
    if (a->format == ANA_EXPORT_CHROME)
        return ana_export_chrome(r, out);
    ana_flame f;
    ana_flame_build(r, a->metric, &f);
    ana_flame_write_folded(&f, out);
    ana_flame_free(&f);
    return fflush(out) != 0 || ferror(out) ? -1 : 0;
}

typedef struct ana_export_job {
    const ana_report *r;
    const ana_export_args *a;
} ana_export_job;

static int ana_export_to_stream(FILE *f, void *ctx)
{
    const ana_export_job *job = ctx;
    return ana_export_stream(job->r, job->a, f);
}

static int ana_export_to_path(const char *path, void *ctx, char *err, size_t cap)
{
    const ana_export_job *job = ctx;
    return ana_export_sqlite(job->r, path, err, cap);
}

static void ana_export_summary(const ana_report *r, const ana_export_args *a)
{
    const ana_trace *t = r->t;
    struct stat st;
    char size[32] = "standard output";
    if (a->out && stat(a->out, &st) == 0)
        ana_fmt_bytes((uint64_t)st.st_size, size, sizeof(size));
    fprintf(stderr, "anatomist: export: wrote %s (%s, %s) from %llu GPU activities, %llu API "
            "calls, %zu allocations, %zu NVTX range records\n", a->out ? a->out : "-",
            ana_export_format_names[a->format], size, (unsigned long long)t->n_gpu,
            (unsigned long long)t->n_calls, r->mem.n_lives, t->libs.n_ranges);
}

static int ana_export_write(const ana_report *r, const ana_export_args *a)
{
    ana_export_job job = { r, a };
    if (a->format == ANA_EXPORT_SQLITE)
        return ana_cli_write_output("export", a->out, NULL, ana_export_to_path, &job);
    return ana_cli_write_output("export", a->out, ana_export_to_stream, NULL, &job);
}

int ana_cmd_export(int argc, char **argv)
{
    ana_export_args a;
    int rc = ana_export_parse(argc, argv, &a);
    if (rc != ANA_EXIT_OK)
        return rc < 0 ? ANA_EXIT_OK : rc;
    ana_report_opts ro = { .top = 0, .symbols = a.symbols, .min_gap_ns = ANA_GPU_MIN_GAP_NS };
    ana_report r;
    if (ana_cli_report_open(a.path, &ro, &r) != 0)
        return ANA_EXIT_BAD;
    rc = ana_export_write(&r, &a);
    if (rc == ANA_EXIT_OK && !a.quiet)
        ana_export_summary(&r, &a);
    ana_cli_report_close(&r);
    return rc;
}
