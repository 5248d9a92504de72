/* encode_fast.c — encode_fast.h. Each fast kind is its field list of codec.c's ana_fields
 * table written out: the same fields in the same order, varints and zigzags. A field
 * appended to a kind there must be appended here too (the unit test fails otherwise).
 *
 * Called by the preload's hooks; calls nothing of ours.
 */
#include "encode_fast.h"

#include <string.h>

#include "varint.h"

/* One varint; the caller has made room for ANA_VARINT_MAX bytes. */
static inline uint8_t *put(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static inline uint8_t *put_s(uint8_t *p, int64_t v) { return put(p, ana_zigzag(v)); }

/* A duration in ticks: to the nearest tick (ana_record_to_ticks). */
static inline uint64_t dur_ticks(uint64_t d, unsigned shift)
{
    return shift ? (d >> shift) + ((d >> (shift - 1)) & 1) : d;
}

static uint8_t *put_frames_n(uint8_t *p, const ana_frames *f)
{
    p = put(p, f->n);
    for (uint32_t i = 0; i < f->n; i++)
        p = put(p, i == 0 ? f->ip[0] : ana_zigzag((int64_t)(f->ip[i] - f->ip[i - 1])));
    return p;
}

/* A LAUNCH without pointer words (the usual graph launch, a kernel without pointer
 * parameters) writes its two empty lists as one zero byte each, without a call. */
static inline uint8_t *put_frames(uint8_t *p, const ana_frames *f)
{
    if (f->n == 0) {
        *p = 0;
        return p + 1;
    }
    return put_frames_n(p, f);
}

static uint8_t *put_alloc(uint8_t *p, const ana_rec_alloc *r, unsigned shift)
{
    p = put(p, r->api);
    p = put_s(p, r->ret);
    p = put(p, r->ptr);
    p = put(p, r->size);
    p = put_s(p, r->device);
    p = put(p, r->stream);
    p = put(p, r->stack);
    p = put(p, dur_ticks(r->dur_ns, shift));
    p = put(p, r->flags);
    p = put(p, r->corr);
    p = put(p, r->via);
    p = put(p, r->lib);
    return put(p, r->call);
}

static uint8_t *put_free(uint8_t *p, const ana_rec_free *r, unsigned shift)
{
    p = put(p, r->api);
    p = put_s(p, r->ret);
    p = put(p, r->ptr);
    p = put_s(p, r->device);
    p = put(p, r->stream);
    p = put(p, r->stack);
    p = put(p, dur_ticks(r->dur_ns, shift));
    p = put(p, r->corr);
    p = put(p, r->via);
    p = put(p, r->lib);
    return put(p, r->call);
}

static uint8_t *put_launch(uint8_t *p, const ana_rec_launch *r, unsigned shift)
{
    p = put(p, r->api);
    p = put_s(p, r->ret);
    p = put(p, r->kernel);
    p = put(p, r->grid_x);
    p = put(p, r->grid_y);
    p = put(p, r->grid_z);
    p = put(p, r->block_x);
    p = put(p, r->block_y);
    p = put(p, r->block_z);
    p = put(p, r->shmem);
    p = put(p, r->stream);
    p = put(p, r->stack);
    p = put(p, dur_ticks(r->dur_ns, shift));
    p = put(p, r->corr);
    p = put(p, r->via);
    p = put(p, r->lib);
    p = put(p, r->call);
    p = put_frames(p, &r->ptrs);
    return put_frames(p, &r->ptr_at);
}

static uint8_t *put_memcpy(uint8_t *p, const ana_rec_memcpy *r, unsigned shift)
{
    p = put(p, r->api);
    p = put_s(p, r->ret);
    p = put(p, r->dst);
    p = put(p, r->src);
    p = put(p, r->bytes);
    p = put(p, r->dir);
    p = put(p, r->stream);
    p = put(p, r->stack);
    p = put(p, dur_ticks(r->dur_ns, shift));
    p = put(p, r->corr);
    p = put(p, r->via);
    p = put(p, r->lib);
    return put(p, r->call);
}

static uint8_t *put_memset(uint8_t *p, const ana_rec_memset *r, unsigned shift)
{
    p = put(p, r->api);
    p = put_s(p, r->ret);
    p = put(p, r->ptr);
    p = put_s(p, r->value);
    p = put(p, r->bytes);
    p = put(p, r->stream);
    p = put(p, r->stack);
    p = put(p, dur_ticks(r->dur_ns, shift));
    p = put(p, r->corr);
    p = put(p, r->via);
    p = put(p, r->lib);
    return put(p, r->call);
}

static uint8_t *put_vmm(uint8_t *p, const ana_rec_vmm *r, unsigned shift)
{
    p = put(p, r->api);
    p = put_s(p, r->ret);
    p = put(p, r->va);
    p = put(p, r->size);
    p = put(p, r->handle);
    p = put(p, r->offset);
    p = put_s(p, r->device);
    p = put(p, r->flags);
    p = put(p, r->stack);
    p = put(p, dur_ticks(r->dur_ns, shift));
    p = put(p, r->corr);
    p = put(p, r->via);
    p = put(p, r->lib);
    return put(p, r->call);
}

static uint8_t *put_range(uint8_t *p, const ana_rec_range *r)
{
    p = put(p, r->op);
    p = put(p, r->domain);
    p = put(p, r->id);
    p = put(p, r->category);
    p = put(p, r->color);
    uint32_t n = r->name.s ? r->name.len : 0;
    p = put(p, n);
    if (n)
        memcpy(p, r->name.s, n);
    return p + n;
}

/* kind, a 1-to-3-byte length, the payload; the dt varint; the fields. */
enum { HEAD_MAX = 4 };

size_t ana_record_encode_max(const ana_record *rec)
{
    size_t fields; /* varints, dt included */
    switch (rec->kind) {
    case ANA_K_ALLOC: fields = 14; break;
    case ANA_K_FREE: fields = 12; break;
    case ANA_K_MEMCPY: fields = 14; break;
    case ANA_K_MEMSET: fields = 13; break;
    case ANA_K_VMM: fields = 15; break;
    case ANA_K_LAUNCH:
        fields = 18 + 2 + (size_t)rec->u.launch.ptrs.n + rec->u.launch.ptr_at.n;
        if (fields > 4096)
            return 0; /* a length of more than 3 bytes: the table encoder's */
        break;
    case ANA_K_RANGE: {
        size_t n = rec->u.range.name.s ? rec->u.range.name.len : 0;
        return n > 65536 ? 0 : HEAD_MAX + 7 * ANA_VARINT_MAX + n;
    }
    default: return 0;
    }
    return HEAD_MAX + fields * ANA_VARINT_MAX;
}

size_t ana_record_encode_fast(uint8_t *buf, size_t cap, const ana_record *rec, uint64_t prev_tick,
                              unsigned shift)
{
    size_t max = ana_record_encode_max(rec);
    if (max && cap >= max)
        return ana_record_encode_room(buf, rec, prev_tick, shift);
    if (!shift)
        return ana_record_encode(buf, cap, rec, prev_tick);
    ana_record ticks = *rec;
    ana_record_to_ticks(&ticks, shift);
    return ana_record_encode(buf, cap, &ticks, prev_tick);
}

size_t ana_record_encode_room(uint8_t *buf, const ana_record *rec, uint64_t prev_tick, unsigned shift)
{
    /* As ana_record_encode: the payload after a 1-byte length, moved when longer. */
    uint8_t *payload = buf + 2;
    uint8_t *p = put(payload, ana_zigzag((int64_t)((rec->time_ns >> shift) - prev_tick)));
    switch (rec->kind) {
    case ANA_K_ALLOC: p = put_alloc(p, &rec->u.alloc, shift); break;
    case ANA_K_FREE: p = put_free(p, &rec->u.free, shift); break;
    case ANA_K_LAUNCH: p = put_launch(p, &rec->u.launch, shift); break;
    case ANA_K_MEMCPY: p = put_memcpy(p, &rec->u.memcpy, shift); break;
    case ANA_K_MEMSET: p = put_memset(p, &rec->u.memset, shift); break;
    case ANA_K_VMM: p = put_vmm(p, &rec->u.vmm, shift); break;
    default: p = put_range(p, &rec->u.range); break;
    }
    size_t plen = (size_t)(p - payload);
    buf[0] = (uint8_t)rec->kind;
    if (plen < 0x80) {
        buf[1] = (uint8_t)plen;
        return 2 + plen;
    }
    uint8_t len[ANA_VARINT_MAX];
    size_t ln = (size_t)(put(len, plen) - len);
    memmove(buf + 1 + ln, payload, plen);
    memcpy(buf + 1, len, ln);
    return 1 + ln + plen;
}
