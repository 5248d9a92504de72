/*
 * The sim's libcupti.so.13 (docs/sim.md, "CUPTI"), driven the way the device drives it.
 *
 * The test stands in for the device: it makes API calls through the real
 * anasim_api_enter/exit of the sim's libcudart.so.13, and pushes hand-built activity
 * records through the observer libcupti registers. To get that observer it interposes
 * anasim_set_observer (the executable's definition wins over libcudart's) and forwards to
 * the real one. Expected timestamps are computed here from CLOCK_MONOTONIC (the device
 * clock) and the documented offsets. Criterion runs each test in its own process, so
 * every test starts with fresh CUPTI state.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "anasim.h"

#define OFFSET 1000000000000ull /* the documented default time base: device clock + 1e12 */

/* ---- the fake device ------------------------------------------------------------- */

static const anasim_observer *observer;

void anasim_set_observer(const anasim_observer *obs)
{
    observer = obs;
    void (*real)(const anasim_observer *) =
        (void (*)(const anasim_observer *))dlvsym(RTLD_NEXT, "anasim_set_observer", "ANASIM_PRIVATE");
    cr_assert_not_null(real, "the sim's libcudart.so.13 exports anasim_set_observer@ANASIM_PRIVATE");
    real(obs);
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void inject_kernel(uint32_t correlation, uint64_t start, uint64_t end, const char *name)
{
    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof k);
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.start = start;
    k.end = end;
    k.completed = end;
    k.correlationId = correlation;
    k.name = name;
    k.gridX = 7;
    k.blockX = 128;
    k.streamId = 13;
    k.contextId = 1;
    cr_assert_not_null(observer, "libcupti registered its observer");
    observer->activity((const CUpti_Activity *)&k);
}

/* A past kernel: ended 1 µs ago on the device clock. */
static void inject_done(uint32_t correlation)
{
    uint64_t now = mono_ns();
    inject_kernel(correlation, now - 3000, now - 1000, "k");
}

/* ---- the client: buffers in, buffers out --------------------------------------------- */

#define MAX_BUFS 8192
static struct { uint8_t *buf; size_t size, valid; } got[MAX_BUFS];
static int ngot;
static pthread_mutex_t got_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t req_size = 4096, req_max;

static void CUPTIAPI requested(uint8_t **buffer, size_t *size, size_t *maxNumRecords)
{
    *buffer = aligned_alloc(8, req_size < 8 ? 8 : req_size);
    *size = req_size;
    *maxNumRecords = req_max;
}

static void CUPTIAPI completed(CUcontext ctx, uint32_t streamId, uint8_t *buffer, size_t size,
                               size_t validSize)
{
    pthread_mutex_lock(&got_lock);
    if (ngot < MAX_BUFS) {
        got[ngot].buf = buffer;
        got[ngot].size = size;
        got[ngot].valid = validSize;
        ngot++;
    }
    pthread_mutex_unlock(&got_lock);
}

static int delivered(void)
{
    pthread_mutex_lock(&got_lock);
    int n = ngot;
    pthread_mutex_unlock(&got_lock);
    return n;
}

/* Every record of every delivered buffer, in delivery order. */
#define MAX_RECS 8192
static CUpti_Activity *recs[MAX_RECS];
static int nrecs;

static void collect(void)
{
    nrecs = 0;
    for (int i = 0; i < delivered(); i++) {
        CUpti_Activity *r = NULL;
        CUptiResult st;
        while ((st = cuptiActivityGetNextRecord(got[i].buf, got[i].valid, &r)) == CUPTI_SUCCESS)
            if (nrecs < MAX_RECS)
                recs[nrecs++] = r;
        cr_assert_eq(st, CUPTI_ERROR_MAX_LIMIT_REACHED, "buffer %d ends cleanly (got %d)", i, st);
    }
}

static void start_activity(CUpti_ActivityKind kind)
{
    cr_assert_eq(cuptiActivityRegisterCallbacks(requested, completed), CUPTI_SUCCESS);
    cr_assert_eq(cuptiActivityEnable(kind), CUPTI_SUCCESS);
}

static anasim_api make_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const char *name,
                            const void *params, const void *ret)
{
    anasim_api c;
    memset(&c, 0, sizeof c);
    c.domain = domain;
    c.cbid = cbid;
    c.name = name;
    c.params = params;
    c.ret = ret;
    return c;
}

/* ---- subscribers --------------------------------------------------------------------- */

Test(cupti, one_subscriber_at_a_time)
{
    CUpti_SubscriberHandle a = NULL, b = NULL;
    CUpti_SubscriberParams p = {.structSize = CUpti_SubscriberParams_STRUCT_SIZE,
                                .subscriberName = "first"};
    cr_assert_eq(cuptiSubscribe_v2(&a, NULL, NULL, &p), CUPTI_SUCCESS);
    cr_assert_not_null(a);

    char old[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = "";
    CUpti_SubscriberParams q = {.structSize = CUpti_SubscriberParams_STRUCT_SIZE,
                                .oldSubscriberName = old, .oldSubscriberSize = sizeof old};
    cr_assert_eq(cuptiSubscribe_v2(&b, NULL, NULL, &q), CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
    cr_assert_str_eq(old, "CUPTI for first");
    cr_assert_eq(cuptiSubscribe(&b, NULL, NULL), 39); /* CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED */
    cr_assert_eq(cuptiGetLastError(), 39);
    cr_assert_eq(cuptiGetLastError(), CUPTI_SUCCESS, "reading the last error resets it");

    cr_assert_eq(cuptiUnsubscribe(a), CUPTI_SUCCESS);
    cr_assert_eq(cuptiUnsubscribe(a), CUPTI_ERROR_INVALID_PARAMETER, "a stale handle");
    cr_assert_eq(cuptiEnableDomain(1, a, CUPTI_CB_DOMAIN_RUNTIME_API), CUPTI_ERROR_INVALID_PARAMETER);
    cr_assert_eq(cuptiSubscribe(&b, NULL, NULL), CUPTI_SUCCESS, "unsubscribing frees the slot");
    cr_assert_neq(a, b);
    cr_assert_eq(cuptiSubscribe(NULL, NULL, NULL), CUPTI_ERROR_INVALID_PARAMETER);
}

/* ---- callback API ---------------------------------------------------------------------- */

struct seen {
    CUpti_CallbackDomain domain;
    CUpti_CallbackId cbid;
    CUpti_CallbackData data;
    uint64_t correlation_data_at_exit;
};
static struct seen seen[16];
static int nseen;

static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *cbdata)
{
    const CUpti_CallbackData *d = cbdata;
    cr_assert_eq(userdata, (void *)seen, "userdata is passed through");
    if (nseen == 16)
        return;
    seen[nseen] = (struct seen){domain, cbid, *d, 0};
    if (d->callbackSite == CUPTI_API_ENTER)
        *d->correlationData = 0xabc0000 + d->correlationId; /* kept until exit */
    else
        seen[nseen].correlation_data_at_exit = *d->correlationData;
    nseen++;
}

Test(cupti, callbacks_at_enter_and_exit)
{
    CUpti_SubscriberHandle s;
    cr_assert_eq(cuptiSubscribe(&s, on_callback, seen), CUPTI_SUCCESS);
    const CUpti_CallbackId malloc_cbid = CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020;
    cr_assert_eq(cuptiEnableCallback(1, s, CUPTI_CB_DOMAIN_RUNTIME_API, malloc_cbid), CUPTI_SUCCESS);
    uint32_t on = 7;
    cr_assert_eq(cuptiGetCallbackState(&on, s, CUPTI_CB_DOMAIN_RUNTIME_API, malloc_cbid), CUPTI_SUCCESS);
    cr_assert_eq(on, 1);
    cr_assert_eq(cuptiEnableCallback(1, s, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE),
                 CUPTI_ERROR_INVALID_PARAMETER);

    /* An enabled runtime call with a driver call nested in it (driver domain not enabled),
     * then a runtime call that is not enabled. */
    void *ptr = NULL;
    cudaMalloc_v3020_params params = {.devPtr = &ptr, .size = 1024};
    cudaError_t ret = cudaErrorMemoryAllocation;
    anasim_api call = make_call(CUPTI_CB_DOMAIN_RUNTIME_API, malloc_cbid, "cudaMalloc", &params, &ret);
    anasim_api inner = make_call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
                                 "cuMemAlloc_v2", NULL, NULL);
    anasim_api_enter(&call);
    anasim_api_enter(&inner);
    anasim_api_exit(&inner);
    anasim_api_exit(&call);
    anasim_api other = make_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020,
                                 "cudaFree", NULL, &ret);
    anasim_api_enter(&other);
    anasim_api_exit(&other);

    cr_assert_eq(nseen, 2, "enter and exit of cudaMalloc only, got %d", nseen);
    cr_assert_gt(call.correlation, 0);
    cr_assert_eq(inner.correlation, call.correlation, "nested calls share the id");
    cr_assert_neq(other.correlation, call.correlation);
    for (int i = 0; i < 2; i++) {
        const CUpti_CallbackData *d = &seen[i].data;
        cr_assert_eq(seen[i].domain, CUPTI_CB_DOMAIN_RUNTIME_API);
        cr_assert_eq(seen[i].cbid, malloc_cbid);
        cr_assert_eq(d->callbackSite, i == 0 ? CUPTI_API_ENTER : CUPTI_API_EXIT);
        cr_assert_str_eq(d->functionName, "cudaMalloc");
        cr_assert_null(d->symbolName);
        cr_assert_eq(d->functionParams, &params);
        cr_assert_eq(((const cudaMalloc_v3020_params *)d->functionParams)->size, 1024);
        cr_assert_eq(d->correlationId, call.correlation);
        cr_assert_eq(d->contextUid, 1);
        cr_assert_not_null(d->context);
        cr_assert_eq(d->correlationData, &call.correlation_data);
    }
    cr_assert_eq(*(cudaError_t *)seen[1].data.functionReturnValue, cudaErrorMemoryAllocation);
    cr_assert_eq(seen[1].correlation_data_at_exit, 0xabc0000 + call.correlation);

    /* The whole driver domain: the nested call now reaches the subscriber too. */
    nseen = 0;
    cr_assert_eq(cuptiEnableDomain(1, s, CUPTI_CB_DOMAIN_DRIVER_API), CUPTI_SUCCESS);
    anasim_api_enter(&call);
    anasim_api_enter(&inner);
    anasim_api_exit(&inner);
    anasim_api_exit(&call);
    cr_assert_eq(nseen, 4);
    cr_assert_eq(seen[1].domain, CUPTI_CB_DOMAIN_DRIVER_API);
    cr_assert_str_eq(seen[1].data.functionName, "cuMemAlloc_v2");
    cr_assert_eq(seen[1].data.correlationId, seen[0].data.correlationId);
    cr_assert_eq(seen[1].data.correlationId, call.correlation);

    /* Unsubscribed: no more callbacks. */
    nseen = 0;
    cr_assert_eq(cuptiUnsubscribe(s), CUPTI_SUCCESS);
    anasim_api_enter(&call);
    anasim_api_exit(&call);
    cr_assert_eq(nseen, 0);
}

/* ---- activity records ------------------------------------------------------------------- */

Test(cupti, kernel_records_in_client_buffers_default_time_base)
{
    start_activity(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    cr_assert(observer->wants(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    cr_assert_not(observer->wants(CUPTI_ACTIVITY_KIND_MEMSET));

    char name[32] = "gemm_kernel";
    uint64_t now = mono_ns();
    for (uint32_t i = 0; i < 3; i++)
        inject_kernel(100 + i, now - 9000 + i * 2000, now - 8000 + i * 2000, name);
    strcpy(name, "overwritten"); /* the record must keep its own copy of the name */
    cr_assert_eq(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);

    cr_assert_eq(delivered(), 1);
    cr_assert_eq(got[0].size, 4096);
    cr_assert_eq(got[0].valid, 3 * sizeof(CUpti_ActivityKernel10));
    collect();
    cr_assert_eq(nrecs, 3);
    for (uint32_t i = 0; i < 3; i++) {
        const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)recs[i];
        cr_assert_eq(k->kind, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
        cr_assert_eq(k->correlationId, 100 + i);
        cr_assert_eq(k->start, now - 9000 + i * 2000 + OFFSET);
        cr_assert_eq(k->end, now - 8000 + i * 2000 + OFFSET);
        cr_assert_eq(k->completed, k->end);
        cr_assert_eq(k->queued, 0, "unknown timestamps stay 0");
        cr_assert_eq(k->gridX, 7);
        cr_assert_eq(k->blockX, 128);
        cr_assert_eq(k->streamId, 13);
        cr_assert_str_eq(k->name, "gemm_kernel");
    }

    uint64_t before = mono_ns(), ts = 0;
    cr_assert_eq(cuptiGetTimestamp(&ts), CUPTI_SUCCESS);
    uint64_t after = mono_ns();
    cr_assert(ts >= before + OFFSET && ts <= after + OFFSET, "cuptiGetTimestamp in the same base");
}

static uint64_t CUPTIAPI client_clock(void) { return 5000000000000000ull; }

Test(cupti, timestamp_callback_moves_every_timestamp)
{
    uint64_t before = mono_ns();
    cr_assert_eq(cuptiActivityRegisterTimestampCallback(client_clock), CUPTI_SUCCESS);
    uint64_t after = mono_ns();
    /* offset = 5e15 - device now at registration, device now in [before, after] */
    uint64_t lo = 5000000000000000ull - after, hi = 5000000000000000ull - before;

    start_activity(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    uint64_t now = mono_ns();
    inject_kernel(9, now - 5000, now - 4000, "k");
    cr_assert_eq(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
    collect();
    cr_assert_eq(nrecs, 1);
    const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)recs[0];
    cr_assert(k->start - (now - 5000) >= lo && k->start - (now - 5000) <= hi,
              "start moved by the registration offset");
    cr_assert_eq(k->end - k->start, 1000);

    uint64_t t0 = mono_ns(), ts = 0;
    cuptiGetTimestamp(&ts);
    uint64_t t1 = mono_ns();
    cr_assert(ts >= t0 + lo && ts <= t1 + hi, "cuptiGetTimestamp in the client's base");
}

Test(cupti, tiny_buffers_drop_records)
{
    req_size = 16; /* smaller than any record */
    start_activity(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    for (uint32_t i = 0; i < 3; i++)
        inject_done(i + 1);
    cr_assert_eq(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
    size_t dropped = 0;
    cr_assert_eq(cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped), CUPTI_SUCCESS);
    cr_assert_eq(dropped, 3);
    cr_assert_eq(cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped), CUPTI_SUCCESS);
    cr_assert_eq(dropped, 0, "the count resets when read");
    cr_assert_eq(delivered(), 3, "each too-small buffer is given back");
    for (int i = 0; i < 3; i++)
        cr_assert_eq(got[i].valid, 0);
}

Test(cupti, default_flush_waits_for_completion)
{
    start_activity(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    uint64_t now = mono_ns();
    inject_kernel(1, now + 60000000000ull, now + 60000001000ull, "k"); /* ends in a minute */
    cr_assert_eq(cuptiActivityFlushAll(0), CUPTI_SUCCESS);
    cr_assert_eq(delivered(), 0, "an incomplete record holds its buffer back");
    cr_assert_eq(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
    cr_assert_eq(delivered(), 1);

    inject_done(2);
    cr_assert_eq(cuptiActivityFlushAll(0), CUPTI_SUCCESS);
    cr_assert_eq(delivered(), 2, "a complete, partly filled buffer goes back on a default flush");
}

Test(cupti, full_buffers_delivered_by_the_worker)
{
    req_max = 1; /* one record per buffer */
    start_activity(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    inject_done(1);
    inject_done(2); /* the first buffer is now full */
    for (int i = 0; i < 400 && delivered() == 0; i++)
        usleep(5000);
    cr_assert_eq(delivered(), 1, "the full buffer, without any flush");
    collect();
    cr_assert_eq(((CUpti_ActivityKernel10 *)recs[0])->correlationId, 1);
}

Test(cupti, late_mode_holds_and_reverses)
{
    setenv("ANATOMIST_SIM_CUPTI_LATE", "1", 1);
    req_max = 1;
    start_activity(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    for (uint32_t i = 1; i <= 4; i++)
        inject_done(i);
    cr_assert_eq(cuptiActivityFlushAll(0), CUPTI_SUCCESS);
    usleep(50000);
    cr_assert_eq(delivered(), 0, "nothing before a forced flush");
    cr_assert_eq(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
    cr_assert_eq(delivered(), 4);
    collect();
    cr_assert_eq(nrecs, 4);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(((CUpti_ActivityKernel10 *)recs[i])->correlationId, 4 - i, "newest first");
}

Test(cupti, runtime_record_per_call)
{
    start_activity(CUPTI_ACTIVITY_KIND_RUNTIME);
    cudaError_t ret = cudaErrorInvalidValue;
    anasim_api call = make_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
                                "cudaMalloc", NULL, &ret);
    anasim_api inner = make_call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
                                 "cuMemAlloc_v2", NULL, NULL);
    uint64_t t0 = mono_ns();
    anasim_api_enter(&call);
    anasim_api_enter(&inner);
    anasim_api_exit(&inner);
    anasim_api_exit(&call);
    uint64_t t1 = mono_ns();
    /* Turned off for cudaFree: no record. */
    cr_assert_eq(cuptiActivityEnableRuntimeApi(CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, 0), CUPTI_SUCCESS);
    anasim_api other = make_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020,
                                 "cudaFree", NULL, &ret);
    anasim_api_enter(&other);
    anasim_api_exit(&other);

    cr_assert_eq(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
    collect();
    cr_assert_eq(nrecs, 1, "one RUNTIME record; DRIVER is not enabled");
    const CUpti_ActivityAPI *a = (const CUpti_ActivityAPI *)recs[0];
    cr_assert_eq(a->kind, CUPTI_ACTIVITY_KIND_RUNTIME);
    cr_assert_eq(a->cbid, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020);
    cr_assert_eq(a->correlationId, call.correlation);
    cr_assert(a->start >= t0 + OFFSET && a->start <= a->end && a->end <= t1 + OFFSET);
    cr_assert_eq(a->processId, (uint32_t)getpid());
    cr_assert_eq(a->threadId, (uint32_t)pthread_self());
    cr_assert_eq(a->returnValue, cudaErrorInvalidValue);
}

Test(cupti, external_correlation_records)
{
    start_activity(CUPTI_ACTIVITY_KIND_RUNTIME);
    cr_assert_eq(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION), CUPTI_SUCCESS);
    cr_assert_eq(cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_INVALID, 1),
                 CUPTI_ERROR_INVALID_PARAMETER);
    cr_assert_eq(cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 77), 0);
    cr_assert_eq(cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 78), 0);
    cr_assert_eq(cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_UNKNOWN, 5), 0);
    anasim_api call = make_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
                                "cudaMalloc", NULL, NULL);
    anasim_api_enter(&call);
    anasim_api_exit(&call);

    uint64_t last = 0;
    cr_assert_eq(cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last), 0);
    cr_assert_eq(last, 78);
    cr_assert_eq(cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last), 0);
    cr_assert_eq(last, 77);
    cr_assert_eq(cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last),
                 CUPTI_ERROR_QUEUE_EMPTY);

    cr_assert_eq(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
    collect();
    cr_assert_eq(nrecs, 3);
    const CUpti_ActivityExternalCorrelation *e0 = (const void *)recs[0], *e1 = (const void *)recs[1];
    cr_assert_eq(e0->kind, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
    cr_assert_eq(e0->externalKind, CUPTI_EXTERNAL_CORRELATION_KIND_UNKNOWN);
    cr_assert_eq(e0->externalId, 5);
    cr_assert_eq(e0->correlationId, call.correlation);
    cr_assert_eq(e1->externalKind, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0);
    cr_assert_eq(e1->externalId, 78, "the innermost pushed id");
    cr_assert_eq(e1->correlationId, call.correlation);
    cr_assert_eq(recs[2]->kind, CUPTI_ACTIVITY_KIND_RUNTIME, "the API record follows");
}

Test(cupti, activity_kinds)
{
    cr_assert_eq(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_INVALID), CUPTI_ERROR_INVALID_KIND);
    cr_assert_eq(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_COUNT), CUPTI_ERROR_INVALID_KIND);
    cr_assert_eq(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONTEXT), CUPTI_ERROR_NOT_COMPATIBLE);
    cr_assert_eq(cuptiActivityFlushAll(0), CUPTI_ERROR_INVALID_OPERATION, "no callbacks registered");

    /* KERNEL alone: the device's concurrent-kernel record arrives as a KERNEL record. */
    start_activity(CUPTI_ACTIVITY_KIND_KERNEL);
    cr_assert(observer->wants(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    inject_done(5);
    cr_assert_eq(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_KERNEL), CUPTI_SUCCESS);
    inject_done(6); /* disabled: not recorded */
    cr_assert_eq(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
    collect();
    cr_assert_eq(nrecs, 1);
    cr_assert_eq(recs[0]->kind, CUPTI_ACTIVITY_KIND_KERNEL);
    cr_assert_eq(((CUpti_ActivityKernel10 *)recs[0])->correlationId, 5);
}

static int other_completed_calls;
static void CUPTIAPI other_completed(CUcontext c, uint32_t s, uint8_t *b, size_t size, size_t valid)
{
    other_completed_calls++;
}

Test(cupti, later_callbacks_replace_earlier)
{
    cr_assert_eq(cuptiActivityRegisterCallbacks(requested, other_completed), CUPTI_SUCCESS);
    start_activity(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL); /* registers `completed` */
    inject_done(1);
    cr_assert_eq(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
    cr_assert_eq(other_completed_calls, 0);
    cr_assert_eq(delivered(), 1);
    cr_assert_eq(cuptiActivityRegisterCallbacks(NULL, completed), CUPTI_ERROR_INVALID_PARAMETER);
}

struct producer { uint32_t first; };
static void *produce(void *arg)
{
    const struct producer *p = arg;
    for (uint32_t i = 0; i < 1000; i++)
        inject_done(p->first + i);
    return NULL;
}

Test(cupti, concurrent_producers_lose_nothing)
{
    start_activity(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    pthread_t t[4];
    struct producer p[4];
    for (int i = 0; i < 4; i++) {
        p[i].first = 1 + (uint32_t)i * 1000;
        pthread_create(&t[i], NULL, produce, &p[i]);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    cr_assert_eq(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
    collect();
    cr_assert_eq(nrecs, 4000);
    static unsigned char hit[4001];
    for (int i = 0; i < nrecs; i++) {
        uint32_t c = ((CUpti_ActivityKernel10 *)recs[i])->correlationId;
        cr_assert(c >= 1 && c <= 4000 && !hit[c], "correlation %u once", c);
        hit[c] = 1;
    }
    size_t dropped = 1;
    cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped);
    cr_assert_eq(dropped, 0);
}

Test(cupti, finalize_gives_everything_back)
{
    setenv("ANATOMIST_SIM_CUPTI_LATE", "1", 1);
    CUpti_SubscriberHandle s, s2;
    cr_assert_eq(cuptiSubscribe(&s, NULL, NULL), CUPTI_SUCCESS);
    start_activity(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    inject_done(1);
    cr_assert_eq(cuptiFinalize(), CUPTI_SUCCESS);
    cr_assert_eq(delivered(), 1, "held buffers are delivered");
    cr_assert_null(observer, "detached from the device");
    cr_assert_eq(cuptiSubscribe(&s2, NULL, NULL), CUPTI_SUCCESS, "the subscriber was released");
    cr_assert_eq(cuptiActivityFlushAll(0), CUPTI_ERROR_INVALID_OPERATION, "callbacks forgotten");
}

/* ---- small entry points ---------------------------------------------------------------- */

Test(cupti, results_version_attributes)
{
    const char *s = NULL;
    cr_assert_eq(cuptiGetResultString(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, &s), 0);
    cr_assert_str_eq(s, "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED");
    cr_assert_eq(cuptiGetResultString(CUPTI_ERROR_UNKNOWN, &s), 0);
    cr_assert_str_eq(s, "CUPTI_ERROR_UNKNOWN");
    cr_assert_eq(cuptiGetResultString((CUptiResult)1000, &s), CUPTI_ERROR_INVALID_PARAMETER);

    uint32_t v = 0;
    cr_assert_eq(cuptiGetVersion(&v), 0);
    cr_assert_eq(v, 130001);

    size_t value = 0, size = sizeof value;
    cr_assert_eq(cuptiActivityGetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &size, &value), 0);
    cr_assert_eq(value, 3200000);
    value = 1 << 20;
    cr_assert_eq(cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &size, &value), 0);
    value = 0;
    cuptiActivityGetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &size, &value);
    cr_assert_eq(value, 1 << 20);
    size = 1;
    cr_assert_eq(cuptiActivityGetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &size, &value),
                 CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT);

    uint32_t id = 0;
    cr_assert_eq(cuptiGetContextId((CUcontext)(void *)&v, &id), 0);
    cr_assert_eq(id, 1);
}
