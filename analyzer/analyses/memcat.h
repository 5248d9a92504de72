/* memcat.h — the memory anatomy: every device allocation gets one category (weights,
 * optimizer states, gradients, activations, temporary, functionality, or unattributed),
 * with the rule that decided it, so the bytes live at the peak, at any moment and at a
 * failed allocation can be split by category; and the bytes per parameter they imply.
 *
 * Evidence, in the order the rules use it (docs/memory-anatomy.md has the table):
 *   1. the library the allocation was made in (cuBLAS, NCCL, ...), or the driver alone, or
 *      its use as a library workspace → functionality;
 *   2. the NVTX memory region that names it (a name that says weights, grad, optimizer...);
 *   3. a PyTorch caching-allocator segment (its stack passes through libc10_cuda) holds
 *      tensors of every kind → unattributed;
 *   4. its life relative to the steps and phases (steps.h), and the phases of the calls
 *      that touched it: kernel parameters and GEMM operands (format 1.3), copies, sets,
 *      collectives (trace.h ana_ptr_use). A memset is not a use (zeroing gradients at the
 *      start of a step does not make them forward data); a host-to-device copy before the
 *      first step means the contents were loaded.
 * What the evidence cannot decide stays `unattributed`, with the reason.
 *
 * Pure computation over a loaded trace, its memory replay (memory.h, with lives) and its
 * steps; all must outlive the result. Not thread-safe. */
#ifndef ANA_MEMCAT_H
#define ANA_MEMCAT_H

#include <stddef.h>
#include <stdint.h>

#include "analyses/memory.h"
#include "analyses/steps.h"
#include "model/trace.h"

enum ana_mcat {
    ANA_MCAT_WEIGHTS = 0,
    ANA_MCAT_OPTIMIZER = 1,
    ANA_MCAT_GRADIENTS = 2,
    ANA_MCAT_ACTIVATIONS = 3,
    ANA_MCAT_TEMPORARY = 4,
    ANA_MCAT_FUNCTIONALITY = 5,
    ANA_MCAT_UNATTRIBUTED = 6,
    ANA_MCAT_COUNT = 7
};

/* Flags of an allocation's evidence (ana_mc_alloc.flags). */
enum {
    ANA_MCF_LOADED = 1,      /* a host-to-device copy wrote it before the first step (or
                              * in a run without steps) */
    ANA_MCF_STEP_INPUT = 2,  /* a host-to-device copy wrote it inside a step */
    ANA_MCF_SEGMENT = 4,     /* made by a caching allocator (PyTorch's) */
    ANA_MCF_WORKSPACE = 8,   /* handed to a library as its workspace */
    ANA_MCF_TOUCHED = 16,    /* at least one call used it (any phase, any time) */
    ANA_MCF_READ_EARLY = 32, /* a GEMM or a copy read it before the first step */
};

/* What the structure of the steps' uses says of an allocation (ana_mc_alloc.sflags;
 * memcat_struct.c): the GEMM bits always, the others only where the structure was
 * believed (ana_memcat.structure). */
enum {
    ANA_MCS_WEIGHT = 1,   /* kept across steps, read by GEMMs, never written by one, updated */
    ANA_MCS_GRADIENT = 2, /* written by a GEMM and read by the update */
    ANA_MCS_UPDATED = 4,  /* touched by the update (after a step's last GEMM) */
    ANA_MCS_GEMM_OUT = 8, /* written by a GEMM in a step */
    ANA_MCS_GEMM_IN = 16, /* read by a GEMM in a step */
};

/* One device allocation (a life of the replay with cls ANA_MEM_DEVICE): 24 bytes, one
 * for each of the run's allocations. */
typedef struct ana_mc_alloc {
    uint64_t uses : 40;            /* uses that fell in it (a trace of 2^40 uses would hold
                                    * 8 TiB of them first) */
    uint64_t phase_alloc : 2, phase_free : 2; /* enum ana_phase (undecided outside steps) */
    uint64_t use_phases : 4;       /* bit (1 << enum ana_phase): used in a step in that phase */
    uint64_t flags : 8;            /* ANA_MCF_* */
    uint64_t sflags : 8;           /* ANA_MCS_* */
    uint32_t life;             /* index into ana_mem_result.lives (a trace of 2^32
                                * allocations would hold 224 GiB of lives first) */
    int32_t step_alloc, step_free; /* -1 before the first step, -2 between two steps;
                                    * n_steps after the last or never freed */
    uint8_t elem;              /* bytes per element its forward uses imply (2, 4, 8), 0 unknown */
    uint8_t cat;               /* enum ana_mcat */
    uint8_t why;               /* rule that decided (ana_memcat_why) */
} ana_mc_alloc;

typedef struct ana_memcat {
    ana_mc_alloc *allocs;      /* device allocations, in the order they were made */
    size_t n_allocs;
    int evidence;              /* 1: the trace has pointer uses of kernels/GEMMs (1.3) */
    int structure;             /* 1: the steps' GEMMs and update were found by structure
                                * (memcat_struct.c); sflags are set */
    uint64_t peak_bytes;       /* = ana_mem_result.peak_bytes */
    uint64_t at_peak[ANA_MCAT_COUNT];
    uint64_t count_at_peak[ANA_MCAT_COUNT];
    uint64_t *step_peak;       /* per step: the most device bytes live during it */
    uint64_t *step_peak_ns;    /* per step: when (absolute; 0 when nothing happened in it) */
    uint64_t segments_at_peak, segment_bytes_at_peak; /* caching-allocator segments */
    /* bytes per parameter at the peak (params 0: unknown) */
    double params;
    double bpp[ANA_MCAT_COUNT];
    const char *weights_kind, *optimizer_kind, *gradients_kind; /* prose, NULL unknown */
    /* the sources of the count (0: none): the weights and their element size, the weight
     * operands GEMMs read, the gradients (at 4 B each, or 2 where that matches) */
    double params_weights, params_gemm, params_grads;
    char params_why[240]; /* why params or the kinds are not given; "" when they are */
    int params_trained;   /* the gradients agree: the optimizer's and gradients' bytes per
                           * parameter are interpreted */
    uint64_t uses_mapped, uses_unmapped; /* pointer uses that fell in / outside allocations */
} ana_memcat;

void ana_memcat_build(const ana_trace *t, const ana_mem_result *mem, const ana_steps *s,
                      ana_memcat *out);
void ana_memcat_free(ana_memcat *m);

/* Device bytes live just after sorted event `idx` (t->mev), by category; returns the total.
 * count (may be NULL) receives allocation counts. */
uint64_t ana_memcat_at_event(const ana_memcat *m, const ana_mem_result *mem, size_t idx,
                             uint64_t out[ANA_MCAT_COUNT], uint64_t count[ANA_MCAT_COUNT]);
/* The same at an absolute time: after every event at or before time_ns. */
uint64_t ana_memcat_at_time(const ana_memcat *m, const ana_mem_result *mem, const ana_trace *t,
                            uint64_t time_ns, uint64_t out[ANA_MCAT_COUNT]);
/* Device bytes live while the failed allocation f was asked for, by category. */
uint64_t ana_memcat_at_failure(const ana_memcat *m, const ana_mem_result *mem,
                               const ana_mem_failure *f, uint64_t out[ANA_MCAT_COUNT]);
/* The allocation of life `life` (an index into ana_mem_result.lives), or NULL when that
 * life is not a device allocation (pinned host memory). */
const ana_mc_alloc *ana_memcat_of_life(const ana_memcat *m, size_t life);
/* The interned name (t->libs) of the latest NVTX memory region that holds the first byte
 * of life l, 0 none. */
uint32_t ana_memcat_region(const ana_trace *t, const ana_mem_life *l);
/* 1 when allocation a (an index into m->allocs) was live just after event idx. */
int ana_memcat_live_at(const ana_memcat *m, const ana_mem_result *mem, size_t a, size_t idx);

const char *ana_mcat_name(int cat);     /* "weights", ..., "unattributed" */
const char *ana_memcat_why(int why);    /* the rule, in words */
/* The category a memory-region name states ("model.weights" → weights), or -1. */
int ana_mcat_of_name(const char *name);

/* The memory timeline (memtimeline.c): device bytes live by category after each event
 * that changed them, in event order (several points may share a time: a chart draws the
 * last, a peak reader takes the highest). max_points 0: every such point. Otherwise the trace's time is
 * cut into max_points equal buckets and each keeps the point with its highest total, so
 * the peak (ana_mem_result.peak_bytes) is always a point and no point invents a value;
 * the last point is always the state at the end (so max_points + 1 at most).
 * Returns the number of points (*out malloc'd, NULL when 0). */
typedef struct ana_mem_point {
    uint64_t time_ns; /* absolute */
    uint64_t total;
    uint64_t by[ANA_MCAT_COUNT];
} ana_mem_point;
size_t ana_memcat_timeline(const ana_memcat *m, const ana_mem_result *mem, const ana_trace *t,
                           size_t max_points, ana_mem_point **out);

#endif
