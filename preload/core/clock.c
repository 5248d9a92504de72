/* clock.c — the preload's time source (clock.h, ana_now_ns).
 *
 * Records carry CLOCK_MONOTONIC nanoseconds. On x86-64 with an invariant TSC (constant_tsc
 * and nonstop_tsc in /proc/cpuinfo) the hot path reads the TSC instead of calling
 * clock_gettime, and maps it onto CLOCK_MONOTONIC with a line
 *
 *     ns = base_ns + ((tsc - base_tsc) * mult) >> ANA_CLOCK_SHIFT
 *
 * valid while tsc - base_tsc < limit. No start-up sleep: the first millisecond after the
 * first read uses clock_gettime while the TSC's rate is measured against it; from then on
 * the line is redrawn at every refresh (when it expires, or when the collector calls
 * ana_clock_refresh): the rate is measured from a (TSC, CLOCK_MONOTONIC) pair 2 to 4 s old
 * (the first pair early on), and the line's offset is corrected: a line behind the clock steps forward to it, a line ahead
 * of it slows down to meet it at the end of the next interval. Readings never go past a
 * line's end and each new line starts at or above where the old one stopped, so a thread's
 * successive readings never go backwards. Intervals double from 1 ms to ~268 ms as the
 * rate gets known over longer spans.
 *
 * Readers take a seqlock snapshot (no lock, no write); one refresher at a time (try-lock).
 * A thread that finds the line expired and a refresh under way (whose thread may be
 * preempted for milliseconds) reads the clock itself, never below the old line's end, and
 * raises a shared maximum that the new line is made to start above. Elsewhere, or
 * without an invariant TSC, every reading is a clock_gettime call.
 *
 * Called by every part of the preload (ana_now_ns inline; the writer refreshes,
 * lifecycle.c starts and forks); calls only the configuration. */
#define _GNU_SOURCE
#include "preload.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#define FIRST_NS 1000000ull        /* the first interval: 1 ms */
#define MAX_INTERVAL_NS (1ull << 28) /* ~268 ms */
#define MAX_WIDTH_NS 1000.0        /* a pair read over a longer span was preempted */
#define RATE_SPAN 2000000000ull    /* the rate is measured over 2..4 s once the run is that old */

ana_clock_line ana_clk; /* limit 0: every reading takes the slow path until calibrated */

enum { C_UNKNOWN, C_CALIBRATING, C_TSC, C_SYSCALL };
static _Atomic int state = C_UNKNOWN;
static _Atomic int refreshing;
/* Refresher-owned (under `refreshing`): the pair the TSC's rate is measured from (a), the
 * pair that replaces it once it is RATE_SPAN old (b), the rate, the interval. Pairs are
 * mid-bracket: (the TSC half way through the bracket, the clock's reading). */
static uint64_t a_tsc, a_ns, b_tsc, b_ns, interval_ns;
static double ns_per_tick;

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__)
static uint64_t read_tsc(void) { return __rdtsc(); }
#else
static uint64_t read_tsc(void) { return 0; }
#endif

/* 1 when /proc/cpuinfo's first flags line has both invariant-TSC flags. Reads with
 * open/read (no stdio, no malloc: it may run inside a hook). */
static int tsc_invariant(void)
{
#if defined(__x86_64__)
    int fd = open("/proc/cpuinfo", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    static char buf[16384];
    size_t n = 0;
    ssize_t r;
    while (n < sizeof(buf) - 1 && (r = read(fd, buf + n, sizeof(buf) - 1 - n)) > 0)
        n += (size_t)r;
    close(fd);
    buf[n] = 0;
    char *flags = strstr(buf, "\nflags");
    if (!flags)
        return 0;
    char *eol = strchr(flags + 1, '\n');
    if (eol)
        *eol = 0;
    return strstr(flags, " constant_tsc") && strstr(flags, " nonstop_tsc");
#else
    return 0;
#endif
}

/* A (tsc, ns) pair: clock_gettime bracketed by two TSC reads, the tightest of three; tsc
 * is the bracket's middle, `width` its length in ticks. */
static void read_pair(uint64_t *tsc, uint64_t *ns, uint64_t *width)
{
    *width = UINT64_MAX;
    *tsc = *ns = 0;
    for (int i = 0; i < 3; i++) {
        uint64_t a = read_tsc(), m = mono_ns(), b = read_tsc();
        if (b >= a && b - a < *width) {
            *width = b - a;
            *tsc = a + (b - a) / 2;
            *ns = m;
        }
    }
}

static uint64_t line_at(uint64_t base_tsc, uint64_t base_ns, uint64_t mult, uint64_t tsc)
{
    if (tsc < base_tsc)
        return base_ns;
    return base_ns + (uint64_t)(((unsigned __int128)(tsc - base_tsc) * mult) >> ANA_CLOCK_SHIFT);
}

/* The largest reading given while a line had expired and another thread was redrawing it
 * (ana_clock_slow): the next line starts above it. */
static _Atomic uint64_t stalled_max;

/* Publishes a line (seqlock writer; only the refresher writes). A reader that gave a
 * reading from the clock while the old line had expired either raised stalled_max before
 * the load below or finds the sequence changed and reads again (both sides seq_cst): so
 * when the line would start below such a reading, it is moved to start above it now. */
static void publish(uint64_t base_tsc, uint64_t base_ns, uint64_t mult, uint64_t limit)
{
    uint32_t s = atomic_load_explicit(&ana_clk.seq, memory_order_relaxed);
    atomic_store_explicit(&ana_clk.seq, s + 1, memory_order_seq_cst);
    uint64_t given = atomic_load_explicit(&stalled_max, memory_order_seq_cst), now = read_tsc();
    if (given && line_at(base_tsc, base_ns, mult, now) <= given)
        base_tsc = now, base_ns = given + 1;
    atomic_store_explicit(&ana_clk.base_tsc, base_tsc, memory_order_relaxed);
    atomic_store_explicit(&ana_clk.base_ns, base_ns, memory_order_relaxed);
    atomic_store_explicit(&ana_clk.mult, mult, memory_order_relaxed);
    atomic_store_explicit(&ana_clk.limit, limit, memory_order_relaxed);
    atomic_store_explicit(&ana_clk.seq, s + 2, memory_order_release);
}

/* A consistent copy of the current line; returns its sequence number. */
static uint32_t snapshot(uint64_t *base_tsc, uint64_t *base_ns, uint64_t *mult, uint64_t *limit)
{
    uint32_t s;
    do {
        s = atomic_load_explicit(&ana_clk.seq, memory_order_acquire);
        *base_tsc = atomic_load_explicit(&ana_clk.base_tsc, memory_order_relaxed);
        *base_ns = atomic_load_explicit(&ana_clk.base_ns, memory_order_relaxed);
        *mult = atomic_load_explicit(&ana_clk.mult, memory_order_relaxed);
        *limit = atomic_load_explicit(&ana_clk.limit, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
    } while ((s & 1) || atomic_load_explicit(&ana_clk.seq, memory_order_relaxed) != s);
    return s;
}

static uint64_t mult_of(double ns_per_tick_) { return (uint64_t)(ns_per_tick_ * (double)(1ull << ANA_CLOCK_SHIFT) + 0.5); }

/* The first line, a millisecond or more after the calibration's first pair. It is drawn
 * through the late end of the pair's bracket, so it is never behind a clock_gettime
 * reading taken before it (those were the readings until now). 0, 1 (try again), -1. */
static int first_line(void)
{
    uint64_t tsc, ns, width;
    read_pair(&tsc, &ns, &width);
    if (tsc <= a_tsc || ns <= a_ns || width == UINT64_MAX)
        return -1;
    double rate = (double)(ns - a_ns) / (double)(tsc - a_tsc);
    if (!(rate > 0.01 && rate < 100)) /* 10 MHz .. 100 GHz */
        return -1;
    if ((double)width * rate > MAX_WIDTH_NS)
        return 1; /* preempted between the reads */
    ns_per_tick = rate;
    uint64_t base_tsc = tsc + width / 2 + 1, base_ns = ns + (uint64_t)((double)width * rate) + 1;
    b_tsc = tsc;
    b_ns = ns;
    interval_ns = FIRST_NS;
    publish(base_tsc, base_ns, mult_of(rate), (uint64_t)((double)interval_ns / rate));
    return 0;
}

void (*ana_clock_redraw_hook)(void);

/* Redraws the line (state C_TSC, under `refreshing`). No reading was ever given past the
 * old line's end, so the new line starts at the old one's value now, or at its end when
 * it expired (readings the clock gave meanwhile are above it: publish moves the start
 * above them): never below a reading given before. From
 * there it steps forward to the clock when behind it, or, when ahead, slows down to meet
 * the clock at the end of its interval (it never jumps back). */
static void redraw(void)
{
    uint64_t tsc, ns, width, btsc, bns, mult, limit;
    read_pair(&tsc, &ns, &width);
    if (ana_clock_redraw_hook)
        ana_clock_redraw_hook();
    int good = width != UINT64_MAX && tsc > a_tsc && ns > a_ns && (double)width * ns_per_tick <= MAX_WIDTH_NS;
    if (good) {
        double rate = (double)(ns - a_ns) / (double)(tsc - a_tsc);
        if (rate > ns_per_tick * 0.5 && rate < ns_per_tick * 2)
            ns_per_tick = rate;
        if (ns - b_ns >= RATE_SPAN) {
            a_tsc = b_tsc, a_ns = b_ns;
            b_tsc = tsc, b_ns = ns;
        }
    }
    snapshot(&btsc, &bns, &mult, &limit);
    /* The new line starts at `at`: a microsecond from now (or the old line's end if
     * sooner), so that a reading another thread takes on the old line while this one is
     * published is below it; readings before `at` on the new line give its start. */
    uint64_t now = read_tsc(), end = btsc + limit;
    uint64_t at = now < end ? now + (uint64_t)(1000.0 / ns_per_tick) : now;
    if (now < end && at > end)
        at = end;
    uint64_t start = line_at(btsc, bns, mult, at < end ? at : end) + 2;
    /* How far the clock is ahead of `start` at `at` (differences: doubles keep sub-ns
     * precision on them, not on absolute times). Without a good pair (preempted while
     * reading it): as far as the rate says from the old line's end. */
    double ahead = good ? (double)(int64_t)(ns - start) + (double)(int64_t)(at - tsc) * ns_per_tick
                        : at > end ? (double)(at - end) * ns_per_tick : 0;
    if (ahead > 0) {
        start += (uint64_t)ahead;
        ahead = 0;
    }
    if (interval_ns < MAX_INTERVAL_NS)
        interval_ns *= 2;
    double ticks = (double)interval_ns / ns_per_tick;
    double slope = (ahead + (double)interval_ns) / ticks;
    if (slope < ns_per_tick * 0.5)
        slope = ns_per_tick * 0.5;
    publish(at, start, mult_of(slope), (uint64_t)ticks);
}

/* One step of the state machine, by whoever holds `refreshing`. */
static void advance(void)
{
    int s = atomic_load_explicit(&state, memory_order_acquire);
    if (s == C_UNKNOWN) {
        if (!ana_cfg.tsc || !tsc_invariant()) {
            atomic_store_explicit(&state, C_SYSCALL, memory_order_release);
            return;
        }
        uint64_t width;
        read_pair(&a_tsc, &a_ns, &width);
        atomic_store_explicit(&state, C_CALIBRATING, memory_order_release);
    } else if (s == C_CALIBRATING) {
        if (mono_ns() - a_ns < FIRST_NS)
            return;
        int r = first_line();
        if (r < 0)
            atomic_store_explicit(&state, C_SYSCALL, memory_order_release);
        else if (r == 0)
            atomic_store_explicit(&state, C_TSC, memory_order_release);
    } else if (s == C_TSC) {
        redraw();
    }
}

static int try_advance(void)
{
    if (atomic_exchange_explicit(&refreshing, 1, memory_order_acquire))
        return 0;
    advance();
    atomic_store_explicit(&refreshing, 0, memory_order_release);
    return 1;
}

uint64_t ana_clock_slow(void)
{
    int s = atomic_load_explicit(&state, memory_order_acquire);
    if (s == C_SYSCALL)
        return mono_ns();
    if (s != C_TSC) {
        /* Until the line exists: the clock itself (read after any calibration step, so
         * that the first line, anchored later, is ahead of this reading). Whether the TSC
         * is used is decided by ana_clock_refresh (the constructor), never in a hook. */
        if (s == C_CALIBRATING)
            try_advance();
        if (atomic_load_explicit(&state, memory_order_acquire) != C_TSC)
            return mono_ns();
    }
    for (;;) {
        uint64_t btsc, bns, mult, limit;
        uint32_t seq = snapshot(&btsc, &bns, &mult, &limit);
        uint64_t tsc = read_tsc();
        if ((int64_t)(tsc - btsc) < 0 || tsc - btsc < limit)
            return line_at(btsc, bns, mult, tsc);
        /* The line expired: redraw it and read the new one. */
        if (try_advance())
            continue;
        /* Another thread is redrawing it (and may be preempted for a long while): the
         * clock itself, never below the old line's end (no reading on it went past its
         * end), recorded so that the new line starts above it. */
        uint64_t v = mono_ns(), end = line_at(btsc, bns, mult, btsc + limit);
        if (v < end)
            v = end;
        /* A read-modify-write even when the value is already higher: it is what the
         * sequence's load below is ordered after (publish's seq_cst pair). */
        uint64_t m = atomic_load_explicit(&stalled_max, memory_order_relaxed);
        while (!atomic_compare_exchange_weak_explicit(&stalled_max, &m, m > v ? m : v, memory_order_seq_cst,
                                                      memory_order_relaxed))
            ;
        if (atomic_load_explicit(&ana_clk.seq, memory_order_seq_cst) == seq)
            return v;
        /* A new line was (being) published meanwhile: read it instead. */
    }
}

void ana_clock_refresh(void)
{
    int s = atomic_load_explicit(&state, memory_order_acquire);
    if (s == C_SYSCALL)
        return;
    if (s == C_TSC) {
        /* Only once half the interval has gone: the collector's flush ticks are frequent. */
        uint64_t btsc = atomic_load_explicit(&ana_clk.base_tsc, memory_order_relaxed);
        uint64_t limit = atomic_load_explicit(&ana_clk.limit, memory_order_relaxed);
        if (read_tsc() - btsc < limit / 2)
            return;
    }
    try_advance();
}

int ana_clock_uses_tsc(void) { return atomic_load_explicit(&state, memory_order_acquire) == C_TSC; }

void ana_clock_force_syscall(void) { atomic_store_explicit(&state, C_SYSCALL, memory_order_release); }

void ana_clock_atfork_child(void)
{
    /* Only the forking thread runs in the child. A refresh another thread had under way
     * will never finish and may have left the line half-written: the child then reads
     * the clock itself. Otherwise the line stays valid (the TSC does not change at fork). */
    if (atomic_load_explicit(&refreshing, memory_order_relaxed)) {
        atomic_store_explicit(&state, C_SYSCALL, memory_order_relaxed);
        atomic_store_explicit(&ana_clk.limit, 0, memory_order_relaxed);
        atomic_store_explicit(&refreshing, 0, memory_order_relaxed);
    }
}
