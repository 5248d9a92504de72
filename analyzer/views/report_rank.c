/* report_rank.c — the "rank" member of `report --json` (docs/report-schema.md): a rank's
 * summary (analyses/ranks.h), written so that a job too large for one machine can be
 * merged from reports written where its traces lie (import/ranks_read.c reads it back).
 * Part of views/: called by report_json.c; calls analyses/ and model/. */
#include "views/report_write.h"
#include "analyses/ranks.h"

static void ana_rank_json_i64(ana_json *j, const char *key, int64_t v)
{
    ana_json_key(j, key);
    if (v < 0)
        ana_json_null(j);
    else
        ana_json_i64(j, v);
}

static void ana_rank_json_u64s(ana_json *j, const char *key, const uint64_t *v, size_t n)
{
    ana_json_key(j, key);
    ana_json_arr_begin(j);
    for (size_t i = 0; i < n; i++)
        ana_json_u64(j, v[i]);
    ana_json_arr_end(j);
}

static void ana_rank_json_time(ana_json *j, const ana_rank *k)
{
    ana_json_key(j, "time");
    ana_json_obj_begin(j);
    ana_json_ku64(j, "busy_ns", k->busy_ns);
    ana_json_ku64(j, "idle_ns", k->idle_ns);
    ana_json_ku64(j, "span_ns", k->span_ns);
    ana_json_ku64(j, "overlap_ns", k->overlap_ns);
    const char *keys[2] = { "by_class", "by_class_count" };
    const uint64_t *vals[2] = { k->class_ns, k->class_count };
    for (int w = 0; w < 2; w++) {
        ana_json_key(j, keys[w]);
        ana_json_obj_begin(j);
        for (int c = 0; c < ANA_CLASS_COUNT; c++)
            ana_json_ku64(j, ana_class_name(c), vals[w][c]);
        ana_json_obj_end(j);
    }
    ana_json_ku64(j, "kernel_ns", k->kernel_ns);
    ana_json_ku64(j, "memcpy_ns", k->memcpy_ns);
    ana_json_ku64(j, "memset_ns", k->memset_ns);
    ana_json_ku64(j, "launches", k->launches);
    ana_json_obj_end(j);
}

static void ana_rank_json_memory(ana_json *j, const ana_rank *k)
{
    ana_json_key(j, "memory");
    ana_json_obj_begin(j);
    ana_json_ku64(j, "peak_bytes", k->peak_bytes);
    ana_json_ku64(j, "peak_at_ns", k->peak_at_ns);
    ana_json_ku64(j, "live_at_end_bytes", k->live_end_bytes);
    ana_json_ku64(j, "host_pinned_peak_bytes", k->host_peak_bytes);
    ana_report_json_categories(j, "by_category", k->by_category);
    ana_json_obj_end(j);
}

static void ana_rank_json_call(ana_json *j, const ana_rank_coll *c)
{
    char id[24];
    snprintf(id, sizeof(id), "0x%016llx", (unsigned long long)c->comm_id);
    ana_json_arr_begin(j);
    ana_json_str(j, id);
    ana_json_u64(j, c->seq);
    ana_json_u64(j, c->api);
    ana_json_u64(j, c->bytes);
    ana_json_u64(j, c->start_ns);
    ana_json_u64(j, c->dur_ns);
    ana_json_arr_end(j);
}

static void ana_rank_json_colls(ana_json *j, const ana_rank *k)
{
    ana_json_key(j, "collectives");
    ana_json_obj_begin(j);
    ana_json_ku64(j, "calls", k->coll_calls);
    ana_json_ku64(j, "host_ns", k->coll_host_ns);
    ana_json_ku64(j, "gpu_ns", k->coll_gpu_ns);
    ana_json_ku64(j, "bytes", k->coll_bytes);
    ana_json_key(j, "columns");
    ana_json_arr_begin(j);
    static const char *const cols[] = { "comm_id", "seq", "api", "bytes", "start_ns", "dur_ns" };
    for (size_t i = 0; i < sizeof(cols) / sizeof(*cols); i++)
        ana_json_str(j, cols[i]);
    ana_json_arr_end(j);
    ana_json_key(j, "calls_list");
    ana_json_arr_begin(j);
    int inline_depth = j->inline_depth;
    j->inline_depth = j->depth; /* a call a line: a job makes millions */
    for (size_t i = 0; k->colls && i < k->n_colls; i++)
        ana_rank_json_call(j, &k->colls[i]);
    if (!k->colls && k->of) {
        ana_spill_iter it;
        ana_spill_iter_begin(&it, &k->of->t->libs.colls, 0);
        for (const ana_coll_call *c; (c = ana_spill_iter_next(&it));) {
            ana_rank_coll rc = ana_rank_coll_of(k->of->t, c);
            ana_rank_json_call(j, &rc);
        }
        ana_spill_iter_end(&it);
    }
    j->inline_depth = inline_depth;
    ana_json_arr_end(j);
    ana_json_obj_end(j);
}

void ana_rank_write_json(const ana_rank *k, ana_json *j)
{
    ana_json_obj_begin(j);
    ana_rank_json_i64(j, "rank", k->rank);
    ana_rank_json_i64(j, "local_rank", k->local_rank);
    ana_rank_json_i64(j, "world_size", k->world_size);
    ana_json_kstr(j, "host", k->host);
    ana_json_ku64(j, "pid", k->pid);
    ana_json_kstr(j, "exe", k->exe);
    ana_json_kstr(j, "source", k->source);
    ana_json_ku64(j, "start_monotonic_ns", k->start_mono_ns);
    ana_json_key(j, "start_realtime_ns");
    if (k->start_real_ns)
        ana_json_u64(j, k->start_real_ns);
    else
        ana_json_null(j);
    ana_json_ku64(j, "duration_ns", k->duration_ns);
    ana_json_ku64(j, "records", k->records);
    ana_json_key(j, "steps_ns");
    ana_json_arr_begin(j);
    for (size_t i = 0; i < k->n_steps; i++)
        ana_json_u64(j, ana_rank_step_ns(k, i));
    ana_json_arr_end(j);
    ana_rank_json_u64s(j, "steps_collective_ns", k->step_coll_ns, k->n_steps);
    ana_json_ku64(j, "step_mean_ns", k->step_mean_ns);
    ana_json_ku64(j, "step_median_ns", k->step_median_ns);
    ana_json_ku64(j, "work_median_ns", k->work_median_ns);
    ana_json_ku64(j, "collective_median_ns", k->coll_median_ns);
    ana_rank_json_time(j, k);
    ana_rank_json_memory(j, k);
    ana_rank_json_colls(j, k);
    ana_json_obj_end(j);
}

void ana_report_rank_json(const ana_report *r, ana_json *j)
{
    ana_rank k;
    ana_rank_from_report(r, &k, 0);
    ana_json_key(j, "rank");
    ana_rank_write_json(&k, j);
    ana_rank_free(&k);
}
