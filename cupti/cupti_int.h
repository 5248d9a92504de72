/* cupti_int.h — shared by the files of cupti/; the only header of the preload that
 * includes <cupti.h>.
 *
 * library.c owns the loaded library, its entry points (ana_cupti_fn) and the state;
 * cupti.c starts, collects and hands over; decode.c turns activity records into our GPU_*
 * records (pure: no CUPTI call, so unit tests feed it records they build); calls.c is the
 * list of API calls we subscribe to and what each records; callback.c is the subscriber
 * callback (correlation ids, and API records for calls no hook saw). */
#ifndef ANA_CUPTI_INT_H
#define ANA_CUPTI_INT_H

#include <cupti.h>

#include "activity.h"
/* What cupti/ uses of the preload's core (each header is one module of preload/core/):
 * the writer's sink and forced flush (collector.h, through activity.h) and wake-up, the
 * clock, the configuration, warnings, kernel names, the real-symbol lookup, the bracket
 * (session.h); callback.c and calls.c add the record builders of preload/calls/calls.h. */
#include "clock.h"
#include "config.h"
#include "dl_real.h"
#include "kernels.h"
#include "records.h"
#include "session.h"
#include "state.h"
#include "wake.h"

/* The CUPTI entry points the preload calls, resolved from the library it loaded. */
typedef struct ana_cupti_fns {
    CUptiResult (*subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
    CUptiResult (*subscribe_v2)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *, CUpti_SubscriberParams *);
    CUptiResult (*unsubscribe)(CUpti_SubscriberHandle);
    CUptiResult (*enable_callback)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId);
    CUptiResult (*enable)(CUpti_ActivityKind);
    CUptiResult (*disable)(CUpti_ActivityKind);
    CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc);
    CUptiResult (*register_timestamp)(CUpti_TimestampCallbackFunc);
    CUptiResult (*flush_all)(uint32_t);
    CUptiResult (*next_record)(uint8_t *, size_t, CUpti_Activity **);
    CUptiResult (*dropped)(CUcontext, uint32_t, size_t *);
    CUptiResult (*get_timestamp)(uint64_t *);
    CUptiResult (*result_string)(CUptiResult, const char **);
} ana_cupti_fns;

extern ana_cupti_fns ana_cupti_fn;

/* cupti.c's state: OFF (not started, unavailable, taken, or a forked child) -> ON ->
 * HANDOVER (the program subscribed, or the process exits: our last forced flush) -> GONE
 * (ours is off). */
enum { ANA_CUPTI_OFF, ANA_CUPTI_ON, ANA_CUPTI_HANDOVER, ANA_CUPTI_GONE };
extern _Atomic int ana_cupti_state;

/* 1 while our activity collection and callbacks are on (ON or HANDOVER: not before start,
 * not after the program took CUPTI over, not in a forked child). One relaxed load. */
static inline int ana_cupti_on(void)
{
    int s = atomic_load_explicit(&ana_cupti_state, memory_order_relaxed);
    return s == ANA_CUPTI_ON || s == ANA_CUPTI_HANDOVER;
}

/* ---- library.c ---- */
/* "CUPTI_ERROR_..." for r (the library's own name when it can give one). */
const char *ana_cupti_err_name(CUptiResult r);
/* dlopen of libcupti.so.13 (RTLD_LOCAL), else under $CUDA_HOME; NULL with `why` said. */
void *ana_cupti_lib_open(char *why, size_t cap);
/* Fills ana_cupti_fn from the library; the name of the first entry point missing, or NULL
 * when all were found. */
const char *ana_cupti_lib_resolve(void *lib);

/* ---- decode.c ---- */
/* Converts one activity record into our record kinds and hands each to put. `offset_ns`
 * is added to every CUPTI timestamp (0 when CUPTI uses our clock). Kernel names are
 * interned (ana_kernel_intern_name). Returns 1 when the record was kept, 0 for kinds we
 * do not keep. Collector thread only. */
int ana_cupti_decode(const CUpti_Activity *a, int64_t offset_ns, ana_gpu_put put, void *arg);

/* ---- calls.c: the API calls we subscribe to ---- */
/* Ends the bracket c with the record of a call that returned r, from its parameters;
 * returns 0, leaving the bracket open, when they give no record. */
typedef int (*ana_cupti_rec_fn)(ana_call *c, uint32_t api, int r, const void *params);
typedef struct ana_cupti_call {
    CUpti_CallbackDomain domain;
    CUpti_CallbackId cbid;
    uint32_t api;
    ana_cupti_rec_fn rec;
} ana_cupti_call;
/* Enables, for subscriber s, the callbacks of every API we correlate or record. */
void ana_cupti_calls_enable(CUpti_SubscriberHandle s);
/* The entry of a subscribed call, NULL for any other. Any thread, after enable. */
const ana_cupti_call *ana_cupti_call_of(CUpti_CallbackDomain domain, CUpti_CallbackId cbid);

/* ---- callback.c ---- */
/* The subscriber callback. */
void CUPTIAPI ana_cupti_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *data);

#endif
