/* chunk.c — one chunk of a trace read, decompressed and unpacked, and its records decoded
 * one at a time (chunk.h).
 * Called by reader.c and ahead.c; calls pack.c, decode_fast.c, codec.c, safe_open.c. */
#include "chunk.h"
#include "decode_fast.h"
#include "pack.h"
#include "safe_open.h"

#include <stdlib.h>
#include <string.h>

static uint32_t get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }

int ana_chunk_grow(uint8_t **buf, size_t *cap, size_t need)
{
    if (*cap >= need)
        return 0;
    uint8_t *nb = realloc(*buf, need);
    if (!nb)
        return -1;
    *buf = nb;
    *cap = need;
    return 0;
}

enum ana_fetch ana_chunk_fetch(int fd, uint64_t size, uint64_t pos, uint64_t seq, ana_chunk *c)
{
    uint64_t left = size - pos;
    if (left == 0)
        return ANA_FETCH_END;
    uint8_t h[ANA_CHUNK_HEADER_SIZE];
    if (left < sizeof(h) || ana_pread_all(fd, h, sizeof(h), pos) < 0)
        return ANA_FETCH_TORN;
    c->csize = get32(h + 4), c->rsize = get32(h + 8), c->seq = get32(h + 12);
    c->packed = memcmp(h, "ACHP", 4) == 0;
    if (memcmp(h, "ACHK", 4) != 0 && !c->packed)
        return ANA_FETCH_MAGIC;
    if (c->csize == 0 || c->csize > ANA_CHUNK_MAX || c->rsize == 0 || c->rsize > ANA_CHUNK_MAX)
        return ANA_FETCH_SIZES;
    if (c->seq != seq)
        return ANA_FETCH_SEQ;
    if (left - sizeof(h) < c->csize)
        return ANA_FETCH_TORN;
    if (ana_chunk_grow(&c->cbuf, &c->ccap, c->csize) < 0 ||
        ana_chunk_grow(&c->raw, &c->rcap, c->rsize) < 0)
        return ANA_FETCH_NOMEM;
    if (ana_pread_all(fd, c->cbuf, c->csize, pos + sizeof(h)) < 0)
        return ANA_FETCH_READ;
    c->fcs = ZSTD_getFrameContentSize(c->cbuf, c->csize);
    if (c->packed ? c->fcs > ana_pack_bound(c->rsize) : c->fcs != c->rsize)
        return ANA_FETCH_FCS;
    if (c->packed && ana_chunk_grow(&c->pbuf, &c->pcap, (size_t)c->fcs) < 0)
        return ANA_FETCH_NOMEM;
    c->got = ZSTD_decompressDCtx(c->dctx, c->packed ? c->pbuf : c->raw, (size_t)c->fcs,
                                 c->cbuf, c->csize);
    if (ZSTD_isError(c->got) || c->got != c->fcs)
        return ANA_FETCH_ZSTD;
    c->raw_filled = !c->packed || !c->keep_packed;
    if (c->packed && c->raw_filled && ana_unpack(c->pbuf, c->got, c->raw, c->rsize) != c->rsize)
        return ANA_FETCH_UNPACK;
    return ANA_FETCH_OK;
}

void ana_chunk_free(ana_chunk *c)
{
    ZSTD_freeDCtx(c->dctx);
    free(c->cbuf);
    free(c->raw);
    free(c->pbuf);
}

enum ana_step ana_chunk_step(ana_dec *d, const uint8_t *raw, size_t rlen, unsigned time_shift,
                             ana_record *rec, ana_scratch *sc, int append, uint64_t *at,
                             uint32_t *kind)
{
    size_t plen;
    *at = d->rpos;
    size_t hn = ana_record_header(raw + *at, rlen - *at, kind, &plen);
    if (!hn) {
        *kind = 0;
        return ANA_STEP_HEADER;
    }
    const uint8_t *payload = raw + *at + hn;
    d->rpos = *at + hn + plen;
    if (!d->in_segment && *kind != ANA_K_SEGMENT)
        return ANA_STEP_NO_SEGMENT;
    if (*kind == 0 || *kind >= ANA_K_COUNT)
        return ANA_STEP_UNKNOWN;
    /* Worst case of the decoded size: each byte of an argv of empty strings becomes a
     * 16-byte ana_str and a NUL (one-byte frames only become 8-byte addresses), plus
     * the alignment of each array. */
    size_t need = plen * 17 + 256;
    if (append && sc->cap - sc->used < need)
        return ANA_STEP_FULL;
    if (!append) {
        if (ana_chunk_grow(&sc->buf, &sc->cap, need) < 0)
            return ANA_STEP_NOMEM;
        sc->used = 0;
    }
    int rc = ana_record_decode_fast(*kind, payload, plen, d->prev_ns, rec, sc);
    if (rc != ANA_DEC_OK)
        return rc == ANA_DEC_NOMEM ? ANA_STEP_NOMEM : ANA_STEP_MALFORMED;
    if (*kind == ANA_K_SEGMENT) {
        d->in_segment = 1;
        d->seg_tid = rec->u.segment.tid;
        d->prev_ns = rec->u.segment.base_ns;
        return ANA_STEP_SEGMENT;
    }
    rec->tid = d->seg_tid;
    d->prev_ns = rec->time_ns; /* in ticks (1.5) */
    ana_record_from_ticks(rec, time_shift);
    return ANA_STEP_REC;
}
