/* memory.h — replay of allocation and free events: peak, live set at the peak, live set
 * at the end (leaks), and the state at each failed allocation.
 *
 * Rules beyond "an ALLOC makes size bytes live at ptr, a FREE of ptr releases them"
 * (docs/report-schema.md, `memory`):
 *  - cuMemCreate (api 57) makes size bytes live under its handle (a namespace apart from
 *    addresses); the bytes go only when the handle was released (cuMemRelease, api 63)
 *    AND every mapping of it unmapped (ANA_MEV_MAP/ANA_MEV_UNMAP), at the later of the two;
 *  - ANA_MEV_GPU_ALLOC/ANA_MEV_GPU_FREE (GPU_MEMORY records) whose corr equals the corr of
 *    an ALLOC, FREE, MAP or UNMAP event are duplicates of a call the hooks saw: ignored.
 *    Others are replayed by address with stack ANA_MEM_STACK_DRIVER; an allocation at an
 *    address already live, or a release of one that is not, is ignored.
 *
 * Pure logic over events in order, independent of the trace reader, so it is unit-tested
 * on hand-built events. The caller sorts events with ana_mem_sort() (model/memevents.h: time, then
 * file order), classifies each ALLOC (device / pinned host / other) and canonicalizes stack
 * ids. Memory: O(live allocations + distinct stacks), plus the failures it keeps
 * (at most ANA_MEM_MAX_FAILURES). Not thread-safe. */
#ifndef ANA_MEMORY_H
#define ANA_MEMORY_H

#include <stddef.h>
#include <stdint.h>

#include "model/memevents.h"

/* A named address range (an NVTX memory region): the device bytes of the allocations
 * whose address lies in [address, address + size) are summed at the peak. */
typedef struct ana_mem_range {
    uint64_t address, size;
    uint64_t peak_bytes, peak_count; /* filled by the replay */
} ana_mem_range;

/* Bytes and allocation count that share one canonical stack (ANA_MEM_STACK_DRIVER:
 * allocations seen by the driver only). */
typedef struct ana_mem_group {
    uint64_t stack, bytes, count;
} ana_mem_group;

/* The life of one device or pinned-host allocation as the replay charged it: live after
 * event a_idx up to (not including) event f_idx of the sorted events. One per allocation
 * of the whole run (56 bytes): event indices take 40 bits (a trace of 2^40 memory events
 * would hold 80 TiB of them first). */
#define ANA_MEM_LIVE ((1ull << 40) - 1) /* f_idx of an allocation live at the end */
typedef struct ana_mem_life {
    uint64_t ptr;             /* address; cuMemCreate: the va of its first mapping, else 0 */
    uint64_t size, stack;
    uint64_t t_alloc, t_free; /* absolute; t_free UINT64_MAX: live at the end */
    uint64_t a_idx : 40;
    uint64_t api : 16;        /* the allocating api (0 for GPU_MEMORY records) */
    uint64_t lib : 8;         /* ana_mev.lib */
    uint64_t f_idx : 40;      /* ANA_MEM_LIVE: live at the end */
    uint64_t cls : 8;         /* enum ana_mem_class */
    uint64_t vmm : 1;         /* cuMemCreate */
    uint64_t driver : 1;      /* seen only in a GPU_MEMORY record */
} ana_mem_life;

typedef struct ana_mem_failure {
    ana_mev ev;           /* the failed ALLOC */
    size_t idx;           /* its index in the sorted events */
    int has_meminfo;      /* a MEMINFO with reason 1 of the same thread followed it */
    uint64_t free_bytes, total_bytes;
    int64_t meminfo_device;
    uint64_t live_bytes;      /* device bytes live (as traced) when it failed */
    uint64_t host_live_bytes; /* pinned host bytes live when it failed */
} ana_mem_failure;

#define ANA_MEM_MAX_FAILURES 1000

typedef struct ana_mem_result {
    uint64_t peak_bytes, peak_time_ns; /* device; peak_time_ns absolute, 0 if no peak */
    uint64_t peak_count;               /* allocations live at the peak */
    uint64_t live_end_bytes, live_end_count;
    uint64_t host_peak_bytes, host_peak_time_ns;
    uint64_t host_live_end_bytes, host_live_end_count;
    uint64_t unknown_frees;   /* successful frees of pointers not live in the trace */
    uint64_t reused_ptrs;     /* successful allocations of a pointer already live */
    uint64_t vmm_peak_bytes;  /* cuMemCreate bytes live at the device peak */
    uint64_t vmm_late_releases; /* handles released while mapped, freed at their unmap */
    uint64_t gpu_mem_duplicates; /* GPU_MEMORY events ignored: corr of a traced call */
    uint64_t gpu_mem_replayed;   /* GPU_MEMORY events replayed (driver only) */
    uint64_t gpu_mem_ignored;    /* replayed ones that changed nothing (see the rules) */
    ana_mem_group *leaks;     /* device allocations live at the end, by bytes desc */
    size_t n_leaks;
    ana_mem_group *peak_sites; /* device allocations live at the peak, by bytes desc */
    size_t n_peak_sites;
    ana_mem_failure *failures; /* in time order: the first ANA_MEM_MAX_FAILURES - 1 and the last */
    size_t n_failures;
    uint64_t failures_total;
    uint64_t peak_by_lib[ANA_MEM_LIBS]; /* device bytes live at the peak, by library */
    uint64_t end_by_lib[ANA_MEM_LIBS];  /* device bytes live at the end, by library */
    ana_mem_life *lives;      /* every charged allocation, in the order it was made */
    size_t n_lives;
    size_t peak_idx;          /* index of the event after which the device peak was reached */
} ana_mem_result;

/* Replays ev[0..n) (sorted) into res (which it initializes). */
void ana_mem_replay(const ana_mev *ev, size_t n, ana_mem_result *res);
/* The same over the events of a spill (a trace's t->mev: read in order, three times at
 * most), and fills the peak_* fields of ranges[0..n_ranges) (device allocations at an
 * address; cuMemCreate handles are not addresses and count in none). */
void ana_mem_replay_ranges(const ana_spill *ev, ana_mem_range *ranges, size_t n_ranges,
                           ana_mem_result *res);
void ana_mem_result_free(ana_mem_result *res);

#endif
