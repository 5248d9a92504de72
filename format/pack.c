/* pack.c — packed chunks (docs/trace-format.md, "Packed chunks"): a chunk's records
 * re-coded into columns before compression, and back.
 *
 * Why: in a training loop most of a record repeats from one step to the next, but each
 * record also holds a few fields that never do (its time, its duration, a correlation id
 * that counts up). Interleaved, those break every repeat zstd could match. Packed, each
 * kind's varying fields have columns of their own, counters become small differences and a
 * GPU record's start becomes its distance from where it was expected; the rest of each
 * record (its "body") is copied byte for byte into one column per kind, where the step's
 * records repeat as long identical runs.
 *
 * The packing is exact: unpacking gives back the chunk's bytes, which the record decoders
 * then read as before. A payload the packing would not give back byte for byte (a kind or
 * a trailing field this version does not know, a coded field written longer than it needs)
 * is not packed (ana_pack returns 0) and goes into the trace as it is.
 *
 * Called by reader.c and writer.c; calls codec.c.
 */
#include "pack.h"

#include "codec_int.h"
#include "varint.h"

#include <stdlib.h>
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
static void plan_build(struct plan *pl)
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

static void model_reset(struct model *m)
{
    m->n = 0;
    memset(&m->c[NCTX], 0, sizeof(m->c[NCTX]));
    m->cur = &m->c[NCTX];
    memset(m->calls, 0, sizeof(m->calls));
}

static struct ctx *segment(struct model *m, uint64_t tid, uint64_t base)
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
static uint64_t gpu_predict(const struct model *m, const struct ctx *c, uint64_t corr,
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

static void gpu_seen(struct ctx *c, uint64_t start, uint64_t dur, uint64_t call_t, int found)
{
    if (found)
        c->gpu_lat = start - call_t;
    c->gpu_end = start + dur;
    c->have_end = 1;
}

/* ---- packing ---- */

struct col {
    uint8_t *b;
    size_t len, cap;
};

struct ana_packer {
    struct col cols[NCOLS];
    struct plan plan;
    struct model m;
};

ana_packer *ana_packer_new(void)
{
    ana_packer *pk = calloc(1, sizeof(ana_packer));
    if (pk)
        plan_build(&pk->plan);
    return pk;
}

void ana_packer_free(ana_packer *pk)
{
    if (!pk)
        return;
    for (int i = 0; i < NCOLS; i++)
        free(pk->cols[i].b);
    free(pk);
}

static int col_grow(struct col *c, size_t n)
{
    size_t cap = c->cap ? c->cap : 256;
    while (cap - c->len < n)
        cap *= 2;
    uint8_t *nb = realloc(c->b, cap);
    if (!nb)
        return -1;
    c->b = nb;
    c->cap = cap;
    return 0;
}

static inline int emit(struct col *c, uint64_t v)
{
    if (c->cap - c->len < ANA_VARINT_MAX && col_grow(c, ANA_VARINT_MAX) < 0)
        return -1;
    if (v < 0x80)
        c->b[c->len++] = (uint8_t)v;
    else
        c->len += ana_varint_put(c->b + c->len, v);
    return 0;
}

/* n bytes at p into c (`readable` bytes may be read at p): 16 or less as two 8-byte words
 * where both sides have the room, not by a call to memcpy (most bodies are that short). */
static inline int emit_bytes(struct col *c, const uint8_t *p, size_t n, size_t readable)
{
    if (n <= 16 && readable >= 16 && c->cap - c->len >= 16) {
        uint64_t w[2];
        memcpy(w, p, 16);
        memcpy(c->b + c->len, w, 16);
        c->len += n;
        return 0;
    }
    if (c->cap - c->len < n && col_grow(c, n) < 0)
        return -1;
    memcpy(c->b + c->len, p, n);
    c->len += n;
    return 0;
}

/* Past n varints from p, or NULL when [p, end) ends first. Every byte below 0x80 ends one.
 * Eight bytes at a time where there are eight (byte by byte, the packer's largest cost). */
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
static const uint8_t *skip_field(const struct op *o, const uint8_t *p, const uint8_t *end)
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
static int pack_payload(ana_packer *pk, uint32_t kind, const uint8_t *p, const uint8_t *end,
                        const uint8_t *raw_end)
{
    if (kind >= ANA_K_PTR_TABLE)
        return 0; /* kinds after 2.0's: a chunk holding one is written unpacked, which a 2.0
                   * reader reads (it skips kinds it does not know by length) */
    struct model *m = &pk->m;
    struct col *cols = &pk->cols[col_of(kind, 0)];
    int bad = 0;
    if (kind == ANA_K_SEGMENT) {
        uint64_t tid = take(&p, end, 1, &bad), base = take(&p, end, 1, &bad);
        if (bad || p != end)
            return 0;
        segment(m, tid, base);
        return emit(&cols[1], tid) < 0 || emit(&cols[2], base) < 0 ? -1 : 1;
    }
    struct ctx *c = m->cur;
    uint64_t prev_t = c->t, t = c->t += (uint64_t)ana_unzigzag(take(&p, end, 1, &bad));
    if (is_gpu_activity(kind)) {
        uint64_t corr = take(&p, end, 1, &bad), dur = take(&p, end, 1, &bad), call_t;
        int found;
        uint64_t pred = gpu_predict(m, c, corr, prev_t, &call_t, &found);
        uint64_t code = counter_out(&c->corr, corr);
        if (bad || code == UINT64_MAX)
            return 0;
        if (emit(&cols[0], ana_zigzag((int64_t)(t - pred))) < 0 || emit(&cols[1], code) < 0 ||
            emit(&cols[2], dur) < 0)
            return -1;
        gpu_seen(c, t, dur, call_t, found);
    } else if (bad) {
        return 0;
    } else if (emit(&cols[0], ana_zigzag((int64_t)(t - prev_t))) < 0) {
        return -1;
    }
    struct col *body = &cols[BODY];
    for (const struct op *o = pk->plan.ops[kind]; o->code != OP_END; o++) {
        if (o->code < OP_DUR) {
            const uint8_t *q = skip_field(o, p, end);
            if (!q)
                return 0;
            if (emit_bytes(body, p, (size_t)(q - p), (size_t)(raw_end - p)) < 0)
                return -1;
            p = q;
        } else {
            uint64_t v = take(&p, end, 1, &bad), code = v;
            if (o->code != OP_DUR) {
                code = counter_out(o->code == OP_CORR ? &c->corr : &c->call, v);
                if (code == UINT64_MAX)
                    return 0;
                if (o->code == OP_CORR)
                    call_seen(m, v, t);
            }
            if (bad)
                return 0;
            if (emit(&cols[o->slot], code) < 0)
                return -1;
        }
    }
    return p == end; /* bytes left: fields this version does not know */
}

size_t ana_pack_bound(size_t raw_n) { return raw_n + 2 * ANA_VARINT_MAX * (NCOLS + 2); }

size_t ana_pack(ana_packer *pk, const uint8_t *raw, size_t n, uint8_t *out, size_t cap)
{
    for (int i = 0; i < NCOLS; i++)
        pk->cols[i].len = 0;
    model_reset(&pk->m);
    uint64_t nrec = 0;
    for (const uint8_t *p = raw, *end = raw + n; p < end; nrec++) {
        int bad = 0;
        uint64_t kind = take(&p, end, 1, &bad), plen = take(&p, end, 1, &bad);
        if (bad || kind == 0 || kind >= ANA_K_COUNT || plen > (uint64_t)(end - p))
            return 0;
        if (emit(&pk->cols[0], kind) < 0 || pack_payload(pk, (uint32_t)kind, p, p + plen, end) != 1)
            return 0;
        p += plen;
    }
    /* nrec, the number of columns used, (id, length) of each in rising ids, the columns */
    size_t need = 2 * ANA_VARINT_MAX, used = 0;
    for (int i = 0; i < NCOLS; i++)
        if (pk->cols[i].len) {
            need += 2 * ANA_VARINT_MAX + pk->cols[i].len;
            used++;
        }
    if (need > cap)
        return 0;
    size_t o = ana_varint_put(out, nrec);
    o += ana_varint_put(out + o, used);
    for (int i = 0; i < NCOLS; i++)
        if (pk->cols[i].len) {
            o += ana_varint_put(out + o, (uint64_t)i);
            o += ana_varint_put(out + o, pk->cols[i].len);
        }
    for (int i = 0; i < NCOLS; i++)
        if (pk->cols[i].len) {
            memcpy(out + o, pk->cols[i].b, pk->cols[i].len);
            o += pk->cols[i].len;
        }
    return o;
}

/* ---- unpacking ---- */

struct rcol {
    const uint8_t *p, *end;
    const uint8_t *readable; /* the end of the packed input (columns lie one after another) */
};

struct dst {
    uint8_t *p, *end;
};

static inline uint64_t get(struct rcol *c, int *bad) { return take(&c->p, c->end, 0, bad); }

/* One varint into d; 0 when it does not fit. */
static inline int put(struct dst *d, uint64_t v)
{
    if (d->end - d->p >= ANA_VARINT_MAX) {
        if (v < 0x80)
            *d->p++ = (uint8_t)v;
        else
            d->p += ana_varint_put(d->p, v);
        return 1;
    }
    uint8_t tmp[ANA_VARINT_MAX];
    size_t n = ana_varint_put(tmp, v);
    if ((size_t)(d->end - d->p) < n)
        return 0;
    memcpy(d->p, tmp, n);
    d->p += n;
    return 1;
}

/* Moves the body's bytes up to q into d; 0 when q is NULL or they do not fit. 16 bytes or
 * less go as two 8-byte words where both sides have the room (as emit_bytes). */
static inline int move_body(struct rcol *body, const uint8_t *q, struct dst *d)
{
    if (!q || (size_t)(d->end - d->p) < (size_t)(q - body->p))
        return 0;
    if (q - body->p <= 16 && body->readable - body->p >= 16 && d->end - d->p >= 16) {
        uint64_t w[2];
        memcpy(w, body->p, 16);
        memcpy(d->p, w, 16);
    } else {
        memcpy(d->p, body->p, (size_t)(q - body->p));
    }
    d->p += q - body->p;
    body->p = q;
    return 1;
}

/* One record's payload from its kind's columns into d: 1 = done, 0 = malformed. */
static int unpack_payload(struct rcol *all, const struct plan *pl, uint32_t kind, struct dst *d,
                          struct model *m)
{
    struct rcol *cols = &all[col_of(kind, 0)];
    int bad = 0;
    if (kind == ANA_K_SEGMENT) {
        uint64_t tid = get(&cols[1], &bad), base = get(&cols[2], &bad);
        segment(m, tid, base);
        return !bad && put(d, tid) && put(d, base);
    }
    struct ctx *c = m->cur;
    uint64_t prev_t = c->t, t;
    if (is_gpu_activity(kind)) {
        uint64_t corr = counter_in(&c->corr, get(&cols[1], &bad)), dur = get(&cols[2], &bad);
        uint64_t call_t;
        int found;
        uint64_t pred = gpu_predict(m, c, corr, prev_t, &call_t, &found);
        t = c->t = pred + (uint64_t)ana_unzigzag(get(&cols[0], &bad));
        if (bad || !put(d, ana_zigzag((int64_t)(t - prev_t))) || !put(d, corr) || !put(d, dur))
            return 0;
        gpu_seen(c, t, dur, call_t, found);
    } else {
        t = c->t += (uint64_t)ana_unzigzag(get(&cols[0], &bad));
        if (bad || !put(d, ana_zigzag((int64_t)(t - prev_t))))
            return 0;
    }
    struct rcol *body = &cols[BODY];
    for (const struct op *o = pl->ops[kind]; o->code != OP_END; o++) {
        if (o->code < OP_DUR) {
            if (!move_body(body, skip_field(o, body->p, body->end), d))
                return 0;
        } else {
            uint64_t v = get(&cols[o->slot], &bad);
            if (o->code != OP_DUR) {
                v = counter_in(o->code == OP_CORR ? &c->corr : &c->call, v);
                if (o->code == OP_CORR)
                    call_seen(m, v, t);
            }
            if (bad || !put(d, v))
                return 0;
        }
    }
    return 1;
}

struct unpacker {
    struct rcol cols[NCOLS];
    struct plan plan;
    struct model m;
};

size_t ana_unpack(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
    struct unpacker *u = calloc(1, sizeof(*u));
    size_t result = 0;
    if (!u)
        return 0;
    plan_build(&u->plan);
    model_reset(&u->m);
    int bad = 0;
    struct rcol hdr = { in, in + n, in + n };
    uint64_t nrec = get(&hdr, &bad), ncols = get(&hdr, &bad);
    if (bad || ncols > NCOLS)
        goto done;
    /* the directory: ids rising, lengths adding up to the rest */
    struct rcol dir = hdr;
    uint64_t prev_id = 0, total = 0;
    for (uint64_t i = 0; i < ncols; i++) {
        uint64_t id = get(&hdr, &bad), len = get(&hdr, &bad);
        if (bad || id >= NCOLS || (i && id <= prev_id) || len > n)
            goto done;
        prev_id = id;
        total += len;
    }
    if (total != (uint64_t)(hdr.end - hdr.p))
        goto done;
    const uint8_t *p = hdr.p;
    for (uint64_t i = 0; i < ncols; i++) {
        uint64_t id = get(&dir, &bad), len = get(&dir, &bad);
        u->cols[id] = (struct rcol){ p, p + len, in + n };
        p += len;
    }
    struct dst d = { out, out + cap };
    for (uint64_t r = 0; r < nrec; r++) {
        uint64_t kind = get(&u->cols[0], &bad);
        if (bad || kind == 0 || kind >= ANA_K_COUNT || d.end - d.p < 2)
            goto done;
        /* The payload goes after a 1-byte length, moved once if its length takes more. */
        uint8_t *rec = d.p;
        rec[0] = (uint8_t)kind;
        d.p += 2;
        if (!unpack_payload(u->cols, &u->plan, (uint32_t)kind, &d, &u->m))
            goto done;
        size_t plen = (size_t)(d.p - (rec + 2));
        if (plen < 0x80) {
            rec[1] = (uint8_t)plen;
            continue;
        }
        uint8_t len[ANA_VARINT_MAX];
        size_t ln = ana_varint_put(len, plen);
        if ((size_t)(d.end - d.p) < ln - 1)
            goto done;
        memmove(rec + 1 + ln, rec + 2, plen);
        memcpy(rec + 1, len, ln);
        d.p += ln - 1;
    }
    for (int i = 0; i < NCOLS; i++)
        if (u->cols[i].p != u->cols[i].end)
            goto done; /* bytes left over: not what the packer wrote */
    result = (size_t)(d.p - out);
done:
    free(u);
    return result;
}
