/* report.h — the v1 report (`anatomist report`): what is computed from a loaded trace and
 * how it is written as text or as JSON (schema in docs/report-schema.md).
 *
 * ana_report_build runs the memory replay, the GPU analysis (gpu.h), the library-call and
 * NVTX analyses (libcalls.h, nvtx.h) and orders kernels; the writers only format (the GPU
 * section: report_gpu_text.c, report_gpu_json.c; libraries and NVTX: report_libs_text.c,
 * report_libs_json.c).
 * The report borrows the trace, which must outlive it. Not thread-safe. */
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

void ana_report_build(ana_report *r, const ana_trace *t, const ana_report_opts *opt);
void ana_report_free(ana_report *r);
void ana_report_write_text(const ana_report *r, FILE *f);
void ana_report_write_json(const ana_report *r, FILE *f);
/* The same document as a value inside a document being written (html.c embeds it). */
void ana_report_write_json_value(const ana_report *r, ana_json *j);
/* The time anatomy (time by class, steps, phases) of each; the class of a kernel. */
void ana_report_time_text(const ana_report *r, FILE *f);
void ana_report_time_json(const ana_report *r, ana_json *j);
const char *ana_report_kernel_class(const ana_report *r, const ana_trace_kernel *k);
/* The memory anatomy (report_memory.c): the section "Where GPU memory goes", and the
 * members of `memory` it adds. --at: resolves "step:N" or a time since the trace began
 * to an absolute time; -1 with a message in err. */
void ana_report_memcat_text(const ana_report *r, FILE *f);
void ana_report_memcat_json(const ana_report *r, ana_json *j);
/* key: {"weights": bytes, ..., "unattributed": bytes}, the seven categories of memcat.h. */
void ana_report_json_categories(ana_json *j, const char *key, const uint64_t by[ANA_MCAT_COUNT]);
int ana_report_resolve_at(const ana_report *r, const char *spec, uint64_t *time_ns, char *err,
                          size_t cap);
/* The out-of-memory post-mortem (report_oom.c, docs/oom.md): the text section "Out of
 * memory" (nothing when no allocation ran out of memory); the JSON key "oom" with its
 * object or null; the value alone (`anatomist oom --json`). The memory advice: a text
 * section (nothing without advice) and the JSON key "advice" with an array. */
void ana_report_oom_text(const ana_report *r, FILE *f);
void ana_report_oom_json(const ana_report *r, ana_json *j);
void ana_report_oom_json_value(const ana_report *r, ana_json *j);
void ana_report_advice_text(const ana_report *r, FILE *f);
void ana_report_advice_json(const ana_report *r, ana_json *j);
/* The GPU section of each. */
void ana_report_gpu_text(const ana_report *r, FILE *f);
void ana_report_gpu_json(const ana_report *r, ana_json *j);
/* The library (GEMM, NCCL), findings and NVTX sections of each; the memory section's
 * lines by library and by NVTX memory region. */
void ana_report_libs_text(const ana_report *r, FILE *f);
void ana_report_libs_json(const ana_report *r, ana_json *j);
void ana_report_libs_memory_text(const ana_report *r, FILE *f);
void ana_report_libs_memory_json(const ana_report *r, ana_json *j);
/* "NT": the operations on A and B of a GEMM shape. */
void ana_report_gemm_trans(const ana_gemm_shape *s, char out[3]);
/* A call stack as each writer prints it. */
void ana_report_text_stack(FILE *f, const ana_report *r, uint64_t stack);
void ana_report_json_stack(ana_json *j, const ana_report *r, uint64_t stack);
/* ana_report_kernel_name ("(unknown function)" for a NULL k) cut to max bytes, ending in
 * "..." when cut; malloc'd. */
char *ana_report_kernel_label(const ana_trace_kernel *k, size_t max);
/* The "name" (display name; null when unnamed) and "mangled" (as registered) keys of a
 * kernel; both null for a NULL k. */
void ana_report_json_kernel_name(ana_json *j, const ana_trace_kernel *k);

/* Helpers shared by the writers and `anatomist info`. */
const char *ana_report_api_name(uint64_t api, char *buf, size_t cap); /* or "api N" */
size_t ana_report_limit(const ana_report *r, size_t n); /* n capped by --top */
/* Display name of a kernel: demangled when possible; malloc'd. */
char *ana_report_kernel_name(const ana_trace_kernel *k);
extern const char *const ana_memcpy_dir_names[ANA_MEMCPY_DIRS];
/* "process": {...} or null, as in both JSON schemas. */
void ana_json_process(ana_json *j, const ana_trace *t);
/* The command line joined by spaces (argv, else exe), malloc'd. */
char *ana_report_cmdline(const ana_trace *t);

#endif
