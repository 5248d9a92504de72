/*
 * sim.h — internal contract of the simulated CUDA device (built as libcudart.so.13).
 *
 * What it does: answers the CUDA 13 runtime API on a machine without a GPU. Device memory
 * is host memory behind a capacity (ANATOMIST_SIM_MEMORY); kernels are registered through
 * the nvcc stub ABI and "run" in zero host time while a cost model advances a per-stream
 * device clock. See docs/sim.md for the user-facing description and the cost model.
 *
 * Thread-safety: every exported entry point is thread-safe. All shared state is guarded
 * by one process-wide mutex (ana_sim_lock/unlock); functions suffixed `_locked` must be
 * called with it held. Per-thread state (last error, call-configuration stack,
 * per-thread default stream, capture mode) lives in TLS and needs no lock.
 *
 * Hot path: the sim is a test fixture, not a hot path; it may allocate and lock.
 *
 * Ownership: the sim owns every allocation, stream, event and kernel record it hands
 * out; handles are validated against live tables, so a stale or foreign handle returns
 * an error instead of crashing.
 */
#ifndef ANA_SIM_H
#define ANA_SIM_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

/* Only the CUDA API is exported; everything else is hidden (-fvisibility=hidden). */
#define ANA_SIM_API __attribute__((visibility("default")))

/* ---- device constants (an H100 SXM-like part) ---------------------------------- */
#define ANA_SIM_DEVICE_NAME       "Anatomist Simulated H100"
#define ANA_SIM_CUDA_VERSION      13000
#define ANA_SIM_DEFAULT_CAPACITY  (80ull << 30)
#define ANA_SIM_ALLOC_GRANULE     512u       /* accounting granularity, bytes */
#define ANA_SIM_PITCH_ALIGN       512u       /* cudaMallocPitch row alignment */
#define ANA_SIM_SMEM_DEFAULT_MAX  49152      /* dynamic smem without opt-in */
#define ANA_SIM_SMEM_OPTIN_MAX    232448     /* sharedMemPerBlockOptin (227 KiB) */
#define ANA_SIM_SMEM_PER_SM       233472     /* 228 KiB */
#define ANA_SIM_SM_COUNT          132
#define ANA_SIM_PRIORITY_LEAST    0
#define ANA_SIM_PRIORITY_GREATEST (-5)

/* ---- cost model (docs/sim.md, "Cost model"); all results in nanoseconds ---------- */
#define ANA_SIM_LAUNCH_NS         3000.0     /* fixed cost of a kernel */
#define ANA_SIM_THREAD_NS         0.02       /* per launched thread */
#define ANA_SIM_PCIE_BYTES_PER_NS 25.0       /* 25 GB/s, H2D and D2H */
#define ANA_SIM_HBM_BYTES_PER_NS  1500.0     /* 1.5 TB/s, D2D and memset */

uint64_t ana_sim_cost_kernel_ns(dim3 grid, dim3 block);
uint64_t ana_sim_cost_copy_ns(size_t bytes, enum cudaMemcpyKind kind);
uint64_t ana_sim_cost_memset_ns(size_t bytes);

/* ---- error.c: return codes and the per-thread last error ------------------------- */
/* Records err as this thread's last error (unless success / cudaErrorNotReady, which
 * real CUDA does not record) and returns it; every exported call returns through it. */
cudaError_t ana_sim_ret(cudaError_t err);

/* ---- device.c: global lock, lazy initialisation, capacity -------------------------- */
void ana_sim_lock(void);
void ana_sim_unlock(void);
/* Locks and initialises on first use (reads ANATOMIST_SIM_MEMORY). */
void ana_sim_enter(void);
#define ana_sim_leave ana_sim_unlock
uint64_t ana_sim_capacity_locked(void);
uint64_t ana_sim_now_ns(void);
int ana_sim_current_device(void);

/* ---- correlation.c: the current API call and the observer (anasim.h) --------------- */
#include <cupti_activity.h>
/* The correlation id of the API call this thread is in (0 outside any call). */
uint32_t ana_sim_correlation(void);
/* 1 when an observer wants activity records of this kind (build them only then). */
int ana_sim_activity_wanted(CUpti_ActivityKind kind);
/* Hands a complete activity record (device-clock timestamps) to the observer. Call without
 * the device lock held. */
void ana_sim_activity(const CUpti_Activity *rec);

/* ---- memory.c: allocation table --------------------------------------------------- */
enum ana_sim_mem_kind {
    ANA_SIM_MEM_DEVICE,          /* cudaMalloc & co: charged against capacity */
    ANA_SIM_MEM_MANAGED,         /* cudaMallocManaged: charged */
    ANA_SIM_MEM_HOST,            /* cudaMallocHost/cudaHostAlloc: not charged */
    ANA_SIM_MEM_REGISTERED,      /* cudaHostRegister: user memory, not owned */
    ANA_SIM_MEM_SYMBOL,          /* __device__/__constant__ variable storage */
    ANA_SIM_MEM_SYMBOL_MANAGED,  /* __managed__ variable storage */
};

struct ana_sim_mem {
    char *base;
    size_t size;                 /* requested bytes */
    size_t charged;              /* bytes counted against capacity (0 if not charged) */
    size_t map_len;              /* mmap length, 0 if not owned by an mmap */
    enum ana_sim_mem_kind kind;
    unsigned flags;
};

/* The region containing p, or NULL. */
const struct ana_sim_mem *ana_sim_mem_find_locked(const void *p);
/* Nonzero if [p, p+n) lies inside one region the device can address. */
int ana_sim_mem_device_range_locked(const void *p, size_t n);
/* Adds a region the sim did not allocate itself (symbol storage). */
cudaError_t ana_sim_mem_add_locked(const struct ana_sim_mem *m);
void ana_sim_mem_remove_locked(const void *base);
/* cudaDeviceReset: releases every allocation except module variables. */
void ana_sim_mem_reset_locked(void);

/* ---- stream.c: streams, events and device clocks ---------------------------------- */
struct ana_sim_stream;
/* Resolves a user handle (0, cudaStreamLegacy, cudaStreamPerThread or a created stream);
 * `ptsz` selects the per-thread default stream for handle 0. */
cudaError_t ana_sim_stream_resolve_locked(cudaStream_t h, int ptsz,
                                          struct ana_sim_stream **out);
/* Enqueues work of the given duration; returns its start time on the device clock. */
uint64_t ana_sim_stream_enqueue_locked(struct ana_sim_stream *s, uint64_t duration_ns);
void ana_sim_stream_reset_locked(void);

/* ---- kernel.c: registered module variables (used by the symbol copies) ------------ */
/* Finds the device storage of a registered variable by its host shadow address. */
int ana_sim_symbol_find_locked(const void *symbol, char **storage, size_t *size);

/* ---- table.c: pointer-keyed hash map (open addressing) ---------------------------- */
struct ana_sim_map {
    const void **keys;
    void **vals;
    size_t cap, len, used;       /* used counts tombstones too */
};
void *ana_sim_map_get(const struct ana_sim_map *m, const void *key);
int ana_sim_map_put(struct ana_sim_map *m, const void *key, void *val);
void *ana_sim_map_del(struct ana_sim_map *m, const void *key);
/* Calls fn on every value, then empties the map. */
void ana_sim_map_clear(struct ana_sim_map *m, void (*fn)(void *val));

/* ---- nvcc stub ABI (crt/host_runtime.h, crt/device_functions.h are C++-only) ------ */
ANA_SIM_API void **__cudaRegisterFatBinary(void *fatCubin);
ANA_SIM_API void __cudaRegisterFatBinaryEnd(void **fatCubinHandle);
ANA_SIM_API void __cudaUnregisterFatBinary(void **fatCubinHandle);
ANA_SIM_API void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
                            const char *deviceName, int thread_limit, uint3 *tid,
                            uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize);
ANA_SIM_API void __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress,
                       const char *deviceName, int ext, size_t size, int constant,
                       int global);
ANA_SIM_API void __cudaRegisterManagedVar(void **fatCubinHandle, void **hostVarPtrAddress,
                              char *deviceAddress, const char *deviceName, int ext,
                              size_t size, int constant, int global);
ANA_SIM_API char __cudaInitModule(void **fatCubinHandle);
ANA_SIM_API unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                     struct CUstream_st *stream);
ANA_SIM_API cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
                                       void *stream);
ANA_SIM_API cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *hostFun);
ANA_SIM_API cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim,
                               void **args, size_t sharedMem, cudaStream_t stream);
ANA_SIM_API cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim,
                                    void **args, size_t sharedMem, cudaStream_t stream);

#endif /* ANA_SIM_H */
