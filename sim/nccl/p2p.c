/*
 * p2p.c — ncclSend and ncclRecv. Messages between two ranks are matched by (sender,
 * receiver, per-pair sequence number). A send writes its data into a shared-memory object
 * of its own (named after the segment, the pair and the number: ana_nccl_msg_name) with a
 * small header — the byte count and the sender's stream ready time — and posts it; it
 * never waits for the receiver, so no arrangement of sends and receives inside a group
 * can deadlock. A receive waits (with the communicator's timeout) until the message is
 * posted, checks that the sizes agree (ncclInvalidUsage otherwise), copies it out and
 * unlinks it.
 */
#define _GNU_SOURCE
#include "nccl_sim.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct msg_header {
    uint64_t bytes;
    uint64_t ready_ns;
};

ncclResult_t ana_nccl_post_send(const ana_nccl_call *c, uint64_t ready_ns)
{
    struct ncclComm *comm = c->comm;
    char name[ANA_NCCL_SHM_NAME_MAX];
    size_t bytes = c->count * ana_nccl_type_size(c->dtype);
    size_t size = sizeof(struct msg_header) + bytes;
    ana_nccl_msg_name(comm, comm->rank, c->root, comm->sent[c->root], name);
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0)
        return ana_nccl_fail(ncclSystemError, "shared memory %s: %s", name, strerror(errno));
    void *p = ftruncate(fd, (off_t)size) == 0
              ? mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    close(fd);
    if (p == MAP_FAILED) {
        shm_unlink(name);
        return ana_nccl_fail(ncclSystemError, "shared memory %s: %s", name, strerror(errno));
    }
    struct msg_header h = { bytes, ready_ns };
    memcpy(p, &h, sizeof(h));
    memcpy((unsigned char *)p + sizeof(h), c->send, bytes);
    munmap(p, size);
    comm->sent[c->root]++;
    return ana_nccl_post(comm, c->root);
}

ncclResult_t ana_nccl_recv(const ana_nccl_call *c, uint64_t *sender_ready_ns)
{
    struct ncclComm *comm = c->comm;
    int src = c->root;
    uint64_t n = comm->received[src];
    ncclResult_t r = ana_nccl_wait_posted(comm, src, n);
    if (r != ncclSuccess) {
        comm->async_error = r;
        return r;
    }
    char name[ANA_NCCL_SHM_NAME_MAX];
    ana_nccl_msg_name(comm, src, comm->rank, n, name);
    int fd = shm_open(name, O_RDONLY, 0);
    struct stat st;
    void *p = fd >= 0 && fstat(fd, &st) == 0 && (size_t)st.st_size >= sizeof(struct msg_header)
              ? mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (fd >= 0)
        close(fd);
    if (p == MAP_FAILED)
        return ana_nccl_fail(ncclSystemError, "shared memory %s: %s", name, strerror(errno));
    struct msg_header h;
    memcpy(&h, p, sizeof(h));
    size_t want = c->count * ana_nccl_type_size(c->dtype);
    if (h.bytes == want)
        memcpy(c->recv, (const unsigned char *)p + sizeof(h), want);
    munmap(p, (size_t)st.st_size);
    shm_unlink(name);
    ana_nccl_msg_done(comm, src);
    comm->received[src]++;
    *sender_ready_ns = h.ready_ns;
    if (h.bytes != want)
        return ana_nccl_fail(ncclInvalidUsage, "rank %d sent %llu bytes, rank %d receives "
                             "%zu", src, (unsigned long long)h.bytes, comm->rank, want);
    return ncclSuccess;
}

ANA_NCCL_ENTRY(ncclResult_t, Send,
               (const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
                ncclComm_t comm, cudaStream_t stream))
{
    ana_nccl_call c = { ANA_NCCL_SEND, sendbuff, NULL, count, datatype, ncclSum, peer, comm,
                        stream };
    return ana_nccl_enqueue(&c);
}

ANA_NCCL_ENTRY(ncclResult_t, Recv,
               (void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
                ncclComm_t comm, cudaStream_t stream))
{
    ana_nccl_call c = { ANA_NCCL_RECV, NULL, recvbuff, count, datatype, ncclSum, peer, comm,
                        stream };
    return ana_nccl_enqueue(&c);
}
