/* report_memory.c — the memory anatomy in the report (memcat.h): device bytes by category
 * at the peak (and at a moment the user names with --at), bytes per parameter, the
 * largest allocations live at the peak with the rule that placed each, and the peak of
 * each step. Text: the section "Where GPU memory goes"; JSON: members of `memory`
 * (docs/report-schema.md).
 * Part of views/: called by the commands (cli/) and by other views; calls analyses/ and
 * model/, never cli/. */
#include "views/report_write.h"
#include "model/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const ana_report *ana_rm_sort_report; /* qsort has no context argument */

/* Larger first; equal sizes in the order they were made. */
static int ana_rm_size_cmp(const void *a, const void *b)
{
    const ana_report *r = ana_rm_sort_report;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    uint64_t sx = r->mem.lives[r->mcat.allocs[x].life].size;
    uint64_t sy = r->mem.lives[r->mcat.allocs[y].life].size;
    if (sx != sy)
        return sx > sy ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* Allocations live just after event idx, largest first (indices into mcat.allocs). */
static size_t *ana_rm_live(const ana_report *r, size_t idx, size_t *n_out)
{
    const ana_memcat *m = &r->mcat;
    size_t *v = ana_xcalloc(m->n_allocs + 1, sizeof(size_t)), n = 0;
    for (size_t a = 0; a < m->n_allocs; a++)
        if (ana_memcat_live_at(m, &r->mem, a, idx))
            v[n++] = a;
    ana_rm_sort_report = r;
    ana_sort(v, n, sizeof(*v), ana_rm_size_cmp);
    ana_rm_sort_report = NULL;
    *n_out = n;
    return v;
}

/* ------------------------------------------------------------------ --at */

int ana_report_resolve_at(const ana_report *r, const char *spec, uint64_t *time_ns, char *err,
                          size_t cap)
{
    const ana_steps *s = &r->anat.steps;
    if (strncmp(spec, "step:", 5) == 0) {
        uint64_t n;
        if (ana_parse_uint(spec + 5, 1u << 30, &n) != 0 || n == 0) {
            snprintf(err, cap, "--at step:N wants a step number from 1, not '%s'", spec);
            return -1;
        }
        if (n > s->n_steps || !r->mcat.step_peak_ns[n - 1]) {
            snprintf(err, cap, "--at %s: the trace has %zu step%s with memory activity", spec,
                     s->n_steps, s->n_steps == 1 ? "" : "s");
            return -1;
        }
        *time_ns = r->mcat.step_peak_ns[n - 1];
        return 0;
    }
    uint64_t rel;
    if (ana_parse_duration(spec, &rel) != 0) {
        snprintf(err, cap, "--at wants a time since the trace began (1500ms, 2s) or step:N, "
                           "not '%s'", spec);
        return -1;
    }
    *time_ns = r->t->first_ns + rel;
    return 0;
}

/* ------------------------------------------------------------------ text */

/* Pointer tables copied from the host (entries with pointers; trace.h). */
static uint64_t ana_rm_tables(const ana_trace *t)
{
    uint64_t n = 0;
    for (size_t i = 0; i < t->n_tables; i++)
        n += t->tables[i].n > 0;
    return n;
}

static void ana_rm_cat_rows(FILE *o, const ana_report *r, const uint64_t *by, uint64_t total,
                            int per_param)
{
    const ana_memcat *m = &r->mcat;
    char b[32];
    for (int c = 0; c < ANA_MCAT_COUNT; c++) {
        if (!by[c] && c == ANA_MCAT_UNATTRIBUTED)
            continue;
        ana_fmt_bytes(by[c], b, sizeof(b));
        fprintf(o, "  %-14s %10s %6.1f%%", ana_mcat_name(c), b,
                total ? 100.0 * (double)by[c] / (double)total : 0.0);
        if (per_param && m->params > 0 && c <= ANA_MCAT_GRADIENTS &&
            (c == ANA_MCAT_WEIGHTS || m->params_trained)) {
            const char *kind = c == ANA_MCAT_WEIGHTS ? m->weights_kind
                             : c == ANA_MCAT_OPTIMIZER ? m->optimizer_kind : m->gradients_kind;
            fprintf(o, "  %4.1f B/param%s%s", m->bpp[c], kind ? "  " : "", kind ? kind : "");
        }
        fputc('\n', o);
    }
}

static void ana_rm_alloc_line(FILE *o, const ana_report *r, size_t a)
{
    const ana_mc_alloc *x = &r->mcat.allocs[a];
    const ana_mem_life *l = &r->mem.lives[x->life];
    char b[32];
    ana_fmt_bytes(l->size, b, sizeof(b));
    fprintf(o, "  %10s  %-13s %s", b, ana_mcat_name(x->cat), ana_memcat_why(x->why));
    uint32_t region = ana_memcat_region(r->t, l);
    if (region)
        fprintf(o, " [region \"%s\"]", ana_libs_str(&r->t->libs, region));
    fputc('\n', o);
}

void ana_report_memcat_text(const ana_report *r, FILE *o)
{
    const ana_memcat *m = &r->mcat;
    char b[32], tm[32];
    if (!r->mem.peak_bytes)
        return;
    ana_fmt_bytes(m->peak_bytes, b, sizeof(b));
    ana_fmt_ns(ana_trace_rel_ns(r->t, r->mem.peak_time_ns), tm, sizeof(tm));
    fprintf(o, "\nWhere GPU memory goes (at the peak: %s at %s)\n", b, tm);
    ana_rm_cat_rows(o, r, m->at_peak, m->peak_bytes, 1);
    if (m->params > 0) {
        double p = m->params;
        const char *unit = p >= 1e9 ? "B" : p >= 1e6 ? "M" : p >= 1e3 ? "K" : "";
        double scaled = p >= 1e9 ? p / 1e9 : p >= 1e6 ? p / 1e6 : p >= 1e3 ? p / 1e3 : p;
        fprintf(o, "  parameters     %.3g%s (%.0f, from the weights and their element size; "
                   "agreed by %s)\n", scaled, unit, p,
                m->params_trained ? "the gradients" : "the weight operands GEMMs read");
    }
    if (m->params_why[0])
        fprintf(o, "  per parameter  could not tell: %s\n", m->params_why);
    fprintf(o, "  evidence       %s\n", m->evidence
                ? "pointers in kernel parameters and library calls, lifetimes, steps and phases"
                : "lifetimes, steps and phases, copies and sets (no kernel pointers in this trace)");
    const ana_trace *t = r->t;
    if (t->launches && t->launch_ptrs < t->launches)
        fprintf(o, "  unseen         %llu of %llu launches recorded no pointer words (kernels without "
                   "pointer parameters, launches before a kernel's layout was known, `extra` "
                   "launches)\n",
                (unsigned long long)(t->launches - t->launch_ptrs), (unsigned long long)t->launches);
    if (t->launch_ptrs_cut)
        fprintf(o, "  cut            %llu launches recorded as many pointer words as a launch records "
                   "(%d): they may have had more\n", (unsigned long long)t->launch_ptrs_cut, ANA_TRACE_PTRS_CAP);
    if (t->table_launches)
        fprintf(o, "  tables         %llu launches read %llu pointer tables copied from the host\n",
                (unsigned long long)t->table_launches, (unsigned long long)ana_rm_tables(t));
    if (m->segments_at_peak) {
        ana_fmt_bytes(m->segment_bytes_at_peak, b, sizeof(b));
        fprintf(o, "  note           %s in %llu caching-allocator segment%s (PyTorch) are "
                   "unattributed: run with --torch-per-tensor\n", b,
                (unsigned long long)m->segments_at_peak, m->segments_at_peak == 1 ? "" : "s");
    }
    size_t n, *v = ana_rm_live(r, r->mem.peak_idx, &n);
    size_t k = ana_report_limit(r, n);
    fprintf(o, "  Largest allocations live at the peak (%zu of %zu):\n", k, n);
    for (size_t i = 0; i < k; i++)
        ana_rm_alloc_line(o, r, v[i]);
    free(v);
    if (r->anat.steps.n_steps) {
        fprintf(o, "  Peak per step:");
        size_t ns = ana_report_limit(r, r->anat.steps.n_steps);
        for (size_t i = 0; i < ns; i++) {
            ana_fmt_bytes(m->step_peak[i], b, sizeof(b));
            fprintf(o, "%s %zu: %s", i ? "," : "", i + 1, b);
        }
        fprintf(o, "%s\n", ns < r->anat.steps.n_steps ? ", ..." : "");
    }
    if (r->opt.at_set) {
        uint64_t by[ANA_MCAT_COUNT];
        uint64_t tot = ana_memcat_at_time(m, &r->mem, r->t, r->opt.at_ns, by);
        ana_fmt_bytes(tot, b, sizeof(b));
        ana_fmt_ns(ana_trace_rel_ns(r->t, r->opt.at_ns), tm, sizeof(tm));
        fprintf(o, "  At %s (--at %s): %s live\n", tm, r->opt.at_spec, b);
        ana_rm_cat_rows(o, r, by, tot, 0);
    }
}

/* ------------------------------------------------------------------ JSON */

/* The sources of the parameter count, and why it or its meaning is not given. */
static void ana_rm_json_params_check(ana_json *j, const ana_memcat *m)
{
    ana_json_key(j, "params_check");
    ana_json_obj_begin(j);
    ana_json_ku64(j, "weights", (uint64_t)llround(m->params_weights));
    ana_json_ku64(j, "gemm_operands", (uint64_t)llround(m->params_gemm));
    ana_json_ku64(j, "gradients", (uint64_t)llround(m->params_grads));
    ana_json_kstr(j, "could_not_tell", m->params_why[0] ? m->params_why : NULL);
    ana_json_obj_end(j);
}

static void ana_rm_json_per_param(ana_json *j, const ana_memcat *m)
{
    ana_rm_json_params_check(j, m);
    ana_json_key(j, "per_param");
    if (m->params <= 0) {
        ana_json_null(j);
        return;
    }
    ana_json_obj_begin(j);
    ana_json_ku64(j, "params", (uint64_t)llround(m->params));
    ana_json_kdbl(j, "weights", m->bpp[ANA_MCAT_WEIGHTS]);
    if (m->params_trained) {
        ana_json_kdbl(j, "optimizer", m->bpp[ANA_MCAT_OPTIMIZER]);
        ana_json_kdbl(j, "gradients", m->bpp[ANA_MCAT_GRADIENTS]);
    } else {
        ana_json_key(j, "optimizer");
        ana_json_null(j);
        ana_json_key(j, "gradients");
        ana_json_null(j);
    }
    ana_json_kstr(j, "weights_kind", m->weights_kind);
    ana_json_kstr(j, "optimizer_kind", m->optimizer_kind);
    ana_json_kstr(j, "gradients_kind", m->gradients_kind);
    ana_json_obj_end(j);
}

static void ana_rm_json_allocs(ana_json *j, const ana_report *r)
{
    size_t n, *v = ana_rm_live(r, r->mem.peak_idx, &n);
    ana_json_key(j, "at_peak_allocations");
    ana_json_arr_begin(j);
    for (size_t i = 0; i < ana_report_limit(r, n) && r->mem.peak_bytes; i++) {
        const ana_mc_alloc *x = &r->mcat.allocs[v[i]];
        const ana_mem_life *l = &r->mem.lives[x->life];
        ana_json_obj_begin(j);
        ana_json_ku64(j, "bytes", l->size);
        ana_json_kstr(j, "category", ana_mcat_name(x->cat));
        ana_json_kstr(j, "why", ana_memcat_why(x->why));
        uint32_t region = ana_memcat_region(r->t, l);
        ana_json_kstr(j, "region", region ? ana_libs_str(&r->t->libs, region) : NULL);
        ana_json_ku64(j, "allocated_at_ns", ana_trace_rel_ns(r->t, l->t_alloc));
        ana_json_ku64(j, "uses", x->uses);
        ana_report_json_stack(j, r, l->stack);
        ana_json_obj_end(j);
    }
    ana_json_arr_end(j);
    free(v);
}

static void ana_rm_json_steps(ana_json *j, const ana_report *r)
{
    ana_json_key(j, "step_peaks");
    ana_json_arr_begin(j);
    for (size_t i = 0; i < r->anat.steps.n_steps; i++) {
        ana_json_obj_begin(j);
        ana_json_ku64(j, "step", i + 1);
        ana_json_ku64(j, "peak_bytes", r->mcat.step_peak[i]);
        ana_json_ku64(j, "at_ns", ana_trace_rel_ns(r->t, r->mcat.step_peak_ns[i]));
        ana_json_obj_end(j);
    }
    ana_json_arr_end(j);
}

void ana_report_memcat_json(const ana_report *r, ana_json *j)
{
    const ana_memcat *m = &r->mcat;
    ana_report_json_categories(j, "at_peak", m->at_peak);
    ana_report_json_categories(j, "at_peak_count", m->count_at_peak);
    ana_json_kstr(j, "evidence", m->evidence ? "pointers" : "lifetimes");
    ana_json_ku64(j, "uses_mapped", m->uses_mapped);
    ana_json_ku64(j, "uses_unmapped", m->uses_unmapped);
    ana_json_key(j, "pointer_evidence");
    ana_json_obj_begin(j);
    ana_json_ku64(j, "launches", r->t->launches);
    ana_json_ku64(j, "launches_with_pointers", r->t->launch_ptrs);
    ana_json_ku64(j, "launches_cut", r->t->launch_ptrs_cut);
    ana_json_ku64(j, "pointer_tables", ana_rm_tables(r->t));
    ana_json_ku64(j, "table_launches", r->t->table_launches);
    ana_json_obj_end(j);
    ana_rm_json_per_param(j, m);
    ana_json_key(j, "caching_allocator");
    ana_json_obj_begin(j);
    ana_json_ku64(j, "segments_at_peak", m->segments_at_peak);
    ana_json_ku64(j, "bytes_at_peak", m->segment_bytes_at_peak);
    ana_json_obj_end(j);
    ana_rm_json_allocs(j, r);
    ana_rm_json_steps(j, r);
    ana_json_key(j, "at");
    if (!r->opt.at_set) {
        ana_json_null(j);
        return;
    }
    uint64_t by[ANA_MCAT_COUNT];
    uint64_t tot = ana_memcat_at_time(m, &r->mem, r->t, r->opt.at_ns, by);
    ana_json_obj_begin(j);
    ana_json_kstr(j, "spec", r->opt.at_spec);
    ana_json_ku64(j, "time_ns", ana_trace_rel_ns(r->t, r->opt.at_ns));
    ana_json_ku64(j, "total_bytes", tot);
    ana_report_json_categories(j, "by_category", by);
    ana_json_obj_end(j);
}
