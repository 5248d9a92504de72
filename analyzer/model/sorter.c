/* sorter.c — items sorted in runs, spilled and merged (sorter.h). Part of model/: calls
 * model/spill.h and model/util.h only. */
#include "model/sorter.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/util.h"

_Thread_local const void *ana_sorter_ctx;

void ana_sorter_init(ana_sorter *s, size_t item, size_t run, int stable, ana_sorter_cmp cmp,
                     const void *ctx, const char *what)
{
    memset(s, 0, sizeof(*s));
    s->item = item;
    s->run = run ? run : 1;
    s->stable = stable;
    s->cmp = cmp;
    s->ctx = ctx;
    ana_spill_init(&s->runs, item, what);
    /* a small setting (tests) reads the file in small blocks too, so that every reader
     * meets their bounds */
    if (s->run < ANA_SPILL_BLOCK / item)
        s->runs.block = s->run * item;
}

static void ana_sorter_sort(ana_sorter *s)
{
    const void *was = ana_sorter_ctx;
    ana_sorter_ctx = s->ctx;
    (s->stable ? ana_sort_stable : ana_sort)(s->buf, s->n, s->item, s->cmp);
    ana_sorter_ctx = was;
}

/* The items in memory, sorted, become the next run. */
static void ana_sorter_run(ana_sorter *s)
{
    ana_sorter_sort(s);
    if (!s->n)
        return;
    if (s->n_runs) {
        const void *was = ana_sorter_ctx;
        ana_sorter_ctx = s->ctx;
        s->unordered |= s->cmp(s->buf, s->last) < 0;
        ana_sorter_ctx = was;
    } else {
        s->last = ana_xmalloc(s->item);
    }
    memcpy(s->last, s->buf + (s->n - 1) * s->item, s->item);
    if (s->keep) {
        s->n_runs++;
        s->keep(s->keep_arg, s->buf, s->n);
        s->n = 0;
        return;
    }
    ANA_GROW(s->starts, s->cap_runs, s->n_runs + 1);
    s->starts[s->n_runs++] = s->runs.n;
    ana_spill_to_file(&s->runs);
    ana_spill_push(&s->runs, s->buf, s->n);
    s->n = 0;
}

void *ana_sorter_slot(ana_sorter *s)
{
    if (s->n >= s->run)
        ana_sorter_run(s);
    if (s->n == s->cap)
        ana_grow((void **)&s->buf, &s->cap, s->n + 1, s->item);
    s->count++;
    return s->buf + s->n++ * s->item;
}

void ana_run_heap_add(ana_run_heap *h, size_t r)
{
    size_t i = h->n++; /* sift up */
    for (; i && h->less(h->arg, r, h->v[(i - 1) / 2]); i = (i - 1) / 2)
        h->v[i] = h->v[(i - 1) / 2];
    h->v[i] = r;
}

void ana_run_heap_next(ana_run_heap *h, int done)
{
    size_t r = h->v[0], i = 0;
    if (done) { /* the last in the heap takes its place */
        if (!--h->n)
            return;
        r = h->v[h->n];
    }
    for (;;) { /* sift r down from the top */
        size_t l = 2 * i + 1, m = l + 1, k = l;
        if (l >= h->n)
            break;
        if (m < h->n && h->less(h->arg, h->v[m], h->v[l]))
            k = m;
        if (!h->less(h->arg, h->v[k], r))
            break;
        h->v[i] = h->v[k], i = k;
    }
    h->v[i] = r;
}

typedef struct ana_sorter_heads {
    const ana_sorter *s;
    const uint8_t **head;
} ana_sorter_heads;

static int ana_sorter_run_less(void *arg, size_t a, size_t b)
{
    const ana_sorter_heads *x = arg;
    int c = x->s->cmp(x->head[a], x->head[b]);
    return c < 0 || (c == 0 && a < b);
}

/* The runs merged (equal items: the earlier run first) into emit. Each run is read
 * through a cursor of its own, with blocks small enough that all of them together hold
 * about 64 MiB. */
static void ana_sorter_merge(ana_sorter *s, void (*emit)(void *arg, const void *item), void *arg)
{
    size_t nr = s->n_runs;
    ana_spill_cur *c = ana_xcalloc(nr + 1, sizeof(*c));
    const uint8_t **head = ana_xcalloc(nr + 1, sizeof(*head));
    size_t *left = ana_xcalloc(nr + 1, sizeof(size_t));
    ana_sorter_heads heads = { s, head };
    ana_run_heap h = { ana_xcalloc(nr + 1, sizeof(size_t)), 0, ana_sorter_run_less, &heads };
    size_t block = ((64u << 20) / (nr + 1)) / s->item * s->item;
    if (block < (64u << 10))
        block = 64u << 10;
    if (block > s->runs.block)
        block = s->runs.block;
    const void *was = ana_sorter_ctx;
    ana_sorter_ctx = s->ctx;
    for (size_t r = 0; r < nr; r++) {
        ana_spill_open(&c[r], &s->runs, s->starts[r], r + 1 < nr ? s->starts[r + 1] : UINT64_MAX);
        c[r].block = block;
        const void *p;
        if (!(left[r] = ana_spill_peek(&c[r], &p)))
            continue;
        head[r] = p;
        ana_run_heap_add(&h, r);
    }
    while (h.n) {
        size_t r = h.v[0];
        emit(arg, head[r]);
        ana_spill_take(&c[r], 1);
        const void *p;
        if (--left[r] == 0)
            left[r] = ana_spill_peek(&c[r], &p);
        if (left[r])
            head[r] = c[r].at;
        ana_run_heap_next(&h, !left[r]);
    }
    ana_sorter_ctx = was;
    for (size_t r = 0; r < nr; r++)
        ana_spill_close(&c[r]);
    free(c);
    free(head);
    free(left);
    free(h.v);
}

static void ana_sorter_push(void *arg, const void *item) { ana_spill_push(arg, item, 1); }

/* Runs that follow each other: their items in turn into emit, no merge needed. */
static void ana_sorter_each(ana_sorter *s, void (*emit)(void *arg, const void *item), void *arg)
{
    ana_spill_cur c;
    const void *p;
    size_t n;
    ana_spill_open(&c, &s->runs, 0, UINT64_MAX);
    while ((n = ana_spill_peek(&c, &p))) {
        for (size_t i = 0; i < n; i++)
            emit(arg, (const uint8_t *)p + i * s->item);
        ana_spill_take(&c, n);
    }
    ana_spill_close(&c);
}

void ana_sorter_finish(ana_sorter *s, ana_spill *out, void (*emit)(void *arg, const void *item),
                       void *arg)
{
    if (!s->n_runs) {
        ana_sorter_sort(s);
        if (!emit) { /* the sorted array is the spill */
            ana_spill_adopt(out, s->buf, s->n);
            s->buf = NULL;
        } else {
            for (size_t i = 0; i < s->n; i++)
                emit(arg, s->buf + i * s->item);
        }
    } else {
        ana_sorter_run(s);
        ana_spill_seal(&s->runs);
        free(s->buf);
        s->buf = NULL;
        if (!emit && !s->unordered) { /* runs that follow each other: in order already */
            ana_spill_free(out);
            *out = s->runs;
            ana_spill_init(&s->runs, s->item, out->what);
        } else {
            size_t block = s->runs.block;
            ana_spill_to_file(out);
            out->block = block < out->block ? block : out->block;
            if (s->unordered)
                ana_sorter_merge(s, emit ? emit : ana_sorter_push, emit ? arg : out);
            else
                ana_sorter_each(s, emit, arg);
            ana_spill_seal(out);
        }
    }
    ana_sorter_free(s);
}

void ana_sorter_flush(ana_sorter *s) { ana_sorter_run(s); }

void ana_sorter_free(ana_sorter *s)
{
    free(s->buf);
    free(s->starts);
    free(s->last);
    ana_spill_free(&s->runs);
    s->buf = NULL, s->starts = NULL, s->last = NULL;
    s->n = s->cap = s->n_runs = s->cap_runs = 0;
}

size_t ana_sorter_setting(const char *name, size_t def, size_t item)
{
    const char *v = getenv(name);
    if (!v)
        return def;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno || end == v || *end || *v == '-' || n > SIZE_MAX / item) {
        static const char *said[16]; /* each setting is said once, whatever reads it again */
        size_t i = 0;
        while (i < 16 && said[i] && strcmp(said[i], name))
            i++;
        if (i < 16 && !said[i]) {
            said[i] = name;
            fprintf(stderr, "anatomist: ignoring %s=%s (expected a number of items, 0 for no "
                            "limit); using %zu\n", name, v, def);
        }
        return def;
    }
    return n ? (size_t)n : SIZE_MAX;
}
