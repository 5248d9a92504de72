/* ranks_load.c — see ranks.h: the ranks of a job from the command line's operands, one
 * trace at a time (each trace's report is built, summarised and freed before the next).
 * Part of cli/: called by the commands that take a job (report, html, diff); calls
 * import/, analyses/ and model/. */
#include "import/import.h"
#include "analyses/ranks.h"

#include "cli/cli.h"
#include "records.h"
#include "analyses/report.h"
#include "safe_open.h"
#include "model/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int ana_rl_ends(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n > m && strcmp(s + n - m, suffix) == 0;
}

static int ana_rl_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int ana_ranks_wanted(char **paths, size_t n)
{
    if (n > 1)
        return 1;
    return n == 1 && (ana_rl_is_dir(paths[0]) || ana_rank_json_is_report(paths[0]));
}

static int ana_rl_name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* 1 when the directory entry raw starts like a trace; otherwise 0, with a note saying
 * why it is skipped (path: raw as shown). */
static int ana_rl_check(const char *cmd, const char *raw, const char *path)
{
    struct stat st;
    char magic[8];
    int fd = ana_open_file(raw, O_RDONLY, 0, &st);
    if (fd < 0) {
        fprintf(stderr, "anatomist: %s: %s: %s; skipped\n", cmd, path, ana_open_strerror(errno));
        return 0;
    }
    int whole = st.st_size >= ANA_HEADER_SIZE && pread(fd, magic, 8, 0) == 8;
    close(fd);
    if (!whole)
        fprintf(stderr, "anatomist: %s: %s: %lld bytes, not a trace; skipped\n", cmd, path,
                (long long)st.st_size);
    else if (memcmp(magic, "ANATRACE", 8) != 0)
        fprintf(stderr, "anatomist: %s: %s: not a trace (no \"ANATRACE\" at its start); "
                        "skipped\n", cmd, path);
    return whole && memcmp(magic, "ANATRACE", 8) == 0;
}

/* A process stopped by RLIMIT_FSIZE, or killed before its header was written, leaves a
 * stub of under 32 bytes; others may plant FIFOs or junk in a shared directory. One such
 * file must not cost the report of every other rank, so a directory scan skips it with a
 * note. Named files are not scanned: they fail loudly in the reader (file and offset). */
static int ana_rl_usable(const char *cmd, const char *raw)
{
    char *path = ana_text_escape(raw, strlen(raw)); /* anyone's name, shown on stderr */
    int ok = ana_rl_check(cmd, raw, path);
    free(path);
    return ok;
}

/* The *.anat files of dir, sorted, as malloc'd paths; -1 with the reason printed. */
static int ana_rl_dir(const char *cmd, const char *dir, char ***out, size_t *n)
{
    size_t cap = 0;
    struct dirent *e;
    DIR *d = opendir(dir);
    *out = NULL;
    *n = 0;
    if (!d) {
        fprintf(stderr, "anatomist: %s: cannot read directory %s: %s\n", cmd, dir,
                strerror(errno));
        return -1;
    }
    while ((e = readdir(d)) != NULL) {
        if (!ana_rl_ends(e->d_name, ".anat"))
            continue;
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        char *p = ana_xmalloc(len);
        int slash = dir[0] && dir[strlen(dir) - 1] == '/';
        snprintf(p, len, "%s%s%s", dir, slash ? "" : "/", e->d_name);
        ANA_GROW(*out, cap, *n + 1);
        (*out)[(*n)++] = p;
    }
    closedir(d);
    ana_sort(*out, *n, sizeof(char *), ana_rl_name_cmp);
    size_t kept = 0;
    for (size_t i = 0; i < *n; i++) {
        if (ana_rl_usable(cmd, (*out)[i]))
            (*out)[kept++] = (*out)[i];
        else
            free((*out)[i]);
    }
    if (!kept) {
        fprintf(stderr, "anatomist: %s: %s holds no %straces (*.anat): give the directory the "
                        "job's ranks wrote (ANATOMIST_OUTPUT) or the trace files\n", cmd, dir,
                *n ? "usable " : "");
        free(*out);
        *out = NULL;
        *n = 0;
        return -1;
    }
    *n = kept;
    return 0;
}

/* One operand that is a file: a `report --json` document or a trace. */
static int ana_rl_file(const char *cmd, const char *path, ana_rank *k)
{
    char err[512];
    if (ana_rank_json_is_report(path)) {
        if (ana_rank_read_json(path, k, err, sizeof(err)) == 0)
            return 0;
        fprintf(stderr, "anatomist: %s: %s: %s\n", cmd, path, err);
        return -1;
    }
    ana_report_opts ro = { .top = 10, .symbols = 0, .min_gap_ns = ANA_GPU_MIN_GAP_NS };
    ana_report r;
    if (ana_cli_report_open(path, &ro, &r) != 0)
        return -1;
    ana_rank_from_report(&r, k, 1);
    ana_cli_report_close(&r);
    return 0;
}

static int ana_rl_add(const char *cmd, const char *path, ana_ranks *out)
{
    ana_rank k;
    if (ana_rl_file(cmd, path, &k) != 0)
        return -1;
    ana_ranks_add(out, &k);
    return 0;
}

/* Leaves out summaries without a rank when some have one (a launcher's trace). */
static void ana_rl_drop_rankless(const char *cmd, ana_ranks *rs)
{
    size_t o = 0, ranked = 0;
    for (size_t i = 0; i < rs->n; i++)
        ranked += rs->v[i].rank >= 0;
    if (!ranked || ranked == rs->n)
        return;
    for (size_t i = 0; i < rs->n; i++) {
        if (rs->v[i].rank >= 0) {
            rs->v[o++] = rs->v[i];
            continue;
        }
        fprintf(stderr, "anatomist: %s: note: %s left out: its process had no rank (no RANK "
                        "in its environment; a launcher?)\n", cmd, rs->v[i].source);
        ana_rank_free(&rs->v[i]);
    }
    rs->n = o;
}

int ana_ranks_load(const char *cmd, char **paths, size_t n, ana_ranks *out)
{
    char err[1024];
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < n; i++) {
        char **files = NULL;
        size_t nf = 0;
        int rc = 0;
        if (!ana_rl_is_dir(paths[i]))
            rc = ana_rl_add(cmd, paths[i], out);
        else if ((rc = ana_rl_dir(cmd, paths[i], &files, &nf)) == 0)
            for (size_t f = 0; f < nf && rc == 0; f++)
                rc = ana_rl_add(cmd, files[f], out);
        for (size_t f = 0; f < nf; f++)
            free(files[f]);
        free(files);
        if (rc != 0) {
            ana_ranks_free(out);
            return -1;
        }
    }
    ana_rl_drop_rankless(cmd, out);
    if (ana_ranks_check(out, err, sizeof(err)) != 0) {
        fprintf(stderr, "anatomist: %s: %s\n", cmd, err);
        ana_ranks_free(out);
        return -1;
    }
    ana_ranks_analyze(out);
    return 0;
}
