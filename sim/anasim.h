/*
 * anasim.h — the private interface between the simulated CUDA libraries.
 *
 * The simulated device (memory and its capacity, streams, device clocks, kernels, graphs,
 * correlation ids) lives in the sim's libcudart.so.13. The sim's libcuda.so.1 (driver
 * API) and libcupti.so.13 (CUPTI) link to it and reach the device through the functions
 * below, exported by libcudart.so.13 under the version node ANASIM_PRIVATE. Nothing
 * outside sim/ may use them: on a machine with a GPU these libraries are NVIDIA's.
 *
 * Correlation: every runtime or driver API call the sim answers is bracketed by
 * anasim_api_enter()/anasim_api_exit(). The outermost call on a thread gets a new
 * correlation id (1, 2, 3, ... process-wide); calls nested in it (the runtime's own driver
 * calls) share its id, as with NVIDIA's CUPTI. Every activity the device produces while a
 * call is in flight carries that id; kernels, copies and sets replayed by a graph launch
 * carry the id of the cudaGraphLaunch/cuGraphLaunch call.
 *
 * Thread-safety: all functions are thread-safe. Observer callbacks run on the thread that
 * made the API call, without the device lock held, and may call back into the sim.
 */
#ifndef ANASIM_H
#define ANASIM_H

#include <cupti.h>
#include <stdint.h>

#define ANASIM_PRIVATE_API __attribute__((visibility("default")))

/* One API call in flight. The caller fills domain, cbid, name, params and ret; enter sets
 * correlation. */
typedef struct anasim_api {
    CUpti_CallbackDomain domain; /* CUPTI_CB_DOMAIN_RUNTIME_API or CUPTI_CB_DOMAIN_DRIVER_API */
    CUpti_CallbackId cbid;       /* cupti_runtime_cbid.h / cupti_driver_cbid.h */
    const char *name;            /* the API's name, "cudaMalloc" */
    const void *params;          /* its <name>_params struct (generated_cuda*_meta.h), or NULL */
    const void *ret;             /* the cudaError_t / CUresult it returns; valid at exit */
    uint32_t correlation;        /* set by anasim_api_enter */
    int nested;                  /* set by anasim_api_enter: 1 inside another call */
    uint64_t correlation_data;   /* CUpti_CallbackData.correlationData, kept enter..exit */
} anasim_api;

/* The observer libcupti.so.13 registers. `activity` receives a complete record in the
 * exact CUDA 13 structure of its kind (CUpti_ActivityKernel10, CUpti_ActivityMemcpy6,
 * CUpti_ActivityMemcpyPtoP4, CUpti_ActivityMemset4, CUpti_ActivityMemory4,
 * CUpti_ActivityMemoryPool3), with timestamps on the device clock (CLOCK_MONOTONIC ns);
 * the observer converts them to its client's time base. `wants` lets the device skip
 * building records nobody enabled; an observer that publishes its kinds as a mask
 * (anasim_set_activity_mask) is not asked. */
typedef struct anasim_observer {
    void (*api)(int exit_site, anasim_api *call); /* 0 at entry, 1 at exit */
    int (*wants)(CUpti_ActivityKind kind);
    void (*activity)(const CUpti_Activity *rec);
} anasim_observer;

/* A set of activity kinds: bit k stands for CUpti_ActivityKind k. A kind >= 64 has no bit
 * (0): the device produces none and the sim's CUPTI enables none (checked below). */
#define ANASIM_KIND_BIT(kind) ((unsigned)(kind) < 64u ? 1ull << (unsigned)(kind) : 0ull)
_Static_assert(CUPTI_ACTIVITY_KIND_MEMCPY < 64 && CUPTI_ACTIVITY_KIND_MEMSET < 64 &&
               CUPTI_ACTIVITY_KIND_KERNEL < 64 && CUPTI_ACTIVITY_KIND_DRIVER < 64 &&
               CUPTI_ACTIVITY_KIND_RUNTIME < 64 &&
               CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL < 64 &&
               CUPTI_ACTIVITY_KIND_MEMCPY2 < 64 &&
               CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION < 64 &&
               CUPTI_ACTIVITY_KIND_MEMORY2 < 64 && CUPTI_ACTIVITY_KIND_MEMORY_POOL < 64,
               "every kind the sim produces has a bit in an activity mask");

/* Returns `expr` (of type ret_t) as one API call: anasim_api_enter before it is evaluated,
 * anasim_api_exit after. The front ends' bracket macros (sim.h ANA_SIM_RT_RETURN, api.h
 * ANA_SIM_TRACED, driver/driver.h ANA_DRV_RETURN) are this one. Use without the device
 * lock held, as the last statement of an entry point. */
#define ANASIM_RETURN(dom, id, fname, params_ptr, ret_t, expr)                            \
    do {                                                                                  \
        ret_t anasim_ret_ = (ret_t)0;                                                     \
        anasim_api anasim_call_ = { .domain = (dom), .cbid = (id), .name = (fname),        \
                                    .params = (params_ptr), .ret = &anasim_ret_ };        \
        if (anasim_api_enter(&anasim_call_))                                              \
            anasim_ret_ = (ret_t)3; /* a child forked after initialisation (initwatch.c) */ \
        else                                                                              \
            anasim_ret_ = (expr);                                                         \
        anasim_api_exit(&anasim_call_);                                                   \
        return anasim_ret_;                                                               \
    } while (0)

/* Registers (or, with NULL, removes) the one observer. It forgets any published mask: the
 * device asks the new observer's `wants` per kind until it publishes one. */
ANASIM_PRIVATE_API void anasim_set_observer(const anasim_observer *obs);
/* The kinds the registered observer wants, as ANASIM_KIND_BIT bits. Once published (and
 * published again whenever they change), the device tests a bit of this mask instead of
 * calling `wants`: asking which records to build is one atomic load. */
ANASIM_PRIVATE_API void anasim_set_activity_mask(uint64_t kinds);
/* Nonzero when the call must not run: its process was forked after CUDA was initialised
 * and ANATOMIST_SIM_FORK_STRICT=1 (initwatch.c); the bracket then returns 3. */
ANASIM_PRIVATE_API int anasim_api_enter(anasim_api *call);
ANASIM_PRIVATE_API void anasim_api_exit(anasim_api *call);
/* The device clock now (CLOCK_MONOTONIC ns). */
ANASIM_PRIVATE_API uint64_t anasim_now_ns(void);
/* getpid(), cached (and forgotten in a forked child): activity records carry it. */
ANASIM_PRIVATE_API uint32_t anasim_pid(void);

/* ---- initwatch.c: the first call that initialised CUDA, and fork after it ----
 * Notes `name` as the process's first call that initialises the driver, unless one was
 * noted already or the call needs no driver (the API brackets note every outermost call;
 * the sim's CUPTI notes cuptiSubscribe and cuptiActivityEnable). */
ANASIM_PRIVATE_API void anasim_note_init(const char *name);
/* The name noted, or NULL while nothing initialised CUDA in this process. */
ANASIM_PRIVATE_API const char *anasim_first_init(void);
/* 1 when a call named `name` must fail: this process was forked after its parent
 * initialised CUDA and ANATOMIST_SIM_FORK_STRICT=1 (said once on stderr). */
ANASIM_PRIVATE_API int anasim_fork_refuses(const char *name);

#endif /* ANASIM_H */

/* ---- the device model, for the sim's libcuda.so.1 (memory.c, copy.c, device.c, kernel.c)
 *
 * The driver library owns no device state: every allocation it makes is an entry of the
 * runtime's one allocation table and is charged against the one capacity, so cuMemAlloc
 * and cudaMalloc (which the runtime answers through cuMemAlloc) compete for the same
 * bytes and cuMemGetInfo_v2 == cudaMemGetInfo. These functions take the device lock
 * themselves, emit the CUPTI memory activity records (CUpti_ActivityMemory4, and
 * CUpti_ActivityMemoryPool3 when the default pool is first used) with the correlation id
 * of the API call in flight, and answer with driver return codes. */
#ifndef ANASIM_H_DEVICE_MODEL
#define ANASIM_H_DEVICE_MODEL

#include <stddef.h>

/* What the runtime and the driver both answer. */
#define ANA_SIM_DEVICE_NAME  "Anatomist Simulated H100"
#define ANA_SIM_CUDA_VERSION 13000      /* runtime and driver version */
#define ANA_SIM_PITCH_ALIGN  512u       /* cudaMallocPitch / cuMemAllocPitch row alignment */

/* n rounded up to a multiple of `to` (wraps to a smaller value when n is too close to
 * SIZE_MAX: callers that care compare the result with n). */
static inline size_t anasim_round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

/* CUdeviceptr and pointers: device memory is host memory, the bits are the same. */
static inline void *anasim_ptr(CUdeviceptr d) { return (void *)(uintptr_t)d; }
static inline CUdeviceptr anasim_dptr(const void *p) { return (CUdeviceptr)(uintptr_t)p; }

typedef enum anasim_mem_kind {
    ANASIM_MEM_DEVICE,   /* cuMemAlloc, cuMemAllocPitch, cuMemAllocAsync: charged */
    ANASIM_MEM_MANAGED,  /* cuMemAllocManaged: charged */
    ANASIM_MEM_PINNED,   /* cuMemAllocHost, cuMemHostAlloc: page-locked host, not charged */
} anasim_mem_kind;

/* One allocation request. */
typedef struct anasim_alloc {
    anasim_mem_kind kind;
    size_t size;          /* bytes, > 0 */
    unsigned flags;       /* CU_MEM_ATTACH_* (managed) or CU_MEMHOSTALLOC_* (pinned) */
    int async;            /* stream-ordered: from a memory pool, ordered on `stream` */
    CUstream stream;      /* async only: 0, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD or a stream */
    int ptsz;             /* async only: handle 0 means the per-thread default stream */
    CUmemoryPool pool;    /* async only: NULL for the device's default pool */
} anasim_alloc;

/* Allocates; CUDA_ERROR_OUT_OF_MEMORY when a charged kind does not fit in capacity - used,
 * CUDA_ERROR_INVALID_HANDLE for an unknown stream, CUDA_ERROR_INVALID_VALUE for an
 * unknown pool. */
ANASIM_PRIVATE_API CUresult anasim_mem_alloc(const anasim_alloc *req, void **out);
/* Frees the allocation starting at p: device or managed memory (host = 0), or pinned host
 * memory (host = 1); anything else is CUDA_ERROR_INVALID_VALUE. `async` with its stream
 * and ptsz as in anasim_alloc. */
ANASIM_PRIVATE_API CUresult anasim_mem_free(void *p, int host, int async, CUstream stream,
                                            int ptsz);
/* free = capacity - used, total = capacity. */
ANASIM_PRIVATE_API void anasim_mem_info(size_t *free_bytes, size_t *total_bytes);
/* The allocation (or mapped range) containing p: its base and size. */
ANASIM_PRIVATE_API CUresult anasim_mem_range(const void *p, void **base, size_t *size);
/* Copies n bytes in the given cudaMemcpyKind direction (1 H2D, 2 D2H, 3 D2D), or sets n
 * bytes, on the legacy default stream, synchronously, through the runtime's own copy and
 * set path (copy.c); the device side must lie inside known device memory
 * (CUDA_ERROR_INVALID_VALUE otherwise). Never sets the runtime's last error. */
ANASIM_PRIVATE_API CUresult anasim_mem_copy(void *dst, const void *src, size_t n, int kind);
ANASIM_PRIVATE_API CUresult anasim_mem_set(void *dst, unsigned char value, size_t n);

/* Virtual memory management (cuMemCreate & co). Physical handles are charged when created
 * and given back when released and unmapped; `epoch` ties a charge to the device lifetime
 * so that a handle created before cudaDeviceReset (which zeroes the accounting) gives
 * nothing back after it. Both emit a MEMORY2 record (memoryKind DEVICE, address 0). */
ANASIM_PRIVATE_API CUresult anasim_vmm_charge(size_t bytes, uint64_t *epoch);
ANASIM_PRIVATE_API void anasim_vmm_uncharge(size_t bytes, uint64_t epoch);
/* Makes [va, va+size) known to the allocation table as device memory (copies, sets and
 * pointer attributes accept it; adjacent mapped ranges merge so that a buffer may span
 * two handles), or forgets it again. */
ANASIM_PRIVATE_API CUresult anasim_vmm_map(void *va, size_t size);
ANASIM_PRIVATE_API void anasim_vmm_unmap(void *va, size_t size);

/* Kernel launches by the driver (cuLaunchKernel, cuLaunchKernelEx and their _ptsz forms):
 * the same device path as the runtime's launches — validation, the stream's clock, stream
 * capture and the CUpti_ActivityKernel10 record with the correlation id of the driver call
 * in flight. `func` must be a kernel handle (cudaGetFuncBySymbol's cudaFunction_t or
 * cudaGetKernel's cudaKernel_t) of a loaded module, else CUDA_ERROR_INVALID_HANDLE; a grid
 * or block outside the limits or too much dynamic shared memory is
 * CUDA_ERROR_INVALID_VALUE; an unknown stream CUDA_ERROR_INVALID_HANDLE. Never sets the
 * runtime's last error. */
typedef struct anasim_launch {
    const void *func;     /* CUfunction / CUkernel */
    unsigned grid[3], block[3];
    unsigned smem;        /* dynamic shared memory, bytes */
    CUstream stream;      /* 0, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD or a stream */
    int ptsz;             /* handle 0 means the per-thread default stream */
    int cooperative;      /* CU_LAUNCH_ATTRIBUTE_COOPERATIVE */
} anasim_launch;
ANASIM_PRIVATE_API CUresult anasim_kernel_launch(const anasim_launch *req);
/* The mangled device name of a kernel handle (valid while its module is registered);
 * CUDA_ERROR_INVALID_HANDLE for anything else, CUDA_ERROR_INVALID_VALUE for a NULL name. */
ANASIM_PRIVATE_API CUresult anasim_kernel_name(const void *func, const char **name);
/* Offset and size of parameter `index` of a kernel handle (cuFuncGetParamInfo): read from
 * the kernel's cubin (docs/sim.md, "Kernel parameters"). CUDA_ERROR_INVALID_HANDLE for
 * anything but a loaded kernel, CUDA_ERROR_INVALID_VALUE for an index past the last
 * parameter or a NULL offset, CUDA_ERROR_NOT_SUPPORTED when no uncompressed cubin
 * describes the kernel (a library kernel has none), CUDA_ERROR_INVALID_IMAGE for an image
 * nvcc does not make. `size` may be NULL. */
ANASIM_PRIVATE_API CUresult anasim_kernel_param_info(const void *func, size_t index,
                                                     size_t *offset, size_t *size);

/* Kernels of the sim's libraries (libcublas.so.13, libcublasLt.so.13, libnccl.so.2), which
 * have no module: the kernel handle (a CUfunction for cuLaunchKernel & co, and for
 * cuFuncGetName) of the kernel called `name`, registered on first use — one handle per
 * name, valid for the life of the process (cudaDeviceReset and module unloading do not
 * touch it); it accepts up to 227 KiB of dynamic shared memory. NULL only when out of
 * memory. */
ANASIM_PRIVATE_API const void *anasim_library_kernel(const char *name);
/* The next kernel launch the calling thread submits (through any entry point) lasts
 * `duration_ns` instead of the cost model's formula and, when it runs eagerly, starts no
 * earlier than `not_before_ns` on the device clock (0: no constraint). Libraries call it
 * right before their launch: GEMMs timed by FLOPs, collectives that wait for every rank.
 * That launch consumes the setting, whether it succeeds or not; a captured launch keeps
 * the duration for its replays. */
ANASIM_PRIVATE_API void anasim_next_launch(uint64_t not_before_ns, uint64_t duration_ns);
/* When work submitted now to `stream` (as in anasim_launch) would start on the device
 * clock: after the stream's last work, the host's now and the thread's host floor, and
 * the default-stream dependencies. CUDA_ERROR_INVALID_HANDLE for an unknown stream,
 * CUDA_ERROR_INVALID_VALUE for a NULL t. */
ANASIM_PRIVATE_API CUresult anasim_stream_ready(CUstream stream, int ptsz, uint64_t *t);

/* cuDeviceGetAttribute: CUdevice_attribute and cudaDeviceAttr share their numbers.
 * CUDA_ERROR_INVALID_VALUE for an attribute out of range. */
ANASIM_PRIVATE_API CUresult anasim_device_attribute(int attr, int *value);
/* cudaDeviceSynchronize and cuCtxSynchronize: work is complete when submitted, so the
 * calling thread's host floor moves to the end of the latest work on any stream. */
ANASIM_PRIVATE_API void anasim_device_synchronize(void);

#endif /* ANASIM_H_DEVICE_MODEL */

/* ---- reaching the driver, for the sim's libraries (drvlink.c)
 *
 * NVIDIA's runtime, cuBLAS and NCCL find the driver at run time (the last two link the
 * runtime statically); so do the sim's libcudart.so.13, libcublas.so.13,
 * libcublasLt.so.13 and libnccl.so.2, all through this one loader. The entry points come
 * from libcuda.so.1's own cuGetProcAddress_v2: each pointer is what cuGetProcAddress hands
 * out (a profiler that interposes cuGetProcAddress or dlsym sees, and may wrap, them all). */
#ifndef ANASIM_H_DRIVER_LOAD
#define ANASIM_H_DRIVER_LOAD

#include <stddef.h>

/* One driver entry point to resolve. */
typedef struct anasim_driver_entry {
    const char *name;   /* base name, "cuMemAlloc" */
    cuuint64_t flags;   /* CU_GET_PROC_ADDRESS_DEFAULT or _PER_THREAD_DEFAULT_STREAM */
    void *slot;         /* the address of a function pointer of the entry point's type */
} anasim_driver_entry;

/* dlopens libcuda.so.1 (RTLD_NOW, found like NVIDIA's: LD_LIBRARY_PATH, the program's run
 * path, the loader cache; failing that, the copy in the directory of the object that
 * contains the address `beside`, i.e. next to the calling library), dlsyms
 * cuGetProcAddress_v2 on that handle, resolves cuInit and the n entries of `want` through
 * it by base name for CUDA 13000 (ANA_SIM_CUDA_VERSION) and calls cuInit(0). Returns 0
 * when all of that succeeded, with every slot filled and, when get_proc_address is not
 * NULL, cuGetProcAddress_v2 itself stored there (the address of a function pointer of its
 * type). Otherwise -1 after one line on stderr per failure naming what went wrong and
 * ending "; <who> will fail" (who: the caller's calls, "cuBLAS calls"); slots may then be
 * partly filled. Each call loads anew: callers call it once (pthread_once), without the
 * device lock held (the driver calls back into the runtime). */
ANASIM_PRIVATE_API int anasim_driver_load(const char *who, const void *beside,
                                          const anasim_driver_entry *want, size_t n,
                                          void *get_proc_address);

#endif /* ANASIM_H_DRIVER_LOAD */
