/* preload.h — internal contract of libanatomist.so (never installed, never exported).
 *
 * Threads: application threads run hooks; they only capture and append encoded records
 * to their own ring (tbuf), touching no lock and no malloc. One collector thread drains
 * the rings, emits definitions (kernels, stacks, threads, modules), compresses and writes.
 * Every hook brackets its work in ana_enter()/ana_leave(), which guard re-entrancy,
 * preserve errno, and start the session on the first CUDA call of the process.
 *
 * The core's headers, one per module of core/; this one includes them all, for the core's
 * own files, calls/, the hooks and lifecycle.c. cupti/ includes only the few it uses
 * (cupti_int.h: the writer's sink and wake-up, the clock, the configuration, kernel names). */
#ifndef ANA_PRELOAD_H
#define ANA_PRELOAD_H

#include "defs.h"
#include "config.h"
#include "clock.h"
#include "state.h"
#include "tbuf.h"
#include "live_file.h"
#include "ofile.h"
#include "stacks.h"
#include "pyframes.h"
#include "kernels.h"
#include "modules.h"
#include "collector.h"
#include "wake.h"
#include "dl_real.h"
#include "capture.h"
#include "session.h"

#endif
