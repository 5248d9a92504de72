/*
 * comm.c — communicators: unique ids, creation (ncclCommInitRank & co), splitting,
 * destruction, the queries, error strings and the last error.
 *
 * A unique id is 16 random bytes, the creating pid and the CLOCK_REALTIME ns (the other
 * 104 bytes zero); the shared segment is named from its first 16 bytes (shm.c). A
 * communicator allocates ANA_NCCL_CHANNEL_BUFFER_BYTES of device memory with cuMemAlloc_v2
 * once every rank has joined, and frees it with cuMemFree_v2 when destroyed.
 */
#define _GNU_SOURCE
#include "nccl_sim.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static __thread char last_error[256];

ncclResult_t ana_nccl_fail(ncclResult_t r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
    return r;
}

ANA_NCCL_ENTRY(const char *, GetErrorString, (ncclResult_t result))
{
    switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
    }
}

ANA_NCCL_ENTRY(const char *, GetLastError, (ncclComm_t comm))
{
    (void)comm;   /* NCCL's last error is per thread too */
    return last_error;
}

ANA_NCCL_ENTRY(ncclResult_t, GetVersion, (int *version))
{
    if (!version)
        return ana_nccl_fail(ncclInvalidArgument, "ncclGetVersion: version is NULL");
    *version = NCCL_VERSION_CODE;
    return ncclSuccess;
}

ANA_NCCL_ENTRY(ncclResult_t, GetUniqueId, (ncclUniqueId *uniqueId))
{
    if (!uniqueId)
        return ana_nccl_fail(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
    memset(uniqueId, 0, sizeof(*uniqueId));
    if (getrandom(uniqueId->internal, 16, 0) != 16)
        return ana_nccl_fail(ncclSystemError, "ncclGetUniqueId: no random bytes");
    int64_t pid = getpid();
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    int64_t ns = (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
    memcpy(uniqueId->internal + 16, &pid, sizeof(pid));
    memcpy(uniqueId->internal + 24, &ns, sizeof(ns));
    return ncclSuccess;
}

static void free_comm(struct ncclComm *c)
{
    free(c->sent);
    free(c->received);
    free(c);
}

ncclResult_t ana_nccl_comm_init(ncclComm_t *out, int nranks, const unsigned char *id,
                                int rank)
{
    const ana_nccl_driver *drv = ana_nccl_driver_get();
    if (!drv)
        return ana_nccl_fail(ncclUnhandledCudaError, "the driver (libcuda.so.1) is missing");
    struct ncclComm *c = calloc(1, sizeof(*c));
    if (c) {
        c->sent = calloc((size_t)nranks, sizeof(uint64_t));
        c->received = calloc((size_t)nranks, sizeof(uint64_t));
    }
    if (!c || !c->sent || !c->received) {
        if (c)
            free_comm(c);
        return ana_nccl_fail(ncclSystemError, "out of host memory");
    }
    c->rank = rank;
    c->nranks = nranks;
    c->timeout_ms = ana_nccl_timeout_ms();
    memcpy(c->id, id, NCCL_UNIQUE_ID_BYTES);
    int n = snprintf(c->name, sizeof(c->name), "%s", ANA_NCCL_SHM_PREFIX);
    for (int i = 0; i < 16; i++)
        n += snprintf(c->name + n, sizeof(c->name) - (size_t)n, "%02x", id[i]);
    ncclResult_t r = ana_nccl_seg_join(c);
    if (r != ncclSuccess) {
        free_comm(c);
        return r;
    }
    CUresult cr = drv->mem_alloc(&c->buffers, ANA_NCCL_CHANNEL_BUFFER_BYTES);
    if (cr != CUDA_SUCCESS) {
        ana_nccl_seg_leave(c, 1);
        free_comm(c);
        return ana_nccl_fail(ncclUnhandledCudaError, "cuMemAlloc_v2 of the channel buffers "
                             "failed: CUDA error %d", (int)cr);
    }
    *out = c;
    return ncclSuccess;
}

ANA_NCCL_ENTRY(ncclResult_t, CommInitRank,
               (ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank))
{
    if (!comm)
        return ana_nccl_fail(ncclInvalidArgument, "ncclCommInitRank: comm is NULL");
    *comm = NULL;
    if (nranks < 1 || rank < 0 || rank >= nranks)
        return ana_nccl_fail(ncclInvalidArgument, "Invalid rank requested : %d/%d", rank,
                             nranks);
    return ana_nccl_comm_init(comm, nranks, (const unsigned char *)commId.internal, rank);
}

static ncclResult_t check_config(const ncclConfig_t *config)
{
    if (config && (config->magic != 0xcafebeef || config->size < offsetof(ncclConfig_t, blocking)))
        return ana_nccl_fail(ncclInvalidArgument, "the config was not initialised with "
                             "NCCL_CONFIG_INITIALIZER");
    return ncclSuccess;
}

ANA_NCCL_ENTRY(ncclResult_t, CommInitRankConfig,
               (ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
                ncclConfig_t *config))
{
    ncclResult_t r = check_config(config);
    if (r != ncclSuccess)
        return r;
    return pncclCommInitRank(comm, nranks, commId, rank);
}

/* One device: only a clique of one communicator. */
ANA_NCCL_ENTRY(ncclResult_t, CommInitAll, (ncclComm_t *comm, int ndev, const int *devlist))
{
    if (!comm)
        return ana_nccl_fail(ncclInvalidArgument, "ncclCommInitAll: comm is NULL");
    if (ndev != 1)
        return ana_nccl_fail(ncclInvalidArgument, "Invalid device count requested : %d "
                             "(the simulated machine has one device)", ndev);
    if (devlist && devlist[0] != 0)
        return ana_nccl_fail(ncclInvalidArgument, "Invalid device %d (totalnDev=1)",
                             devlist[0]);
    ncclUniqueId id;
    ncclResult_t r = pncclGetUniqueId(&id);
    return r != ncclSuccess ? r : pncclCommInitRank(comm, 1, id, 0);
}

static ncclResult_t release(ncclComm_t comm, int abort)
{
    if (!comm)
        return ncclSuccess;   /* NCCL accepts a NULL communicator here */
    const ana_nccl_driver *drv = ana_nccl_driver_get();
    if (drv && comm->buffers)
        drv->mem_free(comm->buffers);
    ana_nccl_seg_leave(comm, abort);
    free_comm(comm);
    return ncclSuccess;
}

ANA_NCCL_ENTRY(ncclResult_t, CommDestroy, (ncclComm_t comm)) { return release(comm, 0); }
ANA_NCCL_ENTRY(ncclResult_t, CommAbort, (ncclComm_t comm)) { return release(comm, 1); }

/* Work is complete when enqueued: nothing is left to flush. */
ANA_NCCL_ENTRY(ncclResult_t, CommFinalize, (ncclComm_t comm))
{
    return comm ? ncclSuccess
                : ana_nccl_fail(ncclInvalidArgument, "ncclCommFinalize: comm is NULL");
}

ANA_NCCL_ENTRY(ncclResult_t, CommCount, (const ncclComm_t comm, int *count))
{
    if (!comm || !count)
        return ana_nccl_fail(ncclInvalidArgument, "ncclCommCount: NULL argument");
    *count = comm->nranks;
    return ncclSuccess;
}

ANA_NCCL_ENTRY(ncclResult_t, CommCuDevice, (const ncclComm_t comm, int *device))
{
    if (!comm || !device)
        return ana_nccl_fail(ncclInvalidArgument, "ncclCommCuDevice: NULL argument");
    *device = 0;
    return ncclSuccess;
}

ANA_NCCL_ENTRY(ncclResult_t, CommUserRank, (const ncclComm_t comm, int *rank))
{
    if (!comm || !rank)
        return ana_nccl_fail(ncclInvalidArgument, "ncclCommUserRank: NULL argument");
    *rank = comm->rank;
    return ncclSuccess;
}

ANA_NCCL_ENTRY(ncclResult_t, CommGetAsyncError, (ncclComm_t comm, ncclResult_t *asyncError))
{
    if (!comm || !asyncError)
        return ana_nccl_fail(ncclInvalidArgument, "ncclCommGetAsyncError: NULL argument");
    *asyncError = comm->async_error;
    return ncclSuccess;
}
