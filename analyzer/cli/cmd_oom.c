/* cmd_oom.c — `anatomist oom TRACE [--json] [--top N] [--no-symbols]`: the out-of-memory
 * post-mortem of one trace (oom.h), the report's "Out of memory" section on its own.
 * Part of cli/, the top layer: called by main.c (the commands) or by the commands (their
 * helpers); may call every layer below. */
#include "cli/cli.h"
#include "views/report_write.h"
#include "model/util.h"

#include <getopt.h>
#include <stdio.h>

static const char ana_oom_usage[] =
    "Usage: anatomist oom TRACE [--json] [--top N] [--no-symbols] [-j N]\n"
    "\n"
    "The post-mortem of the last device allocation that failed for want of memory\n"
    "(cudaErrorMemoryAllocation / CUDA_ERROR_OUT_OF_MEMORY; docs/oom.md):\n"
    "  * the request, the API, its call stack, and how many such failures there were;\n"
    "  * the free and total memory the device reported right after it, the shortfall,\n"
    "    and whether it was exhaustion (less free than asked for) or fragmentation\n"
    "    (enough free memory, no contiguous room);\n"
    "  * what was live when it failed: by category (weights, optimizer, gradients,\n"
    "    activations, temporary, functionality, unattributed) and by call stack;\n"
    "  * the step and phase it failed in, and the memory peaks of the steps before;\n"
    "  * what would fit: each applicable technique (gradient checkpointing, a smaller\n"
    "    micro-batch with gradient accumulation, 8-bit or factored optimizer states,\n"
    "    16-bit weights, freeing temporaries earlier, expandable segments) with the\n"
    "    bytes it would save against the shortfall.\n"
    "\n"
    "Options:\n"
    "  --json          print the `oom` object of the report's JSON (null when nothing failed)\n"
    "  --top N         allocation sites listed; 0 = all (default 10)\n"
    "  --no-symbols    do not open the program's ELF files: frames show module+offset only\n"
    "  -j, --jobs N    threads that read the trace ahead of the command and run its\n"
    "                  analyses (default: one per online CPU; 1: none, the command alone)\n"
    "  -h, --help      show this help\n"
    "\n"
    "Examples:\n"
    "  anatomist run --sim --sim-memory 8GiB -o oom.anat -- ./train\n"
    "  anatomist oom oom.anat\n"
    "  anatomist oom --json oom.anat\n"
    "\n"
    "Exit status: 0 success (also when nothing failed), 2 usage error or unreadable/corrupt\n"
    "trace.\n";

enum { ANA_OOM_OPT_TOP = 256, ANA_OOM_OPT_JSON, ANA_OOM_OPT_NO_SYMBOLS };

static void ana_oom_print(const ana_report *r, int json, const char *path)
{
    if (json) {
        ana_json j;
        ana_json_init(&j, stdout);
        ana_report_oom_json_value(r, &j);
        ana_json_finish(&j);
        return;
    }
    if (r->oom.present) {
        printf("anatomist oom: %s\n", path);
        ana_report_oom_text(r, stdout);
    } else if (r->oom.other_failures) {
        printf("no out-of-memory failure in %s (%llu failed device allocation%s with other "
               "errors: see anatomist report)\n", path, (unsigned long long)r->oom.other_failures,
               r->oom.other_failures == 1 ? "" : "s");
    } else {
        printf("no failed allocation in %s\n", path);
    }
}

int ana_cmd_oom(int argc, char **argv)
{
    static const struct option opts[] = {
        { "json", no_argument, NULL, ANA_OOM_OPT_JSON },
        { "top", required_argument, NULL, ANA_OOM_OPT_TOP },
        { "no-symbols", no_argument, NULL, ANA_OOM_OPT_NO_SYMBOLS },
        { "jobs", required_argument, NULL, 'j' },
        { "help", no_argument, NULL, 'h' },
        { 0, 0, 0, 0 },
    };
    ana_report_opts ro = { .top = 10, .symbols = 1, .min_gap_ns = ANA_GPU_MIN_GAP_NS };
    int json = 0, c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":hj:", opts, NULL)) != -1) {
        switch (c) {
        case ANA_OOM_OPT_JSON: json = 1; break;
        case ANA_OOM_OPT_NO_SYMBOLS: ro.symbols = 0; break;
        case ANA_OOM_OPT_TOP:
            if (ana_cli_top("oom", optarg, &ro.top) != 0)
                return ANA_EXIT_BAD;
            break;
        case 'j':
            if (ana_cli_jobs("oom", optarg) != 0)
                return ANA_EXIT_BAD;
            break;
        case 'h': fputs(ana_oom_usage, stdout); return ANA_EXIT_OK;
        default: return ana_cli_bad_option("oom", argv, c);
        }
    }
    const char *path = ana_cli_one_trace("oom", argc, argv);
    if (!path)
        return ANA_EXIT_BAD;
    ana_text_names(!json); /* the trace's strings escaped in text (util.h) */
    ana_report r;
    if (ana_cli_report_open(path, &ro, &r) != 0)
        return ANA_EXIT_BAD;
    ana_oom_print(&r, json, path);
    ana_cli_report_close(&r);
    return ANA_EXIT_OK;
}
