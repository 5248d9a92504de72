/* gen_trace.c — writes synthetic .anat traces whose numbers are known in advance, for the
 * CLI tests of the analyzer (tests/cli/). Uses only format/writer.h, so the expected values
 * in the tests do not depend on the analyzer.
 *
 * Usage: gen_trace SCENARIO OUT [N]  (gen_trace --list for the scenarios; N: churn size)
 * Prints "key=value" facts the tests need (e.g. torn_bytes=N) on stdout. */
#define _GNU_SOURCE
#include "records.h"
#include "varint.h"
#include "writer.h"

#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define T0 1000000000ull /* time of the first record */
#define GiB (1ull << 30)
#define TID_A 100
#define TID_B 101
#define TID_C 102

typedef struct gen {
    ana_tw *tw;
    ana_chunkbuf cb;
    const char *path;
} gen;

static void die(const char *what)
{
    perror(what);
    exit(1);
}

static void gen_add(gen *g, const ana_record *r)
{
    if (ana_chunkbuf_add(&g->cb, r) != 0) {
        fprintf(stderr, "gen_trace: cannot encode a record of kind %u\n", r->kind);
        exit(1);
    }
}

static void gen_flush(gen *g)
{
    if (g->cb.len && ana_tw_chunk(g->tw, g->cb.buf, g->cb.len) != 0)
        die("ana_tw_chunk");
    ana_chunkbuf_reset(&g->cb);
}

/* A record of a kind this format version does not know, appended by hand. */
static void gen_unknown(gen *g, uint64_t tid, uint32_t kind, size_t len)
{
    ana_record r = { .kind = ANA_K_INFO, .tid = tid, .time_ns = T0 + 10 };
    r.u.info.key = (ana_str){ "pad", 3 };
    gen_add(g, &r); /* opens the segment for tid; a known record of its own */
    size_t need = g->cb.len + 2 * ANA_VARINT_MAX + len;
    if (need > g->cb.cap) {
        g->cb.buf = realloc(g->cb.buf, need);
        g->cb.cap = need;
    }
    g->cb.len += ana_varint_put(g->cb.buf + g->cb.len, kind);
    g->cb.len += ana_varint_put(g->cb.buf + g->cb.len, len);
    memset(g->cb.buf + g->cb.len, 0x5a, len);
    g->cb.len += len;
}

/* Functions whose addresses become stack frames: the analyzer must name them. */
__attribute__((noinline)) void gen_marker_site(void) { __asm__ volatile(""); }
__attribute__((noinline)) void gen_marker_other(void) { __asm__ volatile(""); }

struct gen_self {
    uint64_t bias, lo, hi;
    uint8_t build_id[64];
    size_t build_id_len;
};

static void gen_self_build_id(struct dl_phdr_info *info, struct gen_self *s)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const void *)p;
            const uint8_t *name = p + sizeof(*nh), *desc = name + ((nh->n_namesz + 3) & ~3u);
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4) &&
                nh->n_descsz <= sizeof(s->build_id)) {
                memcpy(s->build_id, desc, nh->n_descsz);
                s->build_id_len = nh->n_descsz;
                return;
            }
            p = desc + ((nh->n_descsz + 3) & ~3u);
        }
    }
}

static int gen_self_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct gen_self *s = arg;
    (void)size;
    s->bias = info->dlpi_addr;
    s->lo = UINT64_MAX;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uint64_t a = info->dlpi_addr + ph->p_vaddr;
        if (a < s->lo)
            s->lo = a;
        if (a + ph->p_memsz > s->hi)
            s->hi = a + ph->p_memsz;
    }
    gen_self_build_id(info, s);
    return 1; /* the first entry is the main program */
}

static void gen_header(gen *g, const char *scenario)
{
    static char exe[4096];
    struct gen_self self = { 0 };
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    exe[n > 0 ? n : 0] = 0;
    dl_iterate_phdr(gen_self_cb, &self);

    ana_str argv[3] = { { "gen", 3 }, { "--scenario", 10 }, { scenario, (uint32_t)strlen(scenario) } };
    ana_record r = { .kind = ANA_K_PROCESS, .tid = 0, .time_ns = T0 };
    r.u.process = (ana_rec_process){ .pid = 4242, .ppid = 1, .rank = -1, .local_rank = -1,
                                     .world_size = -1, .realtime_ns = 1700000000000000000ull,
                                     .host = { "gen-host", 8 }, .exe = { "/usr/bin/gen", 12 },
                                     .argv = { argv, 3 } };
    gen_add(g, &r);
    r = (ana_record){ .kind = ANA_K_INFO, .tid = 0, .time_ns = T0 };
    r.u.info = (ana_rec_info){ { "profiler_version", 16 }, { "gen_trace", 9 } };
    gen_add(g, &r);
    r = (ana_record){ .kind = ANA_K_DEVICE, .tid = 0, .time_ns = T0 };
    r.u.device = (ana_rec_device){ 0, { "Simulated H100", 14 }, 80 * GiB, 132, 9, 0 };
    gen_add(g, &r);
    r = (ana_record){ .kind = ANA_K_MODULE, .tid = 0, .time_ns = T0 };
    r.u.module = (ana_rec_module){ self.bias, self.lo, self.hi,
                                   { (const char *)self.build_id, (uint32_t)self.build_id_len },
                                   { exe, (uint32_t)strlen(exe) } };
    gen_add(g, &r);
    /* The same module announced again (as at exit): readers must not count it twice. */
    r.time_ns = T0 + 1;
    gen_add(g, &r);
}

static void gen_stack(gen *g, uint64_t tid, uint64_t t, uint64_t id, const uint64_t *ip, uint32_t n)
{
    ana_record r = { .kind = ANA_K_STACK, .tid = tid, .time_ns = t };
    r.u.stack = (ana_rec_stack){ id, { ip, n } };
    gen_add(g, &r);
}

static void gen_alloc(gen *g, uint64_t tid, uint64_t t, uint64_t api, int64_t ret, uint64_t ptr,
                      uint64_t size, uint64_t stack)
{
    ana_record r = { .kind = ANA_K_ALLOC, .tid = tid, .time_ns = t };
    r.u.alloc = (ana_rec_alloc){ .api = api, .ret = ret, .ptr = ptr, .size = size,
                                 .stack = stack, .dur_ns = 100 };
    gen_add(g, &r);
}

static void gen_free(gen *g, uint64_t tid, uint64_t t, uint64_t api, int64_t ret, uint64_t ptr)
{
    ana_record r = { .kind = ANA_K_FREE, .tid = tid, .time_ns = t };
    r.u.free = (ana_rec_free){ .api = api, .ret = ret, .ptr = ptr, .dur_ns = 50 };
    gen_add(g, &r);
}

static void gen_meminfo(gen *g, uint64_t tid, uint64_t t, uint64_t free_b, uint64_t total)
{
    ana_record r = { .kind = ANA_K_MEMINFO, .tid = tid, .time_ns = t };
    r.u.meminfo = (ana_rec_meminfo){ 0, free_b, total, ANA_MEMINFO_FAILED_ALLOC };
    gen_add(g, &r);
}

static void gen_kernel(gen *g, uint64_t id, const char *name)
{
    ana_record r = { .kind = ANA_K_KERNEL, .tid = TID_A, .time_ns = T0 + 50 };
    r.u.kernel = (ana_rec_kernel){ id, 0x1000 * id, { name, (uint32_t)strlen(name) } };
    gen_add(g, &r);
}

static void gen_launch(gen *g, uint64_t t, uint64_t kernel, int64_t ret)
{
    ana_record r = { .kind = ANA_K_LAUNCH, .tid = TID_A, .time_ns = t };
    r.u.launch = (ana_rec_launch){ .api = ANA_API_LAUNCH_KERNEL, .ret = ret, .kernel = kernel,
                                   .grid_x = 1, .grid_y = 1, .grid_z = 1, .block_x = 128,
                                   .block_y = 1, .block_z = 1 };
    gen_add(g, &r);
}

static void gen_copy(gen *g, uint64_t t, int memset_, uint64_t bytes, uint64_t dir)
{
    ana_record r = { .kind = memset_ ? ANA_K_MEMSET : ANA_K_MEMCPY, .tid = TID_A, .time_ns = t };
    if (memset_)
        r.u.memset = (ana_rec_memset){ .api = ANA_API_MEMSET, .ptr = 0x1000, .bytes = bytes };
    else
        r.u.memcpy = (ana_rec_memcpy){ .api = ANA_API_MEMCPY, .bytes = bytes, .dir = dir };
    gen_add(g, &r);
}

static void gen_thread(gen *g, uint64_t tid, const char *name)
{
    ana_record r = { .kind = ANA_K_THREAD, .tid = tid, .time_ns = T0 + 5 };
    r.u.thread = (ana_rec_thread){ tid, { name, (uint32_t)strlen(name) } };
    gen_add(g, &r);
}

static void gen_dropped(gen *g, uint64_t tid, uint64_t records, uint64_t bytes)
{
    ana_record r = { .kind = ANA_K_DROPPED, .tid = 0, .time_ns = T0 + 9000 };
    r.u.dropped = (ana_rec_dropped){ tid, records, bytes };
    gen_add(g, &r);
}

static void gen_end(gen *g, uint64_t t)
{
    ana_record r = { .kind = ANA_K_END, .tid = 0, .time_ns = t };
    r.u.end = (ana_rec_end){ ANA_END_EXIT, { "", 0 } };
    gen_add(g, &r);
}

/* The "basic" program (expected values in tests/cli/test_report.py):
 *   cudaMalloc 100 @+1000 (stack 1), 200 @+2000 (stack 3), 300 @+3000 (stack 2 = same
 *   frames as 1, thread B, written first), cudaFree of the 200 @+4000, cudaMalloc 50
 *   @+5000 (stack 3) -> peak 600 B at +3000 ns; live at the end 450 B in 3 allocations.
 *   Pinned: cudaMallocHost 1000 @+5500, cudaFreeHost @+5600. A free of an unknown pointer
 *   and a free of NULL. Kernels: matmul x3, relu_kernel x1 (failed). */
static void gen_basic_body(gen *g)
{
    uint64_t site = (uint64_t)(uintptr_t)&gen_marker_site + 1;
    uint64_t other = (uint64_t)(uintptr_t)&gen_marker_other + 1;
    uint64_t s1[2] = { site, 0x10 }, s3[1] = { other };

    gen_thread(g, TID_B, "loader");
    gen_alloc(g, TID_B, T0 + 3000, ANA_API_MALLOC, 0, 0x3000, 300, 2); /* stack 2 defined later */
    gen_thread(g, TID_A, "main");
    gen_stack(g, TID_A, T0 + 900, 1, s1, 2);
    gen_stack(g, TID_A, T0 + 900, 3, s3, 1);
    gen_alloc(g, TID_A, T0 + 1000, ANA_API_MALLOC, 0, 0x1000, 100, 1);
    gen_alloc(g, TID_A, T0 + 2000, ANA_API_MALLOC, 0, 0x2000, 200, 3);
    gen_flush(g);
    gen_stack(g, TID_C, T0 + 2500, 2, s1, 2);
    gen_free(g, TID_A, T0 + 4000, ANA_API_FREE, 0, 0x2000);
    gen_alloc(g, TID_A, T0 + 5000, ANA_API_MALLOC, 0, 0x4000, 50, 3);
    gen_alloc(g, TID_A, T0 + 5500, ANA_API_MALLOC_HOST, 0, 0x9000, 1000, 0);
    gen_free(g, TID_A, T0 + 5600, ANA_API_FREE_HOST, 0, 0x9000);
    gen_free(g, TID_A, T0 + 5700, ANA_API_FREE, 0, 0xdead0000);
    gen_free(g, TID_A, T0 + 5800, ANA_API_FREE, 0, 0);
    gen_kernel(g, 1, "_Z6matmulPKfS0_Pfi");
    gen_kernel(g, 2, "relu_kernel");
    gen_launch(g, T0 + 6000, 1, 0);
    gen_launch(g, T0 + 6100, 1, 0);
    gen_launch(g, T0 + 6200, 2, 98);
    gen_launch(g, T0 + 6300, 1, 0);
    gen_copy(g, T0 + 7000, 0, 4096, 1);
    gen_copy(g, T0 + 7100, 0, 4096, 1);
    gen_copy(g, T0 + 7200, 0, 1024, 2);
    gen_copy(g, T0 + 7300, 1, 512, 0);
    gen_dropped(g, TID_A, 7, 300);
    gen_dropped(g, TID_B, 3, 100);
}

/* "failed": cudaMalloc 1 GiB and 2 GiB succeed; cudaMalloc 8 GiB fails (2) @+3000, the
 * device then reports 5 GiB free of 8 GiB; the 1 GiB is freed @+4000; cudaMallocAsync
 * 4 GiB fails (2) @+5000 on thread B, which reports 6 GiB free @+5002; cudaMalloc of
 * 16 B fails with an unknown code 12345 @+6000 and no memory info. */
static void gen_failed_body(gen *g)
{
    uint64_t other = (uint64_t)(uintptr_t)&gen_marker_other + 1;
    gen_stack(g, TID_A, T0 + 500, 7, &other, 1);
    gen_alloc(g, TID_A, T0 + 1000, ANA_API_MALLOC, 0, 0x10000000, 1 * GiB, 0);
    gen_alloc(g, TID_A, T0 + 2000, ANA_API_MALLOC, 0, 0x50000000, 2 * GiB, 0);
    gen_alloc(g, TID_A, T0 + 3000, ANA_API_MALLOC, 2, 0, 8 * GiB, 7);
    gen_meminfo(g, TID_A, T0 + 3001, 5 * GiB, 8 * GiB);
    gen_free(g, TID_A, T0 + 4000, ANA_API_FREE, 0, 0x10000000);
    gen_alloc(g, TID_B, T0 + 5000, ANA_API_MALLOC_ASYNC, 2, 0, 4 * GiB, 0);
    gen_meminfo(g, TID_B, T0 + 5002, 6 * GiB, 8 * GiB);
    gen_alloc(g, TID_A, T0 + 6000, ANA_API_MALLOC, 12345, 0, 16, 0);
}

/* "churn": n cudaMalloc of 4096 B on 4 threads, each freed 1000 allocations later, in
 * chunks of at most 1 MiB: peak 1001 x 4096 B, 1000 allocations live at the end. A size
 * and speed check for the analyzer (n from the command line, default 1000000). */
static void gen_churn_body(gen *g, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        uint64_t tid = TID_A + i % 4, t = T0 + 1000 + 10 * i;
        gen_alloc(g, tid, t, ANA_API_MALLOC, 0, 0x100000000ull + i * 4096, 4096, 0);
        if (i >= 1000)
            gen_free(g, tid, t + 5, ANA_API_FREE, 0, 0x100000000ull + (i - 1000) * 4096);
        if (g->cb.len > (1u << 20))
            gen_flush(g);
    }
}

/* "gpu" (format 1.1): GPU activity, driver and virtual-memory allocations. The tables
 * below are mirrored in tests/cli/test_gpu.py, which computes the expected numbers from
 * them on its own; keep both in step.
 * Memory: cudaMalloc 1 MiB @+1000 (corr 41) and its GPU_MEMORY twin (same corr: ignored);
 * a GPU_MEMORY allocation of 2 MiB no call explains (corr 777: replayed, driver only) and a
 * pinned one of 4 KiB (corr 0); cuMemCreate 4 MiB @+3000 under handle 0xA000000 (the same
 * number as the live cudaMalloc pointer: handles are not addresses), mapped @+3200,
 * released @+4000 while mapped, unmapped @+5000 (its bytes go then); cuMemCreate 2 MiB
 * @+4500 released unmapped @+4600 -> device peak 9 MiB at +4500 (6 MiB of it cuMemCreate);
 * then two 1 MiB handles mapped side by side, released while mapped, and unmapped by one
 * cuMemUnmap of both @+7300 -> 2 MiB (the driver-only one) live at the end. */
struct gen_call { uint64_t t, tid; uint32_t kind; uint64_t api; int64_t ret; uint64_t corr, arg, dir, stack; };
struct gen_act {
    uint32_t kind; int64_t device; uint64_t stream, corr, start, dur, arg, copy_kind, src, dst;
};
#define L_ ANA_K_LAUNCH
#define M_ ANA_K_MEMCPY
#define S_ ANA_K_MEMSET
static const struct gen_call gen_gpu_calls[] = {
    { 10000, TID_A, L_, ANA_API_LAUNCH_KERNEL, 0, 11, 1, 0, 1 },
    { 11000, TID_A, L_, ANA_API_LAUNCH_KERNEL, 0, 12, 2, 0, 1 },
    { 12000, TID_A, L_, ANA_API_LAUNCH_KERNEL, 0, 13, 3, 0, 1 },
    { 12500, TID_A, L_, ANA_API_LAUNCH_KERNEL, 0, 17, 2, 0, 1 },
    { 13000, TID_A, M_, ANA_API_MEMCPY_ASYNC, 0, 21, 1 << 20, 1, 1 },
    { 14000, TID_A, M_, ANA_API_MEMCPY_ASYNC, 0, 22, 1 << 20, 1, 1 },
    { 30000, TID_A, L_, ANA_API_LAUNCH_KERNEL, 98, 16, 1, 0, 1 },
    { 45000, TID_B, L_, ANA_API_LAUNCH_KERNEL, 0, 15, 2, 0, 3 },
    { 95000, TID_A, L_, ANA_API_LAUNCH_KERNEL, 0, 14, 1, 0, 3 },
    { 110000, TID_A, S_, ANA_API_MEMSET_ASYNC, 0, 31, 4096, 0, 1 },
    { 118000, TID_A, M_, ANA_API_MEMCPY, 0, 23, 2 << 20, 2, 3 },
    { 119000, TID_A, M_, ANA_API_MEMCPY, 0, 24, 1 << 20, 2, 1 },
    { 120000, TID_A, M_, ANA_API_MEMCPY_ASYNC, 0, 25, 8 << 20, 3, 1 },
};
#define GK ANA_K_GPU_KERNEL
#define GC ANA_K_GPU_MEMCPY
#define GS ANA_K_GPU_MEMSET
static const struct gen_act gen_gpu_acts[] = {
    { GK, 0, 7, 11, 20000, 10000, 1, 0, 0, 0 },
    { GK, 0, 7, 13, 30000, 5000, 3, 0, 0, 0 },
    { GK, 0, 8, 12, 25000, 15000, 2, 0, 0, 0 },
    { GK, 1, 20, 17, 30000, 9000, 2, 0, 0, 0 },
    { GC, 0, 8, 21, 40000, 10000, 1 << 20, ANA_COPY_HTOD, ANA_MEMKIND_PAGEABLE, ANA_MEMKIND_DEVICE },
    { GC, 0, 8, 22, 52000, 2000, 1 << 20, ANA_COPY_HTOD, ANA_MEMKIND_PINNED, ANA_MEMKIND_DEVICE },
    { GK, 0, 7, 14, 100000, 12000, 1, 0, 0, 0 },
    { GS, 0, 8, 31, 112000, 1000, 4096, 0, 0, ANA_MEMKIND_DEVICE },
    { GC, 0, 7, 23, 125000, 1000, 2 << 20, ANA_COPY_DTOH, ANA_MEMKIND_DEVICE, ANA_MEMKIND_PINNED },
    { GC, 0, 7, 24, 126000, 10000, 1 << 20, ANA_COPY_DTOH, ANA_MEMKIND_DEVICE, ANA_MEMKIND_PAGEABLE },
    { GC, 0, 8, 25, 136000, 1000, 8 << 20, ANA_COPY_DTOD, ANA_MEMKIND_DEVICE, ANA_MEMKIND_DEVICE },
    { GK, 0, 9, 999, 140000, 1000, 2, 0, 0, 0 },
    { GK, 0, 9, 0, 141000, 1000, 2, 0, 0, 0 },
};

static void gen_gpu_call(gen *g, const struct gen_call *c)
{
    ana_record r = { .kind = c->kind, .tid = c->tid, .time_ns = T0 + c->t };
    if (c->kind == ANA_K_LAUNCH)
        r.u.launch = (ana_rec_launch){ .api = c->api, .ret = c->ret, .kernel = c->arg,
                                       .grid_x = 1, .grid_y = 1, .grid_z = 1, .block_x = 256,
                                       .block_y = 1, .block_z = 1, .stack = c->stack,
                                       .dur_ns = 300, .corr = c->corr };
    else if (c->kind == ANA_K_MEMCPY)
        r.u.memcpy = (ana_rec_memcpy){ .api = c->api, .ret = c->ret, .bytes = c->arg,
                                       .dir = c->dir, .stack = c->stack, .dur_ns = 300,
                                       .corr = c->corr };
    else
        r.u.memset = (ana_rec_memset){ .api = c->api, .ret = c->ret, .ptr = 0xA000000,
                                       .bytes = c->arg, .stack = c->stack, .dur_ns = 300,
                                       .corr = c->corr };
    gen_add(g, &r);
}

static void gen_gpu_act(gen *g, const struct gen_act *a)
{
    ana_record r = { .kind = a->kind, .tid = 0, .time_ns = T0 + a->start };
    if (a->kind == ANA_K_GPU_KERNEL)
        r.u.gpu_kernel = (ana_rec_gpu_kernel){ .corr = a->corr, .dur_ns = a->dur,
                                               .kernel = a->arg, .device = a->device,
                                               .context = 1, .stream = a->stream,
                                               .grid_x = 1, .grid_y = 1, .grid_z = 1,
                                               .block_x = 256, .block_y = 1, .block_z = 1 };
    else if (a->kind == ANA_K_GPU_MEMCPY)
        r.u.gpu_memcpy = (ana_rec_gpu_memcpy){ .corr = a->corr, .dur_ns = a->dur,
                                               .bytes = a->arg, .copy_kind = a->copy_kind,
                                               .src_kind = a->src, .dst_kind = a->dst,
                                               .flags = ANA_GPU_FLAG_ASYNC, .device = a->device,
                                               .context = 1, .stream = a->stream,
                                               .src_device = -1, .dst_device = -1 };
    else
        r.u.gpu_memset = (ana_rec_gpu_memset){ .corr = a->corr, .dur_ns = a->dur,
                                               .bytes = a->arg, .mem_kind = a->dst,
                                               .device = a->device, .context = 1,
                                               .stream = a->stream };
    gen_add(g, &r);
}

static void gen_gpu_memory(gen *g, uint64_t t, uint64_t corr, uint64_t op, uint64_t kind,
                           uint64_t addr, uint64_t bytes)
{
    ana_record r = { .kind = ANA_K_GPU_MEMORY, .tid = 0, .time_ns = T0 + t };
    r.u.gpu_memory = (ana_rec_gpu_memory){ .corr = corr, .op = op, .mem_kind = kind,
                                           .address = addr, .bytes = bytes, .context = 1 };
    gen_add(g, &r);
}

static void gen_vmm(gen *g, uint64_t t, uint64_t api, uint64_t va, uint64_t size,
                    uint64_t handle, uint64_t corr)
{
    ana_record r = { .kind = ANA_K_VMM, .tid = TID_A, .time_ns = T0 + t };
    r.u.vmm = (ana_rec_vmm){ .api = api, .va = va, .size = size, .handle = handle,
                             .dur_ns = 200, .corr = corr };
    gen_add(g, &r);
}

static void gen_info(gen *g, const char *key, const char *value)
{
    ana_record r = { .kind = ANA_K_INFO, .tid = 0, .time_ns = T0 };
    r.u.info = (ana_rec_info){ { key, (uint32_t)strlen(key) }, { value, (uint32_t)strlen(value) } };
    gen_add(g, &r);
}

static void gen_corr_alloc(gen *g, uint64_t t, uint64_t api, uint64_t ptr, uint64_t size,
                           uint64_t stack, uint64_t corr)
{
    ana_record r = { .kind = ANA_K_ALLOC, .tid = TID_A, .time_ns = T0 + t };
    r.u.alloc = (ana_rec_alloc){ .api = api, .ptr = ptr, .size = size, .stack = stack,
                                 .dur_ns = 100, .corr = corr };
    gen_add(g, &r);
}

static void gen_corr_free(gen *g, uint64_t t, uint64_t api, uint64_t ptr, uint64_t corr)
{
    ana_record r = { .kind = ANA_K_FREE, .tid = TID_A, .time_ns = T0 + t };
    r.u.free = (ana_rec_free){ .api = api, .ptr = ptr, .dur_ns = 50, .corr = corr };
    gen_add(g, &r);
}

static void gen_gpu_memory_body(gen *g)
{
    const uint64_t MiB = 1 << 20, va = 0x7f0000000000ull, h1 = 0xA000000, h2 = 6;
    gen_corr_alloc(g, 1000, ANA_API_MALLOC, 0xA000000, MiB, 1, 41);
    gen_gpu_memory(g, 1050, 41, ANA_GPU_MEM_ALLOC, ANA_MEMKIND_DEVICE, 0xA000000, MiB);
    gen_gpu_memory(g, 2000, 777, ANA_GPU_MEM_ALLOC, ANA_MEMKIND_DEVICE, 0xB000000, 2 * MiB);
    gen_gpu_memory(g, 2100, 0, ANA_GPU_MEM_ALLOC, ANA_MEMKIND_PINNED, 0xC000000, 4096);
    gen_corr_alloc(g, 3000, ANA_API_CU_MEM_CREATE, h1, 4 * MiB, 3, 51);
    gen_vmm(g, 3100, ANA_API_CU_MEM_ADDRESS_RESERVE, va, 8 * MiB, 0, 52);
    gen_vmm(g, 3200, ANA_API_CU_MEM_MAP, va, 4 * MiB, h1, 53);
    gen_vmm(g, 3300, ANA_API_CU_MEM_SET_ACCESS, va, 4 * MiB, 0, 54);
    gen_corr_free(g, 4000, ANA_API_CU_MEM_RELEASE, h1, 55);
    gen_corr_alloc(g, 4500, ANA_API_CU_MEM_CREATE, h2, 2 * MiB, 1, 56);
    gen_corr_free(g, 4600, ANA_API_CU_MEM_RELEASE, h2, 57);
    gen_vmm(g, 5000, ANA_API_CU_MEM_UNMAP, va, 4 * MiB, 0, 58);
    gen_vmm(g, 5100, ANA_API_CU_MEM_ADDRESS_FREE, va, 8 * MiB, 0, 59);
    gen_corr_free(g, 6000, ANA_API_FREE, 0xA000000, 42);
    gen_gpu_memory(g, 6010, 42, ANA_GPU_MEM_RELEASE, ANA_MEMKIND_DEVICE, 0xA000000, MiB);
    gen_gpu_memory(g, 6100, 0, ANA_GPU_MEM_RELEASE, ANA_MEMKIND_PINNED, 0xC000000, 4096);
    /* Two handles mapped side by side, released while mapped, unmapped by one call. */
    gen_corr_alloc(g, 7000, ANA_API_CU_MEM_CREATE, 7, MiB, 1, 60);
    gen_corr_alloc(g, 7010, ANA_API_CU_MEM_CREATE, 8, MiB, 1, 61);
    gen_vmm(g, 7100, ANA_API_CU_MEM_MAP, va + 8 * MiB, MiB, 7, 62);
    gen_vmm(g, 7110, ANA_API_CU_MEM_MAP, va + 9 * MiB, MiB, 8, 63);
    gen_corr_free(g, 7200, ANA_API_CU_MEM_RELEASE, 7, 64);
    gen_corr_free(g, 7210, ANA_API_CU_MEM_RELEASE, 8, 65);
    gen_vmm(g, 7300, ANA_API_CU_MEM_UNMAP, va + 8 * MiB, 2 * MiB, 0, 66);
}

static void gen_gpu_body(gen *g)
{
    uint64_t site = (uint64_t)(uintptr_t)&gen_marker_site + 1;
    uint64_t other = (uint64_t)(uintptr_t)&gen_marker_other + 1;
    uint64_t s1[2] = { site, 0x10 }, s3[1] = { other };
    ana_record r = { .kind = ANA_K_GPU_DROPPED, .tid = 0, .time_ns = T0 + 150000 };

    gen_info(g, "cupti", "on");
    gen_thread(g, TID_A, "main");
    gen_stack(g, TID_A, T0 + 900, 1, s1, 2);
    gen_stack(g, TID_A, T0 + 900, 3, s3, 1);
    gen_kernel(g, 1, "_Z6matmulPKfS0_Pfi");
    gen_kernel(g, 2, "relu_kernel");
    gen_kernel(g, 3, "_Z6matmulPKfS0_Pfi"); /* the same kernel from a second module */
    gen_gpu_memory_body(g);
    for (size_t i = 0; i < sizeof(gen_gpu_calls) / sizeof(gen_gpu_calls[0]); i++)
        gen_gpu_call(g, &gen_gpu_calls[i]);
    gen_flush(g); /* the GPU records come in a later chunk, as CUPTI delivers them late */
    for (size_t i = 0; i < sizeof(gen_gpu_acts) / sizeof(gen_gpu_acts[0]); i++)
        gen_gpu_act(g, &gen_gpu_acts[i]);
    r.u.gpu_dropped = (ana_rec_gpu_dropped){ 5, ANA_GPU_DROPPED_CUPTI };
    gen_add(g, &r);
    r.u.gpu_dropped = (ana_rec_gpu_dropped){ 2, ANA_GPU_DROPPED_DECODE };
    gen_add(g, &r);
}

/* "libs" (format 1.2): cuBLAS/cuBLASLt GEMMs, NCCL communicators and collectives (a group
 * of two operations whose ncclGroupEnd launches the kernels), NVTX ranges, marks and
 * labels, and allocations made inside library calls. The tables below are mirrored in
 * tests/cli/test_libs.py, which computes the expected numbers from them; keep both in
 * step. Every API record is on thread A unless a table says otherwise. */
struct gen_gemm {
    uint64_t t, call, api; int64_t ret; uint64_t m, n, k, batch, ta, tb, at, bt, ct, compute, math;
};
static const struct gen_gemm gen_lib_gemms[] = {
    { 10000, 1, ANA_API_CUBLAS_GEMM_EX, 0, 4096, 4096, 4096, 1, 0, 0, 14, 14, 14, 68, 0 },
    { 20000, 2, ANA_API_CUBLAS_GEMM_EX, 0, 4096, 4096, 4096, 1, 0, 0, 14, 14, 14, 68, 0 },
    { 30000, 3, ANA_API_CUBLAS_GEMM_EX, 0, 1000, 4100, 1022, 1, 1, 0, 14, 14, 14, 68, 0 },
    { 40000, 4, ANA_API_CUBLAS_SGEMM, 0, 1024, 1024, 1024, 1, 0, 0, 0, 0, 0, 68, 0 },
    { 50000, 5, ANA_API_CUBLAS_SGEMM, 0, 1024, 1024, 1024, 1, 0, 0, 0, 0, 0, 68, 0 },
    { 60000, 6, ANA_API_CUBLAS_SGEMM_STRIDED_BATCHED, 0, 512, 512, 64, 16, 0, 1, 0, 0, 0, 68, 3 },
    { 70000, 7, ANA_API_CUBLASLT_MATMUL, 0, 2048, 2048, 2048, 1, 1, 0, 28, 28, 14, 68, 0 },
    { 75000, 8, ANA_API_CUBLAS_GEMM_EX, 13, 64, 64, 64, 1, 0, 0, 14, 14, 14, 68, 0 },
};
/* Launches: time, thread, library call (0 = none), corr, kernel id, GPU duration (0 = no
 * GPU_KERNEL record); the kernel starts 1000 ns after its launch on device 0. */
struct gen_lib_launch { uint64_t t, tid, call, corr, kernel, dur; };
static const struct gen_lib_launch gen_lib_launches[] = {
    { 10100, TID_A, 1, 101, 10, 200000 }, { 20100, TID_A, 2, 102, 10, 210000 },
    { 30100, TID_A, 3, 103, 10, 50000 },  { 40100, TID_A, 4, 104, 11, 40000 },
    { 50100, TID_A, 5, 105, 11, 30000 },  { 50200, TID_A, 5, 106, 11, 10000 },
    { 60100, TID_A, 6, 107, 11, 20000 },  { 70100, TID_A, 7, 108, 10, 0 },
    { 80000, TID_A, 0, 109, 17, 5000 },   { 110100, TID_A, 30, 201, 12, 100000 },
    { 120100, TID_A, 31, 202, 12, 140000 }, { 130100, TID_A, 32, 203, 13, 20000 },
    { 143100, TID_A, 36, 204, 14, 30000 }, { 143200, TID_A, 36, 205, 15, 50000 },
    { 160100, TID_A, 37, 206, 16, 10000 }, { 250000, TID_A, 0, 110, 17, 7000 },
};
static const char *const gen_lib_kernels[] = {
    [10] = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64",
    [11] = "ampere_sgemm_128x64_nn",
    [12] = "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
    [13] = "ncclKernel_AllGather_RING_LL128_Sum_int8_t",
    [14] = "_Z48ncclDevKernel_ReduceScatter_Sum_bf16_RING_SIMPLE24ncclDevKernelArgs4K",
    [15] = "ncclDevKernel_AllReduce_Sum_f32_TREE_LL128",
    [16] = "ncclDevKernel_SendRecv",
    [17] = "relu_kernel",
};
/* Collectives: time, call, api, comm handle, count, dtype, bytes, group depth. */
struct gen_coll { uint64_t t, call, api, comm, count, dtype, bytes, group; };
static const struct gen_coll gen_lib_colls[] = {
    { 110000, 30, ANA_API_NCCL_ALL_REDUCE, 0xC0111, 1 << 20, 7, 4 << 20, 0 },
    { 120000, 31, ANA_API_NCCL_ALL_REDUCE, 0xC0111, 1 << 20, 7, 4 << 20, 0 },
    { 130000, 32, ANA_API_NCCL_ALL_GATHER, 0xC0111, 262144, 0, 262144, 0 },
    { 141000, 34, ANA_API_NCCL_REDUCE_SCATTER, 0xC0111, 524288, 9, 1 << 20, 1 },
    { 142000, 35, ANA_API_NCCL_ALL_REDUCE, 0xC0111, 786432, 7, 3 << 20, 1 },
    { 160000, 37, ANA_API_NCCL_SEND, 0xC0222, 32768, 9, 65536, 0 },
};
/* NVTX: time, thread, op, domain handle, id, name. */
struct gen_range { uint64_t t, tid, op, domain, id; const char *name; };
static const struct gen_range gen_lib_ranges[] = {
    { 4000, TID_B, ANA_RANGE_START, 0, 77, "epoch" },
    { 5000, TID_A, ANA_RANGE_PUSH, 0, 0, "step" },
    { 6000, TID_A, ANA_RANGE_PUSH, 0, 0, "forward" },
    { 7000, TID_B, ANA_RANGE_PUSH, 0xD0D0, 0, "load" },
    { 9000, TID_B, ANA_RANGE_POP, 0xD0D0, 0, "" },
    { 9500, TID_B, ANA_RANGE_PUSH, 0, 0, "never-popped" },
    { 100000, TID_A, ANA_RANGE_POP, 0, 0, "" },
    { 150000, TID_A, ANA_RANGE_MARK, 0, 0, "checkpoint" },
    { 151000, TID_A, ANA_RANGE_MARK, 0, 0, "checkpoint" },
    { 200000, TID_A, ANA_RANGE_POP, 0, 0, "" },
    { 300000, TID_A, ANA_RANGE_POP, 0, 0, "" },
    { 400000, TID_C, ANA_RANGE_END, 0, 77, "" },
    { 410000, TID_C, ANA_RANGE_END, 0, 78, "" },
};

static void gen_lib_gemm(gen *g, const struct gen_gemm *m)
{
    ana_record r = { .kind = ANA_K_GEMM, .tid = TID_A, .time_ns = T0 + m->t };
    r.u.gemm = (ana_rec_gemm){ .api = m->api, .ret = m->ret, .call = m->call, .handle = 0xB1A5,
                               .m = m->m, .n = m->n, .k = m->k, .batch = m->batch,
                               .trans_a = m->ta, .trans_b = m->tb, .a_type = m->at,
                               .b_type = m->bt, .c_type = m->ct, .compute_type = m->compute,
                               .math_mode = m->math, .flops = 2 * m->m * m->n * m->k * m->batch,
                               .dur_ns = 500 };
    gen_add(g, &r);
}

static void gen_lib_launch(gen *g, const struct gen_lib_launch *l)
{
    ana_record r = { .kind = ANA_K_LAUNCH, .tid = l->tid, .time_ns = T0 + l->t };
    r.u.launch = (ana_rec_launch){ .api = ANA_API_LAUNCH_KERNEL, .kernel = l->kernel,
                                   .grid_x = 1, .grid_y = 1, .grid_z = 1, .block_x = 256,
                                   .block_y = 1, .block_z = 1, .dur_ns = 50, .corr = l->corr,
                                   .lib = l->call ? (l->call < 30 ? ANA_LIB_CUBLAS : ANA_LIB_NCCL) : 0,
                                   .call = l->call };
    gen_add(g, &r);
}

static void gen_lib_gpu_kernel(gen *g, const struct gen_lib_launch *l)
{
    ana_record r = { .kind = ANA_K_GPU_KERNEL, .tid = 0, .time_ns = T0 + l->t + 1000 };
    r.u.gpu_kernel = (ana_rec_gpu_kernel){ .corr = l->corr, .dur_ns = l->dur, .kernel = l->kernel,
                                           .device = 0, .context = 1, .stream = 7, .grid_x = 1,
                                           .grid_y = 1, .grid_z = 1, .block_x = 256, .block_y = 1,
                                           .block_z = 1 };
    gen_add(g, &r);
}

static void gen_lib_coll(gen *g, const struct gen_coll *c)
{
    ana_record r = { .kind = ANA_K_COLL, .tid = TID_A, .time_ns = T0 + c->t };
    r.u.coll = (ana_rec_coll){ .api = c->api, .call = c->call, .comm = c->comm, .stream = 0x5,
                               .count = c->count, .dtype = c->dtype, .bytes = c->bytes,
                               .peer = c->api == ANA_API_NCCL_SEND ? 1 : -1, .group = c->group,
                               .seq = c->call, .dur_ns = 300 };
    gen_add(g, &r);
}

static void gen_lib_libcall(gen *g, uint64_t t, uint64_t lib, uint64_t api, uint64_t call,
                            uint64_t arg)
{
    ana_record r = { .kind = ANA_K_LIBCALL, .tid = TID_A, .time_ns = T0 + t };
    r.u.libcall = (ana_rec_libcall){ .lib = lib, .api = api, .call = call, .handle = 0xB1A5,
                                     .arg = arg, .dur_ns = 100 };
    gen_add(g, &r);
}

static void gen_lib_comm(gen *g, uint64_t t, uint64_t api, uint64_t call, uint64_t comm,
                         uint64_t comm_id, int64_t rank, int64_t size, uint64_t parent,
                         int64_t color)
{
    ana_record r = { .kind = ANA_K_COMM, .tid = TID_A, .time_ns = T0 + t };
    r.u.comm = (ana_rec_comm){ .api = api, .call = call, .comm = comm, .comm_id = comm_id,
                               .rank = rank, .size = size, .device = 0, .parent = parent,
                               .color = color, .dur_ns = 1000 };
    gen_add(g, &r);
}

static void gen_lib_label(gen *g, uint64_t t, uint64_t what, uint64_t id, uint64_t size,
                          const char *name)
{
    ana_record r = { .kind = ANA_K_LABEL, .tid = TID_A, .time_ns = T0 + t };
    r.u.label = (ana_rec_label){ .what = what, .id = id, .size = size,
                                 .name = { name, (uint32_t)strlen(name) } };
    gen_add(g, &r);
}

static void gen_lib_alloc(gen *g, uint64_t t, uint64_t ptr, uint64_t size, uint64_t lib,
                          uint64_t call)
{
    ana_record r = { .kind = ANA_K_ALLOC, .tid = TID_A, .time_ns = T0 + t };
    r.u.alloc = (ana_rec_alloc){ .api = ANA_API_MALLOC, .ptr = ptr, .size = size, .dur_ns = 100,
                                 .lib = lib, .call = call };
    gen_add(g, &r);
}

/* Memory: user 8 MiB @+1000, cuBLAS workspace 4 MiB in GEMM call 1 @+10050, NCCL 2 MiB and
 * 1 MiB in ncclCommInitRank (call 20) @+2100/+2200 -> peak 15 MiB at +10050; the user's
 * 8 MiB and NCCL's 1 MiB are freed @+500000/+500100. Regions: "activations" over the user
 * buffer, "nccl-pool" over both NCCL buffers. */
static void gen_libs_body(gen *g)
{
    const uint64_t MiB = 1 << 20;
    ana_record r;
    gen_info(g, "cupti", "on");
    gen_thread(g, TID_A, "main");
    for (size_t i = 0; i < sizeof(gen_lib_kernels) / sizeof(gen_lib_kernels[0]); i++)
        if (gen_lib_kernels[i])
            gen_kernel(g, i, gen_lib_kernels[i]);
    gen_lib_label(g, 500, ANA_LABEL_THREAD, TID_A, 0, "trainer");
    gen_lib_label(g, 600, ANA_LABEL_DOMAIN, 0xD0D0, 0, "dataloader");
    gen_lib_label(g, 700, ANA_LABEL_MEM_REGION, 0x10000000, 16 * MiB, "activations");
    gen_lib_label(g, 800, ANA_LABEL_MEM_REGION, 0x30000000, 8 * MiB, "nccl-pool");
    gen_lib_alloc(g, 1000, 0x10000000, 8 * MiB, 0, 0);
    gen_lib_comm(g, 2000, ANA_API_NCCL_COMM_INIT_RANK, 20, 0xC0111, 0x1234abcd5678ef00ull, 1, 4, 0, 0);
    gen_lib_alloc(g, 2100, 0x30000000, 2 * MiB, ANA_LIB_NCCL, 20);
    gen_lib_alloc(g, 2200, 0x30400000, MiB, ANA_LIB_NCCL, 20);
    gen_lib_comm(g, 3000, ANA_API_NCCL_COMM_SPLIT, 21, 0xC0222, 0x99, 0, 2, 0xC0111, 1);
    gen_lib_libcall(g, 3500, ANA_LIB_CUBLAS, ANA_API_CUBLAS_CREATE, 9, 0);
    gen_lib_alloc(g, 10050, 0x20000000, 4 * MiB, ANA_LIB_CUBLAS, 1);
    for (size_t i = 0; i < sizeof(gen_lib_gemms) / sizeof(gen_lib_gemms[0]); i++)
        gen_lib_gemm(g, &gen_lib_gemms[i]);
    for (size_t i = 0; i < sizeof(gen_lib_colls) / sizeof(gen_lib_colls[0]); i++)
        gen_lib_coll(g, &gen_lib_colls[i]);
    gen_lib_libcall(g, 140000, ANA_LIB_NCCL, ANA_API_NCCL_GROUP_START, 33, 1);
    gen_lib_libcall(g, 143000, ANA_LIB_NCCL, ANA_API_NCCL_GROUP_END, 36, 0);
    for (size_t i = 0; i < sizeof(gen_lib_launches) / sizeof(gen_lib_launches[0]); i++)
        gen_lib_launch(g, &gen_lib_launches[i]);
    for (size_t i = 0; i < sizeof(gen_lib_ranges) / sizeof(gen_lib_ranges[0]); i++) {
        const struct gen_range *q = &gen_lib_ranges[i];
        r = (ana_record){ .kind = ANA_K_RANGE, .tid = q->tid, .time_ns = T0 + q->t };
        r.u.range = (ana_rec_range){ .op = q->op, .domain = q->domain, .id = q->id,
                                     .name = { q->name, (uint32_t)strlen(q->name) } };
        gen_add(g, &r);
    }
    gen_corr_free(g, 500000, ANA_API_FREE, 0x10000000, 0);
    gen_corr_free(g, 500100, ANA_API_FREE, 0x30400000, 0);
    gen_lib_label(g, 600000, ANA_LABEL_DOMAIN, 0xD0D0, 0, ""); /* nvtxDomainDestroy */
    gen_flush(g); /* GPU records later, as CUPTI delivers them */
    for (size_t i = 0; i < sizeof(gen_lib_launches) / sizeof(gen_lib_launches[0]); i++)
        if (gen_lib_launches[i].dur)
            gen_lib_gpu_kernel(g, &gen_lib_launches[i]);
}

/* "oom" and "oom-frag" (tests/cli/test_oom.py): a trainer in NVTX "step" ranges whose
 * launches name their phase (linear_forward_kernel, linear_backward_kernel,
 * adam_update_kernel). cudaMalloc 4 MiB @+1000 and 8 MiB @+1100 (stack 1) live on; each of
 * steps 1 and 2 (push @+10000/+30000, pop 10000 ns later) allocates 2 MiB (stack 2) after
 * its first forward launch and frees it after its backward launch. Step 3 is pushed
 * @+50000 and never popped: forward launch, 8 MiB (stack 2) @+51500, a 4 MiB cache block
 * @+51600, backward launch @+53000, then cudaMalloc 96 MiB fails @+53500 (free 40 MiB of
 * 64 MiB), the cache block is freed @+53600 and cudaMalloc 64 MiB fails @+53700 (stack 1;
 * free 44 MiB of 64 MiB): exhaustion, 20 MiB short, 20 MiB live in 3 allocations; no END
 * (the process was killed). "oom-frag": instead, cudaMalloc 16 MiB fails inside step 2
 * @+34500, before its backward launch (free 32 MiB of 64 MiB: fragmentation), 14 MiB live;
 * step 3 holds no failure. */
static void gen_oom_range(gen *g, uint64_t t, uint64_t op)
{
    ana_record r = { .kind = ANA_K_RANGE, .tid = TID_A, .time_ns = T0 + t };
    r.u.range = (ana_rec_range){ .op = op, .name = { op == ANA_RANGE_PUSH ? "step" : "",
                                                     op == ANA_RANGE_PUSH ? 4 : 0 } };
    gen_add(g, &r);
}

static void gen_oom_body(gen *g, int frag)
{
    const uint64_t MiB = 1 << 20;
    uint64_t site = (uint64_t)(uintptr_t)&gen_marker_site + 1;
    uint64_t other = (uint64_t)(uintptr_t)&gen_marker_other + 1;
    gen_thread(g, TID_A, "main");
    gen_stack(g, TID_A, T0 + 900, 1, &site, 1);
    gen_stack(g, TID_A, T0 + 900, 2, &other, 1);
    gen_kernel(g, 1, "linear_forward_kernel");
    gen_kernel(g, 2, "linear_backward_kernel");
    gen_kernel(g, 3, "adam_update_kernel");
    gen_alloc(g, TID_A, T0 + 1000, ANA_API_MALLOC, 0, 0x10000000, 4 * MiB, 1);
    gen_alloc(g, TID_A, T0 + 1100, ANA_API_MALLOC, 0, 0x11000000, 8 * MiB, 1);
    for (uint64_t s = 0; s < 2; s++) {
        uint64_t b = 10000 + 20000 * s, act = 0x20000000 + s * 0x1000000;
        gen_oom_range(g, b, ANA_RANGE_PUSH);
        gen_launch(g, T0 + b + 1000, 1, 0);
        gen_alloc(g, TID_A, T0 + b + 1500, ANA_API_MALLOC, 0, act, 2 * MiB, 2);
        gen_launch(g, T0 + b + 2000, 1, 0);
        if (frag && s == 1) {
            gen_alloc(g, TID_A, T0 + b + 4500, ANA_API_MALLOC, 2, 0, 16 * MiB, 1);
            gen_meminfo(g, TID_A, T0 + b + 4501, 32 * MiB, 64 * MiB);
        }
        gen_launch(g, T0 + b + 5000, 2, 0);
        gen_free(g, TID_A, T0 + b + 6000, ANA_API_FREE, 0, act);
        gen_launch(g, T0 + b + 8000, 3, 0);
        gen_oom_range(g, b + 10000, ANA_RANGE_POP);
    }
    gen_oom_range(g, 50000, ANA_RANGE_PUSH);
    gen_launch(g, T0 + 51000, 1, 0);
    gen_alloc(g, TID_A, T0 + 51500, ANA_API_MALLOC, 0, 0x30000000, 8 * MiB, 2);
    gen_alloc(g, TID_A, T0 + 51600, ANA_API_MALLOC, 0, 0x31000000, 4 * MiB, 2);
    gen_launch(g, T0 + 53000, 2, 0);
    if (frag)
        return;
    gen_alloc(g, TID_A, T0 + 53500, ANA_API_MALLOC, 2, 0, 96 * MiB, 1);
    gen_meminfo(g, TID_A, T0 + 53501, 40 * MiB, 64 * MiB);
    gen_free(g, TID_A, T0 + 53600, ANA_API_FREE, 0, 0x31000000);
    gen_alloc(g, TID_A, T0 + 53700, ANA_API_MALLOC, 2, 0, 64 * MiB, 1);
    gen_meminfo(g, TID_A, T0 + 53701, 44 * MiB, 64 * MiB);
}

static gen gen_open(const char *path)
{
    gen g = { .path = path };
    g.tw = ana_tw_open(path, 3);
    if (!g.tw)
        die(path);
    return g;
}

static void gen_close(gen *g)
{
    gen_flush(g);
    if (ana_tw_close(g->tw) != 0)
        die("close");
    ana_chunkbuf_free(&g->cb);
}

static uint64_t gen_file_size(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        die(path);
    return (uint64_t)st.st_size;
}

static void gen_patch(const char *path, long off, const void *bytes, size_t n)
{
    FILE *f = fopen(path, "r+b");
    if (!f || fseek(f, off, SEEK_SET) != 0 || fwrite(bytes, 1, n, f) != n || fclose(f) != 0)
        die(path);
}

/* Appends the first `keep` bytes of a chunk (an ALLOC and the END) numbered seq to out:
 * what a process killed in the middle of a write(2) leaves. keep = 0: half the chunk. */
static uint64_t gen_torn_tail(const char *out, uint64_t seq, size_t keep)
{
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s.tail", out);
    gen t = gen_open(tmp);
    gen_alloc(&t, TID_A, T0 + 9500, ANA_API_MALLOC, 0, 0x7000, 1 << 20, 0);
    gen_end(&t, T0 + 10000);
    gen_close(&t);
    uint64_t size = gen_file_size(tmp) - ANA_HEADER_SIZE;
    uint8_t *chunk = malloc(size);
    FILE *f = fopen(tmp, "rb");
    if (!chunk || !f || fseek(f, ANA_HEADER_SIZE, SEEK_SET) != 0 || fread(chunk, 1, size, f) != size)
        die(tmp);
    fclose(f);
    unlink(tmp);
    uint32_t seq32 = (uint32_t)seq;
    memcpy(chunk + 12, &seq32, 4);
    if (!keep || keep >= size)
        keep = size / 2;
    f = fopen(out, "ab");
    if (!f || fwrite(chunk, 1, keep, f) != keep || fclose(f) != 0)
        die(out);
    free(chunk);
    return keep;
}

static int gen_scenario(const char *name, const char *out, uint64_t n)
{
    gen g = gen_open(out);
    gen_header(&g, name);
    if (!strcmp(name, "churn")) {
        gen_churn_body(&g, n);
        gen_end(&g, T0 + 1000 + 10 * n + 10);
        gen_close(&g);
        return 0;
    }
    if (!strcmp(name, "empty")) {
        ana_chunkbuf_reset(&g.cb); /* the header and no chunk at all */
        gen_close(&g);
        return 0;
    }
    if (!strcmp(name, "gpu")) {
        gen_gpu_body(&g);
        gen_end(&g, T0 + 200000);
        gen_close(&g);
        return 0;
    }
    if (!strcmp(name, "libs")) {
        gen_libs_body(&g);
        gen_end(&g, T0 + 600000);
        gen_close(&g);
        return 0;
    }
    if (!strcmp(name, "cupti-off")) { /* "basic" with the collector's state recorded */
        gen_info(&g, "cupti", "unavailable: libcupti.so.13 not found");
        gen_basic_body(&g);
        gen_end(&g, T0 + 10000);
        gen_close(&g);
        return 0;
    }
    if (!strcmp(name, "oom") || !strcmp(name, "oom-frag")) {
        gen_oom_body(&g, !strcmp(name, "oom-frag"));
        gen_close(&g); /* no END: the process was killed after the failure */
        return 0;
    }
    if (!strcmp(name, "failed")) {
        gen_failed_body(&g);
        gen_end(&g, T0 + 10000);
        gen_close(&g);
        return 0;
    }
    if (!strcmp(name, "unknown-kind")) {
        gen_unknown(&g, TID_A, 200, 17);
        gen_unknown(&g, TID_B, 4000, 0);
    }
    gen_basic_body(&g);
    if (!strcmp(name, "truncated") || !strncmp(name, "torn", 4)) {
        gen_flush(&g);
        uint64_t chunks = ana_tw_chunks(g.tw);
        gen_close(&g);
        uint64_t whole = gen_file_size(out);
        if (!strncmp(name, "torn", 4)) {
            uint64_t torn = gen_torn_tail(out, chunks, !strcmp(name, "torn-header") ? 10 : 0);
            printf("torn_bytes=%llu\n", (unsigned long long)torn);
        }
        printf("complete_bytes=%llu\n", (unsigned long long)whole);
        return 0;
    }
    gen_end(&g, T0 + 10000);
    gen_close(&g);
    if (!strcmp(name, "newer-major")) {
        uint8_t major[2] = { ANA_FORMAT_MAJOR + 1, 0 };
        gen_patch(out, 8, major, 2);
    } else if (!strcmp(name, "corrupt")) {
        uint8_t junk[8] = { 0xde, 0xad, 0xbe, 0xef, 0xde, 0xad, 0xbe, 0xef };
        gen_patch(out, ANA_HEADER_SIZE + ANA_CHUNK_HEADER_SIZE + 8, junk, sizeof(junk));
        printf("chunk_offset=%d\n", ANA_HEADER_SIZE);
    } else if (strcmp(name, "basic") != 0 && strcmp(name, "unknown-kind") != 0) {
        unlink(out);
        return -1;
    }
    return 0;
}

static const char *const gen_scenarios[] = {
    "basic", "failed", "empty", "truncated", "torn", "torn-header", "unknown-kind",
    "newer-major", "corrupt", "churn", "gpu", "cupti-off", "libs", "oom", "oom-frag",
};

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--list")) {
        for (size_t i = 0; i < sizeof(gen_scenarios) / sizeof(gen_scenarios[0]); i++)
            puts(gen_scenarios[i]);
        return 0;
    }
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: gen_trace SCENARIO OUT [N]   (gen_trace --list)\n");
        return 2;
    }
    uint64_t n = argc == 4 ? strtoull(argv[3], NULL, 10) : 1000000;
    if (gen_scenario(argv[1], argv[2], n) != 0) {
        fprintf(stderr, "gen_trace: unknown scenario '%s' (gen_trace --list)\n", argv[1]);
        return 2;
    }
    return 0;
}
