/* wake.h — the writer's wake-up (wake.c).
 * A semaphore the writer thread sleeps on between passes. Any thread; not a hot path (a
 * ring half full, a full CUPTI buffer, a forced flush). */
#ifndef ANA_WAKE_H
#define ANA_WAKE_H

#include <time.h>
#include "defs.h"

/* Wakes the writer without waiting, when it runs (a ring is filling up). */
void ana_wake_kick(void);
/* Writer side: armed at its start (kicks then post), disarmed when it ends or after fork. */
void ana_wake_start(void);
void ana_wake_stop(void);
/* Wakes the writer unconditionally (a flush, a stop). */
void ana_wake_post(void);
/* Writer: sleeps until woken or until the CLOCK_MONOTONIC time at; -1 on timeout or EINTR. */
int ana_wake_wait(const struct timespec *at);

#endif
