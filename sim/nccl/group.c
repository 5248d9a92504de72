/*
 * group.c — ncclGroupStart/ncclGroupEnd. Per thread, groups nest; calls made inside one
 * are checked at once and queued, and the outermost ncclGroupEnd runs the queue:
 *   1. every send is posted (in issue order), so no receive in the group can wait for a
 *      send that sits behind it;
 *   2. collectives and receives run in issue order;
 *   3. each communicator with point-to-point work launches one ncclDevKernel_SendRecv on
 *      the stream of its first send or receive in the group, starting no earlier than the
 *      latest of its own stream's ready time and the senders' ready times of the messages
 *      it received, lasting ana_nccl_duration_ns(bytes it sent in the group) (0 bytes on a
 *      communicator of one rank).
 * A call outside a group is a group of its own. A count of 0 is a no-op (after the
 * checks). The first error is returned; the rest of the queue still runs so that peers
 * waiting for this rank are not left waiting.
 */
#include "nccl_sim.h"

#include <stdlib.h>

static __thread int depth;
static __thread ana_nccl_call *queue;
static __thread size_t queued, capacity;

/* The point-to-point work of one communicator in the group being run. */
struct p2p_work {
    struct ncclComm *comm;
    cudaStream_t stream;
    uint64_t not_before;
    double sent_bytes;
};

static ncclResult_t push(const ana_nccl_call *c)
{
    if (queued == capacity) {
        size_t n = capacity ? capacity * 2 : 16;
        ana_nccl_call *q = realloc(queue, n * sizeof(*q));
        if (!q)
            return ana_nccl_fail(ncclSystemError, "out of host memory");
        queue = q;
        capacity = n;
    }
    queue[queued++] = *c;
    return ncclSuccess;
}

static int is_p2p(const ana_nccl_call *c)
{
    return c->kind == ANA_NCCL_SEND || c->kind == ANA_NCCL_RECV;
}

/* The work entry of c's communicator (made, with its stream's ready time, on first use). */
static struct p2p_work *work_of(struct p2p_work *w, size_t *nw, const ana_nccl_call *c,
                                ncclResult_t *err)
{
    for (size_t i = 0; i < *nw; i++)
        if (w[i].comm == c->comm)
            return &w[i];
    w[*nw] = (struct p2p_work){ c->comm, c->stream, 0, 0.0 };
    ncclResult_t r = ana_nccl_stream_ready(c->stream, &w[*nw].not_before);
    if (r != ncclSuccess && *err == ncclSuccess)
        *err = r;
    return &w[(*nw)++];
}

static void keep_first(ncclResult_t *first, ncclResult_t r)
{
    if (*first == ncclSuccess)
        *first = r;
}

static ncclResult_t run_queue(void)
{
    ncclResult_t first = ncclSuccess;
    struct p2p_work *w = calloc(queued ? queued : 1, sizeof(*w));
    size_t nw = 0;
    if (!w)
        return ana_nccl_fail(ncclSystemError, "out of host memory");
    for (size_t i = 0; i < queued; i++) {
        const ana_nccl_call *c = &queue[i];
        if (!is_p2p(c))
            continue;
        struct p2p_work *pw = work_of(w, &nw, c, &first);
        if (c->kind == ANA_NCCL_SEND) {
            keep_first(&first, ana_nccl_post_send(c, pw->not_before));
            if (c->comm->nranks > 1)
                pw->sent_bytes += (double)(c->count * ana_nccl_type_size(c->dtype));
        }
    }
    for (size_t i = 0; i < queued; i++) {
        const ana_nccl_call *c = &queue[i];
        if (c->kind == ANA_NCCL_RECV) {
            struct p2p_work *pw = work_of(w, &nw, c, &first);
            uint64_t t = 0;
            keep_first(&first, ana_nccl_recv(c, &t));
            pw->not_before = t > pw->not_before ? t : pw->not_before;
        } else if (!is_p2p(c)) {
            keep_first(&first, ana_nccl_collective(c));
        }
    }
    for (size_t i = 0; i < nw; i++)
        keep_first(&first, ana_nccl_launch("ncclDevKernel_SendRecv", ANA_NCCL_P2P_THREADS,
                                           w[i].stream, w[i].not_before,
                                           ana_nccl_duration_ns(w[i].sent_bytes)));
    free(w);
    queued = 0;
    return first;
}

ANA_NCCL_ENTRY(ncclResult_t, GroupStart, (void))
{
    depth++;
    return ncclSuccess;
}

ANA_NCCL_ENTRY(ncclResult_t, GroupEnd, (void))
{
    if (depth == 0)
        return ana_nccl_fail(ncclInvalidUsage, "ncclGroupEnd: no group was started");
    if (--depth > 0)
        return ncclSuccess;
    return run_queue();
}

ncclResult_t ana_nccl_enqueue(const ana_nccl_call *c)
{
    ncclResult_t r = ana_nccl_check(c);
    if (r != ncclSuccess || c->count == 0)
        return r;
    if ((r = push(c)) != ncclSuccess || depth > 0)
        return r;
    depth++;
    return pncclGroupEnd();
}
