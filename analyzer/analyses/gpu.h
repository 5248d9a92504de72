/* gpu.h — what the GPU did, from the GPU_KERNEL/GPU_MEMCPY/GPU_MEMSET records of a loaded
 * trace: busy time (the union of activity intervals per device), idle gaps and the API
 * calls around them, kernels by GPU time, copies by direction and host memory kind,
 * streams, and how well GPU records correlate with the API calls that caused them.
 *
 * Definitions (docs/report-schema.md, `gpu`): an activity occupies [start, start + dur);
 * a device is busy when any activity of any stream runs on it; its span runs from its
 * first start to its last end; an idle gap is a stretch of the span where nothing ran.
 * Pure computation over ana_trace (which must outlive the result); O(n) after the
 * trace's sort, plus O(g log g) for g gaps. Not thread-safe. */
#ifndef ANA_GPU_H
#define ANA_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "model/trace.h"

#define ANA_GPU_MIN_GAP_NS 10000 /* default: gaps shorter than 10 us are launch latency */

/* Directions of GPU_MEMCPY (CUPTI copy kinds) and host memory kinds of HtoD/DtoH. */
enum ana_gpu_dir { ANA_DIR_HTOD, ANA_DIR_DTOH, ANA_DIR_DTOD, ANA_DIR_HTOH, ANA_DIR_PTOP,
                   ANA_DIR_OTHER, ANA_DIR_COUNT };
enum ana_gpu_host { ANA_HOST_PAGEABLE, ANA_HOST_PINNED, ANA_HOST_OTHER, ANA_HOST_COUNT };
extern const char *const ana_gpu_dir_names[ANA_DIR_COUNT];
extern const char *const ana_gpu_host_names[ANA_HOST_COUNT];

typedef struct ana_gpu_sum {
    uint64_t count, bytes, total_ns; /* total_ns: sum of durations */
} ana_gpu_sum;

typedef struct ana_gpu_device {
    int32_t device;
    uint64_t first_ns, last_ns; /* absolute: first start, last end */
    uint64_t span_ns;           /* last_ns - first_ns */
    uint64_t busy_ns, gaps, gaps_ns; /* gaps: those of at least min_gap_ns */
} ana_gpu_device;

typedef struct ana_gpu_stream {
    int32_t device;
    uint32_t stream;
    uint64_t kernels, memcpys, memsets, busy_ns;
    uint64_t device_span_ns; /* span_ns of its device */
} ana_gpu_stream;

/* Kernels with the same name (or, unnamed, the same id) merged. */
typedef struct ana_gpu_kname {
    const ana_trace_kernel *k; /* the first id of the group: its name */
    uint64_t ids;              /* KERNEL ids merged */
    uint64_t count, total_ns, min_ns, max_ns;
} ana_gpu_kname;

typedef struct ana_gpu_gap {
    int32_t device;
    uint64_t start_ns, dur_ns;  /* absolute start */
    ana_gpu_act next;           /* the first activity after the gap (a copy) */
    ana_api_call after;  /* the call that issued it (by corr), when has_after */
    ana_api_call before; /* the last LAUNCH/MEMCPY/MEMSET before the gap began, when has_before */
    int has_after, has_before;
} ana_gpu_gap;

typedef struct ana_gpu_result {
    const char *cupti; /* the last INFO "cupti" value (borrowed from the trace), or NULL */
    int cupti_ran;     /* some INFO "cupti" value is "on" or starts with "on " */
    uint64_t min_gap_ns;
    uint64_t n_acts;
    uint64_t first_ns, last_ns;         /* absolute, over all devices */
    uint64_t busy_ns, spans_ns, idle_ns; /* sums over devices */
    ana_gpu_sum kernels, memcpy, memset;
    ana_gpu_sum copies[ANA_DIR_COUNT], copies_host[ANA_DIR_COUNT][ANA_HOST_COUNT];
    ana_gpu_device *devices;
    size_t n_devices;
    ana_gpu_stream *streams; /* by device, then stream id */
    size_t n_streams;
    ana_gpu_kname *knames;   /* by total time, longest first */
    size_t n_knames;
    ana_gpu_gap *gaps;       /* longest first, at most max_gaps (all when 0) */
    size_t n_gaps;
    uint64_t gaps_total, gaps_ns; /* all gaps of at least min_gap_ns */
    uint64_t no_corr, uncorrelated, correlated;
    uint64_t launches_ok, launches_without_gpu;
} ana_gpu_result;

/* Analyzes t's GPU records; gaps of at least min_gap_ns are counted, the max_gaps longest
 * (0 = all) kept with their calls. */
void ana_gpu_analyze(const ana_trace *t, uint64_t min_gap_ns, size_t max_gaps,
                     ana_gpu_result *g);
void ana_gpu_result_free(ana_gpu_result *g);

/* Direction of a CUPTI copy kind; host kind of the host side of an HtoD/DtoH copy. */
int ana_gpu_dir_of(uint8_t copy_kind);
int ana_gpu_host_of(const ana_gpu_lane *l);

#endif
