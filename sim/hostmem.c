/*
 * hostmem.c — host memory the device can address, and what the runtime says about any
 * pointer: cudaHostRegister/Unregister, cudaHostGetDevicePointer, cudaHostGetFlags,
 * cudaPointerGetAttributes, and the managed-memory hints (cudaMemAdvise,
 * cudaMemPrefetchAsync), which only validate their range.
 *
 * Everything here reads or edits the allocation table of memory.c under the device lock;
 * nothing here is charged against the capacity.
 */
#include "sim.h"

#include <string.h>

/* ---- registered host memory ------------------------------------------------------- */

static cudaError_t host_register(void *ptr, size_t size, unsigned int flags)
{
    const unsigned known = cudaHostRegisterPortable | cudaHostRegisterMapped |
                           cudaHostRegisterIoMemory | cudaHostRegisterReadOnly;
    if (!ptr || size == 0 || (flags & ~known))
        return cudaErrorInvalidValue;
    cudaError_t err = cudaSuccess;
    ana_sim_enter();
    if (ana_sim_mem_overlaps_locked(ptr, size)) {
        err = cudaErrorHostMemoryAlreadyRegistered;
    } else {
        struct ana_sim_mem m = { ptr, size, 0, 0, ANA_SIM_MEM_REGISTERED, flags };
        err = ana_sim_mem_add_locked(&m);
    }
    ana_sim_leave();
    return err;
}

ANA_SIM_API cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
    cudaHostRegister_v4000_params p = { .ptr = ptr, .size = size, .flags = flags };
    ANA_SIM_RT_RETURN(cudaHostRegister, v4000, &p, host_register(ptr, size, flags));
}

static cudaError_t host_unregister(void *ptr)
{
    cudaError_t err = cudaErrorHostMemoryNotRegistered;
    ana_sim_enter();
    const struct ana_sim_mem *m = ana_sim_mem_find_locked(ptr);
    if (m && m->base == ptr && m->kind == ANA_SIM_MEM_REGISTERED) {
        ana_sim_mem_remove_locked(ptr);
        err = cudaSuccess;
    }
    ana_sim_leave();
    return err;
}

ANA_SIM_API cudaError_t cudaHostUnregister(void *ptr)
{
    cudaHostUnregister_v4000_params p = { .ptr = ptr };
    ANA_SIM_RT_RETURN(cudaHostUnregister, v4000, &p, host_unregister(ptr));
}

/* ---- pinned host memory queries ------------------------------------------------- */

/* Unified addressing: the device address of pinned or registered memory is its host
 * address (canUseHostPointerForRegisteredMem = 1). */
ANA_SIM_API cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost,
                                                 unsigned int flags)
{
    if (!pDevice || flags != 0)
        return ana_sim_ret(cudaErrorInvalidValue);
    cudaError_t err = cudaErrorInvalidValue;
    ana_sim_enter();
    const struct ana_sim_mem *m = ana_sim_mem_find_locked(pHost);
    if (m && (m->kind == ANA_SIM_MEM_HOST || m->kind == ANA_SIM_MEM_REGISTERED)) {
        *pDevice = pHost;
        err = cudaSuccess;
    }
    ana_sim_leave();
    return ana_sim_ret(err);
}

ANA_SIM_API cudaError_t cudaHostGetFlags(unsigned int *pFlags, void *pHost)
{
    if (!pFlags)
        return ana_sim_ret(cudaErrorInvalidValue);
    cudaError_t err = cudaErrorInvalidValue;
    ana_sim_enter();
    const struct ana_sim_mem *m = ana_sim_mem_find_locked(pHost);
    if (m && m->kind == ANA_SIM_MEM_HOST) {
        *pFlags = m->flags;
        err = cudaSuccess;
    }
    ana_sim_leave();
    return ana_sim_ret(err);
}

/* ---- queries and hints ---------------------------------------------------------- */

static cudaError_t pointer_attributes(struct cudaPointerAttributes *attributes,
                                      const void *ptr)
{
    if (!attributes)
        return cudaErrorInvalidValue;
    memset(attributes, 0, sizeof(*attributes));
    attributes->type = cudaMemoryTypeUnregistered;
    attributes->device = cudaInvalidDeviceId;
    ana_sim_enter();
    const struct ana_sim_mem *m = ana_sim_mem_find_locked(ptr);
    if (m) {
        void *p = (void *)ptr;
        attributes->device = 0;
        switch (m->kind) {
        case ANA_SIM_MEM_DEVICE:
        case ANA_SIM_MEM_SYMBOL:
        case ANA_SIM_MEM_VMM:
            attributes->type = cudaMemoryTypeDevice;
            attributes->devicePointer = p;
            break;
        case ANA_SIM_MEM_MANAGED:
        case ANA_SIM_MEM_SYMBOL_MANAGED:
            attributes->type = cudaMemoryTypeManaged;
            attributes->devicePointer = attributes->hostPointer = p;
            break;
        case ANA_SIM_MEM_HOST:
        case ANA_SIM_MEM_REGISTERED:
            attributes->type = cudaMemoryTypeHost;
            attributes->devicePointer = attributes->hostPointer = p;
            break;
        }
    }
    ana_sim_leave();
    return cudaSuccess;
}

ANA_SIM_API cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes,
                                                 const void *ptr)
{
    cudaPointerGetAttributes_v4000_params p = { .attributes = attributes, .ptr = ptr };
    ANA_SIM_RT_RETURN(cudaPointerGetAttributes, v4000, &p,
                      pointer_attributes(attributes, ptr));
}

static cudaError_t check_managed_range(const void *devPtr, size_t count)
{
    ana_sim_enter();
    int known = ana_sim_mem_device_range_locked(devPtr, count);
    ana_sim_leave();
    return known ? cudaSuccess : cudaErrorInvalidValue;
}

/* Hints only: there is one memory, so nothing migrates. */
ANA_SIM_API cudaError_t cudaMemAdvise(const void *devPtr, size_t count,
                                      enum cudaMemoryAdvise advice,
                                      struct cudaMemLocation location)
{
    return ana_sim_ret(check_managed_range(devPtr, count));
}

static cudaError_t prefetch(const void *devPtr, size_t count, cudaStream_t stream, int ptsz)
{
    cudaError_t err = ana_sim_stream_check(stream, ptsz);
    return err != cudaSuccess ? err : check_managed_range(devPtr, count);
}

ANA_SIM_API cudaError_t cudaMemPrefetchAsync(const void *devPtr, size_t count,
                                             struct cudaMemLocation location,
                                             unsigned int flags, cudaStream_t stream)
{
    return ana_sim_ret(prefetch(devPtr, count, stream, 0));
}

ANA_SIM_API cudaError_t cudaMemPrefetchAsync_ptsz(const void *devPtr, size_t count,
                                                  struct cudaMemLocation location,
                                                  unsigned int flags, cudaStream_t stream)
{
    return ana_sim_ret(prefetch(devPtr, count, stream, 1));
}
