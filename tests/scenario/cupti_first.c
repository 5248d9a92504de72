/* cupti_first.c — a CUPTI client that subscribes before its first CUDA call, as a tool
 * such as Nsight Systems is there before the program starts. It counts its own callbacks
 * for cudaMalloc and makes N cudaMalloc + cudaFree pairs (N = argv[1], default 3).
 * Prints `ledger {"mallocs":N,"callbacks":M,"subscribe":R}`; exits 1 on a CUDA error. */
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>

static int callbacks;

static void CUPTIAPI on_call(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const void *data)
{
    (void)ud, (void)dom, (void)cbid;
    if (((const CUpti_CallbackData *)data)->callbackSite == CUPTI_API_ENTER)
        callbacks++;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 3;
    CUpti_SubscriberHandle s;
    CUptiResult r = cuptiSubscribe(&s, on_call, NULL);
    if (r == CUPTI_SUCCESS)
        r = cuptiEnableCallback(1, s, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020);
    for (int i = 0; i < n; i++) {
        void *p;
        if (cudaMalloc(&p, (size_t)(i + 1) << 20) != cudaSuccess || cudaFree(p) != cudaSuccess) {
            fprintf(stderr, "cupti_first: a CUDA call failed\n");
            return 1;
        }
    }
    printf("ledger {\"mallocs\":%d,\"callbacks\":%d,\"subscribe\":%d}\n", n, callbacks, (int)r);
    return 0;
}
