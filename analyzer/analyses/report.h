/* report.h — the v1 report (`anatomist report`): what is computed from a loaded trace
 * (schema in docs/report-schema.md).
 *
 * ana_report_build runs the memory replay, the GPU analysis (gpu.h), the library-call and
 * NVTX analyses (libcalls.h, nvtx.h), the time and memory anatomies, the OOM post-mortem
 * and the advice, and orders kernels; the writers (views/report_write.h) only format.
 * The analyses run on up to ana_report_set_jobs threads at once, each as soon as the
 * analyses whose results it reads are done; the report is the same whatever the number.
 * The report borrows the trace, which must outlive it; one report is built at a time. */
#ifndef ANA_REPORT_H
#define ANA_REPORT_H

#include <stdio.h>

#include "analyses/advice.h"
#include "analyses/anatomy.h"
#include "analyses/gpu.h"
#include "model/json.h"
#include "analyses/libcalls.h"
#include "analyses/memcat.h"
#include "analyses/memory.h"
#include "analyses/nvtx.h"
#include "analyses/oom.h"
#include "model/symbolize.h"
#include "model/trace.h"

typedef struct ana_report_opts {
    size_t top;  /* rows per ranked list; 0 = all */
    int symbols; /* 0: do not open ELF files */
    uint64_t min_gap_ns; /* GPU idle gaps shorter than this are not listed */
    const char *at_spec; /* --at as given (NULL: none); at_ns set from it after the build */
    int at_set;
    uint64_t at_ns;      /* absolute */
} ana_report_opts;

typedef struct ana_report {
    const ana_trace *t;
    ana_report_opts opt;
    ana_mem_result mem;
    ana_gpu_result gpu;
    ana_libcalls lc;
    ana_nvtx nvtx;
    ana_anatomy anat;
    ana_memcat mcat;        /* the memory anatomy (categories), over mem and anat.steps */
    ana_oom oom;            /* the out-of-memory post-mortem (oom.h), over mem, mcat, steps */
    ana_advice advice;      /* memory advice from mcat at the peak (advice.h) */
    ana_mem_range *regions; /* one per t->libs.regions, covered bytes at the peak */
    ana_symbolizer *sym;
    size_t *kernel_order; /* indices into t->kernels, most launched first */
} ana_report;

/* Threads for the analyses of each report built from now on (1: this thread alone; 0, the
 * default: one per online CPU; at most ANA_MODEL_SLOTS). */
void ana_report_set_jobs(int n);
void ana_report_build(ana_report *r, const ana_trace *t, const ana_report_opts *opt);
void ana_report_free(ana_report *r);
/* Names the analyses and the views share. */
const char *ana_report_api_name(uint64_t api, char *buf, size_t cap); /* or "api N" */
/* Display name of a kernel: demangled when possible; malloc'd. */
char *ana_report_kernel_name(const ana_trace_kernel *k);
/* The command line joined by spaces (argv, else exe), malloc'd. */
char *ana_report_cmdline(const ana_trace *t);

#endif
