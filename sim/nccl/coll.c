/*
 * coll.c — the collectives: argument checks, the kernel each one launches (its name, when
 * it starts and how long it lasts: docs/sim.md "NCCL", "Timing"), and the data, really
 * combined at call time through the ranks' staging areas of the shared segment.
 *
 * One collective on a communicator of n ranks:
 *   1. each rank publishes (sequence number, its stream's ready time, kind, count, type,
 *      operator, root) in its slot; barrier; every rank checks that all n slots describe
 *      the same operation (ncclInvalidUsage otherwise, for every rank alike);
 *   2. each rank launches the kernel, starting no earlier than the latest ready time;
 *   3. the data moves in rounds of at most ANA_NCCL_SLOT_BYTES per rank: each rank copies
 *      its part of the round into its staging area; barrier; each computes its own output
 *      for the round from all staging areas; barrier.
 * Inputs are staged before any output is written, so in-place operations work.
 */
#include "nccl_sim.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

uint64_t ana_nccl_duration_ns(double wire_bytes)
{
    return (uint64_t)llround(ANA_NCCL_LAUNCH_NS + wire_bytes / ANA_NCCL_LINK_BYTES_PER_NS);
}

ncclResult_t ana_nccl_stream_ready(cudaStream_t stream, uint64_t *t)
{
    if (anasim_stream_ready((CUstream)stream, 0, t) != CUDA_SUCCESS)
        return ana_nccl_fail(ncclUnhandledCudaError, "stream %p is not a valid stream",
                             (void *)stream);
    return ncclSuccess;
}

ncclResult_t ana_nccl_launch(const char *name, unsigned threads, cudaStream_t stream,
                             uint64_t not_before_ns, uint64_t duration_ns)
{
    /* The device name nvcc gives `__global__ void name(ncclDevKernelArgsStorage<4096>)`. */
    char mangled[160];
    snprintf(mangled, sizeof(mangled), "_Z%zu%s24ncclDevKernelArgsStorageILm4096EE",
             strlen(name), name);
    const ana_nccl_driver *drv = ana_nccl_driver_get();
    const void *k = anasim_library_kernel(mangled);
    if (!drv || !k)
        return ana_nccl_fail(ncclSystemError, "cannot launch %s", name);
    CUfunction f;
    memcpy(&f, &k, sizeof(f));
    anasim_next_launch(not_before_ns, duration_ns);
    CUresult r = drv->launch_kernel(f, ANA_NCCL_CHANNELS, 1, 1, threads, 1, 1, 0,
                                    (CUstream)stream, NULL, NULL);
    if (r != CUDA_SUCCESS)
        return ana_nccl_fail(ncclUnhandledCudaError, "cuLaunchKernel %s: CUDA error %d",
                             name, (int)r);
    return ncclSuccess;
}

/* ---- checks ---- */

static int is_reduction(ana_nccl_kind k)
{
    return k == ANA_NCCL_ALLREDUCE || k == ANA_NCCL_REDUCE || k == ANA_NCCL_REDUCESCATTER;
}

static int has_root(ana_nccl_kind k)
{
    return k == ANA_NCCL_BROADCAST || k == ANA_NCCL_REDUCE || k == ANA_NCCL_SEND ||
           k == ANA_NCCL_RECV;
}

/* [p, p + bytes) lies in one allocation of device memory. */
static ncclResult_t device_range(const void *p, size_t bytes, const char *what)
{
    void *base = NULL;
    size_t size = 0;
    if (!p || anasim_mem_range(p, &base, &size) != CUDA_SUCCESS ||
        (size_t)((const char *)p - (const char *)base) + bytes > size)
        return ana_nccl_fail(ncclInvalidArgument, "%s %p is not device memory of %zu bytes",
                             what, p, bytes);
    return ncclSuccess;
}

ncclResult_t ana_nccl_check(const ana_nccl_call *c)
{
    if (!c->comm)
        return ana_nccl_fail(ncclInvalidArgument, "the communicator is NULL");
    size_t es = ana_nccl_type_size(c->dtype);
    if (es == 0)
        return ana_nccl_fail(ncclInvalidArgument, "invalid or unsupported datatype %d",
                             (int)c->dtype);
    if (is_reduction(c->kind) && !ana_nccl_op_name(c->op, c->dtype))
        return ana_nccl_fail(ncclInvalidArgument, "invalid reduction operator %d",
                             (int)c->op);
    int n = c->comm->nranks, me = c->comm->rank;
    if (has_root(c->kind) && (c->root < 0 || c->root >= n))
        return ana_nccl_fail(ncclInvalidArgument, "root/peer %d is not a rank of 0..%d",
                             c->root, n - 1);
    uint64_t t;
    ncclResult_t r = ana_nccl_stream_ready(c->stream, &t);
    if (r != ncclSuccess || c->count == 0)
        return r;
    size_t bytes = c->count * es, all = bytes * (size_t)n;
    switch (c->kind) {
    case ANA_NCCL_ALLREDUCE:
        r = device_range(c->send, bytes, "sendbuff");
        return r != ncclSuccess ? r : device_range(c->recv, bytes, "recvbuff");
    case ANA_NCCL_BROADCAST:
        r = me == c->root ? device_range(c->send, bytes, "sendbuff") : ncclSuccess;
        return r != ncclSuccess ? r : device_range(c->recv, bytes, "recvbuff");
    case ANA_NCCL_REDUCE:
        r = device_range(c->send, bytes, "sendbuff");
        return r != ncclSuccess || me != c->root ? r : device_range(c->recv, bytes, "recvbuff");
    case ANA_NCCL_ALLGATHER:
        r = device_range(c->send, bytes, "sendbuff");
        return r != ncclSuccess ? r : device_range(c->recv, all, "recvbuff");
    case ANA_NCCL_REDUCESCATTER:
        r = device_range(c->send, all, "sendbuff");
        return r != ncclSuccess ? r : device_range(c->recv, bytes, "recvbuff");
    case ANA_NCCL_SEND:
        return device_range(c->send, bytes, "sendbuff");
    case ANA_NCCL_RECV:
        return device_range(c->recv, bytes, "recvbuff");
    default:
        return ana_nccl_fail(ncclInternalError, "unknown operation %d", (int)c->kind);
    }
}

/* ---- the kernel ---- */

static void kernel_name(const ana_nccl_call *c, char *out, size_t size)
{
    static const char *const names[] = {
        [ANA_NCCL_ALLREDUCE] = "AllReduce", [ANA_NCCL_BROADCAST] = "Broadcast",
        [ANA_NCCL_REDUCE] = "Reduce", [ANA_NCCL_ALLGATHER] = "AllGather",
        [ANA_NCCL_REDUCESCATTER] = "ReduceScatter",
    };
    if (is_reduction(c->kind))
        snprintf(out, size, "ncclDevKernel_%s_%s_%s_RING_LL", names[c->kind],
                 ana_nccl_op_name(c->op, c->dtype), ana_nccl_type_suffix(c->dtype));
    else
        snprintf(out, size, "ncclDevKernel_%s_RING_LL", names[c->kind]);
}

/* Bytes each rank sends over its link under the ring algorithm. */
static double wire_bytes(const ana_nccl_call *c)
{
    double n = c->comm->nranks, s = (double)(c->count * ana_nccl_type_size(c->dtype));
    switch (c->kind) {
    case ANA_NCCL_ALLREDUCE: return 2.0 * (n - 1.0) * s / n;
    case ANA_NCCL_ALLGATHER:
    case ANA_NCCL_REDUCESCATTER: return (n - 1.0) * (n * s) / n;
    default: return n > 1.0 ? s : 0.0;
    }
}

/* ---- the data ---- */

/* The elements each rank stages: its whole send buffer. */
static size_t staged_count(const ana_nccl_call *c)
{
    return c->kind == ANA_NCCL_REDUCESCATTER ? c->count * (size_t)c->comm->nranks : c->count;
}

/* This rank's output for the round that staged elements [off, off + m). */
static void combine(const ana_nccl_call *c, size_t off, size_t m)
{
    struct ncclComm *comm = c->comm;
    int n = comm->nranks, me = comm->rank;
    size_t es = ana_nccl_type_size(c->dtype);
    const void *in[n];
    for (int r = 0; r < n; r++)
        in[r] = ana_nccl_staging(comm, r);
    unsigned char *recv = c->recv;
    switch (c->kind) {
    case ANA_NCCL_ALLREDUCE:
        ana_nccl_reduce(recv + off * es, in, n, m, c->dtype, c->op);
        break;
    case ANA_NCCL_REDUCE:
        if (me == c->root)
            ana_nccl_reduce(recv + off * es, in, n, m, c->dtype, c->op);
        break;
    case ANA_NCCL_BROADCAST:
        memcpy(recv + off * es, in[c->root], m * es);
        break;
    case ANA_NCCL_ALLGATHER:
        for (int r = 0; r < n; r++)
            memcpy(recv + ((size_t)r * c->count + off) * es, in[r], m * es);
        break;
    case ANA_NCCL_REDUCESCATTER: {
        size_t lo = (size_t)me * c->count, hi = lo + c->count;   /* this rank's block */
        size_t a = off > lo ? off : lo, b = off + m < hi ? off + m : hi;
        if (a >= b)
            break;
        for (int r = 0; r < n; r++)
            in[r] = (const unsigned char *)in[r] + (a - off) * es;
        ana_nccl_reduce(recv + (a - lo) * es, in, n, b - a, c->dtype, c->op);
        break;
    }
    default:
        break;
    }
}

static ncclResult_t move_data(const ana_nccl_call *c)
{
    struct ncclComm *comm = c->comm;
    size_t es = ana_nccl_type_size(c->dtype), total = staged_count(c);
    size_t per_round = ANA_NCCL_SLOT_BYTES / es;
    int stages = c->kind != ANA_NCCL_BROADCAST || comm->rank == c->root;
    for (size_t off = 0; off < total; off += per_round) {
        size_t m = total - off < per_round ? total - off : per_round;
        if (stages)
            memcpy(ana_nccl_staging(comm, comm->rank),
                   (const unsigned char *)c->send + off * es, m * es);
        ncclResult_t r = ana_nccl_barrier(comm);
        if (r != ncclSuccess)
            return r;
        combine(c, off, m);
        if ((r = ana_nccl_barrier(comm)) != ncclSuccess)
            return r;
    }
    return ncclSuccess;
}

static int same_op(const ana_nccl_slot *a, const ana_nccl_slot *b)
{
    return a->seq == b->seq && a->kind == b->kind && a->count == b->count &&
           a->dtype == b->dtype && a->op == b->op && a->root == b->root;
}

/* Step 1: publish, meet, check; the latest ready time of all ranks. */
static ncclResult_t meet(const ana_nccl_call *c, uint64_t *not_before)
{
    struct ncclComm *comm = c->comm;
    uint64_t ready;
    ncclResult_t r = ana_nccl_stream_ready(c->stream, &ready);
    if (r != ncclSuccess)
        return r;
    int reduces = is_reduction(c->kind), rooted = has_root(c->kind);
    ana_nccl_slot *slots = ana_nccl_slots(comm), mine = {
        .seq = comm->coll_seq++, .ready_ns = ready, .count = c->count, .kind = c->kind,
        .dtype = c->dtype, .op = reduces ? (int32_t)c->op : 0,
        .root = rooted ? c->root : 0 };
    slots[comm->rank] = mine;
    if ((r = ana_nccl_barrier(comm)) != ncclSuccess)
        return r;
    *not_before = 0;
    for (int p = 0; p < comm->nranks; p++) {
        if (!same_op(&slots[p], &mine)) {
            r = ana_nccl_fail(ncclInvalidUsage, "rank %d issued another collective (or "
                              "another count, type, operator or root) as collective %llu "
                              "of rank %d", p, (unsigned long long)mine.seq, comm->rank);
            ncclResult_t b = ana_nccl_barrier(comm);   /* the slots are read */
            return b != ncclSuccess ? b : r;
        }
        if (slots[p].ready_ns > *not_before)
            *not_before = slots[p].ready_ns;
    }
    return ncclSuccess;
}

ncclResult_t ana_nccl_collective(const ana_nccl_call *c)
{
    uint64_t not_before = 0;
    ncclResult_t r = meet(c, &not_before);
    if (r == ncclSuccess) {
        char name[96];
        kernel_name(c, name, sizeof(name));
        ncclResult_t l = ana_nccl_launch(name, ANA_NCCL_COLL_THREADS, c->stream, not_before,
                                         ana_nccl_duration_ns(wire_bytes(c)));
        r = move_data(c);   /* even when the launch failed: the peers wait for our data */
        if (r == ncclSuccess)
            r = l;
    }
    if (r == ncclRemoteError)
        c->comm->async_error = r;
    return r;
}

/* ---- entry points ---- */

ANA_NCCL_ENTRY(ncclResult_t, AllReduce,
               (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream))
{
    ana_nccl_call c = { ANA_NCCL_ALLREDUCE, sendbuff, recvbuff, count, datatype, op, 0, comm,
                        stream };
    return ana_nccl_enqueue(&c);
}

ANA_NCCL_ENTRY(ncclResult_t, Reduce,
               (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream))
{
    ana_nccl_call c = { ANA_NCCL_REDUCE, sendbuff, recvbuff, count, datatype, op, root, comm,
                        stream };
    return ana_nccl_enqueue(&c);
}

ANA_NCCL_ENTRY(ncclResult_t, Broadcast,
               (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                int root, ncclComm_t comm, cudaStream_t stream))
{
    ana_nccl_call c = { ANA_NCCL_BROADCAST, sendbuff, recvbuff, count, datatype, ncclSum,
                        root, comm, stream };
    return ana_nccl_enqueue(&c);
}

ANA_NCCL_ENTRY(ncclResult_t, Bcast,
               (void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                cudaStream_t stream))
{
    return pncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

ANA_NCCL_ENTRY(ncclResult_t, AllGather,
               (const void *sendbuff, void *recvbuff, size_t sendcount,
                ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream))
{
    ana_nccl_call c = { ANA_NCCL_ALLGATHER, sendbuff, recvbuff, sendcount, datatype, ncclSum,
                        0, comm, stream };
    return ana_nccl_enqueue(&c);
}

ANA_NCCL_ENTRY(ncclResult_t, ReduceScatter,
               (const void *sendbuff, void *recvbuff, size_t recvcount,
                ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                cudaStream_t stream))
{
    ana_nccl_call c = { ANA_NCCL_REDUCESCATTER, sendbuff, recvbuff, recvcount, datatype, op,
                        0, comm, stream };
    return ana_nccl_enqueue(&c);
}
