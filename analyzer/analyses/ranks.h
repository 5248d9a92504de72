/* ranks.h — one report for a multi-process job (docs/ranks.md): the traces of its ranks
 * (one per process) merged into one time and memory anatomy, a per-rank table, the
 * stragglers and the skew of the collectives.
 *
 * Each rank is first reduced to an ana_rank summary, built from the rank's single-trace
 * report (report.h) — the very figures `anatomist report` prints for that trace — or read
 * back from the "rank" member of a `report --json` document written elsewhere (so that a
 * job too large for one machine is analysed rank by rank where its traces lie, and the
 * summaries merged). Both paths give the same summary; the analysis of the job sees only
 * summaries. A summary is small (a few numbers per step and per collective call), so a
 * job of many ranks is read one trace at a time.
 *
 * Definitions (docs/report-schema.md, "ranks"):
 *  - a rank's collective time in a step: host time inside its NCCL collective calls
 *    (COLL.dur) started in the step, plus the GPU time of the step's communication
 *    kernels (NCCL blocks in the host call on some systems and spins in the kernel on
 *    others; a rank waiting for a late peer shows it in one or the other); its work in
 *    a step: the step's duration minus that collective time;
 *  - stragglers: ana_ranks_analyze's rule (ANA_RANKS_RULE below);
 *  - skew: collectives are matched across ranks by communicator id (COMM.comm_id) and
 *    sequence number (COLL.seq); arrival is the call's start, on one clock
 *    (CLOCK_MONOTONIC when every rank ran on one host, else CLOCK_REALTIME from each
 *    PROCESS record's pair of readings); the last to arrive delays the collective by
 *    its arrival minus the second-latest arrival.
 * Not thread-safe; summaries own their strings and arrays. */
#ifndef ANA_RANKS_H
#define ANA_RANKS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analyses/classify.h"
#include "model/json.h"
#include "analyses/memcat.h"

struct ana_report;

/* One collective call of a rank. */
typedef struct ana_rank_coll {
    uint64_t comm_id;  /* COMM.comm_id of its communicator; 0 = unknown (never matched) */
    uint64_t seq;      /* COLL.seq */
    uint64_t bytes;
    uint64_t start_ns; /* since the rank's trace began */
    uint64_t dur_ns;   /* host time in the call */
    uint32_t api;
} ana_rank_coll;

typedef struct ana_rank {
    char *source;           /* the file it came from */
    char *host, *exe;       /* NULL when the trace has no PROCESS record */
    uint64_t pid;
    int64_t rank, local_rank, world_size; /* -1 when not known */
    uint64_t start_mono_ns; /* the trace's first record on CLOCK_MONOTONIC of its host */
    uint64_t start_real_ns; /* the same moment on CLOCK_REALTIME; 0 = not known */
    uint64_t duration_ns, records;
    /* steps (steps.h) */
    size_t n_steps;
    uint64_t *step_ns;      /* duration of each step */
    uint64_t *step_coll_ns; /* collective time of each step (see above) */
    /* derived by ana_rank_derive from the above (lower middle for medians) */
    uint64_t step_mean_ns, step_median_ns, work_median_ns, coll_median_ns;
    /* time anatomy (anatomy.h): sums over the whole trace */
    uint64_t busy_ns, idle_ns, span_ns, overlap_ns;
    uint64_t class_ns[ANA_CLASS_COUNT], class_count[ANA_CLASS_COUNT];
    uint64_t kernel_ns, memcpy_ns, memset_ns, launches;
    /* collectives (libcalls.h) */
    uint64_t coll_calls, coll_host_ns, coll_gpu_ns, coll_bytes;
    /* memory (memory.h, memcat.h) */
    uint64_t peak_bytes, peak_at_ns, live_end_bytes, host_peak_bytes;
    uint64_t by_category[ANA_MCAT_COUNT]; /* device bytes at the peak */
    ana_rank_coll *colls;   /* in the trace's order */
    size_t n_colls;
    /* Set (and step_ns and colls NULL) when the step durations and the collective calls
     * are read from this report where they are needed (ana_rank_step_ns, the writer). */
    const struct ana_report *of;
} ana_rank;

/* The summary of one trace's report. With keep 1 it keeps nothing of the report; with
 * keep 0 it reads the step durations and the collective calls from r where they are
 * needed instead of copying them (of = r), so r must outlive out. */
void ana_rank_from_report(const struct ana_report *r, ana_rank *out, int keep);
/* The duration of step i of k. */
uint64_t ana_rank_step_ns(const ana_rank *k, size_t i);
/* One collective call of trace t as a rank's. */
ana_rank_coll ana_rank_coll_of(const struct ana_trace *t, const ana_coll_call *c);
/* Medians and means from the step arrays. */
void ana_rank_derive(ana_rank *k);
void ana_rank_free(ana_rank *k);

/* Stragglers: a rank stands out in a metric when its value differs from the median m of
 * the OTHER ranks' values, in the metric's bad direction, by more than
 *   max(10% of m, 3 x 1.4826 x MAD of the others, 10% of the job's median step time).
 * Metrics: median step time and median work per step (higher is worse), median collective
 * time per step (lower: it arrives last, the others wait for it). Without steps on every
 * rank, whole-run figures: work = duration - collective time, no step metric. */
#define ANA_RANKS_RULE                                                                    \
    "differs from the median of the other ranks, in the bad direction, by more than "    \
    "max(10% of that median, 3 x 1.4826 x their MAD, 10% of the job's median step time)"

enum ana_rank_metric { ANA_RM_STEP = 0, ANA_RM_WORK = 1, ANA_RM_COLL = 2, ANA_RM_COUNT };

typedef struct ana_straggler {
    size_t idx;          /* into ana_ranks.v */
    int metric;          /* enum ana_rank_metric */
    uint64_t value_ns, others_median_ns, threshold_ns;
} ana_straggler;

/* One collective matched across ranks. */
typedef struct ana_skew_coll {
    uint64_t comm_id, seq, bytes;
    uint32_t api;
    size_t ranks;                  /* ranks that called it */
    size_t first, last;            /* indices into ana_ranks.v */
    uint64_t spread_ns;            /* last arrival - first arrival */
    uint64_t delay_ns;             /* last arrival - second-latest arrival */
    uint64_t dur_min_ns, dur_max_ns, dur_last_ns, dur_median_ns;
    uint64_t start_rel_ns;         /* first arrival, since the earliest trace began */
} ana_skew_coll;

typedef struct ana_skew_rank {
    uint64_t last_count;   /* matched collectives it arrived last at */
    uint64_t delay_ns;     /* sum of their delay_ns */
} ana_skew_rank;

typedef struct ana_ranks {
    ana_rank *v;            /* by rank (then source) after ana_ranks_analyze */
    size_t n, cap;
    /* job */
    int64_t world_size;     /* -1 when the ranks disagree or none says */
    uint64_t job_step_median_ns; /* median of the ranks' median step times; 0 = no steps */
    int all_steps;          /* every rank has steps */
    /* stragglers */
    ana_straggler *stragglers; /* by rank, then metric */
    size_t n_stragglers, cap_stragglers;
    /* skew */
    const char *clock;      /* "monotonic", "realtime", or NULL: no common clock */
    ana_skew_coll *skew;    /* matched collectives, by delay then spread, descending */
    size_t n_skew;
    uint64_t unmatched;     /* calls of a (comm_id, seq) only one rank made */
    ana_skew_rank *by_rank; /* parallel to v */
    size_t late_rank;       /* index of the rank that delayed collectives most; n = none */
} ana_ranks;

/* Takes ownership of *k (a summary from either path). */
void ana_ranks_add(ana_ranks *rs, ana_rank *k);
/* Checks that the ranks belong to one job: 0, or -1 with why in err (two summaries of
 * one rank, world sizes that differ). */
int ana_ranks_check(const ana_ranks *rs, char *err, size_t cap);
/* Sorts by rank and computes the job figures, stragglers and skew. */
void ana_ranks_analyze(ana_ranks *rs);
/* The skew members alone (ranks_skew.c), over ranks already sorted. */
void ana_ranks_skew(ana_ranks *rs);
void ana_ranks_free(ana_ranks *rs);
/* The merged time anatomy: sums over ranks (one value per class), and the memory. */
void ana_ranks_sum_classes(const ana_ranks *rs, uint64_t ns[ANA_CLASS_COUNT],
                           uint64_t count[ANA_CLASS_COUNT]);
const char *ana_rank_metric_name(int metric); /* "step", "work", "collective" */
/* Both name a host, the same one. */
int ana_rank_same_host(const ana_rank *a, const ana_rank *b);


#endif
