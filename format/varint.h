/* varint.h — LEB128 varints and zigzag coding (docs/trace-format.md, "Field types").
 *
 * Header-only and allocation-free: safe on the preload's hot path. Encoders write at most
 * ANA_VARINT_MAX bytes and return the count; decoders return the bytes consumed, or 0 when
 * the input ends early or a varint is longer than ANA_VARINT_MAX bytes. */
#ifndef ANA_VARINT_H
#define ANA_VARINT_H

#include <stddef.h>
#include <stdint.h>

#define ANA_VARINT_MAX 10

static inline uint64_t ana_zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t ana_unzigzag(uint64_t u) { return (int64_t)(u >> 1) ^ -(int64_t)(u & 1); }

static inline size_t ana_varint_put(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

/* A varint of 1 to 8 bytes read from one 8-byte load (p must have 8 readable bytes;
 * little-endian hosts): the 7-bit groups are gathered by three shift-and-mask steps. 0
 * when it is longer (or the host is big-endian): ana_varint_get reads it. Pays for
 * varints of several bytes (addresses); shorter ones are quicker byte by byte. */
static inline size_t ana_varint_get8(const uint8_t *p, uint64_t *out)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t w;
    __builtin_memcpy(&w, p, 8);
    uint64_t ends = ~w & 0x8080808080808080ull;
    if (!ends)
        return 0;
    unsigned n = (unsigned)__builtin_ctzll(ends) / 8 + 1;
    uint64_t v = w & (n == 8 ? ~0ull : (1ull << (8 * n)) - 1) & 0x7f7f7f7f7f7f7f7full;
    v = ((v & 0x7f007f007f007f00ull) >> 1) | (v & 0x007f007f007f007full);
    v = ((v & 0x3fff00003fff0000ull) >> 2) | (v & 0x00003fff00003fffull);
    v = ((v & 0x0fffffff00000000ull) >> 4) | (v & 0x000000000fffffffull);
    *out = v;
    return n;
#else
    (void)p, (void)out;
    return 0;
#endif
}

static inline size_t ana_varint_get(const uint8_t *p, size_t avail, uint64_t *out)
{
    uint64_t v = 0;
    for (size_t i = 0; i < avail && i < ANA_VARINT_MAX; i++) {
        uint8_t b = p[i];
        if (i == 9 && b > 1)
            return 0; /* more than 64 bits */
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *out = v;
            return i + 1;
        }
    }
    return 0;
}

#endif
