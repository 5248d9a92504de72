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

#include "anasim.h"   /* the private interface; ANA_SIM_DEVICE_NAME, ..._CUDA_VERSION, ... */

/* Only the CUDA API is exported; everything else is hidden (-fvisibility=hidden). */
#define ANA_SIM_API __attribute__((visibility("default")))

/* ---- device constants (an H100 SXM-like part; the name, version and pitch alignment
 * the driver answers too are in anasim.h) ------------------------------------------ */
#define ANA_SIM_DEFAULT_CAPACITY  (80ull << 30)
#define ANA_SIM_ALLOC_GRANULE     512u       /* accounting granularity, bytes */
#define ANA_SIM_SMEM_DEFAULT_MAX  49152      /* dynamic smem without opt-in */
#define ANA_SIM_SMEM_OPTIN_MAX    232448     /* sharedMemPerBlockOptin (227 KiB) */
#define ANA_SIM_SMEM_PER_SM       233472     /* 228 KiB */
#define ANA_SIM_SM_COUNT          132
#define ANA_SIM_PRIORITY_LEAST    0
#define ANA_SIM_PRIORITY_GREATEST (-5)

/* ---- cost model (docs/sim.md, "Cost model"); all results in nanoseconds ---------- */
#define ANA_SIM_LAUNCH_NS         3000.0     /* fixed cost of a kernel */
#define ANA_SIM_THREAD_NS         0.02       /* per launched thread */
#define ANA_SIM_PCIE_BYTES_PER_NS 25.0       /* 25 GB/s, H2D and D2H with pinned memory */
#define ANA_SIM_PAGEABLE_BYTES_PER_NS 12.0   /* 12 GB/s, H2D and D2H with pageable memory */
#define ANA_SIM_HBM_BYTES_PER_NS  1500.0     /* 1.5 TB/s, D2D and memset */

uint64_t ana_sim_cost_kernel_ns(dim3 grid, dim3 block);
/* A copy in direction kind (not cudaMemcpyDefault); pageable: the host side of a
 * HostToDevice/DeviceToHost copy is ordinary pageable memory. HostToHost costs 0. */
uint64_t ana_sim_cost_memcpy_ns(size_t bytes, enum cudaMemcpyKind kind, int pageable);
uint64_t ana_sim_cost_memset_ns(size_t bytes);

/* ---- error.c: return codes and the per-thread last error ------------------------- */
/* Records err as this thread's last error (unless success / cudaErrorNotReady, which
 * real CUDA does not record) and returns it. Every exported call returns through it: the
 * traced ones in ANA_SIM_RT_RETURN, the others themselves. Helpers never call it, so the
 * driver's calls into them (anasim.h) leave the runtime's last error alone. */
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
/* The activity kinds the observer wants now (ANASIM_KIND_BIT bits; 0 without one), asked
 * once per call before the device lock is taken (build records only for these): one
 * atomic load once the observer has published its mask. */
uint64_t ana_sim_wanted_kinds(void);
/* 1 when `kinds` (ana_sim_wanted_kinds) holds `kind`; 0 for a kind >= 64. */
#define ANA_SIM_WANTS(kinds, kind) (((kinds) & ANASIM_KIND_BIT(kind)) != 0)
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
    ANA_SIM_MEM_VMM,             /* cuMemMap'd range: charged by its cuMemCreate handle */
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
/* Nonzero if [p, p+n) lies inside region m (the region containing p, or NULL). */
int ana_sim_mem_holds(const struct ana_sim_mem *m, const void *p, size_t n);
/* Nonzero if [p, p+n) lies inside one region the device can address. */
int ana_sim_mem_device_range_locked(const void *p, size_t n);
/* The CUPTI memory kind of memory of this kind (CUpti_ActivityMemory4, ...Memcpy6). */
CUpti_ActivityMemoryKind ana_sim_mem_activity_kind(enum ana_sim_mem_kind kind);
/* Nonzero if [p, p+n) overlaps a region of the table (n > 0). */
int ana_sim_mem_overlaps_locked(const void *p, size_t n);
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
/* The same, for a call that only needs the handle to be valid (takes the lock). */
cudaError_t ana_sim_stream_check(cudaStream_t h, int ptsz);
/* Enqueues work of the given duration; returns its start time on the device clock. */
uint64_t ana_sim_stream_enqueue_locked(struct ana_sim_stream *s, uint64_t duration_ns);
/* The same, starting no earlier than not_before_ns (device clock; 0: no constraint). */
uint64_t ana_sim_stream_enqueue_after_locked(struct ana_sim_stream *s, uint64_t duration_ns,
                                             uint64_t not_before_ns);
/* Earliest device time at which work submitted now to s could start. */
uint64_t ana_sim_stream_ready_locked(const struct ana_sim_stream *s);
/* The stream's CUPTI-style id: 7 for the legacy default stream; 13, 14, ... (never
 * reused) for each per-thread default stream and created stream. */
uint32_t ana_sim_stream_id_locked(const struct ana_sim_stream *s);
void ana_sim_stream_reset_locked(void);
int ana_sim_stream_is_legacy(const struct ana_sim_stream *s);
/* The stream's capture state (graph.c); NULL while it is not capturing. */
struct ana_sim_capture **ana_sim_stream_capture_slot_locked(struct ana_sim_stream *s);
/* The calling thread has waited (without sleeping) until device time t: its later work
 * on any stream starts no earlier (a copy that is synchronous for the host). */
void ana_sim_host_wait_locked(uint64_t t);
/* When the latest work submitted to any stream ends (device clock). */
uint64_t ana_sim_device_end_locked(void);
/* Host time as the calling thread sees it: max(now, the last time it waited for). */
uint64_t ana_sim_host_now_locked(void);

/* ---- kernel.c: registered module variables (used by the symbol copies) ------------ */
/* Finds the device storage of a registered variable by its host shadow address. */
int ana_sim_symbol_find_locked(const void *symbol, char **storage, size_t *size);

/* ---- cubin.c: kernel parameter layouts from the embedded device code --------------- */
struct ana_sim_param {
    uint32_t offset, size;       /* bytes, in the kernel's parameter buffer */
};
struct ana_sim_params {
    struct ana_sim_param *param; /* by parameter index; malloc'ed */
    uint32_t count;
};
/* The parameters of the kernel `name` (mangled) from nvcc's fat binary wrapper (what
 * __cudaRegisterFatBinary received): cudaSuccess and the layout (count 0: no
 * parameters); cudaErrorNotSupported when no uncompressed cubin of the image describes
 * the kernel; cudaErrorInvalidKernelImage when the image is not one nvcc makes. */
cudaError_t ana_sim_cubin_params(const void *wrapper, const char *name,
                                 struct ana_sim_params *out);

/* kernel.c: offset and size of parameter `index` of a kernel, read from its cubin once
 * and kept with the kernel. `func`: a host stub or a kernel handle, or with handle_only a
 * kernel handle only (the driver's CUfunction/CUkernel). cudaErrorInvalidDeviceFunction
 * for no loaded kernel, cudaErrorInvalidValue for an index past the last parameter or a
 * NULL offset, the code of ana_sim_cubin_params when the layout cannot be read. */
cudaError_t ana_sim_kernel_param_info(const void *func, int handle_only, size_t index,
                                      size_t *offset, size_t *size);

/* ---- device work: kernels, copies, sets (kernel.c, copy.c), graphs (graph.c) ------- */
/* One unit of device work, as submitted to a stream or captured into a graph node. */
enum ana_sim_op_kind { ANA_SIM_OP_KERNEL, ANA_SIM_OP_COPY, ANA_SIM_OP_PEER, ANA_SIM_OP_SET };
struct ana_sim_op {
    enum ana_sim_op_kind kind;
    int async;                   /* an ...Async entry point */
    const void *kernel;          /* KERNEL: the sim's kernel record (a cudaKernel_t) */
    dim3 grid, block;
    size_t smem;
    uint8_t launch_type;         /* KERNEL: CUpti_ActivityLaunchType */
    uint64_t fixed_ns;           /* KERNEL: duration a library set (anasim_next_launch); 0:
                                  * the cost model's */
    uint64_t not_before_ns;      /* KERNEL, eager only: earliest start a library set */
    void *dst;                   /* COPY, PEER, SET: rows of width bytes, height rows */
    const void *src;
    size_t dpitch, spitch, width, height;
    enum cudaMemcpyKind dir;     /* COPY, PEER: never cudaMemcpyDefault */
    int value;                   /* SET */
};

/* The activity kinds of device work (ANASIM_KIND_BIT bits): what an op can yield. */
#define ANA_SIM_WORK_KINDS (ANASIM_KIND_BIT(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) |      \
                            ANASIM_KIND_BIT(CUPTI_ACTIVITY_KIND_MEMCPY) |                 \
                            ANASIM_KIND_BIT(CUPTI_ACTIVITY_KIND_MEMCPY2) |                \
                            ANASIM_KIND_BIT(CUPTI_ACTIVITY_KIND_MEMSET))

/* Where an op runs: its stream, the graph launch it belongs to (ids 0 outside graphs)
 * and which records to build (ana_sim_wanted_kinds, asked once per call). */
struct ana_sim_exec {
    struct ana_sim_stream *stream;
    uint32_t graph_id;
    uint64_t node_id;
    uint64_t want;
};

/* An activity record of any kind the device produces; base.kind is
 * CUPTI_ACTIVITY_KIND_INVALID when none was built. */
union ana_sim_record {
    CUpti_Activity base;
    CUpti_ActivityKernel10 kernel;
    CUpti_ActivityMemcpy6 memcpy;
    CUpti_ActivityMemcpyPtoP4 peer;
    CUpti_ActivityMemset4 memset;
};

/* Replays a captured kernel op / copy, peer copy or set op on x->stream (graph launch):
 * validates it again, since what was valid at capture may not be now (an unloaded module,
 * freed memory), with the codes the eager call would answer; then moves the bytes,
 * advances the stream clock by the cost model and, when wanted, fills *rec with the
 * correlation id of the API call in flight. Eager work is validated once, when submitted,
 * and runs through the same code without this second check. */
cudaError_t ana_sim_kernel_replay_locked(const struct ana_sim_op *op,
                                         const struct ana_sim_exec *x,
                                         union ana_sim_record *rec);
cudaError_t ana_sim_copy_replay_locked(const struct ana_sim_op *op,
                                       const struct ana_sim_exec *x,
                                       union ana_sim_record *rec);
/* Hands the built records among recs[0..n) to the observer. Call unlocked. */
void ana_sim_emit(const union ana_sim_record *recs, size_t n);

/* Stream capture (graph.c). While s captures, ops submitted to it become graph nodes. */
int ana_sim_capturing_locked(struct ana_sim_stream *s);
/* Appends op as a node of the graph s is capturing into. */
cudaError_t ana_sim_capture_add_locked(struct ana_sim_stream *s, const struct ana_sim_op *op);
/* A synchronising call on s: cudaErrorStreamCaptureUnsupported (and the capture is
 * invalidated) while s captures, else cudaSuccess. */
cudaError_t ana_sim_capture_sync_locked(struct ana_sim_stream *s);
/* Ends any capture on s, freeing what it captured (the stream is being destroyed). */
void ana_sim_capture_drop_locked(struct ana_sim_stream *s);

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

/* ---- nvcc stub ABI: stub_abi.h ---------------------------------------------------- */
#include "stub_abi.h"

/* ---- drvlink.c: the runtime's libcuda.so.1 ------------------------------------------
 * The runtime answers its memory calls through the driver, as NVIDIA's does: on first
 * use it dlopens libcuda.so.1, looks up cuGetProcAddress_v2 and resolves the entry points
 * below by base name for CUDA 13000 (the async ones once more with
 * CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, for the _ptsz variants). */

struct ana_sim_driver {
    CUresult (*get_proc_address)(const char *, void **, int, cuuint64_t,
                                 CUdriverProcAddressQueryResult *);
    CUresult (*mem_alloc)(CUdeviceptr *, size_t);
    CUresult (*mem_free)(CUdeviceptr);
    CUresult (*mem_alloc_async[2])(CUdeviceptr *, size_t, CUstream);   /* [ptsz] */
    CUresult (*mem_free_async[2])(CUdeviceptr, CUstream);
    CUresult (*mem_alloc_from_pool_async[2])(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
    CUresult (*mem_alloc_managed)(CUdeviceptr *, size_t, unsigned int);
    CUresult (*mem_alloc_host)(void **, size_t);
    CUresult (*mem_host_alloc)(void **, size_t, unsigned int);
    CUresult (*mem_free_host)(void *);
    CUresult (*mem_alloc_pitch)(CUdeviceptr *, size_t *, size_t, size_t, unsigned int);
    CUresult (*mem_get_info)(size_t *, size_t *);
};
/* The loaded driver, or NULL (after one line on stderr) when libcuda.so.1 cannot be
 * loaded or lacks an entry point. Thread-safe; call without the device lock held. */
const struct ana_sim_driver *ana_sim_driver(void);
/* A driver return code as the runtime reports it (the codes share their numbers). */
cudaError_t ana_sim_from_cu(CUresult r);

/* Brackets one runtime API call for the observer (anasim.h) and returns `expr`, which is
 * evaluated between entry and exit and recorded as the thread's last error (ana_sim_ret).
 * `fn`/`ver` name the cbid (CUPTI_RUNTIME_TRACE_CBID_<fn>_<ver>); params points to its
 * <fn>_<ver>_params. */
#define ANA_SIM_RT_RETURN(fn, ver, params, expr)                                         \
    ANASIM_RETURN(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_##fn##_##ver, #fn, \
                  (params), cudaError_t, ana_sim_ret(expr))

/* ---- memory.c: the default memory pool -------------------------------------------- */
/* Nonzero if pool is the device's default pool (the only one). */
int ana_sim_mem_pool_valid(const void *pool);

#endif /* ANA_SIM_H */
