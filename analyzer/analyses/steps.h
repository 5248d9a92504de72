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
    uint64_t calls;            /* API calls (LAUNCH/MEMCPY/MEMSET) assigned to it */
    int phases;                /* enum ana_phases_method that placed this step's calls */
} ana_step;

typedef struct ana_steps {
    int method;       /* enum ana_steps_method */
    char name[64];    /* NVTX: the range name, digits stripped ("ProfilerStep#"); else "" */
    ana_step *steps;  /* in time order */
    size_t n_steps;
    uint64_t median_ns; /* median step duration (lower middle for an even count); 0 = none */
    int32_t *call_step; /* per t->calls index: step index, or -1 outside every step */
    uint8_t *call_phase; /* per t->calls index: enum ana_phase */
    int phases;          /* the best ana_phases_method any step used */
    char why[200];       /* what was looked for and not found (no steps, or no phases) */
} ana_steps;

void ana_steps_find(const ana_trace *t, ana_steps *out);
void ana_steps_free(ana_steps *s);
const char *ana_steps_method_name(int method); /* "nvtx", "optimizer", "period", "none" */
const char *ana_phase_name(int phase);         /* "forward", ..., "undecided" */
/* The phase a launch's kernel name hints (classify.h): optimizer before backward before
 * forward when a name carries several; undecided for any other call or no hint. The one
 * reading of hints the steps, the memory anatomy and the OOM post-mortem share. */
int ana_steps_launch_phase(const ana_trace *t, const ana_api_call *c);
int ana_phase_of_hints(uint8_t hints);
const char *ana_phases_method_name(int m);     /* "nvtx", "kernel names", "none" */

#endif
