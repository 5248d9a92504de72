/*
 * device.c — the one simulated device: lock and lazy initialisation, capacity setting,
 * device selection, properties and attributes, limits, flags, versions, reset.
 *
 * The capacity is read from ANATOMIST_SIM_MEMORY on first use and re-read by every
 * cudaDeviceReset (documented in docs/sim.md), so tests can change it in-process.
 */
#include "sim.h"
#include "size.h"
#include "api.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static pthread_mutex_t sim_mutex = PTHREAD_MUTEX_INITIALIZER;
static int initialised;
static uint64_t capacity = ANA_SIM_DEFAULT_CAPACITY;
static unsigned device_flags;
static size_t limits[cudaLimitPersistingL2CacheSize + 1];

static const size_t default_limits[cudaLimitPersistingL2CacheSize + 1] = {
    [cudaLimitStackSize] = 1024,
    [cudaLimitPrintfFifoSize] = 1 << 20,
    [cudaLimitMallocHeapSize] = 8 << 20,
    [cudaLimitDevRuntimeSyncDepth] = 2,
    [cudaLimitDevRuntimePendingLaunchCount] = 2048,
    [cudaLimitMaxL2FetchGranularity] = 32,
    [cudaLimitPersistingL2CacheSize] = 0,
};

void ana_sim_lock(void) { pthread_mutex_lock(&sim_mutex); }
void ana_sim_unlock(void) { pthread_mutex_unlock(&sim_mutex); }

uint64_t ana_sim_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int ana_sim_current_device(void) { return 0; }


static void read_capacity(void)
{
    const char *env = getenv("ANATOMIST_SIM_MEMORY");
    uint64_t bytes;
    capacity = ANA_SIM_DEFAULT_CAPACITY;
    if (env && *env) {
        if (ana_parse_size(env, &bytes) == 0)
            capacity = bytes;
        else
            fprintf(stderr, "anatomist-sim: ANATOMIST_SIM_MEMORY='%s' is not a size "
                            "(e.g. 80GiB, 512M, 1000000000); using 80 GiB\n", env);
    }
}

static void reset_device_state_locked(void)
{
    read_capacity();
    device_flags = 0;
    memcpy(limits, default_limits, sizeof(limits));
}

void ana_sim_enter(void)
{
    ana_sim_lock();
    if (!initialised) {
        reset_device_state_locked();
        initialised = 1;
    }
}

uint64_t ana_sim_capacity_locked(void) { return capacity; }

/* ---- devices -------------------------------------------------------------------- */

/* *out = v for the "get one int" entry points; NULL is cudaErrorInvalidValue. */
static cudaError_t put_int(int *out, int v)
{
    if (!out)
        return cudaErrorInvalidValue;
    *out = v;
    return cudaSuccess;
}

ANA_SIM_API cudaError_t cudaGetDeviceCount(int *count)
{
    return ana_sim_ret(put_int(count, 1));
}

ANA_SIM_API cudaError_t cudaGetDevice(int *device)
{
    return ana_sim_ret(put_int(device, 0));
}

ANA_SIM_API cudaError_t cudaSetDevice(int device)
{
    return ana_sim_ret(device == 0 ? cudaSuccess : cudaErrorInvalidDevice);
}

ANA_SIM_API cudaError_t cudaInitDevice(int device, unsigned int deviceFlags,
                                       unsigned int flags)
{
    return ana_sim_ret(device == 0 ? cudaSuccess : cudaErrorInvalidDevice);
}

ANA_SIM_API cudaError_t cudaChooseDevice(int *device, const struct cudaDeviceProp *prop)
{
    if (!device || !prop)
        return ana_sim_ret(cudaErrorInvalidValue);
    *device = 0;
    return cudaSuccess;
}

static void fill_props(struct cudaDeviceProp *p)
{
    memset(p, 0, sizeof(*p));
    snprintf(p->name, sizeof(p->name), "%s", ANA_SIM_DEVICE_NAME);
    memcpy(p->uuid.bytes, "anatomist-sim-00", 16);
    p->totalGlobalMem = capacity;
    p->sharedMemPerBlock = ANA_SIM_SMEM_DEFAULT_MAX;
    p->regsPerBlock = 65536;
    p->warpSize = 32;
    p->memPitch = 2147483647;
    p->maxThreadsPerBlock = 1024;
    p->maxThreadsDim[0] = 1024, p->maxThreadsDim[1] = 1024, p->maxThreadsDim[2] = 64;
    p->maxGridSize[0] = 2147483647, p->maxGridSize[1] = 65535, p->maxGridSize[2] = 65535;
    p->totalConstMem = 65536;
    p->major = 9;
    p->minor = 0;
    p->textureAlignment = 512;
    p->texturePitchAlignment = 32;
    p->multiProcessorCount = ANA_SIM_SM_COUNT;
    p->canMapHostMemory = 1;
    p->maxTexture1D = 131072;
    p->maxTexture2D[0] = 131072, p->maxTexture2D[1] = 65536;
    p->maxTexture3D[0] = p->maxTexture3D[1] = p->maxTexture3D[2] = 16384;
    p->surfaceAlignment = 512;
    p->concurrentKernels = 1;
    p->ECCEnabled = 1;
    p->pciBusID = 0x1b;
    p->asyncEngineCount = 3;
    p->unifiedAddressing = 1;
    p->memoryBusWidth = 5120;
    p->l2CacheSize = 50 << 20;
    p->persistingL2CacheMaxSize = 30 << 20;
    p->maxThreadsPerMultiProcessor = 2048;
    p->streamPrioritiesSupported = 1;
    p->globalL1CacheSupported = 1;
    p->localL1CacheSupported = 1;
    p->sharedMemPerMultiprocessor = ANA_SIM_SMEM_PER_SM;
    p->regsPerMultiprocessor = 65536;
    p->managedMemory = 1;
    p->concurrentManagedAccess = 1;
    p->pageableMemoryAccess = 0;
    p->computePreemptionSupported = 1;
    p->canUseHostPointerForRegisteredMem = 1;
    p->cooperativeLaunch = 1;
    p->sharedMemPerBlockOptin = ANA_SIM_SMEM_OPTIN_MAX;
    p->maxBlocksPerMultiProcessor = 32;
    p->accessPolicyMaxWindowSize = 134213632;
    p->reservedSharedMemPerBlock = 1024;
    p->hostRegisterSupported = 1;
    p->sparseCudaArraySupported = 1;
    p->hostRegisterReadOnlySupported = 1;
    p->timelineSemaphoreInteropSupported = 1;
    p->memoryPoolsSupported = 1;
    p->memoryPoolSupportedHandleTypes = 1;
    p->deferredMappingCudaArraySupported = 1;
    p->ipcEventSupported = 1;
    p->clusterLaunch = 1;
    p->unifiedFunctionPointers = 1;
    p->deviceNumaId = -1;
    p->hostNumaId = -1;
    p->gpuPciDeviceID = 0x233010de;
}

ANA_SIM_API cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
    if (!prop)
        return ana_sim_ret(cudaErrorInvalidValue);
    if (device != 0)
        return ana_sim_ret(cudaErrorInvalidDevice);
    ana_sim_enter();
    fill_props(prop);
    ana_sim_leave();
    return cudaSuccess;
}

/* Attributes that have no field in cudaDeviceProp, or differ from it. */
static int extra_attribute(enum cudaDeviceAttr attr, int *value)
{
    switch (attr) {
    case cudaDevAttrClockRate: *value = 1980000; return 1;          /* kHz */
    case cudaDevAttrMemoryClockRate: *value = 2619000; return 1;    /* kHz */
    case cudaDevAttrGpuOverlap: *value = 1; return 1;
    case cudaDevAttrComputeMode: *value = cudaComputeModeDefault; return 1;
    case cudaDevAttrSingleToDoublePrecisionPerfRatio: *value = 2; return 1;
    case cudaDevAttrCanFlushRemoteWrites: *value = 0; return 1;
    case cudaDevAttrMemSyncDomainCount: *value = 4; return 1;
    case cudaDevAttrHostNativeAtomicSupported: *value = 0; return 1;
    default: return 0;
    }
}

static cudaError_t device_attribute(int *value, enum cudaDeviceAttr attr, int device)
{
    if (!value || attr < 1 || attr >= cudaDevAttrMax)
        return cudaErrorInvalidValue;
    if (device != 0)
        return cudaErrorInvalidDevice;
    if (extra_attribute(attr, value))
        return cudaSuccess;
    struct cudaDeviceProp p;
    ana_sim_enter();
    fill_props(&p);
    ana_sim_leave();
    switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *value = p.maxThreadsPerBlock; break;
    case cudaDevAttrMaxBlockDimX: *value = p.maxThreadsDim[0]; break;
    case cudaDevAttrMaxBlockDimY: *value = p.maxThreadsDim[1]; break;
    case cudaDevAttrMaxBlockDimZ: *value = p.maxThreadsDim[2]; break;
    case cudaDevAttrMaxGridDimX: *value = p.maxGridSize[0]; break;
    case cudaDevAttrMaxGridDimY: *value = p.maxGridSize[1]; break;
    case cudaDevAttrMaxGridDimZ: *value = p.maxGridSize[2]; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = (int)p.sharedMemPerBlock; break;
    case cudaDevAttrTotalConstantMemory: *value = (int)p.totalConstMem; break;
    case cudaDevAttrWarpSize: *value = p.warpSize; break;
    case cudaDevAttrMaxPitch: *value = (int)p.memPitch; break;
    case cudaDevAttrMaxRegistersPerBlock: *value = p.regsPerBlock; break;
    case cudaDevAttrTextureAlignment: *value = (int)p.textureAlignment; break;
    case cudaDevAttrMultiProcessorCount: *value = p.multiProcessorCount; break;
    case cudaDevAttrIntegrated: *value = p.integrated; break;
    case cudaDevAttrCanMapHostMemory: *value = p.canMapHostMemory; break;
    case cudaDevAttrConcurrentKernels: *value = p.concurrentKernels; break;
    case cudaDevAttrEccEnabled: *value = p.ECCEnabled; break;
    case cudaDevAttrPciBusId: *value = p.pciBusID; break;
    case cudaDevAttrGlobalMemoryBusWidth: *value = p.memoryBusWidth; break;
    case cudaDevAttrL2CacheSize: *value = p.l2CacheSize; break;
    case cudaDevAttrMaxThreadsPerMultiProcessor: *value = p.maxThreadsPerMultiProcessor; break;
    case cudaDevAttrAsyncEngineCount: *value = p.asyncEngineCount; break;
    case cudaDevAttrUnifiedAddressing: *value = p.unifiedAddressing; break;
    case cudaDevAttrComputeCapabilityMajor: *value = p.major; break;
    case cudaDevAttrComputeCapabilityMinor: *value = p.minor; break;
    case cudaDevAttrStreamPrioritiesSupported: *value = p.streamPrioritiesSupported; break;
    case cudaDevAttrGlobalL1CacheSupported: *value = p.globalL1CacheSupported; break;
    case cudaDevAttrLocalL1CacheSupported: *value = p.localL1CacheSupported; break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor:
        *value = (int)p.sharedMemPerMultiprocessor; break;
    case cudaDevAttrMaxRegistersPerMultiprocessor: *value = p.regsPerMultiprocessor; break;
    case cudaDevAttrManagedMemory: *value = p.managedMemory; break;
    case cudaDevAttrConcurrentManagedAccess: *value = p.concurrentManagedAccess; break;
    case cudaDevAttrComputePreemptionSupported: *value = p.computePreemptionSupported; break;
    case cudaDevAttrCanUseHostPointerForRegisteredMem:
        *value = p.canUseHostPointerForRegisteredMem; break;
    case cudaDevAttrCooperativeLaunch: *value = p.cooperativeLaunch; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = (int)p.sharedMemPerBlockOptin; break;
    case cudaDevAttrHostRegisterSupported: *value = p.hostRegisterSupported; break;
    case cudaDevAttrMaxBlocksPerMultiprocessor: *value = p.maxBlocksPerMultiProcessor; break;
    case cudaDevAttrMaxPersistingL2CacheSize: *value = p.persistingL2CacheMaxSize; break;
    case cudaDevAttrMaxAccessPolicyWindowSize: *value = p.accessPolicyMaxWindowSize; break;
    case cudaDevAttrReservedSharedMemoryPerBlock: *value = (int)p.reservedSharedMemPerBlock; break;
    case cudaDevAttrMemoryPoolsSupported: *value = p.memoryPoolsSupported; break;
    case cudaDevAttrMemoryPoolSupportedHandleTypes:
        *value = (int)p.memoryPoolSupportedHandleTypes; break;
    case cudaDevAttrClusterLaunch: *value = p.clusterLaunch; break;
    case cudaDevAttrIpcEventSupport: *value = p.ipcEventSupported; break;
    case cudaDevAttrNumaId: *value = p.deviceNumaId; break;
    case cudaDevAttrHostNumaId: *value = p.hostNumaId; break;
    case cudaDevAttrGpuPciDeviceId: *value = (int)p.gpuPciDeviceID; break;
    default: *value = 0; break; /* texture/surface limits and the like: not simulated */
    }
    return cudaSuccess;
}

ANA_SIM_API cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr,
                                               int device)
{
    return ana_sim_ret(device_attribute(value, attr, device));
}

/* The driver's cuDeviceGetAttribute (anasim.h): the same table, driver return codes. */
ANASIM_PRIVATE_API CUresult anasim_device_attribute(int attr, int *value)
{
    if (!value || attr < 1 || attr >= cudaDevAttrMax)
        return CUDA_ERROR_INVALID_VALUE;
    device_attribute(value, (enum cudaDeviceAttr)attr, 0);
    return CUDA_SUCCESS;
}

ANA_SIM_API cudaError_t cudaDeviceGetStreamPriorityRange(int *leastPriority,
                                                         int *greatestPriority)
{
    if (leastPriority)
        *leastPriority = ANA_SIM_PRIORITY_LEAST;
    if (greatestPriority)
        *greatestPriority = ANA_SIM_PRIORITY_GREATEST;
    return cudaSuccess;
}

ANA_SIM_API cudaError_t cudaDeviceGetPCIBusId(char *pciBusId, int len, int device)
{
    if (!pciBusId || len <= 0)
        return ana_sim_ret(cudaErrorInvalidValue);
    if (device != 0)
        return ana_sim_ret(cudaErrorInvalidDevice);
    snprintf(pciBusId, (size_t)len, "0000:1B:00.0");
    return cudaSuccess;
}

/* ---- flags, limits, versions ----------------------------------------------------- */

ANA_SIM_API cudaError_t cudaSetDeviceFlags(unsigned int flags)
{
    const unsigned known = cudaDeviceScheduleMask | cudaDeviceMapHost |
                           cudaDeviceLmemResizeToMax | cudaDeviceSyncMemops;
    if (flags & ~known || (flags & cudaDeviceScheduleMask) == 3)
        return ana_sim_ret(cudaErrorInvalidValue);
    ana_sim_enter();
    device_flags = flags;
    ana_sim_leave();
    return cudaSuccess;
}

ANA_SIM_API cudaError_t cudaGetDeviceFlags(unsigned int *flags)
{
    if (!flags)
        return ana_sim_ret(cudaErrorInvalidValue);
    ana_sim_enter();
    *flags = device_flags;
    ana_sim_leave();
    return cudaSuccess;
}

ANA_SIM_API cudaError_t cudaDeviceSetLimit(enum cudaLimit limit, size_t value)
{
    if ((unsigned)limit > cudaLimitPersistingL2CacheSize)
        return ana_sim_ret(cudaErrorUnsupportedLimit);
    ana_sim_enter();
    limits[limit] = value;
    ana_sim_leave();
    return cudaSuccess;
}

ANA_SIM_API cudaError_t cudaDeviceGetLimit(size_t *pValue, enum cudaLimit limit)
{
    if (!pValue)
        return ana_sim_ret(cudaErrorInvalidValue);
    if ((unsigned)limit > cudaLimitPersistingL2CacheSize)
        return ana_sim_ret(cudaErrorUnsupportedLimit);
    ana_sim_enter();
    *pValue = limits[limit];
    ana_sim_leave();
    return cudaSuccess;
}

ANA_SIM_API cudaError_t cudaRuntimeGetVersion(int *runtimeVersion)
{
    return ana_sim_ret(put_int(runtimeVersion, ANA_SIM_CUDA_VERSION));
}

ANA_SIM_API cudaError_t cudaDriverGetVersion(int *driverVersion)
{
    return ana_sim_ret(put_int(driverVersion, ANA_SIM_CUDA_VERSION));
}

/* ---- whole-device operations ----------------------------------------------------- */

/* The host returns at once, but from now on it acts as if it had waited for the device:
 * later work starts no earlier than everything submitted so far ends. Also the driver's
 * cuCtxSynchronize (anasim.h). */
ANASIM_PRIVATE_API void anasim_device_synchronize(void)
{
    ana_sim_enter();
    ana_sim_host_wait_locked(ana_sim_device_end_locked());
    ana_sim_leave();
}

static cudaError_t device_synchronize(void)
{
    anasim_device_synchronize();
    return cudaSuccess;
}

ANA_SIM_API cudaError_t cudaDeviceSynchronize(void)
{
    /* No parameters, so no params struct in the CUPTI headers. */
    ANA_SIM_RT_RETURN(cudaDeviceSynchronize, v3020, NULL, device_synchronize());
}

/* Destroys the "context": every allocation, stream and event is released; module
 * variables and kernel registrations survive (real CUDA reloads modules lazily). The
 * capacity is re-read from ANATOMIST_SIM_MEMORY. */
ANA_SIM_API cudaError_t cudaDeviceReset(void)
{
    ana_sim_lock();           /* not ana_sim_enter: read the setting once, here */
    ana_sim_mem_reset_locked();
    ana_sim_stream_reset_locked();
    reset_device_state_locked();
    initialised = 1;
    ana_sim_unlock();
    return cudaSuccess;
}

ANA_SIM_API cudaError_t cudaDeviceCanAccessPeer(int *canAccessPeer, int device,
                                                int peerDevice)
{
    if (!canAccessPeer)
        return ana_sim_ret(cudaErrorInvalidValue);
    if (device != 0 || peerDevice != 0)
        return ana_sim_ret(cudaErrorInvalidDevice);
    *canAccessPeer = 0;
    return cudaSuccess;
}

ANA_SIM_API cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags)
{
    if (flags != 0)
        return ana_sim_ret(cudaErrorInvalidValue);
    /* The only device is the current one, and a device cannot be its own peer. */
    return ana_sim_ret(cudaErrorInvalidDevice);
}

ANA_SIM_API cudaError_t cudaDeviceDisablePeerAccess(int peerDevice)
{
    return ana_sim_ret(cudaErrorInvalidDevice);
}

ANA_SIM_API cudaError_t cudaProfilerStart(void) { return cudaSuccess; }
ANA_SIM_API cudaError_t cudaProfilerStop(void) { return cudaSuccess; }
