// ddp_allreduce — data-parallel gradient averaging across N processes with NCCL; a
// profiling target for collectives, one trace per rank.
//
// Usage: ddp_allreduce [--ranks N] [--steps S] [--elems E] [--check]
//                      [--slow-rank R --slow-us U]
//
// Without RANK in the environment the program is the launcher: it makes an NCCL unique
// id, starts N fresh copies of itself (posix_spawn of /proc/self/exe: CUDA does not
// survive fork) with RANK, WORLD_SIZE, LOCAL_RANK and the id hex-encoded in
// NCCL_UNIQUE_ID_HEX, waits for them, and prints one summary line `launcher {...}` with
// each rank's exit status. If a rank fails, those still running 10 s later are killed (a
// rank waiting in a collective for a dead peer would wait forever). It exits 0 only if
// every rank did.
//
// With RANK set the program is that rank: cudaSetDevice(LOCAL_RANK % device count),
// ncclCommInitRank, ncclBroadcast of a small parameter buffer from rank 0, then per step:
// gradient values written from the host (cudaMemcpyAsync), one small compute kernel,
// ncclAllReduce (sum, in place) of E floats, ncclAllGather, ncclReduceScatter, and a ring
// exchange (ncclSend to rank+1, ncclRecv from rank-1 inside ncclGroupStart/End), all on
// one created stream; after cudaStreamSynchronize every result is copied back and
// compared with what the host computes (values are small integers, so sums are exact in
// any order). A mismatch prints the first bad index and exits 1. At the end one
// ncclCommSplit (color = rank % 2) with an allreduce on the sub-communicator. Each rank
// prints its ledger: the collectives it issued (op, communicator, count, datatype, bytes
// = count x datatype size, root or peer, calls), groups, copies and launches.
//
// --slow-rank R --slow-us U makes rank R a straggler on purpose: every step it spins on
// the host for U microseconds (busy work, as a slow data loader or a slower CPU would)
// just before its all-reduce, so the other ranks wait for it inside their collectives.
// The ledger says which rank was slow and by how much ("slow_rank", "slow_us": -1 and 0
// when none was asked for, "extra_us": what this rank spun per step).
//
// --check also verifies the compute kernel's output; on the simulated device, which does
// not run kernels, it fails by design. NCCL refuses two ranks of one communicator on the
// same GPU, so on real hardware --ranks must not exceed the number of GPUs.
#include <cuda_runtime.h>
#include <errno.h>
#include <nccl.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sample_common.h"

extern char **environ;

#define NCCL_CHECK(call)                                                             \
    do {                                                                             \
        ncclResult_t r_ = (call);                                                    \
        if (r_ != ncclSuccess)                                                       \
            fatal("%s:%d: %s failed: %s", __FILE__, __LINE__, #call,                 \
                  ncclGetErrorString(r_));                                           \
    } while (0)

#define MAX_RANKS 64
#define GRACE_S 10  // seconds the launcher waits for the other ranks after one fails
#define THREADS 256
#define NPARAMS 1024  // broadcast buffer
#define NGATHER 256   // all-gather: floats per rank
#define NSCATTER 256  // reduce-scatter: floats each rank receives
#define NRING 512     // send/recv
#define NSPLIT 1024   // allreduce on the split communicator

static int RANKS = 2, STEPS = 3, CHECK = 0, SLOW_RANK = -1;
static long SLOW_US = 0;
static size_t ELEMS = (size_t)1 << 20;
static int rank_, world, local_rank;

// ---------------------------------------------------------------- values (all exact in float)

static float grad_value(int r, int s, size_t i)
{
    return (float)((int)((i * 7 + r * 13 + s * 31) % 64) - 32);
}
static float param_value(size_t i) { return (float)(i % 97) * 0.5f; }
static float gather_value(int r, int s, size_t i) { return (float)(r * 4096 + s * 256 + (int)i); }
static float scatter_value(int r, int s, size_t j) { return (float)((j * 3 + r * 5 + s) % 32); }
static float ring_value(int r, int s, size_t i)
{
    return (float)(r * 1024 + (int)((i + s) % 1024));
}
static float split_value(int r, size_t i) { return (float)((r + 1) * (int)(i % 7)); }

// ---------------------------------------------------------------- the ledger

#define MAX_OPS 16
static struct {
    struct { char json[256]; long calls; } ops[MAX_OPS];  // first-seen order
    int nops;
    long calls, groups, launches, h2d_calls, d2h_calls, verified;
    size_t bytes, h2d_bytes, d2h_bytes;
    int split_color, split_size;
} ledger;

// One collective or point-to-point call on communicator `comm` ("world" or "split");
// root/peer -1 where the call has none.
static void count_op(const char *op, const char *comm, size_t count, const char *redop, int root,
                     int peer)
{
    char key[256];
    int n = snprintf(key, sizeof key,
                     "\"op\":\"%s\",\"comm\":\"%s\",\"count\":%zu,\"datatype\":\"ncclFloat\","
                     "\"datatype_id\":%d,\"bytes\":%zu",
                     op, comm, count, (int)ncclFloat, count * sizeof(float));
    if (redop)
        n += snprintf(key + n, sizeof key - n, ",\"redop\":\"%s\"", redop);
    if (root >= 0)
        n += snprintf(key + n, sizeof key - n, ",\"root\":%d", root);
    if (peer >= 0)
        snprintf(key + n, sizeof key - n, ",\"peer\":%d", peer);
    ledger.calls++;
    ledger.bytes += count * sizeof(float);
    for (int i = 0; i < ledger.nops; i++)
        if (strcmp(ledger.ops[i].json, key) == 0) {
            ledger.ops[i].calls++;
            return;
        }
    if (ledger.nops == MAX_OPS)
        fatal("ddp_allreduce: too many distinct collectives");
    memcpy(ledger.ops[ledger.nops].json, key, sizeof key);
    ledger.ops[ledger.nops++].calls = 1;
}

// Microseconds of extra host work this rank does per step (--slow-rank, --slow-us).
static long extra_us(void) { return rank_ == SLOW_RANK ? SLOW_US : 0; }

// Busy host work for us microseconds: a rank that computes longer, not one that sleeps.
static void spin_us(long us)
{
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do
        clock_gettime(CLOCK_MONOTONIC, &now);
    while ((now.tv_sec - t0.tv_sec) * 1000000L + (now.tv_nsec - t0.tv_nsec) / 1000 < us);
}

static char out[8192];
static size_t outlen;
static void put(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void put(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out + outlen, sizeof out - outlen, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof out - outlen)
        fatal("ddp_allreduce: ledger line too long");
    outlen += (size_t)n;
}

// One write(2), so that the ranks' ledger lines never interleave on a shared pipe.
static void print_ledger(void)
{
    outlen = 0;
    put("ledger {\"rank\":%d,\"world_size\":%d,\"local_rank\":%d,\"steps\":%d,\"elems\":%zu,"
        "\"slow_rank\":%d,\"slow_us\":%ld,\"extra_us\":%ld,\"collectives\":[",
        rank_, world, local_rank, STEPS, ELEMS, SLOW_RANK, SLOW_US, extra_us());
    for (int i = 0; i < ledger.nops; i++)
        put("%s{%s,\"calls\":%ld}", i ? "," : "", ledger.ops[i].json, ledger.ops[i].calls);
    put("],\"calls\":%ld,\"bytes\":%zu,\"groups\":%ld,\"split\":{\"color\":%d,\"size\":%d},"
        "\"launches\":%ld,\"copies\":{\"h2d_calls\":%ld,\"h2d_bytes\":%zu,\"d2h_calls\":%ld,"
        "\"d2h_bytes\":%zu},\"verified\":%ld}\n",
        ledger.calls, ledger.bytes, ledger.groups, ledger.split_color, ledger.split_size,
        ledger.launches, ledger.h2d_calls, ledger.h2d_bytes, ledger.d2h_calls, ledger.d2h_bytes,
        ledger.verified);
    fflush(stdout);
    if (write(1, out, outlen) != (ssize_t)outlen)
        fatal("ddp_allreduce: writing the ledger failed");
}

// ---------------------------------------------------------------- the rank

static cudaStream_t stream;

// out[i] = 2 params[i] + rank: the "backward" that produces nothing the collectives use
extern "C" __global__ void fake_backward(float *out, const float *params, int n, int rank)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = 2.0f * params[i] + (float)rank;
}

static void h2d(void *dst, const void *src, size_t bytes)
{
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream));
    ledger.h2d_calls++, ledger.h2d_bytes += bytes;
}

static void d2h(void *dst, const void *src, size_t bytes)
{
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream));
    ledger.d2h_calls++, ledger.d2h_bytes += bytes;
}

// got == want exactly, or print the first bad index, the ledger, and exit 1
static void verify(const char *what, int step, const float *got, const float *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i]) {
            fprintf(stderr, "rank %d step %d: %s mismatch at index %zu: got %g, want %g\n", rank_,
                    step, what, i, got[i], want[i]);
            print_ledger();
            exit(1);
        }
    ledger.verified++;
}

static float *dev_floats(size_t n)
{
    float *p = NULL;
    CUDA_CHECK(cudaMalloc(&p, n * sizeof(float)));
    return p;
}

static float *host_floats(size_t n)
{
    float *p = NULL;
    CUDA_CHECK(cudaMallocHost(&p, n * sizeof(float)));
    return p;
}

static void decode_id(const char *hex, ncclUniqueId *id)
{
    if (!hex || strlen(hex) != 2 * NCCL_UNIQUE_ID_BYTES)
        fatal("ddp_allreduce: NCCL_UNIQUE_ID_HEX must hold %d hex digits",
              2 * NCCL_UNIQUE_ID_BYTES);
    for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; i++) {
        unsigned v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1)
            fatal("ddp_allreduce: NCCL_UNIQUE_ID_HEX is not hex");
        id->internal[i] = (char)v;
    }
}

// The sub-communicator of the ranks of one parity, with one allreduce on it.
static void split_allreduce(ncclComm_t comm)
{
    ncclComm_t sub;
    int color = rank_ % 2, size = 0;
    for (int r = 0; r < world; r++) size += r % 2 == color;
    ledger.split_color = color, ledger.split_size = size;
    NCCL_CHECK(ncclCommSplit(comm, color, rank_, &sub, NULL));
    float *d = dev_floats(NSPLIT), *h = host_floats(NSPLIT), *want = host_floats(NSPLIT);
    for (size_t i = 0; i < NSPLIT; i++) {
        h[i] = split_value(rank_, i);
        want[i] = 0.0f;
        for (int r = color; r < world; r += 2) want[i] += split_value(r, i);
    }
    h2d(d, h, NSPLIT * sizeof(float));
    NCCL_CHECK(ncclAllReduce(d, d, NSPLIT, ncclFloat, ncclSum, sub, stream));
    count_op("ncclAllReduce", "split", NSPLIT, "ncclSum", -1, -1);
    d2h(h, d, NSPLIT * sizeof(float));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    verify("split allreduce", STEPS, h, want, NSPLIT);
    NCCL_CHECK(ncclCommDestroy(sub));
    CUDA_CHECK(cudaFree(d));
    CUDA_CHECK(cudaFreeHost(h));
    CUDA_CHECK(cudaFreeHost(want));
}

static int run_rank(void)
{
    ncclUniqueId id;
    ncclComm_t comm;
    int ndev = 0, failed = 0, next = (rank_ + 1) % world, prev = (rank_ - 1 + world) % world;
    decode_id(getenv("NCCL_UNIQUE_ID_HEX"), &id);
    CUDA_CHECK(cudaGetDeviceCount(&ndev));
    CUDA_CHECK(cudaSetDevice(local_rank % ndev));
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    NCCL_CHECK(ncclCommInitRank(&comm, world, id, rank_));

    size_t E = ELEMS, NG = (size_t)world * NGATHER, NS = (size_t)world * NSCATTER;
    float *d_grad = dev_floats(E), *d_params = dev_floats(NPARAMS), *d_act = dev_floats(NPARAMS);
    float *d_ag_send = dev_floats(NGATHER), *d_ag_recv = dev_floats(NG);
    float *d_rs_send = dev_floats(NS), *d_rs_recv = dev_floats(NSCATTER);
    float *d_ring_send = dev_floats(NRING), *d_ring_recv = dev_floats(NRING);
    size_t nsmall = NPARAMS + NG + NS + NRING;  // staging for every small buffer
    float *grad = host_floats(E), *want = host_floats(E), *small = host_floats(nsmall);
    float *expect = host_floats(nsmall);

    // parameters: rank 0's values everywhere after the broadcast (others start at -1)
    for (size_t i = 0; i < NPARAMS; i++) small[i] = rank_ == 0 ? param_value(i) : -1.0f;
    h2d(d_params, small, NPARAMS * sizeof(float));
    NCCL_CHECK(ncclBroadcast(d_params, d_params, NPARAMS, ncclFloat, 0, comm, stream));
    count_op("ncclBroadcast", "world", NPARAMS, NULL, 0, -1);
    d2h(small, d_params, NPARAMS * sizeof(float));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    for (size_t i = 0; i < NPARAMS; i++) expect[i] = param_value(i);
    verify("broadcast", 0, small, expect, NPARAMS);

    for (int s = 0; s < STEPS; s++) {
        for (size_t i = 0; i < E; i++) grad[i] = grad_value(rank_, s, i);
        h2d(d_grad, grad, E * sizeof(float));
        for (size_t i = 0; i < NGATHER; i++) small[i] = gather_value(rank_, s, i);
        h2d(d_ag_send, small, NGATHER * sizeof(float));
        for (size_t j = 0; j < NS; j++) small[NGATHER + j] = scatter_value(rank_, s, j);
        h2d(d_rs_send, small + NGATHER, NS * sizeof(float));
        for (size_t i = 0; i < NRING; i++) small[NGATHER + NS + i] = ring_value(rank_, s, i);
        h2d(d_ring_send, small + NGATHER + NS, NRING * sizeof(float));
        CUDA_CHECK(cudaStreamSynchronize(stream));  // `small` is reused below

        fake_backward<<<(NPARAMS + THREADS - 1) / THREADS, THREADS, 0, stream>>>(d_act, d_params,
                                                                                NPARAMS, rank_);
        CUDA_CHECK(cudaGetLastError());
        ledger.launches++;
        if (extra_us() > 0) spin_us(extra_us());
        NCCL_CHECK(ncclAllReduce(d_grad, d_grad, E, ncclFloat, ncclSum, comm, stream));
        count_op("ncclAllReduce", "world", E, "ncclSum", -1, -1);
        NCCL_CHECK(ncclAllGather(d_ag_send, d_ag_recv, NGATHER, ncclFloat, comm, stream));
        count_op("ncclAllGather", "world", NGATHER, NULL, -1, -1);
        NCCL_CHECK(ncclReduceScatter(d_rs_send, d_rs_recv, NSCATTER, ncclFloat, ncclSum, comm,
                                     stream));
        count_op("ncclReduceScatter", "world", NSCATTER, "ncclSum", -1, -1);
        NCCL_CHECK(ncclGroupStart());
        NCCL_CHECK(ncclSend(d_ring_send, NRING, ncclFloat, next, comm, stream));
        count_op("ncclSend", "world", NRING, NULL, -1, next);
        NCCL_CHECK(ncclRecv(d_ring_recv, NRING, ncclFloat, prev, comm, stream));
        count_op("ncclRecv", "world", NRING, NULL, -1, prev);
        NCCL_CHECK(ncclGroupEnd());
        ledger.groups++;

        d2h(grad, d_grad, E * sizeof(float));
        d2h(small, d_ag_recv, NG * sizeof(float));
        d2h(small + NG, d_rs_recv, NSCATTER * sizeof(float));
        CUDA_CHECK(cudaStreamSynchronize(stream));
        for (size_t i = 0; i < E; i++) {
            want[i] = 0.0f;
            for (int r = 0; r < world; r++) want[i] += grad_value(r, s, i);
        }
        verify("allreduce", s, grad, want, E);
        for (int r = 0; r < world; r++)
            for (size_t i = 0; i < NGATHER; i++) expect[r * NGATHER + i] = gather_value(r, s, i);
        verify("allgather", s, small, expect, NG);
        for (size_t i = 0; i < NSCATTER; i++) {
            expect[i] = 0.0f;
            for (int r = 0; r < world; r++) expect[i] += scatter_value(r, s, rank_ * NSCATTER + i);
        }
        verify("reducescatter", s, small + NG, expect, NSCATTER);
        d2h(small, d_ring_recv, NRING * sizeof(float));
        CUDA_CHECK(cudaStreamSynchronize(stream));
        for (size_t i = 0; i < NRING; i++) expect[i] = ring_value(prev, s, i);
        verify("send/recv", s, small, expect, NRING);
        printf("rank %d step %d verified\n", rank_, s);
        fflush(stdout);
    }

    if (CHECK) {  // the kernel's output (needs a device that runs kernels)
        d2h(small, d_act, NPARAMS * sizeof(float));
        CUDA_CHECK(cudaStreamSynchronize(stream));
        for (size_t i = 0; i < NPARAMS && !failed; i++)
            if (small[i] != 2.0f * param_value(i) + (float)rank_) {
                fprintf(stderr, "rank %d: check: fake_backward output differs at index %zu\n",
                        rank_, i);
                failed = 1;
            }
        printf("rank %d check %s\n", rank_, failed ? "FAILED" : "passed");
    }
    split_allreduce(comm);
    NCCL_CHECK(ncclCommDestroy(comm));
    float *dev[] = {d_grad, d_params, d_act, d_ag_send, d_ag_recv, d_rs_send, d_rs_recv,
                    d_ring_send, d_ring_recv};
    for (size_t i = 0; i < sizeof dev / sizeof *dev; i++) CUDA_CHECK(cudaFree(dev[i]));
    float *host[] = {grad, want, small, expect};
    for (size_t i = 0; i < sizeof host / sizeof *host; i++) CUDA_CHECK(cudaFreeHost(host[i]));
    CUDA_CHECK(cudaStreamDestroy(stream));
    print_ledger();
    return failed;
}

// ---------------------------------------------------------------- the launcher

static char *env_entry(const char *name, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static char *env_entry(const char *name, const char *fmt, ...)
{
    char value[512], *e;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(value, sizeof value, fmt, ap);
    va_end(ap);
    if (asprintf(&e, "%s=%s", name, value) < 0)
        fatal("ddp_allreduce: out of memory");
    return e;
}

static int is_rank_var(const char *e)
{
    static const char *names[] = {"RANK=", "WORLD_SIZE=", "LOCAL_RANK=", "NCCL_UNIQUE_ID_HEX="};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strncmp(e, names[i], strlen(names[i])) == 0) return 1;
    return 0;
}

// Waits for every rank. After the first failure the others get GRACE_S seconds to end
// on their own (they may be failing cleanly too); those still running are then killed,
// since a rank waiting in a collective for a dead peer would wait forever.
static int wait_ranks(const pid_t *pids, int *status, int *killed)
{
    int done[MAX_RANKS] = {0}, left = RANKS, ok = 1;
    struct timespec failed_at = {0, 0}, now;
    while (left > 0) {
        int st, r;
        pid_t pid = waitpid(-1, &st, ok ? 0 : WNOHANG);
        if (pid < 0)
            fatal("ddp_allreduce: waitpid: %s", strerror(errno));
        if (pid == 0) {  // after a failure, ranks still running
            clock_gettime(CLOCK_MONOTONIC, &now);
            if (now.tv_sec - failed_at.tv_sec >= GRACE_S)
                for (int q = 0; q < RANKS; q++)
                    if (!done[q] && !killed[q]) kill(pids[q], SIGKILL), killed[q] = 1;
            usleep(10000);
            continue;
        }
        for (r = 0; r < RANKS && pids[r] != pid; r++) {}
        if (r == RANKS)
            continue;  // not one of ours
        done[r] = 1, status[r] = st, left--;
        if (ok && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
            ok = 0;
            clock_gettime(CLOCK_MONOTONIC, &failed_at);
        }
    }
    return ok;
}

static int launch(char **argv)
{
    ncclUniqueId id;
    char hex[2 * NCCL_UNIQUE_ID_BYTES + 1];
    pid_t pids[MAX_RANKS];
    int status[MAX_RANKS], killed[MAX_RANKS] = {0}, nenv = 0;
    NCCL_CHECK(ncclGetUniqueId(&id));
    for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; i++)
        snprintf(hex + 2 * i, 3, "%02x", (unsigned char)id.internal[i]);
    while (environ[nenv]) nenv++;
    char **env = (char **)calloc(nenv + 5, sizeof(char *));
    fflush(stdout);
    for (int r = 0; r < RANKS; r++) {
        int n = 0;
        for (int i = 0; i < nenv; i++)
            if (!is_rank_var(environ[i])) env[n++] = environ[i];
        env[n++] = env_entry("RANK", "%d", r);
        env[n++] = env_entry("WORLD_SIZE", "%d", RANKS);
        env[n++] = env_entry("LOCAL_RANK", "%d", r);
        env[n++] = env_entry("NCCL_UNIQUE_ID_HEX", "%s", hex);
        env[n] = NULL;
        int err = posix_spawn(&pids[r], "/proc/self/exe", NULL, NULL, argv, env);
        for (int i = n - 4; i < n; i++) free(env[i]);
        if (err) {  // stop the ranks already started: they would wait for this one
            fprintf(stderr, "ddp_allreduce: starting rank %d failed: %s\n", r, strerror(err));
            for (int q = 0; q < r; q++) kill(pids[q], SIGKILL), waitpid(pids[q], NULL, 0);
            exit(1);
        }
    }
    free(env);
    int ok = wait_ranks(pids, status, killed);
    printf("launcher {\"world_size\":%d,\"ranks\":[", RANKS);
    for (int r = 0; r < RANKS; r++) {
        printf("%s{\"rank\":%d,\"pid\":%d,", r ? "," : "", r, (int)pids[r]);
        if (WIFEXITED(status[r]))
            printf("\"exit\":%d}", WEXITSTATUS(status[r]));
        else
            printf("\"signal\":%d,\"killed_by_launcher\":%s}", WTERMSIG(status[r]),
                   killed[r] ? "true" : "false");
    }
    printf("],\"ok\":%s}\n", ok ? "true" : "false");
    return ok ? 0 : 1;
}

// ---------------------------------------------------------------- main

static long parse_num(const char *flag, const char *s, long max, long min = 1)
{
    char *end;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || *end || v < min || v > max)
        fatal("ddp_allreduce: %s needs an integer in [%ld, %ld]", flag, min, max);
    return v;
}

static int env_int(const char *name)
{
    const char *s = getenv(name);
    if (!s)
        fatal("ddp_allreduce: RANK is set but %s is not", name);
    return atoi(s);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--check")) CHECK = 1;
        else if (!strcmp(a, "--ranks")) RANKS = (int)parse_num(a, v, MAX_RANKS), i++;
        else if (!strcmp(a, "--steps")) STEPS = (int)parse_num(a, v, 1 << 20), i++;
        else if (!strcmp(a, "--elems")) ELEMS = (size_t)parse_num(a, v, 1L << 30), i++;
        else if (!strcmp(a, "--slow-rank")) SLOW_RANK = (int)parse_num(a, v, MAX_RANKS, 0), i++;
        else if (!strcmp(a, "--slow-us")) SLOW_US = parse_num(a, v, 60L * 1000000), i++;
        else fatal("usage: ddp_allreduce [--ranks N] [--steps S] [--elems E] [--check] "
                   "[--slow-rank R --slow-us U]");
    }
    if ((SLOW_RANK >= 0) != (SLOW_US > 0) || SLOW_RANK >= RANKS)
        fatal("ddp_allreduce: --slow-rank R (a rank below --ranks) and --slow-us U go together");
    if (!getenv("RANK"))
        return launch(argv);
    rank_ = env_int("RANK");
    world = env_int("WORLD_SIZE");
    local_rank = env_int("LOCAL_RANK");
    if (world < 1 || world > MAX_RANKS || rank_ < 0 || rank_ >= world || local_rank < 0)
        fatal("ddp_allreduce: bad RANK %d / WORLD_SIZE %d / LOCAL_RANK %d", rank_, world,
              local_rank);
    return run_rank();
}
