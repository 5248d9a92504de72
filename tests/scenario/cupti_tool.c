/* cupti_tool.c — a second tool's LD_PRELOAD library that becomes CUPTI's subscriber in its
 * constructor, before the program (and so the profiler's session, which starts at the
 * first CUDA call) runs: as a vendor's tracer or a sanitizer shim would be there first.
 *
 * It counts the runtime-API callbacks it gets for cudaMalloc (entries only) and for
 * cudaLaunchKernel, and at exit writes one line to the file named by ANA_TEST_TOOL_OUT:
 * `tool {"subscribe":R,"mallocs":M,"launches":L}` (R: cuptiSubscribe's result, 0 on
 * success). It writes nothing to the program's stdout or stderr, so that the program's
 * own output can be compared byte for byte with a run without any tool. */
#include <cupti.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static CUptiResult subscribed = CUPTI_ERROR_UNKNOWN;
static CUpti_SubscriberHandle sub;
static atomic_int mallocs, launches;

static void CUPTIAPI ana_tool_on_call(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid,
                                      const void *data)
{
    (void)ud;
    if (dom != CUPTI_CB_DOMAIN_RUNTIME_API ||
        ((const CUpti_CallbackData *)data)->callbackSite != CUPTI_API_ENTER)
        return;
    if (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020)
        atomic_fetch_add(&mallocs, 1);
    else if (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000)
        atomic_fetch_add(&launches, 1);
}

__attribute__((constructor)) static void ana_tool_start(void)
{
    subscribed = cuptiSubscribe(&sub, ana_tool_on_call, NULL);
    if (subscribed == CUPTI_SUCCESS)
        subscribed = cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API);
}

__attribute__((destructor)) static void ana_tool_stop(void)
{
    const char *path = getenv("ANA_TEST_TOOL_OUT");
    FILE *f = path ? fopen(path, "w") : NULL;
    if (subscribed == CUPTI_SUCCESS)
        cuptiUnsubscribe(sub);
    if (!f)
        return;
    fprintf(f, "tool {\"subscribe\":%d,\"mallocs\":%d,\"launches\":%d}\n", (int)subscribed,
            atomic_load(&mallocs), atomic_load(&launches));
    fclose(f);
}
