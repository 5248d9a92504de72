/* diff_markdown.c — `anatomist diff --format markdown`: a pull-request comment with the
 * verdict and tables of the same figures as the JSON, numbers formatted for people
 * (analyses/diff_figures.c). Part of views/: called by `anatomist diff` (cli/cmd_diff.c).
 *
 * The comment stays under ANA_MD_MAX bytes whatever the traces hold (GitHub refuses
 * comments over 64 KiB): names are cut, and the ranked tables stop at a byte budget
 * with "N more" when their rows would not fit. */
#include "analyses/diff_int.h"
#include "views/diff_write.h"

#include "views/report_write.h"
#include "model/util.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define ANA_MD_MAX 60000     /* bytes, the whole comment */
#define ANA_MD_NAME_MAX 120  /* bytes of a kernel name or a site in a cell */
#define ANA_MD_TAIL 400      /* bytes kept for the closing line */
#define ANA_MD_DETAILS 10    /* tables longer than this are collapsed */

/* ------------------------------------------------------------ output with a size budget */

typedef struct ana_md {
    FILE *f;
    size_t used;
} ana_md;

static void ana_md_put(ana_md *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void ana_md_put(ana_md *m, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vfprintf(m->f, fmt, ap);
    va_end(ap);
    m->used += n > 0 ? (size_t)n : 0;
}

/* A name as a code span in a table cell: cut, '|' escaped, no backtick or newline. */
static void ana_md_name(const char *s, char *buf, size_t cap)
{
    size_t o = 0, n = strlen(s);
    int cut = n > ANA_MD_NAME_MAX;
    size_t keep = cut ? ANA_MD_NAME_MAX - 3 : n;
    for (size_t i = 0; i < keep && o + 6 < cap; i++) {
        char c = s[i] == '`' ? '\'' : s[i] == '\n' || s[i] == '\r' ? ' ' : s[i];
        if (c == '|')
            buf[o++] = '\\';
        buf[o++] = c;
    }
    if (cut) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o] = 0;
}

/* The base, head, delta and change cells of a row (the line goes on). */
static void ana_md_cells(ana_md *m, const ana_diff_row *r)
{
    char b[48] = "n/a", h[48] = "n/a", dl[48] = "n/a", c[48];
    double delta;
    if (r->has_base)
        ana_diff_fmt(r->unit, r->base, b, sizeof(b));
    if (r->has_head)
        ana_diff_fmt(r->unit, r->head, h, sizeof(h));
    if (ana_diff_delta(r, &delta))
        ana_diff_fmt_delta(r->unit, delta, dl, sizeof(dl));
    ana_diff_fmt_change(r, c, sizeof(c));
    ana_md_put(m, " %s | %s | %s | %s |", b, h, dl, c);
}

static void ana_md_table(ana_md *m, const char *title, const char *first,
                         const ana_diff_row *rows, size_t n)
{
    ana_md_put(m, "\n#### %s\n\n| %s | base | head | delta | change |\n"
               "|---|---:|---:|---:|---:|\n", title, first);
    for (size_t i = 0; i < n; i++) {
        ana_md_put(m, "| %s |", rows[i].label);
        ana_md_cells(m, &rows[i]);
        ana_md_put(m, "\n");
    }
}

static void ana_md_side(ana_md *m, const char *what, const ana_report *r)
{
    char name[ANA_MD_NAME_MAX + 64], dur[32], *cmd = ana_report_cmdline(r->t);
    const ana_trace *t = r->t;
    ana_md_name(t->path ? t->path : "?", name, sizeof(name));
    ana_fmt_ns(t->has_time ? t->last_ns - t->first_ns : 0, dur, sizeof(dur));
    ana_md_put(m, "| %s | `%s` | %zu | %s |", what, name, r->anat.steps.n_steps, dur);
    ana_md_name(cmd[0] ? cmd : "?", name, sizeof(name));
    ana_md_put(m, " `%s` |\n", name);
    free(cmd);
}

static void ana_md_head(ana_md *m, const ana_diff *d)
{
    size_t crossed = 0;
    ana_md_put(m, "### Anatomist diff\n\n**%s**\n\n", d->verdict);
    for (size_t i = 0; i < d->n_results; i++)
        crossed += d->results[i].crossed;
    if (d->n_results)
        ana_md_put(m, "%s %zu of %zu threshold%s crossed.\n\n", crossed ? ":x:" : ":white_check_mark:",
                   crossed, d->n_results, d->n_results == 1 ? "" : "s");
    ana_md_put(m, "| run | trace | steps | duration | command |\n|---|---|---:|---:|---|\n");
    ana_md_side(m, "base", d->base);
    ana_md_side(m, "head", d->head);
}

static void ana_md_thresholds(ana_md *m, const ana_diff *d)
{
    if (!d->n_results)
        return;
    ana_md_put(m, "\n#### Thresholds (--fail-on)\n\n| threshold | value | result |\n"
               "|---|---:|---|\n");
    for (size_t i = 0; i < d->n_results; i++) {
        const ana_diff_result *r = &d->results[i];
        char v[48] = "n/a", spec[96];
        int unit = r->lim.cmp == ANA_DIFF_RATIO ? -1 : ana_diff_key_unit(r->lim.key);
        if (r->known && unit < 0)
            snprintf(v, sizeof(v), "%+.1f%%", 100.0 * r->value);
        else if (r->known && r->lim.cmp == ANA_DIFF_DELTA)
            ana_diff_fmt_delta(unit, r->value, v, sizeof(v));
        else if (r->known)
            ana_diff_fmt(unit, r->value, v, sizeof(v));
        ana_md_name(r->lim.spec, spec, sizeof(spec));
        ana_md_put(m, "| `%s` | %s | %s |\n", spec, v,
                   !r->known ? r->note : r->crossed ? "**crossed**" : "ok");
    }
}

/* Opens a ranked section; collapsed when it has many rows. */
static void ana_md_open(ana_md *m, const char *title, size_t rows, const char *what)
{
    ana_md_put(m, "\n#### %s\n\n", title);
    if (rows > ANA_MD_DETAILS)
        ana_md_put(m, "<details><summary>%zu %s</summary>\n\n", rows, what);
}

static void ana_md_close(ana_md *m, size_t rows, size_t shown, size_t total)
{
    if (shown < total)
        ana_md_put(m, "\n_... and %zu more (`--top 0 --format json` lists them all)._\n",
                   total - shown);
    if (rows > ANA_MD_DETAILS)
        ana_md_put(m, "\n</details>\n");
}

/* Kernels (unit ns) or sites (bytes), at most `budget` more bytes. */
static void ana_md_items(ana_md *m, const ana_diff *d, int kernels, size_t budget)
{
    const ana_diff_item *v = kernels ? d->kernels : d->sites;
    size_t n = kernels ? d->n_kernels : d->n_sites, want = ana_diff_shown(d, n), i;
    size_t stop = m->used + budget;
    if (!n)
        return;
    ana_md_open(m, kernels ? "Kernels, by change of GPU time (whole run)"
                           : "Allocation sites live at the peak, by change", want,
                kernels ? "kernels" : "sites");
    ana_md_put(m, kernels ? "| kernel | class | base | head | delta | change | executions |\n"
                            "|---|---|---:|---:|---:|---:|---:|\n"
                          : "| site | base | head | delta | change | allocations |\n"
                            "|---|---:|---:|---:|---:|---:|\n");
    for (i = 0; i < want && m->used + ANA_MD_NAME_MAX * 2 + 300 < stop; i++) {
        char name[ANA_MD_NAME_MAX * 2 + 8];
        ana_diff_row row = ana_diff_item_row(&v[i], kernels ? ANA_DU_NS : ANA_DU_BYTES);
        ana_md_name(v[i].name, name, sizeof(name));
        if (kernels)
            ana_md_put(m, "| `%s` | %s |", name, ana_class_name(v[i].cls));
        else
            ana_md_put(m, "| `%s` |", name);
        ana_md_cells(m, &row);
        ana_md_put(m, " %llu -> %llu |\n", (unsigned long long)v[i].base_count,
                   (unsigned long long)v[i].head_count);
    }
    ana_md_close(m, want, i, n);
}

/* New and vanished kernel names, at most `budget` more bytes. */
static void ana_md_names(ana_md *m, const ana_diff *d, size_t budget)
{
    static const char *const title[2] = { "New kernels", "Vanished kernels" };
    size_t stop = m->used + budget;
    for (int vanished = 0; vanished < 2; vanished++) {
        size_t n = vanished ? d->n_vanished : d->n_new, want = ana_diff_shown(d, n), shown = 0;
        size_t part = vanished ? stop : m->used + budget / 2;
        if (!n)
            continue;
        ana_md_open(m, title[vanished], want, vanished ? "vanished" : "new");
        for (size_t i = 0; i < d->n_kernels && shown < want; i++) {
            const ana_diff_item *it = &d->kernels[i];
            char name[ANA_MD_NAME_MAX * 2 + 8], ns[48];
            if (vanished ? it->in_head : it->in_base)
                continue;
            if (m->used + sizeof(name) + 100 > part)
                break;
            ana_md_name(it->name, name, sizeof(name));
            ana_diff_fmt(ANA_DU_NS, (double)(vanished ? it->base : it->head), ns, sizeof(ns));
            ana_md_put(m, "- `%s` (%s, %s)\n", name, ana_class_name(it->cls), ns);
            shown++;
        }
        ana_md_close(m, want, shown, n);
    }
}

/* Bytes a section of weight w gets of what is left, out of the weight still to come. */
static size_t ana_md_share(const ana_md *m, size_t w, size_t of)
{
    size_t left = ANA_MD_MAX > m->used + ANA_MD_TAIL ? ANA_MD_MAX - m->used - ANA_MD_TAIL : 0;
    return of ? left / of * w : 0;
}

void ana_diff_write_markdown(const ana_diff *d, FILE *out)
{
    ana_md m = { out, 0 };
    ana_md_head(&m, d);
    ana_md_thresholds(&m, d);
    ana_md_table(&m, "Headline", "metric", d->metrics, ANA_DIFF_METRICS);
    ana_md_table(&m, d->per_step ? "GPU time by class, mean per step"
                                 : "GPU time by class, whole run (a run has no steps)",
                 "class", d->classes, ANA_CLASS_COUNT);
    ana_md_table(&m, "Memory by category at the peak", "category", d->cats, ANA_MCAT_COUNT);
    /* what is left goes to the ranked sections that have rows, by weight */
    size_t w_kernels = d->n_kernels ? 5 : 0, w_names = d->n_new + d->n_vanished ? 2 : 0;
    size_t w_sites = d->n_sites ? 3 : 0;
    ana_md_items(&m, d, 1, ana_md_share(&m, w_kernels, w_kernels + w_names + w_sites));
    ana_md_names(&m, d, ana_md_share(&m, w_names, w_names + w_sites));
    ana_md_items(&m, d, 0, ana_md_share(&m, w_sites, w_sites));
    ana_md_put(&m, "\n<sub>`anatomist diff` (docs/diff.md): time by class is the %s; "
               "kernels are the whole run's GPU time; sites are what was live at each run's "
               "memory peak.</sub>\n", d->per_step ? "mean per step" : "whole run's");
}
