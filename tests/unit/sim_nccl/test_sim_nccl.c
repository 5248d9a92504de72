/*
 * The sim's libnccl.so.2 (docs/sim.md, "NCCL"): ranks as separate processes (nccl_rank,
 * fork + exec), ranks as threads of this process (for the kernel records, which a test
 * observer collects through anasim_set_observer), one rank, count 0, error codes, the
 * communicator's device memory, shared-memory clean-up and the timeout when a peer dies.
 */
#define _GNU_SOURCE
#include "anasim.h"

#include <criterion/criterion.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <nccl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* docs/sim.md "NCCL": the channel buffers every communicator allocates */
#define DOC_BUFFER_BYTES ((size_t)4 << 20)

static ncclUniqueId random_id(void)
{
    ncclUniqueId id;
    memset(&id, 0, sizeof(id));
    cr_assert_eq(getrandom(id.internal, 16, 0), 16);
    return id;
}

/* /dev/shm/anasim-nccl-<32 hex of the id's first 16 bytes> (docs/sim.md "NCCL"). */
static void shm_path(const ncclUniqueId *id, char out[128])
{
    int n = snprintf(out, 128, "/dev/shm/anasim-nccl-");
    for (int i = 0; i < 16; i++)
        n += snprintf(out + n, 128 - (size_t)n, "%02x", (unsigned char)id->internal[i]);
}

static int exists(const char *path) { return access(path, F_OK) == 0; }

static pid_t spawn_rank(const char *scenario, int nranks, int rank, const ncclUniqueId *id)
{
    char hex[2 * NCCL_UNIQUE_ID_BYTES + 1], n[16], r[16];
    for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; i++)
        snprintf(hex + 2 * i, 3, "%02x", (unsigned char)id->internal[i]);
    snprintf(n, sizeof(n), "%d", nranks);
    snprintf(r, sizeof(r), "%d", rank);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        execl(NCCL_RANK_HELPER, NCCL_RANK_HELPER, scenario, n, r, hex, (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* Runs `scenario` as nranks processes; every one must exit 0. */
static void run_ranks(const char *scenario, int nranks)
{
    ncclUniqueId id = random_id();
    pid_t pids[8];
    for (int r = 0; r < nranks; r++)
        pids[r] = spawn_rank(scenario, nranks, r, &id);
    for (int r = 0; r < nranks; r++) {
        int status = 0;
        cr_assert_eq(waitpid(pids[r], &status, 0), pids[r]);
        cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "%s: rank %d of %d ended with status %#x", scenario, r, nranks, status);
    }
    char path[128];
    shm_path(&id, path);
    cr_expect_not(exists(path), "%s is left behind", path);
}

Test(sim_nccl, two_processes) { run_ranks("collectives", 2); }
Test(sim_nccl, four_processes) { run_ranks("collectives", 4); }
Test(sim_nccl, three_processes) { run_ranks("collectives", 3); }
Test(sim_nccl, big_allreduce_two_processes, .timeout = 120) { run_ranks("big", 2); }

/* ---- one rank, count 0, errors ---- */

Test(sim_nccl, version_and_strings)
{
    int v = 0;
    cr_assert_eq(ncclGetVersion(&v), ncclSuccess);
    cr_expect_eq(v, 22809);
    cr_expect_eq(ncclGetVersion(NULL), ncclInvalidArgument);
    cr_expect_str_eq(ncclGetErrorString(ncclSuccess), "no error");
    cr_expect_str_eq(ncclGetErrorString(ncclInvalidArgument),
                     "invalid argument (run with NCCL_DEBUG=WARN for details)");
    cr_expect_str_eq(ncclGetErrorString(ncclRemoteError),
                     "remote process exited or there was a network error");
    cr_expect_str_eq(ncclGetErrorString((ncclResult_t)42), "unknown result code");
}

static void *dev(size_t bytes)
{
    void *p = NULL;
    cr_assert_eq(cudaMalloc(&p, bytes), cudaSuccess);
    return p;
}

Test(sim_nccl, one_rank)
{
    ncclComm_t comm = NULL;
    int two[2] = { 0, 0 };
    cr_expect_eq(ncclCommInitAll(&comm, 2, two), ncclInvalidArgument);
    cr_expect_eq(ncclCommInitAll(&comm, 0, NULL), ncclInvalidArgument);
    cr_assert_eq(ncclCommInitAll(&comm, 1, NULL), ncclSuccess);
    int count = 0, rank = -1, device = -1;
    ncclResult_t async = ncclInternalError;
    cr_expect_eq(ncclCommCount(comm, &count), ncclSuccess);
    cr_expect_eq(ncclCommUserRank(comm, &rank), ncclSuccess);
    cr_expect_eq(ncclCommCuDevice(comm, &device), ncclSuccess);
    cr_expect_eq(ncclCommGetAsyncError(comm, &async), ncclSuccess);
    cr_expect(count == 1 && rank == 0 && device == 0 && async == ncclSuccess);
    float *s = dev(64 * 4), *d = dev(64 * 4);
    for (int i = 0; i < 64; i++)
        s[i] = (float)i * 1.5f;
    cr_assert_eq(ncclAllReduce(s, d, 64, ncclFloat32, ncclAvg, comm, 0), ncclSuccess);
    for (int i = 0; i < 64; i++)
        cr_expect_eq(d[i], (float)i * 1.5f);
    cr_assert_eq(ncclAllGather(s, d, 64, ncclFloat32, comm, 0), ncclSuccess);
    cr_expect_eq(d[63], 63 * 1.5f);
    cr_expect_eq(ncclCommFinalize(comm), ncclSuccess);
    cr_expect_eq(ncclCommDestroy(comm), ncclSuccess);
    cudaFree(s);
    cudaFree(d);
}

Test(sim_nccl, errors)
{
    ncclUniqueId id = random_id();
    ncclComm_t comm = NULL;
    cr_expect_eq(ncclCommInitRank(&comm, 0, id, 0), ncclInvalidArgument);
    cr_expect_eq(ncclCommInitRank(&comm, 2, id, 2), ncclInvalidArgument);
    cr_expect_eq(ncclCommInitRank(&comm, 2, id, -1), ncclInvalidArgument);
    cr_expect_eq(ncclCommInitRank(NULL, 1, id, 0), ncclInvalidArgument);
    ncclConfig_t bad_config = { 0 };
    cr_expect_eq(ncclCommInitRankConfig(&comm, 1, id, 0, &bad_config), ncclInvalidArgument);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    cr_assert_eq(ncclCommInitRankConfig(&comm, 1, id, 0, &config), ncclSuccess);

    float *d = dev(256 * 4);
    float host[256];
    cr_expect_eq(ncclAllReduce(d, d, 256, ncclFloat32, ncclSum, NULL, 0), ncclInvalidArgument);
    cr_expect_eq(ncclAllReduce(d, d, 256, ncclFloat8e4m3, ncclSum, comm, 0), ncclInvalidArgument);
    cr_expect_eq(ncclAllReduce(d, d, 256, (ncclDataType_t)99, ncclSum, comm, 0),
                 ncclInvalidArgument);
    cr_expect_eq(ncclAllReduce(d, d, 256, ncclFloat32, (ncclRedOp_t)7, comm, 0),
                 ncclInvalidArgument);
    cr_expect_eq(ncclAllReduce(host, d, 256, ncclFloat32, ncclSum, comm, 0),
                 ncclInvalidArgument);
    cr_expect_eq(ncclAllReduce(d, d, 257, ncclFloat32, ncclSum, comm, 0), ncclInvalidArgument);
    cr_expect_eq(ncclAllGather(d, d, 200, ncclFloat32, comm, 0), ncclSuccess);
    cr_expect_eq(ncclBroadcast(d, d, 16, ncclFloat32, 1, comm, 0), ncclInvalidArgument);
    cr_expect_eq(ncclReduce(d, d, 16, ncclFloat32, ncclSum, -1, comm, 0), ncclInvalidArgument);
    cr_expect_eq(ncclSend(d, 16, ncclFloat32, 3, comm, 0), ncclInvalidArgument);
    cr_expect_eq(ncclAllReduce(d, d, 16, ncclFloat32, ncclSum, comm, (cudaStream_t)host),
                 ncclUnhandledCudaError);
    cr_expect_eq(ncclGroupEnd(), ncclInvalidUsage);
    cr_expect_str_neq(ncclGetLastError(comm), "");
    /* count 0: a no-op, whatever the buffers */
    cr_expect_eq(ncclAllReduce(NULL, NULL, 0, ncclFloat32, ncclSum, comm, 0), ncclSuccess);
    cr_expect_eq(ncclCommDestroy(comm), ncclSuccess);
    cr_expect_eq(ncclCommDestroy(NULL), ncclSuccess);
    cudaFree(d);
}

Test(sim_nccl, device_memory_and_shm)
{
    size_t free0, free1, free2, total;
    ncclUniqueId id = random_id();
    char path[128];
    shm_path(&id, path);
    cr_assert_eq(cudaMemGetInfo(&free0, &total), cudaSuccess);
    ncclComm_t comm = NULL;
    cr_assert_eq(ncclCommInitRank(&comm, 1, id, 0), ncclSuccess);
    cr_assert_eq(cudaMemGetInfo(&free1, &total), cudaSuccess);
    cr_expect_eq(free0 - free1, DOC_BUFFER_BYTES);
    cr_expect(exists(path), "%s exists while the communicator lives", path);
    cr_assert_eq(ncclCommDestroy(comm), ncclSuccess);
    cr_assert_eq(cudaMemGetInfo(&free2, &total), cudaSuccess);
    cr_expect_eq(free2, free0);
    cr_expect_not(exists(path), "%s is left behind", path);
}

/* ---- a peer that dies ---- */

static double ms_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

Test(sim_nccl, peer_dies_before_joining)
{
    setenv("ANATOMIST_SIM_NCCL_TIMEOUT_MS", "400", 1);
    ncclUniqueId id = random_id();
    pid_t pid = spawn_rank("die", 2, 1, &id);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 3);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ncclComm_t comm = (ncclComm_t)&comm;
    cr_expect_eq(ncclCommInitRank(&comm, 2, id, 0), ncclSystemError);
    double ms = ms_since(&t0);
    cr_expect(ms >= 400 && ms < 5000, "gave up after %.0f ms, want 400 ms", ms);
    cr_expect_null(comm);
    char path[128];
    shm_path(&id, path);
    cr_expect_not(exists(path), "%s is left behind", path);
    unsetenv("ANATOMIST_SIM_NCCL_TIMEOUT_MS");
}

Test(sim_nccl, peer_dies_after_joining)
{
    setenv("ANATOMIST_SIM_NCCL_TIMEOUT_MS", "400", 1);
    ncclUniqueId id = random_id();
    pid_t pid = spawn_rank("die_after_join", 2, 1, &id);
    ncclComm_t comm = NULL;
    cr_assert_eq(ncclCommInitRank(&comm, 2, id, 0), ncclSuccess);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    float *d = dev(16 * 4);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cr_expect_eq(ncclAllReduce(d, d, 16, ncclFloat32, ncclSum, comm, 0), ncclRemoteError);
    double ms = ms_since(&t0);
    cr_expect(ms >= 400 && ms < 5000, "gave up after %.0f ms, want 400 ms", ms);
    ncclResult_t async = ncclSuccess;
    cr_expect_eq(ncclCommGetAsyncError(comm, &async), ncclSuccess);
    cr_expect_eq(async, ncclRemoteError);
    cr_expect_eq(ncclCommDestroy(comm), ncclSuccess);
    char path[128];
    shm_path(&id, path);
    cr_expect_not(exists(path), "%s is left behind", path);
    cudaFree(d);
    unsetenv("ANATOMIST_SIM_NCCL_TIMEOUT_MS");
}
