/* stack_probe — cudaMalloc through distinct call chains that reach the allocation at the
 * same stack position, so that a stack cache keyed by position sees the same key for
 * different stacks (test_stack_cache.py).
 *
 * Four chains (chain_red, chain_green, chain_blue with an alloca'd frame, chain_rec by
 * recursion) end in mid() (alloca'd) -> do_alloc() -> cudaMalloc. Before allocating, each
 * thread measures where do_alloc's frame lands for each chain (a dry run) and pads the
 * entry with alloca so that all four land at the same address: the capture's stack
 * pointer and first return addresses then agree while the deeper frames differ, in both
 * content and position (the frames above have different sizes). Every allocation is kept
 * (a leak), its size telling its chain: 4096 * (1 + chain), + 256 when it was made in a
 * signal handler (on_signal, entered from raise on the main thread). The main thread and
 * three others run the chains round after round in changing orders.
 *
 * Prints `ledger {json}`: per chain its sizes and the allocations made, and whether the
 * chains met at one position in every thread (they must, or the test proves nothing). */
#define _GNU_SOURCE
#include <alloca.h>
#include <cuda_runtime.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NCHAINS = 4, THREADS = 3, ROUNDS = 12 };
static const char *const NAMES[NCHAINS] = { "chain_red", "chain_green", "chain_blue", "chain_rec" };

static _Atomic int made[NCHAINS][2];
static _Atomic int collided_all = 1;
static __thread uintptr_t tls_fa;
static __thread int tls_dry;

#define KEEP() __asm__ __volatile__("" ::: "memory") /* no tail call: the frame stays */

static size_t size_of(int chain, int in_signal) { return 4096u * (1u + (unsigned)chain) + (in_signal ? 256u : 0u); }

static __attribute__((noinline)) void do_alloc(int chain, int in_signal)
{
    tls_fa = (uintptr_t)__builtin_frame_address(0);
    if (tls_dry)
        return;
    void *p;
    if (cudaMalloc(&p, size_of(chain, in_signal)) != cudaSuccess) {
        fprintf(stderr, "stack_probe: cudaMalloc failed\n");
        exit(1);
    }
    atomic_fetch_add(&made[chain][in_signal], 1);
    KEEP();
}

static __attribute__((noinline)) void mid(int chain, int in_signal, size_t pad)
{
    volatile char *a = alloca(pad + 16);
    a[0] = (char)chain;
    do_alloc(chain, in_signal);
    KEEP();
}

static __attribute__((noinline)) void chain_red(int chain, int in_signal)
{
    mid(chain, in_signal, 0);
    KEEP();
}

static __attribute__((noinline)) void chain_green(int chain, int in_signal)
{
    volatile char big[200];
    big[0] = 1;
    mid(chain, in_signal, 32);
    KEEP();
    (void)big[0];
}

static __attribute__((noinline)) void chain_blue(int chain, int in_signal)
{
    volatile char *a = alloca(96 + (size_t)chain);
    a[0] = 2;
    mid(chain, in_signal, 64);
    KEEP();
}

static __attribute__((noinline)) void chain_rec(int chain, int in_signal, int n)
{
    if (n > 0)
        chain_rec(chain, in_signal, n - 1);
    else
        mid(chain, in_signal, 16);
    KEEP();
}

/* Pads by `pad` bytes, then goes down `chain`. */
static __attribute__((noinline)) void entry(int chain, int in_signal, size_t pad)
{
    volatile char *a = alloca(pad + 16);
    a[0] = 0;
    switch (chain) {
    case 0: chain_red(chain, in_signal); break;
    case 1: chain_green(chain, in_signal); break;
    case 2: chain_blue(chain, in_signal); break;
    default: chain_rec(chain, in_signal, 3); break;
    }
    KEEP();
}

/* The pads that bring every chain's do_alloc frame to one address, from dry runs. */
static void calibrate(size_t pad[NCHAINS])
{
    tls_dry = 1;
    memset(pad, 0, NCHAINS * sizeof(pad[0]));
    for (int iter = 0; iter < 8; iter++) {
        uintptr_t fa[NCHAINS], lo = UINTPTR_MAX;
        for (int c = 0; c < NCHAINS; c++) {
            entry(c, 0, pad[c]);
            fa[c] = tls_fa;
            lo = fa[c] < lo ? fa[c] : lo;
        }
        int same = 1;
        for (int c = 0; c < NCHAINS; c++) {
            same &= fa[c] == lo;
            pad[c] += fa[c] - lo;
        }
        if (same)
            break;
    }
    tls_dry = 0;
}

static void run_rounds(int signals)
{
    size_t pad[NCHAINS];
    calibrate(pad);
    /* The order of each round comes from a table, not a branch: one call site of entry, so
     * that a chain's stack is the same in every round. */
    static const int order[2][NCHAINS] = { { 3, 2, 1, 0 }, { 0, 1, 2, 3 } };
    for (int r = 0; r < ROUNDS; r++) {
        uintptr_t first = 0;
        for (int i = 0; i < NCHAINS; i++) {
            int c = (order[r & 1][i] + r) % NCHAINS;
            entry(c, 0, pad[c]);
            if (i == 0)
                first = tls_fa;
            else if (tls_fa != first)
                atomic_store(&collided_all, 0);
        }
        if (signals)
            raise(SIGUSR1);
    }
}

static _Atomic int sig_next;

static void on_signal(int sig)
{
    (void)sig;
    int c = atomic_fetch_add(&sig_next, 1) % NCHAINS;
    entry(c, 1, 0);
    KEEP();
}

static void *worker(void *arg)
{
    (void)arg;
    run_rounds(0);
    return NULL;
}

int main(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGUSR1, &sa, NULL);
    void *warm;
    cudaMalloc(&warm, 64); /* the session starts; not one of the chains' */
    cudaFree(warm);
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, worker, NULL);
    run_rounds(1);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    printf("ledger {\"collided\": %s, \"chains\": {", atomic_load(&collided_all) ? "true" : "false");
    for (int c = 0; c < NCHAINS; c++)
        printf("%s\"%s\": {\"size\": %zu, \"signal_size\": %zu, \"made\": %d, \"in_signal\": %d}",
               c ? ", " : "", NAMES[c], size_of(c, 0), size_of(c, 1), atomic_load(&made[c][0]),
               atomic_load(&made[c][1]));
    printf("}}\n");
    return 0;
}
