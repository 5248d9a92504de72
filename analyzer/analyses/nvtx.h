/* nvtx.h — NVTX ranges and marks of a trace (RANGE records) with their host and GPU time.
 *
 * Push/pop ranges nest per thread and domain: a pop closes the latest open push of its
 * thread and domain; start/end ranges are matched by id, on any thread. A range's host
 * time is pop − push (end − start); its GPU time is the GPU time of the kernels whose
 * LAUNCH lies inside [push, pop] on the range's thread (for start/end ranges: [start, end]
 * on any thread), so nested ranges each count their inner ranges' time. Ranges are
 * grouped by (kind, domain, name, depth); a pop with nothing open and a push never popped
 * are counted apart, not guessed (docs/report-schema.md, `ranges`).
 *
 * Pure computation over a loaded trace (which must outlive the result);
 * O(r log r + k log k) for r range records and k kernels, in memory that does not grow
 * with k past ANATOMIST_SPILL_NVTX kernels (temporary files then). Not thread-safe. */
#ifndef ANA_NVTX_H
#define ANA_NVTX_H

#include <stddef.h>
#include <stdint.h>

#include "model/trace.h"

typedef struct ana_range_row {
    uint8_t kind;   /* ANA_RANGE_PUSH (push/pop), ANA_RANGE_START (start/end), ANA_RANGE_MARK */
    uint16_t domain; /* index into ana_libs.domains */
    uint32_t name;   /* interned (ana_libs_str) */
    uint32_t depth;  /* push/pop: open ranges of the thread and domain around it */
    uint64_t count, host_ns, gpu_ns;
} ana_range_row;

typedef struct ana_nvtx {
    ana_range_row *rows; /* closed ranges, by host_ns descending */
    size_t n_rows;
    ana_range_row *marks; /* by count descending */
    size_t n_marks;
    uint64_t unmatched_pops, unclosed_pushes, unmatched_ends, unclosed_starts;
} ana_nvtx;

void ana_nvtx_analyze(const ana_trace *t, ana_nvtx *out);

/* A closed range, as ana_nvtx_pair pairs them. */
typedef struct ana_range_span {
    uint64_t t0, t1, tid;  /* push/start and pop/end times; tid: the opener's thread */
    uint32_t name, depth;  /* depth: open ranges of its thread and domain around it; 0 for start/end */
    uint16_t domain;
    uint8_t kind;          /* ANA_RANGE_PUSH (push/pop) or ANA_RANGE_START (start/end) */
} ana_range_span;
typedef struct ana_range_unmatched {
    uint64_t pops, pushes, ends, starts; /* pops/ends with nothing open; pushes/starts never closed */
} ana_range_unmatched;
typedef void (*ana_range_closed)(void *arg, const ana_range_span *s);

/* Pairs the trace's RANGE records as described above, in time order, and calls closed for
 * each range as it closes; what stays unpaired is counted in *unmatched (may be NULL). */
void ana_nvtx_pair(const ana_trace *t, ana_range_closed closed, void *arg,
                   ana_range_unmatched *unmatched);
void ana_nvtx_free(ana_nvtx *n);

#endif
