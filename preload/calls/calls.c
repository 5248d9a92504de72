/* calls.c — the record builders of calls.h and the per-thread device: what a recorded
 * CUDA call becomes, the same whether a hook (preload/hooks/) or CUPTI's callback
 * (cupti/calls.c) saw the call; both call it. It calls the core (the bracket, the rings,
 * stacks, capture windows, the writer's forced flush after a failed allocation), kargs.c
 * and libctx.c, and the CUDA runtime's cudaMemGetInfo and cudaGetDeviceProperties. */
#include "calls.h"
#include "preload.h"

#include <errno.h>
#include <string.h>

static __thread int tls_device __attribute__((tls_model("initial-exec")));
static _Atomic uint64_t devices_recorded; /* bit d: a DEVICE record for ordinal d exists */

static uint64_t dev_bit(int d) { return 1ull << ((unsigned)d & 63); }

int ana_current_device(void) { return tls_device; }
void ana_set_current_device(int dev) { tls_device = dev; }

/* Ends the timed part of a call (before the stack walk, which is ours, not the call's) and
 * captures the stack; saves the errno the real call left. timed: the record's dur_ns is
 * measured (a second clock reading); else it is 0, "not measured" (docs/trace-format.md).
 * Allocations, frees and launches are timed only with ANATOMIST_CALL_DURATIONS=1: no
 * analysis reads their duration, and a second clock reading is a large part of what a
 * hook adds to the call (docs/overhead.md). Copies, sets and VMM calls are always timed. */
static inline __attribute__((always_inline)) void measure(ana_call *c, int timed)
{
    c->saved_errno = errno;
    c->dur = timed ? ana_now_ns() - c->t0 : 0;
    c->corr = ana_tls_corr;
    c->stack = ana_cfg.stacks ? ana_stack_capture() : 0;
}
/* A record of `kind` at the call's start. Only the header is set: the builder fills its
 * kind's member of `u` (zeroing the whole union would cost more than the encoding). */
#define CALL_RECORD(rec, kind_, c) \
    ana_record rec;                \
    rec.kind = (kind_);            \
    rec.tid = 0;                   \
    rec.time_ns = (c)->t0

/* The library of an allocation, free or VMM record: the thread's library context
 * (ana_tls_lib, which the other records carry as it is), else the library the caller's
 * code lies in. */
static uint64_t alloc_lib_of(const ana_call *c)
{
    return ana_tls_lib ? ana_tls_lib : ana_lib_of_pc(c->caller);
}

void ana_record_device(int ordinal, const struct cudaDeviceProp *p)
{
    ana_thread *t = ana_thread_self();
    if (!t)
        return;
    ana_record rec = { .kind = ANA_K_DEVICE, .time_ns = ana_now_ns() };
    size_t nl = strnlen(p->name, sizeof(p->name));
    rec.u.device = (ana_rec_device){ ordinal, { p->name, (uint32_t)nl }, p->totalGlobalMem,
                                     (uint64_t)p->multiProcessorCount, (uint64_t)p->major,
                                     (uint64_t)p->minor };
    ana_emit(t, &rec);
}

void ana_record_device_once(int ordinal, const struct cudaDeviceProp *p)
{
    if (!(atomic_fetch_or(&devices_recorded, dev_bit(ordinal)) & dev_bit(ordinal)))
        ana_record_device(ordinal, p);
}

/* After an allocation failed: what the device says is free, and the record on disk now. */
static void after_failed_alloc(ana_call *c)
{
    static cudaError_t (*mem_get_info)(size_t *, size_t *);
    if (!mem_get_info)
        mem_get_info = (cudaError_t(*)(size_t *, size_t *))ana_resolve("cudaMemGetInfo");
    size_t free_b = 0, total_b = 0;
    if (mem_get_info && mem_get_info(&free_b, &total_b) == cudaSuccess) {
        ana_record m = { .kind = ANA_K_MEMINFO, .time_ns = ana_now_ns() };
        m.u.meminfo = (ana_rec_meminfo){ ana_current_device(), free_b, total_b, ANA_MEMINFO_FAILED_ALLOC };
        ana_emit(c->t, &m);
    }
    ana_collector_flush_now(200);
}

/* Once per process, after a successful allocation (a working context): the device. */
static void maybe_record_device(void)
{
    int dev = ana_current_device();
    if (atomic_load_explicit(&devices_recorded, memory_order_relaxed) & dev_bit(dev))
        return;
    static cudaError_t (*get_props)(struct cudaDeviceProp *, int);
    if (!get_props)
        get_props = (cudaError_t(*)(struct cudaDeviceProp *, int))ana_resolve("cudaGetDeviceProperties");
    struct cudaDeviceProp p;
    if (get_props && get_props(&p, dev) == cudaSuccess)
        ana_record_device_once(dev, &p);
    else
        atomic_fetch_or(&devices_recorded, dev_bit(dev)); /* do not ask again */
}

/* A call made outside every capture window: no record (capture.c). */
static void outside(ana_call *c)
{
    c->saved_errno = errno;
    ana_leave(c);
}

/* Appends rec and ends the bracket. */
static void finish(ana_call *c, ana_record *rec)
{
    ana_emit(c->t, rec);
    ana_leave(c);
}

void ana_rec_alloc_done(ana_call *c, uint32_t api, int r, uint64_t ptr, uint64_t size, int64_t device,
                        uint64_t stream, uint64_t flags)
{
    measure(c, ana_cfg.call_durations);
    CALL_RECORD(rec, ANA_K_ALLOC, c);
    rec.u.alloc = (ana_rec_alloc){ api, r, ptr, size, device, stream, c->stack, c->dur, flags, c->corr,
                                   (uint64_t)c->via, alloc_lib_of(c), ana_tls_libcall };
    ana_emit(c->t, &rec);
    int device_alloc = ana_api_is_device_alloc(api);
    if (r != 0) {
        if (device_alloc)
            after_failed_alloc(c);
    } else {
        maybe_record_device();
        /* cuMemCreate's ptr is a handle; its memory gets addresses when cuMemMap maps it. */
        if (device_alloc && api != ANA_API_CU_MEM_CREATE)
            ana_kargs_note_range(ptr, size);
    }
    ana_leave(c);
}

void ana_rec_free_done(ana_call *c, uint32_t api, int r, uint64_t ptr, uint64_t stream)
{
    measure(c, ana_cfg.call_durations);
    CALL_RECORD(rec, ANA_K_FREE, c);
    rec.u.free = (ana_rec_free){ api, r, ptr, ana_current_device(), stream, c->stack, c->dur, c->corr,
                                 (uint64_t)c->via, alloc_lib_of(c), ana_tls_libcall };
    finish(c, &rec);
}

/* The pointer words of the record being made (LAUNCH, MEMCPY): 8 KiB per thread, off
 * the program's stack. A record is made and written before the next one on a thread.
 * Initial-exec as every TLS variable of the preload: a launch reads them without a call to
 * __tls_get_addr. */
static __thread uint64_t ana_tls_ptrs[ANA_KARGS_MAX] __attribute__((tls_model("initial-exec")));
static __thread uint64_t ana_tls_at[ANA_KARGS_MAX] __attribute__((tls_model("initial-exec")));

void ana_rec_launch_done(ana_call *c, uint32_t api, int r, uint64_t kernel, dim3 grid, dim3 block,
                         uint64_t shmem, uint64_t stream, const ana_launch_args *la)
{
    if (ANA_UNLIKELY(!ana_capture_keep(ana_tls_corr)))
        return outside(c);
    measure(c, ana_cfg.call_durations);
    uint32_t n = ana_kargs_collect(la, ana_tls_ptrs, ana_tls_at);
    CALL_RECORD(rec, ANA_K_LAUNCH, c);
    rec.u.launch = (ana_rec_launch){ api, r, kernel, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                     shmem, stream, c->stack, c->dur, c->corr, (uint64_t)c->via,
                                     ana_tls_lib, ana_tls_libcall, { ana_tls_ptrs, n }, { ana_tls_at, n } };
    finish(c, &rec);
}

void ana_rec_memcpy_done(ana_call *c, uint32_t api, int r, uint64_t dst, uint64_t src, uint64_t bytes,
                         uint64_t dir, uint64_t stream)
{
    if (ANA_UNLIKELY(!ana_capture_keep(ana_tls_corr)))
        return outside(c);
    measure(c, 1);
    uint64_t more = 0;
    uint32_t n = 0;
    /* cudaMemcpyHostToDevice (its source is host memory the copy read: read directly), or
     * cudaMemcpyDefault from an address outside the device range (read with care) */
    if (r == 0 && (dir == 1 || dir == 4))
        n = ana_kargs_scan_host(src, bytes, dir == 1, ana_tls_ptrs, ana_tls_at, &more);
    CALL_RECORD(rec, ANA_K_MEMCPY, c);
    rec.u.memcpy = (ana_rec_memcpy){ api, r, dst, src, bytes, dir, stream, c->stack, c->dur, c->corr,
                                     (uint64_t)c->via, ana_tls_lib, ana_tls_libcall };
    if (n) { /* the table right after its copy, at the copy's time */
        ana_emit(c->t, &rec);
        rec.kind = ANA_K_PTR_TABLE;
        rec.u.ptr_table = (ana_rec_ptr_table){ dst, bytes, { ana_tls_ptrs, n }, { ana_tls_at, n }, more };
    }
    finish(c, &rec);
}

void ana_rec_memset_done(ana_call *c, uint32_t api, int r, uint64_t ptr, int64_t value, uint64_t bytes,
                         uint64_t stream)
{
    if (ANA_UNLIKELY(!ana_capture_keep(ana_tls_corr)))
        return outside(c);
    measure(c, 1);
    CALL_RECORD(rec, ANA_K_MEMSET, c);
    rec.u.memset = (ana_rec_memset){ api, r, ptr, value, bytes, stream, c->stack, c->dur, c->corr,
                                     (uint64_t)c->via, ana_tls_lib, ana_tls_libcall };
    finish(c, &rec);
}

void ana_rec_vmm_done(ana_call *c, uint32_t api, int r, uint64_t va, uint64_t size, uint64_t handle,
                      uint64_t offset, int64_t device, uint64_t flags)
{
    measure(c, 1);
    if (r == 0 && api == ANA_API_CU_MEM_MAP)
        ana_kargs_note_range(va, size);
    CALL_RECORD(rec, ANA_K_VMM, c);
    rec.u.vmm = (ana_rec_vmm){ api, r, va, size, handle, offset, device, flags, c->stack, c->dur, c->corr,
                               (uint64_t)c->via, alloc_lib_of(c), ana_tls_libcall };
    finish(c, &rec);
}
