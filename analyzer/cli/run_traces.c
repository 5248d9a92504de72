/* run_traces.c — the end of `anatomist run`: the traces its process tree wrote (cli.h).
 *
 * Which files are the run's. Every process started under `anatomist run` inherits
 * ANATOMIST_RUN_ID, a random number drawn for the run, and writes it into its trace (the
 * INFO record of that name, in the first chunk, written when the trace is opened) and
 * into its live file. The candidates are the names the output pattern can give — each
 * %-escape matching anything, and anything before the last extension, which is where a
 * child's -PID and an exec'd image's .N go — among the files modified since the run
 * started; a candidate is the run's when its INFO says so. Another job's traces in the
 * same directory and earlier runs' traces under the same names are neither listed nor
 * touched. A process of the run that was given another ANATOMIST_OUTPUT is not found.
 *
 * Then, as before, the live files of the run's processes that have ended are written into
 * their traces (recovery), and each trace's last chunk says how it ended (END): one line
 * per trace with its pid, how it ended and its command.
 * Part of cli/: called by `anatomist run` (cmd_run.c); calls model/ and format/. */
#define _GNU_SOURCE
#include "cli/cli.h"
#include "live.h"
#include "naming.h"
#include "reader.h"
#include "safe_open.h"
#include "model/util.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct run_trace {
    char path[PATH_MAX];
    uint64_t pid, realtime_ns;
    char cmd[160];
    char how[400];
    long recovered;       /* records written in from the live file now; -1: none */
    int running;          /* its live file's process still runs */
} run_trace;

typedef struct run_list {
    run_trace *v;
    size_t n, cap;
} run_list;

/* Control bytes never reach the terminal. */
static void printable(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            *s = '?';
}

/* The glob pattern of every name the output pattern can give: each %-escape matches
 * anything, the name's own glob characters only themselves, and anything may come before
 * the last extension of the last component (NAME-PID.anat, NAME.1.anat). */
static int run_glob(const char *pattern, char *out, size_t cap)
{
    size_t n = 0;
    for (const char *p = pattern; *p; p++) {
        if (n + 4 >= cap)
            return -1;
        if (p[0] == '%' && p[1] == '%') {
            out[n++] = *++p;
        } else if (p[0] == '%' && p[1]) {
            out[n++] = '*';
            p++;
        } else {
            if (strchr("[]*?\\", *p))
                out[n++] = '\\';
            out[n++] = *p;
        }
    }
    out[n] = 0;
    return ana_name_insert(out, cap, "*");
}

/* Reads the first chunk: 1 when the trace is the run's (t's pid, start and command filled). */
static int run_head(const char *path, long run_id, run_trace *t)
{
    ana_reader *r;
    ana_error err;
    if (ana_reader_open(path, &r, &err) < 0)
        return 0;
    ana_reader_set_live(r, 0);
    char want[32];
    snprintf(want, sizeof(want), "%ld", run_id);
    int have_process = 0, ours = -1;
    ana_record rec;
    ana_reader_stats st;
    while (ours != 0 && !(have_process && ours == 1) && ana_reader_next(r, &rec, &err) == 1) {
        ana_reader_get_stats(r, &st);
        if (st.chunks > 1)
            break; /* the preamble is all in the first chunk */
        if (rec.kind == ANA_K_INFO && strcmp(rec.u.info.key.s, "ANATOMIST_RUN_ID") == 0) {
            ours = strcmp(rec.u.info.value.s, want) == 0;
        } else if (rec.kind == ANA_K_PROCESS && !have_process) {
            const ana_rec_process *p = &rec.u.process;
            have_process = 1;
            t->pid = p->pid;
            t->realtime_ns = p->realtime_ns;
            size_t used = 0;
            for (uint32_t i = 0; i < p->argv.n && used + 1 < sizeof(t->cmd); i++) {
                const char *a = p->argv.v[i].s;
                if (i == 0 && strrchr(a, '/'))
                    a = strrchr(a, '/') + 1; /* the program's name; its directory is noise here */
                int k = snprintf(t->cmd + used, sizeof(t->cmd) - used, "%s%s", i ? " " : "", a);
                used = k < 0 ? used : used + (size_t)k >= sizeof(t->cmd) ? sizeof(t->cmd) - 1 : used + (size_t)k;
            }
            if (used >= sizeof(t->cmd) - 1)
                memcpy(t->cmd + sizeof(t->cmd) - 4, "...", 4);
            if (!p->argv.n)
                snprintf(t->cmd, sizeof(t->cmd), "%s", p->exe.s);
            printable(t->cmd);
        }
    }
    ana_reader_close(r);
    return have_process && ours == 1;
}

/* Every trace of this run under the pattern, sorted by start (wall clock), then pid. */
static int run_by_start(const void *a, const void *b)
{
    const run_trace *x = a, *y = b;
    if (x->realtime_ns != y->realtime_ns)
        return x->realtime_ns < y->realtime_ns ? -1 : 1;
    return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static void run_find(const ana_run_end *e, run_list *out)
{
    char pat[PATH_MAX * 2];
    glob_t g;
    if (run_glob(e->pattern, pat, sizeof(pat)) < 0 || glob(pat, GLOB_NOSORT, NULL, &g) != 0)
        return;
    size_t sl = strlen(ANA_LIVE_SUFFIX);
    for (size_t i = 0; i < g.gl_pathc; i++) {
        const char *p = g.gl_pathv[i];
        struct stat sb;
        size_t len = strlen(p);
        if ((len > sl && strcmp(p + len - sl, ANA_LIVE_SUFFIX) == 0) || len >= PATH_MAX ||
            lstat(p, &sb) != 0 || !S_ISREG(sb.st_mode))
            continue;
        /* (written since the run started, give or take a file system's coarse clock: the
         * run id decides; this only spares reading old traces) */
        if (sb.st_mtim.tv_sec + 2 < e->started.tv_sec)
            continue;
        run_trace t = { .recovered = -1 };
        if (!run_head(p, e->run_id, &t))
            continue;
        snprintf(t.path, sizeof(t.path), "%s", p);
        ANA_GROW(out->v, out->cap, out->n + 1);
        out->v[out->n++] = t;
    }
    globfree(&g);
    ana_sort(out->v, out->n, sizeof(*out->v), run_by_start);
}

/* 1 when another trace of the run has t's pid and started later: t's program exec'd. */
static int run_exec_followed(const run_list *l, const run_trace *t)
{
    for (size_t i = 0; i < l->n; i++)
        if (&l->v[i] != t && l->v[i].pid == t->pid && l->v[i].realtime_ns > t->realtime_ns)
            return 1;
    return 0;
}

static void run_signal_text(int sig, char *buf, size_t cap)
{
    const char *abbrev = sigabbrev_np(sig);
    snprintf(buf, cap, "killed by signal %d (SIG%s)", sig, abbrev ? abbrev : "?");
}

/* How the process of t ended, as far as this run knows it, for the END record's detail. */
static void run_death(const ana_run_end *e, const run_list *l, const run_trace *t, char *buf, size_t cap)
{
    if (run_exec_followed(l, t))
        snprintf(buf, cap, "the process replaced its program (exec) before finishing its trace");
    else if (t->pid != (uint64_t)e->root_pid)
        snprintf(buf, cap, "the process ended without finishing its trace (killed, crashed, "
                           "_exit or exec)");
    else if (e->status > 128)
        run_signal_text(e->status - 128, buf, cap);
    else
        snprintf(buf, cap, "the process exited with status %d without finishing its trace "
                           "(_exit, or a crash in its exit path)", e->status);
}

/* Writes the live files of the run's ended processes into their traces. */
static void run_recover(const ana_run_end *e, run_list *l)
{
    for (size_t i = 0; i < l->n; i++) {
        run_trace *t = &l->v[i];
        ana_live_header h;
        if (ana_live_header_of(t->path, &h) < 0 || h.run_id != (uint64_t)e->run_id ||
            ana_live_where(&h) != ANA_LIVE_HERE)
            continue;
        char death[200], detail[300], msg[1024];
        run_death(e, l, t, death, sizeof(death));
        snprintf(detail, sizeof(detail), "%s; the rest was recovered from its live file", death);
        ana_live_recovery info = { 0 };
        int rc = ana_live_recover(t->path, detail, 0, &info, msg, sizeof(msg));
        if (rc == -1)
            fprintf(stderr, "anatomist: %s\n", msg);
        else if (rc == -2)
            t->running = 1;
        else if (rc == 1)
            t->recovered = (long)info.records;
    }
}

/* Reads how t's trace ends (its last chunk) into t->how. */
static void run_ending(const ana_run_end *e, const run_list *l, run_trace *t)
{
    ana_reader *r;
    ana_error err;
    char detail[256] = "";
    uint64_t reason = 0;
    int rc = -1;
    if (ana_reader_open(t->path, &r, &err) == 0) {
        ana_record rec;
        if (ana_reader_skip_to_last_chunk(r, &err) == 0)
            while ((rc = ana_reader_next(r, &rec, &err)) == 1)
                if (rec.kind == ANA_K_END) {
                    reason = rec.u.end.reason;
                    snprintf(detail, sizeof(detail), "%s", rec.u.end.detail.s);
                }
        ana_reader_close(r);
    }
    printable(detail);
    char rec[64] = "";
    if (t->recovered >= 0)
        snprintf(rec, sizeof(rec), "; %ld record%s recovered from its live file", t->recovered,
                 t->recovered == 1 ? "" : "s");
    int root = t->pid == (uint64_t)e->root_pid, exec = run_exec_followed(l, t);
    if (rc < 0)
        snprintf(t->how, sizeof(t->how), "unreadable: %s", err.msg);
    else if (t->running)
        snprintf(t->how, sizeof(t->how), "still running");
    else if (t->recovered >= 0 && exec)
        snprintf(t->how, sizeof(t->how), "replaced by exec%s", rec);
    else if (t->recovered >= 0 && root && e->status > 128)
        run_signal_text(e->status - 128, t->how, sizeof(t->how));
    else if (t->recovered >= 0 && root)
        snprintf(t->how, sizeof(t->how), "exit status %d, trace unfinished", e->status);
    else if (t->recovered >= 0)
        snprintf(t->how, sizeof(t->how), "trace unfinished (killed, crashed, _exit or exec)");
    else if (reason == ANA_END_EXIT && root && e->status > 128 && !exec)
        run_signal_text(e->status - 128, t->how, sizeof(t->how));
    else if (reason == ANA_END_EXIT && root && !exec)
        snprintf(t->how, sizeof(t->how), "exit status %d", e->status);
    else if (reason == ANA_END_EXIT)
        snprintf(t->how, sizeof(t->how), "finished");
    else if (reason == ANA_END_DISABLED)
        snprintf(t->how, sizeof(t->how), "the profiler stopped: %s", detail);
    else if (reason == ANA_END_RECOVERED)
        snprintf(t->how, sizeof(t->how), "recovered earlier: %s", detail);
    else
        snprintf(t->how, sizeof(t->how), "cut short (killed or crashed; no live file)");
    if (t->recovered >= 0 && !exec) {
        size_t n = strlen(t->how);
        snprintf(t->how + n, sizeof(t->how) - n, "%s", rec);
    }
}

/* The path as the user named it: relative to the run's directory when it lies there. */
static const char *run_shown(const ana_run_end *e, const char *path)
{
    if (e->shown_from && strlen(path) > e->shown_from &&
        strncmp(path, e->pattern, e->shown_from) == 0)
        return path + e->shown_from;
    return path;
}

/* path as one shell word. */
static void run_quote(const char *path, char *out, size_t cap)
{
    if (strspn(path, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:@%+=,-") ==
        strlen(path)) {
        snprintf(out, cap, "%s", path);
        return;
    }
    size_t n = 0;
    out[n++] = '\'';
    for (const char *p = path; *p && n + 6 < cap; p++) {
        if (*p == '\'') {
            memcpy(out + n, "'\\''", 4);
            n += 4;
        } else {
            out[n++] = *p;
        }
    }
    out[n++] = '\'';
    out[n] = 0;
}

/* `anatomist report DIR` when the run's traces are every trace of one directory, else
 * `anatomist report FILE...`. */
static void run_suggest(const ana_run_end *e, const run_list *l)
{
    char dir[PATH_MAX], word[PATH_MAX * 2], tmp[PATH_MAX];
    snprintf(tmp, sizeof(tmp), "%s", l->v[0].path);
    snprintf(dir, sizeof(dir), "%s", dirname(tmp));
    size_t others = 0, n = 0;
    for (size_t i = 0; i < l->n; i++) {
        char d[PATH_MAX];
        snprintf(d, sizeof(d), "%s", l->v[i].path);
        others += strcmp(dirname(d), dir) != 0;
    }
    char pat[PATH_MAX + 8];
    glob_t g;
    snprintf(pat, sizeof(pat), "%s/*.anat", dir);
    if (!others && glob(pat, 0, NULL, &g) == 0) {
        n = g.gl_pathc;
        globfree(&g);
    }
    fprintf(stderr, "anatomist: one report of them all: anatomist report");
    if (!others && n == l->n) {
        const char *shown = dir;
        if (e->shown_from && strlen(dir) + 1 == e->shown_from && !strncmp(dir, e->pattern, strlen(dir)))
            shown = "."; /* the run's own directory */
        else if (e->shown_from && strlen(dir) > e->shown_from && !strncmp(dir, e->pattern, e->shown_from))
            shown = dir + e->shown_from;
        run_quote(shown, word, sizeof(word));
        fprintf(stderr, " %s\n", word);
        return;
    }
    for (size_t i = 0; i < l->n; i++) {
        run_quote(run_shown(e, l->v[i].path), word, sizeof(word));
        fprintf(stderr, " %s", word);
    }
    fputc('\n', stderr);
}

static void run_print(const ana_run_end *e, const run_list *l)
{
    const run_trace *t = &l->v[0];
    if (l->n == 1 && t->pid == (uint64_t)e->root_pid && !strncmp(t->how, "exit status ", 12)) {
        char shown[PATH_MAX];
        snprintf(shown, sizeof(shown), "%s", run_shown(e, t->path));
        printable(shown);
        fprintf(stderr, "anatomist: trace written to %s\n", shown);
        return;
    }
    int w = 5, wh = 5;
    for (size_t i = 0; i < l->n; i++) {
        int n = (int)strlen(run_shown(e, l->v[i].path)), h = (int)strlen(l->v[i].how);
        w = n > w ? n : w;
        wh = h > wh ? h : wh;
    }
    fprintf(stderr, "anatomist: %zu trace%s written by the run's processes:\n", l->n,
            l->n == 1 ? "" : "s");
    fprintf(stderr, "  %-*s  %7s  %-*s  %s\n", w, "TRACE", "PID", wh, "ENDED", "COMMAND");
    for (size_t i = 0; i < l->n; i++) {
        char shown[PATH_MAX];
        snprintf(shown, sizeof(shown), "%s", run_shown(e, l->v[i].path));
        printable(shown);
        fprintf(stderr, "  %-*s  %7llu  %-*s  %s\n", w, shown, (unsigned long long)l->v[i].pid,
                wh, l->v[i].how, l->v[i].cmd);
    }
    if (l->n > 1)
        run_suggest(e, l);
}

/* No trace of this run: why, looking at the name the root's trace would have. */
static void run_none(const ana_run_end *e)
{
    char host[256] = "", path[PATH_MAX];
    struct stat st;
    if (gethostname(host, sizeof(host) - 1) != 0)
        strcpy(host, "localhost");
    if (ana_output_expand(e->pattern, host, e->root_pid, ana_env_rank(), 1, path, sizeof(path)) != 0) {
        fprintf(stderr, "anatomist: the output pattern '%s' expands to a name too long\n", e->pattern);
        return;
    }
    char magic[8], shown[PATH_MAX];
    snprintf(shown, sizeof(shown), "%s", run_shown(e, path));
    printable(shown);
    int fd = ana_open_file(path, O_RDONLY, ANA_OPEN_NOFOLLOW, &st);
    int is_trace = fd >= 0 && pread(fd, magic, 8, 0) == 8 && memcmp(magic, "ANATRACE", 8) == 0;
    if (fd >= 0)
        close(fd);
    if (fd < 0 && errno == ENOENT)
        fprintf(stderr, "anatomist: no trace was written (the program made no CUDA call?)\n");
    else if (fd < 0 || !is_trace)
        fprintf(stderr, "anatomist: no trace was written to %s (%s)\n", shown,
                fd < 0 ? ana_open_strerror(errno) : "it is not a trace");
    else if (st.st_mtim.tv_sec + 1 < e->started.tv_sec)
        fprintf(stderr, "anatomist: no trace was written (%s is from an earlier run)\n", shown);
    else
        fprintf(stderr, "anatomist: no trace was written (%s is not a trace of this run)\n", shown);
}

void ana_run_traces(const ana_run_end *e)
{
    run_list l = { 0 };
    run_find(e, &l);
    run_recover(e, &l);
    for (size_t i = 0; i < l.n; i++)
        run_ending(e, &l, &l.v[i]);
    if (!e->quiet) {
        if (l.n)
            run_print(e, &l);
        else
            run_none(e);
    }
    free(l.v);
}
