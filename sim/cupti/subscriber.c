/*
 * subscriber.c — CUPTI results and the callback API of the sim's libcupti.so.13.
 *
 * One subscriber at a time, as with NVIDIA's CUPTI: a second cuptiSubscribe gets
 * CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED until the first unsubscribes. Each
 * subscription gets its own handle; a handle is never freed (a callback may still be
 * running on another thread when its subscriber leaves), so a stale handle is recognised
 * and refused with CUPTI_ERROR_INVALID_PARAMETER.
 *
 * Enable state is a bitmap of atomics per (domain, cbid): the API path reads it without a
 * lock. Callbacks run on the thread that made the API call, with no lock of ours held.
 */
#include "cupti_sim.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CBID 1024
#define WORDS    (MAX_CBID / 64)

_Static_assert(CUPTI_RUNTIME_TRACE_CBID_SIZE <= MAX_CBID, "runtime cbids");
_Static_assert(CUPTI_DRIVER_TRACE_CBID_SIZE <= MAX_CBID, "driver cbids");

struct CUpti_Subscriber_st {
    CUpti_CallbackFunc callback;
    void *userdata;
    atomic_int active;
    char name[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN];
    struct CUpti_Subscriber_st *older; /* every handle ever made, kept reachable */
    _Atomic uint64_t enabled[CUPTI_CB_DOMAIN_SIZE][WORDS];
};

static pthread_mutex_t sub_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(struct CUpti_Subscriber_st *) current;
static struct CUpti_Subscriber_st *handles; /* under sub_lock */
static __thread CUptiResult tls_last_error;

/* ---- results ------------------------------------------------------------------- */

CUptiResult ana_cupti_ret(CUptiResult r)
{
    if (r != CUPTI_SUCCESS)
        tls_last_error = r;
    return r;
}

#define R(name) [name] = #name
static const char *const result_names[] = {
    R(CUPTI_SUCCESS), R(CUPTI_ERROR_INVALID_PARAMETER), R(CUPTI_ERROR_INVALID_DEVICE),
    R(CUPTI_ERROR_INVALID_CONTEXT), R(CUPTI_ERROR_INVALID_EVENT_DOMAIN_ID),
    R(CUPTI_ERROR_INVALID_EVENT_ID), R(CUPTI_ERROR_INVALID_EVENT_NAME),
    R(CUPTI_ERROR_INVALID_OPERATION), R(CUPTI_ERROR_OUT_OF_MEMORY), R(CUPTI_ERROR_HARDWARE),
    R(CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT), R(CUPTI_ERROR_API_NOT_IMPLEMENTED),
    R(CUPTI_ERROR_MAX_LIMIT_REACHED), R(CUPTI_ERROR_NOT_READY), R(CUPTI_ERROR_NOT_COMPATIBLE),
    R(CUPTI_ERROR_NOT_INITIALIZED), R(CUPTI_ERROR_INVALID_METRIC_ID),
    R(CUPTI_ERROR_INVALID_METRIC_NAME), R(CUPTI_ERROR_QUEUE_EMPTY),
    R(CUPTI_ERROR_INVALID_HANDLE), R(CUPTI_ERROR_INVALID_STREAM), R(CUPTI_ERROR_INVALID_KIND),
    R(CUPTI_ERROR_INVALID_EVENT_VALUE), R(CUPTI_ERROR_DISABLED), R(CUPTI_ERROR_INVALID_MODULE),
    R(CUPTI_ERROR_INVALID_METRIC_VALUE), R(CUPTI_ERROR_HARDWARE_BUSY),
    R(CUPTI_ERROR_NOT_SUPPORTED), R(CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED),
    R(CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_DEVICE),
    R(CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_NON_P2P_DEVICES),
    R(CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_WITH_MPS), R(CUPTI_ERROR_CDP_TRACING_NOT_SUPPORTED),
    R(CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED), R(CUPTI_ERROR_CUDA_COMPILER_NOT_COMPATIBLE),
    R(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES), R(CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED),
    R(CUPTI_ERROR_OPENACC_UNDEFINED_ROUTINE), R(CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED),
    R(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED),
    R(CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES),
    R(CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED), R(CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED),
    R(CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED), R(CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED),
    R(CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED), R(CUPTI_ERROR_INVALID_CHIP_NAME),
};
#undef R

ANA_CUPTI_API CUptiResult cuptiGetResultString(CUptiResult result, const char **str)
{
    const char *name = NULL;
    if ((size_t)result < sizeof result_names / sizeof *result_names)
        name = result_names[result];
    else if (result == CUPTI_ERROR_UNKNOWN)
        name = "CUPTI_ERROR_UNKNOWN";
    if (!str || !name)
        return ana_cupti_ret(CUPTI_ERROR_INVALID_PARAMETER);
    *str = name;
    return CUPTI_SUCCESS;
}

ANA_CUPTI_API CUptiResult cuptiGetLastError(void)
{
    CUptiResult r = tls_last_error;
    tls_last_error = CUPTI_SUCCESS;
    return r;
}

ANA_CUPTI_API CUptiResult cuptiGetVersion(uint32_t *version)
{
    if (!version)
        return ana_cupti_ret(CUPTI_ERROR_INVALID_PARAMETER);
    *version = CUPTI_API_VERSION;
    return CUPTI_SUCCESS;
}

/* ---- contexts: the sim has one device and one (primary) context ---------------- */

static struct { int primary; } context_stand_in;

CUcontext ana_cupti_context(void) { return (CUcontext)(void *)&context_stand_in; }

ANA_CUPTI_API CUptiResult cuptiGetContextId(CUcontext context, uint32_t *contextId)
{
    if (!contextId)
        return ana_cupti_ret(CUPTI_ERROR_INVALID_PARAMETER);
    if (!context)
        return ana_cupti_ret(CUPTI_ERROR_INVALID_CONTEXT);
    *contextId = 1;
    return CUPTI_SUCCESS;
}

ANA_CUPTI_API CUptiResult cuptiGetDeviceId(CUcontext context, uint32_t *deviceId)
{
    if (!deviceId)
        return ana_cupti_ret(CUPTI_ERROR_INVALID_PARAMETER);
    *deviceId = 0;
    return CUPTI_SUCCESS;
}

/* ---- subscribe / unsubscribe ---------------------------------------------------- */

static CUptiResult subscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
                             void *userdata, const char *name, char *old, size_t old_size)
{
    if (!subscriber)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&sub_lock);
    struct CUpti_Subscriber_st *cur = atomic_load(&current);
    if (cur) {
        if (old && old_size)
            snprintf(old, old_size, "%s", cur->name);
        pthread_mutex_unlock(&sub_lock);
        return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    }
    struct CUpti_Subscriber_st *s = calloc(1, sizeof *s);
    if (!s) {
        pthread_mutex_unlock(&sub_lock);
        return CUPTI_ERROR_OUT_OF_MEMORY;
    }
    s->callback = callback;
    s->userdata = userdata;
    snprintf(s->name, sizeof s->name, "CUPTI for %.*s", CUPTI_SUBSCRIBER_NAME_MAX_LEN,
             name ? name : "");
    atomic_store(&s->active, 1);
    s->older = handles;
    handles = s;
    atomic_store(&current, s);
    pthread_mutex_unlock(&sub_lock);
    *subscriber = s;
    ana_cupti_attach();
    return CUPTI_SUCCESS;
}

ANA_CUPTI_API CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *subscriber,
                                         CUpti_CallbackFunc callback, void *userdata)
{
    anasim_note_init("cuptiSubscribe"); /* CUPTI initialises the driver */
    return ana_cupti_ret(subscribe(subscriber, callback, userdata, NULL, NULL, 0));
}

ANA_CUPTI_API CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle *subscriber,
                                            CUpti_CallbackFunc callback, void *userdata,
                                            CUpti_SubscriberParams *pParams)
{
    anasim_note_init("cuptiSubscribe_v2");
    if (pParams && pParams->structSize == 0)
        return ana_cupti_ret(CUPTI_ERROR_INVALID_PARAMETER);
    if (!pParams)
        return ana_cupti_ret(subscribe(subscriber, callback, userdata, NULL, NULL, 0));
    return ana_cupti_ret(subscribe(subscriber, callback, userdata, pParams->subscriberName,
                                   pParams->oldSubscriberName, pParams->oldSubscriberSize));
}

static int is_current(CUpti_SubscriberHandle s)
{
    return s && s == atomic_load(&current) && atomic_load(&s->active);
}

ANA_CUPTI_API CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle subscriber)
{
    pthread_mutex_lock(&sub_lock);
    int ok = is_current(subscriber);
    if (ok) {
        atomic_store(&subscriber->active, 0);
        atomic_store(&current, NULL);
    }
    pthread_mutex_unlock(&sub_lock);
    return ok ? CUPTI_SUCCESS : ana_cupti_ret(CUPTI_ERROR_INVALID_PARAMETER);
}

void ana_cupti_subscriber_reset(void)
{
    pthread_mutex_lock(&sub_lock);
    struct CUpti_Subscriber_st *s = atomic_exchange(&current, NULL);
    if (s)
        atomic_store(&s->active, 0);
    pthread_mutex_unlock(&sub_lock);
}

/* ---- enable state ---------------------------------------------------------------- */

/* Number of callback ids of a domain (ids 1 .. size-1 are valid); 0 for a bad domain. */
static uint32_t domain_size(CUpti_CallbackDomain domain)
{
    switch (domain) {
    case CUPTI_CB_DOMAIN_DRIVER_API:  return CUPTI_DRIVER_TRACE_CBID_SIZE;
    case CUPTI_CB_DOMAIN_RUNTIME_API: return CUPTI_RUNTIME_TRACE_CBID_SIZE;
    case CUPTI_CB_DOMAIN_RESOURCE:    return CUPTI_CBID_RESOURCE_SIZE;
    case CUPTI_CB_DOMAIN_SYNCHRONIZE: return CUPTI_CBID_SYNCHRONIZE_SIZE;
    case CUPTI_CB_DOMAIN_NVTX:        return CUPTI_CBID_NVTX_SIZE;
    case CUPTI_CB_DOMAIN_STATE:       return CUPTI_CBID_STATE_SIZE;
    default:                          return 0;
    }
}

static void set_bit(CUpti_SubscriberHandle s, CUpti_CallbackDomain d, uint32_t cbid, int on)
{
    uint64_t m = 1ull << (cbid % 64);
    if (on)
        atomic_fetch_or(&s->enabled[d][cbid / 64], m);
    else
        atomic_fetch_and(&s->enabled[d][cbid / 64], ~m);
}

static int get_bit(CUpti_SubscriberHandle s, CUpti_CallbackDomain d, uint32_t cbid)
{
    return (atomic_load(&s->enabled[d][cbid / 64]) >> (cbid % 64)) & 1;
}

static int valid_cbid(CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    return cbid > 0 && cbid < domain_size(domain);
}

ANA_CUPTI_API CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                              CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    if (!is_current(subscriber) || !valid_cbid(domain, cbid))
        return ana_cupti_ret(CUPTI_ERROR_INVALID_PARAMETER);
    set_bit(subscriber, domain, cbid, enable != 0);
    return CUPTI_SUCCESS;
}

ANA_CUPTI_API CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                            CUpti_CallbackDomain domain)
{
    uint32_t n = domain_size(domain);
    if (!is_current(subscriber) || n == 0)
        return ana_cupti_ret(CUPTI_ERROR_INVALID_PARAMETER);
    for (uint32_t cbid = 1; cbid < n; cbid++)
        set_bit(subscriber, domain, cbid, enable != 0);
    return CUPTI_SUCCESS;
}

ANA_CUPTI_API CUptiResult cuptiEnableAllDomains(uint32_t enable, CUpti_SubscriberHandle subscriber)
{
    if (!is_current(subscriber))
        return ana_cupti_ret(CUPTI_ERROR_INVALID_PARAMETER);
    for (int d = CUPTI_CB_DOMAIN_INVALID + 1; d < CUPTI_CB_DOMAIN_SIZE; d++)
        cuptiEnableDomain(enable, subscriber, (CUpti_CallbackDomain)d);
    return CUPTI_SUCCESS;
}

ANA_CUPTI_API CUptiResult cuptiGetCallbackState(uint32_t *enable, CUpti_SubscriberHandle subscriber,
                                                CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    if (!enable || !is_current(subscriber) || !valid_cbid(domain, cbid))
        return ana_cupti_ret(CUPTI_ERROR_INVALID_PARAMETER);
    *enable = get_bit(subscriber, domain, cbid);
    return CUPTI_SUCCESS;
}

/* ---- the API path ----------------------------------------------------------------- */

void ana_cupti_callback_dispatch(int exit_site, anasim_api *call)
{
    struct CUpti_Subscriber_st *s = atomic_load(&current);
    if (!s || !s->callback || !valid_cbid(call->domain, call->cbid) ||
        !get_bit(s, call->domain, call->cbid))
        return;
    CUpti_CallbackData data = {
        .callbackSite = exit_site ? CUPTI_API_EXIT : CUPTI_API_ENTER,
        .functionName = call->name,
        .functionParams = call->params,
        .functionReturnValue = (void *)call->ret,
        .symbolName = NULL,
        .context = ana_cupti_context(),
        .contextUid = 1,
        .correlationData = &call->correlation_data,
        .correlationId = call->correlation,
    };
    s->callback(s->userdata, call->domain, call->cbid, &data);
}
