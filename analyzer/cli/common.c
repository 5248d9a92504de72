/* common.c — what the commands share (cli.h): usage messages, the options several take
 * (--top, --metric, one TRACE operand), and loading a trace or a report for a command.
 * Called by main.c and the cmd_*.c files of cli/; calls the importers (import/), the
 * report (analyses/report.h) and the flame graphs' metric names (views/flame.h). */
#include "cli/cli.h"
#include "views/flame.h"
#include "import/import.h"
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

int ana_cli_jobs(const char *cmd, const char *arg)
{
    uint64_t v;
    if (ana_parse_uint(arg, ANA_CLI_JOBS_MAX, &v) != 0 || v == 0)
        return ana_cli_usage_error(cmd, "%s: --jobs wants a number of threads from 1 to %d, "
                                        "not '%s'", cmd, ANA_CLI_JOBS_MAX, arg);
    ana_import_set_jobs((int)v);
    ana_report_set_jobs((int)v);
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
    if (ana_import_load(path, flags, &t, &err) != 0) {
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
