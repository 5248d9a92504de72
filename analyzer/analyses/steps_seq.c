/* steps_seq.c — steps found in the sequence of calls, for traces without NVTX steps, and
 * the phases of a step placed by kernel-name hints (steps.h; the rules are documented in
 * docs/steps.md, "The optimizer", "The period" and "From kernel names"). Internal to the
 * steps module: called by steps.c through steps_int.h.
 *
 * Both methods read every thread's calls as one sequence in time order, compared by key
 * (steps_int.h), and add steps of consecutive calls (ST_SPAN):
 *   optimizer runs of optimizer-hinted launches cut the sequence; what follows every run
 *             the same way (the last run included) closes the step, what precedes every
 *             step the same way (the first included) opens the next one;
 *   period    rare keys anchor candidate periods; a candidate's windows must look like
 *             its steady window; the candidate covering the most calls wins.
 * Where those steps end: at the next step, or the latest end of their calls' GPU work.
 * Phases by names: forward up to the last forward-hinted launch before the first
 * backward-hinted one, backward from there to the step's closing optimizer run.
 * O(n) in the calls (keys are numbered, counted in an array; each candidate scans the
 * calls once). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyses/steps.h"
#include "analyses/steps_int.h"
#include "model/util.h"

#define ST_CANDIDATES 16 /* rare keys tried as period anchors */
#define ST_PATTERN 8     /* calls that identify where the first step begins */

/* ------------------------------------------------------------------ sequences */

typedef struct ana_st_seq {
    size_t a, b; /* calls [a, b) */
} ana_st_seq;

static size_t ana_st_len(ana_st_seq s) { return s.b - s.a; }

/* Common prefix (suffix) length of the keys of two sequences. */
static size_t ana_st_lcp(const ana_st *st, ana_st_seq x, ana_st_seq y)
{
    size_t n = 0;
    while (x.a + n < x.b && y.a + n < y.b && st->key[x.a + n] == st->key[y.a + n])
        n++;
    return n;
}

static size_t ana_st_lcs(const ana_st *st, ana_st_seq x, ana_st_seq y)
{
    size_t n = 0;
    while (x.b - n > x.a && y.b - n > y.a && st->key[x.b - n - 1] == st->key[y.b - n - 1])
        n++;
    return n;
}

/* ------------------------------------------------------------------ optimizer */

/* Runs of optimizer-hinted launches: a run goes on over calls with no hint while they are
 * no more than the optimizer launches it holds so far (grad clipping, a scale check),
 * memsets not counted (states made at the first update are zeroed as they are made);
 * a forward- or backward-hinted launch ends it. */
static size_t ana_st_runs(const ana_st *st, ana_st_seq **out)
{
    ana_st_seq *v = NULL;
    size_t n = 0, cap = 0, gap = 0, nopt = 0;
    int open = 0;
    for (size_t i = 0; i < st->n; i++) {
        const ana_call_site *c = ana_trace_call_site_at(st->t, i);
        if (ana_st_hint(st->hint, i) == ST_OPT && c->kind == ANA_K_LAUNCH && ana_api_is_graph_launch(c->api)) {
            /* a graph launch whose kernels end with the optimizer: a whole step, a run of
             * its own */
            ANA_GROW(v, cap, n + 1);
            v[n++] = (ana_st_seq){ i, i + 1 };
            open = 0;
            gap = 0;
        } else if (ana_st_hint(st->hint, i) == ST_OPT) {
            if (open && gap <= nopt) {
                v[n - 1].b = i + 1;
                nopt++;
            } else {
                ANA_GROW(v, cap, n + 1);
                v[n++] = (ana_st_seq){ i, i + 1 };
                nopt = 1;
                open = 1;
            }
            gap = 0;
        } else if (ana_st_hint(st->hint, i)) {
            open = 0;
        } else if (c->kind != ANA_K_MEMSET) {
            gap++; /* a memset does not count: an optimizer that makes its states at its
                    * first update zeroes each before using it */
        }
    }
    *out = v;
    return n;
}

/* The calls from `from` up to the first hinted launch before `limit`. */
static ana_st_seq ana_st_gap(const ana_st *st, size_t from, size_t limit)
{
    size_t b = from;
    while (b < limit && !ana_st_hint(st->hint, b))
        b++;
    return (ana_st_seq){ from, b };
}

/* Where the first step begins inside the calls before the first step's first hinted
 * launch (lead): what steady steps have before their hinted part is `head`. */
static size_t ana_st_first_start(const ana_st *st, ana_st_seq lead, ana_st_seq head)
{
    size_t want = ana_st_len(head), m = ana_st_lcs(st, lead, head);
    if (m >= want)
        return lead.b - want;
    size_t plen = want < ST_PATTERN ? want : ST_PATTERN;
    /* extra calls inside the first step's head: find where its head begins */
    for (size_t q = lead.b - m; q-- > lead.a;) {
        if (q + plen > lead.b)
            continue;
        if (ana_st_lcp(st, (ana_st_seq){ q, q + plen }, (ana_st_seq){ head.a, head.a + plen }) == plen)
            return q;
    }
    return lead.b - m;
}

int ana_st_optimizer(ana_st *st, char *why, size_t cap)
{
    ana_st_seq *runs;
    size_t r = ana_st_runs(st, &runs);
    if (r < 2) {
        snprintf(why, cap, "%zu run%s of optimizer kernels (2 needed)", r, r == 1 ? "" : "s");
        free(runs);
        return 0;
    }
    /* after[k]: what follows run k up to the next hinted launch; lead: what precedes the
     * first step's first hinted launch. */
    ana_st_seq *after = ana_xcalloc(r, sizeof(*after));
    for (size_t k = 0; k < r; k++)
        after[k] = ana_st_gap(st, runs[k].b, k + 1 < r ? runs[k + 1].a : st->n);
    ana_st_seq lead = ana_st_gap(st, 0, runs[0].a);
    size_t tail = ana_st_len(after[0]), head = ana_st_lcs(st, lead, after[0]), inner = SIZE_MAX;
    for (size_t k = 1; k < r; k++)
        tail = ana_st_lcp(st, after[0], after[k]) < tail ? ana_st_lcp(st, after[0], after[k]) : tail;
    for (size_t k = 0; k + 1 < r; k++) {
        size_t h = ana_st_lcs(st, after[0], after[k]);
        head = h < head ? h : head;
        inner = ana_st_len(after[k]) < inner ? ana_st_len(after[k]) : inner;
    }
    if (head + tail > inner) /* the same calls both close a step and open the next: open */
        tail = inner > head ? inner - head : 0;
    size_t start = ana_st_first_start(st, lead, (ana_st_seq){ after[0].a + tail, after[0].b });
    for (size_t k = 0; k < r; k++) { /* step k: [start, end of run k + tail) */
        size_t end = runs[k].b + tail;
        ana_st_add_step(st, (ana_st_step){ .t0 = ana_trace_call(st->t, start).time_ns,
                                           .a = start, .b = end - 1, .kind = ST_SPAN });
        start = end;
    }
    free(after);
    free(runs);
    return 1;
}

/* ------------------------------------------------------------------ period */

typedef struct ana_st_cand {
    size_t p, covered;
    ana_st_seq *win; /* accepted windows */
    size_t n_win;
} ana_st_cand;

/* 1 when window w looks like the steady window tmpl: their ends agree on 90% of it; a
 * step other than the first must also have its length within 10%. */
static int ana_st_alike(const ana_st *st, ana_st_seq w, ana_st_seq tmpl, int first)
{
    size_t lw = ana_st_len(w), p = ana_st_len(tmpl), m = lw < p ? lw : p;
    size_t pre = ana_st_lcp(st, w, tmpl), suf = pre < m ? ana_st_lcs(st, w, tmpl) : 0;
    size_t same = pre + suf < m ? pre + suf : m;
    if (first)
        return 10 * same >= 9 * p;
    size_t diff = lw > p ? lw - p : p - lw;
    return 10 * diff <= p && 10 * same >= 9 * (lw > p ? lw : p);
}

static int ana_st_size_cmp(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* Steps anchored at the occurrences occ[0..c) of one key (c >= 2). */
static void ana_st_period_try(const ana_st *st, const size_t *occ, size_t c, ana_st_cand *out)
{
    memset(out, 0, sizeof(*out));
    size_t *gaps = ana_xcalloc(c, sizeof(size_t)), j = 0, phi = 0;
    for (size_t i = 0; i + 1 < c; i++)
        gaps[i] = occ[i + 1] - occ[i];
    ana_sort(gaps, c - 1, sizeof(size_t), ana_st_size_cmp);
    size_t p = gaps[(c - 2) / 2];
    free(gaps);
    for (size_t i = 0; i + 1 < c; i++)
        if (occ[i + 1] - occ[i] == p)
            j = i; /* the last steady window */
    /* the steps begin phi calls before their anchor: as far back as the first step's
     * calls before its anchor look like a steady step's */
    while (phi < occ[0] && phi + 1 < p && st->key[occ[0] - 1 - phi] == st->key[occ[j + 1] - 1 - phi])
        phi++;
    ana_st_seq tmpl = { occ[j] - phi, occ[j + 1] - phi };
    out->p = p;
    out->win = ana_xcalloc(c, sizeof(*out->win));
    for (size_t i = 0; i < c; i++) {
        size_t a = occ[i] - phi, b = i + 1 < c ? occ[i + 1] - phi : a + p;
        ana_st_seq w = { a, b < st->n ? b : st->n };
        if (!ana_st_alike(st, w, tmpl, out->n_win == 0 && i == 0))
            continue;
        out->win[out->n_win++] = w;
        out->covered += ana_st_len(w);
    }
}

/* 1 when the window holds a kernel launch: a step of copies alone is no training step. */
static int ana_st_has_launch(const ana_st *st, ana_st_seq w)
{
    for (size_t i = w.a; i < w.b; i++)
        if (ana_trace_call_site_at(st->t, i)->kind == ANA_K_LAUNCH)
            return 1;
    return 0;
}

/* The calls of one key: how many, the first, the key. */
typedef struct ana_st_keyrun {
    size_t count, first;
    uint32_t key;
} ana_st_keyrun;

static int ana_st_keyrun_cmp(const void *a, const void *b)
{
    const ana_st_keyrun *x = a, *y = b;
    if (x->count != y->count)
        return x->count < y->count ? -1 : 1;
    return x->first < y->first ? -1 : x->first > y->first;
}

int ana_st_period(ana_st *st, char *why, size_t cap)
{
    /* every key's count and first call: room by distinct keys, not by calls */
    size_t nk = st->n_keys;
    ana_st_keyrun *kr = ana_xcalloc(nk + 1, sizeof(*kr));
    for (size_t i = st->n; i-- > 0;) { /* backwards: the first call is the last seen */
        kr[st->key[i]].count++;
        kr[st->key[i]].first = i;
        kr[st->key[i]].key = st->key[i];
    }
    size_t seen2 = 0, most = 0; /* keys seen at least twice, rarest (then earliest) first */
    for (size_t j = 0; j < nk; j++)
        if (kr[j].count >= 2)
            kr[seen2++] = kr[j];
    nk = seen2;
    ana_sort(kr, nk, sizeof(*kr), ana_st_keyrun_cmp);
    for (size_t i = 0; i < nk && i < ST_CANDIDATES; i++)
        most = kr[i].count > most ? kr[i].count : most;
    ana_st_cand best = { 0 };
    size_t *occ = ana_xcalloc(most + 1, sizeof(size_t));
    for (size_t i = 0; i < nk && i < ST_CANDIDATES; i++) {
        const ana_st_keyrun *k = &kr[i];
        ana_st_cand c;
        for (size_t o = 0, q = k->first; o < k->count; q++) /* its calls, in order */
            if (st->key[q] == k->key)
                occ[o++] = q;
        ana_st_period_try(st, occ, k->count, &c);
        int ok = c.n_win >= 2 && 2 * c.covered > st->n - c.win[0].a && c.p >= 2 &&
                 ana_st_has_launch(st, c.win[c.n_win - 1]);
        if (ok && (!best.win || c.covered > best.covered || (c.covered == best.covered && c.p < best.p))) {
            free(best.win);
            best = c;
        } else {
            free(c.win);
        }
    }
    free(occ);
    free(kr);
    if (!best.win) {
        snprintf(why, cap, "%s", nk ? "no period of 2+ calls with a launch repeats over most of the launches"
                                    : "no launch repeats");
        return 0;
    }
    for (size_t i = 0; i < best.n_win; i++)
        ana_st_add_step(st, (ana_st_step){ .t0 = ana_trace_call(st->t, best.win[i].a).time_ns,
                                           .a = best.win[i].a, .b = best.win[i].b - 1,
                                           .kind = ST_SPAN });
    free(best.win);
    return 1;
}

/* ------------------------------------------------------------------ where steps end */

/* A step of consecutive calls ends where the next one begins; the last (or one before a
 * gap) when its last call or the GPU work of its calls ended: 1 for such a step. */
static int ana_st_span_open(const ana_st *st, size_t i)
{
    const ana_st_step *s = &st->steps[i];
    const ana_st_step *next = i + 1 < st->n_steps ? &st->steps[i + 1] : NULL;
    return s->kind == ST_SPAN && !(next && next->kind == ST_SPAN && next->a == s->b + 1);
}

/* end[i]: where step i ends, for every ST_SPAN step. The open ones (ana_st_span_open: the
 * last, and any before a gap) take the latest end of their calls' GPU work, found in one
 * pass over the GPU activities without an array by call: the open steps come in order of
 * their first call, and reach[k], the furthest last call of the first k + 1, says how far
 * back a call's steps can start. */
uint64_t *ana_st_span_ends(const ana_st *st)
{
    const ana_trace *t = st->t;
    uint64_t *end = ana_xcalloc(st->n_steps + 1, sizeof(uint64_t));
    size_t *open = ana_xcalloc(st->n_steps + 1, sizeof(size_t)), n_open = 0;
    size_t *reach = ana_xcalloc(st->n_steps + 1, sizeof(size_t));
    for (size_t i = 0; i < st->n_steps; i++) {
        const ana_st_step *s = &st->steps[i];
        if (s->kind != ST_SPAN)
            continue;
        if (!ana_st_span_open(st, i)) {
            end[i] = ana_trace_call(t, s->b + 1).time_ns;
            continue;
        }
        end[i] = ana_trace_call(t, s->b).time_ns;
        reach[n_open] = n_open && reach[n_open - 1] > s->b ? reach[n_open - 1] : s->b;
        open[n_open++] = i;
    }
    ana_gpu_iter it;
    ana_trace_gpu_begin(t, &it);
    for (const ana_gpu_act *g; n_open && (g = ana_trace_gpu_next(&it));) {
        size_t ci = ana_trace_call_index(t, ana_trace_wide(t, g->corr_w)), lo = 0, hi = n_open;
        if (ci == SIZE_MAX)
            continue;
        while (lo < hi) { /* hi: the open steps whose first call is at or before ci */
            size_t mid = lo + (hi - lo) / 2;
            if (st->steps[open[mid]].a <= ci)
                lo = mid + 1;
            else
                hi = mid;
        }
        uint64_t e = g->start_ns + ana_trace_wide(t, g->dur_w);
        for (size_t k = lo; k-- > 0 && reach[k] >= ci;)
            if (st->steps[open[k]].b >= ci && e > end[open[k]])
                end[open[k]] = e;
    }
    ana_trace_gpu_end(&it);
    free(reach);
    free(open);
    return end;
}

/* ------------------------------------------------------------------ phases by names */

/* The closing optimizer run of a step's calls [b, b + n) after position fb: its first and
 * last positions (the last extended over the unhinted launches right after it), or 0
 * when the step's last hinted launch is no optimizer launch. */
static int ana_st_closing_run(const ana_st *st, size_t b, size_t n, size_t fb, size_t *rs,
                              size_t *re)
{
    size_t j = n, gap = 0, nopt = 1;
    while (j-- > fb && !ana_st_hint(st->hint, b + j))
        ;
    if (j == SIZE_MAX || j <= fb || ana_st_hint(st->hint, b + j) != ST_OPT)
        return 0;
    *rs = *re = j;
    for (size_t k = j; k-- > fb + 1;) {
        unsigned h = ana_st_hint(st->hint, b + k);
        if (h == ST_OPT && gap <= nopt) {
            *rs = k;
            nopt++;
            gap = 0;
        } else if (h) {
            break;
        } else {
            gap++;
        }
    }
    while (*re + 1 < n && !ana_st_hint(st->hint, b + *re + 1) &&
           ana_trace_call_site_at(st->t, b + *re + 1)->kind == ANA_K_LAUNCH)
        (*re)++;
    return 1;
}

/* Phases of one step's calls [b, b + n) (into phase[0..n)) from kernel-name hints; 0 when
 * it has no backward-hinted launch (everything undecided). */
int ana_st_name_phases(const ana_st *st, size_t b, size_t n, uint8_t *phase)
{
    size_t fb = 0, lf = SIZE_MAX, lb = 0, rs = SIZE_MAX, re = 0;
    while (fb < n && ana_st_hint(st->hint, b + fb) != ST_BWD)
        fb++;
    if (fb == n)
        return 0;
    for (size_t j = 0; j < n; j++) {
        if (j < fb && ana_st_hint(st->hint, b + j) == ST_FWD)
            lf = j;
        if (ana_st_hint(st->hint, b + j) == ST_BWD)
            lb = j;
    }
    size_t bwd_end = ana_st_closing_run(st, b, n, fb, &rs, &re) ? rs : lb + 1;
    for (size_t j = 0; j < n; j++)
        phase[j] = lf != SIZE_MAX && j <= lf ? ANA_PHASE_FORWARD
                      : j >= fb && j < bwd_end  ? ANA_PHASE_BACKWARD
                      : j >= rs && j <= re      ? ANA_PHASE_OPTIMIZER
                                                : ANA_PHASE_UNDECIDED;
    return 1;
}
