/* wake.c — the writer's wake-up (wake.h): a semaphore the writer thread
 * (collector.c) sleeps on between passes. Posted by tbuf.c when a ring is half full, by
 * cupti/ when a CUPTI buffer completes, and by the writer's own flush and stop; kept apart
 * from the writer so that the rings, below it, can wake it without calling it. Any thread;
 * never on the per-call path. */
#define _GNU_SOURCE
#include "preload.h"

#include <errno.h>
#include <semaphore.h>

static sem_t wake;
static _Atomic int armed; /* the writer runs: a kick is worth a post */

void ana_wake_start(void)
{
    sem_init(&wake, 0, 0);
    atomic_store(&armed, 1);
}

void ana_wake_stop(void) { atomic_store(&armed, 0); }

void ana_wake_kick(void)
{
    if (atomic_load_explicit(&armed, memory_order_relaxed))
        sem_post(&wake);
}

void ana_wake_post(void) { sem_post(&wake); }

int ana_wake_wait(const struct timespec *at) { return sem_clockwait(&wake, CLOCK_MONOTONIC, at); }
