/* cmd_report.c — `anatomist report TRACE [--json] [--top N] [--min-gap TIME] [--no-symbols]`;
 * with several traces, a directory or `report --json` documents, the job report of
 * ranks.h.
 * Part of cli/, the top layer: called by main.c (the commands) or by the commands (their
 * helpers); may call every layer below. */
#include "cli/cli.h"
#include "analyses/ranks.h"
#include "views/ranks_write.h"
#include "views/report_write.h"
#include "model/util.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char ana_report_usage[] =
    "Usage: anatomist report TRACE [--json] [--top N] [--min-gap TIME] [--at WHEN]\n"
    "                        [--no-symbols] [-j N]\n"
    "       anatomist report TRACE|DIR|REPORT.json... [--json] [--top N]   (a job's ranks)\n"
    "\n"
    "Reports what a trace says about the program:\n"
    "  * the program, process, devices, duration and how the trace ended;\n"
    "  * device memory: peak (bytes and time), what was still allocated at the end (leaks),\n"
    "    pinned host memory apart; where it goes: weights, optimizer states, gradients,\n"
    "    activations, temporary buffers, library memory, unattributed, with the bytes per\n"
    "    parameter (docs/memory-anatomy.md);\n"
    "  * allocation and free calls per API: calls, successes, failures, bytes;\n"
    "  * the allocation sites (call stacks) holding the most memory at the peak;\n"
    "  * every failed allocation: size, CUDA error, free/total memory the device reported,\n"
    "    what was allocated at that moment, and its call stack;\n"
    "  * kernels by launch count; memcpy and memset calls and bytes by direction;\n"
    "  * what the GPU ran (when CUPTI recorded it): busy and idle time, kernels by GPU\n"
    "    time, copies by direction and pageable/pinned host memory with GB/s, streams,\n"
    "    and the longest idle gaps with the API calls before and after each;\n"
    "  * library calls (format 1.2 traces): cuBLAS/cuBLASLt GEMMs by shape with GPU time,\n"
    "    achieved and peak TFLOP/s, shapes not aligned for tensor cores, fp32 GEMMs run\n"
    "    without TF32; NCCL collectives with algorithm, protocol, algbw and busbw (as\n"
    "    nccl-tests defines them) and communicators; NVTX ranges with host and GPU time;\n"
    "    device memory by library at the peak and at the end, and by NVTX memory region.\n"
    "\n"
    "Many ranks (docs/ranks.md): given several traces of one job (one per process), a\n"
    "directory of them (every *.anat inside; a trace without a rank, like a launcher's, is\n"
    "left out), or the `report --json` documents of its ranks analysed elsewhere (*.json):\n"
    "the time anatomy summed over the ranks, each rank's memory peak and the largest, a\n"
    "table per rank (host, pid, steps, mean/median step time, work and collective time per\n"
    "step, GPU busy, peak memory, records), the stragglers (a rank whose median step time\n"
    "or work per step is more than max(10%, 3 robust deviations, 10% of the job's step time)\n"
    "above the other ranks' median, or whose collective time is that much below it: the\n"
    "others wait for it) with why each was flagged, and the collective skew (collectives\n"
    "matched by communicator and sequence number: spread of arrivals, who came last).\n"
    "JSON: schema anatomist.ranks/1. Traces of different jobs are refused.\n"
    "\n"
    "Options:\n"
    "  --json          print JSON (schema anatomist.report/1, see docs/report-schema.md)\n"
    "  --top N         rows per ranked list (sites, leaks, failures, kernels in text,\n"
    "                  kernels by GPU time, idle gaps, GEMMs, collectives, ranges);\n"
    "                  0 = all (default 10)\n"
    "  --min-gap TIME  GPU idle gaps shorter than TIME are not listed: a number with\n"
    "                  ns, us, ms or s (default 10us)\n"
    "  --no-symbols    do not open the program's ELF files: frames show module+offset only\n"
    "  --at WHEN       also split the device memory live at WHEN by category: a time since\n"
    "                  the trace began (1500ms, 2s) or step:N (the peak of step N)\n"
    "  -j, --jobs N    threads that read the trace ahead of the command and run its\n"
    "                  analyses (default: one per online CPU; 1: none, the command alone)\n"
    "  -h, --help      show this help\n"
    "\n"
    "Examples:\n"
    "  anatomist report anatomist-1234.anat\n"
    "  anatomist report --top 3 anatomist-1234.anat\n"
    "  anatomist report --json anatomist-1234.anat > report.json\n"
    "  anatomist report traces/                    (every rank of a job)\n"
    "  anatomist report --json rank0.json rank1.json rank2.json rank3.json\n"
    "\n"
    "Long traces: past a number of each (16 Mi pointer uses, 8 Mi GPU activities, 8 Mi API\n"
    "calls, 1 Mi memory events, 4 Mi GEMM calls, 1 Mi collectives, 1 Mi NVTX ranges, 4 Mi\n"
    "kernels in NVTX ranges), they wait in temporary files in $TMPDIR (else /tmp; up to ~50\n"
    "bytes per record, removed at once) instead of memory; ANATOMIST_SPILL_USES, _GPU,\n"
    "_CALLS, _MEMORY, _GEMMS, _COLLS, _RANGES and _NVTX set the numbers\n"
    "(docs/configuration.md).\n"
    "\n"
    "Exit status: 0 success, 2 usage error or unreadable/corrupt trace.\n";

enum { ANA_OPT_TOP = 256, ANA_OPT_JSON, ANA_OPT_NO_SYMBOLS, ANA_OPT_MIN_GAP, ANA_OPT_AT };

/* The job report of several ranks (ranks.h). */
static int ana_report_ranks(char **paths, size_t n, const ana_report_opts *ro, int json)
{
    ana_ranks rs;
    if (ro->at_spec)
        return ana_cli_usage_error("report", "report: --at is for one trace, not a job's ranks");
    if (ana_ranks_load("report", paths, n, &rs) != 0)
        return ANA_EXIT_BAD;
    if (json)
        ana_ranks_write_json(&rs, ro->top, stdout);
    else
        ana_ranks_write_text(&rs, ro->top, stdout);
    ana_ranks_free(&rs);
    return ANA_EXIT_OK;
}

int ana_cmd_report(int argc, char **argv)
{
    static const struct option opts[] = {
        { "json", no_argument, NULL, ANA_OPT_JSON },
        { "top", required_argument, NULL, ANA_OPT_TOP },
        { "no-symbols", no_argument, NULL, ANA_OPT_NO_SYMBOLS },
        { "min-gap", required_argument, NULL, ANA_OPT_MIN_GAP },
        { "at", required_argument, NULL, ANA_OPT_AT },
        { "jobs", required_argument, NULL, 'j' },
        { "help", no_argument, NULL, 'h' },
        { 0, 0, 0, 0 },
    };
    ana_report_opts ro = { .top = 10, .symbols = 1, .min_gap_ns = ANA_GPU_MIN_GAP_NS };
    int json = 0, c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":hj:", opts, NULL)) != -1) {
        switch (c) {
        case ANA_OPT_JSON: json = 1; break;
        case ANA_OPT_NO_SYMBOLS: ro.symbols = 0; break;
        case ANA_OPT_TOP:
            if (ana_cli_top("report", optarg, &ro.top) != 0)
                return ANA_EXIT_BAD;
            break;
        case ANA_OPT_MIN_GAP:
            if (ana_parse_duration(optarg, &ro.min_gap_ns) != 0)
                return ana_cli_usage_error("report", "report: --min-gap wants a time such as "
                                                     "10us or 2ms, not '%s'", optarg);
            break;
        case ANA_OPT_AT: ro.at_spec = optarg; break;
        case 'j':
            if (ana_cli_jobs("report", optarg) != 0)
                return ANA_EXIT_BAD;
            break;
        case 'h': fputs(ana_report_usage, stdout); return ANA_EXIT_OK;
        default: return ana_cli_bad_option("report", argv, c);
        }
    }
    ana_text_names(!json); /* the trace's strings escaped in text (util.h) */
    if (ana_ranks_wanted(argv + optind, (size_t)(argc - optind)))
        return ana_report_ranks(argv + optind, (size_t)(argc - optind), &ro, json);
    const char *path = ana_cli_one_trace("report", argc, argv);
    if (!path)
        return ANA_EXIT_BAD;
    ana_trace *t = ana_cli_load(path, ANA_LOAD_ALL);
    if (!t)
        return ANA_EXIT_BAD;
    ana_report r;
    ana_report_build(&r, t, &ro);
    if (ro.at_spec) {
        char err[160];
        if (ana_report_resolve_at(&r, ro.at_spec, &r.opt.at_ns, err, sizeof(err)) != 0) {
            fprintf(stderr, "anatomist report: %s (%s)\n", err, path);
            ana_report_free(&r);
            ana_trace_free(t);
            return ANA_EXIT_BAD;
        }
        r.opt.at_set = 1;
    }
    if (json)
        ana_report_write_json(&r, stdout);
    else
        ana_report_write_text(&r, stdout);
    ana_report_free(&r);
    ana_trace_free(t);
    return ANA_EXIT_OK;
}
