/* trace.c — the model's life (trace.h): a new trace, finishing it once every record is in
 * (stacks resolved, arrays sorted, indexes built) and freeing it. Records go in through
 * trace_records.c. Part of model/: called by the importers (import/) and by tests; calls
 * only model/ and format/. */
#include "model/capture.h"
#include "model/stage.h"
#include "model/trace.h"
#include "model/trace_int.h"
#include "model/util.h"

#include <stdlib.h>
#include <string.h>

/* The comparators read the trace being sorted (its lanes, sites and wide values) from
 * ana_sorter_ctx: the sorters of the GPU activities and of the calls have it as their ctx. */
static int ana_gpu_act_cmp(const void *a, const void *b)
{
    const ana_gpu_act *x = a, *y = b;
    const ana_trace *t = ana_sorter_ctx;
    int32_t dx = ana_trace_gpu_lane(t, x)->device, dy = ana_trace_gpu_lane(t, y)->device;
    if (dx != dy)
        return dx < dy ? -1 : 1;
    if (x->start_ns != y->start_ns)
        return x->start_ns < y->start_ns ? -1 : 1;
    uint64_t cx = ana_trace_wide(t, x->corr_w), cy = ana_trace_wide(t, y->corr_w);
    return cx < cy ? -1 : cx > cy;
}

/* 192 MiB of GPU activities in memory at most (as ANA_USES_RUN_DEFAULT) */
#define ANA_GPU_RUN_DEFAULT (1u << 23)

static int ana_api_call_cmp(const void *a, const void *b)
{
    const ana_api_call *x = a, *y = b;
    const ana_trace *t = ana_sorter_ctx;
    if (x->time_ns != y->time_ns)
        return x->time_ns < y->time_ns ? -1 : 1;
    uint32_t wx = ana_trace_call_site(t, x)->tid_w, wy = ana_trace_call_site(t, y)->tid_w;
    if (wx != wy) {
        uint64_t tx = ana_trace_wide(t, wx), ty = ana_trace_wide(t, wy);
        return tx < ty ? -1 : 1;
    }
    uint64_t cx = ana_trace_wide(t, x->corr_w), cy = ana_trace_wide(t, y->corr_w);
    return cx < cy ? -1 : cx > cy;
}

/* 1 Mi memory events (80 MiB) in memory at most; past that they are sorted in runs, and
 * merged into a temporary file */
#define ANA_MEV_RUN_DEFAULT (1u << 20)

/* 8 Mi calls (192 MiB) in memory at most; past that they are sorted in runs and packed */
#define ANA_CALLS_RUN_DEFAULT (1u << 23)

/* A full run of calls, sorted: packed at once (calls.h), not written out as it is. */
static void ana_trace_keep_calls(void *arg, const void *items, size_t n)
{
    ana_calls_pack_run(arg, items, n);
}

/* The calls sorted: the sorted array itself while they stayed in memory; else their packed
 * runs, which are the calls in order when they follow each other in time (one thread's
 * calls, or threads' that do not overlap), or are merged into order. */
static void ana_trace_finish_calls(ana_trace *t)
{
    if (!t->call_sort.n_runs) {
        ana_spill out;
        ana_spill_init(&out, sizeof(ana_api_call), "API calls");
        ana_sorter_finish(&t->call_sort, &out, NULL, NULL);
        ana_calls_adopt(&t->calls, (ana_api_call *)out.mem, out.n);
        out.mem = NULL;
        ana_spill_free(&out);
    } else {
        ana_sorter_flush(&t->call_sort);
        int unordered = t->call_sort.unordered;
        ana_sorter_free(&t->call_sort);
        ana_calls_seal(&t->calls);
        if (unordered) {
            ana_calls merged;
            ana_calls_init(&merged);
            ana_sorter_ctx = t;
            ana_calls_merge_runs(&t->calls, &merged, ana_api_call_cmp);
            ana_sorter_ctx = NULL;
            ana_calls_free(&t->calls);
            t->calls = merged;
        }
    }
    t->n_calls = (size_t)t->calls.n;
}

static void ana_trace_canon_mev(void *arg, const void *item)
{
    ana_trace *t = arg;
    ana_mev e = *(const ana_mev *)item;
    e.stack = ana_stacks_canon(&t->stacks, e.stack);
    ana_spill_push(&t->mev, &e, 1);
}

/* The memory events sorted, with canonical stacks: in place when they stayed in memory,
 * else as the runs are merged into the events' file. */
static void ana_trace_finish_mev(ana_trace *t)
{
    if (!t->mev_sort.n_runs) {
        ana_sorter_finish(&t->mev_sort, &t->mev, NULL, NULL);
        ana_mev *ev = (ana_mev *)(void *)t->mev.mem;
        for (uint64_t i = 0; i < t->mev.n; i++)
            ev[i].stack = ana_stacks_canon(&t->stacks, ev[i].stack);
    } else {
        ana_sorter_finish(&t->mev_sort, &t->mev, ana_trace_canon_mev, t);
    }
    t->n_mev = (size_t)t->mev.n;
}

/* 1 when ip lies in one of CUDA's own libraries (ana_trace_module.cuda_lib). A call
 * recorded by CUPTI's callback (not by a hook) was captured from inside libcupti, called
 * from the runtime or driver: those frames are CUDA's, not the program's. */
static int ana_trace_in_cuda_lib(uint64_t ip, void *arg)
{
    const ana_trace_module *m = ana_trace_module_at(arg, ip - 1);
    return m && m->cuda_lib;
}

/* Stack ids are resolved only now: a segment may use an id that a later segment of
 * another thread defines (docs/trace-format.md, "Interning"). */
void ana_trace_finish(ana_trace *t)
{
    ana_stage(t->path, "putting the records in order", 0, 0);
    ana_trace_index_modules(t);
    ana_py_merge(t);
    ana_stacks_trim_leading(&t->stacks, ana_trace_in_cuda_lib, t);
    ana_stacks_resolve(&t->stacks);
    ana_trace_finish_mev(t);
    ana_sorter_finish(&t->gpu_sort, &t->gpu_spill, NULL, NULL);
    t->n_gpu = t->gpu_spill.n;
    ana_trace_finish_calls(t);
    for (size_t i = 0; i < t->n_sites; i++) /* sites may now repeat: they are not looked up */
        t->sites[i].stack_w = ana_trace_narrow(
            t, ana_stacks_canon(&t->stacks, ana_trace_wide(t, t->sites[i].stack_w)));
    ana_trace_index_calls(t);
    ana_trace_name_launches(t);
    ana_libs_finish(&t->libs);
    ana_trace_uses_finish(t);
    ana_stage(t->path, NULL, 0, 0);
}

ana_trace *ana_trace_new(const char *path, unsigned flags)
{
    ana_trace *t = ana_xcalloc(1, sizeof(*t));
    size_t run;
    t->path = ana_name_dup(path, strlen(path)); /* a job directory's entries are anyone's names */
    t->flags = flags;
    t->source = "anatomist";
    ana_u64map_init(&t->kernel_idx);
    ana_u64map_init(&t->module_idx);
    ana_u64map_init(&t->device_idx);
    ana_u64map_init(&t->corr_map);
    ana_u64map_init(&t->call_ctx);
    ana_u64map_init(&t->wide_idx);
    ana_u64map_init(&t->use_ptr_idx);
    ana_u64map_init(&t->site_idx);
    ana_u64map_init(&t->lane_idx);
    ana_u64map_init(&t->table_dsts);
    ana_stacks_init(&t->stacks);
    ana_py_init(&t->py);
    ana_libs_init(&t->libs);
    ana_trace_uses_init(t);
    ana_calls_init(&t->calls);
    run = ana_sorter_setting("ANATOMIST_SPILL_CALLS", ANA_CALLS_RUN_DEFAULT, sizeof(ana_api_call));
    ana_sorter_init(&t->call_sort, sizeof(ana_api_call), run, 1, ana_api_call_cmp, t, "API calls");
    t->call_sort.keep = ana_trace_keep_calls;
    t->call_sort.keep_arg = &t->calls;
    ana_spill_init(&t->mev, sizeof(ana_mev), "memory events");
    run = ana_sorter_setting("ANATOMIST_SPILL_MEMORY", ANA_MEV_RUN_DEFAULT, sizeof(ana_mev));
    ana_sorter_init(&t->mev_sort, sizeof(ana_mev), run, 0, ana_mev_cmp, t, "memory events");
    ana_spill_init(&t->gpu_spill, sizeof(ana_gpu_act), "GPU activities");
    run = ana_sorter_setting("ANATOMIST_SPILL_GPU", ANA_GPU_RUN_DEFAULT, sizeof(ana_gpu_act));
    ana_sorter_init(&t->gpu_sort, sizeof(ana_gpu_act), run, 0, ana_gpu_act_cmp, t,
                    "GPU activities");
    return t;
}

static void ana_trace_free_process(ana_trace_process *p)
{
    free(p->host);
    free(p->exe);
    for (size_t i = 0; i < p->argc; i++)
        free(p->argv[i]);
    free(p->argv);
}

void ana_trace_free(ana_trace *t)
{
    if (!t)
        return;
    ana_trace_free_process(&t->process);
    for (size_t i = 0; i < t->n_devices; i++)
        free(t->devices[i].name);
    for (size_t i = 0; i < t->n_modules; i++) {
        free(t->modules[i].path);
        free(t->modules[i].shown);
        free(t->modules[i].build_id);
    }
    for (size_t i = 0; i < t->n_kernels; i++)
        free(t->kernels[i].name);
    for (size_t i = 0; i < t->n_info; i++) {
        free(t->info[i].key);
        free(t->info[i].value);
    }
    free(t->devices);
    free(t->modules);
    free(t->kernels);
    free(t->info);
    ana_capture_free(t);
    ana_sorter_free(&t->mev_sort);
    ana_spill_free(&t->mev);
    ana_sorter_free(&t->gpu_sort);
    ana_spill_free(&t->gpu_spill);
    ana_sorter_free(&t->call_sort);
    ana_calls_free(&t->calls);
    ana_sorter_free(&t->use_sort);
    ana_spill_free(&t->use_spill);
    free(t->tables);
    free(t->table_ptrs);
    ana_u64map_free(&t->table_dsts);
    ana_u64map_free(&t->corr_map);
    free(t->corr_g);
    free(t->corr_d);
    ana_u64map_free(&t->call_ctx);
    free(t->wide);
    ana_u64map_free(&t->wide_idx);
    free(t->use_ptrs);
    free(t->sites);
    ana_u64map_free(&t->site_idx);
    free(t->lanes);
    ana_u64map_free(&t->lane_idx);
    ana_u64map_free(&t->use_ptr_idx);
    free(t->end_detail);
    free(t->path);
    ana_u64map_free(&t->kernel_idx);
    free(t->kernel_dense);
    ana_u64map_free(&t->module_idx);
    ana_u64map_free(&t->device_idx);
    free(t->spans);
    ana_stacks_free(&t->stacks);
    ana_py_free(&t->py);
    ana_libs_free(&t->libs);
    free(t);
}
