/* memevents.h — the model's memory events: one compact ana_mev per ALLOC, FREE, MEMINFO,
 * VMM map/unmap and GPU_MEMORY record of a trace (trace.h t->mev), kept in time order for
 * the memory replay (analyses/memory.h), which is unit-tested on hand-built arrays of
 * them. Part of model/: the loader fills and sorts them, analyses read them.
 *
 * The events are a spill (spill.h): in memory while a trace has few of them, else in a
 * temporary file, so that a long trace's events do not hold memory. Readers go through
 * them in order with an ana_spill_iter, or look events up by index with an ana_mev_reader
 * (a small cache of blocks). */
#ifndef ANA_MEMEVENTS_H
#define ANA_MEMEVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "records.h"
#include "spill.h"

enum ana_mev_type {
    ANA_MEV_ALLOC = 1, ANA_MEV_FREE = 2, ANA_MEV_MEMINFO = 3,
    ANA_MEV_MAP = 4,       /* cuMemMap: ptr = va, size, handle */
    ANA_MEV_UNMAP = 5,     /* cuMemUnmap: ptr = va, size (handle when recorded) */
    ANA_MEV_GPU_ALLOC = 6, /* GPU_MEMORY allocation: ptr = address, size, cls from mem_kind */
    ANA_MEV_GPU_FREE = 7,  /* GPU_MEMORY release: ptr = address */
};
/* The "stack" of allocations only the driver saw (GPU_MEMORY records). */
#define ANA_MEM_STACK_DRIVER UINT64_MAX
enum ana_mem_class { ANA_MEM_OTHER = 0, ANA_MEM_DEVICE = 1, ANA_MEM_HOST_PINNED = 2 };

typedef struct ana_mev {
    uint64_t time_ns; /* absolute, CLOCK_MONOTONIC of the traced host */
    uint64_t seq;     /* position in the file, breaks ties in time */
    uint64_t tid;
    uint64_t ptr;     /* ALLOC, FREE; for MEMINFO: free bytes */
    uint64_t size;    /* ALLOC: bytes requested; for MEMINFO: total bytes */
    uint64_t stack;   /* canonical stack id, 0 = none */
    uint64_t corr;    /* CUPTI correlation id, 0 = none */
    uint64_t handle;  /* MAP/UNMAP: the allocation handle (cuMemCreate's ptr) */
    int64_t ret;      /* CUDA error code the call returned */
    int32_t device;
    uint16_t api;     /* for MEMINFO: reason */
    uint8_t type;     /* enum ana_mev_type */
    uint8_t cls : 4;  /* ALLOC: enum ana_mem_class */
    uint8_t lib : 4;  /* ALLOC: the library that made it (enum ana_lib; ANA_MEM_LIB_OTHER above) */
} ana_mev;

/* Device bytes are also summed by ana_mev.lib: 0 none, 1 cuBLAS, 2 cuBLASLt, 3 NCCL,
 * 4 cuDNN, ..., ANA_MEM_LIB_OTHER for any larger number. */
#define ANA_MEM_LIB_OTHER 15
#define ANA_MEM_LIBS 16

/* Sorts by time_ns, then seq (a stable order for equal times). */
void ana_mem_sort(ana_mev *ev, size_t n);
/* That order, as a comparator (the loader's sorter). */
int ana_mev_cmp(const void *a, const void *b);

/* The events of an array (not copied; the array outlives the spill, which is not freed):
 * for callers and tests that hold them as one. */
void ana_mev_spill_of(ana_spill *s, const ana_mev *ev, size_t n);

/* Events are read in order with an ana_spill_iter (spill.h; it.idx - 1 is an event's index):
 *   ana_spill_iter it;
 *   ana_spill_iter_begin(&it, &t->mev, 0);
 *   for (const ana_mev *e; (e = ana_spill_iter_next(&it));) ...
 *   ana_spill_iter_end(&it); */

/* Events looked up by index: in memory, the event itself; in a file, a copy in one of
 * ANA_MEV_WAYS cached blocks of ANA_MEV_BLOCK events (direct-mapped), valid until a later
 * lookup maps another block to its way. Lookups near each other, or in order, read each
 * block once. */
#define ANA_MEV_BLOCK 1024
#define ANA_MEV_WAYS 16
typedef struct ana_mev_reader {
    const ana_spill *s;
    ana_mev *blocks;              /* ANA_MEV_WAYS × ANA_MEV_BLOCK events, once needed */
    uint64_t tag[ANA_MEV_WAYS];   /* 1 + the block each way holds, 0 none */
} ana_mev_reader;
void ana_mev_reader_open(ana_mev_reader *r, const ana_spill *s);
const ana_mev *ana_mev_get(ana_mev_reader *r, uint64_t idx);
void ana_mev_reader_close(ana_mev_reader *r);
/* The first event later than time_ns (n when none is): events [0, result) are at or before. */
uint64_t ana_mev_after(ana_mev_reader *r, uint64_t time_ns);

/* Memory allocated before an imported trace began (import/kineto.h: a free that matched no
 * allocation, or the first `Total Allocated` beyond the first event) is imported as
 * allocations at the trace's start at these pseudo addresses: what they held is unknown
 * (the memory anatomy says so). */
#define ANA_KINETO_PRE_BASE 0xfff0000000000000ull
static inline int ana_kineto_pre_trace(uint16_t api, uint64_t ptr)
{
    return api == ANA_API_IMPORTED_ALLOC && ptr >= ANA_KINETO_PRE_BASE - 1;
}

#endif
