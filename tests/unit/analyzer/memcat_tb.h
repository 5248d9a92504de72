/* memcat_tb.h — a trace builder for the unit tests of the memory anatomy (analyzer/analyses/memcat.h,
 * test_memcat.c, test_memcat_evidence.c), on top of steps_tb.h (whose clock, calls and
 * NVTX ranges it shares).
 *
 * mb_* write ALLOC/FREE (cudaMalloc/cudaFree), LAUNCH with pointer words (format 1.3),
 * MEMCPY host-to-device, MEMSET, GEMM (+ the library launch that follows it), LIBCALL
 * cublasSetWorkspace, GPU_MEMORY and LABEL memory-region records with known times and
 * sizes, so a test computes its expected categories and byte sums from what it wrote
 * (docs/memory-anatomy.md), not from the code. Every successful device allocation gets the
 * number mb_alloc returns: its index in ana_memcat.allocs (the order they were made).
 * mb_analyze finishes the trace and runs the steps, the replay and the anatomy; mb_done
 * frees everything; expect_* compare categories, sums and bytes per parameter. Static
 * inline: include it in test files only, after criterion.h. */
#ifndef ANA_TESTS_MEMCAT_TB_H
#define ANA_TESTS_MEMCAT_TB_H

#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "analyses/memcat.h"
#include "analyses/memory.h"
#include "analyses/steps.h"
#include "steps_tb.h"
#include "model/trace.h"

#define HOST_BUF 0x7f0000001000ull /* a host address: copies' source */

typedef struct mb {
    tb b;
    size_t n_allocs; /* successful device allocations written */
    uint64_t call;   /* library call ids */
} mb;

typedef struct mc_run {
    ana_steps s;
    ana_mem_result mem;
    ana_memcat m;
} mc_run;

static inline void mb_init(mb *m)
{
    memset(m, 0, sizeof(*m));
    tb_init(&m->b);
}

static inline void mb_add(mb *m, ana_record *r)
{
    m->b.now += 100;
    r->tid = TID;
    r->time_ns = m->b.now;
    ana_trace_add(m->b.t, r);
}

static inline size_t mb_call_done(mb *m)
{
    m->b.call_time[m->b.n_calls] = m->b.now;
    return m->b.n_calls++;
}

/* cudaMalloc of size bytes at ptr, made inside library lib (0: the program's own).
 * Returns the allocation's index in ana_memcat.allocs. */
static inline size_t mb_alloc_lib(mb *m, uint64_t ptr, uint64_t size, uint64_t lib)
{
    ana_record r = { .kind = ANA_K_ALLOC };
    r.u.alloc = (ana_rec_alloc){ .api = ANA_API_MALLOC, .ret = 0, .ptr = ptr, .size = size,
                                 .lib = lib };
    mb_add(m, &r);
    return m->n_allocs++;
}

static inline size_t mb_alloc(mb *m, uint64_t ptr, uint64_t size)
{
    return mb_alloc_lib(m, ptr, size, 0);
}

/* A cudaMalloc that fails with cudaErrorMemoryAllocation (2). */
static inline void mb_alloc_fail(mb *m, uint64_t size)
{
    ana_record r = { .kind = ANA_K_ALLOC };
    r.u.alloc = (ana_rec_alloc){ .api = ANA_API_MALLOC, .ret = 2, .ptr = 0, .size = size };
    mb_add(m, &r);
}

static inline void mb_free(mb *m, uint64_t ptr)
{
    ana_record r = { .kind = ANA_K_FREE };
    r.u.free = (ana_rec_free){ .api = ANA_API_FREE, .ret = 0, .ptr = ptr };
    mb_add(m, &r);
}

/* An allocation only the driver saw (GPU_MEMORY, device memory, no traced call). */
static inline size_t mb_driver_alloc(mb *m, uint64_t ptr, uint64_t size)
{
    ana_record r = { .kind = ANA_K_GPU_MEMORY };
    r.u.gpu_memory = (ana_rec_gpu_memory){ .op = 1, .mem_kind = ANA_MEMKIND_DEVICE,
                                           .address = ptr, .bytes = size };
    mb_add(m, &r);
    return m->n_allocs++;
}

/* A launch of kernel whose parameter words ptrs[0..n) look like device pointers (at byte
 * 8·i of the parameter buffer); lib: the library call it was made in (0 none). */
static inline size_t mb_launch_lib(mb *m, uint64_t kernel, const uint64_t *ptrs, uint32_t n,
                                   uint64_t lib, uint64_t call)
{
    uint64_t at[16];
    cr_assert_leq(n, 16);
    for (uint32_t i = 0; i < n; i++)
        at[i] = 8 * i;
    ana_record r = { .kind = ANA_K_LAUNCH };
    r.u.launch = (ana_rec_launch){ .api = 20, .kernel = kernel, .grid_x = 1, .grid_y = 1,
                                   .grid_z = 1, .block_x = 32, .block_y = 1, .block_z = 1,
                                   .corr = ++m->b.corr, .lib = lib, .call = call,
                                   .ptrs = { ptrs, n }, .ptr_at = { at, n } };
    mb_add(m, &r);
    return mb_call_done(m);
}

static inline size_t mb_launch(mb *m, uint64_t kernel, const uint64_t *ptrs, uint32_t n)
{
    return mb_launch_lib(m, kernel, ptrs, n, 0, 0);
}

/* LAUNCH(m, kernel, p0, p1, ...): a launch with those pointer words; LAUNCH0: none. */
#define PTRS(...) ((const uint64_t[]){ __VA_ARGS__ })
#define LAUNCH(m, k, ...) \
    mb_launch((m), (k), PTRS(__VA_ARGS__), (uint32_t)(sizeof(PTRS(__VA_ARGS__)) / sizeof(uint64_t)))
#define LAUNCH0(m, k) mb_launch((m), (k), NULL, 0)

/* cudaMemcpyAsync host to device of bytes into dst (dst 0: a copy recorded without
 * pointers). */
static inline size_t mb_h2d(mb *m, uint64_t dst, uint64_t bytes)
{
    ana_record r = { .kind = ANA_K_MEMCPY };
    r.u.memcpy = (ana_rec_memcpy){ .api = 31, .ret = 0, .dst = dst, .src = dst ? HOST_BUF : 0,
                                   .bytes = bytes, .dir = 1, .corr = ++m->b.corr };
    mb_add(m, &r);
    return mb_call_done(m);
}

static inline size_t mb_memset(mb *m, uint64_t ptr, uint64_t bytes)
{
    ana_record r = { .kind = ANA_K_MEMSET };
    r.u.memset = (ana_rec_memset){ .api = 41, .ret = 0, .ptr = ptr, .value = 0, .bytes = bytes,
                                   .corr = ++m->b.corr };
    mb_add(m, &r);
    return mb_call_done(m);
}

/* A GEMM (cublasGemmEx, or cublasLtMatmul when lt) D = A·B (+C) with operands of type
 * dtype (cudaDataType_t) and workspace ws, then the kernel it launched (gemm_kernel, no
 * pointer words of its own), as the preload writes them: the GEMM record carries the
 * call's start, the launch comes after it. */
static inline size_t mb_gemm(mb *m, uint64_t gemm_kernel, int lt, uint64_t a, uint64_t bm,
                             uint64_t d, uint64_t dtype, uint64_t ws)
{
    uint64_t lib = lt ? ANA_LIB_CUBLASLT : ANA_LIB_CUBLAS, call = ++m->call;
    ana_record r = { .kind = ANA_K_GEMM };
    r.u.gemm = (ana_rec_gemm){ .api = lt ? ANA_API_CUBLASLT_MATMUL : ANA_API_CUBLAS_GEMM_EX,
                               .ret = 0, .call = call, .handle = 0x5000, .m = 16, .n = 16,
                               .k = 16, .batch = 1, .lda = 16, .ldb = 16, .ldc = 16,
                               .a_type = dtype, .b_type = dtype, .c_type = dtype,
                               .compute_type = 68, .flops = 2 * 16 * 16 * 16, .a = a, .b = bm,
                               .c = lt ? 0 : d, .d = d, .ws = ws };
    mb_add(m, &r);
    return mb_launch_lib(m, gemm_kernel, NULL, 0, lib, call);
}

/* cublasSetWorkspace_v2(handle, ptr, bytes). */
static inline void mb_set_workspace(mb *m, uint64_t ptr, uint64_t bytes)
{
    ana_record r = { .kind = ANA_K_LIBCALL };
    r.u.libcall = (ana_rec_libcall){ .lib = ANA_LIB_CUBLAS, .api = ANA_API_CUBLAS_SET_WORKSPACE,
                                     .ret = 0, .call = ++m->call, .handle = 0x5000, .arg = ptr,
                                     .arg2 = bytes };
    mb_add(m, &r);
}

/* nvtxMemRegionsRegister + nvtxMemRegionsName: [address, address + size) is name. */
static inline void mb_region(mb *m, uint64_t address, uint64_t size, const char *name)
{
    ana_record r = { .kind = ANA_K_LABEL };
    r.u.label = (ana_rec_label){ .what = ANA_LABEL_MEM_REGION, .id = address, .size = size,
                                 .name = { name, (uint32_t)strlen(name) } };
    mb_add(m, &r);
}

/* Finishes the trace and runs the steps, the memory replay and the anatomy over it. */
static inline void mb_analyze(mb *m, mc_run *r)
{
    memset(r, 0, sizeof(*r));
    tb_find(&m->b, &r->s);
    ana_mem_replay_ranges(&m->b.t->mev, NULL, 0, &r->mem);
    ana_memcat_build(m->b.t, &r->mem, &r->s, &r->m);
    cr_assert_eq(r->m.n_allocs, m->n_allocs, "device allocations: %zu, wrote %zu",
                 r->m.n_allocs, m->n_allocs);
}

static inline void mb_done(mb *m, mc_run *r)
{
    ana_memcat_free(&r->m);
    ana_mem_result_free(&r->mem);
    tb_free(&m->b, &r->s);
}

/* The category of allocation i is want. */
#define expect_cat(r, i, want)                                                            \
    cr_expect_eq((r)->m.allocs[i].cat, (want), "allocation %zu (%s): %s (%s), want %s",  \
                 (size_t)(i), #i, ana_mcat_name((r)->m.allocs[i].cat),                    \
                 ana_memcat_why((r)->m.allocs[i].why), ana_mcat_name(want))

/* got[ANA_MCAT_COUNT] equals want[ANA_MCAT_COUNT], category by category. */
static inline void expect_sums(const uint64_t *got, const uint64_t *want, const char *what)
{
    for (int c = 0; c < ANA_MCAT_COUNT; c++)
        cr_expect_eq(got[c], want[c], "%s, %s: %llu bytes, want %llu", what, ana_mcat_name(c),
                     (unsigned long long)got[c], (unsigned long long)want[c]);
}

/* Short names of the categories; BASE(k): a distinct device address per buffer k. */
enum { WEI = ANA_MCAT_WEIGHTS, OPT = ANA_MCAT_OPTIMIZER, GRA = ANA_MCAT_GRADIENTS,
       ACT = ANA_MCAT_ACTIVATIONS, TMP = ANA_MCAT_TEMPORARY, FUN = ANA_MCAT_FUNCTIONALITY,
       UNA = ANA_MCAT_UNATTRIBUTED };

#define BASE(k) (0x700000000ull + (uint64_t)(k) * 0x100000ull)

static inline void expect_bpp(const ana_memcat *m, int cat, double want)
{
    cr_expect_float_eq(m->bpp[cat], want, 1e-9, "%s: %.4f B/param, want %.4f", ana_mcat_name(cat),
                       m->bpp[cat], want);
}

/* The prose of a bytes-per-parameter figure is known and says word. */
static inline void expect_kind(const char *kind, const char *word, const char *what)
{
    cr_expect_not_null(kind, "%s kind unknown, want one saying %s", what, word);
    if (kind)
        cr_expect_not_null(strstr(kind, word), "%s kind \"%s\" does not say %s", what, kind, word);
}

#endif /* ANA_TESTS_MEMCAT_TB_H */
