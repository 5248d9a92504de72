/*
 * anasim.h — the private interface between the simulated CUDA libraries.
 *
 * The simulated device (memory and its capacity, streams, device clocks, kernels, graphs,
 * correlation ids) lives in the sim's libcudart.so.13. The sim's libcuda.so.1 (driver
 * API) and libcupti.so.13 (CUPTI) link to it and reach the device through the functions
 * below, exported by libcudart.so.13 under the version node ANASIM_PRIVATE. Nothing
 * outside sim/ may use them: on a machine with a GPU these libraries are NVIDIA's.
 *
 * Correlation: every runtime or driver API call the sim answers is bracketed by
 * anasim_api_enter()/anasim_api_exit(). The outermost call on a thread gets a new
 * correlation id (1, 2, 3, ... process-wide); calls nested in it (the runtime's own driver
 * calls) share its id, as with NVIDIA's CUPTI. Every activity the device produces while a
 * call is in flight carries that id; kernels, copies and sets replayed by a graph launch
 * carry the id of the cudaGraphLaunch/cuGraphLaunch call.
 *
 * Thread-safety: all functions are thread-safe. Observer callbacks run on the thread that
 * made the API call, without the device lock held, and may call back into the sim.
 */
#ifndef ANASIM_H
#define ANASIM_H

#include <cupti.h>
#include <stdint.h>

#define ANASIM_PRIVATE_API __attribute__((visibility("default")))

/* One API call in flight. The caller fills domain, cbid, name, params and ret; enter sets
 * correlation. */
typedef struct anasim_api {
    CUpti_CallbackDomain domain; /* CUPTI_CB_DOMAIN_RUNTIME_API or CUPTI_CB_DOMAIN_DRIVER_API */
    CUpti_CallbackId cbid;       /* cupti_runtime_cbid.h / cupti_driver_cbid.h */
    const char *name;            /* the API's name, "cudaMalloc" */
    const void *params;          /* its <name>_params struct (generated_cuda*_meta.h), or NULL */
    const void *ret;             /* the cudaError_t / CUresult it returns; valid at exit */
    uint32_t correlation;        /* set by anasim_api_enter */
    int nested;                  /* set by anasim_api_enter: 1 inside another call */
    uint64_t correlation_data;   /* CUpti_CallbackData.correlationData, kept enter..exit */
} anasim_api;

/* The observer libcupti.so.13 registers. `activity` receives a complete record in the
 * exact CUDA 13 structure of its kind (CUpti_ActivityKernel10, CUpti_ActivityMemcpy6,
 * CUpti_ActivityMemcpyPtoP4, CUpti_ActivityMemset4, CUpti_ActivityMemory4,
 * CUpti_ActivityMemoryPool3), with timestamps on the device clock (CLOCK_MONOTONIC ns);
 * the observer converts them to its client's time base. `wants` lets the device skip
 * building records nobody enabled. */
typedef struct anasim_observer {
    void (*api)(int exit_site, anasim_api *call); /* 0 at entry, 1 at exit */
    int (*wants)(CUpti_ActivityKind kind);
    void (*activity)(const CUpti_Activity *rec);
} anasim_observer;

/* Registers (or, with NULL, removes) the one observer. */
ANASIM_PRIVATE_API void anasim_set_observer(const anasim_observer *obs);
ANASIM_PRIVATE_API void anasim_api_enter(anasim_api *call);
ANASIM_PRIVATE_API void anasim_api_exit(anasim_api *call);
/* The device clock now (CLOCK_MONOTONIC ns). */
ANASIM_PRIVATE_API uint64_t anasim_now_ns(void);

#endif /* ANASIM_H */
