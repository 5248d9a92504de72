/* clock.h — the time of every record, CLOCK_MONOTONIC nanoseconds (clock.c).
 * Where the TSC is invariant, a reading is the TSC mapped onto CLOCK_MONOTONIC by the line
 * below (within ~1 us of clock_gettime; a thread's readings never go backwards); else a
 * clock_gettime call. Any thread, any time, hot path: no lock, no write, no libm. */
#ifndef ANA_CLOCK_H
#define ANA_CLOCK_H

#include <stdatomic.h>
#include <stdint.h>
#include "defs.h"

#define ANA_CLOCK_SHIFT 32
typedef struct ana_clock_line {
    _Atomic uint32_t seq;      /* seqlock: odd while the line is being redrawn */
    _Atomic uint64_t base_tsc, base_ns, mult;
    _Atomic uint64_t limit;    /* ticks past base_tsc the line is drawn for; 0 = no line */
} ana_clock_line;
extern ana_clock_line ana_clk ANA_HIDDEN;
/* Every reading the line cannot give (none yet, expired, no TSC). */
uint64_t ana_clock_slow(void);
/* Redraws the line when half its interval has gone (the collector, at each pass), so that
 * the hooks rarely find it expired; on the first call, sees whether the TSC can be used. */
void ana_clock_refresh(void);
/* 1 when readings come from the TSC (0 before the first millisecond of calibration). */
int ana_clock_uses_tsc(void);
/* Tests: readings come from clock_gettime from now on. */
void ana_clock_force_syscall(void);
void ana_clock_atfork_child(void);
/* Tests only: called by the thread redrawing the line, between reading its pair and
 * publishing (a refresher preempted there). NULL in the preload. */
extern void (*ana_clock_redraw_hook)(void);

static inline uint64_t ana_now_ns(void)
{
#if defined(__x86_64__)
    uint32_t s = atomic_load_explicit(&ana_clk.seq, memory_order_acquire);
    uint64_t d = __builtin_ia32_rdtsc() - atomic_load_explicit(&ana_clk.base_tsc, memory_order_relaxed);
    uint64_t ns = atomic_load_explicit(&ana_clk.base_ns, memory_order_relaxed) +
                  (uint64_t)(((unsigned __int128)d * atomic_load_explicit(&ana_clk.mult, memory_order_relaxed)) >>
                             ANA_CLOCK_SHIFT);
    uint64_t limit = atomic_load_explicit(&ana_clk.limit, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (ANA_LIKELY(d < limit && atomic_load_explicit(&ana_clk.seq, memory_order_relaxed) == s && !(s & 1)))
        return ns;
#endif
    return ana_clock_slow();
}

#endif
