// cupti_user — a program that is itself a CUPTI client, set up the way the PyTorch
// profiler (Kineto) sets CUPTI up: activity buffers with cuptiActivityRegisterCallbacks,
// kernel activity records with cuptiActivityEnable(CONCURRENT_KERNEL), and a subscriber
// (cuptiSubscribe) whose runtime-API callback counts kernel launches. Used to check that
// the profiler never breaks another CUPTI user in the same process.
//
// The work is two phases: A (cudaMalloc, cudaMemset, 3 launches, synchronize) and B
// (4 launches, synchronize). CUPTI is set up before phase A (--when early: before the
// process's first CUDA call) or between the phases (--when late). Then CUPTI's buffers
// are flushed and the program counts what it received: kernel records (from the
// buffers) and launch callbacks (API entries). On a GPU both equal the launches made
// after set-up. The ledger (launches before and after set-up, records, callbacks, and
// the CUPTI result of every set-up and tear-down call, as numbers) is the last stdout
// line. Any CUPTI error is printed with cuptiGetResultString; the program then prints
// the ledger and exits 1.
//
//   cupti_user [--when early|late] [--check]     default: early
//
// --check verifies the kernels' result (meaningful on a real GPU only: the simulated
// device does not execute kernels). Links libcupti.so.13: NVIDIA's on a GPU machine,
// the simulated one (build/sim) on the simulated device.
#include <cuda_runtime.h>
#include <cupti.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sample_common.h"

#define N 4096
#define BUF_BYTES (1 << 20)  // one activity buffer

// ---------------------------------------------------------------- the ledger

// The CUPTI calls whose results the ledger keeps, in the order they are made.
enum { REGISTER, ENABLE_ACTIVITY, SUBSCRIBE, ENABLE_CALLBACK, FLUSH, DISABLE_ACTIVITY,
       UNSUBSCRIBE, NCALLS };
static const char *call_name[NCALLS] = {
    "cuptiActivityRegisterCallbacks", "cuptiActivityEnable", "cuptiSubscribe",
    "cuptiEnableCallback", "cuptiActivityFlushAll", "cuptiActivityDisable",
    "cuptiUnsubscribe"};

// The launch entry points a <<<>>> or an explicit launch can go through; Kineto
// enables these so that every launch is seen, however it was made.
static const CUpti_CallbackId launch_cbids[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
};
#define NCBIDS (int)(sizeof launch_cbids / sizeof launch_cbids[0])

static struct {
    const char *when;
    int launches_before_setup, launches_after_setup, setup_done;
    int results[NCALLS];  // -1: not called
    int enable_callback_results[NCBIDS];
    // Written by CUPTI's callbacks, possibly on CUPTI's own threads.
    long kernel_records, our_kernel_records, callbacks, buffers, dropped;
} ledger;

static void print_ledger(void)
{
    printf("ledger {\"when\":\"%s\",\"launches_before_setup\":%d,\"launches_after_setup\":%d,"
           "\"kernel_records\":%ld,\"our_kernel_records\":%ld,\"callbacks_seen\":%ld,"
           "\"buffers_completed\":%ld,\"dropped_records\":%ld,\"results\":{",
           ledger.when, ledger.launches_before_setup, ledger.launches_after_setup,
           __atomic_load_n(&ledger.kernel_records, __ATOMIC_SEQ_CST),
           __atomic_load_n(&ledger.our_kernel_records, __ATOMIC_SEQ_CST),
           __atomic_load_n(&ledger.callbacks, __ATOMIC_SEQ_CST),
           __atomic_load_n(&ledger.buffers, __ATOMIC_SEQ_CST),
           __atomic_load_n(&ledger.dropped, __ATOMIC_SEQ_CST));
    for (int i = 0; i < NCALLS; i++)
        printf("%s\"%s\":%d", i ? "," : "", call_name[i], ledger.results[i]);
    printf("},\"cuptiEnableCallback_each\":[");
    for (int i = 0; i < NCBIDS; i++)
        printf("%s%d", i ? "," : "", ledger.enable_callback_results[i]);
    printf("]}\n");
    fflush(stdout);
}

// Keeps the result of CUPTI call `id`; on an error, explains it and exits 1.
static void cupti_result(int id, CUptiResult r)
{
    if (ledger.results[id] <= 0)  // keep the first failure of a repeated call
        ledger.results[id] = (int)r;
    if (r == CUPTI_SUCCESS)
        return;
    const char *msg = NULL;
    if (cuptiGetResultString(r, &msg) != CUPTI_SUCCESS || !msg)
        msg = "(no description)";
    fprintf(stderr, "cupti_user: %s failed: %d %s\n", call_name[id], (int)r, msg);
    print_ledger();
    exit(1);
}

// ---------------------------------------------------------------- CUPTI callbacks

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *buffer = (uint8_t *)aligned_alloc(8, BUF_BYTES);  // CUPTI wants 8-byte alignment
    *size = *buffer ? BUF_BYTES : 0;
    *max_records = 0;  // as many as fit
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer,
                                      size_t size, size_t valid)
{
    CUpti_Activity *rec = NULL;
    while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
        if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
            continue;
        const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
        __atomic_add_fetch(&ledger.kernel_records, 1, __ATOMIC_SEQ_CST);
        if (k->name && (!strcmp(k->name, "inc") || !strcmp(k->name, "twice")))
            __atomic_add_fetch(&ledger.our_kernel_records, 1, __ATOMIC_SEQ_CST);
    }
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS)
        __atomic_add_fetch(&ledger.dropped, (long)dropped, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&ledger.buffers, 1, __ATOMIC_SEQ_CST);
    free(buffer);
}

static void CUPTIAPI on_runtime_api(void *userdata, CUpti_CallbackDomain domain,
                                    CUpti_CallbackId cbid, const void *cbdata)
{
    const CUpti_CallbackData *d = (const CUpti_CallbackData *)cbdata;
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && d->callbackSite == CUPTI_API_ENTER)
        __atomic_add_fetch(&ledger.callbacks, 1, __ATOMIC_SEQ_CST);
}

static CUpti_SubscriberHandle subscriber;

static void setup_cupti(void)
{
    cupti_result(REGISTER, cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
    cupti_result(ENABLE_ACTIVITY, cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    cupti_result(SUBSCRIBE, cuptiSubscribe(&subscriber, on_runtime_api, NULL));
    for (int i = 0; i < NCBIDS; i++) {
        CUptiResult r = cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API,
                                            launch_cbids[i]);
        ledger.enable_callback_results[i] = (int)r;
        cupti_result(ENABLE_CALLBACK, r);
    }
    ledger.setup_done = 1;
}

// ---------------------------------------------------------------- kernels and phases

extern "C" __global__ void inc(int *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] += 1;
}

extern "C" __global__ void twice(int *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] *= 2;
}

#define LAUNCH(kernel, grid, block, ...)                                             \
    do {                                                                             \
        kernel<<<(grid), (block)>>>(__VA_ARGS__);                                    \
        CUDA_CHECK(cudaGetLastError());                                              \
        *(ledger.setup_done ? &ledger.launches_after_setup                           \
                            : &ledger.launches_before_setup) += 1;                   \
    } while (0)

static int *x;

static void phase_a(void)  // x = 0; x += 1; x += 1; x *= 2  -> 4
{
    CUDA_CHECK(cudaMalloc((void **)&x, N * sizeof(int)));
    CUDA_CHECK(cudaMemset(x, 0, N * sizeof(int)));
    LAUNCH(inc, N / 256, 256, x, N);
    LAUNCH(inc, N / 128, 128, x, N);
    LAUNCH(twice, N / 64, 64, x, N);
    CUDA_CHECK(cudaDeviceSynchronize());
}

static void phase_b(void)  // x += 1; x *= 2; x += 1; x *= 2  -> 22
{
    LAUNCH(inc, N / 256, 256, x, N);
    LAUNCH(twice, N / 256, 256, x, N);
    LAUNCH(inc, N / 512, 512, x, N);
    LAUNCH(twice, N / 32, 32, x, N);
    CUDA_CHECK(cudaDeviceSynchronize());
}

static int check_x(void)
{
    static int h[N];
    int bad = 0;
    CUDA_CHECK(cudaMemcpy(h, x, sizeof h, cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; i++)
        bad += h[i] != 22;
    printf("check %s: %d wrong elements\n", bad ? "FAILED" : "passed", bad);
    return bad != 0;
}

int main(int argc, char **argv)
{
    int late = 0, check = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--check"))
            check = 1;
        else if (!strcmp(argv[i], "--when") && i + 1 < argc &&
                 (!strcmp(argv[i + 1], "early") || !strcmp(argv[i + 1], "late")))
            late = !strcmp(argv[++i], "late");
        else
            fatal("usage: cupti_user [--when early|late] [--check]");
    }
    ledger.when = late ? "late" : "early";
    for (int i = 0; i < NCALLS; i++)
        ledger.results[i] = -1;
    for (int i = 0; i < NCBIDS; i++)
        ledger.enable_callback_results[i] = -1;

    if (!late)
        setup_cupti();  // before the first CUDA call of the process
    phase_a();
    if (late)
        setup_cupti();  // after allocations and launches
    phase_b();

    cupti_result(FLUSH, cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    int failures = check ? check_x() : 0;
    cupti_result(DISABLE_ACTIVITY, cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    cupti_result(UNSUBSCRIBE, cuptiUnsubscribe(subscriber));
    CUDA_CHECK(cudaFree(x));
    print_ledger();
    return failures ? 1 : 0;
}
