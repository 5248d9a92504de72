/* The out-of-memory fits (analyzer/analyses/oom.c) and the memory advice (analyzer/analyses/advice.c) on
 * hand-made category figures. Every expected number is worked out by hand in the comment
 * above it, not by calling the formulas under test. */
#include <criterion/criterion.h>
#include <string.h>

#include "analyses/advice.h"
#include "analyses/oom.h"

#define W ANA_MCAT_WEIGHTS
#define O ANA_MCAT_OPTIMIZER
#define G ANA_MCAT_GRADIENTS
#define A ANA_MCAT_ACTIVATIONS
#define T ANA_MCAT_TEMPORARY

/* The fit of a technique in out[0..n), or NULL. */
static const ana_oom_fit *fit_of(const ana_oom_fit *out, size_t n, int tech)
{
    for (size_t i = 0; i < n; i++)
        if (out[i].tech == tech)
            return &out[i];
    return NULL;
}

Test(oom, kind_and_need)
{
    cr_expect_eq(ana_oom_kind_of(0, 0, 100), ANA_OOM_UNKNOWN);
    cr_expect_eq(ana_oom_kind_of(1, 99, 100), ANA_OOM_EXHAUSTION);
    cr_expect_eq(ana_oom_kind_of(1, 100, 100), ANA_OOM_FRAGMENTATION);
    cr_expect_eq(ana_oom_need(ANA_OOM_EXHAUSTION, 100, 30), 70);
    cr_expect_eq(ana_oom_need(ANA_OOM_FRAGMENTATION, 100, 300), 100);
    cr_expect_eq(ana_oom_need(ANA_OOM_UNKNOWN, 100, 0), 100);
    cr_expect_str_eq(ana_oom_kind_name(ANA_OOM_FRAGMENTATION), "fragmentation");
}

/* fp32 AdamW training, 1e6 params: weights 4e6, optimizer 8e6, gradients 4e6,
 * activations 9e6 in 4 allocations, temporary 1e6; asked 20e6 with 14e6 free: need 6e6.
 *   factored optimizer   8e6                        covers
 *   micro-batch f=2:     10e6 - 5e6 = 5e6 < 6e6; f=4: 10e6 - 2.5e6 = 7.5e6  covers
 *   8-bit optimizer      8e6 - 2 x 1e6 = 6e6        covers (equal)
 *   checkpointing        9e6 x (1 - 1/sqrt(4)) = 4.5e6
 *   mixed precision      9e6 / 2 - 2 x 1e6 = 2.5e6
 *   free temporaries     1e6
 * in that order; no expandable segments (not fragmentation). */
Test(oom, fits_fp32_adamw_exhaustion)
{
    ana_oom_figures g = { .act_allocs = 4, .params = 1e6, .weights_16bit = 0,
                          .kind = ANA_OOM_EXHAUSTION, .request = 20000000, .need = 6000000 };
    g.live[W] = 4000000, g.live[O] = 8000000, g.live[G] = 4000000;
    g.live[A] = 9000000, g.live[T] = 1000000;
    ana_oom_fit f[ANA_OOM_MAX_FITS];
    size_t n = ana_oom_fits(&g, f);
    cr_assert_eq(n, 6);
    static const struct { int tech; int64_t bytes; int covers; } want[] = {
        { ANA_TECH_OPTIM_FACTORED, 8000000, 1 }, { ANA_TECH_MICROBATCH, 7500000, 1 },
        { ANA_TECH_OPTIM_8BIT, 6000000, 1 },     { ANA_TECH_CHECKPOINTING, 4500000, 0 },
        { ANA_TECH_MIXED_PRECISION, 2500000, 0 }, { ANA_TECH_FREE_TEMPORARIES, 1000000, 0 },
    };
    for (size_t i = 0; i < n; i++) {
        cr_expect_eq(f[i].tech, want[i].tech, "fit %zu is %s", i, ana_tech_key(f[i].tech));
        cr_expect_eq(f[i].bytes_saved, want[i].bytes, "fit %zu saves %lld", i,
                     (long long)f[i].bytes_saved);
        cr_expect_eq(f[i].covers, want[i].covers, "fit %zu", i);
    }
    cr_expect_eq(fit_of(f, n, ANA_TECH_MICROBATCH)->factor, 4);
    cr_expect_eq(fit_of(f, n, ANA_TECH_CHECKPOINTING)->factor, 4);
    cr_expect_null(fit_of(f, n, ANA_TECH_EXPANDABLE));
}

/* Small activations in fp32 training: 1e6 / 2 - 2 x 1e6 = -1.5e6, listed last, no cover.
 * One activation allocation (an arena): no checkpointing. No params → no 8-bit item. */
Test(oom, fits_mixed_precision_costs_memory)
{
    ana_oom_figures g = { .act_allocs = 1, .params = 1e6, .kind = ANA_OOM_EXHAUSTION,
                          .request = 100, .need = 50 };
    g.live[W] = 4000000, g.live[G] = 4000000, g.live[A] = 1000000;
    ana_oom_fit f[ANA_OOM_MAX_FITS];
    size_t n = ana_oom_fits(&g, f);
    cr_assert_eq(n, 2); /* micro-batch, mixed precision */
    cr_expect_null(fit_of(f, n, ANA_TECH_CHECKPOINTING));
    cr_expect_eq(f[1].tech, ANA_TECH_MIXED_PRECISION);
    cr_expect_eq(f[1].bytes_saved, -1500000);
    cr_expect_eq(f[1].covers, 0);
    /* micro-batch: need 50; f = 2 saves 1e6 - 5e5 = 5e5 */
    cr_expect_eq(f[0].tech, ANA_TECH_MICROBATCH);
    cr_expect_eq(f[0].bytes_saved, 500000);
    cr_expect_eq(f[0].factor, 2);
    cr_expect_eq(f[0].covers, 1);
}

/* Fragmentation, 16-bit weights already, optimizer at 2 B/param (8-bit already):
 * expandable segments save the request (3000) and cover it; factored optimizer saves the
 * 2e6 optimizer bytes; no 8-bit (2e6 <= 2.5 x 1e6), no mixed precision (16-bit weights). */
Test(oom, fits_fragmentation)
{
    ana_oom_figures g = { .params = 1e6, .weights_16bit = 1, .kind = ANA_OOM_FRAGMENTATION,
                          .request = 3000, .need = 3000 };
    g.live[W] = 6000000, g.live[O] = 2000000;
    ana_oom_fit f[ANA_OOM_MAX_FITS];
    size_t n = ana_oom_fits(&g, f);
    cr_assert_eq(n, 2);
    cr_expect_eq(f[0].tech, ANA_TECH_OPTIM_FACTORED);
    cr_expect_eq(f[0].bytes_saved, 2000000);
    cr_expect_eq(f[1].tech, ANA_TECH_EXPANDABLE);
    cr_expect_eq(f[1].bytes_saved, 3000);
    cr_expect_eq(f[1].covers, 1);
}

/* No micro-batch factor covers: activations 1000 + temporary 0, need 2000; f = 64 saves
 * 1000 - ceil(1000/64) = 1000 - 16 = 984. Inference in fp32 (no optimizer, no gradients):
 * 16-bit weights save 4000 / 2 = 2000 (no parameter count needed) and cover. */
Test(oom, fits_inference_and_no_factor_enough)
{
    ana_oom_figures g = { .act_allocs = 1, .kind = ANA_OOM_UNKNOWN, .request = 2000, .need = 2000 };
    g.live[W] = 4000, g.live[A] = 1000;
    ana_oom_fit f[ANA_OOM_MAX_FITS];
    size_t n = ana_oom_fits(&g, f);
    cr_assert_eq(n, 2);
    cr_expect_eq(f[0].tech, ANA_TECH_MIXED_PRECISION);
    cr_expect_eq(f[0].bytes_saved, 2000);
    cr_expect_eq(f[0].covers, 1);
    cr_expect_eq(f[1].tech, ANA_TECH_MICROBATCH);
    cr_expect_eq(f[1].factor, 64);
    cr_expect_eq(f[1].bytes_saved, 984);
    cr_expect_eq(f[1].covers, 0);
}

Test(oom, fits_nothing_without_evidence)
{
    ana_oom_figures g = { .kind = ANA_OOM_EXHAUSTION, .request = 10, .need = 5 };
    g.live[ANA_MCAT_UNATTRIBUTED] = 1000000, g.live[ANA_MCAT_FUNCTIONALITY] = 5000;
    ana_oom_fit f[ANA_OOM_MAX_FITS];
    cr_expect_eq(ana_oom_fits(&g, f), 0);
}

Test(oom, where_text)
{
    ana_oom o = { .where = ANA_OOM_AFTER_LAST, .step = 6 };
    char buf[96];
    ana_oom_where_text(&o, buf, sizeof(buf));
    cr_expect_str_eq(buf, "in the step after step 5, which did not finish");
    o = (ana_oom){ .where = ANA_OOM_IN_STEP, .step = 2 };
    ana_oom_where_text(&o, buf, sizeof(buf));
    cr_expect_str_eq(buf, "in step 2");
    o = (ana_oom){ .where = ANA_OOM_BEFORE_FIRST };
    ana_oom_where_text(&o, buf, sizeof(buf));
    cr_expect_str_eq(buf, "before the first step");
}

/* ------------------------------------------------------------------ advice */

/* fp32 AdamW, 1e6 params: weights 4e6, optimizer 8e6, gradients 4e6, activations 2e6.
 * Largest: the optimizer states → 8-bit: 8e6 - 2e6 = 6e6. Weights at 4 B/param: no mixed
 * precision item. Optimizer at 8 B/param: SGD with momentum saves 8e6 - 4e6 = 4e6 (8-bit
 * already named). */
Test(advice, fp32_adamw)
{
    ana_advice_figures g = { .params = 1e6 };
    g.cat[W] = 4000000, g.cat[O] = 8000000, g.cat[G] = 4000000, g.cat[A] = 2000000;
    g.count[A] = 5;
    ana_advice a;
    ana_advice_compute(&g, &a);
    cr_assert_eq(a.n, 2);
    cr_expect_str_eq(a.items[0].topic, "largest_category");
    cr_expect_eq(a.items[0].cat, O);
    cr_expect_eq(a.items[0].tech, ANA_TECH_OPTIM_8BIT);
    cr_expect_eq(a.items[0].bytes_saved, 6000000);
    cr_expect_str_eq(a.items[1].topic, "optimizer_states");
    cr_expect_eq(a.items[1].tech, ANA_TECH_SGD_MOMENTUM);
    cr_expect_eq(a.items[1].bytes_saved, 4000000);
}

/* Mixed precision at a small batch, 1e6 params: weights 6e6 (6 B/param), optimizer 4e6,
 * gradients 2e6, activations 5e5. Largest: the weights, in training → no technique, no
 * item. The 16-bit copy costs 2e6 > 5e5 activations: dropping it saves 2e6 - 5e5 = 1.5e6.
 * Optimizer at 4 B/param: 8-bit saves 4e6 - 2e6 = 2e6; not above 4.5 → no SGD item. */
Test(advice, mixed_precision_small_batch)
{
    ana_advice_figures g = { .params = 1e6, .weights_16bit = 1 };
    g.cat[W] = 6000000, g.cat[O] = 4000000, g.cat[G] = 2000000, g.cat[A] = 500000;
    g.count[A] = 3;
    ana_advice a;
    ana_advice_compute(&g, &a);
    cr_assert_eq(a.n, 2);
    cr_expect_str_eq(a.items[0].topic, "mixed_precision");
    cr_expect_eq(a.items[0].tech, ANA_TECH_FP32);
    cr_expect_eq(a.items[0].bytes_saved, 1500000);
    cr_expect_str_eq(a.items[1].topic, "optimizer_states");
    cr_expect_eq(a.items[1].tech, ANA_TECH_OPTIM_8BIT);
    cr_expect_eq(a.items[1].bytes_saved, 2000000);
}

/* No parameter count: activations 10e6 in one arena + temporary 2e6, weights 4e6.
 * Largest: activations in one allocation → half the micro-batch: (10e6 + 2e6) / 2 = 6e6.
 * Nothing per parameter. With 16 allocations instead: checkpointing 10e6 x (1 - 1/4). */
Test(advice, activations_without_params)
{
    ana_advice_figures g = { 0 };
    g.cat[A] = 10000000, g.cat[T] = 2000000, g.cat[W] = 4000000;
    g.count[A] = 1;
    ana_advice a;
    ana_advice_compute(&g, &a);
    cr_assert_eq(a.n, 1);
    cr_expect_eq(a.items[0].cat, A);
    cr_expect_eq(a.items[0].tech, ANA_TECH_MICROBATCH);
    cr_expect_eq(a.items[0].bytes_saved, 6000000);
    g.count[A] = 16;
    ana_advice_compute(&g, &a);
    cr_assert_eq(a.n, 1);
    cr_expect_eq(a.items[0].tech, ANA_TECH_CHECKPOINTING);
    cr_expect_eq(a.items[0].bytes_saved, 7500000);
}

/* Inference in fp32: weights 4e6 the largest, no optimizer or gradients → 16-bit weights
 * save 2e6. Unattributed bytes alone give no advice. */
Test(advice, inference_and_no_evidence)
{
    ana_advice_figures g = { 0 };
    g.cat[W] = 4000000, g.cat[A] = 1000000, g.count[A] = 1;
    ana_advice a;
    ana_advice_compute(&g, &a);
    cr_assert_eq(a.n, 1);
    cr_expect_eq(a.items[0].cat, W);
    cr_expect_eq(a.items[0].tech, ANA_TECH_MIXED_PRECISION);
    cr_expect_eq(a.items[0].bytes_saved, 2000000);
    /* More unattributed than the largest category: the item says so. */
    ana_advice_figures hidden = { 0 };
    hidden.cat[T] = 512, hidden.cat[ANA_MCAT_UNATTRIBUTED] = 7000;
    ana_advice_compute(&hidden, &a);
    cr_assert_eq(a.n, 1);
    cr_expect_eq(a.items[0].tech, ANA_TECH_FREE_TEMPORARIES);
    cr_expect_eq(a.items[0].bytes_saved, 512);
    cr_expect(strstr(a.items[0].text, "unattributed") != NULL, "%s", a.items[0].text);
    ana_advice_figures none = { 0 };
    none.cat[ANA_MCAT_UNATTRIBUTED] = 1u << 30;
    ana_advice_compute(&none, &a);
    cr_expect_eq(a.n, 0);
}
