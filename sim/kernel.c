/*
 * kernel.c — the nvcc stub ABI (fat binary, function and variable registration, call
 * configuration, launches), the public launch entry points, function attributes and
 * occupancy.
 *
 * Kernels never execute (device code cannot run on the CPU): a launch is validated as
 * on a GPU, then occupies its stream for the cost model's duration. Kernel records are
 * never freed, because nvcc stubs cache the cudaKernel_t from __cudaGetKernel in a
 * function-local static; unregistering a module only marks its kernels unloaded.
 * Module variables get zero-filled storage (initialisers live in the device image,
 * which the sim does not parse) that survives cudaDeviceReset.
 *
 * Every public entry point is one API call for the sim's CUPTI (api.h); the nvcc stub
 * launch __cudaLaunchKernel(_ptsz) is reported as cudaLaunchKernel(_ptsz) with the host
 * stub as `func`, the registration calls are not reported. Each kernel that runs yields
 * one CUpti_ActivityKernel10 when an observer wants it, handed over after the lock is
 * released. On a capturing stream a launch becomes a graph node instead.
 *
 * Parameter layouts (cudaFuncGetParamInfo, and the driver's cuFuncGetParamInfo through
 * anasim_kernel_param_info) are read from the module's cubin (cubin.c) on the first query
 * for a kernel and kept with its record.
 *
 * The driver's launches (cuLaunchKernel & co, sim/driver/launch.c) take the same path
 * through anasim_kernel_launch, with a kernel handle (cudaGetFuncBySymbol, cudaGetKernel)
 * instead of a host stub and driver return codes.
 */
#include "sim.h"
#include "api.h"

#include <stdlib.h>
#include <string.h>

struct sim_module {
    void *fatbin;                /* the handle nvcc stores is a pointer to this field */
};

struct sim_kernel {
    void **module;
    const void *host_fun;
    char *name;                  /* mangled device name */
    int loaded;
    int max_dynamic_smem;
    int carveout;
    int params_read;             /* the cubin was read: params_err, params */
    cudaError_t params_err;
    struct ana_sim_params params;
};

struct sim_symbol {
    void **module;
    char *storage;
    size_t size;
};

static struct ana_sim_map kernels_by_fun, kernels_by_handle, symbols;

/* Per-thread stack of <<<...>>> configurations (arguments may themselves launch). */
struct call_config {
    dim3 grid, block;
    size_t smem;
    cudaStream_t stream;
};
static __thread struct call_config config_stack[16];
static __thread unsigned config_depth;

/* ---- registration ---------------------------------------------------------------- */

ANA_SIM_API void **__cudaRegisterFatBinary(void *fatCubin)
{
    struct sim_module *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    m->fatbin = fatCubin;
    return &m->fatbin;
}

ANA_SIM_API void __cudaRegisterFatBinaryEnd(void **fatCubinHandle) {}

ANA_SIM_API char __cudaInitModule(void **fatCubinHandle) { return 1; }

static void unload_kernel(void *val)
{
    ((struct sim_kernel *)val)->loaded = 0;
}

ANA_SIM_API void __cudaUnregisterFatBinary(void **fatCubinHandle)
{
    if (!fatCubinHandle)
        return;
    ana_sim_enter();
    /* Rebuild the lookup maps without this module's entries. */
    struct ana_sim_map keep_fun = { 0 }, keep_sym = { 0 };
    for (size_t i = 0; i < kernels_by_fun.cap; i++) {
        struct sim_kernel *k = kernels_by_fun.vals[i];
        if (!k)
            continue;
        if (k->module == fatCubinHandle)
            unload_kernel(k);
        else
            ana_sim_map_put(&keep_fun, k->host_fun, k);
    }
    for (size_t i = 0; i < symbols.cap; i++) {
        struct sim_symbol *s = symbols.vals[i];
        if (!s)
            continue;
        if (s->module != fatCubinHandle) {
            ana_sim_map_put(&keep_sym, symbols.keys[i], s);
            continue;
        }
        ana_sim_mem_remove_locked(s->storage);
        free(s->storage);
        free(s);
    }
    ana_sim_map_clear(&kernels_by_fun, NULL);
    ana_sim_map_clear(&symbols, NULL);
    kernels_by_fun = keep_fun;
    symbols = keep_sym;
    ana_sim_leave();
    free(fatCubinHandle);   /* == the sim_module, whose first field it points to */
}

ANA_SIM_API void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
                            const char *deviceName, int thread_limit, uint3 *tid,
                            uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize)
{
    struct sim_kernel *k = calloc(1, sizeof(*k));
    const char *name = deviceFun ? deviceFun : deviceName;
    if (!k || !hostFun)
        goto fail;
    k->module = fatCubinHandle;
    k->host_fun = hostFun;
    k->name = strdup(name ? name : "");
    k->loaded = 1;
    k->max_dynamic_smem = ANA_SIM_SMEM_DEFAULT_MAX;
    k->carveout = -1;
    if (!k->name)
        goto fail;
    ana_sim_enter();
    int rc = ana_sim_map_put(&kernels_by_fun, hostFun, k);
    if (rc == 0)
        rc = ana_sim_map_put(&kernels_by_handle, k, k);
    ana_sim_leave();
    if (rc == 0)
        return;
fail:
    if (k)
        free(k->name);
    free(k);
}

static void register_symbol(void **module, const void *host_key, size_t size, int managed,
                            void **storage_out)
{
    struct sim_symbol *s = calloc(1, sizeof(*s));
    char *storage = calloc(1, size ? size : 1);
    if (!s || !storage)
        goto fail;
    s->module = module;
    s->storage = storage;
    s->size = size;
    struct ana_sim_mem m = { storage, size, 0, 0,
                             managed ? ANA_SIM_MEM_SYMBOL_MANAGED : ANA_SIM_MEM_SYMBOL, 0 };
    ana_sim_enter();
    int ok = ana_sim_map_put(&symbols, host_key, s) == 0 &&
             ana_sim_mem_add_locked(&m) == cudaSuccess;
    if (!ok)
        ana_sim_map_del(&symbols, host_key);
    ana_sim_leave();
    if (!ok)
        goto fail;
    if (storage_out)
        *storage_out = storage;
    return;
fail:
    free(storage);
    free(s);
}

ANA_SIM_API void __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress,
                       const char *deviceName, int ext, size_t size, int constant,
                       int global)
{
    register_symbol(fatCubinHandle, hostVar, size, 0, NULL);
}

/* A __managed__ variable's host shadow is a pointer the runtime sets to its storage;
 * host code reads the variable through it, so the storage is the variable. */
ANA_SIM_API void __cudaRegisterManagedVar(void **fatCubinHandle, void **hostVarPtrAddress,
                              char *deviceAddress, const char *deviceName, int ext,
                              size_t size, int constant, int global)
{
    if (hostVarPtrAddress)
        register_symbol(fatCubinHandle, hostVarPtrAddress, size, 1, hostVarPtrAddress);
}

int ana_sim_symbol_find_locked(const void *symbol, char **storage, size_t *size)
{
    struct sim_symbol *s = ana_sim_map_get(&symbols, symbol);
    if (!s)
        return 0;
    *storage = s->storage;
    *size = s->size;
    return 1;
}

/* ---- call configuration ---------------------------------------------------------- */

ANA_SIM_API unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                     struct CUstream_st *stream)
{
    if (config_depth >= sizeof(config_stack) / sizeof(config_stack[0]))
        return 1;
    config_stack[config_depth++] = (struct call_config){ gridDim, blockDim, sharedMem,
                                                         (cudaStream_t)stream };
    return 0;
}

ANA_SIM_API cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
                                       void *stream)
{
    if (config_depth == 0)
        return ana_sim_ret(cudaErrorMissingConfiguration);
    const struct call_config *c = &config_stack[--config_depth];
    if (!gridDim || !blockDim || !sharedMem)
        return ana_sim_ret(cudaErrorInvalidValue);
    *gridDim = c->grid;
    *blockDim = c->block;
    *sharedMem = c->smem;
    if (stream)
        *(cudaStream_t *)stream = c->stream;
    return cudaSuccess;
}

/* ---- launches -------------------------------------------------------------------- */

/* A host stub address or a cudaKernel_t (cudaLaunchKernel accepts both). */
static struct sim_kernel *find_kernel_locked(const void *func)
{
    struct sim_kernel *k = ana_sim_map_get(&kernels_by_fun, func);
    if (!k)
        k = ana_sim_map_get(&kernels_by_handle, func);
    return k && k->loaded ? k : NULL;
}

static int valid_config(dim3 g, dim3 b)
{
    if (!g.x || !g.y || !g.z || !b.x || !b.y || !b.z)
        return 0;
    if (g.x > 2147483647u || g.y > 65535 || g.z > 65535)
        return 0;
    if (b.x > 1024 || b.y > 1024 || b.z > 64)
        return 0;
    return (uint64_t)b.x * b.y * b.z <= 1024;
}

/* The codes an eager launch answers: cudaErrorInvalidDeviceFunction, ...Configuration,
 * ...Value. */
static cudaError_t check_locked(const struct ana_sim_op *op)
{
    const struct sim_kernel *k = op->kernel;
    if (!k || !k->loaded)
        return cudaErrorInvalidDeviceFunction;
    if (!valid_config(op->grid, op->block))
        return cudaErrorInvalidConfiguration;
    if (op->smem > (size_t)k->max_dynamic_smem)
        return cudaErrorInvalidValue;
    return cudaSuccess;
}

static int64_t next_grid_id = 1;

static void fill_kernel(CUpti_ActivityKernel10 *r, const struct ana_sim_op *op,
                        const struct ana_sim_exec *x, int64_t grid_id, uint64_t start,
                        uint64_t end)
{
    const struct sim_kernel *k = op->kernel;
    memset(r, 0, sizeof(*r));
    r->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    r->registersPerThread = 32;
    r->start = start;
    r->end = end;
    r->completed = end;
    r->contextId = 1;
    r->streamId = ana_sim_stream_id_locked(x->stream);
    r->gridX = (int32_t)op->grid.x;
    r->gridY = (int32_t)op->grid.y;
    r->gridZ = (int32_t)op->grid.z;
    r->blockX = (int32_t)op->block.x;
    r->blockY = (int32_t)op->block.y;
    r->blockZ = (int32_t)op->block.z;
    r->dynamicSharedMemory = (int32_t)op->smem;
    r->correlationId = ana_sim_correlation();
    r->gridId = grid_id;
    r->name = k->name;
    r->queued = CUPTI_TIMESTAMP_UNKNOWN;
    r->submitted = CUPTI_TIMESTAMP_UNKNOWN;
    r->launchType = op->launch_type;
    r->graphNodeId = x->node_id;
    r->shmemLimitConfig = k->max_dynamic_smem > ANA_SIM_SMEM_DEFAULT_MAX
                          ? CUPTI_FUNC_SHMEM_LIMIT_OPTIN : CUPTI_FUNC_SHMEM_LIMIT_DEFAULT;
    r->graphId = x->graph_id;
}

/* Runs a validated kernel op: its stream's clock advances; every launch gets a grid id. */
static void run_locked(const struct ana_sim_op *op, const struct ana_sim_exec *x,
                       union ana_sim_record *rec)
{
    rec->base.kind = CUPTI_ACTIVITY_KIND_INVALID;
    uint64_t dur = op->fixed_ns ? op->fixed_ns : ana_sim_cost_kernel_ns(op->grid, op->block);
    uint64_t start = ana_sim_stream_enqueue_after_locked(x->stream, dur, op->not_before_ns);
    int64_t grid_id = next_grid_id++;
    if (ANA_SIM_WANTS(x->want, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL))
        fill_kernel(&rec->kernel, op, x, grid_id, start, start + dur);
}

cudaError_t ana_sim_kernel_replay_locked(const struct ana_sim_op *op,
                                         const struct ana_sim_exec *x,
                                         union ana_sim_record *rec)
{
    rec->base.kind = CUPTI_ACTIVITY_KIND_INVALID;
    cudaError_t err = check_locked(op);
    if (err == cudaSuccess)
        run_locked(op, x, rec);
    return err;
}

/* ---- library kernels (anasim.h) ---- */

/* What anasim_next_launch set for this thread's next launch. */
struct next_launch {
    uint64_t not_before_ns, duration_ns;
};
static __thread struct next_launch next_launch;

ANASIM_PRIVATE_API void anasim_next_launch(uint64_t not_before_ns, uint64_t duration_ns)
{
    next_launch = (struct next_launch){ not_before_ns, duration_ns };
}

/* Library kernels by name: few (tens), looked up once per launch by their library, so a
 * list is enough. */
struct library_kernel {
    struct sim_kernel k;
    struct library_kernel *next;
};
static struct library_kernel *library_kernels;

ANASIM_PRIVATE_API const void *anasim_library_kernel(const char *name)
{
    if (!name)
        return NULL;
    ana_sim_enter();
    struct library_kernel *l = library_kernels;
    while (l && strcmp(l->k.name, name) != 0)
        l = l->next;
    if (!l && (l = calloc(1, sizeof(*l))) != NULL) {
        l->k.name = strdup(name);
        l->k.loaded = 1;
        l->k.max_dynamic_smem = ANA_SIM_SMEM_OPTIN_MAX;
        l->k.carveout = -1;
        if (!l->k.name || ana_sim_map_put(&kernels_by_handle, &l->k, &l->k) != 0) {
            free(l->k.name);
            free(l);
            l = NULL;
        } else {
            l->next = library_kernels;
            library_kernels = l;
        }
    }
    ana_sim_leave();
    return l ? (const void *)&l->k : NULL;
}

/* A kernel handle only (cudaKernel_t, cudaFunction_t): what the driver's launches take. */
static struct sim_kernel *find_handle_locked(const void *func)
{
    struct sim_kernel *k = ana_sim_map_get(&kernels_by_handle, func);
    return k && k->loaded ? k : NULL;
}

/* How a launch names its kernel: find_kernel_locked (a host stub or a kernel handle),
 * find_handle_locked (a kernel handle only: the driver's launches) or already_found (the
 * kernel record itself, looked up before the call began: nvcc's stub launches). */
typedef struct sim_kernel *(*kernel_finder)(const void *func);

static struct sim_kernel *already_found(const void *k) { return (struct sim_kernel *)k; }

/* Validates and runs a launch, or records it while the stream captures. Sets no last
 * error: the runtime's entry points do (ANA_SIM_RT_RETURN), the driver's must not. */
static cudaError_t submit(kernel_finder find, const void *func, dim3 grid, dim3 block,
                          size_t smem, cudaStream_t stream, int ptsz, uint8_t launch_type)
{
    uint64_t want = ana_sim_wanted_kinds();
    union ana_sim_record rec = { .base.kind = CUPTI_ACTIVITY_KIND_INVALID };
    struct ana_sim_stream *s = NULL;
    struct next_launch next = next_launch;
    next_launch = (struct next_launch){ 0, 0 };
    ana_sim_enter();
    struct ana_sim_op op = { .kind = ANA_SIM_OP_KERNEL, .async = 1, .kernel = find(func),
                             .grid = grid, .block = block, .smem = smem,
                             .launch_type = launch_type, .fixed_ns = next.duration_ns };
    cudaError_t err = check_locked(&op);
    if (err == cudaSuccess)
        err = ana_sim_stream_resolve_locked(stream, ptsz, &s);
    if (err == cudaSuccess && ana_sim_capturing_locked(s)) {
        err = ana_sim_capture_add_locked(s, &op);
    } else if (err == cudaSuccess) {
        struct ana_sim_exec x = { s, 0, 0, want };
        op.not_before_ns = next.not_before_ns;
        run_locked(&op, &x, &rec);
    }
    ana_sim_leave();
    ana_sim_emit(&rec, 1);
    return err;
}

static cudaError_t launch(const void *func, dim3 grid, dim3 block, size_t smem,
                          cudaStream_t stream, int ptsz, uint8_t launch_type)
{
    return submit(find_kernel_locked, func, grid, block, smem, stream, ptsz, launch_type);
}

/* The driver's launches (anasim.h): a kernel handle, driver return codes. Bad dimensions
 * and too much dynamic shared memory are CUDA_ERROR_INVALID_VALUE for the driver; stream
 * and capture errors share their numbers with the runtime's. */
ANASIM_PRIVATE_API CUresult anasim_kernel_launch(const anasim_launch *req)
{
    if (!req)
        return CUDA_ERROR_INVALID_VALUE;
    dim3 grid = { req->grid[0], req->grid[1], req->grid[2] };
    dim3 block = { req->block[0], req->block[1], req->block[2] };
    uint8_t type = req->cooperative ? CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE
                                    : CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR;
    cudaError_t err = submit(find_handle_locked, req->func, grid, block, req->smem,
                             (cudaStream_t)req->stream, req->ptsz, type);
    switch (err) {
    case cudaErrorInvalidDeviceFunction:
        return CUDA_ERROR_INVALID_HANDLE;
    case cudaErrorInvalidConfiguration:
        return CUDA_ERROR_INVALID_VALUE;
    default:
        return (CUresult)err;
    }
}

ANASIM_PRIVATE_API CUresult anasim_kernel_name(const void *func, const char **name)
{
    ana_sim_enter();
    const struct sim_kernel *k = find_handle_locked(func);
    if (k && name)
        *name = k->name;
    ana_sim_leave();
    return !k ? CUDA_ERROR_INVALID_HANDLE : name ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

ANASIM_PRIVATE_API CUresult anasim_kernel_param_info(const void *func, size_t index,
                                                     size_t *offset, size_t *size)
{
    cudaError_t err = ana_sim_kernel_param_info(func, 1, index, offset, size);
    /* The other codes share their numbers with the driver's (INVALID_VALUE, NOT_SUPPORTED,
     * INVALID_IMAGE). */
    return err == cudaErrorInvalidDeviceFunction ? CUDA_ERROR_INVALID_HANDLE : (CUresult)err;
}

static cudaError_t get_kernel(cudaKernel_t *kernel, const void *hostFun)
{
    if (!kernel)
        return cudaErrorInvalidValue;
    ana_sim_enter();
    struct sim_kernel *k = find_kernel_locked(hostFun);
    ana_sim_leave();
    if (!k)
        return cudaErrorInvalidDeviceFunction;
    *kernel = (cudaKernel_t)(void *)k;
    return cudaSuccess;
}

/* Not an API call for CUPTI (the nvcc stubs call it), but it records its error. */
ANA_SIM_API cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *hostFun)
{
    return ana_sim_ret(get_kernel(kernel, hostFun));
}

ANA_SIM_API cudaError_t cudaGetKernel(cudaKernel_t *kernelPtr, const void *entryFuncAddr)
{
    ANA_SIM_TRACED(cudaGetKernel, v12000, get_kernel(kernelPtr, entryFuncAddr),
                   kernelPtr, entryFuncAddr);
}

/* The function handle is the kernel's record, the same value cudaGetKernel gives: the
 * driver accepts it as a CUfunction (or a CUkernel), as CUDA lets both be cast. */
ANA_SIM_API cudaError_t cudaGetFuncBySymbol(cudaFunction_t *functionPtr, const void *symbolPtr)
{
    ANA_SIM_TRACED(cudaGetFuncBySymbol, v11000,
                   get_kernel((cudaKernel_t *)(void *)functionPtr, symbolPtr),
                   functionPtr, symbolPtr);
}

/* An nvcc stub launch names its kernel by the handle __cudaGetKernel gave (a host stub
 * works too, as for cudaLaunchKernel). The kernel is looked up once, before the call
 * begins, because CUPTI shows the host stub it belongs to as `func`; the record found
 * is then launched as it is (records are never freed; an unloaded one fails the launch
 * as a lookup at launch time would). */
static struct sim_kernel *find_stub_launch(cudaKernel_t kernel, const void **host_fun)
{
    ana_sim_enter();
    struct sim_kernel *k = ana_sim_map_get(&kernels_by_handle, kernel);
    *host_fun = k ? k->host_fun : (const void *)kernel;
    if (!k)
        k = find_kernel_locked(kernel);
    ana_sim_leave();
    return k;
}

ANA_SIM_API cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim,
                               void **args, size_t sharedMem, cudaStream_t stream)
{
    const void *fun;
    struct sim_kernel *k = find_stub_launch(kernel, &fun);
    ANA_SIM_TRACED(cudaLaunchKernel, v7000,
                   submit(already_found, k, gridDim, blockDim, sharedMem, stream, 0, 0),
                   fun, gridDim, blockDim, args, sharedMem, stream);
}

ANA_SIM_API cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim,
                                    void **args, size_t sharedMem, cudaStream_t stream)
{
    const void *fun;
    struct sim_kernel *k = find_stub_launch(kernel, &fun);
    ANA_SIM_TRACED(cudaLaunchKernel_ptsz, v7000,
                   submit(already_found, k, gridDim, blockDim, sharedMem, stream, 1, 0),
                   fun, gridDim, blockDim, args, sharedMem, stream);
}

ANA_SIM_API cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim,
                                         void **args, size_t sharedMem, cudaStream_t stream)
{
    ANA_SIM_TRACED(cudaLaunchKernel, v7000,
                   launch(func, gridDim, blockDim, sharedMem, stream, 0, 0),
                   func, gridDim, blockDim, args, sharedMem, stream);
}

ANA_SIM_API cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim,
                                              dim3 blockDim, void **args, size_t sharedMem,
                                              cudaStream_t stream)
{
    ANA_SIM_TRACED(cudaLaunchKernel_ptsz, v7000,
                   launch(func, gridDim, blockDim, sharedMem, stream, 1, 0),
                   func, gridDim, blockDim, args, sharedMem, stream);
}

/* Launch attributes (clusters, priorities, programmatic serialisation) do not change
 * the cost model and are accepted as given; cudaLaunchAttributeCooperative makes the
 * launch cooperative. */
static cudaError_t launch_ex(const cudaLaunchConfig_t *config, const void *func, int ptsz)
{
    if (!config)
        return cudaErrorInvalidValue;
    uint8_t type = CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR;
    for (unsigned i = 0; config->attrs && i < config->numAttrs; i++)
        if (config->attrs[i].id == cudaLaunchAttributeCooperative &&
            config->attrs[i].val.cooperative)
            type = CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE;
    return launch(func, config->gridDim, config->blockDim, config->dynamicSmemBytes,
                  config->stream, ptsz, type);
}

ANA_SIM_API cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config,
                                            const void *func, void **args)
{
    ANA_SIM_TRACED(cudaLaunchKernelExC, v11060, launch_ex(config, func, 0), config, func,
                   args);
}

ANA_SIM_API cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *config,
                                                 const void *func, void **args)
{
    ANA_SIM_TRACED(cudaLaunchKernelExC_ptsz, v11060, launch_ex(config, func, 1), config,
                   func, args);
}

ANA_SIM_API cudaError_t cudaLaunchCooperativeKernel(const void *func, dim3 gridDim,
                                                    dim3 blockDim, void **args,
                                                    size_t sharedMem, cudaStream_t stream)
{
    ANA_SIM_TRACED(cudaLaunchCooperativeKernel, v9000,
                   launch(func, gridDim, blockDim, sharedMem, stream, 0,
                          CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE),
                   func, gridDim, blockDim, args, sharedMem, stream);
}

ANA_SIM_API cudaError_t cudaLaunchCooperativeKernel_ptsz(const void *func, dim3 gridDim,
                                                         dim3 blockDim, void **args,
                                                         size_t sharedMem,
                                                         cudaStream_t stream)
{
    ANA_SIM_TRACED(cudaLaunchCooperativeKernel_ptsz, v9000,
                   launch(func, gridDim, blockDim, sharedMem, stream, 1,
                          CUPTI_ACTIVITY_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE),
                   func, gridDim, blockDim, args, sharedMem, stream);
}

/* ---- function attributes and occupancy ------------------------------------------- */

static cudaError_t func_get_attributes(struct cudaFuncAttributes *attr, const void *func)
{
    if (!attr)
        return cudaErrorInvalidValue;
    ana_sim_enter();
    struct sim_kernel *k = find_kernel_locked(func);
    if (k) {
        memset(attr, 0, sizeof(*attr));
        attr->maxThreadsPerBlock = 1024;
        attr->numRegs = 32;
        attr->ptxVersion = 90;
        attr->binaryVersion = 90;
        attr->cacheModeCA = 0;
        attr->maxDynamicSharedSizeBytes = k->max_dynamic_smem;
        attr->preferredShmemCarveout = k->carveout;
    }
    ana_sim_leave();
    return k ? cudaSuccess : cudaErrorInvalidDeviceFunction;
}

ANA_SIM_API cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *attr,
                                              const void *func)
{
    ANA_SIM_TRACED(cudaFuncGetAttributes, v3020, func_get_attributes(attr, func), attr,
                   func);
}

static cudaError_t func_set_attribute(const void *func, enum cudaFuncAttribute attr,
                                      int value)
{
    cudaError_t err = cudaSuccess;
    ana_sim_enter();
    struct sim_kernel *k = find_kernel_locked(func);
    if (!k)
        err = cudaErrorInvalidDeviceFunction;
    else if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
        if (value < 0 || value > ANA_SIM_SMEM_OPTIN_MAX)
            err = cudaErrorInvalidValue;
        else
            k->max_dynamic_smem = value;
    } else if (attr == cudaFuncAttributePreferredSharedMemoryCarveout) {
        if (value < -1 || value > 100)
            err = cudaErrorInvalidValue;
        else
            k->carveout = value;
    } else if ((unsigned)attr >= cudaFuncAttributeMax) {
        err = cudaErrorInvalidValue;
    }
    ana_sim_leave();
    return err;
}

ANA_SIM_API cudaError_t cudaFuncSetAttribute(const void *func, enum cudaFuncAttribute attr,
                                             int value)
{
    ANA_SIM_TRACED(cudaFuncSetAttribute, v9000, func_set_attribute(func, attr, value), func,
                   attr, value);
}

static cudaError_t func_get_name(const char **name, const void *func)
{
    if (!name)
        return cudaErrorInvalidValue;
    ana_sim_enter();
    struct sim_kernel *k = find_kernel_locked(func);
    if (k)
        *name = k->name;
    ana_sim_leave();
    return k ? cudaSuccess : cudaErrorInvalidDeviceFunction;
}

ANA_SIM_API cudaError_t cudaFuncGetName(const char **name, const void *func)
{
    ANA_SIM_TRACED(cudaFuncGetName, v12030, func_get_name(name, func), name, func);
}

/* The layout is read on the first query, under the device lock (parsing is pure and
 * bounded by the image), and kept for the kernel's lifetime: records are never freed. */
cudaError_t ana_sim_kernel_param_info(const void *func, int handle_only, size_t index,
                                      size_t *offset, size_t *size)
{
    ana_sim_enter();
    struct sim_kernel *k = handle_only ? find_handle_locked(func) : find_kernel_locked(func);
    cudaError_t err = k ? cudaSuccess : cudaErrorInvalidDeviceFunction;
    if (k && !k->params_read) {
        k->params_err = ana_sim_cubin_params(k->module ? *k->module : NULL, k->name,
                                             &k->params);
        k->params_read = 1;
    }
    if (k)
        err = k->params_err;
    if (err == cudaSuccess && (!offset || index >= k->params.count))
        err = cudaErrorInvalidValue;
    if (err == cudaSuccess) {
        *offset = k->params.param[index].offset;
        if (size)
            *size = k->params.param[index].size;
    }
    ana_sim_leave();
    return err;
}

ANA_SIM_API cudaError_t cudaFuncGetParamInfo(const void *func, size_t paramIndex,
                                             size_t *paramOffset, size_t *paramSize)
{
    ANA_SIM_TRACED(cudaFuncGetParamInfo, v12040,
                   ana_sim_kernel_param_info(func, 0, paramIndex, paramOffset, paramSize),
                   func, paramIndex, paramOffset, paramSize);
}

/* Occupancy with the sim's fixed kernel resources (32 registers/thread, no static
 * shared memory): the tightest of the thread, block, register and smem limits. */
static cudaError_t occupancy(int *numBlocks, const void *func, int blockSize, size_t smem)
{
    if (!numBlocks || blockSize <= 0)
        return cudaErrorInvalidValue;
    ana_sim_enter();
    struct sim_kernel *k = find_kernel_locked(func);
    ana_sim_leave();
    if (!k)
        return cudaErrorInvalidDeviceFunction;
    if (blockSize > 1024 || smem > (size_t)ANA_SIM_SMEM_OPTIN_MAX) {
        *numBlocks = 0;
        return cudaSuccess;
    }
    int warps = (blockSize + 31) / 32;
    int by_threads = 2048 / (warps * 32);
    int by_regs = 65536 / (warps * 32 * 32);
    int by_smem = (int)(ANA_SIM_SMEM_PER_SM / (smem + 1024));
    int n = 32;
    n = by_threads < n ? by_threads : n;
    n = by_regs < n ? by_regs : n;
    n = by_smem < n ? by_smem : n;
    *numBlocks = n;
    return cudaSuccess;
}

ANA_SIM_API cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks,
        const void *func, int blockSize, size_t dynamicSMemSize)
{
    ANA_SIM_TRACED(cudaOccupancyMaxActiveBlocksPerMultiprocessor, v6050,
                   occupancy(numBlocks, func, blockSize, dynamicSMemSize),
                   numBlocks, func, blockSize, dynamicSMemSize);
}

ANA_SIM_API cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
        int *numBlocks, const void *func, int blockSize, size_t dynamicSMemSize,
        unsigned int flags)
{
    ANA_SIM_TRACED(cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags, v7000,
                   (flags & ~(unsigned)cudaOccupancyDisableCachingOverride)
                       ? cudaErrorInvalidValue
                       : occupancy(numBlocks, func, blockSize, dynamicSMemSize),
                   numBlocks, func, blockSize, dynamicSMemSize, flags);
}
