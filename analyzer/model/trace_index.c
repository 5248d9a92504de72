/* trace_index.c — the model's lookups (trace.h): wide values, correlation ids, calls by
 * time, kernels, INFO values, the GPU activities in one array.
 * Part of model/ (README.md): any layer may call it; it calls only model/ and format/. */
#include "model/trace.h"

#include "model/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Index of v in the table *tab of *n entries (capacity *cap) through the map idx, added
 * when new, with a cache (ANA_TRACE_INTERN_CACHE slots of 1 + index, or NULL) in front of
 * the map; a trace with `limit` distinct values is refused (exit status 2), what names them
 * in the message. */
static uint32_t ana_trace_intern_u64(ana_trace *t, ana_u64map *idx, uint32_t *cache, uint64_t **tab,
                                     size_t *n, size_t *cap, uint64_t v, uint64_t limit,
                                     const char *what)
{
    uint32_t *slot = cache ? &cache[(v >> 4) % ANA_TRACE_INTERN_CACHE] : NULL;
    if (slot && *slot && (*tab)[*slot - 1] == v)
        return *slot - 1;
    uint64_t k;
    if (!ana_u64map_get(idx, v, &k)) {
        if (*n >= limit) {
            fprintf(stderr, "anatomist: %s: too many distinct %s to analyze\n", t->path, what);
            exit(ANA_EXIT_BAD);
        }
        ANA_GROW(*tab, *cap, *n + 1);
        (*tab)[*n] = v;
        ana_u64map_put(idx, v, k = (*n)++);
    }
    if (slot)
        *slot = (uint32_t)k + 1;
    return (uint32_t)k;
}

/* Index of v in t->wide (added when new). */
static uint32_t ana_trace_intern(ana_trace *t, uint64_t v)
{
    return ana_trace_intern_u64(t, &t->wide_idx, NULL, &t->wide, &t->n_wide, &t->cap_wide, v,
                                ANA_TRACE_WIDE28_BIT, "ids of 2^27 and up");
}

uint32_t ana_trace_narrow(ana_trace *t, uint64_t v)
{
    return v < ANA_TRACE_WIDE_BIT ? (uint32_t)v : ANA_TRACE_WIDE_BIT | ana_trace_intern(t, v);
}

uint32_t ana_trace_use_ptr_w(ana_trace *t, uint64_t p)
{
    /* uses repeat a few addresses (weights, a step's buffers): the cache mostly answers */
    return ana_trace_intern_u64(t, &t->use_ptr_idx, t->use_ptr_cache, &t->use_ptrs, &t->n_use_ptrs,
                                &t->cap_use_ptrs, p, UINT32_MAX, "device addresses (2^32)");
}

/* The index of the n-byte value v in the table *tab of *n_tab entries (capacity *cap),
 * through idx (hash -> index, the next hash past a collision), with a cache of 1 + index
 * by hash in front of it; added when new. what names the values in the message of a trace
 * with more than 2^32 of them. */
static inline __attribute__((always_inline)) uint32_t
ana_trace_intern_bytes(ana_trace *t, ana_u64map *idx, uint32_t *cache, void **tab, size_t *n_tab,
                       size_t *cap, const void *v, size_t n, const char *what)
{
    uint64_t w[2] = { 0, 0 }, k;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (n > 8 && n <= 16) { /* two whole loads: the first 8 bytes, and the last 8 shifted
                             * past the overlap (a value stored into the zeroed pair and
                             * read back wider stalls the load) */
        uint64_t tail;
        memcpy(&w[0], v, 8);
        memcpy(&tail, (const char *)v + n - 8, 8);
        w[1] = tail >> (8 * (16 - n));
    } else
#endif
        memcpy(w, v, n < sizeof(w) ? n : sizeof(w));
    uint64_t h = (w[0] ^ (w[1] * 0x9E3779B97F4A7C15ull)) * 0xbf58476d1ce4e5b9ull;
    h ^= h >> 31;
    uint32_t *slot = &cache[h % ANA_TRACE_INTERN_CACHE];
    if (*slot && !memcmp((const char *)*tab + (*slot - 1) * (size_t)n, v, n))
        return *slot - 1;
    for (;; h++) { /* a hash that names another value: the next one */
        if (!ana_u64map_get(idx, h, &k))
            break;
        if (!memcmp((const char *)*tab + k * n, v, n)) {
            *slot = (uint32_t)k + 1;
            return (uint32_t)k;
        }
    }
    if (*n_tab >= UINT32_MAX) {
        fprintf(stderr, "anatomist: %s: too many distinct %s (2^32) to analyze\n", t->path, what);
        exit(ANA_EXIT_BAD);
    }
    ana_grow(tab, cap, *n_tab + 1, n);
    memcpy((char *)*tab + *n_tab * n, v, n);
    ana_u64map_put(idx, h, *n_tab);
    *slot = (uint32_t)*n_tab + 1;
    return (uint32_t)(*n_tab)++;
}

uint32_t ana_trace_site_of(ana_trace *t, const ana_call_site *s)
{
    _Static_assert(sizeof(*s) == 16, "hashed as two words");
    return ana_trace_intern_bytes(t, &t->site_idx, t->site_cache, (void **)&t->sites, &t->n_sites,
                                  &t->cap_sites, s, sizeof(*s), "call sites");
}

uint32_t ana_trace_lane_of(ana_trace *t, const ana_gpu_lane *l)
{
    _Static_assert(sizeof(*l) <= 16, "hashed whole");
    return ana_trace_intern_bytes(t, &t->lane_idx, t->lane_cache, (void **)&t->lanes, &t->n_lanes,
                                  &t->cap_lanes, l, sizeof(*l), "GPU streams");
}

uint32_t ana_trace_use_pack(ana_trace *t, unsigned kind, uint64_t arg)
{
    uint32_t a = arg < ANA_TRACE_WIDE28_BIT ? (uint32_t)arg
                                            : ANA_TRACE_WIDE28_BIT | ana_trace_intern(t, arg);
    return a << 4 | (kind & 15);
}

/* The dense index's group of id c and its bit. */
static ana_corr_group *ana_ti_group(const ana_trace *t, uint64_t c, uint64_t *bit)
{
    *bit = 1ull << ((c - t->corr_lo) % ANA_CORR_GROUP);
    return &t->corr_g[(c - t->corr_lo) / ANA_CORR_GROUP];
}

/* The dense index: in one pass over the calls, which ids have a call, each group's
 * earliest, and whether the group's calls are consecutive in order of id (each id's first
 * call is base + the ids with a call before it: the ids come in increasing order, each at
 * the call after the last); then, if any group is not, a pass for their rows of
 * distances. */
static void ana_ti_dense(ana_trace *t)
{
    size_t groups = (size_t)(t->corr_n / ANA_CORR_GROUP + 1), rows = 0;
    t->corr_g = ana_xcalloc(groups, sizeof(*t->corr_g));
    uint64_t bit;
    for (size_t i = 0; i < t->n_calls; i++) {
        uint64_t c = ana_trace_wide(t, ana_trace_call(t, i).corr_w);
        ana_corr_group *g = c ? ana_ti_group(t, c, &bit) : NULL;
        if (!g || (g->has & bit))
            continue; /* no id, or an earlier call has it */
        if (!g->has)
            g->base = (uint32_t)i; /* the group's earliest call: later ones are after it */
        else if (!g->d && (g->has >= bit || i != g->base + (size_t)ana_popcount64(g->has)))
            g->d = UINT32_MAX, rows++;
        g->has |= bit;
    }
    if (!rows)
        return;
    t->n_corr_d = rows * ANA_CORR_GROUP;
    t->corr_d = ana_xmalloc(t->n_corr_d * sizeof(*t->corr_d));
    memset(t->corr_d, 0xff, t->n_corr_d * sizeof(*t->corr_d)); /* ANA_CORR_NONE */
    rows = 0;
    for (size_t k = 0; k < groups; k++)
        if (t->corr_g[k].d)
            t->corr_g[k].d = (uint32_t)++rows;
    for (size_t i = 0; i < t->n_calls; i++) {
        uint64_t c = ana_trace_wide(t, ana_trace_call(t, i).corr_w);
        ana_corr_group *g = c ? ana_ti_group(t, c, &bit) : NULL;
        if (!g || !g->d)
            continue;
        uint16_t *d = &t->corr_d[(size_t)(g->d - 1) * ANA_CORR_GROUP +
                                 (size_t)((c - t->corr_lo) % ANA_CORR_GROUP)];
        if (*d != ANA_CORR_NONE)
            continue; /* an earlier call has the id */
        if (i - g->base < ANA_CORR_FAR) {
            *d = (uint16_t)(i - g->base);
            continue;
        }
        *d = ANA_CORR_FAR;
        ana_u64map_put(&t->corr_map, c, i);
    }
}

/* Builds the corr -> call index; the first call (in time order) with an id keeps it. */
void ana_trace_index_calls(ana_trace *t)
{
    uint64_t lo = UINT64_MAX, hi = 0, n = 0;
    for (size_t i = 0; i < t->n_calls; i++) {
        uint64_t c = ana_trace_wide(t, ana_trace_call(t, i).corr_w);
        if (!c)
            continue;
        lo = c < lo ? c : lo;
        hi = c > hi ? c : hi;
        n++;
    }
    if (n && t->n_calls < UINT32_MAX && hi - lo < n * 4 + 4096) {
        t->corr_lo = lo;
        t->corr_n = hi - lo + 1;
        ana_ti_dense(t);
        return;
    }
    for (size_t i = 0; i < t->n_calls && n; i++) {
        uint64_t c = ana_trace_wide(t, ana_trace_call(t, i).corr_w);
        if (c && !ana_u64map_get(&t->corr_map, c, &(uint64_t){ 0 }))
            ana_u64map_put(&t->corr_map, c, i);
    }
}

uint64_t ana_trace_rel_ns(const ana_trace *t, uint64_t time_ns)
{
    return t->has_time && time_ns > t->first_ns ? time_ns - t->first_ns : 0;
}

int ana_trace_kernel_index_map(const ana_trace *t, uint64_t id, size_t *k)
{
    uint64_t v;
    if (!ana_u64map_get(&t->kernel_idx, id, &v))
        return 0;
    *k = (size_t)v;
    return 1;
}

const ana_trace_kernel *ana_trace_kernel_by_id(const ana_trace *t, uint64_t id)
{
    size_t k;
    return ana_trace_kernel_index(t, id, &k) ? &t->kernels[k] : NULL;
}

int ana_trace_memory_recorded(const ana_trace *t) { return !ana_trace_info(t, "import.device_memory"); }

/* A string of the trace as it is shown (util.h ana_name_dup: escaped for text outputs). */
char *ana_str_name(ana_str s) { return ana_name_dup(s.s ? s.s : "", s.s ? s.len : 0); }

const char *ana_trace_info(const ana_trace *t, const char *key)
{
    for (size_t i = t->n_info; i-- > 0;)
        if (strcmp(t->info[i].key, key) == 0)
            return t->info[i].value;
    return NULL;
}

/* Where the last search of this thread ended: callers mostly ask about times in order, so
 * a search gallops from there (any start gives the right answer; only the cost varies). */
static _Thread_local struct {
    const ana_trace *t;
    size_t at;
} ana_call_hint;

static int ana_call_below(const ana_trace *t, size_t i, uint64_t time_ns, int after)
{
    uint64_t x = t->calls.raw[i].time_ns;
    return after ? x <= time_ns : x < time_ns;
}

size_t ana_trace_call_bound(const ana_trace *t, uint64_t time_ns, int after)
{
    if (!t->calls.raw) /* packed: the blocks' first times find the block */
        return (size_t)ana_calls_bound_packed(&t->calls, time_ns, after);
    size_t lo = 0, hi = t->n_calls, h = ana_call_hint.at;
    if (ana_call_hint.t == t && h < t->n_calls) {
        if (ana_call_below(t, h, time_ns, after)) { /* the answer is past h */
            lo = h + 1;
            for (size_t step = 1; lo < hi; step *= 2) {
                size_t probe = h + step < hi ? h + step : hi - 1;
                if (!ana_call_below(t, probe, time_ns, after)) {
                    hi = probe;
                    break;
                }
                lo = probe + 1;
            }
        } else { /* at or before h */
            hi = h;
            for (size_t step = 1; lo < hi; step *= 2) {
                size_t probe = step <= h ? h - step : 0;
                if (ana_call_below(t, probe, time_ns, after)) {
                    lo = probe + 1;
                    break;
                }
                hi = probe;
            }
        }
    }
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ana_call_below(t, mid, time_ns, after))
            lo = mid + 1;
        else
            hi = mid;
    }
    ana_call_hint.t = t;
    ana_call_hint.at = lo;
    return lo;
}

/* ana_trace_call_index's case of no id and of ids too sparse for the dense index. */
size_t ana_trace_call_index_map(const ana_trace *t, uint64_t corr)
{
    uint64_t i;
    if (!corr)
        return SIZE_MAX;
    return ana_u64map_get(&t->corr_map, corr, &i) ? (size_t)i : SIZE_MAX;
}

ana_gpu_act *ana_trace_gpu_all(const ana_trace *t, size_t *n)
{
    ana_gpu_act *v = ana_xmalloc((t->n_gpu + 1) * sizeof(*v));
    ana_gpu_iter it;
    *n = 0;
    ana_trace_gpu_begin(t, &it);
    for (const ana_gpu_act *a; (a = ana_trace_gpu_next(&it));)
        v[(*n)++] = *a;
    ana_trace_gpu_end(&it);
    return v;
}
