/* library.c — the loaded libcupti.so.13: finding and loading it, its entry points
 * (ana_cupti_fn), and the state of our collection (ana_cupti_state) that the callback and
 * the collector both read (cupti_int.h). Called by cupti.c (loading, state changes),
 * calls.c and callback.c; calls only the core's real-symbol lookup. */
#define _GNU_SOURCE
#include "cupti_int.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

ana_cupti_fns ana_cupti_fn;
_Atomic int ana_cupti_state = ANA_CUPTI_OFF;

const char *ana_cupti_err_name(CUptiResult r)
{
    const char *s = NULL;
    if (ana_cupti_fn.result_string && ana_cupti_fn.result_string(r, &s) == CUPTI_SUCCESS && s)
        return s;
    return r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ? "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
                                                               : "CUPTI_ERROR_UNKNOWN";
}

void *ana_cupti_lib_open(char *why, size_t cap)
{
    void *h = dlopen("libcupti.so.13", RTLD_NOW | RTLD_LOCAL);
    if (h)
        return h;
    const char *err = dlerror();
    snprintf(why, cap, "%s", err ? err : "libcupti.so.13 could not be loaded");
    const char *home = getenv("CUDA_HOME");
    if (!home || !*home)
        return NULL;
    const char *rel[] = { "extras/CUPTI/lib64/libcupti.so.13", "lib64/libcupti.so.13" };
    for (size_t i = 0; i < 2 && !h; i++) {
        char path[1100];
        snprintf(path, sizeof(path), "%s/%s", home, rel[i]);
        h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    }
    return h;
}

#define RESOLVE(field, name)                                           \
    if (!(*(void **)&ana_cupti_fn.field = ana_real_dlsym(lib, name))) \
        return name;

/* The name of the first entry point missing, or NULL when all were found. */
const char *ana_cupti_lib_resolve(void *lib)
{
    RESOLVE(subscribe, "cuptiSubscribe");
    RESOLVE(unsubscribe, "cuptiUnsubscribe");
    RESOLVE(enable_callback, "cuptiEnableCallback");
    RESOLVE(enable, "cuptiActivityEnable");
    RESOLVE(disable, "cuptiActivityDisable");
    RESOLVE(register_callbacks, "cuptiActivityRegisterCallbacks");
    RESOLVE(register_timestamp, "cuptiActivityRegisterTimestampCallback");
    RESOLVE(flush_all, "cuptiActivityFlushAll");
    RESOLVE(next_record, "cuptiActivityGetNextRecord");
    RESOLVE(dropped, "cuptiActivityGetNumDroppedRecords");
    RESOLVE(get_timestamp, "cuptiGetTimestamp");
    RESOLVE(result_string, "cuptiGetResultString");
    *(void **)&ana_cupti_fn.subscribe_v2 = ana_real_dlsym(lib, "cuptiSubscribe_v2"); /* optional */
    return NULL;
}
