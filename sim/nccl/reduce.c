/*
 * reduce.c — NCCL's datatypes and reduction operators on host memory (device memory is
 * host memory in the sim).
 *
 * Reductions combine the ranks' contributions in rank order 0, 1, ..., n-1, rounding to
 * the datatype after every step (float16 and bfloat16 are computed in float and rounded to
 * nearest even), so every rank computes bit-identical results. ncclAvg is the sum divided
 * by n (integer division truncates), as NCCL's SumPostDiv; for floating-point types NCCL
 * uses PreMulSum (each value times 1/n, then summed), which can differ in the last bit.
 * fp8 types (ncclFloat8e4m3, ncclFloat8e5m2) are not supported.
 */
#include "nccl_sim.h"

#include <math.h>
#include <string.h>

static const struct {
    size_t size;
    const char *suffix;
    int is_float;
} types[] = {
    [ncclInt8] = { 1, "i8", 0 },     [ncclUint8] = { 1, "u8", 0 },
    [ncclInt32] = { 4, "i32", 0 },   [ncclUint32] = { 4, "u32", 0 },
    [ncclInt64] = { 8, "i64", 0 },   [ncclUint64] = { 8, "u64", 0 },
    [ncclFloat16] = { 2, "f16", 1 }, [ncclFloat32] = { 4, "f32", 1 },
    [ncclFloat64] = { 8, "f64", 1 }, [ncclBfloat16] = { 2, "bf16", 1 },
};

static int known_type(ncclDataType_t t)
{
    return (unsigned)t < sizeof(types) / sizeof(types[0]) && types[t].size != 0;
}

size_t ana_nccl_type_size(ncclDataType_t t) { return known_type(t) ? types[t].size : 0; }

const char *ana_nccl_type_suffix(ncclDataType_t t)
{
    return known_type(t) ? types[t].suffix : NULL;
}

const char *ana_nccl_op_name(ncclRedOp_t op, ncclDataType_t t)
{
    switch (op) {
    case ncclSum: return "Sum";
    case ncclProd: return "Prod";
    case ncclMax: return "Max";
    case ncclMin: return "Min";
    case ncclAvg: return known_type(t) && types[t].is_float ? "PreMulSum" : "SumPostDiv";
    default: return NULL;
    }
}

/* ---- 16-bit floating point ---- */
static float bf16_to_float(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

static uint16_t float_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40);              /* quiet NaN */
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static float f16_to_float(uint16_t h)
{
    unsigned sign = h >> 15, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    float v;
    if (exp == 0)
        v = ldexpf((float)man, -24);
    else if (exp == 31)
        v = man ? NAN : INFINITY;
    else
        v = ldexpf((float)(man | 0x400), (int)exp - 25);
    return sign ? -v : v;
}

static uint16_t float_to_f16(float f)
{
    uint16_t sign = signbit(f) ? 0x8000 : 0;
    float a = fabsf(f);
    if (isnan(f))
        return 0x7e00;
    if (a >= 65520.0f)                                    /* rounds to infinity */
        return sign | 0x7c00;
    if (a < ldexpf(1.0f, -14)) {                          /* subnormal: units of 2^-24 */
        float m = nearbyintf(ldexpf(a, 24));              /* ties to even (default mode) */
        return sign | (uint16_t)m;
    }
    int e;
    frexpf(a, &e);                                        /* a = m * 2^e, m in [0.5, 1) */
    float m = nearbyintf(ldexpf(a, 11 - e));              /* 11 significant bits */
    if (m >= 2048.0f) {
        m /= 2.0f;
        e++;
    }
    if (e + 14 >= 31)
        return sign | 0x7c00;
    return sign | (uint16_t)((e + 14) << 10) | ((uint16_t)m & 0x3ff);
}

/* ---- the element loops ---- */
#define COMBINE(acc, x, op)                                                        \
    switch (op) {                                                                  \
    case ncclProd: acc = acc * x; break;                                           \
    case ncclMax: acc = x > acc ? x : acc; break;                                  \
    case ncclMin: acc = x < acc ? x : acc; break;                                  \
    default: acc = acc + x; break;                                                 \
    }

#define REDUCE_NATIVE(T)                                                           \
    static void reduce_##T(void *out, const void *const *in, int n, size_t count,  \
                           ncclRedOp_t op)                                         \
    {                                                                              \
        for (size_t i = 0; i < count; i++) {                                       \
            T acc = ((const T *)in[0])[i];                                         \
            for (int r = 1; r < n; r++) {                                          \
                T x = ((const T *)in[r])[i];                                       \
                COMBINE(acc, x, op)                                                \
            }                                                                      \
            if (op == ncclAvg)                                                     \
                acc = (T)(acc / (T)n);                                             \
            ((T *)out)[i] = acc;                                                   \
        }                                                                          \
    }

REDUCE_NATIVE(int8_t)
REDUCE_NATIVE(uint8_t)
REDUCE_NATIVE(int32_t)
REDUCE_NATIVE(uint32_t)
REDUCE_NATIVE(int64_t)
REDUCE_NATIVE(uint64_t)
REDUCE_NATIVE(float)
REDUCE_NATIVE(double)

static void reduce_half(void *out, const void *const *in, int n, size_t count,
                        ncclRedOp_t op, float (*load)(uint16_t), uint16_t (*store)(float))
{
    for (size_t i = 0; i < count; i++) {
        float acc = load(((const uint16_t *)in[0])[i]);
        for (int r = 1; r < n; r++) {
            float x = load(((const uint16_t *)in[r])[i]);
            COMBINE(acc, x, op)
            acc = load(store(acc));                       /* rounded after every step */
        }
        if (op == ncclAvg)
            acc = acc / (float)n;
        ((uint16_t *)out)[i] = store(acc);
    }
}

void ana_nccl_reduce(void *out, const void *const *in, int n, size_t count,
                     ncclDataType_t t, ncclRedOp_t op)
{
    switch (t) {
    case ncclInt8: reduce_int8_t(out, in, n, count, op); break;
    case ncclUint8: reduce_uint8_t(out, in, n, count, op); break;
    case ncclInt32: reduce_int32_t(out, in, n, count, op); break;
    case ncclUint32: reduce_uint32_t(out, in, n, count, op); break;
    case ncclInt64: reduce_int64_t(out, in, n, count, op); break;
    case ncclUint64: reduce_uint64_t(out, in, n, count, op); break;
    case ncclFloat32: reduce_float(out, in, n, count, op); break;
    case ncclFloat64: reduce_double(out, in, n, count, op); break;
    case ncclFloat16: reduce_half(out, in, n, count, op, f16_to_float, float_to_f16); break;
    case ncclBfloat16: reduce_half(out, in, n, count, op, bf16_to_float, float_to_bf16); break;
    default: break;
    }
}
