/* oom.h — the out-of-memory post-mortem: the last device allocation that failed for want
 * of memory, what was live when it failed (by category and by call stack), the step and
 * phase it failed in, and what would have made it fit (docs/oom.md).
 *
 * The fatal failure is the last failed device allocation whose error is out of memory
 * (cudaErrorMemoryAllocation / CUDA_ERROR_OUT_OF_MEMORY, both 2) among the failures the
 * replay kept (memory.h); frameworks retry after emptying their cache, so earlier ones are
 * counted, not analysed. Its kind: exhaustion (the device reported less free memory than
 * the request), fragmentation (as much free as asked for, but no contiguous room), or
 * unknown (no MEMINFO after it).
 *
 * "What would fit" is pure arithmetic on the bytes live by category at the failure
 * (ana_oom_fits, unit-tested on hand-made figures); ana_oom_build gathers those figures
 * from the memory anatomy (memcat.h) and the steps (steps.h). Pure computation over a
 * loaded trace and its analyses, which must outlive the result. Not thread-safe. */
#ifndef ANA_OOM_H
#define ANA_OOM_H

#include <stddef.h>
#include <stdint.h>

#include "analyses/memcat.h"
#include "analyses/memory.h"
#include "analyses/steps.h"
#include "model/trace.h"

enum ana_oom_kind { ANA_OOM_UNKNOWN = 0, ANA_OOM_EXHAUSTION = 1, ANA_OOM_FRAGMENTATION = 2 };

/* Where the failure lies relative to the steps. */
enum ana_oom_where {
    ANA_OOM_NO_STEPS = 0,     /* the trace has no steps */
    ANA_OOM_BEFORE_FIRST = 1, /* before the first step began */
    ANA_OOM_IN_STEP = 2,      /* inside step `step` */
    ANA_OOM_BETWEEN = 3,      /* after step `step` ended, before the next began */
    ANA_OOM_AFTER_LAST = 4,   /* after the last step: in step `step` (= n_steps + 1), unfinished */
};

/* Techniques that save memory (the fits here, the advice in advice.h). */
enum ana_tech {
    ANA_TECH_CHECKPOINTING = 0,
    ANA_TECH_MICROBATCH,
    ANA_TECH_OPTIM_8BIT,
    ANA_TECH_OPTIM_FACTORED,
    ANA_TECH_SGD_MOMENTUM,
    ANA_TECH_MIXED_PRECISION,
    ANA_TECH_FP32,
    ANA_TECH_FREE_TEMPORARIES,
    ANA_TECH_EXPANDABLE,
    ANA_TECH_COUNT
};

/* One technique and what it would save at the failure. */
typedef struct ana_oom_fit {
    int tech;            /* enum ana_tech */
    int64_t bytes_saved; /* negative: it costs memory */
    int covers;          /* bytes_saved >= the bytes needed (ana_oom_need) */
    uint32_t factor;     /* checkpointing: k activation allocations; micro-batch: f; else 0 */
    char detail[224];    /* the formula with its numbers */
} ana_oom_fit;

#define ANA_OOM_MAX_FITS 8

/* What the fits are computed from. */
typedef struct ana_oom_figures {
    uint64_t live[ANA_MCAT_COUNT]; /* bytes live by category */
    uint64_t act_allocs;           /* activation allocations live */
    double params;                 /* parameter count, 0 = unknown */
    int weights_16bit;             /* 1: the weights are (also) held in 16 bits */
    int kind;                      /* enum ana_oom_kind */
    uint64_t request;              /* bytes asked for */
    uint64_t need;                 /* bytes a technique must save to cover (ana_oom_need) */
    int setup_batch;               /* 1: the request was made before any step ran and is not
                                    * the size of a weight: a buffer sized for the batch, it
                                    * may be (a micro-batch fit scales the request itself) */
} ana_oom_figures;

/* Allocations live at the failure that share one call stack. */
typedef struct ana_oom_site {
    uint64_t stack, bytes, count;
    int cat; /* the category holding most of its bytes */
} ana_oom_site;

typedef struct ana_oom {
    int present;                   /* 0: no out-of-memory failure (the rest is zero) */
    const ana_mem_failure *f;      /* the fatal failure (in mem->failures) */
    uint64_t failures;             /* out-of-memory failures of device allocations kept */
    uint64_t other_failures;       /* failed device allocations with other errors */
    int failures_cut;              /* the replay kept only the first ANA_MEM_MAX_FAILURES */
    int kind;                      /* enum ana_oom_kind */
    uint64_t shortfall;            /* exhaustion: request - free; else 0 */
    uint64_t need;                 /* bytes a technique must save (ana_oom_need) */
    uint64_t live[ANA_MCAT_COUNT], live_count[ANA_MCAT_COUNT];
    uint64_t live_bytes;           /* sum of live[] */
    ana_oom_site *sites;           /* by bytes, largest first */
    size_t n_sites;
    int where;                     /* enum ana_oom_where */
    int32_t step;                  /* 1-based, see ana_oom_where; 0 when none */
    int phase;                     /* enum ana_phase; undecided when not known */
    size_t steps_before;           /* steps that ended before it: m->step_peak[0..steps_before) */
    ana_oom_fit fits[ANA_OOM_MAX_FITS]; /* by bytes saved, most first */
    size_t n_fits;
} ana_oom;

void ana_oom_build(const ana_trace *t, const ana_mem_result *mem, const ana_steps *s,
                   const ana_memcat *m, ana_oom *out);
void ana_oom_free(ana_oom *o);

/* The kind of a failure from its MEMINFO (has_meminfo 0: unknown). */
int ana_oom_kind_of(int has_meminfo, uint64_t free_bytes, uint64_t request);
/* Bytes a technique must save for the request to fit: exhaustion, the shortfall; otherwise
 * the request itself (fragmentation: room for a block that size; unknown: the free memory
 * is not known, and the shortfall is at most the request). */
uint64_t ana_oom_need(int kind, uint64_t request, uint64_t free_bytes);
/* The applicable techniques, by bytes saved (most first); returns how many (<= ANA_OOM_MAX_FITS). */
size_t ana_oom_fits(const ana_oom_figures *g, ana_oom_fit out[ANA_OOM_MAX_FITS]);
/* 1 when a weights allocation live just after event idx holds 16-bit elements. */
int ana_oom_weights_16bit(const ana_memcat *m, const ana_mem_result *mem, size_t idx);

const char *ana_oom_kind_name(int kind); /* "exhaustion", "fragmentation", "unknown" */
const char *ana_tech_key(int tech);      /* "gradient_checkpointing", ... (JSON) */
const char *ana_tech_name(int tech);     /* "gradient checkpointing", ... (prose) */
/* Where it failed, in words: "in step 3", "in the step after step 5, which did not
 * finish", "before the first step", ... */
void ana_oom_where_text(const ana_oom *o, char *buf, size_t cap);

#endif
