/* ranks_summary.c — see ranks.h: a rank's summary from its single-trace report. Part of
 * analyses/: called by the job report's loading (cli/ranks_load.c), the reader of a
 * summary (import/ranks_read.c) and views/report_rank.c; calls analyses/ and model/. */
#include "analyses/ranks.h"

#include "analyses/report.h"
#include "model/util.h"

#include <stdlib.h>
#include <string.h>

static char *ana_rank_dup(const char *s)
{
    return s ? ana_xstrdup(s) : NULL;
}

static void ana_rank_process(const ana_trace *t, ana_rank *k)
{
    const ana_trace_process *p = &t->process;
    k->rank = k->local_rank = k->world_size = -1;
    k->start_mono_ns = t->has_time ? t->first_ns : 0;
    k->duration_ns = t->has_time ? t->last_ns - t->first_ns : 0;
    if (!p->present)
        return;
    k->host = ana_rank_dup(p->host);
    k->exe = ana_rank_dup(p->exe);
    k->pid = p->pid;
    k->rank = p->rank;
    k->local_rank = p->local_rank;
    k->world_size = p->world_size;
    /* realtime of the first record: the PROCESS pair read both clocks at one moment */
    if (p->realtime_ns && t->has_time) {
        int64_t off = (int64_t)(p->time_ns - t->first_ns);
        if ((int64_t)p->realtime_ns > off)
            k->start_real_ns = (uint64_t)((int64_t)p->realtime_ns - off);
    }
}

/* Each step's collective time: host time of the COLL calls it started, plus the GPU time
 * of its communication kernels (anatomy.h's per-step class time). */
static void ana_rank_steps(const ana_report *r, ana_rank *k, int keep)
{
    const ana_steps *s = &r->anat.steps;
    const ana_libs *l = &r->t->libs;
    k->n_steps = s->n_steps;
    k->step_ns = keep ? ana_xcalloc(s->n_steps + 1, sizeof(uint64_t)) : NULL;
    k->step_coll_ns = ana_xcalloc(s->n_steps + 1, sizeof(uint64_t));
    ana_anat_rowcur rc;
    ana_anat_rowcur_init(&rc, &r->anat.rows, s);
    for (size_t i = 0; i < s->n_steps; i++) {
        if (keep)
            k->step_ns[i] = s->steps[i].end_ns - s->steps[i].start_ns;
        k->step_coll_ns[i] = ana_anat_row(&rc, i)->class_ns[ANA_CLASS_COMMUNICATION];
    }
    /* steps are in time order and disjoint: a binary search per call */
    ana_spill_iter it;
    ana_spill_iter_begin(&it, &l->colls, 0);
    for (const ana_coll_call *c; (c = ana_spill_iter_next(&it));) {
        uint64_t at = c->time_ns;
        size_t lo = 0, hi = s->n_steps;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (s->steps[mid].end_ns <= at)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < s->n_steps && s->steps[lo].start_ns <= at)
            k->step_coll_ns[lo] += c->dur_ns;
    }
    ana_spill_iter_end(&it);
}

ana_rank_coll ana_rank_coll_of(const ana_trace *t, const ana_coll_call *c)
{
    const ana_nccl_comm *comm = ana_libs_comm_by_handle(&t->libs, c->comm);
    return (ana_rank_coll){
        .comm_id = comm ? comm->comm_id : 0, .seq = c->seq, .bytes = c->bytes,
        .start_ns = ana_trace_rel_ns(t, c->time_ns), .dur_ns = c->dur_ns, .api = c->api,
    };
}

static void ana_rank_colls(const ana_report *r, ana_rank *k, int keep)
{
    const ana_trace *t = r->t;
    const ana_libs *l = &t->libs;
    k->colls = keep ? ana_xcalloc(l->n_colls + 1, sizeof(*k->colls)) : NULL;
    k->n_colls = l->n_colls;
    ana_spill_iter it;
    ana_spill_iter_begin(&it, &l->colls, 0);
    for (const ana_coll_call *c; (c = ana_spill_iter_next(&it));) {
        if (keep)
            k->colls[it.idx - 1] = ana_rank_coll_of(t, c);
        k->coll_host_ns += c->dur_ns;
        k->coll_bytes += c->bytes;
    }
    ana_spill_iter_end(&it);
    k->coll_calls = l->n_colls;
    k->coll_gpu_ns = r->lc.coll_gpu_ns;
}

void ana_rank_from_report(const ana_report *r, ana_rank *out, int keep)
{
    const ana_trace *t = r->t;
    const ana_anatomy *a = &r->anat;
    memset(out, 0, sizeof(*out));
    out->source = ana_xstrdup(t->path ? t->path : "");
    ana_rank_process(t, out);
    for (uint32_t kind = 0; kind < ANA_K_COUNT; kind++)
        out->records += t->counts[kind];
    out->records += t->stats.unknown_records;
    out->of = keep ? NULL : r;
    ana_rank_steps(r, out, keep);
    out->busy_ns = a->busy_ns;
    out->idle_ns = a->idle_ns;
    out->span_ns = a->span_ns;
    out->overlap_ns = a->overlap_ns;
    memcpy(out->class_ns, a->total.ns, sizeof(out->class_ns));
    memcpy(out->class_count, a->total.count, sizeof(out->class_count));
    out->kernel_ns = r->gpu.kernels.total_ns;
    out->memcpy_ns = r->gpu.memcpy.total_ns;
    out->memset_ns = r->gpu.memset.total_ns;
    out->launches = t->launches;
    ana_rank_colls(r, out, keep);
    out->peak_bytes = r->mem.peak_bytes;
    out->peak_at_ns = r->mem.peak_time_ns ? ana_trace_rel_ns(t, r->mem.peak_time_ns) : 0;
    out->live_end_bytes = r->mem.live_end_bytes;
    out->host_peak_bytes = r->mem.host_peak_bytes;
    memcpy(out->by_category, r->mcat.at_peak, sizeof(out->by_category));
    ana_rank_derive(out);
}

uint64_t ana_rank_step_ns(const ana_rank *k, size_t i)
{
    if (k->step_ns)
        return k->step_ns[i];
    const ana_step *s = &k->of->anat.steps.steps[i];
    return s->end_ns - s->start_ns;
}

void ana_rank_derive(ana_rank *k)
{
    /* one array for the three medians, filled again for each */
    size_t n = k->n_steps;
    uint64_t sum = 0, *v = ana_xcalloc(n + 1, sizeof(uint64_t));
    for (size_t i = 0; i < n; i++)
        sum += v[i] = ana_rank_step_ns(k, i);
    k->step_mean_ns = n ? (sum + n / 2) / n : 0;
    k->step_median_ns = ana_median_u64(v, n);
    for (size_t i = 0; i < n; i++) {
        uint64_t d = ana_rank_step_ns(k, i);
        v[i] = d > k->step_coll_ns[i] ? d - k->step_coll_ns[i] : 0;
    }
    k->work_median_ns = ana_median_u64(v, n);
    memcpy(v, k->step_coll_ns, n * sizeof(uint64_t));
    k->coll_median_ns = ana_median_u64(v, n);
    free(v);
}

void ana_rank_free(ana_rank *k)
{
    free(k->source);
    free(k->host);
    free(k->exe);
    free(k->step_ns);
    free(k->step_coll_ns);
    free(k->colls);
    memset(k, 0, sizeof(*k));
}
