/* cmd_recover.c — `anatomist recover TRACE...`: the records a dead process left in its live
 * file (format/live.h) written into its trace for good. (`anatomist run` does the same for
 * its own traces: run_traces.c.)
 * Part of cli/, the top layer: called by main.c (the commands) or by the commands (their
 * helpers); may call every layer below. */
#define _GNU_SOURCE
#include "cli/cli.h"
#include "live.h"
#include "model/util.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char ana_recover_usage[] =
    "Usage: anatomist recover [--quiet] [--force] TRACE...\n"
    "\n"
    "While a profiled process runs, the records it has not written into its trace yet are\n"
    "kept in TRACE.live beside it, where the kernel keeps them even if the process is\n"
    "killed (SIGKILL, the OOM killer), aborts, crashes or execs. Every command that reads a\n"
    "trace already reads on into its live file; recover writes those records into the trace\n"
    "for good, ends it with an END record saying it was recovered, and removes TRACE.live.\n"
    "`anatomist run` does this itself for the traces of the processes it ran.\n"
    "\n"
    "A trace whose process finished it has nothing to recover (a leftover live file of its\n"
    "own is removed). A torn last chunk is cut off before the recovered records are added.\n"
    "A trace whose process is still running is left alone.\n"
    "\n"
    "Options:\n"
    "  -q, --quiet     print nothing on success\n"
    "  -f, --force     recover even if a process with the live file's pid runs (the pid\n"
    "                  was reused by another program)\n"
    "  -h, --help      show this help\n"
    "\n"
    "Examples:\n"
    "  LD_PRELOAD=libanatomist.so ANATOMIST_OUTPUT=job.anat ./train   # killed\n"
    "  anatomist recover job.anat\n"
    "\n"
    "Exit status: 0 success (also when there was nothing to recover), 2 usage error, or a\n"
    "trace that is unreadable, corrupt or cannot be written.\n";

/* 0 or 1 (nothing to do, recovered), -1 after saying why. */
static int ana_recover_one(const char *path, const char *detail, int quiet, int force)
{
    char msg[1024];
    ana_live_recovery info;
    int rc = ana_live_recover(path, detail, force, &info, msg, sizeof(msg));
    if (rc < 0) {
        fprintf(stderr, "anatomist: %s\n", msg);
        return -1;
    }
    if (!quiet && rc == 1)
        fprintf(stderr, "anatomist: %s: recovered %llu record%s of %llu thread%s from %s%s\n", path,
                (unsigned long long)info.records, info.records == 1 ? "" : "s",
                (unsigned long long)info.threads, info.threads == 1 ? "" : "s", path, ANA_LIVE_SUFFIX);
    else if (!quiet)
        fprintf(stderr, "anatomist: %s: nothing to recover\n", path);
    return rc;
}

int ana_cmd_recover(int argc, char **argv)
{
    static const struct option opts[] = {
        { "quiet", no_argument, NULL, 'q' },
        { "force", no_argument, NULL, 'f' },
        { "help", no_argument, NULL, 'h' },
        { 0, 0, 0, 0 },
    };
    int quiet = 0, force = 0, c, bad = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":hqf", opts, NULL)) != -1) {
        switch (c) {
        case 'q': quiet = 1; break;
        case 'f': force = 1; break;
        case 'h': fputs(ana_recover_usage, stdout); return ANA_EXIT_OK;
        default: return ana_cli_bad_option("recover", argv, c);
        }
    }
    if (optind >= argc)
        return ana_cli_usage_error("recover", "name at least one trace");
    for (int i = optind; i < argc; i++)
        bad |= ana_recover_one(argv[i],
                               "the process ended without finishing its trace; the rest was "
                               "recovered from its live file by anatomist recover", quiet, force) < 0;
    return bad ? ANA_EXIT_BAD : ANA_EXIT_OK;
}
