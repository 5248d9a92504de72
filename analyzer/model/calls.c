/* calls.c — the API calls in time order, in memory or packed (calls.h). Part of model/:
 * calls model/spill.h, model/sorter.h (its merge heap), model/u64map.h, model/util.h and
 * format/varint.h only. */
#include "model/calls.h"

#include <stdlib.h>
#include <string.h>

#include "format/varint.h"
#include "model/sorter.h"
#include "model/util.h"

void ana_calls_init(ana_calls *c)
{
    memset(c, 0, sizeof(*c));
    ana_spill_init(&c->bytes, 1, "API calls");
}

void ana_calls_adopt(ana_calls *c, ana_api_call *v, uint64_t n)
{
    ana_calls_free(c);
    c->raw = v;
    c->n = n;
}

/* A varint this file wrote (ana_varint_put): no bound to check. */
static inline uint64_t ana_get_varint(const uint8_t **p)
{
    if (!(**p & 0x80)) /* most are one byte */
        return *(*p)++;
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
}

/* A 32-bit field against the one before: its difference, zigzag-coded (format/varint.h). */
static uint64_t ana_zz32(uint32_t x, uint32_t prev)
{
    return ana_zigzag((int32_t)(x - prev));
}

static uint32_t ana_unzz32(uint64_t z, uint32_t prev)
{
    return prev + (uint32_t)ana_unzigzag(z);
}

/* The calls of block b: ANA_CALLS_BLOCK, but for the last. */
static size_t ana_calls_block_len(const ana_calls *c, uint64_t b)
{
    uint64_t left = c->n - b * ANA_CALLS_BLOCK;
    return left < ANA_CALLS_BLOCK ? (size_t)left : ANA_CALLS_BLOCK;
}

void ana_calls_pack(ana_calls *c, const ana_api_call *x)
{
    if (c->n % ANA_CALLS_BLOCK == 0) { /* a block begins: against zeros */
        if (!c->n)
            ana_spill_to_file(&c->bytes);
        size_t was = c->cap_blocks;
        ANA_GROW(c->off, c->cap_blocks, c->n_blocks + 2);
        if (c->cap_blocks != was)
            c->first_ns = ana_xrealloc(c->first_ns, c->cap_blocks * sizeof(*c->first_ns));
        c->off[c->n_blocks] = c->bytes.n;
        c->first_ns[c->n_blocks++] = x->time_ns;
        memset(&c->prev, 0, sizeof(c->prev));
        c->prev_nz_call = 0;
    }
    uint8_t b[5 * ANA_VARINT_MAX], *p = b;
    p += ana_varint_put(p, ana_zigzag((int64_t)(x->time_ns - c->prev.time_ns)));
    p += ana_varint_put(p, ana_zz32(x->corr_w, c->prev.corr_w));
    p += ana_varint_put(p, x->arg_w);
    p += ana_varint_put(p, x->call_w ? ana_zz32(x->call_w, c->prev_nz_call) + 1 : 0);
    p += ana_varint_put(p, x->site);
    ana_spill_push(&c->bytes, b, (size_t)(p - b));
    if (x->call_w)
        c->prev_nz_call = x->call_w;
    c->prev = *x;
    c->n++;
}

void ana_calls_pack_run(ana_calls *c, const ana_api_call *v, size_t n)
{
    ANA_GROW(c->runs, c->cap_runs, c->n_runs + 1);
    c->runs[c->n_runs++] = c->n;
    for (size_t i = 0; i < n; i++)
        ana_calls_pack(c, &v[i]);
}

typedef struct ana_calls_heads {
    int (*cmp)(const void *, const void *);
    const ana_api_call *head;
} ana_calls_heads;

static int ana_calls_run_less(void *arg, size_t a, size_t b)
{
    const ana_calls_heads *x = arg;
    int c = x->cmp(&x->head[a], &x->head[b]);
    return c < 0 || (c == 0 && a < b);
}

void ana_calls_merge_runs(const ana_calls *c, ana_calls *out,
                          int (*cmp)(const void *, const void *))
{
    size_t nr = c->n_runs;
    uint64_t *pos = ana_xcalloc(nr + 1, sizeof(uint64_t));
    ana_api_call *head = ana_xcalloc(nr + 1, sizeof(*head));
    ana_calls_heads heads = { cmp, head };
    ana_run_heap h = { ana_xcalloc(nr + 1, sizeof(size_t)), 0, ana_calls_run_less, &heads };
#define ANA_RUN_END(r) ((r) + 1 < nr ? c->runs[(r) + 1] : c->n)
    for (size_t r = 0; r < nr; r++) {
        if ((pos[r] = c->runs[r]) >= ANA_RUN_END(r))
            continue;
        head[r] = ana_calls_get(c, pos[r]);
        ana_run_heap_add(&h, r);
    }
    while (h.n) {
        size_t r = h.v[0];
        ana_calls_pack(out, &head[r]);
        int done = ++pos[r] >= ANA_RUN_END(r);
        if (!done)
            head[r] = ana_calls_get(c, pos[r]);
        ana_run_heap_next(&h, done);
    }
#undef ANA_RUN_END
    free(h.v);
    free(pos);
    free(head);
    ana_calls_seal(out);
}

void ana_calls_seal(ana_calls *c)
{
    if (c->raw || !c->n_blocks)
        return;
    c->off[c->n_blocks] = c->bytes.n;
    ana_spill_seal(&c->bytes);
    c->cache = ana_xcalloc(ANA_MODEL_SLOTS, sizeof(*c->cache));
}

void ana_calls_free(ana_calls *c)
{
    free(c->raw);
    ana_spill_free(&c->bytes);
    free(c->off);
    free(c->first_ns);
    free(c->runs);
    ana_u64map_free(&c->args);
    for (size_t i = 0; c->cache && i < ANA_MODEL_SLOTS; i++) {
        if (c->cache[i])
            free(c->cache[i]->buf);
        free(c->cache[i]);
    }
    free(c->cache);
    ana_calls_init(c);
}

/* This thread's cache, made empty at its first read. */
static ana_calls_cache *ana_calls_cache_of(const ana_calls *c)
{
    ana_calls_cache *k = c->cache[ana_model_slot];
    if (k)
        return k;
    k = ana_xcalloc(1, sizeof(*k)); /* no bytes read, no hints */
    memset(k->block, 0xff, sizeof(k->block));
    return c->cache[ana_model_slot] = k;
}

/* Block b, decoded into the cache (read from the file when it is not there). */
static const ana_api_call *ana_calls_block(const ana_calls *c, uint64_t b)
{
    ana_calls_cache *k = ana_calls_cache_of(c);
    size_t slot = (size_t)(b % ANA_CALLS_CACHE);
    if (k->block[slot] == b)
        return k->v[slot];
    uint64_t at = c->off[b];
    size_t len = (size_t)(c->off[b + 1] - at);
    if (at < k->buf_off || at + len > k->buf_off + k->buf_n) { /* not read yet: from here on */
        size_t n = len > ANA_CALLS_READ ? len : ANA_CALLS_READ;
        if (n > c->bytes.n - at)
            n = (size_t)(c->bytes.n - at);
        ANA_GROW(k->buf, k->cap, n + 1);
        ana_spill_read(&c->bytes, at, n, k->buf);
        k->buf_off = at;
        k->buf_n = n;
    }
    size_t n = ana_calls_block_len(c, b);
    const uint8_t *p = k->buf + (at - k->buf_off);
    ana_api_call prev = { 0 }, *v = k->v[slot];
    uint32_t nz = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t dt = ana_get_varint(&p);
        v[i].time_ns = prev.time_ns + (uint64_t)ana_unzigzag(dt);
        v[i].corr_w = ana_unzz32(ana_get_varint(&p), prev.corr_w);
        v[i].arg_w = (uint32_t)ana_get_varint(&p);
        uint64_t cw = ana_get_varint(&p);
        v[i].call_w = cw ? (nz = ana_unzz32(cw - 1, nz)) : 0;
        v[i].site = (uint32_t)ana_get_varint(&p);
        prev = v[i];
    }
    k->block[slot] = b;
    return v;
}

ana_api_call ana_calls_get_packed(const ana_calls *c, uint64_t i)
{
    ana_api_call x = ana_calls_block(c, i / ANA_CALLS_BLOCK)[i % ANA_CALLS_BLOCK];
    uint64_t arg;
    if (c->args.n && ana_u64map_get(&c->args, i, &arg))
        x.arg_w = (uint32_t)arg;
    return x;
}

void ana_calls_set_arg(ana_calls *c, uint64_t i, uint32_t arg_w)
{
    if (c->raw)
        c->raw[i].arg_w = arg_w;
    else
        ana_u64map_put(&c->args, i, arg_w);
}

void ana_calls_apply(ana_calls *c)
{
    if (!c->args.n)
        return;
    ana_calls re;
    ana_calls_init(&re);
    for (uint64_t i = 0; i < c->n; i++) {
        ana_api_call x = ana_calls_get_packed(c, i);
        ana_calls_pack(&re, &x);
    }
    ana_calls_seal(&re);
    ana_calls_free(c);
    *c = re;
}

uint64_t ana_calls_bound_packed(const ana_calls *c, uint64_t time_ns, int after)
{
    /* the first block whose first call is not below: mostly the one after the block the
     * last search ended in, as callers ask about times in order */
    if (!c->n_blocks)
        return 0;
    ana_calls_cache *k = ana_calls_cache_of(c);
    size_t lo = 0, hi = c->n_blocks, h = k->hint;
#define ANA_BELOW(b) (after ? c->first_ns[b] <= time_ns : c->first_ns[b] < time_ns)
    if (h < c->n_blocks && ANA_BELOW(h) && (h + 1 == c->n_blocks || !ANA_BELOW(h + 1)))
        lo = hi = h + 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ANA_BELOW(mid))
            lo = mid + 1;
        else
            hi = mid;
    }
#undef ANA_BELOW
    if (!lo)
        return 0;
    k->hint = lo - 1;
    /* every block before lo begins below: the answer is in block lo - 1, or lo's start */
    uint64_t first = (uint64_t)(lo - 1) * ANA_CALLS_BLOCK;
    size_t n = ana_calls_block_len(c, lo - 1);
    const ana_api_call *v = ana_calls_block(c, lo - 1);
    size_t a = 1, z = n; /* its first call is below */
#define ANA_BELOW(i) (after ? v[i].time_ns <= time_ns : v[i].time_ns < time_ns)
    /* mostly where the last search ended, or the call after: the calls before are below,
     * the answer's own is not */
    for (size_t j = k->hint_at, tries = 0; tries < 2 && j >= 1 && j <= n; j++, tries++)
        if (ANA_BELOW(j - 1) && (j == n || !ANA_BELOW(j))) {
            k->hint_at = j;
            return first + j;
        }
    while (a < z) {
        size_t mid = a + (z - a) / 2;
        if (ANA_BELOW(mid))
            a = mid + 1;
        else
            z = mid;
    }
#undef ANA_BELOW
    k->hint_at = a;
    return first + a;
}
