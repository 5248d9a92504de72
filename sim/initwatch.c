/*
 * initwatch.c — which call first initialised CUDA in this process, and what a fork after
 * it does (anasim.h, anasim_note_init; docs/sim.md "Fork after initialisation").
 *
 * On a GPU, a process that initialised the driver and then forks leaves a child whose CUDA
 * calls fail (cudaErrorInitializationError, CUDA_ERROR_NOT_INITIALIZED: both 3). The sim
 * notes the first call that would have initialised the driver (every traced runtime or
 * driver call but those that need no driver, and CUPTI's subscribe and activity enable);
 * with ANATOMIST_SIM_FORK_STRICT=1 a child forked after it refuses its CUDA calls the same
 * way, saying once on stderr which call in which process initialised CUDA. Without it the
 * child runs on (the sim has no driver state to lose), as every other test expects.
 */
#include "sim.h"
#include "anasim.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static _Atomic(const char *) first;   /* the first initialising call's name, NULL before */
static _Atomic int first_pid;
static char inherited[96];            /* in a child forked after it: what the parent did */
static int inherited_pid;
static _Atomic int refused_said;

/* Calls a real driver answers without being initialised (NVIDIA documents cuInit,
 * cuDriverGetVersion, cuGetErrorName/String and cuGetProcAddress; the runtime's version
 * and last-error calls do not initialise it either). */
static int needs_no_driver(const char *name)
{
    static const char *const free_calls[] = {
        "cuDriverGetVersion", "cuGetErrorName", "cuGetErrorString", "cuGetProcAddress",
        "cuGetProcAddress_v2", "cudaRuntimeGetVersion", "cudaDriverGetVersion",
        "cudaGetLastError", "cudaPeekAtLastError", "cudaGetErrorName", "cudaGetErrorString",
    };
    for (size_t i = 0; i < sizeof(free_calls) / sizeof(free_calls[0]); i++)
        if (!strcmp(name, free_calls[i]))
            return 1;
    return 0;
}

static void after_fork_child(void)
{
    const char *f = atomic_load(&first);
    if (f) {
        snprintf(inherited, sizeof(inherited), "%s", f);
        inherited_pid = atomic_load(&first_pid);
    }
    atomic_store(&first, NULL);
    atomic_store(&refused_said, 0);
}

__attribute__((constructor)) static void initwatch_init(void)
{
    pthread_atfork(NULL, NULL, after_fork_child);
}

ANASIM_PRIVATE_API void anasim_note_init(const char *name)
{
    if (atomic_load_explicit(&first, memory_order_relaxed) || !name || needs_no_driver(name))
        return;
    const char *expect = NULL;
    if (atomic_compare_exchange_strong(&first, &expect, name))
        atomic_store(&first_pid, (int)getpid());
}

ANASIM_PRIVATE_API const char *anasim_first_init(void) { return atomic_load(&first); }

ANASIM_PRIVATE_API int anasim_fork_refuses(const char *name)
{
    if (!inherited[0] || (name && needs_no_driver(name)))
        return 0;
    const char *s = getenv("ANATOMIST_SIM_FORK_STRICT");
    if (!s || strcmp(s, "1") != 0)
        return 0;
    if (!atomic_exchange(&refused_said, 1))
        fprintf(stderr, "anatomist-sim: process %d was forked after CUDA was initialised (by %s "
                        "in process %d); as on a GPU, its CUDA calls fail with error 3 "
                        "(ANATOMIST_SIM_FORK_STRICT=1)\n", (int)getpid(), inherited, inherited_pid);
    return 1;
}
