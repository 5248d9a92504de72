/* anatomy.h — the time anatomy: where the GPU's time went, by class (classify.h), per
 * step and phase (steps.h), with the contractions' achieved TFLOP/s and model-FLOPs
 * utilisation.
 *
 * Every GPU activity gets one class: memcpy/memset records are `memory`; a kernel is
 * classified from its API context (the library call its launch was made in: a GEMM
 * record's call → gemm; a COLL or ncclGroupEnd call, or a launch from libnccl → comm; an
 * imported trace's op context, t->call_ctx; another library → library) and its name.
 * Class time is the sum of the activities' durations, so with overlapping streams the
 * classes can add up to more than the busy time (the union); `overlap_ns` says by how
 * much (docs/report-schema.md, `time`).
 *
 * Pure computation over a loaded trace and the GPU and library analyses built from it
 * (all must outlive the result). Not thread-safe. */
#ifndef ANA_ANATOMY_H
#define ANA_ANATOMY_H

#include <stddef.h>
#include <stdint.h>

#include "analyses/classify.h"
#include "analyses/gpu.h"
#include "analyses/libcalls.h"
#include "analyses/steps.h"
#include "model/trace.h"

typedef struct ana_class_time {
    uint64_t ns[ANA_CLASS_COUNT];    /* sum of durations */
    uint64_t count[ANA_CLASS_COUNT]; /* activities */
} ana_class_time;

typedef struct ana_anat_step {
    uint64_t class_ns[ANA_CLASS_COUNT]; /* kernel + copy time by class (a step's activities
                                         * by class are not kept: only the run's, total) */
    uint64_t phase_ns[ANA_PHASE_COUNT]; /* kernel + copy time by phase */
    uint64_t gpu_first_ns, gpu_last_ns;  /* absolute: first start, last end of its work */
    uint64_t acts;                       /* activities (0: no GPU work, the times are 0) */
    uint64_t busy_ns;                    /* union of its activities' intervals */
    uint64_t flops;                      /* GEMM FLOPs of calls launched in the step */
} ana_anat_step;

/* A kernel name's classification (parallel to ana_gpu_result.knames). */
typedef struct ana_anat_kname {
    uint8_t cls, ctx, hints;
    uint16_t rule;
} ana_anat_kname;

typedef struct ana_anatomy {
    ana_class_time total;
    uint64_t busy_ns, idle_ns, span_ns, overlap_ns; /* overlap: sum of classes - busy */
    ana_anat_kname *knames; /* one per gpu.knames entry: the class of most of its time */
    uint8_t *kernel_cls;    /* per t->kernels index: its kname's class, else its name's */
    uint64_t unnamed_ns;    /* kernels the trace never named */
    /* phases over all steps */
    uint64_t phase_ns[ANA_PHASE_COUNT];
    ana_class_time phase_class[ANA_PHASE_COUNT];
    double bwd_fwd_ratio; /* backward / forward kernel time; < 0 when either is unknown */
    /* steps */
    ana_steps steps;
    ana_anat_step *step_rows; /* one per steps.steps */
    uint64_t outside_ns;      /* activity time not assigned to any step */
    /* contractions */
    uint64_t gemm_flops, gemm_timed_ns; /* FLOPs of GEMM calls with linked kernels, their time */
    double achieved_tflops;             /* gemm_flops / gemm_timed_ns; < 0 none */
    double peak_tflops;                 /* of the device, for the GEMMs' main precision; < 0 */
    int peak_prec;                      /* enum ana_prec of that precision; -1 none */
    double mfu;                         /* GEMM FLOPs / (wall time x peak); < 0 unknown */
    uint64_t mfu_wall_ns;               /* the wall time used: steps' total, else GPU span */
} ana_anatomy;

void ana_anatomy_build(const ana_trace *t, const ana_gpu_result *g, const ana_libcalls *lc,
                       ana_anatomy *out);
void ana_anatomy_free(ana_anatomy *a);

#endif
