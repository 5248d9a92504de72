/*
 * nccl_rank — one rank of a multi-process test of the sim's libnccl.so.2, started by
 * test_sim_nccl.c (fork + exec, so each rank is a fresh process):
 *
 *     nccl_rank SCENARIO NRANKS RANK ID_HEX
 *
 * ID_HEX is the 128-byte ncclUniqueId in hex. Scenarios: "collectives" (every collective,
 * a send/receive ring in a group, a split; results checked against values computed here
 * from the inputs), "big" (a 64 MiB AllReduce per rank), "die" (exit 3 without joining),
 * "die_after_join" (join, then exit 3 before the first collective). Prints one line per
 * mismatch; exits 0 when everything matched, 1 otherwise.
 */
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(cond, ...)                                                                  \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fprintf(stderr, "rank %d: %s:%d: ", me, __FILE__, __LINE__);                  \
            fprintf(stderr, __VA_ARGS__);                                                 \
            fputc('\n', stderr);                                                          \
            failures++;                                                                   \
        }                                                                                 \
    } while (0)
#define NCCL_OK(call) CHECK((call) == ncclSuccess, "%s failed", #call)

static int me, n;

/* Rank r's input element i: small integers, exact in every type used. */
static int input(int r, size_t i) { return (r + 1) * (int)(i % 13 + 1); }

static void *dev(size_t bytes)
{
    void *p = NULL;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
        fprintf(stderr, "rank %d: cudaMalloc(%zu) failed\n", me, bytes);
        exit(1);
    }
    return p;
}

/* bfloat16 of a small integer (exact: the top 16 bits of the float). */
static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);
}
static float from_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void allreduce_float_sum(ncclComm_t comm, size_t count)
{
    float *s = dev(count * 4), *d = dev(count * 4);
    for (size_t i = 0; i < count; i++)
        s[i] = (float)input(me, i);
    NCCL_OK(ncclAllReduce(s, d, count, ncclFloat32, ncclSum, comm, 0));
    int bad = 0;
    for (size_t i = 0; i < count; i++) {
        float want = 0;
        for (int r = 0; r < n; r++)
            want += (float)input(r, i);
        bad += d[i] != want;
        if (bad == 1 && d[i] != want)
            CHECK(0, "allreduce sum f32 [%zu] = %g, want %g", i, d[i], want);
    }
    CHECK(bad == 0, "allreduce sum f32 of %zu: %d wrong", count, bad);
    cudaFree(s);
    cudaFree(d);
}

static void allreduce_max_i64_in_place(ncclComm_t comm)
{
    enum { C = 1000 };
    int64_t *b = dev(C * 8);
    for (size_t i = 0; i < C; i++)
        b[i] = (int64_t)input(me, i) * ((i & 1) ? -1 : 1) * 1000000000000LL;
    NCCL_OK(ncclAllReduce(b, b, C, ncclInt64, ncclMax, comm, 0));
    for (size_t i = 0; i < C; i++) {
        int64_t want = INT64_MIN;
        for (int r = 0; r < n; r++) {
            int64_t v = (int64_t)input(r, i) * ((i & 1) ? -1 : 1) * 1000000000000LL;
            want = v > want ? v : want;
        }
        if (b[i] != want) {
            CHECK(0, "allreduce max i64 in place [%zu] = %lld, want %lld", i,
                  (long long)b[i], (long long)want);
            break;
        }
    }
    cudaFree(b);
}

static void allreduce_bf16_sum(ncclComm_t comm)
{
    enum { C = 777 };
    uint16_t *s = dev(C * 2), *d = dev(C * 2);
    for (size_t i = 0; i < C; i++)
        s[i] = to_bf16((float)input(me, i));
    NCCL_OK(ncclAllReduce(s, d, C, ncclBfloat16, ncclSum, comm, 0));
    for (size_t i = 0; i < C; i++) {
        float want = 0;
        for (int r = 0; r < n; r++)
            want += (float)input(r, i);
        if (from_bf16(d[i]) != want) {
            CHECK(0, "allreduce sum bf16 [%zu] = %g, want %g", i, from_bf16(d[i]), want);
            break;
        }
    }
    cudaFree(s);
    cudaFree(d);
}

static void broadcast_and_reduce(ncclComm_t comm)
{
    enum { C = 500 };
    int root = 1 % n;
    int32_t *s = dev(C * 4), *d = dev(C * 4);
    for (size_t i = 0; i < C; i++) {
        s[i] = input(me, i);
        d[i] = -1;
    }
    NCCL_OK(ncclBroadcast(s, d, C, ncclInt32, root, comm, 0));
    for (size_t i = 0; i < C; i++)
        if (d[i] != input(root, i)) {
            CHECK(0, "broadcast [%zu] = %d, want %d", i, d[i], input(root, i));
            break;
        }
    /* Reduce (min) to the last rank; the others' recvbuff stays untouched. */
    root = n - 1;
    for (size_t i = 0; i < C; i++)
        d[i] = -7;
    NCCL_OK(ncclReduce(s, d, C, ncclInt32, ncclMin, root, comm, 0));
    for (size_t i = 0; i < C; i++) {
        int32_t want = me == root ? input(0, i) : -7;   /* rank 0 has the smallest inputs */
        if (d[i] != want) {
            CHECK(0, "reduce min [%zu] = %d, want %d", i, d[i], want);
            break;
        }
    }
    cudaFree(s);
    cudaFree(d);
}

static void allgather_and_reducescatter(ncclComm_t comm)
{
    enum { C = 300 };
    double *g = dev((size_t)n * C * 8);
    /* AllGather in place: this rank's part already sits at g + me * C. */
    for (size_t i = 0; i < (size_t)n * C; i++)
        g[i] = -1.0;
    for (size_t i = 0; i < C; i++)
        g[(size_t)me * C + i] = input(me, i) + 0.5;
    NCCL_OK(ncclAllGather(g + (size_t)me * C, g, C, ncclFloat64, comm, 0));
    for (int r = 0; r < n; r++)
        for (size_t i = 0; i < C; i++)
            if (g[(size_t)r * C + i] != input(r, i) + 0.5) {
                CHECK(0, "allgather [%d][%zu] = %g", r, i, g[(size_t)r * C + i]);
                r = n;
                break;
            }
    /* ReduceScatter (sum) in place: block me of the sum lands at s + me * C. */
    uint32_t *s = dev((size_t)n * C * 4);
    for (size_t i = 0; i < (size_t)n * C; i++)
        s[i] = (uint32_t)input(me, i);
    NCCL_OK(ncclReduceScatter(s, s + (size_t)me * C, C, ncclUint32, ncclSum, comm, 0));
    for (size_t i = 0; i < C; i++) {
        uint32_t want = 0;
        for (int r = 0; r < n; r++)
            want += (uint32_t)input(r, (size_t)me * C + i);
        if (s[(size_t)me * C + i] != want) {
            CHECK(0, "reducescatter [%zu] = %u, want %u", i, s[(size_t)me * C + i], want);
            break;
        }
    }
    cudaFree(g);
    cudaFree(s);
}

/* Everyone sends to the next rank and receives from the previous one, in one group. */
static void ring(ncclComm_t comm)
{
    enum { C = 4096 };
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    uint8_t *s = dev(C), *d = dev(C);
    for (size_t i = 0; i < C; i++)
        s[i] = (uint8_t)input(me, i);
    NCCL_OK(ncclGroupStart());
    NCCL_OK(ncclSend(s, C, ncclUint8, next, comm, 0));
    NCCL_OK(ncclRecv(d, C, ncclUint8, prev, comm, 0));
    NCCL_OK(ncclGroupEnd());
    for (size_t i = 0; i < C; i++)
        if (d[i] != (uint8_t)input(prev, i)) {
            CHECK(0, "ring recv [%zu] = %u, want %u", i, d[i], (uint8_t)input(prev, i));
            break;
        }
    cudaFree(s);
    cudaFree(d);
}

/* Even and odd ranks form two communicators, ordered by descending old rank (key). */
static void split(ncclComm_t comm)
{
    ncclComm_t sub = NULL;
    NCCL_OK(ncclCommSplit(comm, me % 2, -me, &sub, NULL));
    if (!sub) {
        CHECK(0, "split gave no communicator");
        return;
    }
    int count = 0, rank = -1, members = 0, above = 0;
    for (int r = me % 2; r < n; r += 2) {
        members++;
        above += r > me;   /* key -r: higher old ranks come first */
    }
    NCCL_OK(ncclCommCount(sub, &count));
    NCCL_OK(ncclCommUserRank(sub, &rank));
    CHECK(count == members, "split count %d, want %d", count, members);
    CHECK(rank == above, "split rank %d, want %d", rank, above);
    int64_t *v = dev(8);
    *v = me;
    NCCL_OK(ncclAllReduce(v, v, 1, ncclInt64, ncclSum, sub, 0));
    int64_t want = 0;
    for (int r = me % 2; r < n; r += 2)
        want += r;
    CHECK(*v == want, "allreduce in split = %lld, want %lld", (long long)*v, (long long)want);
    NCCL_OK(ncclCommDestroy(sub));
    cudaFree(v);
    ncclComm_t none = (ncclComm_t)&none;
    NCCL_OK(ncclCommSplit(comm, me == 0 ? NCCL_SPLIT_NOCOLOR : 5, 0, &none, NULL));
    CHECK((me == 0) == (none == NULL), "NOCOLOR gives NULL, a color a communicator");
    if (none)
        NCCL_OK(ncclCommDestroy(none));
}

static int parse_id(const char *hex, ncclUniqueId *id)
{
    if (strlen(hex) != 2 * NCCL_UNIQUE_ID_BYTES)
        return -1;
    for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; i++) {
        unsigned v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1)
            return -1;
        id->internal[i] = (char)v;
    }
    return 0;
}

int main(int argc, char **argv)
{
    ncclUniqueId id;
    if (argc != 5 || parse_id(argv[4], &id) != 0) {
        fprintf(stderr, "usage: nccl_rank SCENARIO NRANKS RANK ID_HEX\n");
        return 2;
    }
    const char *scenario = argv[1];
    n = atoi(argv[2]);
    me = atoi(argv[3]);
    if (strcmp(scenario, "die") == 0)
        return 3;
    ncclComm_t comm = NULL;
    ncclResult_t r = ncclCommInitRank(&comm, n, id, me);
    if (r != ncclSuccess) {
        fprintf(stderr, "rank %d: ncclCommInitRank: %s\n", me, ncclGetErrorString(r));
        return 1;
    }
    if (strcmp(scenario, "die_after_join") == 0)
        return 3;
    if (strcmp(scenario, "big") == 0) {
        allreduce_float_sum(comm, (size_t)16 << 20);   /* 64 MiB of float per rank */
    } else {
        allreduce_float_sum(comm, 10000);
        allreduce_max_i64_in_place(comm);
        allreduce_bf16_sum(comm);
        broadcast_and_reduce(comm);
        allgather_and_reducescatter(comm);
        ring(comm);
        split(comm);
    }
    NCCL_OK(ncclCommDestroy(comm));
    return failures ? 1 : 0;
}
