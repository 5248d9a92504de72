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
