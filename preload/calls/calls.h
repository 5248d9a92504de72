/* calls.h — what a recorded CUDA call becomes (calls/): the record builders, the device
 * of the calling thread, the pointer words of launches and copies (kargs.c), and what a
 * call's parameters say, shared by the hooks (preload/hooks/) and CUPTI's callback
 * (cupti/callback.c, cupti/calls.c), so that one call gives the same record either way.
 * Only files that must see CUDA types include it. The bracket the builders end (ana_call,
 * ana_enter, ana_leave) is the core's (session.h); the library-call context they read
 * is libctx.h's. */
#ifndef ANA_CALLS_H
#define ANA_CALLS_H

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "capture.h"
#include "dl_real.h"
#include "libctx.h"
#include "session.h"

/* The CUDA runtime's `name` wherever it was loaded (ana_dl_real_sym: the next definition
 * after the preload, else the loaded libcudart.so.13's, even in a local scope), or NULL. */
static inline void *ana_resolve(const char *name)
{
    return ana_dl_real_sym("libcudart.so.13", "libcudart.so.13", name);
}
/* Pointers, handles and streams as the integers records hold. */
#define ANA_U64(x) ((uint64_t)(uintptr_t)(x))
/* What an out-parameter holds after a call that returned r: *pp after a success, else 0. */
#define ANA_OUT(r, pp) ((r) == 0 && (pp) ? ANA_U64(*(pp)) : 0)

/* Bytes of a pitched allocation (cudaMallocPitch, cuMemAllocPitch_v2): pitch × height once
 * the call set the pitch, else the width × height asked for. */
static inline uint64_t ana_pitched_bytes(int r, const size_t *pitch, size_t width, size_t height)
{
    return r == 0 && pitch ? (uint64_t)*pitch * height : (uint64_t)width * height;
}

/* Record builders, one per record kind, shared by the hooks (runtime and driver) and the
 * CUPTI callback (cupti/calls.c), so that one call gives the same record either way. They
 * take values: r is what the call returned (a cudaError_t or a CUresult), out-values are
 * read by the caller (ANA_OUT). Each ends the timed part of the call, captures the stack,
 * appends the record (via = c->via) and ends the bracket (ana_leave), preserving the errno
 * the real call left. After a device allocation failed, ALLOC is followed by MEMINFO and
 * written at once; after the first successful allocation on a device, by its DEVICE. */
void ana_rec_alloc_done(ana_call *c, uint32_t api, int r, uint64_t ptr, uint64_t size, int64_t device,
                        uint64_t stream, uint64_t flags);
/* FREE: the device is the thread's current one. */
void ana_rec_free_done(ana_call *c, uint32_t api, int r, uint64_t ptr, uint64_t stream);
/* LAUNCH: `la` says where the launch's parameters are (NULL: not known, no ptrs). */
typedef struct ana_launch_args {
    const void *fn;  /* what the layout is asked of: a host stub or cudaKernel_t (runtime), a
                      * CUfunction (driver) */
    void **args;     /* the launch's parameter array (kernelParams); NULL: none */
    int driver;      /* 1: fn is a CUfunction (cuFuncGetParamInfo) */
} ana_launch_args;
void ana_rec_launch_done(ana_call *c, uint32_t api, int r, uint64_t kernel, dim3 grid, dim3 block,
                         uint64_t shmem, uint64_t stream, const ana_launch_args *la);
void ana_rec_memcpy_done(ana_call *c, uint32_t api, int r, uint64_t dst, uint64_t src, uint64_t bytes,
                         uint64_t dir, uint64_t stream);
void ana_rec_memset_done(ana_call *c, uint32_t api, int r, uint64_t ptr, int64_t value, uint64_t bytes,
                         uint64_t stream);
void ana_rec_vmm_done(ana_call *c, uint32_t api, int r, uint64_t va, uint64_t size, uint64_t handle,
                      uint64_t offset, int64_t device, uint64_t flags);
void ana_record_device(int ordinal, const struct cudaDeviceProp *p);
/* Records the device unless a DEVICE record for that ordinal exists already. */
void ana_record_device_once(int ordinal, const struct cudaDeviceProp *p);
/* The calling thread's current device, as last set through cudaSetDevice (0 by default). */
int ana_current_device(void);
void ana_set_current_device(int dev);

/* ---- kargs.c: the parameter words of a launch that look like device pointers ---- */
#define ANA_KARGS_MAX 512 /* most words one LAUNCH or PTR_TABLE records (PyTorch's multi-tensor
                           * apply passes about 440 addresses in one struct) */
#define ANA_KARGS_TABLE_BYTES 65536 /* host-to-device copies up to this size are read for
                                     * pointer tables */
/* Widens the device address range [lowest, highest) by a successful allocation or map. */
void ana_kargs_note_range(uint64_t ptr, uint64_t size);
/* Fills ptrs/at (ANA_KARGS_MAX each) with the words of la's parameters that lie in the
 * range, in offset order; returns how many. 0 when ANATOMIST_KERNEL_ARGS=0, without
 * parameters, or before the function's layout is known. Hot path: no lock, no malloc
 * (the first launch of a function asks CUDA for its layout). */
uint32_t ana_kargs_collect(const ana_launch_args *la, uint64_t *ptrs, uint64_t *at);
/* The same for the bytes a host-to-device copy of `bytes` (at most ANA_KARGS_TABLE_BYTES)
 * read at host address src: its 8-byte words (offsets from src) that lie in the range —
 * a pointer table the GPU will read —, and in *more how many past ANA_KARGS_MAX. direct: src is
 * read as it is (a successful cudaMemcpyHostToDevice has just read it: host memory) unless
 * it lies inside the device range's span; else with process_vm_readv, so an address the
 * process cannot read gives no words, never a fault. 0 when ANATOMIST_KERNEL_ARGS=0, for a
 * larger copy, or a cudaMemcpyDefault source inside the device range. */
uint32_t ana_kargs_scan_host(uint64_t src, uint64_t bytes, int direct, uint64_t *ptrs, uint64_t *at,
                             uint64_t *more);

/* ---- what the driver wrappers and the CUPTI callback both read from a call ---- */
/* cuMemCreate's ALLOC.device: the allocation's location when that is a device, else the
 * thread's current device. */
static inline int64_t ana_mem_create_device(const CUmemAllocationProp *prop)
{
    return prop && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? prop->location.id
                                                                      : ana_current_device();
}
/* cuMemSetAccess's VMM device and flags: those of the first descriptor (the usual single
 * one); its device when its location is a device, else the thread's current device. */
static inline int64_t ana_access_device(const CUmemAccessDesc *d, size_t count)
{
    return d && count && d->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? d->location.id
                                                                          : ana_current_device();
}
static inline uint64_t ana_access_flags(const CUmemAccessDesc *d, size_t count)
{
    return d && count ? (uint64_t)d->flags : 0;
}

#endif
