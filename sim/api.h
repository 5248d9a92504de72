/*
 * api.h — brackets a runtime entry point as one API call for the sim's CUPTI (anasim.h).
 *
 * ANA_SIM_TRACED(fn, ver, expr, args...) fills fn_ver_params (generated_cuda_runtime_api_
 * meta.h) with args, reports the call to the observer at entry (which gives it its
 * correlation id), evaluates expr (the call's body, a cudaError_t), records it as the
 * thread's last error (ana_sim_ret), reports the exit with the result and returns it. It
 * must be the last statement of the entry point:
 *
 *     ANA_SIM_API cudaError_t cudaMemset(void *devPtr, int value, size_t count)
 *     {
 *         ANA_SIM_TRACED(cudaMemset, v3020, set(...), devPtr, value, count);
 *     }
 *
 * The callback id is CUPTI_RUNTIME_TRACE_CBID_<fn>_<ver> and the reported name "<fn>".
 * Call it without the device lock held: the observer runs inside anasim_api_enter/exit.
 * The nvcc registration calls (__cudaRegister*, __cudaPush/PopCallConfiguration,
 * __cudaGetKernel) are not API calls for CUPTI and are not traced.
 */
#ifndef ANA_SIM_API_TRACE_H
#define ANA_SIM_API_TRACE_H

#include "sim.h"      /* ANA_SIM_RT_RETURN; <cupti.h>: the cbids and the params structs */

#define ANA_SIM_TRACED(fn, ver, expr, ...)                                             \
    do {                                                                               \
        fn##_##ver##_params ana_params_ = { __VA_ARGS__ };                             \
        ANA_SIM_RT_RETURN(fn, ver, &ana_params_, expr);                                \
    } while (0)

#endif /* ANA_SIM_API_TRACE_H */
