/* activity.h — the CUPTI activity and callback collector (cupti/), as the preload's top
 * (lifecycle.c) starts it. libcupti.so.13 is loaded with dlopen, never linked; without it
 * the preload records API calls only. Activity buffers come from a capped pool; CUPTI's
 * buffer callbacks only move them; the writer thread decodes them. Docs:
 * docs/trace-format.md, "GPU activity and correlation". */
#ifndef ANA_ACTIVITY_H
#define ANA_ACTIVITY_H

#include "collector.h"

/* On the thread of the program's first call that needs a device (before it is forwarded;
 * the session's device step): loads CUPTI, subscribes, enables the activity kinds. Never
 * fails the session. */
void ana_cupti_start(void);
/* The writer, every pass (the GPU source, ana_collector_set_gpu): writes INFO "cupti" when
 * its state changed, flushes CUPTI (forced when `forced`, or when CUPTI is being handed
 * over), decodes every completed buffer through `put`, and notes records CUPTI dropped
 * (GPU_DROPPED). */
void ana_cupti_collect(int forced, ana_gpu_put put, void *arg);
/* After fork in the child: CUPTI does not survive fork; GPU activity stays off there. */
void ana_cupti_atfork_child(void);

#endif
