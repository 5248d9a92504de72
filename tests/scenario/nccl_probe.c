/* nccl_probe.c — NCCL ranks as processes, for test_nccl_hooks.py.
 *
 * `nccl_probe NRANKS OUTDIR`: gets a unique id, then forks and execs itself once per rank
 * (NCCL_PROBE_RANK, NCCL_PROBE_NRANKS, NCCL_PROBE_ID = the id in hex) and waits for them;
 * exit status 0 when every rank succeeded. Each rank: ncclCommInitRank; AllReduce (float32
 * sum), Broadcast (int32, root n-1), AllGather (int64), ReduceScatter (float64 max); a
 * Send to the next rank and a Recv from the previous one in a group; a Reduce (int32 prod,
 * root 0) in a group nested twice; ncclCommSplit by parity (key = -rank) with an AllReduce
 * on the child; a second split where rank 0 passes NCCL_SPLIT_NOCOLOR, with a Bcast on the
 * child; destroy, finalize. Every result is checked against values computed here. The
 * rank writes its ledger to OUTDIR/rank<R>.json: pid, handles, and every operation in
 * issue order with what it was given. */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static FILE *out;
static int failures, nops;

#define CHECK(what, call)                                                                     \
    do {                                                                                      \
        int rc_ = (int)(call);                                                                \
        if (rc_ != 0) {                                                                       \
            fprintf(stderr, "rank error: %s returned %d\n", what, rc_);                       \
            failures++;                                                                       \
        }                                                                                     \
    } while (0)

static void op_note(const char *api, const char *comm, size_t count, int dtype, int op, int peer, int group,
                    const void *send, const void *recv)
{
    fprintf(out, "%s{\"api\":\"%s\",\"comm\":\"%s\",\"count\":%zu,\"dtype\":%d,\"op\":%d,\"peer\":%d,"
                 "\"group\":%d,\"sendbuff\":%llu,\"recvbuff\":%llu}",
            nops++ ? "," : "", api, comm, count, dtype, op, peer, group, (unsigned long long)(uintptr_t)send,
            (unsigned long long)(uintptr_t)recv);
}

static void *dev_from(const void *host, size_t bytes)
{
    void *d = NULL;
    CHECK("cudaMalloc", cudaMalloc(&d, bytes));
    CHECK("cudaMemcpy", cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice));
    return d;
}

static void to_host(void *host, const void *dev, size_t bytes)
{
    CHECK("cudaMemcpy", cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost));
}

static void expect(const char *what, int ok)
{
    if (!ok) {
        fprintf(stderr, "rank result wrong: %s\n", what);
        failures++;
    }
}

static void collectives(ncclComm_t comm, cudaStream_t s, int r, int n)
{
    enum { N_AR = 1000, N_BC = 257, N_AG = 33, N_RS = 50 };
    float ar[N_AR];
    for (int i = 0; i < N_AR; i++)
        ar[i] = (float)(r + 1 + i % 5);
    void *d_ar = dev_from(ar, sizeof(ar));
    CHECK("ncclAllReduce", ncclAllReduce(d_ar, d_ar, N_AR, ncclFloat32, ncclSum, comm, s));
    op_note("ncclAllReduce", "world", N_AR, ncclFloat32, ncclSum, -1, 0, d_ar, d_ar);
    cudaStreamSynchronize(s), to_host(ar, d_ar, sizeof(ar));
    for (int i = 0; i < N_AR; i++)
        expect("allreduce", ar[i] == (float)(n * (n + 1) / 2 + n * (i % 5)));

    int32_t bc[N_BC];
    for (int i = 0; i < N_BC; i++)
        bc[i] = r == n - 1 ? i * 3 + 7 : 0;
    void *d_bc = dev_from(bc, sizeof(bc)), *d_bc2 = dev_from(bc, sizeof(bc));
    CHECK("ncclBroadcast", ncclBroadcast(d_bc, d_bc2, N_BC, ncclInt32, n - 1, comm, s));
    op_note("ncclBroadcast", "world", N_BC, ncclInt32, 0, n - 1, 0, d_bc, d_bc2);
    cudaStreamSynchronize(s), to_host(bc, d_bc2, sizeof(bc));
    for (int i = 0; i < N_BC; i++)
        expect("broadcast", bc[i] == i * 3 + 7);

    int64_t ag[N_AG], *agr = calloc((size_t)(N_AG * n), sizeof(int64_t));
    for (int i = 0; i < N_AG; i++)
        ag[i] = r * 1000 + i;
    void *d_ag = dev_from(ag, sizeof(ag)), *d_agr = dev_from(agr, sizeof(int64_t) * (size_t)(N_AG * n));
    CHECK("ncclAllGather", ncclAllGather(d_ag, d_agr, N_AG, ncclInt64, comm, s));
    op_note("ncclAllGather", "world", N_AG, ncclInt64, 0, -1, 0, d_ag, d_agr);
    cudaStreamSynchronize(s), to_host(agr, d_agr, sizeof(int64_t) * (size_t)(N_AG * n));
    for (int i = 0; i < N_AG * n; i++)
        expect("allgather", agr[i] == (i / N_AG) * 1000 + i % N_AG);

    double *rs = calloc((size_t)(N_RS * n), sizeof(double)), rsr[N_RS];
    for (int i = 0; i < N_RS * n; i++)
        rs[i] = (double)((i * 7 + r * 3) % 11);
    void *d_rs = dev_from(rs, sizeof(double) * (size_t)(N_RS * n)), *d_rsr = dev_from(rsr, sizeof(rsr));
    CHECK("ncclReduceScatter", ncclReduceScatter(d_rs, d_rsr, N_RS, ncclFloat64, ncclMax, comm, s));
    op_note("ncclReduceScatter", "world", N_RS, ncclFloat64, ncclMax, -1, 0, d_rs, d_rsr);
    cudaStreamSynchronize(s), to_host(rsr, d_rsr, sizeof(rsr));
    for (int i = 0; i < N_RS; i++) {
        double m = 0;
        for (int q = 0; q < n; q++) {
            double v = (double)(((r * N_RS + i) * 7 + q * 3) % 11);
            m = v > m ? v : m;
        }
        expect("reducescatter", rsr[i] == m);
    }
    free(agr), free(rs);
}

static void groups(ncclComm_t comm, cudaStream_t s, int r, int n)
{
    enum { N_P2P = 4096 };
    uint8_t sb[N_P2P], rb[N_P2P];
    for (int i = 0; i < N_P2P; i++)
        sb[i] = (uint8_t)(r * 31 + i), rb[i] = 0;
    void *d_s = dev_from(sb, sizeof(sb)), *d_r = dev_from(rb, sizeof(rb));
    int next = (r + 1) % n, prev = (r + n - 1) % n;
    CHECK("ncclGroupStart", ncclGroupStart());
    CHECK("ncclSend", ncclSend(d_s, N_P2P, ncclUint8, next, comm, s));
    op_note("ncclSend", "world", N_P2P, ncclUint8, 0, next, 1, d_s, NULL);
    CHECK("ncclRecv", ncclRecv(d_r, N_P2P, ncclUint8, prev, comm, s));
    op_note("ncclRecv", "world", N_P2P, ncclUint8, 0, prev, 1, NULL, d_r);
    CHECK("ncclGroupEnd", ncclGroupEnd());
    cudaStreamSynchronize(s), to_host(rb, d_r, sizeof(rb));
    for (int i = 0; i < N_P2P; i++)
        expect("sendrecv", rb[i] == (uint8_t)(prev * 31 + i));

    int32_t v[3] = { r + 2, r + 2, r + 2 };
    void *d_v = dev_from(v, sizeof(v)), *d_o = dev_from(v, sizeof(v));
    CHECK("ncclGroupStart", ncclGroupStart());
    CHECK("ncclGroupStart", ncclGroupStart());
    CHECK("ncclReduce", ncclReduce(d_v, d_o, 3, ncclInt32, ncclProd, 0, comm, s));
    op_note("ncclReduce", "world", 3, ncclInt32, ncclProd, 0, 2, d_v, d_o);
    CHECK("ncclGroupEnd", ncclGroupEnd());
    CHECK("ncclGroupEnd", ncclGroupEnd());
    cudaStreamSynchronize(s), to_host(v, d_o, sizeof(v));
    int32_t prod = 1;
    for (int q = 0; q < n; q++)
        prod *= q + 2;
    if (r == 0)
        expect("reduce", v[0] == prod && v[2] == prod);
}

static void splits(ncclComm_t comm, cudaStream_t s, int r, int n, unsigned long long *child)
{
    ncclComm_t c0 = NULL, c1 = NULL;
    CHECK("ncclCommSplit", ncclCommSplit(comm, r % 2, -r, &c0, NULL));
    int32_t x[10];
    for (int i = 0; i < 10; i++)
        x[i] = r + i;
    void *d_x = dev_from(x, sizeof(x));
    CHECK("ncclAllReduce", ncclAllReduce(d_x, d_x, 10, ncclInt32, ncclSum, c0, s));
    op_note("ncclAllReduce", "split0", 10, ncclInt32, ncclSum, -1, 0, d_x, d_x);
    cudaStreamSynchronize(s), to_host(x, d_x, sizeof(x));
    int members = 0, sum = 0;
    for (int q = r % 2; q < n; q += 2)
        members++, sum += q;
    for (int i = 0; i < 10; i++)
        expect("split allreduce", x[i] == sum + members * i);

    CHECK("ncclCommSplit", ncclCommSplit(comm, r == 0 ? NCCL_SPLIT_NOCOLOR : 0, r, &c1, NULL));
    if (r == 0) {
        expect("nocolor", c1 == NULL);
    } else {
        int32_t b[5] = { r, r, r, r, r };
        void *d_b = dev_from(b, sizeof(b));
        CHECK("ncclBcast", ncclBcast(d_b, 5, ncclInt32, 0, c1, s)); /* root: child rank 0 = parent rank 1 */
        op_note("ncclBcast", "split1", 5, ncclInt32, 0, 0, 0, d_b, d_b);
        cudaStreamSynchronize(s), to_host(b, d_b, sizeof(b));
        expect("split bcast", b[0] == 1 && b[4] == 1);
    }
    child[0] = (unsigned long long)(uintptr_t)c0, child[1] = (unsigned long long)(uintptr_t)c1;
    CHECK("ncclCommDestroy", ncclCommDestroy(c0));
    if (c1)
        CHECK("ncclCommDestroy", ncclCommDestroy(c1));
}

static int rank_main(int r, int n, const char *idhex, const char *dir)
{
    ncclUniqueId id;
    for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; i++) {
        unsigned v;
        sscanf(idhex + 2 * i, "%2x", &v);
        id.internal[i] = (char)v;
    }
    char path[4096];
    snprintf(path, sizeof(path), "%s/rank%d.json", dir, r);
    out = fopen(path, "w");
    if (!out)
        return 2;
    cudaStream_t s;
    CHECK("cudaSetDevice", cudaSetDevice(0));
    CHECK("cudaStreamCreate", cudaStreamCreate(&s));
    ncclComm_t comm;
    CHECK("ncclCommInitRank", ncclCommInitRank(&comm, n, id, r));
    fprintf(out, "{\"rank\":%d,\"nranks\":%d,\"pid\":%d,\"comm\":%llu,\"stream\":%llu,\"ops\":[", r, n, (int)getpid(),
            (unsigned long long)(uintptr_t)comm, (unsigned long long)(uintptr_t)s);
    collectives(comm, s, r, n);
    groups(comm, s, r, n);
    unsigned long long child[2];
    splits(comm, s, r, n, child);
    CHECK("ncclCommFinalize", ncclCommFinalize(comm));
    CHECK("ncclCommDestroy", ncclCommDestroy(comm));
    fprintf(out, "],\"split0\":%llu,\"split1\":%llu,\"ok\":%s}\n", child[0], child[1], failures ? "false" : "true");
    fclose(out);
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    const char *rank = getenv("NCCL_PROBE_RANK");
    if (rank)
        return rank_main(atoi(rank), atoi(getenv("NCCL_PROBE_NRANKS")), getenv("NCCL_PROBE_ID"), argv[2]);
    if (argc != 3) {
        fprintf(stderr, "usage: nccl_probe NRANKS OUTDIR\n");
        return 2;
    }
    int n = atoi(argv[1]);
    ncclUniqueId id;
    if (ncclGetUniqueId(&id) != ncclSuccess)
        return 2;
    char hex[2 * NCCL_UNIQUE_ID_BYTES + 1], num[16];
    for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; i++)
        sprintf(hex + 2 * i, "%02x", (unsigned char)id.internal[i]);
    setenv("NCCL_PROBE_ID", hex, 1);
    snprintf(num, sizeof(num), "%d", n);
    setenv("NCCL_PROBE_NRANKS", num, 1);
    for (int r = 0; r < n; r++) {
        pid_t p = fork();
        if (p == 0) {
            snprintf(num, sizeof(num), "%d", r);
            setenv("NCCL_PROBE_RANK", num, 1);
            execv("/proc/self/exe", argv);
            _exit(127);
        }
    }
    int bad = 0, st;
    for (int r = 0; r < n; r++)
        if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            bad++;
    printf("ranks %d failed %d\n", n, bad);
    return bad ? 1 : 0;
}
