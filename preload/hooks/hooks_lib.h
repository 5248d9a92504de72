/* hooks_lib.h — what the hooks of the libraries (cublas.c, nccl.c) share: how a
 * wrapper finds the library's real function, what it does when there is none, and the
 * hash the communicator ids are made of.
 *
 * Every library wrapper: resolve the real function (once, cached), ana_lib_enter, call it,
 * ana_lib_leave, and when the call is recorded build the record and ana_lib_emit it; the
 * program's result and errno are returned untouched. Values that only the record needs
 * (a handle's stream, a descriptor's shape) are read with the library's real getters
 * after ana_lib_leave, inside the preload's bracket, so those calls are never recorded. */
#ifndef ANA_HOOKS_LIB_H
#define ANA_HOOKS_LIB_H

#include "hooks.h"

/* Declares `real`, the real function `name` (returning ret_t) of the library `soname`
 * (symbol version `version`, NULL when the library's symbols are unversioned); returns
 * `err` from the wrapper when the library has none. Racing first calls store the same
 * pointer. */
#define ANA_LIB_REAL(soname, version, ret_t, err, name, params)                      \
    static ret_t(*real_ptr) params;                                                  \
    static int real_said;                                                            \
    if (ANA_UNLIKELY(!real_ptr))                                                     \
        real_ptr = (ret_t(*) params)ana_dl_real_sym(soname, version, #name);         \
    if (ANA_UNLIKELY(!real_ptr)) {                                                   \
        ana_lib_missing(soname, #name, &real_said);                                  \
        return err;                                                                  \
    }                                                                                \
    ret_t(*const real) params = real_ptr

/* A getter the record builders call (never interposed): `name` of `soname`, cached in
 * `slot`, or NULL. */
#define ANA_LIB_GETTER(slot, soname, version, name) \
    ((slot) ? (slot) : ((slot) = ana_dl_real_sym(soname, version, name)))

/* FNV-1a 64 of n bytes, continuing from h (start with ANA_FNV_BASIS). */
#define ANA_FNV_BASIS 0xcbf29ce484222325ull
static inline uint64_t ana_fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}
/* FNV-1a 64 continued by the 8 bytes of v, least significant first. */
static inline uint64_t ana_fnv1a_u64(uint64_t h, uint64_t v)
{
    for (int i = 0; i < 8; i++, v >>= 8)
        h = (h ^ (v & 0xff)) * 0x100000001b3ull;
    return h;
}

/* a × b, or UINT64_MAX when it does not fit. */
static inline uint64_t ana_sat_mul(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

#endif
