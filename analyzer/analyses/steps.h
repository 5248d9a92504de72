/* steps.h — training iterations (steps) and, within each, the forward / backward /
 * optimizer phases.
 *
 * Steps, in order of evidence (docs/report-schema.md, `steps`; docs/steps.md):
 *   1. NVTX: a push/pop range at the outermost level of a thread named like a step
 *      ("step", "train_step", "iteration", "ProfilerStep#6", ... — trailing numbers
 *      ignored; one that repeats before one that occurs once, which is a step too when it
 *      holds calls), or failing a name, the outermost range that repeats most often and
 *      holds most of the launches; push/pop steps are one thread's ranges (the thread
 *      whose ranges hold the most calls);
 *   2. the optimizer: the launch sequence cut after each run of optimizer kernels
 *      (classify.h hint), when there are at least 2 runs;
 *   3. periodicity: the period of the sequence of launched kernels.
 * A call (index into t->calls) belongs to the step whose bounds hold it (NVTX: calls of
 * any thread between push and pop — backward passes are launched from other threads
 * than the step's; otherwise [first call, next step's first call)).
 *
 * Phases within a step: NVTX ranges inside the step named forward/backward/optimizer
 * (fwd, bwd, optim, zero_grad, PyTorch's autograd ranges `autograd::engine::
 * evaluate_function: X` and nodes `XBackward0` as backward — docs; they too hold the
 * calls of any thread in their time); in a step with backward ranges and no forward one,
 * its calls in no phase range before its first backward call are forward. Else kernel
 * names: forward up to the last forward-hinted launch before the first backward-hinted
 * one, backward from the first backward-hinted launch, optimizer from the first optimizer
 * launch of the step's closing run; launches the evidence does not place are
 * ANA_PHASE_UNDECIDED, never guessed.
 *
 * Pure computation over a loaded trace (which must outlive the result). Not thread-safe. */
#ifndef ANA_STEPS_H
#define ANA_STEPS_H

#include <stddef.h>
#include <stdint.h>

#include "model/trace.h"

enum ana_steps_method { ANA_STEPS_NONE = 0, ANA_STEPS_NVTX = 1, ANA_STEPS_OPTIMIZER = 2,
                        ANA_STEPS_PERIOD = 3 };
enum ana_phase { ANA_PHASE_FORWARD = 0, ANA_PHASE_BACKWARD = 1, ANA_PHASE_OPTIMIZER = 2,
                 ANA_PHASE_UNDECIDED = 3, ANA_PHASE_COUNT = 4 };
enum ana_phases_method { ANA_PHASES_NONE = 0, ANA_PHASES_NVTX = 1, ANA_PHASES_NAMES = 2 };

typedef struct ana_step {
    uint64_t start_ns, end_ns; /* absolute host time; duration = end - start */
    uint64_t first_call;       /* its calls are t->calls [first_call, first_call + calls) */
    uint64_t calls;            /* API calls (LAUNCH/MEMCPY/MEMSET) assigned to it */
    int phases;                /* enum ana_phases_method that placed this step's calls */
} ana_step;

/* Calls of one step and one phase: run k holds t->calls [first, the next run's first),
 * the last one up to t->n_calls. A training loop's calls come in long runs (a few per
 * step), so each call's step and phase cost nothing per call. */
typedef struct ana_call_run {
    uint64_t first;
    int32_t step;  /* step index, or -1 outside every step */
    uint32_t phase; /* enum ana_phase; ANA_PHASE_UNDECIDED outside every step */
} ana_call_run;

typedef struct ana_steps {
    int method;       /* enum ana_steps_method */
    char name[64];    /* NVTX: the range name, digits stripped ("ProfilerStep#"); else "" */
    ana_step *steps;  /* in time order */
    size_t n_steps;
    uint64_t median_ns; /* median step duration (lower middle for an even count); 0 = none */
    ana_call_run *runs; /* every call's step and phase, in runs (ana_steps_at); the first
                         * starts at call 0; none when the trace has no calls */
    size_t n_runs, cap_runs;
    int phases;          /* the best ana_phases_method any step used */
    char why[200];       /* what was looked for and not found (no steps, or no phases) */
} ana_steps;

void ana_steps_find(const ana_trace *t, ana_steps *out);
void ana_steps_free(ana_steps *s);

/* The step of call c (-1 outside every step, or past the calls) and, into *phase when not
 * NULL, its phase. hint (NULL, or a run index kept by the caller, 0 to begin) makes
 * lookups in call order O(1); others are a binary search over the runs. */
int32_t ana_steps_at(const ana_steps *s, size_t c, size_t *hint, int *phase);
static inline int32_t ana_steps_step(const ana_steps *s, size_t c)
{
    return ana_steps_at(s, c, NULL, NULL);
}
static inline int ana_steps_phase(const ana_steps *s, size_t c)
{
    int p;
    ana_steps_at(s, c, NULL, &p);
    return p;
}
/* The phases of calls [b, b + n) into ph[0..n). */
void ana_steps_phases(const ana_steps *s, size_t b, size_t n, uint8_t *ph);
/* Appends to s's runs: from call `first` on, step and phase (first at or after the last
 * run's start; a run at the same call replaces it; equal neighbours merge). */
void ana_steps_put(ana_steps *s, uint64_t first, int32_t step, int phase);
/* Appends src's runs over calls [from, to) to dst (ana_steps_put). */
void ana_steps_copy(ana_steps *dst, const ana_steps *src, size_t from, size_t to);
const char *ana_steps_method_name(int method); /* "nvtx", "optimizer", "period", "none" */
const char *ana_phase_name(int phase);         /* "forward", ..., "undecided" */
/* The phase a launch's kernel name hints (classify.h): optimizer before backward before
 * forward when a name carries several; undecided for any other call or no hint. The one
 * reading of hints the steps, the memory anatomy and the OOM post-mortem share. */
int ana_steps_launch_phase(const ana_trace *t, const ana_api_call *c);
int ana_phase_of_hints(uint8_t hints);
const char *ana_phases_method_name(int m);     /* "nvtx", "kernel names", "none" */

#endif
