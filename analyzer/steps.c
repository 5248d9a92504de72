/* steps.c — placeholder until step detection lands: no steps. */
#include "steps.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

void ana_steps_find(const ana_trace *t, ana_steps *out)
{
    memset(out, 0, sizeof(*out));
    out->call_step = ana_xcalloc(t->n_calls ? t->n_calls : 1, sizeof(*out->call_step));
    out->call_phase = ana_xcalloc(t->n_calls ? t->n_calls : 1, sizeof(*out->call_phase));
    for (size_t i = 0; i < t->n_calls; i++) {
        out->call_step[i] = -1;
        out->call_phase[i] = ANA_PHASE_UNDECIDED;
    }
    snprintf(out->why, sizeof(out->why), "step detection not built yet");
}

void ana_steps_free(ana_steps *s)
{
    free(s->steps);
    free(s->call_step);
    free(s->call_phase);
    memset(s, 0, sizeof(*s));
}

const char *ana_steps_method_name(int m)
{
    static const char *const n[] = { "none", "nvtx", "optimizer", "period" };
    return m >= 0 && m < 4 ? n[m] : "none";
}

const char *ana_phase_name(int p)
{
    static const char *const n[] = { "forward", "backward", "optimizer", "undecided" };
    return p >= 0 && p < ANA_PHASE_COUNT ? n[p] : "undecided";
}

const char *ana_phases_method_name(int m)
{
    static const char *const n[] = { "none", "nvtx", "kernel names" };
    return m >= 0 && m < 3 ? n[m] : "none";
}
