/* libs.h — the library and NVTX records of a trace (format 1.2: GEMM, COLL, COMM, LIBCALL,
 * RANGE, LABEL) as the analyzer keeps them, compactly: a trace may hold millions of GEMMs,
 * so GEMMs are folded into distinct shapes at load time and each call keeps only its call
 * id and shape index (16 bytes); collectives keep what the NCCL table needs; of LIBCALL
 * records only the outermost ncclGroupEnd calls are kept (the others change no number of
 * the report); range names are interned.
 *
 * Filled by trace_records.c through ana_libs_on_record (not in summary mode), completed by
 * ana_libs_finish (sorting), released by ana_libs_free. The GEMM calls, the collectives
 * and the ranges, one per record, wait in temporary files past a setting each (spill.h). The analyses are in libcalls.h
 * (GEMMs, NCCL) and nvtx.h (ranges). Strings are copied; the model owns them.
 * Not thread-safe. */
#ifndef ANA_LIBS_H
#define ANA_LIBS_H

#include <stddef.h>
#include <stdint.h>

#include "records.h"
#include "model/sorter.h"
#include "model/spill.h"
#include "model/u64map.h"

/* The precision a GEMM effectively computes in (libtables.c, ana_gemm_precision). */
enum ana_prec { ANA_PREC_FP64, ANA_PREC_FP32, ANA_PREC_TF32, ANA_PREC_FP16, ANA_PREC_BF16,
                ANA_PREC_FP8, ANA_PREC_OTHER, ANA_PREC_COUNT };

/* One distinct GEMM call shape: everything of the key, and the sums over its calls. */
typedef struct ana_gemm_shape {
    uint64_t m, n, k, batch;
    uint64_t count, flops; /* flops: 2·m·n·k·batch per call */
    uint16_t api, compute_type;
    uint8_t trans_a, trans_b, a_type, b_type, c_type; /* clamped to 255 */
    uint8_t prec;                                     /* enum ana_prec */
} ana_gemm_shape;

/* Floating-point operations of one call of shape s: 2·m·n·k·batch. */
static inline uint64_t ana_gemm_call_flops(const ana_gemm_shape *s)
{
    return 2 * s->m * s->n * s->k * s->batch;
}

typedef struct ana_gemm_call {
    uint64_t call;
    uint32_t shape; /* index into ana_libs.shapes */
} ana_gemm_call;

typedef struct ana_coll_call {
    uint64_t time_ns, tid, call, comm, bytes;
    uint64_t seq, dur_ns; /* per-communicator sequence number; host time in the call */
    uint32_t group; /* ncclGroupStart depth at the call (clamped) */
    uint16_t api;
    uint8_t dtype; /* ncclDataType_t, clamped to 255 */
    uint8_t pad;
} ana_coll_call;

/* A communicator made by ncclCommInitRank/InitRankConfig/InitAll/Split (COMM records). */
typedef struct ana_nccl_comm {
    uint64_t handle, comm_id, parent; /* parent: the split's parent handle */
    int64_t rank, size, device, color, key;
    uint16_t api;
} ana_nccl_comm;

/* An outermost ncclGroupEnd (LIBCALL api 179 with arg 0). */
typedef struct ana_group_end {
    uint64_t time_ns, tid, call;
} ana_group_end;

/* One RANGE record: 40 bytes. */
typedef struct ana_range_ev {
    uint64_t time_ns, tid, id; /* id: start/end */
    uint32_t name;             /* interned; 0 = empty */
    uint32_t seq;              /* file order, breaks ties in time */
    uint16_t domain;           /* index into ana_libs.domains; 0 = the default domain */
    uint8_t op;                /* enum ana_range_op */
} ana_range_ev;

typedef struct ana_mem_region {
    uint64_t address, size;
    uint32_t name; /* interned */
} ana_mem_region;

#define ANA_LIBS_MAX_DOMAINS 65535
#define ANA_LIBS_MAX_REGIONS 4096

typedef struct ana_libs {
    /* interned strings: strs[0] is "" */
    char **strs;
    size_t n_strs, cap_strs;
    ana_u64map str_idx; /* FNV-1a hash (+ probe) -> index */
    ana_gemm_shape *shapes;
    size_t n_shapes, cap_shapes;
    ana_u64map shape_idx; /* hash of the key (+ probe) -> index */
    /* The GEMM calls in file order (ana_libs_gemms_begin): in memory while a trace has at
     * most ANATOMIST_SPILL_GEMMS of them (4 Mi), else in a temporary file. */
    ana_spill gemms;
    size_t n_gemms;
    /* The NCCL collective calls in file order (read with an ana_spill_iter): in memory
     * while a trace has at most ANATOMIST_SPILL_COLLS of them (1 Mi), else in a temporary
     * file. */
    ana_spill colls;
    size_t n_colls;
    ana_nccl_comm *comms;
    size_t n_comms, cap_comms;
    ana_group_end *group_ends;
    size_t n_group_ends, cap_group_ends;
    uint64_t libcalls; /* LIBCALL records of any api */
    /* The RANGE records in time order once finished (ana_libs_ranges_begin): in memory
     * while a trace has at most ANATOMIST_SPILL_RANGES of them (1 Mi), else in a
     * temporary file. */
    ana_spill ranges;
    ana_sorter range_sort; /* while they are added */
    size_t n_ranges;
    uint64_t *domains; /* NVTX domain handles; [0] = 0, the default domain */
    uint32_t *domain_names; /* interned LABEL what=6 name of each, 0 = none */
    size_t n_domains, cap_domains;
    ana_mem_region *regions;
    size_t n_regions, cap_regions;
} ana_libs;

void ana_libs_init(ana_libs *l);
void ana_libs_free(ana_libs *l);
/* Keeps a GEMM, COLL, COMM, LIBCALL, RANGE or LABEL record; ignores other kinds. */
void ana_libs_on_record(ana_libs *l, const ana_record *r);
/* Sorts what needs an order (ranges by time, then file order). */
void ana_libs_finish(ana_libs *l);

/* The GEMM calls, the collectives and the ranges are read in order with an
 * ana_spill_iter (spill.h):
 *   ana_spill_iter it;
 *   ana_spill_iter_begin(&it, &l->gemms, 0);   (or &l->colls, &l->ranges)
 *   for (const ana_gemm_call *g; (g = ana_spill_iter_next(&it));) ...
 *   ana_spill_iter_end(&it);
 * it.idx - 1 is the index of the item last read. */

/* An interned string ("" for 0 or an index out of range). */
const char *ana_libs_str(const ana_libs *l, uint32_t idx);
/* Name of a domain index: its LABEL name; NULL for the default domain or one never named. */
const char *ana_libs_domain_name(const ana_libs *l, uint16_t domain);
/* The communicator made under handle (the latest COMM record for it), or NULL. */
const ana_nccl_comm *ana_libs_comm_by_handle(const ana_libs *l, uint64_t handle);

/* What the records' numbers mean (libtables.c). */
/* Effective precision of a GEMM (enum ana_prec): A's type for 16-bit, fp8 and fp64
 * inputs; fp32 inputs: TF32 with compute type 77 (32F_FAST_TF32) or math mode
 * CUBLAS_TF32_TENSOR_OP_MATH (3, in the low 4 bits), fp16/bf16 with 74/75, else fp32. */
int ana_gemm_precision(uint64_t a_type, uint64_t compute_type, uint64_t math_mode);
const char *ana_prec_name(int prec); /* "fp32", "tf32", ... */
/* Names: cudaDataType_t ("fp32", "bf16", ...), cublasComputeType_t ("32F_FAST_TF32"),
 * ncclDataType_t ("fp32"), NCCL operation of a COLL api ("AllReduce"); NULL if unknown. */
const char *ana_cuda_type_name(uint64_t t);
const char *ana_compute_type_name(uint64_t t);
const char *ana_nccl_type_name(uint64_t t);
const char *ana_nccl_op_name(uint64_t api);

#endif
