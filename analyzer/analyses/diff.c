/* diff.c — see diff.h: the figures of two reports side by side, the ranked kernel and
 * allocation-site deltas and the verdict. Every base and head figure is the very value
 * `report --json` prints for that trace (docs/diff.md names the member it comes from).
 * Figures' arithmetic and formatting: diff_figures.c; --fail-on: diff_fail.c; the JSON
 * document and the markdown: views/diff_json.c, views/diff_markdown.c. Part of
 * analyses/: called by `anatomist diff` and the job diff (ranks_diff.c). */
#include "analyses/diff_int.h"

#include "analyses/report.h"
#include "model/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ANA_DIFF_SITE_FRAMES 4 /* innermost frames (of the program) that name a site */

enum { ANA_DM_STEP, ANA_DM_PEAK, ANA_DM_BUSY, ANA_DM_IDLE, ANA_DM_GPU_TIME, ANA_DM_END,
       ANA_DM_LAUNCHES, ANA_DM_MFU };

static const struct {
    const char *key, *label;
    int unit;
} ana_diff_metric_defs[ANA_DIFF_METRICS] = {
    { "step-time", "step time (median)", ANA_DU_NS },
    { "peak-memory", "peak memory", ANA_DU_BYTES },
    { "gpu-busy", "GPU busy", ANA_DU_NS },
    { "gpu-idle", "GPU idle", ANA_DU_NS },
    { "gpu-time", "GPU time (kernels, copies, sets)", ANA_DU_NS },
    { "memory-at-end", "memory live at the end", ANA_DU_BYTES },
    { "kernel-launches", "kernel launches", ANA_DU_COUNT },
    { "mfu", "model FLOPs utilisation", ANA_DU_RATIO },
};

/* A kernel name or site of one side, before the merge. */
typedef struct ana_diff_named {
    char *name;
    uint64_t v, count;
    int cls;
} ana_diff_named;

/* Metric m of r as `report --json` prints it; 0 when r does not know it. */
static int ana_diff_metric(const ana_report *r, int m, double *v)
{
    const ana_gpu_result *g = &r->gpu;
    switch (m) {
    case ANA_DM_STEP: *v = (double)r->anat.steps.median_ns; return r->anat.steps.n_steps > 0;
    case ANA_DM_PEAK: *v = (double)r->mem.peak_bytes; return 1;
    case ANA_DM_BUSY: *v = (double)r->anat.busy_ns; return 1;
    case ANA_DM_IDLE: *v = (double)r->anat.idle_ns; return 1;
    case ANA_DM_GPU_TIME:
        *v = (double)(g->kernels.total_ns + g->memcpy.total_ns + g->memset.total_ns);
        return 1;
    case ANA_DM_END: *v = (double)r->mem.live_end_bytes; return 1;
    case ANA_DM_LAUNCHES: *v = (double)r->t->launches; return 1;
    default: *v = r->anat.mfu; return r->anat.mfu >= 0;
    }
}

/* Time of class c: the mean per step of steps.list[i].by_class (rounded to the ns), or
 * the whole run's time.by_class. */
static double ana_diff_class_ns(const ana_report *r, int c, int per_step)
{
    const ana_anatomy *a = &r->anat;
    uint64_t sum = 0, n = a->steps.n_steps;
    if (!per_step)
        return (double)a->total.ns[c];
    ana_anat_rowcur rc;
    ana_anat_rowcur_init(&rc, &a->rows, &a->steps);
    for (size_t i = 0; i < n; i++)
        sum += ana_anat_row(&rc, i)->class_ns[c];
    return (double)((sum + n / 2) / n);
}

static void ana_diff_rows(ana_diff *d)
{
    const ana_report *side[2] = { d->base, d->head };
    for (int m = 0; m < ANA_DIFF_METRICS; m++) {
        ana_diff_row *row = &d->metrics[m];
        row->key = ana_diff_metric_defs[m].key;
        row->label = ana_diff_metric_defs[m].label;
        row->unit = ana_diff_metric_defs[m].unit;
        row->has_base = (uint8_t)ana_diff_metric(side[0], m, &row->base);
        row->has_head = (uint8_t)ana_diff_metric(side[1], m, &row->head);
    }
    static const char *const ckeys[ANA_CLASS_COUNT] = {
        "time:contraction", "time:normalization", "time:elementwise",
        "time:communication", "time:memory", "time:other" };
    for (int c = 0; c < ANA_CLASS_COUNT; c++)
        d->classes[c] = (ana_diff_row){ ckeys[c], ana_class_name(c), ANA_DU_NS,
                                        ana_diff_class_ns(side[0], c, d->per_step),
                                        ana_diff_class_ns(side[1], c, d->per_step), 1, 1 };
    static const char *const mkeys[ANA_MCAT_COUNT] = {
        "memory:weights", "memory:optimizer", "memory:gradients", "memory:activations",
        "memory:temporary", "memory:functionality", "memory:unattributed" };
    for (int c = 0; c < ANA_MCAT_COUNT; c++)
        d->cats[c] = (ana_diff_row){ mkeys[c], ana_mcat_name(c), ANA_DU_BYTES,
                                     (double)side[0]->mcat.at_peak[c],
                                     (double)side[1]->mcat.at_peak[c], 1, 1 };
}

/* ------------------------------------------------------------ kernels and sites */

static int ana_diff_named_cmp(const void *a, const void *b)
{
    return strcmp(((const ana_diff_named *)a)->name, ((const ana_diff_named *)b)->name);
}

/* Sorts v by name and sums entries of the same name; returns the new count. */
static size_t ana_diff_coalesce(ana_diff_named *v, size_t n)
{
    size_t o = 0;
    ana_sort(v, n, sizeof(*v), ana_diff_named_cmp);
    for (size_t i = 0; i < n; i++) {
        if (o && strcmp(v[o - 1].name, v[i].name) == 0) {
            if (v[i].v > v[o - 1].v)
                v[o - 1].cls = v[i].cls;
            v[o - 1].v += v[i].v;
            v[o - 1].count += v[i].count;
            free(v[i].name);
            continue;
        }
        v[o++] = v[i];
    }
    return o;
}

static uint64_t ana_diff_absdiff(uint64_t a, uint64_t b) { return a > b ? a - b : b - a; }

static int ana_diff_item_cmp(const void *a, const void *b)
{
    const ana_diff_item *x = a, *y = b;
    uint64_t dx = ana_diff_absdiff(x->base, x->head), dy = ana_diff_absdiff(y->base, y->head);
    uint64_t mx = x->base > x->head ? x->base : x->head;
    uint64_t my = y->base > y->head ? y->base : y->head;
    if (dx != dy)
        return dx > dy ? -1 : 1;
    if (mx != my)
        return mx > my ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Both sides' names (each sorted, coalesced, and taken over) as items, ranked. */
static ana_diff_item *ana_diff_merge(ana_diff_named *b, size_t nb, ana_diff_named *h,
                                     size_t nh, size_t *n)
{
    ana_diff_item *out = ana_xcalloc(nb + nh + 1, sizeof(*out));
    size_t i = 0, k = 0, o = 0;
    while (i < nb || k < nh) {
        int c = i == nb ? 1 : k == nh ? -1 : strcmp(b[i].name, h[k].name);
        ana_diff_item *it = &out[o++];
        if (c <= 0) {
            *it = (ana_diff_item){ .name = b[i].name, .base = b[i].v, .base_count = b[i].count,
                                   .cls = b[i].cls, .in_base = 1 };
            i++;
        }
        if (c >= 0) {
            if (c == 0)
                free(h[k].name);
            else
                it->name = h[k].name;
            it->head = h[k].v;
            it->head_count = h[k].count;
            it->cls = h[k].cls;
            it->in_head = 1;
            k++;
        }
    }
    ana_sort(out, o, sizeof(*out), ana_diff_item_cmp);
    *n = o;
    return out;
}

/* gpu.kernels_by_time of r: display name, GPU ns, executions, class. */
static size_t ana_diff_kernel_names(const ana_report *r, ana_diff_named **out)
{
    const ana_gpu_result *g = &r->gpu;
    ana_diff_named *v = ana_xcalloc(g->n_knames + 1, sizeof(*v));
    for (size_t i = 0; i < g->n_knames; i++)
        v[i] = (ana_diff_named){ ana_report_kernel_name(g->knames[i].k), g->knames[i].total_ns,
                                 g->knames[i].count, r->anat.knames[i].cls };
    *out = v;
    return ana_diff_coalesce(v, g->n_knames);
}

/* The site of a stack: its ANA_DIFF_SITE_FRAMES innermost frames outside the profiler,
 * up to main, outermost first, joined by " > "; a frame without a function is
 * module+0xoffset. A stack with Python frames: its innermost ANA_DIFF_SITE_FRAMES Python
 * frames, then the innermost native frame (what a Python program calls through — a
 * caching allocator, ctypes — is the same for every site; the Python frames are not).
 * Names, not addresses: the two runs may be different builds; no lines: an edit moves them. */
static char *ana_diff_site_key(const ana_report *r, uint64_t stack)
{
    const ana_frame *pick[ANA_DIFF_SITE_FRAMES + 1];
    const uint64_t *ip;
    char buf[2048];
    size_t np = 0, len = 0;
    if (stack == ANA_MEM_STACK_DRIVER)
        return ana_xstrdup("[driver]");
    size_t n = ana_stacks_frames(&r->t->stacks, stack, &ip);
    int has_py = 0;
    for (size_t i = 0; i < n && !has_py; i++)
        has_py = ana_py_is_frame(ip[i]);
    const ana_frame *native = NULL;
    for (size_t i = 0; i < n && np < ANA_DIFF_SITE_FRAMES; i++) {
        const ana_frame *f = ana_sym_lookup(r->sym, ip[i]);
        if (ana_sym_is_profiler(f))
            continue;
        if (has_py && !f->python) {
            if (!native && !np)
                native = f;
            continue;
        }
        pick[np++] = f;
        if (!f->python && f->function && strcmp(f->function, "main") == 0)
            break; /* what runs main (libc's start) says nothing of the site */
    }
    if (native) { /* innermost, so first in pick (which is innermost first) */
        memmove(pick + 1, pick, np * sizeof(pick[0]));
        pick[0] = native;
        np++;
    }
    if (!np)
        return ana_xstrdup("[no stack]");
    buf[0] = 0;
    while (np-- > 0 && len < sizeof(buf) - 1) {
        char label[512];
        int w = snprintf(buf + len, sizeof(buf) - len, "%s%s", len ? " > " : "",
                         ana_sym_frame_label(pick[np], label, sizeof(label)));
        len = w < 0 ? len : len + (size_t)w < sizeof(buf) ? len + (size_t)w : sizeof(buf) - 1;
    }
    return ana_xstrdup(buf);
}

/* memory.top_sites of r (every site live at the peak) by site key. */
static size_t ana_diff_site_names(const ana_report *r, ana_diff_named **out)
{
    const ana_mem_result *m = &r->mem;
    ana_diff_named *v = ana_xcalloc(m->n_peak_sites + 1, sizeof(*v));
    for (size_t i = 0; i < m->n_peak_sites; i++)
        v[i] = (ana_diff_named){ ana_diff_site_key(r, m->peak_sites[i].stack),
                                 m->peak_sites[i].bytes, m->peak_sites[i].count, 0 };
    *out = v;
    return ana_diff_coalesce(v, m->n_peak_sites);
}

static void ana_diff_items(ana_diff *d)
{
    ana_diff_named *b, *h;
    size_t nb = ana_diff_kernel_names(d->base, &b), nh = ana_diff_kernel_names(d->head, &h);
    d->kernels = ana_diff_merge(b, nb, h, nh, &d->n_kernels);
    free(b);
    free(h);
    for (size_t i = 0; i < d->n_kernels; i++) {
        d->n_new += !d->kernels[i].in_base;
        d->n_vanished += !d->kernels[i].in_head;
    }
    nb = ana_diff_site_names(d->base, &b);
    nh = ana_diff_site_names(d->head, &h);
    d->sites = ana_diff_merge(b, nb, h, nh, &d->n_sites);
    free(b);
    free(h);
}

/* ------------------------------------------------------------ the verdict */

/* "weights -50.0%" or, from 0, "optimizer +8.00 MiB". */
static void ana_diff_verdict_part(const ana_diff_row *r, const char *name, char *buf, size_t cap)
{
    double delta, ratio;
    char tmp[48];
    if (!ana_diff_delta(r, &delta) || delta == 0) {
        snprintf(buf, cap, "%s unchanged", name);
    } else if (ana_diff_ratio(r, &ratio)) {
        snprintf(buf, cap, "%s %+.1f%%", name, 100.0 * ratio);
    } else {
        ana_diff_fmt_delta(r->unit, delta, tmp, sizeof(tmp));
        snprintf(buf, cap, "%s %s", name, tmp);
    }
}

/* Indices of the rows[0..n) with the largest nonzero |delta|, at most max; the count. */
static size_t ana_diff_biggest(const ana_diff_row *rows, size_t n, size_t *idx, size_t max)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        double di = fabs(rows[i].head - rows[i].base);
        if (di == 0)
            continue;
        size_t p = k < max ? k++ : max;
        while (p > 0 && fabs(rows[idx[p - 1]].head - rows[idx[p - 1]].base) < di) {
            if (p < max)
                idx[p] = idx[p - 1];
            p--;
        }
        if (p < max)
            idx[p] = i;
    }
    return k;
}

static int ana_diff_unchanged(const ana_diff *d)
{
    for (int m = 0; m < ANA_DIFF_METRICS; m++)
        if (d->metrics[m].has_base != d->metrics[m].has_head ||
            d->metrics[m].base != d->metrics[m].head)
            return 0;
    for (int c = 0; c < ANA_CLASS_COUNT; c++)
        if (d->classes[c].base != d->classes[c].head)
            return 0;
    for (int c = 0; c < ANA_MCAT_COUNT; c++)
        if (d->cats[c].base != d->cats[c].head)
            return 0;
    for (size_t i = 0; i < d->n_kernels; i++)
        if (d->kernels[i].base != d->kernels[i].head ||
            d->kernels[i].base_count != d->kernels[i].head_count)
            return 0;
    for (size_t i = 0; i < d->n_sites; i++)
        if (d->sites[i].base != d->sites[i].head)
            return 0;
    return 1;
}

/* "step time -23.1%, peak memory -38.0% (weights -50.0%, activations -49.8%),
 * contraction time -41.2%; 2 new kernels, 1 vanished" */
static void ana_diff_verdict(ana_diff *d)
{
    char *o = d->verdict, part[96], name[48];
    size_t cap = sizeof(d->verdict), idx[2], n;
    const ana_diff_row *t = &d->metrics[ANA_DM_STEP];
    if (ana_diff_unchanged(d)) {
        snprintf(o, cap, "no change");
        return;
    }
    if (!t->has_base || !t->has_head)
        t = &d->metrics[ANA_DM_GPU_TIME];
    ana_diff_verdict_part(t, t == &d->metrics[ANA_DM_STEP] ? "step time" : "GPU time", o, cap);
    ana_diff_verdict_part(&d->metrics[ANA_DM_PEAK], "peak memory", part, sizeof(part));
    snprintf(o + strlen(o), cap - strlen(o), ", %s", part);
    n = ana_diff_biggest(d->cats, ANA_MCAT_COUNT, idx, 2);
    for (size_t i = 0; i < n; i++) {
        ana_diff_verdict_part(&d->cats[idx[i]], d->cats[idx[i]].label, part, sizeof(part));
        snprintf(o + strlen(o), cap - strlen(o), "%s%s%s", i ? ", " : " (", part,
                 i + 1 == n ? ")" : "");
    }
    n = ana_diff_biggest(d->classes, ANA_CLASS_COUNT, idx, 2);
    for (size_t i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "%s time", d->classes[idx[i]].label);
        ana_diff_verdict_part(&d->classes[idx[i]], name, part, sizeof(part));
        snprintf(o + strlen(o), cap - strlen(o), ", %s", part);
    }
    if (d->n_new || d->n_vanished)
        snprintf(o + strlen(o), cap - strlen(o), "; %zu new kernel%s, %zu vanished", d->n_new,
                 d->n_new == 1 ? "" : "s", d->n_vanished);
}

ana_diff *ana_diff_new(const ana_report *base, const ana_report *head)
{
    ana_diff *d = ana_xcalloc(1, sizeof(*d));
    d->base = base;
    d->head = head;
    d->top = 10;
    d->per_step = base->anat.steps.n_steps > 0 && head->anat.steps.n_steps > 0;
    ana_diff_rows(d);
    ana_diff_items(d);
    ana_diff_verdict(d);
    return d;
}

void ana_diff_set_top(ana_diff *d, size_t top) { d->top = top; }

void ana_diff_free(ana_diff *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->n_kernels; i++)
        free(d->kernels[i].name);
    for (size_t i = 0; i < d->n_sites; i++)
        free(d->sites[i].name);
    free(d->kernels);
    free(d->sites);
    free(d->results);
    free(d);
}

/* ------------------------------------------------------------ keys */

int ana_diff_key_unit(const char *key)
{
    for (int m = 0; m < ANA_DIFF_METRICS; m++)
        if (strcmp(key, ana_diff_metric_defs[m].key) == 0)
            return ana_diff_metric_defs[m].unit;
    if (strncmp(key, "time:", 5) == 0 && ana_class_parse(key + 5) >= 0)
        return ANA_DU_NS;
    if (strncmp(key, "memory:", 7) == 0)
        for (int c = 0; c < ANA_MCAT_COUNT; c++)
            if (strcmp(key + 7, ana_mcat_name(c)) == 0)
                return ANA_DU_BYTES;
    return -1;
}

const ana_diff_row *ana_diff_find(const ana_diff *d, const char *key)
{
    for (int m = 0; m < ANA_DIFF_METRICS; m++)
        if (strcmp(key, d->metrics[m].key) == 0)
            return &d->metrics[m];
    for (int c = 0; c < ANA_CLASS_COUNT; c++)
        if (strcmp(key, d->classes[c].key) == 0)
            return &d->classes[c];
    for (int c = 0; c < ANA_MCAT_COUNT; c++)
        if (strcmp(key, d->cats[c].key) == 0)
            return &d->cats[c];
    return NULL;
}
