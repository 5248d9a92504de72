/* spill.c — items written once and read in order, in memory or in a temporary file
 * (spill.h). Part of model/: calls model/util.h only. */
#define _GNU_SOURCE
#include "model/spill.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/util.h"

static const char *ana_spill_dir(void)
{
    const char *d = getenv("TMPDIR");
    return d && *d ? d : "/tmp";
}

static void ana_spill_fail(const ana_spill *s, const char *doing, int err)
{
    fprintf(stderr,
            "anatomist: cannot %s the temporary file of the trace's %s in %s: %s (set TMPDIR to "
            "a directory with room: up to about 50 bytes per record of the trace)\n",
            doing, s->what, ana_spill_dir(), strerror(err));
    exit(ANA_EXIT_BAD);
}

void ana_spill_init(ana_spill *s, size_t item, const char *what)
{
    memset(s, 0, sizeof(*s));
    s->item = item;
    s->fd = -1;
    s->what = what;
    s->block = ANA_SPILL_BLOCK;
    s->in_memory = UINT64_MAX;
}

void ana_spill_adopt(ana_spill *s, void *items, uint64_t n)
{
    free(s->mem);
    s->mem = items;
    s->n = n;
    s->cap = (size_t)n;
}

static void ana_spill_write(ana_spill *s, const uint8_t *p, size_t bytes)
{
    while (bytes) {
        ssize_t w = write(s->fd, p, bytes);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            ana_spill_fail(s, "write", w < 0 ? errno : ENOSPC);
        p += w, bytes -= (size_t)w;
    }
}

void ana_spill_to_file(ana_spill *s)
{
    if (s->fd >= 0)
        return;
    char path[4096];
    snprintf(path, sizeof(path), "%s/anatomist-spill-XXXXXX", ana_spill_dir());
    s->fd = mkostemp(path, O_CLOEXEC);
    if (s->fd < 0)
        ana_spill_fail(s, "make", errno);
    unlink(path); /* gone with the descriptor, whatever ends the command */
    s->wbuf = ana_xmalloc(ANA_SPILL_BLOCK);
    s->wn = 0;
    if (s->n)
        ana_spill_write(s, s->mem, (size_t)s->n * s->item);
    free(s->mem);
    s->mem = NULL;
    s->cap = 0;
}

void ana_spill_push(ana_spill *s, const void *items, size_t n)
{
    const uint8_t *p = items;
    if (s->fd < 0 && s->n + n > s->in_memory)
        ana_spill_to_file(s);
    if (s->fd < 0) {
        ana_grow((void **)&s->mem, &s->cap, (size_t)s->n + n, s->item);
        memcpy(s->mem + (size_t)s->n * s->item, p, n * s->item);
        s->n += n;
        return;
    }
    size_t bytes = n * s->item;
    s->n += n;
    if (bytes >= ANA_SPILL_BLOCK) { /* a run: written from the caller's items, not copied */
        ana_spill_seal(s);
        ana_spill_write(s, p, bytes);
        return;
    }
    while (bytes) {
        size_t k = ANA_SPILL_BLOCK - s->wn < bytes ? ANA_SPILL_BLOCK - s->wn : bytes;
        memcpy(s->wbuf + s->wn, p, k);
        s->wn += k, p += k, bytes -= k;
        if (s->wn == ANA_SPILL_BLOCK) {
            ana_spill_write(s, s->wbuf, s->wn);
            s->wn = 0;
        }
    }
}

void ana_spill_reserve(ana_spill *s, size_t n)
{
    if (s->fd < 0 && n > s->cap) {
        s->mem = ana_xrealloc(s->mem, (n ? n : 1) * s->item);
        s->cap = n;
    }
}

void ana_spill_seal(ana_spill *s)
{
    if (s->fd >= 0 && s->wn) {
        ana_spill_write(s, s->wbuf, s->wn);
        s->wn = 0;
    }
}

void ana_spill_free(ana_spill *s)
{
    free(s->mem);
    free(s->wbuf);
    if (s->fd >= 0)
        close(s->fd);
    size_t block = s->block;
    ana_spill_init(s, s->item, s->what);
    s->block = block;
}

void ana_spill_read(const ana_spill *s, uint64_t from, size_t n, void *dst)
{
    if (s->fd < 0) {
        memcpy(dst, s->mem + (size_t)from * s->item, n * s->item);
        return;
    }
    size_t got = 0, want = n * s->item;
    while (got < want) {
        ssize_t r = pread(s->fd, (uint8_t *)dst + got, want - got, (off_t)(from * s->item + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            ana_spill_fail(s, "read", r < 0 ? errno : EIO);
        got += (size_t)r;
    }
}

void ana_spill_open(ana_spill_cur *c, const ana_spill *s, uint64_t from, uint64_t to)
{
    memset(c, 0, sizeof(*c));
    c->s = s;
    c->end = to < s->n ? to : s->n;
    c->pos = from < c->end ? from : c->end;
    c->block = s->block;
}

size_t ana_spill_peek(ana_spill_cur *c, const void **p)
{
    if (!c->avail && c->pos < c->end) {
        const ana_spill *s = c->s;
        if (s->fd < 0) {
            c->at = s->mem + (size_t)c->pos * s->item;
            c->avail = (size_t)(c->end - c->pos);
        } else {
            size_t per = c->block / s->item ? c->block / s->item : 1;
            size_t n = c->end - c->pos < per ? (size_t)(c->end - c->pos) : per;
            if (!c->buf)
                c->buf = ana_xmalloc(per * s->item);
            ana_spill_read(s, c->pos, n, c->buf);
            c->at = c->buf;
            c->avail = n;
        }
        c->pos += c->avail;
    }
    *p = c->at;
    return c->avail;
}

void ana_spill_close(ana_spill_cur *c)
{
    free(c->buf);
    memset(c, 0, sizeof(*c));
}
