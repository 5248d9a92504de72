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

struct ana_unpacker {
    struct rcol cols[NCOLS];
    struct plan plan;
    struct model m;
    uint64_t nrec, r;    /* records in the payload, records read */
    size_t rsize, raw;   /* bytes the records take: as the chunk says, as read so far */
    uint8_t *tmp;        /* a record rebuilt (ANA_UNP_RAW) */
    size_t tcap;
};

ana_unpacker *ana_unpacker_new(void)
{
    ana_unpacker *u = calloc(1, sizeof(*u));
    if (!u)
        return NULL;
    plan_build(&u->plan);
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
    return v < 0x80 ? 1 : (70u - (unsigned)__builtin_clzll(v)) / 7u;
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
static int frames(struct rcol *b, ana_frames *fr, ana_room *room)
{
    int bad = 0;
    uint64_t n = bget(b, &bad);
    if (bad || n > (uint64_t)(b->end - b->p))
        return -1;
    size_t need = (size_t)n * sizeof(uint64_t) + 1, al = _Alignof(uint64_t);
    ana_scratch *sc = room->cur;
    if (!sc || sc->cap - sc->used < need + al)
        sc = room->cur = room->get(room->ctx, need + al);
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

/* Reading one record: its kind's columns and body, the model, its time; the bytes its
 * payload would take so far (dt, the coded fields; the body's are counted at the end). */
struct rd {
    struct rcol *cols, *body;
    struct model *m;
    struct ctx *c;
    uint64_t t;
    size_t plen;
    int bad;
};

/* Each kind's fields in the order of its row list in codec.c (ana_fields): B = a plain
 * varint of the body, BS = a zigzag one, then the fields with columns of their own at their
 * slot (1 + the field's place in the list, pack_int.h), FR = frames of the body. */
#define RD static inline __attribute__((always_inline)) void /* one body per kind */
#define B(f) x->f = bget(r->body, &r->bad)
#define BS(f) x->f = ana_unzigzag(bget(r->body, &r->bad))
#define DUR(f, slot) r->plen += vlen(x->f = get(&r->cols[slot], &r->bad))
#define CORR(f, slot)                                                                      \
    do {                                                                                   \
        x->f = counter_in(&r->c->corr, get(&r->cols[slot], &r->bad));                      \
        call_seen(r->m, x->f, r->t);                                                       \
        r->plen += vlen(x->f);                                                             \
    } while (0)
#define CALL(f, slot) r->plen += vlen(x->f = counter_in(&r->c->call, get(&r->cols[slot], &r->bad)))
#define FR(f, room)                                                                        \
    do {                                                                                   \
        if (frames(r->body, &x->f, room) < 0)                                              \
            r->bad = 1;                                                                    \
    } while (0)

/* decode_fast.c zeroes the struct first: every byte but the frames' padding is written
 * here (the same fields) */
RD rd_launch(struct rd *r, ana_rec_launch *x, ana_room *room)
{
    B(api); BS(ret); B(kernel); B(grid_x); B(grid_y); B(grid_z); B(block_x); B(block_y);
    B(block_z); B(shmem); B(stream); B(stack); DUR(dur_ns, 13); CORR(corr, 14); B(via);
    B(lib); CALL(call, 17);
    if (!r->bad)
        FR(ptrs, room);
    if (!r->bad)
        FR(ptr_at, room);
}

RD rd_alloc(struct rd *r, ana_rec_alloc *x)
{
    B(api); BS(ret); B(ptr); B(size); BS(device); B(stream); B(stack); DUR(dur_ns, 8);
    B(flags); CORR(corr, 10); B(via); B(lib); CALL(call, 13);
}

RD rd_free(struct rd *r, ana_rec_free *x)
{
    B(api); BS(ret); B(ptr); BS(device); B(stream); B(stack); DUR(dur_ns, 7);
    CORR(corr, 8); B(via); B(lib); CALL(call, 11);
}

RD rd_memcpy(struct rd *r, ana_rec_memcpy *x)
{
    B(api); BS(ret); B(dst); B(src); B(bytes); B(dir); B(stream); B(stack); DUR(dur_ns, 9);
    CORR(corr, 10); B(via); B(lib); CALL(call, 13);
}

RD rd_memset(struct rd *r, ana_rec_memset *x)
{
    B(api); BS(ret); B(ptr); BS(value); B(bytes); B(stream); B(stack); DUR(dur_ns, 8);
    CORR(corr, 9); B(via); B(lib); CALL(call, 12);
}

RD rd_gemm(struct rd *r, ana_rec_gemm *x)
{
    B(api); BS(ret); CALL(call, 3); B(handle); B(stream); B(m); B(n); B(k); B(batch);
    B(trans_a); B(trans_b); B(lda); B(ldb); B(ldc); B(a_type); B(b_type); B(c_type);
    B(compute_type); B(math_mode); B(epilogue); B(workspace); B(flops); B(stack);
    DUR(dur_ns, 24); B(a); B(b); B(c); B(d); B(ws);
}

RD rd_coll(struct rd *r, ana_rec_coll *x)
{
    B(api); BS(ret); CALL(call, 3); B(comm); B(stream); B(count); B(dtype); B(bytes); B(op);
    BS(peer); B(sendbuff); B(recvbuff); B(group); B(seq); B(stack); DUR(dur_ns, 16);
}

RD rd_libcall(struct rd *r, ana_rec_libcall *x)
{
    B(lib); B(api); BS(ret); CALL(call, 4); B(handle); B(arg); B(arg2); B(stack);
    DUR(dur_ns, 9);
}

/* GPU activity: corr and dur are read with dt (rd_gpu); the rest is body. */
RD rd_gpu_kernel(struct rd *r, ana_rec_gpu_kernel *x)
{
    B(kernel); BS(device); B(context); B(stream); B(grid_x); B(grid_y); B(grid_z);
    B(block_x); B(block_y); B(block_z); B(shmem_static); B(shmem_dynamic); B(regs);
    B(graph); B(graph_node);
}

RD rd_gpu_memcpy(struct rd *r, ana_rec_gpu_memcpy *x)
{
    B(bytes); B(copy_kind); B(src_kind); B(dst_kind); B(flags); BS(device); B(context);
    B(stream); BS(src_device); BS(dst_device); B(graph); B(graph_node);
}

RD rd_gpu_memset(struct rd *r, ana_rec_gpu_memset *x)
{
    B(bytes); B(value); B(mem_kind); B(flags); BS(device); B(context); B(stream); B(graph);
    B(graph_node);
}

#undef B
#undef BS
#undef DUR
#undef CORR
#undef CALL
#undef FR

/* A GPU activity record's time, correlation id and duration (unpack_payload's order). */
RD rd_gpu(struct rd *r, uint64_t *corr, uint64_t *dur)
{
    struct ctx *c = r->c;
    uint64_t prev_t = c->t, call_t;
    int found;
    *corr = counter_in(&c->corr, get(&r->cols[1], &r->bad));
    *dur = get(&r->cols[2], &r->bad);
    uint64_t pred = gpu_predict(r->m, c, *corr, prev_t, &call_t, &found);
    r->t = c->t = pred + (uint64_t)ana_unzigzag(get(&r->cols[0], &r->bad));
    gpu_seen(c, r->t, *dur, call_t, found);
    r->plen = vlen(ana_zigzag((int64_t)(r->t - prev_t))) + vlen(*corr) + vlen(*dur);
}

/* Whether records of the kind are read straight (direct()): decode_fast.c's kinds. */
static int is_direct(uint32_t kind)
{
    switch (kind) {
    case ANA_K_LAUNCH: case ANA_K_GPU_KERNEL: case ANA_K_ALLOC: case ANA_K_FREE:
    case ANA_K_MEMCPY: case ANA_K_MEMSET: case ANA_K_GPU_MEMCPY: case ANA_K_GPU_MEMSET:
    case ANA_K_GEMM: case ANA_K_COLL: case ANA_K_LIBCALL: return 1;
    default: return 0;
    }
}

/* The record of a direct kind into rec, as unpack_payload would have written it and
 * decode_fast.c would have read it (the same fields of rec->u): the payload's length, or 0
 * when either would fail. */
__attribute__((flatten)) /* the varint readers inlined into each kind's reader */
static size_t direct(ana_unpacker *u, uint32_t kind, ana_record *rec, ana_room *room)
{
    struct rcol *cols = &u->cols[col_of(kind, 0)];
    struct rcol body = cols[BODY]; /* a copy, which the compiler keeps in registers */
    struct rd r = { cols, &body, &u->m, u->m.cur, 0, 0, 0 };
    if (is_gpu_activity(kind)) {
        uint64_t corr, dur;
        rd_gpu(&r, &corr, &dur);
        if (kind == ANA_K_GPU_KERNEL) {
            rec->u.gpu_kernel.corr = corr, rec->u.gpu_kernel.dur_ns = dur;
        } else if (kind == ANA_K_GPU_MEMCPY) {
            rec->u.gpu_memcpy.corr = corr, rec->u.gpu_memcpy.dur_ns = dur;
        } else {
            rec->u.gpu_memset.corr = corr, rec->u.gpu_memset.dur_ns = dur;
        }
    } else {
        uint64_t prev_t = r.c->t;
        r.t = r.c->t += (uint64_t)ana_unzigzag(get(&cols[0], &r.bad));
        r.plen = vlen(ana_zigzag((int64_t)(r.t - prev_t)));
    }
    const uint8_t *b0 = body.p;
    switch (kind) {
    case ANA_K_LAUNCH: rd_launch(&r, &rec->u.launch, room); break;
    case ANA_K_GPU_KERNEL: rd_gpu_kernel(&r, &rec->u.gpu_kernel); break;
    case ANA_K_ALLOC: rd_alloc(&r, &rec->u.alloc); break;
    case ANA_K_FREE: rd_free(&r, &rec->u.free); break;
    case ANA_K_MEMCPY: rd_memcpy(&r, &rec->u.memcpy); break;
    case ANA_K_MEMSET: rd_memset(&r, &rec->u.memset); break;
    case ANA_K_GPU_MEMCPY: rd_gpu_memcpy(&r, &rec->u.gpu_memcpy); break;
    case ANA_K_GPU_MEMSET: rd_gpu_memset(&r, &rec->u.gpu_memset); break;
    case ANA_K_GEMM: rd_gemm(&r, &rec->u.gemm); break;
    case ANA_K_COLL: rd_coll(&r, &rec->u.coll); break;
    default: rd_libcall(&r, &rec->u.libcall); break;
    }
    if (r.bad)
        return 0;
    cols[BODY].p = body.p;
    rec->kind = kind;
    rec->time_ns = r.t;
    return r.plen + (size_t)(body.p - b0);
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

int ana_unpacker_next(ana_unpacker *u, ana_record *rec, ana_room *room,
                      const uint8_t **raw, size_t *len)
{
    if (u->r == u->nrec)
        return used_up(u) && u->raw == u->rsize ? ANA_UNP_END : ANA_UNP_BAD;
    u->r++;
    int bad = 0;
    uint64_t kind = get(&u->cols[0], &bad);
    if (bad || kind == 0 || kind >= ANA_K_COUNT)
        return ANA_UNP_BAD;
    if (!is_direct((uint32_t)kind))
        return rebuild(u, (uint32_t)kind, raw, len);
    size_t plen = direct(u, (uint32_t)kind, rec, room);
    if (!plen)
        return ANA_UNP_BAD;
    u->raw += 1 + vlen(plen) + plen;
    return u->raw <= u->rsize ? ANA_UNP_REC : ANA_UNP_BAD;
}
