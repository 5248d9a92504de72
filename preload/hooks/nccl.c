/* nccl.c — interposed entry points of NCCL (libnccl.so.2, unversioned symbols):
 * communicators become COMM records, collectives and point-to-point operations COLL
 * records, ncclGroupStart/ncclGroupEnd LIBCALL records (docs/trace-format.md, "Library
 * calls").
 *
 * Each entry point is interposed under both its names: ncclX and pncclX, the name NVIDIA's
 * library defines (ncclX is its weak alias) and by which a profiling shim forwards. A call
 * reaching both (a shim between the program and NCCL) is one library call: the inner one
 * is nested, unrecorded, and changes none of the state below.
 *
 * State, changed by the outermost library calls only, recorded or not (so that numbering
 * agrees across ranks however much of the process is recorded):
 *  - a table communicator handle → comm_id, operation counter (COLL.seq), split counter;
 *    slots are claimed and released under a spinlock taken only by init, split and
 *    destroy/abort (never across a call into NCCL); operations look up without a lock;
 *  - the thread's ncclGroupStart depth (COLL.group, the group LIBCALL's arg).
 *
 * comm_id: ncclCommInitRank(Config): FNV-1a 64 of the 128 bytes of the ncclUniqueId, the
 * same on every rank. ncclCommInitAll (every rank in this process): FNV-1a 64 of the pid and
 * the call id (8 bytes each, least significant first). ncclCommSplit: FNV-1a 64 of the
 * parent's comm_id (8 bytes), the index of this split among the parent's splits in this
 * process (0, 1, ...; 4 bytes) and the color (4 bytes), all least significant first: equal
 * within a color on every rank, since ranks split a communicator in the same order.
 *
 * Called by the program only; calls calls/libctx.c (the library-call bracket) and the core
 * (rings, real symbols). */
#include "hooks_lib.h"

#include <nccl.h>
#include <unistd.h>

#define NCCL_SO "libnccl.so.2"

/* ---- communicator table ---- */

#define COMM_SLOTS 1024u
#define COMM_PROBES 64u
#define COMM_GONE ((uintptr_t)1) /* a destroyed communicator's slot, reusable */

typedef struct comm_slot {
    _Atomic uintptr_t comm; /* 0: never used; COMM_GONE: released */
    uint64_t comm_id;       /* written before `comm` is published */
    _Atomic uint64_t seq;   /* operations issued so far */
    _Atomic uint32_t splits;
} comm_slot;

static comm_slot comms[COMM_SLOTS];
static atomic_flag comms_lock = ATOMIC_FLAG_INIT;
static __thread int tls_group __attribute__((tls_model("initial-exec")));

static uint32_t comm_hash(uintptr_t h) { return (uint32_t)((h * 0x9E3779B97F4A7C15ull) >> 40) & (COMM_SLOTS - 1); }

static comm_slot *comm_find(ncclComm_t comm)
{
    uintptr_t h = (uintptr_t)comm;
    for (uint32_t i = 0, s = comm_hash(h); h && i < COMM_PROBES; i++, s = (s + 1) & (COMM_SLOTS - 1)) {
        uintptr_t k = atomic_load_explicit(&comms[s].comm, memory_order_acquire);
        if (k == h)
            return &comms[s];
        if (k == 0)
            return NULL;
    }
    return NULL;
}

static void comm_add(ncclComm_t comm, uint64_t comm_id)
{
    uintptr_t h = (uintptr_t)comm;
    if (!h)
        return;
    while (atomic_flag_test_and_set_explicit(&comms_lock, memory_order_acquire))
        ;
    comm_slot *s = comm_find(comm);
    for (uint32_t i = 0, p = comm_hash(h); !s && i < COMM_PROBES; i++, p = (p + 1) & (COMM_SLOTS - 1)) {
        uintptr_t k = atomic_load_explicit(&comms[p].comm, memory_order_relaxed);
        if (k == 0 || k == COMM_GONE)
            s = &comms[p];
    }
    if (s) {
        s->comm_id = comm_id;
        atomic_store_explicit(&s->seq, 0, memory_order_relaxed);
        atomic_store_explicit(&s->splits, 0, memory_order_relaxed);
        atomic_store_explicit(&s->comm, h, memory_order_release);
    }
    atomic_flag_clear_explicit(&comms_lock, memory_order_release);
}

static void comm_remove(ncclComm_t comm)
{
    while (atomic_flag_test_and_set_explicit(&comms_lock, memory_order_acquire))
        ;
    comm_slot *s = comm_find(comm);
    if (s)
        atomic_store_explicit(&s->comm, COMM_GONE, memory_order_release);
    atomic_flag_clear_explicit(&comms_lock, memory_order_release);
}

static uint64_t comm_id_of(ncclComm_t comm)
{
    comm_slot *s = comm_find(comm);
    return s ? s->comm_id : 0;
}

/* The next operation's seq on comm (1, 2, ...); 0 for a communicator not in the table. */
static uint64_t comm_next_seq(ncclComm_t comm)
{
    comm_slot *s = comm_find(comm);
    return s ? atomic_fetch_add_explicit(&s->seq, 1, memory_order_relaxed) + 1 : 0;
}

/* ---- shared shapes ---- */

#define NCCL_REAL(name, params) ANA_LIB_REAL(NCCL_SO, NULL, ncclResult_t, ncclSystemError, name, params)

/* Defines the wrapper under both names; M(name, ...) defines one. */
#define BOTH(M, name, ...) M(nccl##name, __VA_ARGS__) M(pnccl##name, __VA_ARGS__)

/* The handle `comm` left in *pp by a call that returned r (a nonblocking init returns
 * ncclInProgress with the handle set). */
static ncclComm_t made(ncclResult_t r, ncclComm_t *pp)
{
    return (r == ncclSuccess || r == ncclInProgress) && pp ? *pp : NULL;
}

/* An int the communicator reports through `getter` (ncclCommUserRank, ...); -1 when it
 * cannot say. */
static int64_t comm_int(void **slot, const char *name, ncclComm_t comm)
{
    ncclResult_t (*get)(const ncclComm_t, int *) =
        (ncclResult_t(*)(const ncclComm_t, int *))ANA_LIB_GETTER(*slot, NCCL_SO, NULL, name);
    int v;
    return comm && get && get(comm, &v) == ncclSuccess ? v : -1;
}

/* The device of a new communicator: its own (ncclCommCuDevice), else the thread's
 * current device (the runtime's cudaGetDevice), else -1. */
static int64_t comm_device(ncclComm_t comm)
{
    static void *cu_device;
    int64_t d = comm_int(&cu_device, "ncclCommCuDevice", comm);
    if (d >= 0)
        return d;
    static cudaError_t (*get_device)(int *);
    if (!get_device)
        get_device = (cudaError_t(*)(int *))ana_resolve("cudaGetDevice");
    int dev;
    return get_device && get_device(&dev) == cudaSuccess ? dev : -1;
}

static void comm_emit(ana_libcall *c, int last, ana_rec_comm *e)
{
    ana_record rec = { .kind = ANA_K_COMM };
    e->call = c->id, e->stack = c->stack, e->dur_ns = c->dur;
    rec.u.comm = *e;
    if (last) {
        ana_lib_emit(c, &rec);
    } else { /* more records of this call follow: stay in the preload's bracket */
        rec.time_ns = c->t0;
        ana_emit(c->t, &rec);
    }
}

static uint64_t unique_id_hash(const ncclUniqueId *id)
{
    return ana_fnv1a(ANA_FNV_BASIS, id->internal, sizeof(id->internal));
}

/* ---- communicators ---- */

#define INIT_RANK(name, api_, params, args)                                                    \
    ANA_EXPORT ncclResult_t name params                                                       \
    {                                                                                         \
        NCCL_REAL(name, params);                                                              \
        ana_libcall c;                                                                        \
        int rec = ana_lib_enter(&c, ANA_LIB_NCCL);                                            \
        ncclResult_t r = real args;                                                           \
        ana_lib_leave(&c);                                                                    \
        ncclComm_t nc = made(r, comm);                                                        \
        uint64_t id = unique_id_hash(&uid);                                                   \
        if (c.outer)                                                                          \
            comm_add(nc, id);                                                                 \
        if (rec)                                                                              \
            comm_emit(&c, 1, &(ana_rec_comm){ .api = api_, .ret = r, .comm = ANA_U64(nc), .comm_id = id, \
                                              .rank = rank, .size = nranks, .device = comm_device(nc) }); \
        return r;                                                                             \
    }

BOTH(INIT_RANK, CommInitRank, ANA_API_NCCL_COMM_INIT_RANK,
     (ncclComm_t * comm, int nranks, ncclUniqueId uid, int rank), (comm, nranks, uid, rank))
BOTH(INIT_RANK, CommInitRankConfig, ANA_API_NCCL_COMM_INIT_RANK_CONFIG,
     (ncclComm_t * comm, int nranks, ncclUniqueId uid, int rank, ncclConfig_t *config),
     (comm, nranks, uid, rank, config))

/* One COMM per communicator made: rank i of ndev, all with the call's id. */
#define INIT_ALL(name, ...)                                                                        \
    ANA_EXPORT ncclResult_t name(ncclComm_t *comms_out, int ndev, const int *devlist)        \
    {                                                                                         \
        NCCL_REAL(name, (ncclComm_t *, int, const int *));                                    \
        ana_libcall c;                                                                        \
        int rec = ana_lib_enter(&c, ANA_LIB_NCCL);                                            \
        ncclResult_t r = real(comms_out, ndev, devlist);                                      \
        ana_lib_leave(&c);                                                                    \
        init_all_done(&c, rec, r, comms_out, ndev, devlist);                                  \
        return r;                                                                             \
    }

static void init_all_done(ana_libcall *c, int rec, ncclResult_t r, ncclComm_t *out, int ndev, const int *devlist)
{
    static _Atomic uint64_t unrecorded; /* stands in for the call id of calls not recorded */
    uint64_t call = rec ? c->id : (1ull << 63) | atomic_fetch_add(&unrecorded, 1);
    uint64_t id = ana_fnv1a_u64(ana_fnv1a_u64(ANA_FNV_BASIS, (uint64_t)getpid()), call);
    int ok = r == ncclSuccess && out && ndev > 0;
    if (ok && c->outer)
        for (int i = 0; i < ndev; i++)
            comm_add(out[i], id);
    if (!rec)
        return;
    for (int i = 0, n = ok ? ndev : 1; i < n; i++)
        comm_emit(c, i == n - 1,
                  &(ana_rec_comm){ .api = ANA_API_NCCL_COMM_INIT_ALL, .ret = r,
                                   .comm = ok ? ANA_U64(out[i]) : 0, .comm_id = id, .rank = ok ? i : -1,
                                   .size = ndev, .device = ok ? (devlist ? devlist[i] : i) : -1 });
}

BOTH(INIT_ALL, CommInitAll)

static void split_done(ana_libcall *c, int rec, ncclResult_t r, ncclComm_t parent, int color, int key,
                       ncclComm_t nc, uint32_t index)
{
    static void *user_rank, *count;
    int32_t c32 = color;
    uint64_t id = ana_fnv1a(ana_fnv1a(ana_fnv1a_u64(ANA_FNV_BASIS, comm_id_of(parent)), &index, 4), &c32, 4);
    if (c->outer)
        comm_add(nc, id);
    if (rec)
        comm_emit(c, 1, &(ana_rec_comm){ .api = ANA_API_NCCL_COMM_SPLIT, .ret = r, .comm = ANA_U64(nc),
                                         .comm_id = id, .rank = comm_int(&user_rank, "ncclCommUserRank", nc),
                                         .size = comm_int(&count, "ncclCommCount", nc),
                                         .device = nc ? comm_device(nc) : -1, .parent = ANA_U64(parent),
                                         .color = color, .key = key });
}

#define SPLIT(name, ...)                                                                           \
    ANA_EXPORT ncclResult_t name(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,    \
                                 ncclConfig_t *config)                                       \
    {                                                                                         \
        NCCL_REAL(name, (ncclComm_t, int, int, ncclComm_t *, ncclConfig_t *));                \
        ana_libcall c;                                                                        \
        int rec = ana_lib_enter(&c, ANA_LIB_NCCL);                                            \
        comm_slot *s = c.outer ? comm_find(comm) : NULL;                                      \
        uint32_t index = s ? atomic_fetch_add(&s->splits, 1) : 0;                             \
        ncclResult_t r = real(comm, color, key, newcomm, config);                             \
        ana_lib_leave(&c);                                                                    \
        split_done(&c, rec, r, comm, color, key, made(r, newcomm), index);                    \
        return r;                                                                             \
    }

BOTH(SPLIT, CommSplit)

/* Destroy, abort (the handle is gone after them) and finalize (it stays). */
#define END_COMM(name, api_, gone)                                                             \
    ANA_EXPORT ncclResult_t name(ncclComm_t comm)                                             \
    {                                                                                         \
        NCCL_REAL(name, (ncclComm_t));                                                        \
        ana_libcall c;                                                                        \
        int rec = ana_lib_enter(&c, ANA_LIB_NCCL);                                            \
        uint64_t id = comm_id_of(comm);                                                       \
        ncclResult_t r = real(comm);                                                          \
        ana_lib_leave(&c);                                                                    \
        if ((gone) && c.outer)                                                                \
            comm_remove(comm);                                                                \
        if (rec)                                                                              \
            comm_emit(&c, 1, &(ana_rec_comm){ .api = api_, .ret = r, .comm = ANA_U64(comm), .comm_id = id, \
                                              .rank = -1, .size = -1, .device = -1 });        \
        return r;                                                                             \
    }

BOTH(END_COMM, CommDestroy, ANA_API_NCCL_COMM_DESTROY, 1)
BOTH(END_COMM, CommAbort, ANA_API_NCCL_COMM_ABORT, 1)
BOTH(END_COMM, CommFinalize, ANA_API_NCCL_COMM_FINALIZE, 0)

/* ---- operations ---- */

/* Bytes of one element of an ncclDataType_t; 0 for a type this NCCL did not define. */
static uint64_t dtype_size(ncclDataType_t t)
{
    switch (t) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
    }
}

static void coll_emit(ana_libcall *c, ana_rec_coll *e)
{
    ana_record rec = { .kind = ANA_K_COLL };
    e->call = c->id, e->stack = c->stack, e->dur_ns = c->dur;
    e->bytes = ana_sat_mul(e->count, dtype_size((ncclDataType_t)e->dtype));
    rec.u.coll = *e;
    ana_lib_emit(c, &rec);
}

/* `group` and `seq` are what they were when the operation was issued. */
#define COLL(name, api_, params, args, send, recv, cnt, dt, redop, root)                          \
    ANA_EXPORT ncclResult_t name params                                                       \
    {                                                                                         \
        NCCL_REAL(name, params);                                                              \
        ana_libcall c;                                                                        \
        int rec = ana_lib_enter(&c, ANA_LIB_NCCL);                                            \
        uint64_t group = (uint64_t)tls_group, seq = c.outer ? comm_next_seq(comm) : 0;        \
        ncclResult_t r = real args;                                                           \
        ana_lib_leave(&c);                                                                    \
        if (rec)                                                                              \
            coll_emit(&c, &(ana_rec_coll){ .api = api_, .ret = r, .comm = ANA_U64(comm), .stream = ANA_U64(stream), \
                                           .count = cnt, .dtype = (uint64_t)(dt), .op = (uint64_t)(redop), \
                                           .peer = root, .sendbuff = ANA_U64(send), .recvbuff = ANA_U64(recv), \
                                           .group = group, .seq = seq });                        \
        return r;                                                                             \
    }

BOTH(COLL, AllReduce, ANA_API_NCCL_ALL_REDUCE,
     (const void *sb, void *rb, size_t count, ncclDataType_t dt, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream),
     (sb, rb, count, dt, op, comm, stream), sb, rb, count, dt, op, -1)
BOTH(COLL, Reduce, ANA_API_NCCL_REDUCE,
     (const void *sb, void *rb, size_t count, ncclDataType_t dt, ncclRedOp_t op, int root, ncclComm_t comm,
      cudaStream_t stream),
     (sb, rb, count, dt, op, root, comm, stream), sb, rb, count, dt, op, root)
BOTH(COLL, Broadcast, ANA_API_NCCL_BROADCAST,
     (const void *sb, void *rb, size_t count, ncclDataType_t dt, int root, ncclComm_t comm, cudaStream_t stream),
     (sb, rb, count, dt, root, comm, stream), sb, rb, count, dt, 0, root)
BOTH(COLL, Bcast, ANA_API_NCCL_BCAST,
     (void *buff, size_t count, ncclDataType_t dt, int root, ncclComm_t comm, cudaStream_t stream),
     (buff, count, dt, root, comm, stream), buff, buff, count, dt, 0, root)
BOTH(COLL, AllGather, ANA_API_NCCL_ALL_GATHER,
     (const void *sb, void *rb, size_t count, ncclDataType_t dt, ncclComm_t comm, cudaStream_t stream),
     (sb, rb, count, dt, comm, stream), sb, rb, count, dt, 0, -1)
BOTH(COLL, ReduceScatter, ANA_API_NCCL_REDUCE_SCATTER,
     (const void *sb, void *rb, size_t count, ncclDataType_t dt, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream),
     (sb, rb, count, dt, op, comm, stream), sb, rb, count, dt, op, -1)
BOTH(COLL, Send, ANA_API_NCCL_SEND,
     (const void *sb, size_t count, ncclDataType_t dt, int peer, ncclComm_t comm, cudaStream_t stream),
     (sb, count, dt, peer, comm, stream), sb, 0, count, dt, 0, peer)
BOTH(COLL, Recv, ANA_API_NCCL_RECV,
     (void *rb, size_t count, ncclDataType_t dt, int peer, ncclComm_t comm, cudaStream_t stream),
     (rb, count, dt, peer, comm, stream), 0, rb, count, dt, 0, peer)

/* ---- groups ---- */

/* ncclGroupEnd leaves the group even when it fails (NCCL decrements its depth first). */
#define GROUP(name, api_, start)                                                               \
    ANA_EXPORT ncclResult_t name(void)                                                        \
    {                                                                                         \
        NCCL_REAL(name, (void));                                                              \
        ana_libcall c;                                                                        \
        int rec = ana_lib_enter(&c, ANA_LIB_NCCL);                                            \
        ncclResult_t r = real();                                                              \
        ana_lib_leave(&c);                                                                    \
        if (c.outer && (start) && r == ncclSuccess)                                           \
            tls_group++;                                                                      \
        else if (c.outer && !(start) && tls_group > 0)                                        \
            tls_group--;                                                                      \
        if (rec) {                                                                            \
            ana_record rec_ = { .kind = ANA_K_LIBCALL };                                      \
            rec_.u.libcall = (ana_rec_libcall){ .lib = ANA_LIB_NCCL, .api = api_, .ret = r, .call = c.id, \
                                                .arg = (uint64_t)tls_group, .stack = c.stack, .dur_ns = c.dur }; \
            ana_lib_emit(&c, &rec_);                                                          \
        }                                                                                     \
        return r;                                                                             \
    }

BOTH(GROUP, GroupStart, ANA_API_NCCL_GROUP_START, 1)
BOTH(GROUP, GroupEnd, ANA_API_NCCL_GROUP_END, 0)
