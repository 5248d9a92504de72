/* gen_trace.c — writes a large synthetic .anat trace shaped like a steady training loop on
 * one GPU, for timing the analyzer (bench/analyzer_scale.py) and for checking its totals
 * against what the generator knows (tests/scenario/test_gen_scale.py). Uses only
 * format/writer.h, so its numbers do not depend on the analyzer.
 *
 *   gen_trace [--records N] [--threads T] [--out FILE] [--seed S] [--level L] [--time-shift S]
 *             [--rank R --world W]
 *
 * --rank/--world make the trace one rank of a job (bench/ranks_merge.py): its PROCESS record
 * says rank R of W, local rank R % 8, pid 4242 + R, host gen-node<R / 8> (eight GPUs a node),
 * and a COMM record (ncclCommInitRank, rank R of W) gives its all-reduces a communicator id
 * that is the same on every rank, so that the job report matches them across ranks.
 * Without them the trace is rank 0 of 1 on gen-host, pid 4242, with no COMM record.
 * N defaults to 1e8 (the trace ends at the first step boundary at or past N records, END
 * included). Definitions first: PROCESS, DEVICE, INFO cupti=on, 32 STACKs, 40 KERNELs with
 * real-looking mangled names, and three big cudaMalloc's (weights, optimizer state, a
 * workspace) that stay live to the end. Then steps; one step, on host thread
 * 1000 + step % T, is:
 *
 *   RANGE push "train_step" ... RANGE pop           2 records   0.3 %
 *   LAUNCH, each with 2 pointer words              300         48.3 %
 *     (8 inside a GEMM, 1 inside an NCCL all-reduce; the others plain)
 *   GPU_KERNEL, one per LAUNCH, same corr          300         48.3 %
 *   GEMM (cublasGemmEx), COLL (ncclAllReduce)        9          1.4 %
 *   ALLOC + FREE: 4 cudaMalloc/cudaFree pairs        8          1.3 %
 *     (a caching allocator's block churn: 512 KiB .. 64 MiB, freed within the step)
 *   MEMCPY (HtoD input batch) + its GPU_MEMCPY       2          0.3 %
 *                                                  ---
 *                                                  621 records per step
 *
 * A step's GPU records follow its host records, in a segment of their own (thread 7).
 * Prints key=value lines: records, bytes, count.<kind> for every kind written, launches,
 * gpu_kernels, gpu_ns, kernel.<id>.launches / kernel.<id>.gpu_ns, peak_bytes, live_end_bytes,
 * memcpy_bytes, steps, first_ns, last_ns. */
#define _GNU_SOURCE
#include "records.h"
#include "writer.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GEN_T0 1000000000ull
#define GEN_KERNELS 40
#define GEN_STACKS 32
#define GEN_LAUNCHES 300 /* per step */
#define GEN_GEMMS 8
#define GEN_ALLOCS 4
#define GEN_GPU_TID 7
#define GEN_COMM 0x6601 /* the ncclComm_t of the all-reduces */
#define GEN_STEP_MAX 640 /* records of one step, with room */
#define GEN_CHUNK (1u << 20)

typedef struct gen_opts {
    uint64_t records, seed;
    unsigned threads, shift;
    int level, rank, world;
    const char *out;
} gen_opts;

typedef struct gen {
    gen_opts o;
    ana_tw *tw;
    ana_chunkbuf cb;
    uint64_t rng, now, gpu_now, corr, call, records;
    uint64_t count[ANA_K_COUNT];
    uint64_t k_launches[GEN_KERNELS + 1], k_gpu_ns[GEN_KERNELS + 1], k_base_ns[GEN_KERNELS + 1];
    uint64_t live, peak, memcpy_bytes, steps;
    uint64_t big_ptr[3];
    ana_record host[GEN_STEP_MAX], gpu[GEN_STEP_MAX];
    size_t n_host, n_gpu;
} gen;

static uint64_t gen_rand(gen *g)
{
    uint64_t z = (g->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void gen_die(const char *what)
{
    fprintf(stderr, "gen_trace: %s\n", what);
    exit(1);
}

static void gen_flush(gen *g)
{
    if (g->cb.len && ana_tw_chunk(g->tw, g->cb.buf, g->cb.len) != 0)
        gen_die("cannot write a chunk");
    ana_chunkbuf_reset(&g->cb);
}

static void gen_put(gen *g, const ana_record *r)
{
    if (ana_chunkbuf_add(&g->cb, r) != 0)
        gen_die("cannot encode a record");
    g->count[r->kind]++;
    g->records++;
}

/* Host records of the step, then its GPU records, then a chunk when it is full. */
static void gen_emit_step(gen *g)
{
    for (size_t i = 0; i < g->n_host; i++)
        gen_put(g, &g->host[i]);
    for (size_t i = 0; i < g->n_gpu; i++)
        gen_put(g, &g->gpu[i]);
    g->n_host = g->n_gpu = 0;
    if (g->cb.len >= GEN_CHUNK)
        gen_flush(g);
}

static const char *const GEN_NAMES[] = {
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_",
    "_ZN2at6native18elementwise_kernelILi128ELi2EZNS0_22gpu_kernel_impl_nocastINS0_13BUnaryFunctorIfffNS0_15binary_internal10MulFunctorIfEEEEEEvRNS_18TensorIteratorBaseERKT_EUliE_EEviT1_",
    "_ZN2at6native43_GLOBAL__N__de7b1d2a_20_layer_norm_kernel_cu28vectorized_layer_norm_kernelIN3c108BFloat16EfEEviT0_PKT_S8_S8_PS5_S9_PS6_",
    "_ZN2at6native43_GLOBAL__N__9f7c4c24_22_SoftMax_cu19cunn_SoftMaxForwardILi4EfffNS1_22SoftMaxForwardEpilogueEEEvPT2_PKT0_i",
    "_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_14func_wrapper_tIfZNS0_11sum_functorIfffEclERNS_14TensorIteratorEEUlffE_EEjfLi4EEEEEvT1_",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
    "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn",
    "_Z28ncclDevKernel_AllReduce_Sum_bf16_RING_LL24ncclDevKernelArgsStorageILm4096EE",
    "_ZN2at6native55_GLOBAL__N__8d9c6e5e_35_FusedAdamKernel_cu24multi_tensor_apply_kernelINS1_18TensorListMetadataILi4EEENS1_19FusedAdamMathFunctorIfLi4EEEJfddddbbEEEvT_T0_DpT1_",
    "_ZN7cutlass7Kernel2I57cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8EEvNT_6ParamsE",
};
#define GEN_N_NAMES (sizeof(GEN_NAMES) / sizeof(GEN_NAMES[0]))

static void gen_definitions(gen *g)
{
    static const ana_str argv[3] = { { "python3", 7 }, { "train.py", 8 }, { "--steps=1000000", 15 } };
    char name[256], host[32] = "gen-host";
    int rank = g->o.world ? g->o.rank : 0;
    if (g->o.world)
        snprintf(host, sizeof(host), "gen-node%d", rank / 8);
    ana_record r = { .kind = ANA_K_PROCESS, .tid = 1000, .time_ns = GEN_T0 };
    r.u.process = (ana_rec_process){ .pid = 4242 + (uint32_t)rank, .ppid = 1, .rank = rank,
                                     .local_rank = rank % 8,
                                     .world_size = g->o.world ? g->o.world : 1,
                                     .realtime_ns = 1700000000000000000ull,
                                     .host = { host, (uint32_t)strlen(host) },
                                     .exe = { "/usr/bin/python3", 16 }, .argv = { argv, 3 } };
    gen_put(g, &r);
    if (g->o.world) { /* the job's one communicator: its id is the same on every rank */
        r = (ana_record){ .kind = ANA_K_COMM, .tid = 1000, .time_ns = GEN_T0 };
        r.u.comm = (ana_rec_comm){ .api = ANA_API_NCCL_COMM_INIT_RANK, .comm = GEN_COMM,
                                   .comm_id = 0x5eed0c0111d5ull, .rank = rank,
                                   .size = g->o.world, .stack = 6, .dur_ns = 50000 };
        gen_put(g, &r);
    }
    r = (ana_record){ .kind = ANA_K_DEVICE, .tid = 1000, .time_ns = GEN_T0 };
    r.u.device = (ana_rec_device){ 0, { "NVIDIA H100 80GB HBM3", 21 }, 80ull << 30, 132, 9, 0 };
    gen_put(g, &r);
    r = (ana_record){ .kind = ANA_K_INFO, .tid = 1000, .time_ns = GEN_T0 };
    r.u.info = (ana_rec_info){ { "cupti", 5 }, { "on", 2 } };
    gen_put(g, &r);
    for (uint64_t s = 1; s <= GEN_STACKS; s++) {
        uint64_t ip[24];
        for (int i = 0; i < 24; i++)
            ip[i] = 0x7f0000400000ull + (s * 7919 + (uint64_t)i * 104729) % 0x200000;
        r = (ana_record){ .kind = ANA_K_STACK, .tid = 1000, .time_ns = GEN_T0 };
        r.u.stack = (ana_rec_stack){ s, { ip, 24 } };
        gen_put(g, &r);
    }
    for (uint64_t k = 1; k <= GEN_KERNELS; k++) {
        int n = snprintf(name, sizeof(name), "%s", GEN_NAMES[(k - 1) % GEN_N_NAMES]);
        if (k > GEN_N_NAMES) /* a distinct instantiation of the same template */
            n = snprintf(name, sizeof(name), "%.200s_v%llu", GEN_NAMES[(k - 1) % GEN_N_NAMES],
                         (unsigned long long)k);
        r = (ana_record){ .kind = ANA_K_KERNEL, .tid = 1000, .time_ns = GEN_T0 };
        r.u.kernel = (ana_rec_kernel){ k, 0x401000 + k * 64, { name, (uint32_t)n } };
        gen_put(g, &r);
        g->k_base_ns[k] = 2000 + gen_rand(g) % 60000;
    }
}

static ana_record *gen_host(gen *g, uint32_t kind, uint64_t tid)
{
    g->now += 1500 + gen_rand(g) % 3000;
    ana_record *r = &g->host[g->n_host++];
    memset(r, 0, sizeof(*r));
    r->kind = kind;
    r->tid = tid;
    r->time_ns = g->now;
    return r;
}

static void gen_alloc(gen *g, uint64_t tid, uint64_t ptr, uint64_t size)
{
    ana_record *r = gen_host(g, ANA_K_ALLOC, tid);
    r->u.alloc = (ana_rec_alloc){ .api = ANA_API_MALLOC, .ptr = ptr, .size = size,
                                  .stack = 1 + gen_rand(g) % 8, .dur_ns = 9000 };
    g->live += size;
    if (g->live > g->peak)
        g->peak = g->live;
}

static void gen_free(gen *g, uint64_t tid, uint64_t ptr, uint64_t size)
{
    ana_record *r = gen_host(g, ANA_K_FREE, tid);
    r->u.free = (ana_rec_free){ .api = ANA_API_FREE, .ptr = ptr, .stack = 9 + gen_rand(g) % 4,
                                .dur_ns = 4000 };
    g->live -= size;
}

/* One GPU_KERNEL for the launch just made: after it, and after the previous kernel. */
static void gen_gpu_kernel(gen *g, uint64_t kernel, uint64_t corr)
{
    uint64_t start = g->now + 4000 > g->gpu_now ? g->now + 4000 : g->gpu_now;
    uint64_t dur = g->k_base_ns[kernel] + gen_rand(g) % 2000;
    if (g->o.shift) /* what the reader gives back: times and durations in whole ticks */
        dur = ((dur >> g->o.shift) + ((dur >> (g->o.shift - 1)) & 1)) << g->o.shift;
    ana_record *r = &g->gpu[g->n_gpu++];
    memset(r, 0, sizeof(*r));
    r->kind = ANA_K_GPU_KERNEL;
    r->tid = GEN_GPU_TID;
    r->time_ns = start;
    r->u.gpu_kernel = (ana_rec_gpu_kernel){ .corr = corr, .dur_ns = dur, .kernel = kernel,
                                            .context = 1, .stream = 7, .grid_x = 1024,
                                            .grid_y = 1, .grid_z = 1, .block_x = 256,
                                            .block_y = 1, .block_z = 1, .regs = 32 };
    g->gpu_now = start + dur + 1000;
    g->k_gpu_ns[kernel] += dur;
}

static void gen_launch(gen *g, uint64_t tid, uint64_t kernel, uint64_t lib, uint64_t call,
                       const uint64_t *act)
{
    static const uint64_t at[2] = { 0, 8 };
    ana_record *r = gen_host(g, ANA_K_LAUNCH, tid);
    r->u.launch = (ana_rec_launch){ .api = ANA_API_LAUNCH_KERNEL, .kernel = kernel,
                                    .grid_x = 1024, .grid_y = 1, .grid_z = 1, .block_x = 256,
                                    .block_y = 1, .block_z = 1, .stream = 7,
                                    .stack = 13 + (kernel + lib) % 20, .dur_ns = 2500,
                                    .corr = ++g->corr, .lib = lib, .call = call,
                                    .ptrs = { act, 2 }, .ptr_at = { at, 2 } };
    g->k_launches[kernel]++;
    gen_gpu_kernel(g, kernel, g->corr);
}

#define GEN_ACT_BASE 0x7e0000000000ull

static const uint64_t GEN_SIZES[GEN_ALLOCS] = { 512ull << 10, 2ull << 20, 20ull << 20, 64ull << 20 };

static void gen_gemm(gen *g, uint64_t tid, const uint64_t *act)
{
    uint64_t call = ++g->call;
    gen_launch(g, tid, 6 + call % 2, ANA_LIB_CUBLAS, call, act);
    uint64_t begin = g->now - 500; /* the call began before its launch, and ends after it */
    ana_record *r = gen_host(g, ANA_K_GEMM, tid);
    r->time_ns = begin;
    r->u.gemm = (ana_rec_gemm){ .api = ANA_API_CUBLAS_GEMM_EX, .call = call, .handle = 0x5501,
                                .stream = 7, .m = 4096, .n = 4096, .k = 1024, .batch = 1,
                                .lda = 4096, .ldb = 1024, .ldc = 4096, .a_type = 14,
                                .b_type = 14, .c_type = 14, .compute_type = 68,
                                .flops = 2ull * 4096 * 4096 * 1024, .stack = 5, .dur_ns = 9000,
                                .a = g->big_ptr[0], .b = act[0], .c = act[1], .d = act[1] };
}

static void gen_coll(gen *g, uint64_t tid, const uint64_t *act)
{
    uint64_t call = ++g->call;
    gen_launch(g, tid, 8, ANA_LIB_NCCL, call, act);
    uint64_t begin = g->now - 500;
    ana_record *r = gen_host(g, ANA_K_COLL, tid);
    r->time_ns = begin;
    r->u.coll = (ana_rec_coll){ .api = ANA_API_NCCL_ALL_REDUCE, .call = call, .comm = GEN_COMM,
                                .stream = 7, .count = 1 << 20, .dtype = 9, .bytes = 2 << 20,
                                .sendbuff = act[0], .recvbuff = act[0], .seq = g->steps,
                                .stack = 6, .dur_ns = 12000 };
}

static void gen_memcpy(gen *g, uint64_t tid, uint64_t dst)
{
    uint64_t bytes = 4ull << 20;
    ana_record *r = gen_host(g, ANA_K_MEMCPY, tid);
    r->u.memcpy = (ana_rec_memcpy){ .api = ANA_API_MEMCPY_ASYNC, .dst = dst, .src = 0x55000000,
                                    .bytes = bytes, .dir = 1, .stream = 7, .stack = 7,
                                    .dur_ns = 3000, .corr = ++g->corr };
    g->memcpy_bytes += bytes;
    uint64_t start = g->now + 4000 > g->gpu_now ? g->now + 4000 : g->gpu_now;
    ana_record *a = &g->gpu[g->n_gpu++];
    memset(a, 0, sizeof(*a));
    a->kind = ANA_K_GPU_MEMCPY;
    a->tid = GEN_GPU_TID;
    a->time_ns = start;
    a->u.gpu_memcpy = (ana_rec_gpu_memcpy){ .corr = g->corr, .dur_ns = 160000, .bytes = bytes,
                                            .copy_kind = ANA_COPY_HTOD,
                                            .src_kind = ANA_MEMKIND_PINNED,
                                            .dst_kind = ANA_MEMKIND_DEVICE, .context = 1,
                                            .stream = 7 };
    g->gpu_now = start + 160000 + 1000;
}

static void gen_range(gen *g, uint64_t tid, uint64_t op)
{
    ana_record *r = gen_host(g, ANA_K_RANGE, tid);
    r->u.range = (ana_rec_range){ .op = op, .domain = 0, .id = 0, .color = 0xff00ff00,
                                  .name = op == ANA_RANGE_PUSH ? (ana_str){ "train_step", 10 }
                                                               : (ana_str){ "", 0 } };
}

static void gen_step(gen *g)
{
    uint64_t tid = 1000 + g->steps % g->o.threads, act[GEN_ALLOCS];
    gen_range(g, tid, ANA_RANGE_PUSH);
    for (int i = 0; i < GEN_ALLOCS; i++) { /* blocks of the step: slot i, alternating halves */
        act[i] = GEN_ACT_BASE + (uint64_t)i * (256ull << 20) + (g->steps & 1) * (128ull << 20);
        gen_alloc(g, tid, act[i], GEN_SIZES[(i + g->steps) % GEN_ALLOCS]);
    }
    gen_memcpy(g, tid, act[0]);
    int plain = GEN_LAUNCHES - GEN_GEMMS - 1;
    for (int i = 0; i < plain; i++) {
        if (i % (plain / GEN_GEMMS) == 0 && i / (plain / GEN_GEMMS) < GEN_GEMMS)
            gen_gemm(g, tid, act + (i & 1));
        uint64_t k = (uint64_t)(i * 7 + g->steps % 3) % GEN_KERNELS + 1;
        if (k == 6 || k == 7 || k == 8) /* GEMM and NCCL kernels only inside their calls */
            k += 3;
        gen_launch(g, tid, k, 0, 0, act + (i & 2));
    }
    gen_coll(g, tid, act + 2);
    for (int i = 0; i < GEN_ALLOCS; i++)
        gen_free(g, tid, act[i], GEN_SIZES[(i + g->steps) % GEN_ALLOCS]);
    gen_range(g, tid, ANA_RANGE_POP);
    g->steps++;
    if (g->gpu_now > g->now) /* the step ends with a synchronization */
        g->now = g->gpu_now;
    gen_emit_step(g);
}

static void gen_usage(void)
{
    fprintf(stderr, "usage: gen_trace [--records N] [--threads T] [--out FILE] [--seed S] "
                    "[--level L] [--time-shift S] [--rank R --world W]\n");
    exit(2);
}

static void gen_parse(int argc, char **argv, gen_opts *o)
{
    *o = (gen_opts){ .records = 100000000ull, .seed = 1, .threads = 1, .level = 3,
                     .out = "gen.anat" };
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc)
            gen_usage();
        const char *a = argv[i], *v = argv[++i];
        if (strcmp(a, "--records") == 0)
            o->records = (uint64_t)strtod(v, NULL);
        else if (strcmp(a, "--threads") == 0)
            o->threads = (unsigned)atoi(v);
        else if (strcmp(a, "--out") == 0)
            o->out = v;
        else if (strcmp(a, "--seed") == 0)
            o->seed = strtoull(v, NULL, 0);
        else if (strcmp(a, "--level") == 0)
            o->level = atoi(v);
        else if (strcmp(a, "--time-shift") == 0)
            o->shift = (unsigned)atoi(v);
        else if (strcmp(a, "--rank") == 0)
            o->rank = atoi(v);
        else if (strcmp(a, "--world") == 0)
            o->world = atoi(v);
        else
            gen_usage();
    }
    if (o->threads == 0 || o->threads > 1024 || o->level < 1 || o->level > 19 ||
        o->shift > ANA_TIME_SHIFT_MAX || o->world < 0 || o->rank < 0 ||
        (o->world && o->rank >= o->world) || (o->rank && !o->world))
        gen_usage();
}

static void gen_report(const gen *g)
{
    uint64_t launches = 0, gpu_ns = 0;
    printf("records=%llu\nbytes=%llu\nsteps=%llu\n", (unsigned long long)g->records,
           (unsigned long long)ana_tw_bytes(g->tw), (unsigned long long)g->steps);
    for (uint32_t k = 1; k < ANA_K_COUNT; k++)
        if (g->count[k])
            printf("count.%s=%llu\n", ana_kind_name(k), (unsigned long long)g->count[k]);
    for (int k = 1; k <= GEN_KERNELS; k++) {
        launches += g->k_launches[k];
        gpu_ns += g->k_gpu_ns[k];
        printf("kernel.%d.launches=%llu\nkernel.%d.gpu_ns=%llu\n", k,
               (unsigned long long)g->k_launches[k], k, (unsigned long long)g->k_gpu_ns[k]);
    }
    printf("launches=%llu\ngpu_kernels=%llu\ngpu_ns=%llu\n", (unsigned long long)launches,
           (unsigned long long)g->count[ANA_K_GPU_KERNEL], (unsigned long long)gpu_ns);
    printf("peak_bytes=%llu\nlive_end_bytes=%llu\nmemcpy_bytes=%llu\n",
           (unsigned long long)g->peak, (unsigned long long)g->live,
           (unsigned long long)g->memcpy_bytes);
}

int main(int argc, char **argv)
{
    static gen g;
    gen_parse(argc, argv, &g.o);
    g.rng = g.o.seed;
    g.now = g.gpu_now = GEN_T0;
    if (!(g.tw = ana_tw_open(g.o.out, g.o.level)))
        gen_die("cannot create the output file");
    if (g.o.shift && ana_tw_set_time_shift(g.tw, g.o.shift) != 0)
        gen_die("cannot set the time shift");
    g.cb.shift = g.o.shift;
    gen_definitions(&g);
    static const uint64_t big[3] = { 14ull << 30, 28ull << 30, 1ull << 30 };
    for (int i = 0; i < 3; i++) {
        g.big_ptr[i] = 0x7f0000000000ull + (uint64_t)i * (32ull << 30);
        gen_alloc(&g, 1000, g.big_ptr[i], big[i]);
    }
    gen_emit_step(&g);
    while (g.records + 1 < g.o.records)
        gen_step(&g);
    gen_flush(&g);
    g.now += 1000;
    if (ana_tw_end(g.tw, g.now, ANA_END_EXIT, "") != 0)
        gen_die("cannot write END");
    g.count[ANA_K_END]++;
    g.records++;
    gen_report(&g);
    printf("first_ns=%llu\nlast_ns=%llu\n", (unsigned long long)GEN_T0,
           (unsigned long long)(g.o.shift ? g.now >> g.o.shift << g.o.shift : g.now));
    if (ana_tw_close(g.tw) != 0)
        gen_die("cannot close the output file");
    ana_chunkbuf_free(&g.cb);
    return 0;
}
