/* diff_json.c — `anatomist diff --format json` (schema "anatomist.diff/1", docs/diff.md):
 * every row of a diff (analyses/diff.h) with base, head, delta and ratio, the ranked
 * kernels and sites, the --fail-on results and the verdict. Part of views/: called by
 * `anatomist diff` (cli/cmd_diff.c) and the diff page (html.c). */
#include "analyses/diff_int.h"
#include "views/diff_write.h"

#include "analyses/report.h"
#include "model/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void ana_diff_json_num(ana_json *j, const char *key, int unit, int known, double v)
{
    ana_json_key(j, key);
    if (!known)
        ana_json_null(j);
    else if (unit == ANA_DU_RATIO)
        ana_json_dbl(j, v);
    else
        ana_json_i64(j, (int64_t)v);
}

/* "unit", "base", "head", "delta", "ratio" members of a row. */
static void ana_diff_json_row(ana_json *j, const ana_diff_row *r)
{
    double delta, ratio;
    int has_delta = ana_diff_delta(r, &delta), has_ratio = ana_diff_ratio(r, &ratio);
    ana_json_kstr(j, "unit", ana_diff_unit_name(r->unit));
    ana_diff_json_num(j, "base", r->unit, r->has_base, r->base);
    ana_diff_json_num(j, "head", r->unit, r->has_head, r->head);
    ana_diff_json_num(j, "delta", r->unit, has_delta, delta);
    ana_json_key(j, "ratio");
    has_ratio ? ana_json_dbl(j, ratio) : ana_json_null(j);
}

static void ana_diff_json_side(ana_json *j, const char *key, const ana_report *r)
{
    const ana_trace *t = r->t;
    char *cmd = ana_report_cmdline(t);
    ana_json_key(j, key);
    ana_json_obj_begin(j);
    ana_json_kstr(j, "path", t->path);
    ana_json_kstr(j, "command", cmd[0] ? cmd : NULL);
    ana_json_ku64(j, "steps", r->anat.steps.n_steps);
    ana_json_ku64(j, "duration_ns", t->has_time ? t->last_ns - t->first_ns : 0);
    ana_json_obj_end(j);
    free(cmd);
}

static void ana_diff_json_rows(ana_json *j, const char *key, const char *name,
                               const ana_diff_row *rows, size_t n)
{
    ana_json_key(j, key);
    ana_json_arr_begin(j);
    for (size_t i = 0; i < n; i++) {
        ana_json_obj_begin(j);
        if (!name) {
            ana_json_kstr(j, "key", rows[i].key);
            ana_json_kstr(j, "label", rows[i].label);
        } else {
            ana_json_kstr(j, name, rows[i].label);
            ana_json_kstr(j, "key", rows[i].key);
        }
        ana_diff_json_row(j, &rows[i]);
        ana_json_obj_end(j);
    }
    ana_json_arr_end(j);
}

static void ana_diff_json_items(ana_json *j, const ana_diff *d, int kernels)
{
    const ana_diff_item *v = kernels ? d->kernels : d->sites;
    size_t n = kernels ? d->n_kernels : d->n_sites;
    ana_json_ku64(j, kernels ? "kernels_total" : "alloc_sites_total", n);
    ana_json_key(j, kernels ? "kernels" : "alloc_sites");
    ana_json_arr_begin(j);
    for (size_t i = 0; i < ana_diff_shown(d, n); i++) {
        ana_diff_row row = ana_diff_item_row(&v[i], kernels ? ANA_DU_NS : ANA_DU_BYTES);
        ana_json_obj_begin(j);
        ana_json_kstr(j, kernels ? "name" : "site", v[i].name);
        if (kernels)
            ana_json_kstr(j, "class", ana_class_name(v[i].cls));
        ana_json_kstr(j, "status", ana_diff_item_status(&v[i]));
        ana_diff_json_row(j, &row);
        ana_json_ku64(j, "base_count", v[i].base_count);
        ana_json_ku64(j, "head_count", v[i].head_count);
        ana_json_obj_end(j);
    }
    ana_json_arr_end(j);
}

static void ana_diff_json_names(ana_json *j, const ana_diff *d, const char *key, int vanished)
{
    ana_json_key(j, key);
    ana_json_arr_begin(j);
    for (size_t i = 0; i < d->n_kernels; i++)
        if (vanished ? !d->kernels[i].in_head : !d->kernels[i].in_base)
            ana_json_str(j, d->kernels[i].name);
    ana_json_arr_end(j);
}

static void ana_diff_json_results(ana_json *j, const ana_diff *d)
{
    static const char *const cmp[] = { "ratio", "delta", "head" };
    ana_json_key(j, "thresholds");
    ana_json_arr_begin(j);
    for (size_t i = 0; i < d->n_results; i++) {
        const ana_diff_result *r = &d->results[i];
        int unit = r->lim.cmp == ANA_DIFF_RATIO ? ANA_DU_RATIO : ana_diff_key_unit(r->lim.key);
        ana_json_obj_begin(j);
        ana_json_kstr(j, "spec", r->lim.spec);
        ana_json_kstr(j, "key", r->lim.key);
        ana_json_kstr(j, "op", r->lim.op);
        ana_diff_json_num(j, "limit", unit, 1, r->lim.limit);
        ana_json_key(j, "relative");
        ana_json_bool(j, r->lim.cmp == ANA_DIFF_RATIO);
        ana_json_kstr(j, "compare", cmp[r->lim.cmp]);
        ana_diff_json_num(j, "value", unit, r->known, r->value);
        ana_json_key(j, "crossed");
        ana_json_bool(j, r->crossed);
        ana_json_kstr(j, "note", r->note[0] ? r->note : NULL);
        ana_json_obj_end(j);
    }
    ana_json_arr_end(j);
}

void ana_diff_write_json_value(const ana_diff *d, ana_json *j)
{
    ana_json_obj_begin(j);
    ana_json_kstr(j, "schema", "anatomist.diff/1");
    ana_diff_json_side(j, "base", d->base);
    ana_diff_json_side(j, "head", d->head);
    ana_json_kstr(j, "verdict", d->verdict);
    ana_json_key(j, "per_step");
    ana_json_bool(j, d->per_step);
    ana_json_ku64(j, "top", d->top);
    ana_diff_json_rows(j, "metrics", NULL, d->metrics, ANA_DIFF_METRICS);
    ana_diff_json_rows(j, "time_by_class", "class", d->classes, ANA_CLASS_COUNT);
    ana_diff_json_rows(j, "memory_at_peak", "category", d->cats, ANA_MCAT_COUNT);
    ana_diff_json_items(j, d, 1);
    ana_diff_json_names(j, d, "new_kernels", 0);
    ana_diff_json_names(j, d, "vanished_kernels", 1);
    ana_diff_json_items(j, d, 0);
    ana_diff_json_results(j, d);
    ana_json_obj_end(j);
}

void ana_diff_write_json(const ana_diff *d, FILE *out)
{
    ana_json j;
    ana_json_init(&j, out);
    ana_diff_write_json_value(d, &j);
    ana_json_finish(&j);
}
