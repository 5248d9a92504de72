/* unpack.c — packed chunks read back (docs/trace-format.md, "Packed chunks"): rebuilt into
 * the chunk's bytes (ana_unpack), or read record by record (ana_unpacker), the frequent
 * kinds straight from the columns into records, without the bytes that the record decoder
 * would only read again (what a report's reading spends most on).
 *
 * Read straight, a record gets what ana_unpack then ana_record_decode_fast would give it:
 * the same model predicts (pack_int.h), each field is read from the body or its column in
 * the order of codec.c's row list, with decode_fast.c's rules (a varint at most 10 bytes;
 * nothing absent: unpacked payloads hold every field), and the bytes the record would have
 * taken are counted, so that a payload whose records would not make the chunk's raw size
 * is given up on as ana_unpack refuses it.
 *
 * Called by chunk.c, ahead.c; calls codec.c (its table of fields).
 */
#include "pack.h"
#include "pack_int.h"

#include <stdlib.h>
#include <string.h>

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

/* One record (kind, length, payload) from the columns into d: 1 = done, 0 = malformed or
 * it does not fit. The payload goes after a 1-byte length, moved once if its length takes
 * more. */
static int unpack_record(struct rcol *all, const struct plan *pl, uint32_t kind, struct dst *d,
                         struct model *m)
{
    if (d->end - d->p < 2)
        return 0;
    uint8_t *rec = d->p;
    rec[0] = (uint8_t)kind;
    d->p += 2;
    if (!unpack_payload(all, pl, kind, d, m))
        return 0;
    size_t plen = (size_t)(d->p - (rec + 2));
    if (plen < 0x80) {
        rec[1] = (uint8_t)plen;
        return 1;
    }
    uint8_t len[ANA_VARINT_MAX];
    size_t ln = ana_varint_put(len, plen);
    if ((size_t)(d->end - d->p) < ln - 1)
        return 0;
    memmove(rec + 1 + ln, rec + 2, plen);
    memcpy(rec + 1, len, ln);
    d->p += ln - 1;
    return 1;
}

/* ---- the records straight from the columns ---- */

/* A kind decoded straight from the columns: its fields after dt (after corr and dur for GPU
 * activity) in the order of codec.c's row list, each read from the body or its column. */
enum { D_END, D_U, D_S, D_FRAMES, D_DUR, D_CORR, D_CALL };

struct dstep {
    uint8_t op, slot; /* slot: the field's column (D_DUR, D_CORR, D_CALL) */
    uint16_t off;     /* where the field lives in the kind's ana_rec_* struct */
};

struct ana_unpacker {
    struct rcol cols[NCOLS];
    struct plan plan;
    struct model m;
    struct dstep steps[ANA_K_COUNT][MAXOPS];
    uint8_t direct[ANA_K_COUNT];
    uint64_t nrec, r;    /* records in the payload, records read */
    size_t rsize, raw;   /* bytes the records take: as the chunk says, as read so far */
    uint8_t *tmp;        /* a record rebuilt (ANA_UNP_RAW) */
    size_t tcap;
};

/* The kinds decode_fast.c decodes: the same fields of rec are written, nothing else. */
static void steps_build(ana_unpacker *u)
{
    static const uint32_t kinds[] = {
        ANA_K_LAUNCH, ANA_K_GPU_KERNEL, ANA_K_ALLOC, ANA_K_FREE, ANA_K_MEMCPY, ANA_K_MEMSET,
        ANA_K_GPU_MEMCPY, ANA_K_GPU_MEMSET, ANA_K_GEMM, ANA_K_COLL, ANA_K_LIBCALL };
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        uint32_t k = kinds[i];
        const struct ana_field *f = ana_fields[k];
        unsigned slot = 1, n = 0;
        if (is_gpu_activity(k)) {
            f += 2;
            slot += 2;
        }
        u->direct[k] = 1;
        for (; f->type != F_END && n < MAXOPS - 1; f++, slot++) {
            uint8_t op = f->type == F_S ? D_S : f->type == F_FRAMES ? D_FRAMES : D_U;
            if (f->type != F_U && f->type != F_S && f->type != F_FRAMES)
                u->direct[k] = 0; /* strings: rebuilt and decoded as before */
            else if (f->role != R_NONE)
                op = f->role == R_DUR ? D_DUR : f->role == R_CORR ? D_CORR : D_CALL;
            u->steps[k][n++] = (struct dstep){ op, (uint8_t)slot, f->off };
        }
        u->steps[k][n].op = D_END;
        if (f->type != F_END)
            u->direct[k] = 0;
    }
}

ana_unpacker *ana_unpacker_new(void)
{
    ana_unpacker *u = calloc(1, sizeof(*u));
    if (!u)
        return NULL;
    plan_build(&u->plan);
    steps_build(u);
    return u;
}

void ana_unpacker_free(ana_unpacker *u)
{
    if (!u)
        return;
    free(u->tmp);
    free(u);
}

int ana_unpacker_open(ana_unpacker *u, const uint8_t *in, size_t n, size_t rsize)
{
    memset(u->cols, 0, sizeof(u->cols));
    model_reset(&u->m);
    u->r = u->raw = 0;
    u->rsize = rsize;
    int bad = 0;
    struct rcol hdr = { in, in + n, in + n };
    uint64_t nrec = get(&hdr, &bad), ncols = get(&hdr, &bad);
    if (bad || ncols > NCOLS)
        return -1;
    /* the directory: ids rising, lengths adding up to the rest */
    struct rcol dir = hdr;
    uint64_t prev_id = 0, total = 0;
    for (uint64_t i = 0; i < ncols; i++) {
        uint64_t id = get(&hdr, &bad), len = get(&hdr, &bad);
        if (bad || id >= NCOLS || (i && id <= prev_id) || len > n)
            return -1;
        prev_id = id;
        total += len;
    }
    if (total != (uint64_t)(hdr.end - hdr.p))
        return -1;
    const uint8_t *p = hdr.p;
    for (uint64_t i = 0; i < ncols; i++) {
        uint64_t id = get(&dir, &bad), len = get(&dir, &bad);
        u->cols[id] = (struct rcol){ p, p + len, in + n };
        p += len;
    }
    u->nrec = nrec;
    return 0;
}

/* Every column read to its end: else bytes are left over, not what the packer wrote. */
static int used_up(const ana_unpacker *u)
{
    for (int i = 0; i < NCOLS; i++)
        if (u->cols[i].p != u->cols[i].end)
            return 0;
    return 1;
}

size_t ana_unpack(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
    ana_unpacker *u = calloc(1, sizeof(*u));
    size_t result = 0;
    if (!u)
        return 0;
    plan_build(&u->plan);
    if (ana_unpacker_open(u, in, n, cap) < 0)
        goto done;
    struct dst d = { out, out + cap };
    int bad = 0;
    for (uint64_t r = 0; r < u->nrec; r++) {
        uint64_t kind = get(&u->cols[0], &bad);
        if (bad || kind == 0 || kind >= ANA_K_COUNT ||
            !unpack_record(u->cols, &u->plan, (uint32_t)kind, &d, &u->m))
            goto done;
    }
    if (used_up(u))
        result = (size_t)(d.p - out);
done:
    free(u);
    return result;
}

/* The bytes a varint of v takes. */
static inline size_t vlen(uint64_t v)
{
    return v < 0x80 ? 1 : (size_t)(70 - __builtin_clzll(v)) / 7;
}

/* A varint of the body (decode_fast.c's rules: at most 10 bytes, none past the end). */
static inline __attribute__((always_inline)) uint64_t bget(struct rcol *b, int *bad)
{
    const uint8_t *p = b->p;
    if (p < b->end && *p < 0x80) {
        b->p = p + 1;
        return *p;
    }
    uint64_t v;
    size_t n; /* addresses take several bytes: one load each where 8 are there */
    if (b->end - p >= 8 && (n = ana_varint_get8(p, &v)) != 0) {
        b->p = p + n;
        return v;
    }
    n = p < b->end ? ana_varint_get(p, (size_t)(b->end - p), &v) : 0;
    if (!n) {
        *bad = 1;
        return 0;
    }
    b->p = p + n;
    return v;
}

/* F_FRAMES as decode_fast.c reads it (n, the first address, zigzag deltas; the same room
 * taken in the scratch, at its alignment), from the body. 0, or -1. */
static int frames(struct rcol *b, ana_frames *fr, const ana_room *room)
{
    int bad = 0;
    uint64_t n = bget(b, &bad);
    if (bad || n > (uint64_t)(b->end - b->p))
        return -1;
    size_t need = (size_t)n * sizeof(uint64_t) + 1, al = _Alignof(uint64_t);
    ana_scratch *sc = room->get(room->ctx, need + al);
    if (!sc)
        return -1;
    size_t at = (sc->used + al - 1) & ~(al - 1);
    sc->used = at + need;
    uint64_t *ip = (uint64_t *)(sc->buf + at);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t v = bget(b, &bad);
        if (bad)
            return -1;
        ip[i] = i == 0 ? v : ip[i - 1] + (uint64_t)ana_unzigzag(v);
    }
    fr->ip = ip;
    fr->n = (uint32_t)n;
    return 0;
}

/* The record of a direct kind into rec, as unpack_payload would have written it and
 * decode_fast.c would have read it: the payload's length, or 0 when either would fail. */
static size_t direct(ana_unpacker *u, uint32_t kind, ana_record *rec, const ana_room *room)
{
    struct rcol *cols = &u->cols[col_of(kind, 0)], *body = &cols[BODY];
    struct model *m = &u->m;
    struct ctx *c = m->cur;
    uint8_t *x = (uint8_t *)&rec->u;
    int bad = 0;
    uint64_t prev_t = c->t, t;
    size_t plen;
    if (kind == ANA_K_LAUNCH)
        memset(&rec->u.launch, 0, sizeof(rec->u.launch));
    if (is_gpu_activity(kind)) {
        const struct ana_field *f = ana_fields[kind];
        uint64_t corr = counter_in(&c->corr, get(&cols[1], &bad)), dur = get(&cols[2], &bad);
        uint64_t call_t;
        int found;
        uint64_t pred = gpu_predict(m, c, corr, prev_t, &call_t, &found);
        t = c->t = pred + (uint64_t)ana_unzigzag(get(&cols[0], &bad));
        if (bad)
            return 0;
        gpu_seen(c, t, dur, call_t, found);
        memcpy(x + f[0].off, &corr, sizeof(corr));
        memcpy(x + f[1].off, &dur, sizeof(dur));
        plen = vlen(ana_zigzag((int64_t)(t - prev_t))) + vlen(corr) + vlen(dur);
    } else {
        t = c->t += (uint64_t)ana_unzigzag(get(&cols[0], &bad));
        plen = vlen(ana_zigzag((int64_t)(t - prev_t)));
    }
    const uint8_t *b0 = body->p;
    for (const struct dstep *s = u->steps[kind]; s->op != D_END; s++) {
        uint64_t v;
        if (s->op == D_U) {
            v = bget(body, &bad);
        } else if (s->op == D_S) {
            v = (uint64_t)ana_unzigzag(bget(body, &bad));
        } else if (s->op == D_FRAMES) {
            if (frames(body, (ana_frames *)(x + s->off), room) < 0)
                return 0;
            continue;
        } else {
            v = get(&cols[s->slot], &bad);
            if (s->op == D_CORR) {
                v = counter_in(&c->corr, v);
                call_seen(m, v, t);
            } else if (s->op == D_CALL) {
                v = counter_in(&c->call, v);
            }
            plen += vlen(v);
        }
        memcpy(x + s->off, &v, sizeof(v));
    }
    if (bad)
        return 0;
    rec->kind = kind;
    rec->time_ns = t;
    return plen + (size_t)(body->p - b0);
}

/* A record of another kind rebuilt into u->tmp, as ana_unpack writes it. */
static int rebuild(ana_unpacker *u, uint32_t kind, const uint8_t **raw, size_t *len)
{
    const struct rcol *body = &u->cols[col_of(kind, BODY)];
    /* its payload: dt and coded fields (10 bytes at most each), the body's bytes */
    size_t bound = 2 * ANA_VARINT_MAX * (SLOTS + 1) + (size_t)(body->end - body->p);
    if (bound > u->tcap) {
        uint8_t *nb = realloc(u->tmp, bound);
        if (!nb)
            return ANA_UNP_BAD;
        u->tmp = nb;
        u->tcap = bound;
    }
    struct dst d = { u->tmp, u->tmp + bound };
    if (!unpack_record(u->cols, &u->plan, kind, &d, &u->m))
        return ANA_UNP_BAD;
    *raw = u->tmp;
    *len = (size_t)(d.p - u->tmp);
    u->raw += *len;
    return u->raw <= u->rsize ? ANA_UNP_RAW : ANA_UNP_BAD;
}

int ana_unpacker_next(ana_unpacker *u, ana_record *rec, const ana_room *room,
                      const uint8_t **raw, size_t *len)
{
    if (u->r == u->nrec)
        return used_up(u) && u->raw == u->rsize ? ANA_UNP_END : ANA_UNP_BAD;
    u->r++;
    int bad = 0;
    uint64_t kind = get(&u->cols[0], &bad);
    if (bad || kind == 0 || kind >= ANA_K_COUNT)
        return ANA_UNP_BAD;
    if (!u->direct[kind])
        return rebuild(u, (uint32_t)kind, raw, len);
    size_t plen = direct(u, (uint32_t)kind, rec, room);
    if (!plen)
        return ANA_UNP_BAD;
    u->raw += 1 + vlen(plen) + plen;
    return u->raw <= u->rsize ? ANA_UNP_REC : ANA_UNP_BAD;
}
