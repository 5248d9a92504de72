/* pack_int.h — what packing (pack.c) and unpacking (unpack.c) share: the column layout,
 * each kind's plan, the model both predict from, and the varint walkers. Not part of the
 * format library's interface (docs/trace-format.md, "Packed chunks"). */
#ifndef ANA_PACK_INT_H
#define ANA_PACK_INT_H

#include "codec_int.h"
#include "varint.h"

#include <string.h>

#define SLOTS 32      /* columns per kind: 0 = dt, 1 + i = field i when coded, BODY = the rest */
#define BODY (SLOTS - 1)
#define NCOLS (1 + ANA_K_COUNT * SLOTS) /* column 0: the kinds */
#define NCTX 64       /* threads with their own counters in one chunk; more share one */
#define NCALLS 4096   /* API calls remembered by correlation id (direct-mapped) */
#define MAXOPS 40

static inline int col_of(uint32_t kind, unsigned slot) { return 1 + (int)kind * SLOTS + (int)slot; }

static inline int is_gpu_activity(uint32_t kind)
{
    return kind == ANA_K_GPU_KERNEL || kind == ANA_K_GPU_MEMCPY || kind == ANA_K_GPU_MEMSET;
}

/* ---- each kind's plan: its fields after dt as a list of steps ---- */

/* Steps before OP_DUR copy body bytes; OP_DUR and after are fields with columns of their own. */
enum { OP_END, OP_COPY, OP_STR, OP_STRV, OP_FRAMES, OP_DUR, OP_CORR, OP_CALL };

struct op {
    uint8_t code, n, slot; /* OP_COPY: n plain varints into the body; coded fields: slot */
};

struct plan {
    struct op ops[ANA_K_COUNT][MAXOPS];
};

/* GPU activity kinds start with corr and dur, coded with dt (gpu_predict): their plan starts
 * after them. SEGMENT's two fields are coded in columns 1 and 2. */
static inline void plan_build(struct plan *pl)
{
    memset(pl, 0, sizeof(*pl));
    for (uint32_t k = 1; k < ANA_K_COUNT; k++) {
        struct op *o = pl->ops[k];
        int n = 0;
        unsigned slot = 1;
        const struct ana_field *f = ana_fields[k];
        if (k == ANA_K_SEGMENT)
            continue;
        if (is_gpu_activity(k)) {
            f += 2;
            slot += 2;
        }
        for (; f->type != F_END; f++, slot++) {
            uint8_t code = OP_COPY;
            if (f->type == F_STR || f->type == F_BLOB)
                code = OP_STR;
            else if (f->type == F_STRV)
                code = OP_STRV;
            else if (f->type == F_FRAMES)
                code = OP_FRAMES;
            else if (f->role == R_DUR)
                code = OP_DUR;
            else if (f->role == R_CORR)
                code = OP_CORR;
            else if (f->role == R_CALL)
                code = OP_CALL;
            if (code == OP_COPY && n && o[n - 1].code == OP_COPY)
                o[n - 1].n++;
            else
                o[n++] = (struct op){ code, 1, (uint8_t)slot };
        }
        o[n].code = OP_END;
    }
}

/* ---- what packing and unpacking both predict, from the same records ---- */

/* A thread's running values within the chunk: its time, its last correlation id and call
 * id, and for GPU activity (on the profiler's own thread) where the last one ended and how
 * long after its API call it started. */
struct ctx {
    uint64_t tid, t;
    uint64_t corr, call;
    uint64_t gpu_end, gpu_lat;
    int have_end;
};

struct model {
    struct ctx c[NCTX + 1]; /* [NCTX]: records before any SEGMENT, and threads past NCTX */
    int n;
    struct ctx *cur;
    struct {
        uint64_t corr, t;
    } calls[NCALLS]; /* the start of the API call with that correlation id */
};

static inline void model_reset(struct model *m)
{
    m->n = 0;
    memset(&m->c[NCTX], 0, sizeof(m->c[NCTX]));
    m->cur = &m->c[NCTX];
    memset(m->calls, 0, sizeof(m->calls));
}

static inline struct ctx *segment(struct model *m, uint64_t tid, uint64_t base)
{
    struct ctx *c = NULL;
    for (int i = 0; i < m->n && !c; i++)
        if (m->c[i].tid == tid)
            c = &m->c[i];
    if (!c && m->n == NCTX)
        c = &m->c[NCTX];
    if (!c) {
        c = &m->c[m->n++];
        memset(c, 0, sizeof(*c));
        c->tid = tid;
    }
    c->t = base;
    c->have_end = 0;
    return m->cur = c;
}

/* A counter (correlation or call id): 0 stays 0 (none), others are 1 + the zigzag of
 * their difference from the thread's last non-zero one. UINT64_MAX: cannot be coded. */
static inline uint64_t counter_out(uint64_t *last, uint64_t v)
{
    if (!v)
        return 0;
    uint64_t z = ana_zigzag((int64_t)(v - *last));
    *last = v;
    return z == UINT64_MAX ? UINT64_MAX : z + 1;
}

static inline uint64_t counter_in(uint64_t *last, uint64_t code)
{
    if (!code)
        return 0;
    return *last += (uint64_t)ana_unzigzag(code - 1);
}

static inline void call_seen(struct model *m, uint64_t corr, uint64_t t)
{
    if (corr) {
        m->calls[corr & (NCALLS - 1)].corr = corr;
        m->calls[corr & (NCALLS - 1)].t = t;
    }
}

/* Where a GPU activity record is expected to start: where the thread's last one ended, or
 * as long after its API call as the last one started after its own, whichever is later
 * (a busy GPU queues work, an idle one runs it at launch latency). */
static inline uint64_t gpu_predict(const struct model *m, const struct ctx *c, uint64_t corr,
                            uint64_t prev_t, uint64_t *call_t, int *found)
{
    uint64_t i = corr & (NCALLS - 1);
    *found = corr && m->calls[i].corr == corr;
    *call_t = *found ? m->calls[i].t : 0;
    uint64_t pred = c->have_end ? c->gpu_end : prev_t;
    if (*found && *call_t + c->gpu_lat > pred)
        pred = *call_t + c->gpu_lat;
    return pred;
}

static inline void gpu_seen(struct ctx *c, uint64_t start, uint64_t dur, uint64_t call_t, int found)
{
    if (found)
        c->gpu_lat = start - call_t;
    c->gpu_end = start + dur;
    c->have_end = 1;
}

static inline const uint8_t *skip(const uint8_t *p, const uint8_t *end, unsigned n)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    while (n && end - p >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        uint64_t ends = ~w & 0x8080808080808080ull; /* bit 7 of each byte that ends one */
        unsigned c = (unsigned)(((ends >> 7) * 0x0101010101010101ull) >> 56); /* how many */
        if (c < n) {
            n -= c;
            p += 8;
            continue;
        }
        while (--n)
            ends &= ends - 1;
        return p + (__builtin_ctzll(ends) >> 3) + 1;
    }
#endif
    while (n && p < end)
        n -= !(*p++ & 0x80);
    return n ? NULL : p;
}

/* The value of the varint at *pp (advanced), or sets *bad. With `exact`, a varint longer
 * than it needs to be is bad too: its value would come back shorter. */
static inline uint64_t take(const uint8_t **pp, const uint8_t *end, int exact, int *bad)
{
    const uint8_t *p = *pp;
    if (p < end && *p < 0x80) {
        *pp = p + 1;
        return *p;
    }
    uint64_t v = 0;
    size_t n = p < end ? ana_varint_get(p, (size_t)(end - p), &v) : 0;
    if (!n || (exact && p[n - 1] == 0)) {
        *bad = 1;
        return 0;
    }
    *pp = p + n;
    return v;
}

/* Past a string (length, bytes) at p, or NULL. */
static inline const uint8_t *skip_str(const uint8_t *p, const uint8_t *end)
{
    int bad = 0;
    uint64_t n = take(&p, end, 0, &bad);
    return bad || n > (uint64_t)(end - p) ? NULL : p + n;
}

/* Past the body field(s) of step o at p (OP_COPY, OP_STR, OP_STRV, OP_FRAMES), or NULL
 * when [p, end) ends first. */
static inline const uint8_t *skip_field(const struct op *o, const uint8_t *p, const uint8_t *end)
{
    if (o->code == OP_COPY)
        return skip(p, end, o->n);
    if (o->code == OP_STR)
        return skip_str(p, end);
    int bad = 0;
    uint64_t n = take(&p, end, 0, &bad);
    if (bad || n > (uint64_t)(end - p))
        return NULL;
    if (o->code == OP_FRAMES)
        return skip(p, end, (unsigned)n); /* n <= end - p: fits; one varint each */
    for (uint64_t i = 0; i < n && p; i++)
        p = skip_str(p, end);
    return p;
}

/* One record's payload into its kind's columns: 1 = packed, 0 = not packable, -1 = out of
 * memory. */
#endif
