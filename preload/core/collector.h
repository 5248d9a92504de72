/* collector.h — the writer thread (collector.c). */
#ifndef ANA_COLLECTOR_H
#define ANA_COLLECTOR_H

#include <stddef.h>
#include <stdint.h>
#include "defs.h"
#include "records.h"

/* Creates the trace (and its live file) and starts the writer thread. 0, or -1 with `why`
 * saying in words what went wrong. */
int ana_collector_start(const char *path, char *why, size_t cap);
/* Wakes the collector and waits (at most timeout_ms) until everything appended so far by
 * this thread is written. */
void ana_collector_flush_now(int timeout_ms);
/* Final drain, END record, close. Bounded wait. */
void ana_collector_stop(uint64_t reason, const char *detail);
void ana_collector_atfork_child(void);
/* Where GPU records come from (cupti/, installed by lifecycle.c before the session can
 * start): called by the writer every pass with `forced` (flush everything now) and the
 * sink that writes each record r (its time_ns as given) in the process segment. */
typedef void (*ana_gpu_put)(ana_record *r, void *arg);
typedef void (*ana_gpu_collect)(int forced, ana_gpu_put put, void *arg);
void ana_collector_set_gpu(ana_gpu_collect collect);

#endif
