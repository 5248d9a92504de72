/*
 * cupti_sim.h — internal contract of the sim's libcupti.so.13 (docs/sim.md, "CUPTI").
 *
 * What it does: answers NVIDIA's CUPTI callback and activity API on the simulated device.
 * It registers itself as the device's one observer (sim/anasim.h) the first time a client
 * subscribes or enables an activity kind, and from then on
 *   - calls the subscriber's callback at entry and exit of every enabled API call
 *     (subscriber.c),
 *   - turns API calls into RUNTIME / DRIVER / EXTERNAL_CORRELATION records and converts
 *     the device's records to the client's time base (observer.c),
 *   - writes records into the client's buffers and hands them back (activity.c).
 *
 * Time: records from the device carry device-clock timestamps (CLOCK_MONOTONIC ns). The
 * client sees device time + an offset: 1e12 ns by default, or, after
 * cuptiActivityRegisterTimestampCallback(fn), fn() - device now taken once at
 * registration.
 *
 * Thread-safety: everything is thread-safe. No lock of ours is held while a client
 * callback (subscriber callback, bufferRequested, bufferCompleted) runs.
 * Ownership: buffers belong to the client except between bufferRequested and
 * bufferCompleted; the sim copies every record it is handed.
 */
#ifndef ANA_CUPTI_SIM_H
#define ANA_CUPTI_SIM_H

#include "anasim.h"

#include <cupti.h>
#include <stddef.h>
#include <stdint.h>

/* Only the entry points NVIDIA's libcupti.so.13 has are exported (libcupti.map). */
#define ANA_CUPTI_API __attribute__((visibility("default")))

/* The default CUPTI time base is the device clock plus this many nanoseconds. */
#define ANA_CUPTI_DEFAULT_OFFSET_NS 1000000000000ull

/* ---- subscriber.c: results, subscriber, callback API -------------------------- */
/* Records r as this thread's last error unless it is CUPTI_SUCCESS; returns r. */
CUptiResult ana_cupti_ret(CUptiResult r);
/* Calls the subscriber's callback for `call` if its (domain, cbid) is enabled. */
void ana_cupti_callback_dispatch(int exit_site, anasim_api *call);
/* The context handle callbacks carry: it stands for the device's primary context. */
CUcontext ana_cupti_context(void);
/* cuptiFinalize: forget the subscriber. */
void ana_cupti_subscriber_reset(void);

/* ---- observer.c: the device's observer and time ------------------------------- */
/* Registers the observer with the device (once; again after a reset) and publishes the
 * kinds it wants. */
void ana_cupti_attach(void);
/* Tells the device which kinds to build (anasim_set_activity_mask) while attached; called
 * whenever the enabled kinds change. */
void ana_cupti_publish_kinds(void);
/* cuptiFinalize: unregister the observer, back to the default time base. */
void ana_cupti_observer_reset(void);
/* A device-clock timestamp in the client's time base (0 stays 0: unknown). */
uint64_t ana_cupti_client_time(uint64_t device_ns);

/* ---- activity.c: kinds, client buffers, delivery ------------------------------ */
/* The kinds the client enabled (ANASIM_KIND_BIT bits), read once. */
uint64_t ana_cupti_kinds(void);
/* 1 when the client enabled `kind`. */
int ana_cupti_kind_enabled(CUpti_ActivityKind kind);
/* The device records wanted for the enabled kinds: KERNEL and CONCURRENT_KERNEL stand for
 * each other (the device builds one kind, the observer relabels it). */
static inline uint64_t ana_cupti_wanted(uint64_t kinds)
{
    const uint64_t kernels = ANASIM_KIND_BIT(CUPTI_ACTIVITY_KIND_KERNEL) |
                             ANASIM_KIND_BIT(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    return kinds & kernels ? kinds | kernels : kinds;
}
/* 1 unless the client turned off API records for this cbid (cuptiActivityEnable*Api). */
int ana_cupti_api_record_enabled(CUpti_ActivityKind kind, CUpti_CallbackId cbid);
/* The size of a record of this kind in a buffer (a multiple of 8); 0 for kinds the sim
 * never writes. */
size_t ana_cupti_record_size(CUpti_ActivityKind kind);
/* Copies a finished record (client time base) into the client's buffers. `done_ns` is
 * when, on the device clock, the record is complete (its last timestamp): a default
 * flush hands back only buffers whose records are all complete. */
void ana_cupti_emit(const CUpti_Activity *rec, uint64_t done_ns);
/* cuptiFinalize: deliver everything, give back every buffer, disable every kind. */
void ana_cupti_activity_reset(void);

#endif /* ANA_CUPTI_SIM_H */
