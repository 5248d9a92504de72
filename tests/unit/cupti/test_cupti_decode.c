/* CUPTI activity records -> GPU_* records (cupti/decode.c), and the kernel-name
 * interning it relies on (kernels.c). Records are built here field by field, as CUPTI would
 * write them; the expected values are the ones written in. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "cupti_int.h"

ana_cupti_fns ana_cupti_fn;
_Atomic int ana_cupti_state;

#define MAXR 8
static ana_record got[MAXR];
static int n_got;

static void put(ana_record *r, void *arg)
{
    (void)arg;
    cr_assert_lt(n_got, MAXR);
    got[n_got++] = *r;
}

static void reset(void) { n_got = 0; }

static struct { uint64_t id, fn; char name[64]; } defs[8];
static int nd;

static void on_def(uint64_t id, uint64_t fn, const char *nm, void *arg)
{
    (void)arg;
    cr_assert_lt(nd, 8);
    defs[nd].id = id, defs[nd].fn = fn;
    snprintf(defs[nd].name, sizeof(defs[nd].name), "%s", nm);
    nd++;
}

Test(cupti_decode, kernel_times_shift_by_the_offset_and_names_are_interned)
{
    reset();
    static char fn_a, fn_b;
    ana_kernel_register(&fn_a, "_Z4gemmPfS_");
    ana_kernel_register(&fn_b, "_Z4reluPf");
    uint64_t relu = ana_kernel_id_of_fn(&fn_b);
    cr_assert_gt(relu, 0);

    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof(k));
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.start = 1000, k.end = 1750;
    k.deviceId = 0, k.contextId = 1, k.streamId = 7, k.correlationId = 42;
    k.gridX = 16, k.gridY = 2, k.gridZ = 1, k.blockX = 256, k.blockY = 1, k.blockZ = 1;
    k.staticSharedMemory = 128, k.dynamicSharedMemory = 4096, k.registersPerThread = 32;
    k.graphId = 3, k.graphNodeId = 99;
    char name[] = "_Z4reluPf";
    k.name = name;
    cr_assert_eq(ana_cupti_decode((CUpti_Activity *)&k, -400, put, NULL), 1);
    cr_assert_eq(n_got, 1);
    const ana_record *r = &got[0];
    cr_assert_eq(r->kind, ANA_K_GPU_KERNEL);
    cr_assert_eq(r->time_ns, 600);
    cr_assert_eq(r->u.gpu_kernel.dur_ns, 750);
    cr_assert_eq(r->u.gpu_kernel.corr, 42);
    cr_assert_eq(r->u.gpu_kernel.kernel, relu, "a registered name keeps its id");
    cr_assert_eq(r->u.gpu_kernel.stream, 7);
    cr_assert_eq(r->u.gpu_kernel.grid_x, 16);
    cr_assert_eq(r->u.gpu_kernel.grid_y, 2);
    cr_assert_eq(r->u.gpu_kernel.block_x, 256);
    cr_assert_eq(r->u.gpu_kernel.shmem_static, 128);
    cr_assert_eq(r->u.gpu_kernel.shmem_dynamic, 4096);
    cr_assert_eq(r->u.gpu_kernel.regs, 32);
    cr_assert_eq(r->u.gpu_kernel.graph, 3);
    cr_assert_eq(r->u.gpu_kernel.graph_node, 99);

    /* A name nobody registered: a new id, the same one the next time; the name is copied. */
    char other[] = "triton_kernel_0";
    k.name = other;
    ana_cupti_decode((CUpti_Activity *)&k, 0, put, NULL);
    strcpy(other, "overwritten!!!!");
    char again[] = "triton_kernel_0";
    k.name = again;
    ana_cupti_decode((CUpti_Activity *)&k, 0, put, NULL);
    cr_assert_eq(n_got, 3);
    uint64_t tid = got[1].u.gpu_kernel.kernel;
    cr_assert_gt(tid, relu);
    cr_assert_eq(got[2].u.gpu_kernel.kernel, tid);

    /* The new entry is defined with host_fn 0 and its own copy of the name. */
    nd = 0;
    ana_kernels_emit_new(on_def, NULL);
    cr_assert_eq(nd, 3);
    cr_assert_eq(defs[2].id, tid);
    cr_assert_eq(defs[2].fn, 0);
    cr_assert_str_eq(defs[2].name, "triton_kernel_0");
    cr_assert_eq(defs[0].fn, (uint64_t)(uintptr_t)&fn_a);
}

Test(cupti_decode, copies_sets_and_peer_copies)
{
    reset();
    CUpti_ActivityMemcpy6 m;
    memset(&m, 0, sizeof(m));
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
    m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED, m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m.flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
    m.bytes = 1 << 20, m.start = 5000, m.end = 9000, m.streamId = 13, m.correlationId = 77;
    ana_cupti_decode((CUpti_Activity *)&m, 0, put, NULL);

    CUpti_ActivityMemcpyPtoP4 p;
    memset(&p, 0, sizeof(p));
    p.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
    p.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
    p.bytes = 4096, p.start = 10, p.end = 30, p.srcDeviceId = 1, p.dstDeviceId = 2, p.correlationId = 78;
    ana_cupti_decode((CUpti_Activity *)&p, 0, put, NULL);

    CUpti_ActivityMemset4 s;
    memset(&s, 0, sizeof(s));
    s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    s.value = 0xab, s.bytes = 512, s.start = 100, s.end = 160, s.correlationId = 79;
    s.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    ana_cupti_decode((CUpti_Activity *)&s, 0, put, NULL);

    cr_assert_eq(n_got, 3);
    cr_assert_eq(got[0].kind, ANA_K_GPU_MEMCPY);
    cr_assert_eq(got[0].time_ns, 5000);
    cr_assert_eq(got[0].u.gpu_memcpy.dur_ns, 4000);
    cr_assert_eq(got[0].u.gpu_memcpy.bytes, 1 << 20);
    cr_assert_eq(got[0].u.gpu_memcpy.copy_kind, ANA_COPY_HTOD);
    cr_assert_eq(got[0].u.gpu_memcpy.src_kind, ANA_MEMKIND_PINNED);
    cr_assert_eq(got[0].u.gpu_memcpy.dst_kind, ANA_MEMKIND_DEVICE);
    cr_assert_eq(got[0].u.gpu_memcpy.flags, ANA_GPU_FLAG_ASYNC);
    cr_assert_eq(got[0].u.gpu_memcpy.src_device, -1);
    cr_assert_eq(got[0].u.gpu_memcpy.corr, 77);
    cr_assert_eq(got[1].u.gpu_memcpy.copy_kind, ANA_COPY_PTOP);
    cr_assert_eq(got[1].u.gpu_memcpy.src_device, 1);
    cr_assert_eq(got[1].u.gpu_memcpy.dst_device, 2);
    cr_assert_eq(got[1].u.gpu_memcpy.dur_ns, 20);
    cr_assert_eq(got[1].u.gpu_memcpy.flags, 0);
    cr_assert_eq(got[2].kind, ANA_K_GPU_MEMSET);
    cr_assert_eq(got[2].u.gpu_memset.value, 0xab);
    cr_assert_eq(got[2].u.gpu_memset.bytes, 512);
    cr_assert_eq(got[2].u.gpu_memset.dur_ns, 60);
    cr_assert_eq(got[2].u.gpu_memset.mem_kind, ANA_MEMKIND_DEVICE);
}

Test(cupti_decode, memory_pools_unknown_kinds_and_unknown_times)
{
    reset();
    CUpti_ActivityMemory4 m;
    memset(&m, 0, sizeof(m));
    m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
    m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
    m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m.address = 0x7f0000001000, m.bytes = 3 << 20, m.timestamp = 2000, m.correlationId = 5;
    m.isAsync = 1, m.memoryPoolConfig.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
    m.memoryPoolConfig.address = 0xdead0000;
    ana_cupti_decode((CUpti_Activity *)&m, 1000, put, NULL);

    CUpti_ActivityMemoryPool3 p;
    memset(&p, 0, sizeof(p));
    p.kind = CUPTI_ACTIVITY_KIND_MEMORY_POOL;
    p.memoryPoolOperationType = CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED;
    p.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
    p.address = 0xdead0000, p.size = 1 << 30, p.releaseThreshold = 1 << 20, p.utilizedSize = 4096;
    p.timestamp = 0; /* unknown stays unknown, whatever the offset */
    ana_cupti_decode((CUpti_Activity *)&p, 1000, put, NULL);

    CUpti_ActivityKind other = CUPTI_ACTIVITY_KIND_RUNTIME;
    cr_assert_eq(ana_cupti_decode((CUpti_Activity *)&other, 0, put, NULL), 0);

    cr_assert_eq(n_got, 2);
    cr_assert_eq(got[0].kind, ANA_K_GPU_MEMORY);
    cr_assert_eq(got[0].time_ns, 3000);
    cr_assert_eq(got[0].u.gpu_memory.op, ANA_GPU_MEM_RELEASE);
    cr_assert_eq(got[0].u.gpu_memory.address, 0x7f0000001000);
    cr_assert_eq(got[0].u.gpu_memory.bytes, 3 << 20);
    cr_assert_eq(got[0].u.gpu_memory.async, 1);
    cr_assert_eq(got[0].u.gpu_memory.pool_type, 1);
    cr_assert_eq(got[0].u.gpu_memory.pool_address, 0xdead0000);
    cr_assert_eq(got[1].kind, ANA_K_GPU_POOL);
    cr_assert_eq(got[1].time_ns, 0);
    cr_assert_eq(got[1].u.gpu_pool.op, 3);
    cr_assert_eq(got[1].u.gpu_pool.size, 1 << 30);
    cr_assert_eq(got[1].u.gpu_pool.release_threshold, 1 << 20);
    cr_assert_eq(got[1].u.gpu_pool.utilized, 4096);
}
