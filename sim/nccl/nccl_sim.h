/*
 * nccl_sim.h — internal contract of the sim's libnccl.so.2 (docs/sim.md, "NCCL").
 *
 * What it does: NCCL's entry points (nccl.h of the CUDA toolkit, so every type and
 * signature is NVIDIA's) for ranks that are processes (or threads) of one machine. The
 * ranks of a communicator meet in one POSIX shared-memory segment named from the unique id
 * (shm.c); collectives copy each rank's contribution through it and really combine the
 * data at call time (coll.c, reduce.c); sends and receives go through one shared-memory
 * object per message (p2p.c); ncclGroupStart/End queue calls per thread (group.c). Every
 * collective, and each group's point-to-point work, launches one kernel through the
 * driver (cuLaunchKernel) whose start and duration the sim's device takes from
 * anasim_next_launch: all the timing constants are below.
 *
 * Thread-safety: every entry point is thread-safe for distinct communicators; one
 * communicator is used by one thread at a time, as NCCL requires. Group state is per
 * thread. No lock of this library is held across a call into the driver.
 */
#ifndef ANA_NCCL_SIM_H
#define ANA_NCCL_SIM_H

#include <cuda.h>
#include <nccl.h>
#include <stddef.h>
#include <stdint.h>

#include "anasim.h"

#define ANA_NCCL_API __attribute__((visibility("default")))

/* Defines pnccl<name> (GLOBAL) and nccl<name> as its WEAK alias, as NVIDIA's library
 * exports them. Use: ANA_NCCL_ENTRY(ncclResult_t, CommCount, (const ncclComm_t c, int *n))
 * followed by the body. */
#define ANA_NCCL_ENTRY(ret, name, params)                                                  \
    ANA_NCCL_API ret nccl##name params __attribute__((weak, alias("pnccl" #name)));         \
    ANA_NCCL_API ret pnccl##name params

/* ---- the model's constants (docs/sim.md "NCCL", "Timing") ------------------------------- */
#define ANA_NCCL_CHANNELS           2      /* grid: one block per channel */
#define ANA_NCCL_COLL_THREADS       512    /* block of the *_RING_LL kernels (NCCL_LL_MAX_NTHREADS) */
#define ANA_NCCL_P2P_THREADS        640    /* block of ncclDevKernel_SendRecv (NCCL_MAX_NTHREADS) */
#define ANA_NCCL_LAUNCH_NS          5000.0 /* every NCCL kernel's floor, ns */
#define ANA_NCCL_LINK_BYTES_PER_NS  150.0  /* NVLink-like 150 GB/s per direction */
/* The communicator's own device memory, cuMemAlloc_v2'd at init, freed at destroy. */
#define ANA_NCCL_CHANNEL_BUFFER_BYTES ((size_t)4 << 20)
/* Staging per rank in the shared segment: a collective moves its data in rounds of at
 * most this many bytes per rank. */
#define ANA_NCCL_SLOT_BYTES         ((size_t)4 << 20)
/* Every wait for another rank gives up after this long (ms); the environment variable
 * overrides it. */
#define ANA_NCCL_TIMEOUT_MS         60000
#define ANA_NCCL_TIMEOUT_ENV        "ANATOMIST_SIM_NCCL_TIMEOUT_MS"
/* Shared-memory names: ANA_NCCL_SHM_PREFIX + 32 hex digits of the id's bytes 0..15. */
#define ANA_NCCL_SHM_PREFIX         "/anasim-nccl-"
#define ANA_NCCL_SEG_NAME_MAX       64   /* the segment's name: prefix + 32 hex + NUL */
#define ANA_NCCL_SHM_NAME_MAX       128  /* a message's name: the segment's + "-src-dst-n" */

/* ---- driver.c: the driver, reached as NVIDIA's NCCL does ------------------------------ */
typedef struct ana_nccl_driver {
    CUresult (*mem_alloc)(CUdeviceptr *, size_t);
    CUresult (*mem_free)(CUdeviceptr);
    CUresult (*launch_kernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void **, void **);
} ana_nccl_driver;
/* Loads libcuda.so.1 once; NULL (and one line on stderr) when it cannot. */
const ana_nccl_driver *ana_nccl_driver_get(void);

/* ---- shm.c: the segment where the ranks of one communicator meet --------------------- */
struct ana_nccl_seg;

/* What a rank publishes for a collective (or a split) before the first barrier. */
typedef struct ana_nccl_slot {
    uint64_t seq;          /* the communicator's collective sequence number */
    uint64_t ready_ns;     /* the op's stream ready time (anasim_stream_ready) */
    uint64_t count;
    int32_t kind, dtype, op, root;
    int32_t color, key;    /* ncclCommSplit */
} ana_nccl_slot;

struct ncclComm {
    struct ana_nccl_seg *seg;
    size_t seg_bytes;
    char name[ANA_NCCL_SEG_NAME_MAX];
    unsigned char id[NCCL_UNIQUE_ID_BYTES];
    int rank, nranks;
    int timeout_ms;
    uint64_t coll_seq;       /* collectives (and splits) issued */
    uint64_t split_seq;      /* splits issued: part of the child's id */
    uint64_t *sent, *received; /* per peer: messages sent to / received from it */
    CUdeviceptr buffers;     /* ANA_NCCL_CHANNEL_BUFFER_BYTES */
    ncclResult_t async_error;
};

/* Joins (creating it if first) the segment of comm->name for comm->nranks ranks as
 * comm->rank, and waits until every rank has joined. ncclSystemError on timeout or a
 * shared-memory failure, ncclInvalidArgument when the segment was made for another rank
 * count or the rank already joined. */
ncclResult_t ana_nccl_seg_join(struct ncclComm *comm);
/* Leaves the segment; the last rank to leave unlinks it and every message never
 * received. `abort` marks the segment broken first, so waiting peers fail at once. */
void ana_nccl_seg_leave(struct ncclComm *comm, int abort);
/* Everyone reaches it, or ncclRemoteError (timeout or a broken segment). */
ncclResult_t ana_nccl_barrier(struct ncclComm *comm);
ana_nccl_slot *ana_nccl_slots(struct ncclComm *comm);
/* Rank r's staging area, ANA_NCCL_SLOT_BYTES bytes. */
unsigned char *ana_nccl_staging(struct ncclComm *comm, int r);
/* Counters of messages posted from src to dst, and the wait for the next. */
ncclResult_t ana_nccl_post(struct ncclComm *comm, int dst);
ncclResult_t ana_nccl_wait_posted(struct ncclComm *comm, int src, uint64_t n);
/* Message n from src was received: its object may no longer be unlinked at leave. */
void ana_nccl_msg_done(struct ncclComm *comm, int src);
/* The shared-memory name of message n from src to dst. */
void ana_nccl_msg_name(const struct ncclComm *comm, int src, int dst, uint64_t n,
                       char out[ANA_NCCL_SHM_NAME_MAX]);
/* The timeout in ms, from the environment or ANA_NCCL_TIMEOUT_MS. */
int ana_nccl_timeout_ms(void);

/* ---- reduce.c: datatypes and reduction operators ------------------------------------- */
/* Bytes per element, 0 for a datatype the sim does not reduce (fp8, unknown). */
size_t ana_nccl_type_size(ncclDataType_t t);
/* The kernel name's type suffix ("f32"), NULL for an unknown type. */
const char *ana_nccl_type_suffix(ncclDataType_t t);
/* The kernel name's operator ("Sum", ... "PreMulSum"/"SumPostDiv" for ncclAvg on
 * floating-point/integer types), NULL for an unknown operator. */
const char *ana_nccl_op_name(ncclRedOp_t op, ncclDataType_t t);
/* out[i] = in[0][i] op in[1][i] op ... in[n-1][i] for i < count, rank order, rounded to
 * the type after every step; ncclAvg divides the sum by n. out may alias in[k]. */
void ana_nccl_reduce(void *out, const void *const *in, int n, size_t count,
                     ncclDataType_t t, ncclRedOp_t op);

/* ---- coll.c / p2p.c / group.c -------------------------------------------------------- */
typedef enum ana_nccl_kind {
    ANA_NCCL_ALLREDUCE = 1, ANA_NCCL_BROADCAST, ANA_NCCL_REDUCE, ANA_NCCL_ALLGATHER,
    ANA_NCCL_REDUCESCATTER, ANA_NCCL_SEND, ANA_NCCL_RECV, ANA_NCCL_SPLIT
} ana_nccl_kind;

/* One call, as issued (and as queued inside a group). count is in elements: per rank
 * (AllReduce, Broadcast, Reduce, Send, Recv), sent (AllGather), received (ReduceScatter). */
typedef struct ana_nccl_call {
    ana_nccl_kind kind;
    const void *send;
    void *recv;
    size_t count;
    ncclDataType_t dtype;
    ncclRedOp_t op;
    int root;                /* or peer */
    struct ncclComm *comm;
    cudaStream_t stream;
} ana_nccl_call;

/* Checks a call's arguments (communicator, type, operator, root, buffers, stream). */
ncclResult_t ana_nccl_check(const ana_nccl_call *c);
/* Runs a collective: data combined, kernel launched. */
ncclResult_t ana_nccl_collective(const ana_nccl_call *c);
/* Queues a call in the calling thread's group, or runs it at once outside a group. */
ncclResult_t ana_nccl_enqueue(const ana_nccl_call *c);
/* Point-to-point work of one communicator in one group: posts every send, then receives
 * (p2p.c); and the group's SendRecv kernel for it. */
ncclResult_t ana_nccl_post_send(const ana_nccl_call *c, uint64_t ready_ns);
ncclResult_t ana_nccl_recv(const ana_nccl_call *c, uint64_t *sender_ready_ns);
/* The stream's ready time; ncclUnhandledCudaError for an unknown stream. */
ncclResult_t ana_nccl_stream_ready(cudaStream_t stream, uint64_t *t);
/* Launches kernel `name` on `stream`, starting no earlier than not_before_ns, lasting
 * duration_ns. */
ncclResult_t ana_nccl_launch(const char *name, unsigned threads, cudaStream_t stream,
                             uint64_t not_before_ns, uint64_t duration_ns);
/* llround(ANA_NCCL_LAUNCH_NS + wire_bytes / ANA_NCCL_LINK_BYTES_PER_NS). */
uint64_t ana_nccl_duration_ns(double wire_bytes);

/* comm.c: records the message ncclGetLastError answers on this thread, and returns r. */
ncclResult_t ana_nccl_fail(ncclResult_t r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Makes a communicator of nranks with this id (ncclCommInitRank's work; split.c uses it
 * for the children). */
ncclResult_t ana_nccl_comm_init(ncclComm_t *out, int nranks, const unsigned char *id,
                                int rank);

#endif /* ANA_NCCL_SIM_H */
