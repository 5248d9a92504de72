/* naming.c — ANATOMIST_OUTPUT pattern expansion and rank discovery (naming.h).
 * Called by the preload (its trace's name) and `anatomist run`; calls nothing of ours. */
#include "naming.h"

#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static long env_first(const char *const *names)
{
    int e = errno; /* read inside hooks: strtol's ERANGE is not the program's to see */
    long found = -1;
    for (; *names && found < 0; names++) {
        const char *v = getenv(*names);
        if (v && *v) {
            char *end;
            long n = strtol(v, &end, 10);
            if (*end == 0 && n >= 0)
                found = n;
        }
    }
    errno = e;
    return found;
}

long ana_env_rank(void)
{
    static const char *const n[] = { "RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", NULL };
    return env_first(n);
}

long ana_env_local_rank(void)
{
    static const char *const n[] = { "LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", NULL };
    return env_first(n);
}

long ana_env_world_size(void)
{
    static const char *const n[] = { "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", NULL };
    return env_first(n);
}

struct sink {
    char *out;
    size_t cap, len;
    int overflow;
};

static void emit(struct sink *s, const char *p, size_t n)
{
    if (s->len + n >= s->cap) {
        s->overflow = 1;
        return;
    }
    memcpy(s->out + s->len, p, n);
    s->len += n;
    s->out[s->len] = 0;
}

int ana_output_expand(const char *pattern, const char *host, long pid, long rank, int is_root,
                      char *out, size_t cap)
{
    struct sink s = { out, cap, 0, 0 };
    if (cap == 0)
        return -1;
    out[0] = 0;
    int has_pid = 0;
    char num[32];
    for (const char *p = pattern; *p; p++) {
        if (*p != '%' || !p[1]) {
            emit(&s, p, 1);
            continue;
        }
        p++;
        switch (*p) {
        case 'h': emit(&s, host, strlen(host)); break;
        case 'p':
            has_pid = 1;
            emit(&s, num, (size_t)snprintf(num, sizeof(num), "%ld", pid));
            break;
        case 'r':
            if (rank < 0)
                emit(&s, "norank", 6);
            else
                emit(&s, num, (size_t)snprintf(num, sizeof(num), "%ld", rank));
            break;
        case '%': emit(&s, "%", 1); break;
        default: emit(&s, p - 1, 2); break; /* unknown escapes stay as written */
        }
    }
    if (s.overflow)
        return -1;
    if (!has_pid && !is_root) {
        int n = snprintf(num, sizeof(num), "-%ld", pid);
        if (n < 0 || ana_name_insert(out, cap, num) < 0)
            return -1;
    }
    return 0;
}

int ana_name_insert(char *path, size_t cap, const char *text)
{
    size_t len = strlen(path), n = strlen(text);
    char *slash = strrchr(path, '/');
    char *dot = strrchr(slash ? slash + 1 : path, '.');
    size_t at = dot && dot != (slash ? slash + 1 : path) ? (size_t)(dot - path) : len;
    if (len + n >= cap)
        return -1;
    memmove(path + at + n, path + at, len - at + 1);
    memcpy(path + at, text, n);
    return 0;
}
