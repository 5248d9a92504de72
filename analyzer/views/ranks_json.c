/* ranks_json.c — the job report as JSON (schema "anatomist.ranks/1",
 * docs/report-schema.md, "Many ranks"). Later versions only add fields.
 * Part of views/: called by the commands (cli/) and by other views; calls analyses/ and
 * model/, never cli/. */
#include "analyses/ranks.h"
#include "views/ranks_write.h"

#include "analyses/libcalls.h"
#include "views/report_write.h"
#include "model/util.h"

#include <stddef.h>
#include <string.h>

static void ana_rj_i64_or_null(ana_json *j, const char *key, int64_t v)
{
    ana_json_key(j, key);
    if (v < 0)
        ana_json_null(j);
    else
        ana_json_i64(j, v);
}

static void ana_rj_comm_id(ana_json *j, const char *key, uint64_t id)
{
    char buf[24];
    snprintf(buf, sizeof(buf), "0x%016llx", (unsigned long long)id);
    ana_json_kstr(j, key, buf);
}

static void ana_rj_job(ana_json *j, const ana_ranks *rs)
{
    ana_json_key(j, "job");
    ana_json_obj_begin(j);
    ana_json_ku64(j, "ranks", rs->n);
    ana_rj_i64_or_null(j, "world_size", rs->world_size);
    ana_json_kstr(j, "exe", rs->n ? rs->v[0].exe : NULL);
    ana_json_key(j, "hosts");
    ana_json_arr_begin(j);
    for (size_t i = 0; i < rs->n; i++) {
        size_t p = 0;
        while (p < i && !ana_rank_same_host(&rs->v[p], &rs->v[i]))
            p++;
        if (p == i && rs->v[i].host)
            ana_json_str(j, rs->v[i].host);
    }
    ana_json_arr_end(j);
    ana_json_key(j, "missing_ranks");
    ana_json_arr_begin(j);
    for (int64_t q = 0; q < rs->world_size; q++) {
        size_t i = 0;
        while (i < rs->n && rs->v[i].rank != q)
            i++;
        if (i == rs->n)
            ana_json_i64(j, q);
    }
    ana_json_arr_end(j);
    ana_json_ku64(j, "step_median_ns", rs->job_step_median_ns);
    ana_json_obj_end(j);
}

static void ana_rj_classes(ana_json *j, const char *key, const uint64_t v[ANA_CLASS_COUNT])
{
    ana_json_key(j, key);
    ana_json_obj_begin(j);
    for (int c = 0; c < ANA_CLASS_COUNT; c++)
        ana_json_ku64(j, ana_class_name(c), v[c]);
    ana_json_obj_end(j);
}

/* The sum over the ranks of the uint64_t member at offset off of ana_rank. */
static uint64_t ana_rj_sum(const ana_ranks *rs, size_t off)
{
    uint64_t v = 0;
    for (size_t i = 0; i < rs->n; i++)
        v += *(const uint64_t *)((const char *)&rs->v[i] + off);
    return v;
}
#define ANA_RJ_KSUM(key, field) ana_json_ku64(j, key, ana_rj_sum(rs, offsetof(ana_rank, field)))

static void ana_rj_time(ana_json *j, const ana_ranks *rs)
{
    uint64_t ns[ANA_CLASS_COUNT], count[ANA_CLASS_COUNT];
    ana_ranks_sum_classes(rs, ns, count);
    ana_json_key(j, "time");
    ana_json_obj_begin(j);
    ANA_RJ_KSUM("busy_ns", busy_ns);
    ANA_RJ_KSUM("idle_ns", idle_ns);
    ANA_RJ_KSUM("span_ns", span_ns);
    ANA_RJ_KSUM("overlap_ns", overlap_ns);
    ana_rj_classes(j, "by_class", ns);
    ana_rj_classes(j, "by_class_count", count);
    ANA_RJ_KSUM("kernel_ns", kernel_ns);
    ANA_RJ_KSUM("memcpy_ns", memcpy_ns);
    ANA_RJ_KSUM("memset_ns", memset_ns);
    ANA_RJ_KSUM("launches", launches);
    ana_json_obj_end(j);
    ana_json_key(j, "collectives");
    ana_json_obj_begin(j);
    ANA_RJ_KSUM("calls", coll_calls);
    ANA_RJ_KSUM("host_ns", coll_host_ns);
    ANA_RJ_KSUM("gpu_ns", coll_gpu_ns);
    ANA_RJ_KSUM("bytes", coll_bytes);
    ana_json_obj_end(j);
}

static void ana_rj_memory(ana_json *j, const ana_ranks *rs)
{
    uint64_t cmax[ANA_MCAT_COUNT] = { 0 }, csum[ANA_MCAT_COUNT] = { 0 }, max = 0, hmax = 0;
    size_t at = rs->n;
    for (size_t i = 0; i < rs->n; i++) {
        const ana_rank *k = &rs->v[i];
        if (at == rs->n || k->peak_bytes > max)
            max = k->peak_bytes, at = i;
        hmax = k->host_peak_bytes > hmax ? k->host_peak_bytes : hmax;
        for (int c = 0; c < ANA_MCAT_COUNT; c++) {
            csum[c] += k->by_category[c];
            cmax[c] = k->by_category[c] > cmax[c] ? k->by_category[c] : cmax[c];
        }
    }
    ana_json_key(j, "memory");
    ana_json_obj_begin(j);
    ana_json_ku64(j, "peak_max_bytes", max);
    ana_rj_i64_or_null(j, "peak_max_rank", at < rs->n ? rs->v[at].rank : -1);
    ANA_RJ_KSUM("peak_sum_bytes", peak_bytes);
    ANA_RJ_KSUM("live_at_end_bytes", live_end_bytes);
    ana_json_ku64(j, "host_pinned_peak_max_bytes", hmax);
    ana_report_json_categories(j, "by_category_max", cmax);
    ana_report_json_categories(j, "by_category_sum", csum);
    ana_json_obj_end(j);
}

static int ana_rj_is_straggler(const ana_ranks *rs, size_t i)
{
    for (size_t s = 0; s < rs->n_stragglers; s++)
        if (rs->stragglers[s].idx == i)
            return 1;
    return 0;
}

static void ana_rj_rank_row(ana_json *j, const ana_ranks *rs, size_t i)
{
    const ana_rank *k = &rs->v[i];
    ana_json_obj_begin(j);
    ana_rj_i64_or_null(j, "rank", k->rank);
    ana_rj_i64_or_null(j, "local_rank", k->local_rank);
    ana_json_kstr(j, "host", k->host);
    ana_json_ku64(j, "pid", k->pid);
    ana_json_kstr(j, "source", k->source);
    ana_json_ku64(j, "steps", k->n_steps);
    ana_json_ku64(j, "step_mean_ns", k->step_mean_ns);
    ana_json_ku64(j, "step_median_ns", k->step_median_ns);
    ana_json_ku64(j, "work_median_ns", k->work_median_ns);
    ana_json_ku64(j, "collective_median_ns", k->coll_median_ns);
    ana_json_ku64(j, "gpu_busy_ns", k->busy_ns);
    ana_json_ku64(j, "collective_calls", k->coll_calls);
    ana_json_ku64(j, "collective_host_ns", k->coll_host_ns);
    ana_json_ku64(j, "collective_gpu_ns", k->coll_gpu_ns);
    ana_json_ku64(j, "peak_bytes", k->peak_bytes);
    ana_json_ku64(j, "records", k->records);
    ana_json_ku64(j, "duration_ns", k->duration_ns);
    ana_json_key(j, "straggler");
    ana_json_bool(j, ana_rj_is_straggler(rs, i));
    ana_json_ku64(j, "last_arrivals", rs->by_rank ? rs->by_rank[i].last_count : 0);
    ana_json_ku64(j, "delay_caused_ns", rs->by_rank ? rs->by_rank[i].delay_ns : 0);
    ana_json_obj_end(j);
}

static void ana_rj_stragglers(ana_json *j, const ana_ranks *rs)
{
    ana_json_key(j, "stragglers");
    ana_json_obj_begin(j);
    ana_json_kstr(j, "rule", ANA_RANKS_RULE);
    ana_json_kstr(j, "basis", rs->all_steps ? "per-step medians" : "whole run");
    ana_json_key(j, "list");
    ana_json_arr_begin(j);
    for (size_t s = 0; s < rs->n_stragglers; s++) {
        const ana_straggler *g = &rs->stragglers[s];
        ana_json_obj_begin(j);
        ana_rj_i64_or_null(j, "rank", rs->v[g->idx].rank);
        ana_json_kstr(j, "source", rs->v[g->idx].source);
        ana_json_kstr(j, "metric", ana_rank_metric_name(g->metric));
        ana_json_kstr(j, "direction", g->metric == ANA_RM_COLL ? "low" : "high");
        ana_json_ku64(j, "value_ns", g->value_ns);
        ana_json_ku64(j, "others_median_ns", g->others_median_ns);
        ana_json_ku64(j, "threshold_ns", g->threshold_ns);
        ana_json_obj_end(j);
    }
    ana_json_arr_end(j);
    ana_json_obj_end(j);
}

static void ana_rj_skew_coll(ana_json *j, const ana_ranks *rs, const ana_skew_coll *c)
{
    const char *op = ana_nccl_op_name(c->api);
    ana_json_obj_begin(j);
    ana_json_kstr(j, "op", op);
    ana_rj_comm_id(j, "comm_id", c->comm_id);
    ana_json_ku64(j, "seq", c->seq);
    ana_json_ku64(j, "bytes", c->bytes);
    ana_json_ku64(j, "ranks", c->ranks);
    ana_json_ku64(j, "start_ns", c->start_rel_ns);
    ana_json_ku64(j, "arrival_spread_ns", c->spread_ns);
    ana_json_ku64(j, "delay_ns", c->delay_ns);
    ana_rj_i64_or_null(j, "first_rank", rs->v[c->first].rank);
    ana_rj_i64_or_null(j, "last_rank", rs->v[c->last].rank);
    ana_json_ku64(j, "dur_last_ns", c->dur_last_ns);
    ana_json_ku64(j, "dur_median_ns", c->dur_median_ns);
    ana_json_ku64(j, "dur_min_ns", c->dur_min_ns);
    ana_json_ku64(j, "dur_max_ns", c->dur_max_ns);
    ana_json_obj_end(j);
}

static void ana_rj_skew(ana_json *j, const ana_ranks *rs, size_t top)
{
    ana_json_key(j, "skew");
    ana_json_obj_begin(j);
    ana_json_kstr(j, "clock", rs->clock);
    ana_json_ku64(j, "matched", rs->n_skew);
    ana_json_ku64(j, "unmatched_calls", rs->unmatched);
    ana_rj_i64_or_null(j, "late_rank", rs->late_rank < rs->n ? rs->v[rs->late_rank].rank : -1);
    ana_json_key(j, "collectives");
    ana_json_arr_begin(j);
    size_t n = top && top < rs->n_skew ? top : rs->n_skew;
    for (size_t i = 0; i < n; i++)
        ana_rj_skew_coll(j, rs, &rs->skew[i]);
    ana_json_arr_end(j);
    ana_json_obj_end(j);
}

void ana_ranks_write_json_value(const ana_ranks *rs, size_t top, ana_json *j)
{
    ana_json_obj_begin(j);
    ana_json_kstr(j, "schema", "anatomist.ranks/1");
    ana_rj_job(j, rs);
    ana_rj_time(j, rs);
    ana_rj_memory(j, rs);
    ana_json_key(j, "ranks");
    ana_json_arr_begin(j);
    for (size_t i = 0; i < rs->n; i++)
        ana_rj_rank_row(j, rs, i);
    ana_json_arr_end(j);
    ana_rj_stragglers(j, rs);
    ana_rj_skew(j, rs, top);
    ana_json_obj_end(j);
}

void ana_ranks_write_json(const ana_ranks *rs, size_t top, FILE *f)
{
    ana_json j;
    ana_json_init(&j, f);
    ana_ranks_write_json_value(rs, top, &j);
    ana_json_finish(&j);
}
