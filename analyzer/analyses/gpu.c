/* gpu.c — see gpu.h.
 *
 * One pass over the activities (sorted by device, then start) sweeps the union of
 * intervals per device and per stream at once, and sums the classes: within a device
 * starts never decrease, so each stream's own activities also arrive in start order.
 * Part of analyses/: called by cli/, views/, import/ and other analyses; calls analyses/
 * and model/ only, never a view. */
#include "analyses/gpu.h"

#include "model/util.h"

#include <stdlib.h>
#include <string.h>

const char *const ana_gpu_dir_names[ANA_DIR_COUNT] = { "HtoD", "DtoH", "DtoD", "HtoH", "PtoP",
                                                       "other" };
const char *const ana_gpu_host_names[ANA_HOST_COUNT] = { "pageable", "pinned", "other" };

int ana_gpu_dir_of(uint8_t copy_kind)
{
    switch (copy_kind) {
    case ANA_COPY_HTOD: return ANA_DIR_HTOD;
    case ANA_COPY_DTOH: return ANA_DIR_DTOH;
    case ANA_COPY_DTOD: return ANA_DIR_DTOD;
    case ANA_COPY_HTOH: return ANA_DIR_HTOH;
    case ANA_COPY_PTOP: return ANA_DIR_PTOP;
    default: return ANA_DIR_OTHER;
    }
}

int ana_gpu_host_of(const ana_gpu_lane *l)
{
    int dir = ana_gpu_dir_of(l->copy_kind);
    uint8_t kind = dir == ANA_DIR_HTOD ? l->src_kind : dir == ANA_DIR_DTOH ? l->dst_kind : 0;
    return kind == ANA_MEMKIND_PAGEABLE ? ANA_HOST_PAGEABLE
           : kind == ANA_MEMKIND_PINNED ? ANA_HOST_PINNED
                                        : ANA_HOST_OTHER;
}

static void ana_gpu_add(const ana_trace *t, ana_gpu_sum *s, const ana_gpu_act *a)
{
    s->count++;
    s->total_ns += ana_trace_wide(t, a->dur_w);
    if (ana_trace_gpu_lane(t, a)->type != ANA_GPU_KERNEL)
        s->bytes += ana_trace_wide(t, a->arg_w);
}

/* Class totals, copies, and correlation with the API calls of one activity (marks the
 * call that caused it in has_gpu, a bit by call). */
static void ana_gpu_classify(const ana_trace *t, ana_gpu_result *g, const ana_gpu_act *a,
                             uint8_t *has_gpu)
{
    size_t c;
    const ana_gpu_lane *l = ana_trace_gpu_lane(t, a);
    if (l->type == ANA_GPU_KERNEL) {
        ana_gpu_add(t, &g->kernels, a);
    } else if (l->type == ANA_GPU_MEMSET) {
        ana_gpu_add(t, &g->memset, a);
    } else {
        int dir = ana_gpu_dir_of(l->copy_kind);
        ana_gpu_add(t, &g->memcpy, a);
        ana_gpu_add(t, &g->copies[dir], a);
        ana_gpu_add(t, &g->copies_host[dir][ana_gpu_host_of(l)], a);
    }
    if (!ana_trace_wide(t, a->corr_w)) {
        g->no_corr++;
    } else if ((c = ana_trace_call_index(t, ana_trace_wide(t, a->corr_w))) != SIZE_MAX) {
        g->correlated++;
        ana_bit_set(has_gpu, c);
    } else {
        g->uncorrelated++;
    }
}

/* The union of intervals that arrive in start order: the open interval, and the busy time
 * of the ones closed before it. */
typedef struct ana_gpu_span {
    uint64_t start, end, busy;
} ana_gpu_span;

static ana_gpu_span ana_gpu_span_at(const ana_gpu_act *a)
{
    return (ana_gpu_span){ a->start_ns, a->start_ns, 0 };
}

/* Adds a's interval; returns the idle time before it (0 when it overlaps or touches the
 * open interval). */
static uint64_t ana_gpu_span_add(const ana_trace *t, ana_gpu_span *u, const ana_gpu_act *a)
{
    uint64_t end = a->start_ns + ana_trace_wide(t, a->dur_w);
    if (a->start_ns > u->end) {
        uint64_t gap = a->start_ns - u->end;
        u->busy += u->end - u->start;
        u->start = a->start_ns;
        u->end = end;
        return gap;
    }
    if (end > u->end)
        u->end = end;
    return 0;
}

static uint64_t ana_gpu_span_busy(const ana_gpu_span *u) { return u->busy + (u->end - u->start); }

static int ana_gpu_stream_cmp(const void *a, const void *b)
{
    const ana_gpu_stream *x = a, *y = b;
    if (x->device != y->device)
        return x->device < y->device ? -1 : 1;
    return x->stream < y->stream ? -1 : x->stream > y->stream;
}

/* The gaps found: every one when max is 0; else the max longest (ana_gpu_gap_cmp), as
 * a heap whose root is the one of them that would go last. */
typedef struct ana_gpu_gaps {
    ana_gpu_gap *v;
    size_t n, cap, max;
} ana_gpu_gaps;

static int ana_gpu_gap_cmp(const void *a, const void *b);

static void ana_gpu_gap_swap(ana_gpu_gap *v, size_t i, size_t j)
{
    ana_gpu_gap x = v[i];
    v[i] = v[j], v[j] = x;
}

/* Keeps gap p: appended, or in the heap of the max longest in place of its last. */
static void ana_gpu_gap_keep(ana_gpu_gaps *gaps, const ana_gpu_gap *p)
{
    ana_gpu_gap *v;
    size_t i;
    if (!gaps->max || gaps->n < gaps->max) {
        ANA_GROW(gaps->v, gaps->cap, gaps->n + 1);
        v = gaps->v, i = gaps->n++;
        v[i] = *p;
        while (gaps->max && i && ana_gpu_gap_cmp(&v[(i - 1) / 2], &v[i]) < 0) /* up */
            ana_gpu_gap_swap(v, i, (i - 1) / 2), i = (i - 1) / 2;
        return;
    }
    v = gaps->v;
    if (ana_gpu_gap_cmp(p, &v[0]) >= 0)
        return; /* not among the longest */
    v[0] = *p;
    for (i = 0;;) { /* down: the root goes after both children */
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < gaps->n && ana_gpu_gap_cmp(&v[l], &v[m]) > 0)
            m = l;
        if (r < gaps->n && ana_gpu_gap_cmp(&v[r], &v[m]) > 0)
            m = r;
        if (m == i)
            break;
        ana_gpu_gap_swap(v, i, m), i = m;
    }
}

/* The stream of a; its interval union is spans[index], grown with g->streams. */
static size_t ana_gpu_stream_of(const ana_trace *t, ana_gpu_result *g, ana_u64map *idx,
                                size_t *cap, ana_gpu_span **spans, size_t *cap_spans,
                                const ana_gpu_act *a)
{
    const ana_gpu_lane *l = ana_trace_gpu_lane(t, a);
    uint64_t key = (uint64_t)(uint32_t)l->device << 32 | l->stream, k;
    if (!ana_u64map_get(idx, key, &k)) {
        ANA_GROW(g->streams, *cap, g->n_streams + 1);
        ANA_GROW(*spans, *cap_spans, g->n_streams + 1);
        g->streams[g->n_streams] = (ana_gpu_stream){ .device = l->device, .stream = l->stream };
        (*spans)[g->n_streams] = ana_gpu_span_at(a);
        k = g->n_streams++;
        ana_u64map_put(idx, key, k);
    }
    return (size_t)k;
}

static void ana_gpu_device_close(ana_gpu_device *d, const ana_gpu_span *u)
{
    d->busy_ns = ana_gpu_span_busy(u);
    d->last_ns = u->end;
    d->span_ns = d->last_ns - d->first_ns;
}

/* One pass over the activities (sorted by device, then start): class totals and
 * correlation, each stream's union, each device's union and its gaps. */
static void ana_gpu_sweep(const ana_trace *t, ana_gpu_result *g, ana_gpu_gaps *gaps,
                          uint8_t *has_gpu)
{
    ana_u64map idx;
    ana_gpu_span *spans = NULL, dev = { 0 };
    size_t cap_streams = 0, cap_spans = 0, cap_devices = 0;
    ana_u64map_init(&idx);
    ana_gpu_iter it;
    ana_trace_gpu_begin(t, &it);
    int32_t last_device = 0;
    size_t i = 0;
    for (const ana_gpu_act *a; (a = ana_trace_gpu_next(&it)); i++) {
        const ana_gpu_lane *l = ana_trace_gpu_lane(t, a);
        ana_gpu_classify(t, g, a, has_gpu);
        size_t k = ana_gpu_stream_of(t, g, &idx, &cap_streams, &spans, &cap_spans, a);
        ana_gpu_stream *s = &g->streams[k];
        s->kernels += l->type == ANA_GPU_KERNEL;
        s->memcpys += l->type == ANA_GPU_MEMCPY;
        s->memsets += l->type == ANA_GPU_MEMSET;
        ana_gpu_span_add(t, &spans[k], a);
        if (i == 0 || l->device != last_device) {
            if (i)
                ana_gpu_device_close(&g->devices[g->n_devices - 1], &dev);
            ANA_GROW(g->devices, cap_devices, g->n_devices + 1);
            g->devices[g->n_devices++] = (ana_gpu_device){ .device = l->device,
                                                           .first_ns = a->start_ns };
            dev = ana_gpu_span_at(a);
        }
        last_device = l->device;
        uint64_t gap = ana_gpu_span_add(t, &dev, a);
        if (gap && gap >= g->min_gap_ns) {
            ana_gpu_device *d = &g->devices[g->n_devices - 1];
            d->gaps++;
            d->gaps_ns += gap;
            ana_gpu_gap_keep(gaps, &(ana_gpu_gap){ .device = l->device,
                                                   .start_ns = a->start_ns - gap,
                                                   .dur_ns = gap, .next = *a });
        }
    }
    ana_trace_gpu_end(&it);
    if (g->n_devices)
        ana_gpu_device_close(&g->devices[g->n_devices - 1], &dev);
    for (size_t i = 0; i < g->n_streams; i++)
        g->streams[i].busy_ns = ana_gpu_span_busy(&spans[i]);
    free(spans);
    ana_u64map_free(&idx);
}

/* Totals over the devices, and each stream's device span (both lists sorted by device). */
static void ana_gpu_totals(ana_gpu_result *g)
{
    ana_sort(g->streams, g->n_streams, sizeof(*g->streams), ana_gpu_stream_cmp);
    for (size_t i = 0, s = 0; i < g->n_devices; i++) {
        const ana_gpu_device *d = &g->devices[i];
        if (!i || d->first_ns < g->first_ns)
            g->first_ns = d->first_ns;
        if (d->last_ns > g->last_ns)
            g->last_ns = d->last_ns;
        g->busy_ns += d->busy_ns;
        g->spans_ns += d->span_ns;
        g->gaps_total += d->gaps;
        g->gaps_ns += d->gaps_ns;
        for (; s < g->n_streams && g->streams[s].device == d->device; s++)
            g->streams[s].device_span_ns = d->span_ns;
    }
    g->idle_ns = g->spans_ns - g->busy_ns;
}

static int ana_gpu_gap_cmp(const void *a, const void *b)
{
    const ana_gpu_gap *x = a, *y = b;
    if (x->dur_ns != y->dur_ns)
        return x->dur_ns > y->dur_ns ? -1 : 1;
    if (x->start_ns != y->start_ns)
        return x->start_ns < y->start_ns ? -1 : 1;
    return x->device < y->device ? -1 : x->device > y->device;
}

/* 1 and *c, the last call made before time (strictly); 0 when there is none. */
static int ana_gpu_call_before(const ana_trace *t, uint64_t time, ana_api_call *c)
{
    size_t i = ana_trace_call_bound(t, time, 0);
    if (i)
        *c = ana_trace_call(t, i - 1);
    return i > 0;
}

static void ana_gpu_keep_gaps(const ana_trace *t, ana_gpu_gaps *gaps, size_t max_gaps,
                              ana_gpu_result *g)
{
    ana_sort(gaps->v, gaps->n, sizeof(*gaps->v), ana_gpu_gap_cmp);
    g->n_gaps = max_gaps && max_gaps < gaps->n ? max_gaps : gaps->n;
    g->gaps = gaps->v;
    for (size_t i = 0; i < g->n_gaps; i++) {
        ana_gpu_gap *p = &g->gaps[i];
        p->has_after = ana_trace_call_by_corr(t, ana_trace_wide(t, p->next.corr_w), &p->after);
        p->has_before = ana_gpu_call_before(t, p->start_ns, &p->before);
    }
}

static int ana_gpu_name_cmp(const ana_trace_kernel *x, const ana_trace_kernel *y)
{
    if (!x->name || !y->name) /* unnamed ids stay apart, after the named ones */
        return x->name ? -1 : y->name ? 1 : (x->id > y->id) - (x->id < y->id);
    return strcmp(x->name, y->name);
}

static int ana_gpu_kidx_cmp(const void *a, const void *b)
{
    const ana_trace_kernel *x = *(const ana_trace_kernel *const *)a;
    const ana_trace_kernel *y = *(const ana_trace_kernel *const *)b;
    int c = ana_gpu_name_cmp(x, y);
    return c ? c : (x->id > y->id) - (x->id < y->id);
}

static int ana_gpu_kname_cmp(const void *a, const void *b)
{
    const ana_gpu_kname *x = a, *y = b;
    if (x->total_ns != y->total_ns)
        return x->total_ns > y->total_ns ? -1 : 1;
    return ana_gpu_name_cmp(x->k, y->k);
}

/* Per kernel name: ids registered twice under one name (two modules) are one kernel. */
static void ana_gpu_knames(const ana_trace *t, ana_gpu_result *g)
{
    const ana_trace_kernel **v = ana_xcalloc(t->n_kernels + 1, sizeof(*v));
    size_t n = 0;
    for (size_t i = 0; i < t->n_kernels; i++)
        if (t->kernels[i].gpu_count)
            v[n++] = &t->kernels[i];
    ana_sort(v, n, sizeof(*v), ana_gpu_kidx_cmp);
    g->knames = ana_xcalloc(n + 1, sizeof(*g->knames));
    for (size_t i = 0; i < n; i++) {
        /* v is sorted by name: a new name starts a new group */
        if (!g->n_knames || ana_gpu_name_cmp(g->knames[g->n_knames - 1].k, v[i]) != 0)
            g->knames[g->n_knames++] = (ana_gpu_kname){ .k = v[i], .min_ns = v[i]->gpu_min_ns };
        ana_gpu_kname *r = &g->knames[g->n_knames - 1];
        r->ids++;
        r->count += v[i]->gpu_count;
        r->total_ns += v[i]->gpu_ns;
        if (v[i]->gpu_min_ns < r->min_ns)
            r->min_ns = v[i]->gpu_min_ns;
        if (v[i]->gpu_max_ns > r->max_ns)
            r->max_ns = v[i]->gpu_max_ns;
    }
    free(v);
    ana_sort(g->knames, g->n_knames, sizeof(*g->knames), ana_gpu_kname_cmp);
}

/* The collector writes INFO "cupti" at every change of state: "on", "on (notes)", "on until
 * the program called ...", "off ...", "unavailable: ...". */
static int ana_gpu_cupti_ran(const ana_trace *t)
{
    for (size_t i = 0; i < t->n_info; i++)
        if (strcmp(t->info[i].key, "cupti") == 0 && strncmp(t->info[i].value, "on", 2) == 0 &&
            (t->info[i].value[2] == 0 || t->info[i].value[2] == ' '))
            return 1;
    return 0;
}

void ana_gpu_analyze(const ana_trace *t, uint64_t min_gap_ns, size_t max_gaps,
                     ana_gpu_result *g)
{
    ana_gpu_gaps gaps = { .max = max_gaps };
    memset(g, 0, sizeof(*g));
    g->cupti = ana_trace_info(t, "cupti");
    g->cupti_ran = ana_gpu_cupti_ran(t);
    g->min_gap_ns = min_gap_ns;
    g->n_acts = t->n_gpu;
    uint8_t *has_gpu = ana_xcalloc(t->n_calls / 8 + 1, 1);
    ana_gpu_sweep(t, g, &gaps, has_gpu);
    for (size_t i = 0; i < t->n_calls; i++) {
        const ana_call_site *cs = ana_trace_call_site_at(t, i);
        if (cs->kind != ANA_K_LAUNCH || cs->ret != 0)
            continue;
        g->launches_ok++;
        g->launches_without_gpu += !ana_bit_get(has_gpu, i);
    }
    free(has_gpu);
    ana_gpu_totals(g);
    ana_gpu_keep_gaps(t, &gaps, max_gaps, g);
    ana_gpu_knames(t, g);
}

void ana_gpu_result_free(ana_gpu_result *g)
{
    free(g->devices);
    free(g->streams);
    free(g->knames);
    free(g->gaps);
    memset(g, 0, sizeof(*g));
}
