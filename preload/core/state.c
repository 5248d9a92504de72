/* state.c — the preload's state: the session's phase (ana_session), whether records are
 * being collected (ana_active), and the two ways the preload speaks to the user: a warning
 * (ana_warn) and stopping with one line (ana_disable), after which the program runs on.
 * May be called by every part of the preload (core, calls, hooks, cupti, lifecycle.c);
 * calls nothing of it. The phases and who moves them: state.h. */
#define _GNU_SOURCE
#include "preload.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

_Atomic int ana_active;
_Atomic int ana_session = ANA_S_OFF; /* until the constructor has run */
static _Atomic int said_disabled;
static _Atomic int warnings;
static int collector_up; /* the session was running when the profiler disabled itself */
static char disabled_why[256] = "the profiler stopped";

/* One line "anatomist: ..." on stderr in a single write (no stdio state touched);
 * errno is left as it was. */
static void vsay(const char *fmt, va_list ap)
{
    int e = errno;
    char buf[1024];
    int n = snprintf(buf, sizeof(buf), "anatomist: ");
    n += vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
    if (n > (int)sizeof(buf) - 2)
        n = (int)sizeof(buf) - 2;
    buf[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, buf, (size_t)n);
    (void)w;
    errno = e;
}

void ana_warn(const char *fmt, ...)
{
    if (atomic_fetch_add(&warnings, 1) >= 8)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
}

void ana_disable(const char *fmt, ...)
{
    int started = ana_trace_open(atomic_load(&ana_session));
    atomic_store(&ana_active, 0);
    atomic_store(&ana_session, ANA_S_OFF);
    if (atomic_exchange(&said_disabled, 1))
        return;
    va_list ap;
    va_start(ap, fmt);
    if (started)
        vsnprintf(disabled_why, sizeof(disabled_why), fmt, ap);
    va_end(ap);
    collector_up = started;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
}

const char *ana_state_stopped_why(void) { return collector_up ? disabled_why : NULL; }

void ana_state_atfork_child(void)
{
    collector_up = 0;
    atomic_store(&ana_active, 0);
    atomic_store(&ana_session, (ana_cfg.disable || said_disabled) ? ANA_S_OFF : ANA_S_NONE);
}
