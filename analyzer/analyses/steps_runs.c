/* steps_runs.c — each call's step and phase, kept as runs of calls (steps.h
 * ana_call_run): made by steps_place.c and by the memory anatomy's copy with structural
 * phases (memcat.c), read by every analysis that asks a call's step or phase.
 * Part of analyses/: calls model/ only. */
#include "analyses/steps.h"

#include "model/util.h"

/* The last run starting at or before call c among runs [lo, hi), given runs[lo].first <= c
 * and runs[hi].first > c (or hi the end). */
static size_t ana_sr_search(const ana_call_run *r, size_t lo, size_t hi, size_t c)
{
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (r[mid].first <= c)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* The run holding call c (s has runs; the first starts at 0): without a hint, a binary
 * search; with one, a search that widens from it either way (calls asked near the last
 * one cost a step or two, wherever they lie). */
static size_t ana_sr_find(const ana_steps *s, size_t c, size_t *hint)
{
    const ana_call_run *r = s->runs;
    size_t n = s->n_runs, k, step = 1;
    if (!hint || *hint >= n)
        k = ana_sr_search(r, 0, n, c);
    else if (r[k = *hint].first <= c) {
        while (k + step < n && r[k + step].first <= c)
            k += step, step *= 2;
        k = ana_sr_search(r, k, k + step < n ? k + step : n, c);
    } else {
        while (k >= step && r[k - step].first > c)
            k -= step, step *= 2;
        k = k >= step ? ana_sr_search(r, k - step, k, c) : ana_sr_search(r, 0, k, c);
    }
    if (hint)
        *hint = k;
    return k;
}

int32_t ana_steps_at(const ana_steps *s, size_t c, size_t *hint, int *phase)
{
    if (!s->n_runs) {
        if (phase)
            *phase = ANA_PHASE_UNDECIDED;
        return -1;
    }
    const ana_call_run *r = &s->runs[ana_sr_find(s, c, hint)];
    if (phase)
        *phase = (int)r->phase;
    return r->step;
}

void ana_steps_phases(const ana_steps *s, size_t b, size_t n, uint8_t *ph)
{
    if (!s->n_runs) {
        for (size_t j = 0; j < n; j++)
            ph[j] = ANA_PHASE_UNDECIDED;
        return;
    }
    size_t k = ana_sr_find(s, b, NULL);
    for (size_t j = 0; j < n; j++) {
        while (k + 1 < s->n_runs && s->runs[k + 1].first <= b + j)
            k++;
        ph[j] = (uint8_t)s->runs[k].phase;
    }
}

void ana_steps_put(ana_steps *s, uint64_t first, int32_t step, int phase)
{
    if (s->n_runs && s->runs[s->n_runs - 1].first == first)
        s->n_runs--; /* replaced */
    if (s->n_runs && s->runs[s->n_runs - 1].step == step &&
        s->runs[s->n_runs - 1].phase == (uint32_t)phase)
        return; /* the run before goes on */
    ANA_GROW(s->runs, s->cap_runs, s->n_runs + 1);
    s->runs[s->n_runs++] = (ana_call_run){ .first = first, .step = step, .phase = (uint32_t)phase };
}

void ana_steps_copy(ana_steps *dst, const ana_steps *src, size_t from, size_t to)
{
    if (!src->n_runs || from >= to)
        return;
    for (size_t k = ana_sr_find(src, from, NULL); k < src->n_runs && src->runs[k].first < to; k++)
        ana_steps_put(dst, src->runs[k].first > from ? src->runs[k].first : from,
                      src->runs[k].step, (int)src->runs[k].phase);
}
