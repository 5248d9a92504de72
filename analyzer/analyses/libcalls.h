/* libcalls.h — what the library calls of a trace did on the GPU: GEMM shapes with achieved
 * and peak TFLOP/s, tensor-core alignment and math-mode findings, NCCL collectives with
 * algorithm/bus bandwidth, communicators.
 *
 * Linking (docs/trace-format.md, "Library calls"): a library call's kernels are the
 * GPU_KERNEL records whose corr is that of a LAUNCH carrying the call's id. The NCCL
 * operations of a group (COLL.group > 0) run at the outermost ncclGroupEnd of their
 * thread that follows them; that call's kernel time is split among the group's
 * operations in proportion to their bytes (all equal when every operation has 0 bytes),
 * rounded down (docs/report-schema.md, `collectives`).
 *
 * Pure computation over a loaded trace (which must outlive the result). Not thread-safe. */
#ifndef ANA_LIBCALLS_H
#define ANA_LIBCALLS_H

#include <stddef.h>
#include <stdint.h>

#include "model/idmap.h"
#include "model/libs.h"
#include "model/trace.h"

/* GPU work linked to one library call id. */
typedef struct ana_call_gpu {
    uint64_t gpu_ns, kernels;
    uint64_t first_kernel; /* KERNEL id of its earliest kernel (0 = none) */
    int32_t device;        /* device of that kernel */
} ana_call_gpu;

typedef struct ana_gemm_row {
    const ana_gemm_shape *s;
    uint64_t gpu_ns, kernels;
    uint64_t timed_calls, timed_flops; /* calls with linked kernels, and their flops */
    int64_t device;                    /* of the first linked kernel; else the first DEVICE; -1 */
    double peak_tflops;                /* < 0: unknown */
    uint8_t misaligned;                /* bit 0 m, 1 n, 2 k */
    uint8_t multiple;                  /* what the precision wants: 4, 8 or 16; 0 = none */
} ana_gemm_row;

typedef struct ana_coll_row {
    uint16_t api; /* 172 for both Broadcast and Bcast */
    uint8_t dtype;
    uint64_t bytes, comm, comm_id; /* comm: the handle of the first call */
    int64_t ranks;                 /* -1 unknown */
    uint64_t count, grouped, gpu_ns;
    uint64_t kernel;  /* the kernel the algorithm and protocol were read from, 0 = none */
    char algorithm[24], protocol[8]; /* "" = unknown */
} ana_coll_row;

typedef struct ana_comm_row {
    const ana_nccl_comm *c;
    const ana_nccl_comm *parent; /* split: the parent's COMM, or NULL */
    uint64_t colls, gpu_ns;
} ana_comm_row;

typedef struct ana_libcalls {
    ana_gemm_row *gemms; /* by gpu_ns, then flops, descending */
    size_t n_gemms;
    uint64_t gemm_calls, gemm_gpu_ns, gemm_kernels, gemm_flops, gemm_timed_flops;
    uint64_t kernel_ns;  /* all GPU_KERNEL time, for the share */
    /* findings */
    uint64_t fp32_calls, fp32_gpu_ns, fp32_shapes;
    double fp32_peak, tf32_peak; /* of the device of the first such shape; < 0 unknown */
    uint64_t misaligned_calls, misaligned_gpu_ns, misaligned_shapes;
    ana_coll_row *colls; /* by gpu_ns descending, then bytes */
    size_t n_colls;
    uint64_t coll_calls, coll_gpu_ns, coll_ungrouped_ns, coll_unlinked;
    ana_comm_row *comms;
    size_t n_comms;
} ana_libcalls;

void ana_libcalls_analyze(const ana_trace *t, ana_libcalls *out);
void ana_libcalls_free(ana_libcalls *lc);

/* GPU time per library call id: fills map call -> index into *out (n entries); only the
 * calls in want when it is not NULL. */
ana_call_gpu *ana_libcalls_link(const ana_trace *t, const ana_u64map *want, ana_u64map *map,
                                size_t *n);

/* Library call id -> index of its GEMM call (in file order; ids 0 left out; an id of two
 * GEMM records keeps the first): every GEMM call id is in x (free it); and, when shape is
 * not NULL, each GEMM call's shape by its index into *shape (l->n_gemms; free it).
 * Returns 0 when two GEMM records share an id (or too many for x's values), 1 when each
 * index is its id's only record. */
int ana_libcalls_gemm_ids(const ana_libs *l, ana_idmap *x, uint32_t **shape);

/* The first API call each library call made: fills map (initialized here) with
 * call -> index into t->calls (in time order). A library record has no time of its own;
 * this is where the exports place it. */
void ana_libcalls_first_calls(const ana_trace *t, ana_u64map *map);

/* Reference figures (libpeaks.c). Dense peak TFLOP/s of a compute capability for a precision; < 0 when not known. */
double ana_peak_tflops(uint64_t cc_major, uint64_t cc_minor, int prec);
/* Reads "RING"/"LL" from an NCCL kernel name (ncclDevKernel_AllReduce_Sum_f32_RING_LL,
 * ncclKernel_AllReduce_RING_LL_Sum_float, mangled or not); the operation it names goes to
 * op ("" when none). Returns 1 when an algorithm or a protocol was found. */
int ana_nccl_kernel_algo(const char *name, char *op, size_t op_cap, char *algo,
                         size_t algo_cap, char *proto, size_t proto_cap);
/* algbw and busbw (GB/s) as nccl-tests defines them; < 0 when not known. */
double ana_nccl_algbw(uint16_t api, uint64_t bytes, int64_t ranks, uint64_t count,
                      uint64_t gpu_ns);
double ana_nccl_busbw_factor(uint16_t api, int64_t ranks);

#endif
