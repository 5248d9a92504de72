/* report_write.h — the report (analyses/report.h) written as text or as JSON (schema in
 * docs/report-schema.md), section by section, and what the writers share.
 *
 * report_text.c and report_json.c write the whole document; each section has a file of
 * its own (time: report_time.c; memory anatomy: report_memory.c; OOM and advice:
 * report_oom.c; GPU: report_gpu_*.c; libraries and NVTX: report_libs_*.c; capture
 * windows: report_capture.c; the "rank" member: report_rank.c); report_common.c holds what
 * they share (stacks, kernel names, --top). Sections call report_common.c, never the
 * top-level writers. Not thread-safe. */
#ifndef ANA_REPORT_WRITE_H
#define ANA_REPORT_WRITE_H

#include <stdio.h>

#include "analyses/report.h"
#include "model/json.h"

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

/* The capture windows (report_capture.c): the "captured" lines of the header (nothing
 * without capture settings) and the trace.capture JSON object. */
void ana_capture_text(FILE *o, const ana_trace *t);
void ana_capture_json(ana_json *j, const ana_trace *t);
/* The "rank" member of `report --json` (report_rank.c): the summary a job report merges
 * (analyses/ranks.h); the summary alone. */
void ana_report_rank_json(const ana_report *r, ana_json *j);
struct ana_rank;
void ana_rank_write_json(const struct ana_rank *k, ana_json *j);

size_t ana_report_limit(const ana_report *r, size_t n); /* n capped by --top */
extern const char *const ana_memcpy_dir_names[ANA_MEMCPY_DIRS];
/* "process": {...} or null, as in both JSON schemas (report and `anatomist info`). */
void ana_json_process(ana_json *j, const ana_trace *t);

#endif
