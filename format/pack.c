/* pack.c — packed chunks (docs/trace-format.md, "Packed chunks"): a chunk's records
 * re-coded into columns before compression (unpack.c: and back).
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
 * Called by writer.c; calls codec.c (its table of fields).
 */
#include "pack.h"
#include "pack_int.h"

#include <stdlib.h>
#include <string.h>

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
