/* cli.h — the subcommands of the `anatomist` executable and what they share.
 *
 * Each ana_cmd_* gets its own argv (argv[0] is the subcommand's name) and returns the
 * process exit status (util.h: ANA_EXIT_*; `run` returns the program's status). main.c
 * calls the commands; the commands call the helpers (common.c: usage messages, options,
 * loading; cli_output.c; tty.c; progress.c; run_traces.c; ranks_load.c), never main.c or each other.
 * The top layer of the analyzer (README.md): nothing below includes this header. */
#ifndef ANA_CLI_H
#define ANA_CLI_H

#include <time.h>
#include <stdio.h>

#include "model/trace.h"

int ana_cmd_run(int argc, char **argv);
int ana_cmd_info(int argc, char **argv);
int ana_cmd_report(int argc, char **argv);
int ana_cmd_classify(int argc, char **argv);
int ana_cmd_oom(int argc, char **argv);
int ana_cmd_recover(int argc, char **argv);
/* When standard output is a terminal: control bytes in what is printed are shown as \xNN,
 * never sent to the terminal (tty.c). */
void ana_cli_tty_guard(void);
/* When standard error is a terminal: a progress line while a trace loads (progress.c). */
void ana_cli_progress_init(void);
/* After `anatomist run`'s program ended (run_traces.c): finds the traces its process tree
 * wrote under the pattern (those whose INFO ANATOMIST_RUN_ID is run_id), recovers the live
 * files of those whose process ended, and lists them on stderr with pid, how each ended
 * and command (unless quiet: then only failures are said). */
typedef struct ana_run_end {
    const char *pattern;     /* the absolute output pattern the processes were given */
    size_t shown_from;       /* paths that begin with pattern's first shown_from bytes (the
                              * run's directory and '/') are shown without them; 0: never */
    long root_pid, run_id;   /* the program `run` started; ANATOMIST_RUN_ID */
    int status;              /* the program's exit status in the shell's convention */
    struct timespec started; /* CLOCK_REALTIME when the program was started */
    int quiet;
} ana_run_end;
void ana_run_traces(const ana_run_end *e);
int ana_cmd_flame(int argc, char **argv);
int ana_cmd_html(int argc, char **argv);
int ana_cmd_diff(int argc, char **argv);
int ana_cmd_export(int argc, char **argv);

/* Prints "anatomist: <message>" and a hint to `anatomist CMD --help` on stderr; returns
 * ANA_EXIT_BAD. cmd may be NULL for the top level. */
int ana_cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Message for an option getopt_long rejected (opterr = 0, optstring starting with ':'):
 * c is what it returned, '?' (unknown) or ':' (value missing). Returns ANA_EXIT_BAD. */
int ana_cli_bad_option(const char *cmd, char **argv, int c);

/* --top N: rows per ranked list, 0 = all (at most 1000000). 0, or ANA_EXIT_BAD with the
 * usage message printed. */
int ana_cli_top(const char *cmd, const char *arg, size_t *top);

/* -j N / --jobs N: the threads a trace is read with (import.h, ana_import_set_jobs), 1 to
 * ANA_CLI_JOBS_MAX. 0, or ANA_EXIT_BAD with the usage message printed. */
#define ANA_CLI_JOBS_MAX 256
int ana_cli_jobs(const char *cmd, const char *arg);

/* --metric M of flame graphs (flame.h): 0 with *metric set, or ANA_EXIT_BAD with the
 * usage message (listing the metrics) printed. */
int ana_cli_metric(const char *cmd, const char *arg, int *metric);

/* The one TRACE operand left after option parsing (argv[optind]); NULL, with the usage
 * message printed, when there is none or more than one. */
const char *ana_cli_one_trace(const char *cmd, int argc, char **argv);

/* Writes a command's output (cli_output.c). path NULL or "-": standard output, through
 * write_stream. Otherwise a new file of unpredictable name beside path (".NAME.XXXXXX",
 * mode 0666 less the umask) is written and renamed to path once complete, so no reader
 * sees half a file, a failure leaves none, and no planted link is written through:
 * write_stream gets the open file, or, when it is NULL, write_path gets the temporary
 * file's name (an empty file, for writers that open it themselves, like SQLite) and puts
 * why it failed in err. Each returns 0, or -1 (errno set for streams). An existing path
 * that is a symbolic link or not a regular file is refused ("anatomist: CMD: cannot
 * write PATH: it is a symbolic link; remove it or choose another -o"). Prints "anatomist:
 * CMD: cannot write PATH: why (choose another -o FILE)" on failure. Returns ANA_EXIT_OK
 * or ANA_EXIT_BAD. */
typedef int (*ana_cli_write_stream_fn)(FILE *f, void *ctx);
typedef int (*ana_cli_write_path_fn)(const char *path, void *ctx, char *err, size_t cap);
int ana_cli_write_output(const char *cmd, const char *path, ana_cli_write_stream_fn write_stream,
                         ana_cli_write_path_fn write_path, void *ctx);

/* Loads a whole trace and builds its report (report.h): 0, or -1 with why printed. The
 * report owns nothing of the trace; ana_cli_report_close frees both. */
struct ana_report;
struct ana_report_opts;
int ana_cli_report_open(const char *path, const struct ana_report_opts *ro, struct ana_report *r);
void ana_cli_report_close(struct ana_report *r);

/* Loads a trace, or prints why it cannot ("anatomist: FILE: ...") and returns NULL. */
ana_trace *ana_cli_load(const char *path, unsigned flags);

/* Gathers a job (analyses/ranks.h) from CLI operands (ranks_load.c): trace files (.anat,
 * or PyTorch profiler JSON that kineto.h imports), directories (every *.anat inside, not
 * recursing) and `report --json` documents. Traces of processes without a rank (a
 * launcher) are left out with a note on stderr when others have one.
 * 0, or -1 with "anatomist: ..." printed (a directory without traces, an unreadable
 * file, mixed jobs). */
struct ana_ranks;
int ana_ranks_load(const char *cmd, char **paths, size_t n, struct ana_ranks *out);
/* 1 when the operands ask for the job view: several, a directory, or a `report --json`
 * document. */
int ana_ranks_wanted(char **paths, size_t n);

#endif
