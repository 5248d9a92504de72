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

/* The steps' rows (ana_anatomy.rows). While the anatomy adds to them they are full rows
 * in blocks of ANA_ROWS_BLOCK (ana_anat_rows_mut); once complete, each block is packed
 * and freed in turn (ana_anat_rows_pack): every field a LEB128 varint (gpu_first_ns as
 * its distance from the step's start, zigzag-coded; gpu_last_ns from gpu_first_ns; the
 * times not written for a step without GPU work), about 50 bytes a step instead of 120,
 * with the byte offset of every ANA_ROWS_EVERY-th row. Read through a cursor. */
#define ANA_ROWS_BLOCK 65536
#define ANA_ROWS_EVERY 64
typedef struct ana_anat_rows {
    ana_anat_step **blk; /* while built; NULL once packed */
    uint8_t *bytes;
    size_t n_bytes, cap_bytes;
    uint64_t *at;        /* byte offset of row k * ANA_ROWS_EVERY */
    size_t n;
} ana_anat_rows;

void ana_anat_rows_init(ana_anat_rows *r, size_t n);
static inline ana_anat_step *ana_anat_rows_mut(ana_anat_rows *r, size_t i)
{
    return &r->blk[i / ANA_ROWS_BLOCK][i % ANA_ROWS_BLOCK];
}
void ana_anat_rows_pack(ana_anat_rows *r, const ana_steps *s);
void ana_anat_rows_free(ana_anat_rows *r);

/* A reader of packed rows: steps read in order cost one row's decoding each. */
typedef struct ana_anat_rowcur {
    const ana_anat_rows *r;
    const ana_steps *s;
    size_t next, off; /* the row at byte off is row next */
    ana_anat_step row;
} ana_anat_rowcur;
void ana_anat_rowcur_init(ana_anat_rowcur *c, const ana_anat_rows *r, const ana_steps *s);
/* Row i (< r->n), valid until the next call. */
const ana_anat_step *ana_anat_row(ana_anat_rowcur *c, size_t i);

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
    ana_anat_rows rows;       /* one per steps.steps (ana_anat_rowcur reads them) */
    uint64_t outside_ns;      /* activity time not assigned to any step */
    /* contractions */
    uint64_t gemm_flops, gemm_timed_ns; /* FLOPs of GEMM calls with linked kernels, their time */
    double achieved_tflops;             /* gemm_flops / gemm_timed_ns; < 0 none */
    double peak_tflops;                 /* of the device, for the GEMMs' main precision; < 0 */
    int peak_prec;                      /* enum ana_prec of that precision; -1 none */
    double mfu;                         /* GEMM FLOPs / (wall time x peak); < 0 unknown */
    uint64_t mfu_wall_ns;               /* the wall time used: steps' total, else GPU span */
} ana_anatomy;

/* The anatomy in two calls: the steps, which need the trace alone (so that the memory
 * anatomy, which needs them too, need not wait for the rest); then the rest, into the
 * ana_anatomy that ana_anatomy_steps filled. */
void ana_anatomy_steps(const ana_trace *t, ana_anatomy *out);
void ana_anatomy_classify(const ana_trace *t, const ana_gpu_result *g, const ana_libcalls *lc,
                          ana_anatomy *a);
void ana_anatomy_free(ana_anatomy *a);

#endif
