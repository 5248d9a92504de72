/* cupti_int.h — shared by the preload's CUPTI files (cupti.c, cupti_decode.c,
 * cupti_calls.c); the only preload header that includes <cupti.h>.
 *
 * cupti.c owns the loaded library, its entry points (ana_cupti_fn) and the state;
 * cupti_decode.c turns activity records into our GPU_* records (pure: no CUPTI call, so
 * unit tests feed it records they build); cupti_calls.c is the subscriber callback
 * (correlation ids, and API records for calls no hook saw). */
#ifndef ANA_CUPTI_INT_H
#define ANA_CUPTI_INT_H

#include <cupti.h>

#include "preload.h"

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

/* "CUPTI_ERROR_..." for r (the library's own name when it can give one). */
const char *ana_cupti_err_name(CUptiResult r);

/* ---- cupti_decode.c ---- */
/* Converts one activity record into our record kinds and hands each to put. `offset_ns`
 * is added to every CUPTI timestamp (0 when CUPTI uses our clock). Kernel names are
 * interned (ana_kernel_intern_name). Returns 1 when the record was kept, 0 for kinds we
 * do not keep. Collector thread only. */
int ana_cupti_decode(const CUpti_Activity *a, int64_t offset_ns, ana_cupti_put put, void *arg);

/* ---- cupti_calls.c ---- */
/* Enables, for subscriber s, the callbacks of every API we correlate or record. */
void ana_cupti_calls_enable(CUpti_SubscriberHandle s);
/* The subscriber callback. */
void CUPTIAPI ana_cupti_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *data);

#endif
