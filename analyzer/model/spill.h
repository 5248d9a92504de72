/* spill.h — a sequence of fixed-size items that the analyzer writes once and then reads in
 * order, any number of times: in memory while it is small, in a temporary file (in
 * $TMPDIR, else /tmp; removed as soon as it is made) once the trace is too long for it to
 * stay there. Per-record state that an analysis only ever reads front to back (a trace's
 * pointer uses, the allocation each one fell in) lives in one, so that the analyzer's
 * memory does not grow with the run's length (docs/overhead.md "Spilling").
 *
 * A cursor reads it in views: ana_spill_peek gives the next items as one contiguous array
 * (the memory itself, or a block read into the cursor's buffer), ana_spill_take consumes
 * them. Cursors are independent: each reads the file at its own offset (pread), so any
 * number may read one spill, on any threads, once it is sealed.
 * A temporary file that cannot be made or written ends the command (exit status 2) with
 * its directory and the reason: the analysis cannot go on without the items. */
#ifndef ANA_SPILL_H
#define ANA_SPILL_H

#include <stddef.h>
#include <stdint.h>

typedef struct ana_spill {
    size_t item;     /* bytes per item */
    uint64_t n;      /* items in all */
    uint8_t *mem;    /* in memory: the items (cap of them) */
    size_t cap;
    int fd;          /* in a file: its descriptor, else -1 */
    uint8_t *wbuf;   /* in a file: items not yet written (wn of ANA_SPILL_BLOCK bytes) */
    size_t wn;
    const char *what; /* what the items are, for messages */
    size_t block;     /* bytes a cursor reads from the file at once (ANA_SPILL_BLOCK, or less) */
    uint64_t in_memory; /* ana_spill_push goes to a file past this many items (no limit:
                         * UINT64_MAX, the default; ana_sorter_setting's SIZE_MAX too) */
} ana_spill;

/* Bytes a file spill writes or a cursor reads at once. */
#define ANA_SPILL_BLOCK (1u << 20)

void ana_spill_init(ana_spill *s, size_t item, const char *what);
/* Takes over items[0 .. n) (ana_xmalloc'd) as the spill's contents in memory. */
void ana_spill_adopt(ana_spill *s, void *items, uint64_t n);
/* From now on the items go to a temporary file (those in memory first). */
void ana_spill_to_file(ana_spill *s);
static inline int ana_spill_in_file(const ana_spill *s) { return s->fd >= 0; }
/* Adds items at the end: to memory while the spill is there and holds at most in_memory
 * items with them, else (from then on) to its file. */
void ana_spill_push(ana_spill *s, const void *items, size_t n);
/* In memory: room for n items in all, exactly (a spill whose size is known ahead). */
void ana_spill_reserve(ana_spill *s, size_t n);
/* Writes what is pending: call once every item is in, before reading. */
void ana_spill_seal(ana_spill *s);
void ana_spill_free(ana_spill *s);

/* Items [from, from + n) into dst, wherever they are (once sealed). */
void ana_spill_read(const ana_spill *s, uint64_t from, size_t n, void *dst);

typedef struct ana_spill_cur {
    const ana_spill *s;
    uint64_t pos, end;   /* the next item not yet peeked at, and where reading stops */
    const uint8_t *at;   /* the view: avail items from at */
    size_t avail;
    uint8_t *buf;        /* file spills: the block read */
    size_t block;        /* its bytes: the spill's block unless set before the first peek */
} ana_spill_cur;

/* A cursor on items [from, to) of s (to = UINT64_MAX: to the end). */
void ana_spill_open(ana_spill_cur *c, const ana_spill *s, uint64_t from, uint64_t to);
/* The next items, without consuming them: their number (0 at the end), *p the first. */
size_t ana_spill_peek(ana_spill_cur *c, const void **p);
/* Consumes n (≤ the last peek's number) items. */
static inline void ana_spill_take(ana_spill_cur *c, size_t n)
{
    c->at += n * c->s->item;
    c->avail -= n;
}
void ana_spill_close(ana_spill_cur *c);

/* Reading a spill front to back, one item at a time:
 *   ana_spill_iter it;
 *   ana_spill_iter_begin(&it, s, 0);
 *   for (const T *x; (x = ana_spill_iter_next(&it));) ...   (it.idx - 1 is x's index)
 *   ana_spill_iter_end(&it);
 * An item's pointer stays valid until the next call. */
typedef struct ana_spill_iter {
    ana_spill_cur c;
    const uint8_t *at;
    size_t left;
    uint64_t idx; /* the index of the next item */
} ana_spill_iter;
static inline void ana_spill_iter_begin(ana_spill_iter *it, const ana_spill *s, uint64_t from)
{
    ana_spill_open(&it->c, s, from, UINT64_MAX);
    it->at = NULL;
    it->left = 0;
    it->idx = it->c.pos;
}
static inline const void *ana_spill_iter_next(ana_spill_iter *it)
{
    if (!it->left) {
        const void *p;
        if (!(it->left = ana_spill_peek(&it->c, &p)))
            return NULL;
        it->at = p;
        ana_spill_take(&it->c, it->left);
    }
    const uint8_t *x = it->at;
    it->at += it->c.s->item;
    it->left--;
    it->idx++;
    return x;
}
static inline void ana_spill_iter_end(ana_spill_iter *it) { ana_spill_close(&it->c); }

#endif
