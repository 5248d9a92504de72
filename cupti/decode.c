/* decode.c — CUPTI activity records -> GPU_KERNEL / GPU_MEMCPY / GPU_MEMSET /
 * GPU_MEMORY / GPU_POOL records (docs/trace-format.md, "GPU activity and correlation").
 *
 * Collector thread only. Calls no CUPTI function. The record structs are those of the
 * CUDA 13 headers for the kinds cupti.c enables: CONCURRENT_KERNEL -> Kernel10, MEMCPY ->
 * Memcpy6, MEMCPY2 -> MemcpyPtoP4, MEMSET -> Memset4, MEMORY2 -> Memory4, MEMORY_POOL ->
 * MemoryPool3. A kernel's name pointer is CUPTI's and only valid while the buffer is
 * being read: it is interned (copied) at once. Timestamps 0 mean "unknown" and stay 0.
 *
 * Called by cupti.c (each buffer, on the writer thread) and the unit tests; calls only the
 * core's kernel names (ana_kernel_intern_name). */
#include "cupti_int.h"

static uint64_t at(uint64_t t, int64_t offset_ns) { return t ? t + (uint64_t)offset_ns : 0; }
static uint64_t span(uint64_t start, uint64_t end) { return start && end > start ? end - start : 0; }

static void kernel(const CUpti_ActivityKernel10 *k, int64_t off, ana_gpu_put put, void *arg)
{
    ana_record r = { .kind = ANA_K_GPU_KERNEL, .time_ns = at(k->start, off) };
    r.u.gpu_kernel = (ana_rec_gpu_kernel){
        .corr = k->correlationId, .dur_ns = span(k->start, k->end),
        .kernel = ana_kernel_intern_name(k->name), .device = k->deviceId,
        .context = k->contextId, .stream = k->streamId,
        .grid_x = (uint64_t)k->gridX, .grid_y = (uint64_t)k->gridY, .grid_z = (uint64_t)k->gridZ,
        .block_x = (uint64_t)k->blockX, .block_y = (uint64_t)k->blockY, .block_z = (uint64_t)k->blockZ,
        .shmem_static = (uint64_t)k->staticSharedMemory,
        .shmem_dynamic = (uint64_t)k->dynamicSharedMemory, .regs = k->registersPerThread,
        .graph = k->graphId, .graph_node = k->graphNodeId };
    put(&r, arg);
}

static void memcpy_rec(const CUpti_ActivityMemcpy6 *m, int64_t off, ana_gpu_put put, void *arg)
{
    ana_record r = { .kind = ANA_K_GPU_MEMCPY, .time_ns = at(m->start, off) };
    r.u.gpu_memcpy = (ana_rec_gpu_memcpy){
        .corr = m->correlationId, .dur_ns = span(m->start, m->end), .bytes = m->bytes,
        .copy_kind = m->copyKind, .src_kind = m->srcKind, .dst_kind = m->dstKind,
        .flags = (m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) ? ANA_GPU_FLAG_ASYNC : 0,
        .device = m->deviceId, .context = m->contextId, .stream = m->streamId,
        .src_device = -1, .dst_device = -1, .graph = m->graphId, .graph_node = m->graphNodeId };
    put(&r, arg);
}

static void peer(const CUpti_ActivityMemcpyPtoP4 *m, int64_t off, ana_gpu_put put, void *arg)
{
    ana_record r = { .kind = ANA_K_GPU_MEMCPY, .time_ns = at(m->start, off) };
    r.u.gpu_memcpy = (ana_rec_gpu_memcpy){
        .corr = m->correlationId, .dur_ns = span(m->start, m->end), .bytes = m->bytes,
        .copy_kind = m->copyKind, .src_kind = m->srcKind, .dst_kind = m->dstKind,
        .flags = (m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) ? ANA_GPU_FLAG_ASYNC : 0,
        .device = m->deviceId, .context = m->contextId, .stream = m->streamId,
        .src_device = m->srcDeviceId, .dst_device = m->dstDeviceId, .graph = m->graphId,
        .graph_node = m->graphNodeId };
    put(&r, arg);
}

static void memset_rec(const CUpti_ActivityMemset4 *m, int64_t off, ana_gpu_put put, void *arg)
{
    ana_record r = { .kind = ANA_K_GPU_MEMSET, .time_ns = at(m->start, off) };
    r.u.gpu_memset = (ana_rec_gpu_memset){
        .corr = m->correlationId, .dur_ns = span(m->start, m->end), .bytes = m->bytes,
        .value = m->value, .mem_kind = m->memoryKind,
        .flags = (m->flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC) ? ANA_GPU_FLAG_ASYNC : 0,
        .device = m->deviceId, .context = m->contextId, .stream = m->streamId,
        .graph = m->graphId, .graph_node = m->graphNodeId };
    put(&r, arg);
}

static void memory(const CUpti_ActivityMemory4 *m, int64_t off, ana_gpu_put put, void *arg)
{
    ana_record r = { .kind = ANA_K_GPU_MEMORY, .time_ns = at(m->timestamp, off) };
    r.u.gpu_memory = (ana_rec_gpu_memory){
        .corr = m->correlationId, .op = (uint64_t)m->memoryOperationType,
        .mem_kind = (uint64_t)m->memoryKind, .address = m->address, .bytes = m->bytes,
        .device = m->deviceId, .context = m->contextId, .stream = m->streamId,
        .async = m->isAsync, .pool_type = (uint64_t)m->memoryPoolConfig.memoryPoolType,
        .pool_address = m->memoryPoolConfig.address, .pc = m->PC };
    put(&r, arg);
}

static void pool(const CUpti_ActivityMemoryPool3 *p, int64_t off, ana_gpu_put put, void *arg)
{
    ana_record r = { .kind = ANA_K_GPU_POOL, .time_ns = at(p->timestamp, off) };
    r.u.gpu_pool = (ana_rec_gpu_pool){
        .corr = p->correlationId, .op = (uint64_t)p->memoryPoolOperationType,
        .pool_type = (uint64_t)p->memoryPoolType, .address = p->address, .size = p->size,
        .release_threshold = p->releaseThreshold, .utilized = p->utilizedSize,
        .device = p->deviceId };
    put(&r, arg);
}

int ana_cupti_decode(const CUpti_Activity *a, int64_t offset_ns, ana_gpu_put put, void *arg)
{
    switch (a->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        kernel((const CUpti_ActivityKernel10 *)a, offset_ns, put, arg);
        return 1;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
        memcpy_rec((const CUpti_ActivityMemcpy6 *)a, offset_ns, put, arg);
        return 1;
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
        peer((const CUpti_ActivityMemcpyPtoP4 *)a, offset_ns, put, arg);
        return 1;
    case CUPTI_ACTIVITY_KIND_MEMSET:
        memset_rec((const CUpti_ActivityMemset4 *)a, offset_ns, put, arg);
        return 1;
    case CUPTI_ACTIVITY_KIND_MEMORY2:
        memory((const CUpti_ActivityMemory4 *)a, offset_ns, put, arg);
        return 1;
    case CUPTI_ACTIVITY_KIND_MEMORY_POOL:
        pool((const CUpti_ActivityMemoryPool3 *)a, offset_ns, put, arg);
        return 1;
    default:
        return 0; /* a kind the program enabled for itself, or one we do not keep */
    }
}
