/* report.c — see report.h: building the report (every analysis of one trace) and the
 * names the analyses and the views share. Part of analyses/: called by the commands
 * (cli/), the views and the job report; calls analyses/ and model/. */
#include "analyses/report.h"

#include "model/stage.h"
#include "model/util.h"

#include <stdlib.h>
#include <string.h>

static const ana_trace *ana_report_sort_trace; /* qsort has no context argument */

static int ana_report_kernel_cmp(const void *a, const void *b)
{
    const ana_trace_kernel *x = &ana_report_sort_trace->kernels[*(const size_t *)a];
    const ana_trace_kernel *y = &ana_report_sort_trace->kernels[*(const size_t *)b];
    if (x->launches != y->launches)
        return x->launches > y->launches ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

void ana_report_build(ana_report *r, const ana_trace *t, const ana_report_opts *opt)
{
    memset(r, 0, sizeof(*r));
    r->t = t;
    r->opt = *opt;
    r->regions = ana_xcalloc(t->libs.n_regions + 1, sizeof(*r->regions));
    for (size_t i = 0; i < t->libs.n_regions; i++)
        r->regions[i] = (ana_mem_range){ t->libs.regions[i].address, t->libs.regions[i].size, 0, 0 };
    enum { STAGES = 8 };
    ana_stage(t->path, "replaying the memory events", 1, STAGES);
    ana_mem_replay_ranges(&t->mev, r->regions, t->libs.n_regions, &r->mem);
    ana_stage(t->path, "timing the GPU's work", 2, STAGES);
    ana_gpu_analyze(t, opt->min_gap_ns, opt->top, &r->gpu);
    ana_stage(t->path, "timing the library calls", 3, STAGES);
    ana_libcalls_analyze(t, &r->lc);
    ana_stage(t->path, "pairing the NVTX ranges", 4, STAGES);
    ana_nvtx_analyze(t, &r->nvtx);
    ana_stage(t->path, "classifying the GPU time", 5, STAGES);
    ana_anatomy_build(t, &r->gpu, &r->lc, &r->anat);
    ana_stage(t->path, "classifying the device memory", 6, STAGES);
    ana_memcat_build(t, &r->mem, &r->anat.steps, &r->mcat);
    ana_stage(t->path, "explaining failed allocations", 7, STAGES);
    ana_oom_build(t, &r->mem, &r->anat.steps, &r->mcat, &r->oom);
    ana_stage(t->path, "advising", 8, STAGES);
    ana_advice_build(&r->mcat, &r->mem, &r->advice);
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
