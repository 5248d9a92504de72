/* capture.h — capture windows (ANATOMIST_CAPTURE_RANGE, _DELAY_MS, _DURATION_MS) (capture.c).
 * Outside a window, launches, copies, sets, library calls, NVTX ranges and the GPU
 * activity of calls made outside are not recorded; allocations, frees and definitions
 * always are. The hot path reads ana_capture_all only (1: no capture settings). */
#ifndef ANA_CAPTURE_H
#define ANA_CAPTURE_H

#include <stdint.h>
#include "defs.h"
#include "records.h"

extern int ana_capture_all;
/* After the configuration is loaded (the delay counts from here). */
void ana_capture_init(void);
/* 1 when a window is open now (always without capture settings). Any thread. */
int ana_capture_open_now(void);
/* CUPTI's callback, at an API call's entry: the call entered while a window was open. */
void ana_capture_note_corr(uint32_t corr);
int ana_capture_keep_slow(uint64_t corr);
/* Whether the record of a call with correlation id `corr` (0: unknown) is to be made. */
static inline int ana_capture_keep(uint64_t corr) { return ANA_LIKELY(ana_capture_all) || ana_capture_keep_slow(corr); }
/* Writer: whether a decoded GPU record is to be written. */
int ana_capture_keep_gpu(const ana_record *r);
/* The range calls: cudaProfilerStart (1) / cudaProfilerStop (0); an NVTX push (key: its
 * domain and level, the same for its pop), pop, start (its id) and end. */
void ana_capture_profiler(int start);
void ana_capture_nvtx_push(const char *s, uint32_t len, uint64_t key);
void ana_capture_nvtx_pop(uint64_t key);
void ana_capture_nvtx_start(const char *s, uint32_t len, uint64_t id);
void ana_capture_nvtx_end(uint64_t id);
/* Writer, each pass: writes INFO capture.start / capture.stop for windows opened / closed
 * since (time = the window's edge). */
typedef void (*ana_capture_put)(ana_record *r, void *arg);
void ana_capture_collect(ana_capture_put put, void *arg);
/* At exit, before the last pass: closes an open window; says once on stderr when no
 * window ever opened. */
void ana_capture_at_exit(void);
void ana_capture_atfork_child(void);

#endif
