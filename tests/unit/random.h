/* random.h — the unit tests' random numbers: xorshift64, and values of every varint length
 * (0, small, pointer-like, 64-bit, negative as int64). Each test file keeps its own state
 * and seed, so its sequence does not depend on the other files. */
#ifndef ANA_TEST_RANDOM_H
#define ANA_TEST_RANDOM_H

#include <stdint.h>

static inline uint64_t ana_xorshift64(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static inline uint64_t ana_random_value(uint64_t *s)
{
    unsigned w = (unsigned)(ana_xorshift64(s) % 65);
    uint64_t v = w ? ana_xorshift64(s) >> (64 - w) : 0;
    return (ana_xorshift64(s) & 7) == 0 ? (uint64_t)-(int64_t)v : v;
}

#endif
