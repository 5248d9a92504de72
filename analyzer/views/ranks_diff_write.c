/* ranks_diff_write.c — the diff of two jobs (analyses/ranks_diff.h) as a pull-request
 * comment (markdown) and as JSON (schema "anatomist.ranks-diff/1", docs/ranks.md). Part of
 * views/: called by `anatomist diff` (cli/cmd_diff.c); calls analyses/ and model/. */
#include "views/diff_write.h"

#include "analyses/diff_int.h"
#include "model/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const ana_rank *ana_rd_find(const ana_ranks *rs, int64_t rank)
{
    for (size_t i = 0; i < rs->n; i++)
        if (rs->v[i].rank == rank)
            return &rs->v[i];
    return NULL;
}

static int ana_rd_flagged(const ana_ranks *rs, const ana_rank *k)
{
    for (size_t s = 0; k && s < rs->n_stragglers; s++)
        if (&rs->v[rs->stragglers[s].idx] == k)
            return 1;
    return 0;
}

static void ana_rd_md_row(FILE *f, const ana_diff_row *r)
{
    char b[48] = "n/a", h[48] = "n/a", c[48];
    if (r->has_base)
        ana_diff_fmt(r->unit, r->base, b, sizeof(b));
    if (r->has_head)
        ana_diff_fmt(r->unit, r->head, h, sizeof(h));
    ana_diff_fmt_change(r, c, sizeof(c));
    fprintf(f, "| %s | %s | %s | %s |\n", r->label, b, h, c);
}

static void ana_rd_md_stragglers(FILE *f, const char *side, const ana_ranks *rs)
{
    fprintf(f, "- %s: ", side);
    if (!rs->n_stragglers)
        fprintf(f, "none");
    for (size_t s = 0; s < rs->n_stragglers; s++)
        fprintf(f, "%srank %lld (%s)", s ? ", " : "", (long long)rs->v[rs->stragglers[s].idx].rank,
                ana_rank_metric_name(rs->stragglers[s].metric));
    fprintf(f, "\n");
}

void ana_ranks_diff_write_markdown(const ana_ranks_diff *x, FILE *f)
{
    const ana_ranks *b = x->side[0], *h = x->side[1];
    fprintf(f, "### Anatomist diff of two jobs\n\nbase: %zu ranks, head: %zu ranks\n\n", b->n,
            h->n);
    for (size_t i = 0; i < x->d.n_results; i++)
        if (x->d.results[i].crossed)
            fprintf(f, ":x: threshold crossed: `%s`\n\n", x->d.results[i].lim.spec);
    fprintf(f, "| figure | base | head | change |\n|---|---:|---:|---:|\n");
    for (int m = 0; m < ANA_DIFF_METRICS; m++)
        if (m != 7)
            ana_rd_md_row(f, &x->d.metrics[m]);
    for (int e = 0; e < 3; e++)
        ana_rd_md_row(f, &x->extra[e]);
    fprintf(f, "\n#### GPU time by class (sums over ranks)\n\n| class | base | head | change |\n"
               "|---|---:|---:|---:|\n");
    for (int c = 0; c < ANA_CLASS_COUNT; c++)
        ana_rd_md_row(f, &x->d.classes[c]);
    fprintf(f, "\n#### Per rank: median step time\n\n| rank | base | head | change |\n"
               "|---:|---:|---:|---:|\n");
    for (int side = 0; side < 2; side++)
        for (size_t i = 0; i < x->side[side]->n; i++) {
            int64_t q = x->side[side]->v[i].rank;
            const ana_rank *kb = ana_rd_find(b, q), *kh = ana_rd_find(h, q);
            if (side == 1 && kb)
                continue; /* listed with the base */
            char label[64];
            snprintf(label, sizeof(label), "%lld%s%s", (long long)q,
                     ana_rd_flagged(b, kb) ? " (base straggler)" : "",
                     ana_rd_flagged(h, kh) ? " (head straggler)" : "");
            ana_diff_row r = { NULL, label, ANA_DU_NS, kb ? (double)kb->step_median_ns : 0,
                               kh ? (double)kh->step_median_ns : 0, kb && kb->n_steps,
                               kh && kh->n_steps };
            ana_rd_md_row(f, &r);
        }
    fprintf(f, "\n#### Stragglers\n\n");
    ana_rd_md_stragglers(f, "base", b);
    ana_rd_md_stragglers(f, "head", h);
}

/* A figure: exact integers (below 2^53 as the rows hold them) except ratios. */
static void ana_rd_json_num(ana_json *j, const char *key, int unit, int known, double v)
{
    ana_json_key(j, key);
    if (!known)
        ana_json_null(j);
    else if (unit == ANA_DU_RATIO)
        ana_json_dbl(j, v);
    else
        ana_json_i64(j, (int64_t)llround(v));
}

static void ana_rd_json_row(ana_json *j, const char *key, const ana_diff_row *r)
{
    double v;
    ana_json_obj_begin(j);
    ana_json_kstr(j, "key", key);
    ana_json_kstr(j, "label", r->label);
    ana_json_kstr(j, "unit", ana_diff_unit_name(r->unit));
    ana_rd_json_num(j, "base", r->unit, r->has_base, r->base);
    ana_rd_json_num(j, "head", r->unit, r->has_head, r->head);
    int known = ana_diff_delta(r, &v);
    ana_rd_json_num(j, "delta", r->unit, known, v);
    ana_json_key(j, "ratio");
    ana_diff_ratio(r, &v) ? ana_json_dbl(j, v) : ana_json_null(j);
    ana_json_obj_end(j);
}

static void ana_rd_json_side(ana_json *j, const char *key, const ana_ranks *rs)
{
    ana_json_key(j, key);
    ana_json_obj_begin(j);
    ana_json_ku64(j, "ranks", rs->n);
    ana_json_key(j, "sources");
    ana_json_arr_begin(j);
    for (size_t i = 0; i < rs->n; i++)
        ana_json_str(j, rs->v[i].source);
    ana_json_arr_end(j);
    ana_json_key(j, "stragglers");
    ana_json_arr_begin(j);
    for (size_t s = 0; s < rs->n_stragglers; s++) {
        ana_json_obj_begin(j);
        ana_json_ki64(j, "rank", rs->v[rs->stragglers[s].idx].rank);
        ana_json_kstr(j, "metric", ana_rank_metric_name(rs->stragglers[s].metric));
        ana_json_obj_end(j);
    }
    ana_json_arr_end(j);
    ana_json_obj_end(j);
}

static void ana_rd_json_ranks(ana_json *j, const ana_ranks_diff *x)
{
    ana_json_key(j, "ranks");
    ana_json_arr_begin(j);
    for (int side = 0; side < 2; side++)
        for (size_t i = 0; i < x->side[side]->n; i++) {
            int64_t q = x->side[side]->v[i].rank;
            const ana_rank *k[2] = { ana_rd_find(x->side[0], q), ana_rd_find(x->side[1], q) };
            if (side == 1 && k[0])
                continue;
            ana_json_obj_begin(j);
            ana_json_ki64(j, "rank", q);
            for (int w = 0; w < 2; w++) {
                ana_json_key(j, w ? "head_step_median_ns" : "base_step_median_ns");
                k[w] ? ana_json_u64(j, k[w]->step_median_ns) : ana_json_null(j);
                ana_json_key(j, w ? "head_work_median_ns" : "base_work_median_ns");
                k[w] ? ana_json_u64(j, k[w]->work_median_ns) : ana_json_null(j);
                ana_json_key(j, w ? "head_straggler" : "base_straggler");
                ana_json_bool(j, ana_rd_flagged(x->side[w], k[w]));
            }
            ana_json_obj_end(j);
        }
    ana_json_arr_end(j);
}

static void ana_rd_json_results(ana_json *j, const ana_ranks_diff *x)
{
    ana_json_key(j, "thresholds");
    ana_json_arr_begin(j);
    for (size_t i = 0; i < x->d.n_results; i++) {
        const ana_diff_result *r = &x->d.results[i];
        ana_json_obj_begin(j);
        ana_json_kstr(j, "spec", r->lim.spec);
        ana_json_key(j, "value");
        r->known ? ana_json_dbl(j, r->value) : ana_json_null(j);
        ana_json_key(j, "crossed");
        ana_json_bool(j, r->crossed);
        ana_json_kstr(j, "note", r->note[0] ? r->note : NULL);
        ana_json_obj_end(j);
    }
    ana_json_arr_end(j);
}

void ana_ranks_diff_write_json(const ana_ranks_diff *x, FILE *f)
{
    static const char *const ekeys[3] = { "work-time", "collective-time", "slowest-step-time" };
    ana_json j;
    ana_json_init(&j, f);
    ana_json_obj_begin(&j);
    ana_json_kstr(&j, "schema", "anatomist.ranks-diff/1");
    ana_rd_json_side(&j, "base", x->side[0]);
    ana_rd_json_side(&j, "head", x->side[1]);
    ana_json_key(&j, "metrics");
    ana_json_arr_begin(&j);
    for (int m = 0; m < ANA_DIFF_METRICS; m++)
        ana_rd_json_row(&j, x->d.metrics[m].key, &x->d.metrics[m]);
    for (int e = 0; e < 3; e++)
        ana_rd_json_row(&j, ekeys[e], &x->extra[e]);
    ana_json_arr_end(&j);
    ana_json_key(&j, "time_by_class");
    ana_json_arr_begin(&j);
    for (int c = 0; c < ANA_CLASS_COUNT; c++)
        ana_rd_json_row(&j, x->d.classes[c].key, &x->d.classes[c]);
    ana_json_arr_end(&j);
    ana_json_key(&j, "memory_at_peak");
    ana_json_arr_begin(&j);
    for (int c = 0; c < ANA_MCAT_COUNT; c++)
        ana_rd_json_row(&j, x->d.cats[c].key, &x->d.cats[c]);
    ana_json_arr_end(&j);
    ana_rd_json_ranks(&j, x);
    ana_rd_json_results(&j, x);
    ana_json_obj_end(&j);
    ana_json_finish(&j);
}
