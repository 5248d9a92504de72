/* calls.h — the API calls that make the GPU work (LAUNCH, MEMCPY, MEMSET records), in time
 * order, read by index: a trace of a long run holds hundreds of millions of them.
 *
 * While a trace has at most ANATOMIST_SPILL_CALLS of them (8 Mi) they are an array in
 * memory (24 bytes each). Past that they are packed: blocks of ANA_CALLS_BLOCK calls, each
 * call written as the differences from the one before it in its block (LEB128 varints,
 * about 7 bytes a call), in a temporary file (spill.h); in memory stay only where each block
 * begins and the time of its first call (16 bytes per block), and a cache of the blocks
 * read last, decoded. The model's sorter hands each sorted run over to be packed at once;
 * runs that overlap in time are then merged into a second packed file. Readers take a call
 * by value (ana_calls_get): it stays valid however many calls are read after it. Reading in order, or near the calls read last (the calls of
 * the GPU activities, in their order), decodes each block once.
 *
 * Each thread reads through a cache of its own (its ana_model_slot's, made at its first
 * read), so analyses on several threads may read one sealed ana_calls at once; packing,
 * ana_calls_set_arg and ana_calls_apply stay single-threaded. Part of model/: calls model/spill.h, model/sorter.h, model/u64map.h,
 * model/util.h and format/varint.h only. */
#ifndef ANA_CALLS_H
#define ANA_CALLS_H

#include <stddef.h>
#include <stdint.h>

#include "model/spill.h"
#include "model/u64map.h"
#include "model/util.h"

/* An API call that makes the GPU work (LAUNCH, MEMCPY, MEMSET records): 24 bytes. */
typedef struct ana_api_call {
    uint64_t time_ns;
    uint32_t corr_w;
    uint32_t arg_w;   /* LAUNCH: KERNEL id; MEMCPY/MEMSET: bytes */
    uint32_t call_w;  /* the library call it was made in (1.2), 0 = none */
    uint32_t site;    /* its ana_call_site: an index into the model's sites */
} ana_api_call;
_Static_assert(sizeof(ana_api_call) == 24, "ana_api_call is 24 bytes");

#define ANA_CALLS_BLOCK 256 /* calls per packed block */
#define ANA_CALLS_CACHE 256  /* decoded blocks kept (direct-mapped by block number) */
#define ANA_CALLS_READ (64u << 10) /* bytes read from the file at once: the blocks that follow */

typedef struct ana_calls_cache {
    uint64_t block[ANA_CALLS_CACHE]; /* the block each slot holds, UINT64_MAX: none */
    ana_api_call v[ANA_CALLS_CACHE][ANA_CALLS_BLOCK];
    uint8_t *buf; /* bytes read from the file: [buf_off, buf_off + buf_n), cap of room */
    uint64_t buf_off;
    size_t buf_n, cap;
    size_t hint;    /* the block the last search by time ended in */
    size_t hint_at; /* and where in it (1 .. its calls) */
} ana_calls_cache;

typedef struct ana_calls {
    ana_api_call *raw; /* in memory: all of them */
    uint64_t n;
    /* packed: */
    ana_spill bytes;      /* every block's bytes, one after the other (items of 1 byte) */
    uint64_t *off;        /* block b is bytes [off[b], off[b + 1]) */
    uint64_t *first_ns;   /* the time of block b's first call */
    size_t n_blocks, cap_blocks;
    ana_api_call prev;    /* while packing: the call before, in its block */
    uint32_t prev_nz_call; /* while packing: the last nonzero call_w of the block */
    ana_calls_cache **cache; /* packed, once sealed: ANA_MODEL_SLOTS, each NULL until read */
    uint64_t *runs;       /* packed in sorted runs (ana_calls_pack_run): where each begins */
    size_t n_runs, cap_runs;
    ana_u64map args;      /* packed: call index -> arg_w set (ana_calls_set_arg) */
} ana_calls;

void ana_calls_init(ana_calls *c);
/* The calls in memory, sorted (ana_xmalloc'd): taken over. */
void ana_calls_adopt(ana_calls *c, ana_api_call *v, uint64_t n);
/* Adds the next call (in time order) to the packed calls. */
void ana_calls_pack(ana_calls *c, const ana_api_call *x);
/* Adds a sorted run of n calls (runs that follow each other in time make the calls in
 * order; else ana_calls_merge_runs puts them in order). */
void ana_calls_pack_run(ana_calls *c, const ana_api_call *v, size_t n);
/* The calls of c's runs (sealed), merged in order into out (equal calls: the earlier run
 * first) by cmp, then sealed. */
void ana_calls_merge_runs(const ana_calls *c, ana_calls *out,
                          int (*cmp)(const void *, const void *));
/* Once every call is packed, before reading. */
void ana_calls_seal(ana_calls *c);
/* Call i's arg_w (a launch named by its kernel afterwards): in memory, changed in place;
 * packed, kept aside (and read back by ana_calls_get) until ana_calls_apply packs the
 * calls again with it. */
void ana_calls_set_arg(ana_calls *c, uint64_t i, uint32_t arg_w);
void ana_calls_apply(ana_calls *c);
void ana_calls_free(ana_calls *c);

/* Call i of packed calls: decoded into the cache first when its block is not there. */
ana_api_call ana_calls_get_packed(const ana_calls *c, uint64_t i);
static inline ana_api_call ana_calls_get(const ana_calls *c, uint64_t i)
{
    if (c->raw)
        return c->raw[i];
    /* a block in the cache (nearly every call: readers go in order), no arg set aside */
    const ana_calls_cache *k = c->cache[ana_model_slot];
    uint64_t b = i / ANA_CALLS_BLOCK;
    if (k && k->block[b % ANA_CALLS_CACHE] == b && !c->args.n)
        return k->v[b % ANA_CALLS_CACHE][i % ANA_CALLS_BLOCK];
    return ana_calls_get_packed(c, i);
}
/* The first index whose time is at or after time_ns (after: strictly after); n when none. */
uint64_t ana_calls_bound_packed(const ana_calls *c, uint64_t time_ns, int after);

#endif
