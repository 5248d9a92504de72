/*
 * The kernels the sim's libnccl.so.2 launches, as the device reports them
 * (CUpti_ActivityKernel10 through a test observer, anasim_set_observer): the ranks are
 * threads of this process, each with its own communicator and stream. Names, launch
 * dimensions, start (no earlier than the latest rank's ready time) and duration are
 * checked against docs/sim.md "NCCL", "Timing", computed here.
 */
#define _GNU_SOURCE
#include "anasim.h"

#include <criterion/criterion.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <nccl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static uint64_t doc_duration(double wire_bytes)
{
    return (uint64_t)llround(5000.0 + wire_bytes / 150.0);
}

/* ---- the observer: kernel records, tagged with the rank of the launching thread ---- */
struct seen {
    int rank;
    char name[128];
    uint64_t start, end;
    unsigned grid, block;
};
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct seen seen[32];
static int nseen;
static __thread int my_rank = -1;

static void on_api(int exit_site, anasim_api *c) { (void)exit_site; (void)c; }
static int wants(CUpti_ActivityKind k) { return k == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL; }
static void on_activity(const CUpti_Activity *rec)
{
    if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
        return;
    const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
    pthread_mutex_lock(&mu);
    if (nseen < 32) {
        struct seen *s = &seen[nseen++];
        s->rank = my_rank;
        snprintf(s->name, sizeof(s->name), "%s", k->name ? k->name : "");
        s->start = k->start;
        s->end = k->end;
        s->grid = (unsigned)k->gridX;
        s->block = (unsigned)k->blockX;
    }
    pthread_mutex_unlock(&mu);
}
static const anasim_observer observer = { on_api, wants, on_activity };

static const struct seen *find(int rank, const char *name)
{
    for (int i = 0; i < nseen; i++)
        if (seen[i].rank == rank && strcmp(seen[i].name, name) == 0)
            return &seen[i];
    return NULL;
}

/* ---- two ranks as threads ---- */
#define COUNT 100000   /* floats */
struct rank_args {
    int rank;
    ncclUniqueId id;
    const char *what;        /* "allreduce" or "sendrecv" */
    uint64_t before_call;    /* device clock right before the NCCL call */
    ncclResult_t result;
};

static pthread_barrier_t ready_barrier;   /* both ranks set up: rank 1 then sleeps */

static void *rank_main(void *p)
{
    struct rank_args *a = p;
    my_rank = a->rank;
    ncclComm_t comm = NULL;
    cudaStream_t s = NULL;
    float *buf = NULL;
    a->result = ncclCommInitRank(&comm, 2, a->id, a->rank);
    if (a->result != ncclSuccess || cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) ||
        cudaMalloc((void **)&buf, 2 * COUNT * sizeof(float)) != cudaSuccess)
        return NULL;
    pthread_barrier_wait(&ready_barrier);
    if (a->rank == 1)
        usleep(20000);
    a->before_call = anasim_now_ns();
    if (strcmp(a->what, "allreduce") == 0) {
        a->result = ncclAllReduce(buf, buf, COUNT, ncclFloat32, ncclSum, comm, s);
    } else {
        int peer = 1 - a->rank;
        ncclGroupStart();
        ncclSend(buf, COUNT, ncclFloat32, peer, comm, s);
        ncclRecv(buf + COUNT, a->rank == 0 ? COUNT : COUNT / 2, ncclFloat32, peer, comm, s);
        a->result = ncclGroupEnd();
    }
    cudaFree(buf);
    cudaStreamDestroy(s);
    ncclCommDestroy(comm);
    return NULL;
}

static void run_two(const char *what, struct rank_args a[2])
{
    nseen = 0;
    anasim_set_observer(&observer);
    ncclUniqueId id;
    cr_assert_eq(ncclGetUniqueId(&id), ncclSuccess);
    pthread_t t[2];
    pthread_barrier_init(&ready_barrier, NULL, 2);
    for (int r = 0; r < 2; r++) {
        a[r] = (struct rank_args){ .rank = r, .id = id, .what = what };
        cr_assert_eq(pthread_create(&t[r], NULL, rank_main, &a[r]), 0);
    }
    for (int r = 0; r < 2; r++)
        pthread_join(t[r], NULL);
    pthread_barrier_destroy(&ready_barrier);
    anasim_set_observer(NULL);
}

Test(sim_nccl_activity, allreduce_waits_for_the_late_rank)
{
    struct rank_args a[2];
    run_two("allreduce", a);
    cr_assert_eq(a[0].result, ncclSuccess);
    cr_assert_eq(a[1].result, ncclSuccess);
    const char *name = "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL"
                       "24ncclDevKernelArgsStorageILm4096EE";
    const struct seen *k0 = find(0, name), *k1 = find(1, name);
    cr_assert_not_null(k0, "rank 0 launched no %s (%d kernels seen)", name, nseen);
    cr_assert_not_null(k1);
    uint64_t want = doc_duration(2.0 * (2 - 1) * (COUNT * 4.0) / 2);
    cr_expect_eq(k0->end - k0->start, want);
    cr_expect_eq(k1->end - k1->start, want);
    /* rank 0 called about 20 ms earlier, but its kernel starts when rank 1 is ready */
    cr_expect_gt(a[1].before_call, a[0].before_call);
    cr_expect_geq(k0->start, a[1].before_call);
    cr_expect_eq(k0->grid, 2u);
    cr_expect_eq(k0->block, 512u);
}

Test(sim_nccl_activity, sendrecv_kernel_per_group)
{
    struct rank_args a[2];
    run_two("sendrecv", a);
    /* rank 1 receives half of what rank 0 sends: it alone reports the mismatch */
    cr_expect_eq(a[0].result, ncclSuccess);
    cr_expect_eq(a[1].result, ncclInvalidUsage);
    const char *name = "_Z22ncclDevKernel_SendRecv24ncclDevKernelArgsStorageILm4096EE";
    const struct seen *k0 = find(0, name), *k1 = find(1, name);
    cr_assert_not_null(k0, "rank 0 launched no %s (%d kernels seen)", name, nseen);
    cr_assert_not_null(k1);
    cr_expect_eq(k0->end - k0->start, doc_duration(COUNT * 4.0));
    cr_expect_eq(k1->end - k1->start, doc_duration(COUNT * 4.0));
    cr_expect_geq(k0->start, a[1].before_call);   /* it received rank 1's message */
    cr_expect_eq(k0->block, 640u);
}
