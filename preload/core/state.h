/* state.h — the session's phase, whether records are collected, warnings (state.c).
 * The phases (session.c moves them; lifecycle.c opens NONE after the constructor and closes
 * at exit; ana_disable ends in OFF):
 *   NONE --first recorded call--> STARTING --> OPEN --first call that needs a device-->
 *   DEVICE --> RUNNING --exit / failure--> OFF */
#ifndef ANA_STATE_H
#define ANA_STATE_H

#include <stdatomic.h>
#include "config.h"
#include "defs.h"

enum { ANA_S_NONE, ANA_S_STARTING, ANA_S_OPEN, ANA_S_DEVICE, ANA_S_RUNNING, ANA_S_OFF };
extern _Atomic int ana_session ANA_HIDDEN;
/* The trace is being written (records may be appended by calls that need no device). */
static inline int ana_trace_open(int s) { return s == ANA_S_OPEN || s == ANA_S_DEVICE || s == ANA_S_RUNNING; }
/* 1 while records are being collected. */
extern _Atomic int ana_active;

/* Says `msg` once on stderr ("anatomist: ...") and stops collecting; the app runs on. */
void ana_disable(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints a warning line on stderr (configuration mistakes), never more than 8 per process. */
void ana_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Why the profiler stopped while the trace was being written (what its END says), or NULL
 * when it did not. */
const char *ana_state_stopped_why(void);
/* After fork in the child, last: back to NONE (OFF when disabled), nothing collected. */
void ana_state_atfork_child(void);

#endif
