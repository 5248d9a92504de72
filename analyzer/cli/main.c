/* main.c — `anatomist`: dispatch to subcommands, top-level help and version. The top of
 * the analyzer: nothing calls it; it calls the commands (cmd_*.c) and cli/ helpers. */
#include "cli/cli.h"
#include "model/util.h"

#include <stdio.h>
#include <string.h>

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
    ana_cli_progress_init();
    int rc = ana_main_dispatch(cmd, argc - 1, argv + 1);
    if (rc < 0)
        return ana_cli_usage_error(NULL, "unknown command '%s' (commands: run, info, report, oom, recover, flame, html, diff, export, classify)",
                                   cmd);
    return rc;
}
