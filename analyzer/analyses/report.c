/* report.c — see report.h: building the report (every analysis of one trace) and the
 * names the analyses and the views share. Part of analyses/: called by the commands
 * (cli/), the views and the job report; calls analyses/ and model/. */
#include "analyses/report.h"

#include "model/stage.h"
#include "model/util.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static _Thread_local const ana_trace *ana_report_sort_trace; /* qsort has no context argument */

static int ana_report_kernel_cmp(const void *a, const void *b)
{
    const ana_trace_kernel *x = &ana_report_sort_trace->kernels[*(const size_t *)a];
    const ana_trace_kernel *y = &ana_report_sort_trace->kernels[*(const size_t *)b];
    if (x->launches != y->launches)
        return x->launches > y->launches ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int ana_report_jobs; /* ana_report_set_jobs; 0: one per online CPU */

void ana_report_set_jobs(int n) { ana_report_jobs = n; }

/* The analyses of a report. */
enum {
    ANA_RT_MEM, ANA_RT_STEPS, ANA_RT_MEMCAT, ANA_RT_GPU, ANA_RT_LIBCALLS, ANA_RT_NVTX,
    ANA_RT_ANATOMY, ANA_RT_OOM, ANA_RT_ADVICE, ANA_RT_COUNT
};

static const struct {
    const char *what;
    unsigned needs; /* bits of the tasks whose results it reads */
} ana_report_tasks[ANA_RT_COUNT] = {
    [ANA_RT_MEM] = { "replaying the memory events", 0 },
    [ANA_RT_STEPS] = { "finding the steps", 0 },
    [ANA_RT_MEMCAT] = { "classifying the device memory", 1u << ANA_RT_MEM | 1u << ANA_RT_STEPS },
    [ANA_RT_GPU] = { "timing the GPU's work", 0 },
    [ANA_RT_LIBCALLS] = { "timing the library calls", 0 },
    [ANA_RT_NVTX] = { "pairing the NVTX ranges", 0 },
    [ANA_RT_ANATOMY] = { "classifying the GPU time",
                         1u << ANA_RT_GPU | 1u << ANA_RT_LIBCALLS | 1u << ANA_RT_STEPS },
    [ANA_RT_OOM] = { "explaining failed allocations", 1u << ANA_RT_MEMCAT },
    [ANA_RT_ADVICE] = { "advising", 1u << ANA_RT_OOM },
};

/* The order a free thread takes the first task whose inputs are ready in. On several
 * threads, the memory anatomy's chain first, as it is the longest; on one, the order that
 * keeps the peak lowest (the library calls' and the time anatomy's working memory before
 * the memory anatomy's results are held: 950 MB rather than 1.10 GB at 1e9 records). */
static const int ana_report_order_par[ANA_RT_COUNT] = {
    ANA_RT_MEM, ANA_RT_STEPS, ANA_RT_MEMCAT, ANA_RT_GPU, ANA_RT_LIBCALLS,
    ANA_RT_NVTX, ANA_RT_ANATOMY, ANA_RT_OOM, ANA_RT_ADVICE,
};
static const int ana_report_order_one[ANA_RT_COUNT] = {
    ANA_RT_MEM, ANA_RT_GPU, ANA_RT_LIBCALLS, ANA_RT_NVTX, ANA_RT_STEPS,
    ANA_RT_ANATOMY, ANA_RT_MEMCAT, ANA_RT_OOM, ANA_RT_ADVICE,
};

/* Past this many records the analyses run one after the other: side by side their working
 * memories add up, and grow with the trace (bench/gen_trace's training loop, two threads:
 * 641 MB at most while they ran at 5e8 records, below the 893 MB the reading took; 1.16 GB
 * at 1e9, where one at a time peaks at 950 MB; 1 GiB would be crossed near 9e8). */
#define ANA_REPORT_PAR_RECORDS 600000000ull

typedef struct ana_report_run {
    ana_report *r;
    const int *order;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned started, done; /* bits by task */
} ana_report_run;

static void ana_report_task(ana_report *r, int task)
{
    const ana_trace *t = r->t;
    switch (task) {
    case ANA_RT_MEM: ana_mem_replay_ranges(&t->mev, r->regions, t->libs.n_regions, &r->mem); break;
    case ANA_RT_STEPS: ana_anatomy_steps(t, &r->anat); break;
    case ANA_RT_MEMCAT: ana_memcat_build(t, &r->mem, &r->anat.steps, &r->mcat); break;
    case ANA_RT_GPU: ana_gpu_analyze(t, r->opt.min_gap_ns, r->opt.top, &r->gpu); break;
    case ANA_RT_LIBCALLS: ana_libcalls_analyze(t, &r->lc); break;
    case ANA_RT_NVTX: ana_nvtx_analyze(t, &r->nvtx); break;
    case ANA_RT_ANATOMY: ana_anatomy_classify(t, &r->gpu, &r->lc, &r->anat); break;
    case ANA_RT_OOM: ana_oom_build(t, &r->mem, &r->anat.steps, &r->mcat, &r->oom); break;
    default: ana_advice_build(&r->mcat, &r->mem, &r->advice); break;
    }
}

/* Runs tasks until none is left to start: each reads the report's fields its inputs wrote
 * and writes its own, so the results do not depend on which thread ran what, or when. */
static void ana_report_work(ana_report_run *run)
{
    pthread_mutex_lock(&run->mu);
    for (;;) {
        int task = -1;
        for (int i = 0; i < ANA_RT_COUNT && task < 0; i++) {
            int k = run->order[i];
            if (!(run->started >> k & 1) && (ana_report_tasks[k].needs & ~run->done) == 0)
                task = k;
        }
        if (task < 0) {
            if (run->started == (1u << ANA_RT_COUNT) - 1)
                break; /* the rest are under way on other threads */
            pthread_cond_wait(&run->cv, &run->mu);
            continue;
        }
        run->started |= 1u << task;
        ana_stage(run->r->t->path, ana_report_tasks[task].what, (int)ana_popcount64(run->started),
                  ANA_RT_COUNT);
        pthread_mutex_unlock(&run->mu);
        ana_report_task(run->r, task);
        pthread_mutex_lock(&run->mu);
        run->done |= 1u << task;
        pthread_cond_broadcast(&run->cv);
    }
    pthread_mutex_unlock(&run->mu);
}

typedef struct ana_report_worker {
    ana_report_run *run;
    unsigned slot;
} ana_report_worker;

static void *ana_report_thread(void *arg)
{
    ana_report_worker *w = arg;
    ana_model_slot = w->slot;
    ana_report_work(w->run);
    return NULL;
}

/* The threads to run t's analyses on: jobs, or one per online CPU; at most one per model
 * slot (no more than 5 tasks are ever ready at once); one for a trace past
 * ANA_REPORT_PAR_RECORDS. */
static int ana_report_threads(const ana_trace *t)
{
    uint64_t records = 0;
    for (int k = 0; k < ANA_K_COUNT; k++)
        records += t->counts[k];
    long n = ana_report_jobs > 0 ? ana_report_jobs : sysconf(_SC_NPROCESSORS_ONLN);
    if (records > ANA_REPORT_PAR_RECORDS)
        n = 1;
    return n < 1 ? 1 : n > ANA_MODEL_SLOTS ? ANA_MODEL_SLOTS : (int)n;
}

void ana_report_build(ana_report *r, const ana_trace *t, const ana_report_opts *opt)
{
    memset(r, 0, sizeof(*r));
    r->t = t;
    r->opt = *opt;
    r->regions = ana_xcalloc(t->libs.n_regions + 1, sizeof(*r->regions));
    for (size_t i = 0; i < t->libs.n_regions; i++)
        r->regions[i] = (ana_mem_range){ t->libs.regions[i].address, t->libs.regions[i].size, 0, 0 };
    int threads = ana_report_threads(t);
    ana_report_run run = { .r = r, .order = threads > 1 ? ana_report_order_par : ana_report_order_one };
    pthread_mutex_init(&run.mu, NULL);
    pthread_cond_init(&run.cv, NULL);
    /* This thread works too, in its own slot; a thread that cannot start is not needed. */
    pthread_t th[ANA_MODEL_SLOTS];
    ana_report_worker w[ANA_MODEL_SLOTS];
    int n = 0;
    for (int i = 1; i < threads; i++) {
        w[n] = (ana_report_worker){ &run, (unsigned)(ana_model_slot + i) % ANA_MODEL_SLOTS };
        if (pthread_create(&th[n], NULL, ana_report_thread, &w[n]) == 0)
            n++;
    }
    ana_report_work(&run);
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    pthread_cond_destroy(&run.cv);
    pthread_mutex_destroy(&run.mu);
    ana_stage(t->path, NULL, 0, 0);
    r->sym = ana_sym_new(t, opt->symbols);
    r->kernel_order = ana_xcalloc(t->n_kernels + 1, sizeof(size_t));
    for (size_t i = 0; i < t->n_kernels; i++)
        r->kernel_order[i] = i;
    ana_report_sort_trace = t;
    ana_sort(r->kernel_order, t->n_kernels, sizeof(size_t), ana_report_kernel_cmp);
    ana_report_sort_trace = NULL;
}

void ana_report_free(ana_report *r)
{
    ana_mem_result_free(&r->mem);
    ana_gpu_result_free(&r->gpu);
    ana_libcalls_free(&r->lc);
    ana_nvtx_free(&r->nvtx);
    ana_memcat_free(&r->mcat);
    ana_oom_free(&r->oom);
    ana_anatomy_free(&r->anat);
    free(r->regions);
    ana_sym_free(r->sym);
    free(r->kernel_order);
    memset(r, 0, sizeof(*r));
}

const char *ana_report_api_name(uint64_t api, char *buf, size_t cap)
{
    const char *name = api < UINT32_MAX ? ana_api_name((uint32_t)api) : NULL;
    if (name)
        return name;
    snprintf(buf, cap, api ? "api %llu" : "unknown", (unsigned long long)api);
    return buf;
}

char *ana_report_kernel_name(const ana_trace_kernel *k)
{
    if (!k->name)
        return ana_xstrdup(k->id ? "(kernel never registered)" : "(unknown function)");
    char *d = ana_demangle(k->name);
    return d ? d : ana_xstrdup(k->name);
}

char *ana_report_cmdline(const ana_trace *t)
{
    const ana_trace_process *p = &t->process;
    size_t len = 1;
    if (!p->present)
        return ana_xstrdup("");
    if (p->argc == 0)
        return ana_xstrdup(p->exe);
    for (size_t i = 0; i < p->argc; i++)
        len += strlen(p->argv[i]) + 1;
    char *s = ana_xmalloc(len), *w = s;
    for (size_t i = 0; i < p->argc; i++) {
        size_t n = strlen(p->argv[i]);
        if (i)
            *w++ = ' ';
        memcpy(w, p->argv[i], n);
        w += n;
    }
    *w = 0;
    return s;
}
