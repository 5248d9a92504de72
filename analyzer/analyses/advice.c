/* advice.c — see advice.h; the rules are documented in docs/oom.md ("Advice").
 * Part of analyses/: called by cli/, views/, import/ and other analyses; calls analyses/
 * and model/ only, never a view. */
#include "analyses/advice.h"

#include "model/util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Weights at about 6 B/param: an fp32 master and a 16-bit copy (mixed precision). */
#define ANA_ADV_MIXED_LO 5.4
#define ANA_ADV_MIXED_HI 6.6

__attribute__((format(printf, 6, 7)))
static void ana_adv_add(ana_advice *out, const char *topic, int cat, int tech, int64_t saved,
                        const char *fmt, ...)
{
    if (out->n >= ANA_ADVICE_MAX)
        return;
    ana_advice_item *x = &out->items[out->n++];
    va_list ap;
    x->topic = topic;
    x->cat = cat;
    x->tech = tech;
    x->bytes_saved = saved;
    va_start(ap, fmt);
    vsnprintf(x->text, sizeof(x->text), fmt, ap);
    va_end(ap);
}

static int64_t ana_adv_per_param(double params, double bytes)
{
    return (int64_t)llround(params * bytes);
}

/* The categories as the subject of a sentence. */
static const char *const ana_adv_subject[ANA_MCAT_COUNT] = {
    "the weights", "the optimizer states", "the gradients", "the activations",
    "the temporary buffers", "functionality-specific buffers", "unattributed allocations",
};

/* The largest of weights..functionality (unattributed is no category to act on). */
static int ana_adv_largest(const ana_advice_figures *g)
{
    int best = -1;
    for (int c = 0; c < ANA_MCAT_UNATTRIBUTED; c++)
        if (g->cat[c] && (best < 0 || g->cat[c] > g->cat[best]))
            best = c;
    return best;
}

static void ana_adv_activations(const ana_advice_figures *g, ana_advice *out, const char *lead)
{
    uint64_t a = g->cat[ANA_MCAT_ACTIVATIONS], t = g->cat[ANA_MCAT_TEMPORARY];
    uint64_t k = g->count[ANA_MCAT_ACTIVATIONS];
    char b1[32], b2[32];
    if (k > 1) {
        int64_t s = (int64_t)((double)a * (1.0 - 1.0 / sqrt((double)k)));
        ana_adv_add(out, "largest_category", ANA_MCAT_ACTIVATIONS, ANA_TECH_CHECKPOINTING, s,
                    "%s; gradient checkpointing over its %llu saved allocations would keep "
                    "about 1/sqrt(%llu) of them and save about %s", lead,
                    (unsigned long long)k, (unsigned long long)k, ana_fmt_bytes((uint64_t)s, b1, sizeof(b1)));
        return;
    }
    uint64_t s = (a + t) / 2;
    ana_adv_add(out, "largest_category", ANA_MCAT_ACTIVATIONS, ANA_TECH_MICROBATCH, (int64_t)s,
                "%s, in one allocation (an arena: it cannot be checkpointed from outside); "
                "half the micro-batch with 2 accumulation steps would save about %s of "
                "activations and temporaries (%s)", lead, ana_fmt_bytes(s, b1, sizeof(b1)), ana_fmt_bytes(a + t, b2, sizeof(b2)));
}

static int ana_adv_optimizer_largest(const ana_advice_figures *g, ana_advice *out, const char *lead)
{
    uint64_t o = g->cat[ANA_MCAT_OPTIMIZER];
    char b1[32];
    if (g->params > 0 && (double)o > 2.5 * g->params) {
        int64_t s = (int64_t)o - ana_adv_per_param(g->params, 2.0);
        ana_adv_add(out, "largest_category", ANA_MCAT_OPTIMIZER, ANA_TECH_OPTIM_8BIT, s,
                    "%s (%.1f B/param); 8-bit optimizer states (2 B/param) would save %s",
                    lead, (double)o / g->params, ana_fmt_bytes((uint64_t)s, b1, sizeof(b1)));
        return ANA_TECH_OPTIM_8BIT;
    }
    ana_adv_add(out, "largest_category", ANA_MCAT_OPTIMIZER, ANA_TECH_OPTIM_FACTORED, (int64_t)o,
                "%s; a factored optimizer (Adafactor-like) would save up to %s", lead,
                ana_fmt_bytes(o, b1, sizeof(b1)));
    return ANA_TECH_OPTIM_FACTORED;
}

/* Item 1; returns the technique it named (-1 none). */
static int ana_adv_largest_item(const ana_advice_figures *g, ana_advice *out)
{
    int c = ana_adv_largest(g);
    uint64_t total = 0;
    char lead[256], b1[32], b2[32], b3[32];
    if (c < 0)
        return -1;
    for (int i = 0; i < ANA_MCAT_COUNT; i++)
        total += g->cat[i];
    if (g->cat[ANA_MCAT_UNATTRIBUTED] > g->cat[c]) /* more could hide in there: say so */
        snprintf(lead, sizeof(lead), "of the memory the evidence attributes, %s hold the most "
                 "at the peak: %s of %s (%s unattributed)", ana_adv_subject[c],
                 ana_fmt_bytes(g->cat[c], b1, sizeof(b1)), ana_fmt_bytes(total, b2, sizeof(b2)),
                 ana_fmt_bytes(g->cat[ANA_MCAT_UNATTRIBUTED], b3, sizeof(b3)));
    else
        snprintf(lead, sizeof(lead), "%s hold the most memory at the peak: %s of %s",
                 ana_adv_subject[c], ana_fmt_bytes(g->cat[c], b1, sizeof(b1)), ana_fmt_bytes(total, b2, sizeof(b2)));
    int training = g->cat[ANA_MCAT_OPTIMIZER] || g->cat[ANA_MCAT_GRADIENTS];
    switch (c) {
    case ANA_MCAT_ACTIVATIONS: ana_adv_activations(g, out, lead); return ANA_TECH_CHECKPOINTING;
    case ANA_MCAT_OPTIMIZER: return ana_adv_optimizer_largest(g, out, lead);
    case ANA_MCAT_TEMPORARY:
        ana_adv_add(out, "largest_category", c, ANA_TECH_FREE_TEMPORARIES, (int64_t)g->cat[c],
                    "%s; releasing them right after their last use would save up to %s", lead, b1);
        return ANA_TECH_FREE_TEMPORARIES;
    case ANA_MCAT_WEIGHTS:
        if (training || g->weights_16bit)
            return -1;
        ana_adv_add(out, "largest_category", c, ANA_TECH_MIXED_PRECISION, (int64_t)(g->cat[c] / 2),
                    "%s in fp32 and no training states; 16-bit weights would save %s", lead,
                    ana_fmt_bytes(g->cat[c] / 2, b2, sizeof(b2)));
        return ANA_TECH_MIXED_PRECISION;
    default: return -1; /* gradients, functionality: no technique of this list shrinks them */
    }
}

/* Item 2: weights at ~6 B/param and activations smaller than the 2 B/param copy. */
static void ana_adv_mixed(const ana_advice_figures *g, ana_advice *out)
{
    uint64_t a = g->cat[ANA_MCAT_ACTIVATIONS];
    char b1[32], b2[32], b3[32];
    if (g->params <= 0 || !a)
        return;
    double wpp = (double)g->cat[ANA_MCAT_WEIGHTS] / g->params;
    int64_t copy = ana_adv_per_param(g->params, 2.0);
    if (wpp < ANA_ADV_MIXED_LO || wpp > ANA_ADV_MIXED_HI || (int64_t)a >= copy)
        return;
    ana_adv_add(out, "mixed_precision", ANA_MCAT_WEIGHTS, ANA_TECH_FP32, copy - (int64_t)a,
                "mixed precision costs memory at this micro-batch: weights at %.1f B/param "
                "(fp32 master + 16-bit copy); the copy takes %s, more than the %s its 16-bit "
                "activations save over fp32; net cost %s (it pays off from a micro-batch "
                "%.1fx this one; keep it for speed)", wpp, ana_fmt_bytes((uint64_t)copy, b1, sizeof(b1)),
                ana_fmt_bytes(a, b2, sizeof(b2)), ana_fmt_bytes((uint64_t)(copy - (int64_t)a), b3, sizeof(b3)),
                (double)copy / (double)a);
}

/* Item 3: the optimizer states against 8-bit states and SGD with momentum. */
static void ana_adv_optimizer(const ana_advice_figures *g, ana_advice *out, int named)
{
    uint64_t o = g->cat[ANA_MCAT_OPTIMIZER];
    char b1[32], b2[32];
    if (g->params <= 0 || !o)
        return;
    double opp = (double)o / g->params;
    if (opp > 2.5 && named != ANA_TECH_OPTIM_8BIT) {
        int64_t s = (int64_t)o - ana_adv_per_param(g->params, 2.0);
        ana_adv_add(out, "optimizer_states", ANA_MCAT_OPTIMIZER, ANA_TECH_OPTIM_8BIT, s,
                    "optimizer states: %s at %.1f B/param; 8-bit states (2 B/param) would "
                    "save %s", ana_fmt_bytes(o, b1, sizeof(b1)), opp, ana_fmt_bytes((uint64_t)s, b2, sizeof(b2)));
    }
    if (opp > 4.5) {
        int64_t s = (int64_t)o - ana_adv_per_param(g->params, 4.0);
        ana_adv_add(out, "optimizer_states", ANA_MCAT_OPTIMIZER, ANA_TECH_SGD_MOMENTUM, s,
                    "optimizer states: %s at %.1f B/param; SGD with momentum (4 B/param) "
                    "would save %s, at the cost of Adam's adaptivity", ana_fmt_bytes(o, b1, sizeof(b1)), opp,
                    ana_fmt_bytes((uint64_t)s, b2, sizeof(b2)));
    }
}

void ana_advice_compute(const ana_advice_figures *g, ana_advice *out)
{
    memset(out, 0, sizeof(*out));
    int named = ana_adv_largest_item(g, out);
    ana_adv_mixed(g, out);
    ana_adv_optimizer(g, out, named);
}

void ana_advice_build(const ana_memcat *m, const ana_mem_result *mem, ana_advice *out)
{
    ana_advice_figures g = { .params = m->params };
    memset(out, 0, sizeof(*out));
    if (!mem->peak_bytes)
        return;
    memcpy(g.cat, m->at_peak, sizeof(g.cat));
    memcpy(g.count, m->count_at_peak, sizeof(g.count));
    g.weights_16bit = ana_oom_weights_16bit(m, mem, mem->peak_idx);
    ana_advice_compute(&g, out);
}
