/* trace.h — the analyzer's in-memory model of one trace, whatever file it came from
 * (import/: .anat through format/reader.h, Kineto JSON).
 *
 * Keeps counts and aggregates for every record, the interned tables (stacks, kernels,
 * modules, devices), one compact ana_mev per ALLOC/FREE/MEMINFO/VMM map-unmap/GPU_MEMORY
 * record for the memory replay (memevents.h; sorted by time, stacks canonical; in a
 * temporary file past a setting), one
 * ana_gpu_act per GPU_KERNEL/GPU_MEMCPY/GPU_MEMSET record (sorted by device, then start)
 * and one ana_api_call per LAUNCH/MEMCPY/MEMSET record (sorted by time, indexed by
 * correlation id; packed on disk past a setting, calls.h) for the GPU analysis
 * (analyses/gpu.h), one ana_ptr_use per device pointer a call used (the memory anatomy's
 * evidence), and the library and NVTX records (libs.h). A trace holds millions of the
 * per-record ones, so what many share is interned once: a call's thread, stack, API and
 * result (ana_call_site), an activity's device, stream and type (ana_gpu_lane), a use's
 * address, values of 2^31 and up (wide values).
 * Built by trace.c, trace_records.c and trace_uses.c; looked up through trace_index.c
 * and trace_modules.c.
 * Strings are copied; the model owns everything and ana_trace_free releases it. */
#ifndef ANA_TRACE_H
#define ANA_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "format/reader.h"
#include "model/calls.h"
#include "model/libs.h"
#include "model/memevents.h"
#include "model/pyframes.h"
#include "model/sorter.h"
#include "model/spill.h"
#include "model/stacks.h"
#include "model/util.h"
#include "model/u64map.h"

typedef struct ana_trace_module {
    uint64_t bias, lo, hi;
    char *path;  /* exact, to open */
    char *shown; /* as printed (util.h ana_name_dup) */
    uint8_t *build_id;
    size_t build_id_len;
    int cuda_lib; /* libcupti, libcuda or libcudart: CUDA's own frames (trace_records.c) */
} ana_trace_module;

/* Addresses [lo, hi) whose module is modules[module] (the latest announcement covering
 * them): disjoint and sorted, built by ana_trace_finish for ana_trace_module_at. */
typedef struct ana_trace_span {
    uint64_t lo, hi;
    size_t module;
} ana_trace_span;

typedef struct ana_trace_device {
    int64_t ordinal;
    char *name;
    uint64_t total_mem, sm_count, cc_major, cc_minor;
} ana_trace_device;

typedef struct ana_trace_kernel {
    uint64_t id, host_fn; /* id 0: launches whose function the profiler did not know */
    char *name;           /* mangled as registered; NULL when never defined */
    uint64_t launches, failed;
    uint64_t gpu_count, gpu_ns, gpu_min_ns, gpu_max_ns; /* GPU_KERNEL records of this id */
} ana_trace_kernel;

/* Ids, sizes and durations that are nearly always small are kept in 32 bits (fields named
 * *_w): a value below 2^31 is itself, a larger one is 2^31 + its index in the model's
 * table of wide values (ana_trace_wide reads either; equal values share one entry).
 * ana_ptr_use's arg is kept in 28 bits the same way, above 2^27. A trace with more than
 * 2^27 distinct wide values is refused (exit status 2). */
#define ANA_TRACE_WIDE_BIT 0x80000000u
#define ANA_TRACE_WIDE28_BIT 0x08000000u

/* What the GPU ran (GPU_KERNEL, GPU_MEMCPY, GPU_MEMSET): 24 bytes each, as a trace may
 * hold millions. */
enum ana_gpu_type { ANA_GPU_KERNEL = 0, ANA_GPU_MEMCPY = 1, ANA_GPU_MEMSET = 2 };
/* What GPU activities of one lane share: device, stream, type and copy kinds. A trace has a
 * few hundred, so each activity keeps an index into the model's table of them
 * (ana_trace_gpu_lane) rather than these 12 bytes. */
typedef struct ana_gpu_lane {
    int32_t device;
    uint32_t stream;           /* CUPTI stream id */
    uint8_t type;              /* enum ana_gpu_type */
    uint8_t copy_kind;         /* GPU_MEMCPY: enum ana_copy_kind (0 when above 255) */
    uint8_t src_kind, dst_kind; /* GPU_MEMCPY: enum ana_mem_kind; GPU_MEMSET: mem_kind in dst */
} ana_gpu_lane;
_Static_assert(sizeof(ana_gpu_lane) == 12, "ana_gpu_lane is 12 bytes");

typedef struct ana_gpu_act {
    uint64_t start_ns;         /* absolute, the clock of every record */
    uint32_t dur_w;            /* duration (ns) */
    uint32_t corr_w;           /* CUPTI correlation id, 0 = none */
    uint32_t arg_w;            /* GPU_KERNEL: KERNEL id; GPU_MEMCPY/GPU_MEMSET: bytes */
    uint32_t lane;             /* its ana_gpu_lane: an index into the model's lanes */
} ana_gpu_act;
_Static_assert(sizeof(ana_gpu_act) == 24, "ana_gpu_act is 24 bytes");

/* What API calls of one site share: thread, stack, API, result. A trace's calls come from
 * a few thousand sites however long it runs, so each call keeps an index into the
 * model's table of them (ana_trace_call_site) rather than these 16 bytes. */
typedef struct ana_call_site {
    uint32_t tid_w;
    uint32_t stack_w; /* canonical */
    int32_t ret;      /* clamped to int32 */
    uint16_t api;
    uint8_t kind;   /* ANA_K_LAUNCH, ANA_K_MEMCPY or ANA_K_MEMSET */
    uint8_t lib;    /* enum ana_lib of the library call or caller module (1.2), 0 = none */
} ana_call_site;
_Static_assert(sizeof(ana_call_site) == 16, "ana_call_site is 16 bytes");

/* A device pointer an API call handed to the GPU (memcat.h): the evidence of which calls
 * touch an allocation. Only successful calls give uses. */
enum ana_use_kind {
    ANA_USE_KERNEL = 1,    /* a kernel parameter word (1.3): read or written, unknown */
    ANA_USE_GEMM_IN = 2,   /* GEMM A or B (1.3): read */
    ANA_USE_GEMM_OUT = 3,  /* GEMM C or D (1.3): written (C also read) */
    ANA_USE_WORKSPACE = 4, /* a library's workspace: cublasSetWorkspace, cublasLtMatmul's */
    ANA_USE_COPY_DST = 5,  /* memcpy destination; arg = the cudaMemcpyKind */
    ANA_USE_COPY_SRC = 6,  /* memcpy source; arg = the cudaMemcpyKind */
    ANA_USE_SET = 7,       /* memset target */
    ANA_USE_COLL = 8,      /* an NCCL send or receive buffer */
};
typedef struct ana_ptr_use { /* 16 bytes: a trace holds about one per record */
    uint64_t time_ns; /* uses of one time stay in the order they were added */
    uint32_t ptr_w;   /* the address: an index into the model's use_ptrs (ana_trace_use_ptr) */
    /* kind (enum ana_use_kind) in the low 4 bits; above them arg in 28 bits (wide values:
     * ANA_TRACE_WIDE28_BIT): KERNEL: KERNEL id; GEMM_IN: the operand's cudaDataType in the
     * low 8 bits, its elements (m·k for A, k·n for B, times the batch) above; GEMM_OUT: the
     * result's cudaDataType;
     * COPY: kind. Read with ana_trace_use_kind and ana_trace_use_arg. */
    uint32_t kind_arg;
} ana_ptr_use;
_Static_assert(sizeof(ana_ptr_use) == 16, "ana_ptr_use is 16 bytes");

typedef struct ana_ptr_table {
    uint64_t time_ns, dst, bytes;
    size_t first, n; /* its pointers: table_ptrs[first .. first + n) */
    size_t order;    /* in the order the records came, for equal times */
} ana_ptr_table;

/* The most pointer words a LAUNCH records (the preload's ANA_KARGS_MAX since 2.1): a
 * launch that recorded as many may have had more. */
#define ANA_TRACE_PTRS_CAP 512

#define ANA_TRACE_KERNEL_DENSE (1u << 20)
#define ANA_CORR_GROUP 64     /* correlation ids per group of the dense index */
#define ANA_CORR_NONE 0xffffu /* corr_d: no call has the id */
#define ANA_CORR_FAR 0xfffeu  /* corr_d: its call is too far from the base: in corr_map */

/* 64 correlation ids of the dense index (ana_trace.corr_g): which have a call, the index
 * of the earliest of those calls, and where their calls lie. */
typedef struct ana_corr_group {
    uint64_t has;  /* bit j: id 64·g + j has a call */
    uint32_t base; /* the earliest call of the group's ids */
    uint32_t d;    /* 0: the ids' calls are consecutive from base, in order of id; else
                    * 1 + the group's row of 64 distances from base in corr_d */
} ana_corr_group;
#define ANA_TRACE_INTERN_CACHE 509 /* slots of the caches before the interning maps */

typedef struct ana_api_stats {
    uint64_t calls, ok, failed, bytes; /* bytes: requested by successful calls */
} ana_api_stats;

typedef struct ana_copy_stats {
    uint64_t calls, failed, bytes; /* bytes: of successful calls */
} ana_copy_stats;

typedef struct ana_trace_process {
    int present;
    uint64_t pid, ppid, realtime_ns, time_ns;
    int64_t rank, local_rank, world_size;
    char *host, *exe;
    char **argv;
    size_t argc;
} ana_trace_process;

typedef struct ana_kv {
    char *key, *value;
} ana_kv;

#define ANA_TRACE_MAX_INFO 256
#define ANA_MEMCPY_DIRS 6 /* cudaMemcpyKind 0..4, then "other" */

typedef struct ana_trace {
    char *path;
    unsigned flags;
    ana_reader_stats stats;
    uint64_t counts[ANA_K_COUNT]; /* records per known kind (SEGMENT is not returned) */
    uint64_t dropped_records, dropped_bytes;
    int has_time;
    uint64_t first_ns, last_ns;
    ana_trace_process process;
    int has_end;
    uint64_t end_reason;
    char *end_detail;
    ana_trace_device *devices;
    size_t n_devices, cap_devices;
    ana_trace_module *modules;
    size_t n_modules, cap_modules;
    ana_trace_kernel *kernels;
    size_t n_kernels, cap_kernels;
    ana_u64map kernel_idx; /* kernel id -> index, for ids of ANA_TRACE_KERNEL_DENSE and up */
    uint32_t *kernel_dense; /* kernel id -> 1 + index (0: none) below ANA_TRACE_KERNEL_DENSE:
                             * the preload numbers kernels from 0, and every launch and GPU
                             * kernel looks its id up */
    size_t n_kernel_dense;
    ana_u64map module_idx; /* hash of a module's range and path -> index (re-announcements) */
    ana_u64map device_idx; /* device ordinal -> index */
    ana_trace_span *spans; /* see ana_trace_span */
    size_t n_spans, cap_spans, spans_for; /* spans_for: n_modules when they were built */
    ana_stacks stacks;
    ana_pycodes py; /* Python code objects (2.2 PYCODE) that stacks' Python frames name */
    /* The memory events (memevents.h: ana_spill_iter, ana_mev_reader), in time order once
     * the model is built: in memory while the trace has at most ANATOMIST_SPILL_MEMORY of
     * them (1 Mi), else in a temporary file. */
    ana_spill mev;
    ana_sorter mev_sort; /* while the model is built */
    size_t n_mev;        /* set by ana_trace_finish (mev.n) */
    ana_api_stats alloc_by_api[ANA_API_COUNT]; /* api >= ANA_API_COUNT counts in [0] */
    ana_api_stats free_by_api[ANA_API_COUNT];
    uint64_t launches, failed_launches;
    uint64_t graph_launches, failed_graph_launches; /* LAUNCH records of graph launches */
    ana_copy_stats memcpy_total, memcpy_by_dir[ANA_MEMCPY_DIRS], memset_total;
    ana_kv *info;
    size_t n_info, cap_info;
    struct ana_capture_win *capture; /* capture windows, in file order (capture.h) */
    size_t n_capture, cap_capture;
    /* The GPU activities, sorted by device, start, corr: read in that order through
     * ana_trace_gpu_begin. In memory while the trace has at most ANATOMIST_SPILL_GPU of them
     * (8 Mi), else sorted in runs on disk and merged there (sorter.h), as the uses are. */
    ana_spill gpu_spill;
    ana_sorter gpu_sort; /* while the model is built */
    size_t n_gpu;        /* set by ana_trace_finish (gpu_spill.n) */
    ana_gpu_lane *lanes;      /* the activities' lanes (ana_trace_gpu_lane), distinct */
    size_t n_lanes, cap_lanes;
    ana_u64map lane_idx;      /* a lane's hash (+ 1, + 2, ... past collisions) -> index */
    uint32_t lane_cache[ANA_TRACE_INTERN_CACHE]; /* 1 + index of a recent lane, by hash */
    /* The calls, in time order (ana_trace_call): sorted while the model is built by
     * call_sort, in memory or packed in a temporary file once there are more than
     * ANATOMIST_SPILL_CALLS (calls.h). n_calls is set by ana_trace_finish. */
    ana_calls calls;
    ana_sorter call_sort;
    size_t n_calls;
    ana_call_site *sites;     /* the calls' sites (ana_trace_call_site), distinct */
    size_t n_sites, cap_sites;
    ana_u64map site_idx;      /* a site's hash (+ 1, + 2, ... past collisions) -> index */
    uint32_t site_cache[ANA_TRACE_INTERN_CACHE]; /* 1 + index of a recent site, by hash */
    /* corr (≠ 0) -> index into the calls (ana_trace_call_index): correlation ids count up
     * in a process, and the calls of 64 ids that follow each other are near each other in
     * time — most often the very calls that follow each other —, so a dense index of
     * corr_n ids from corr_lo keeps, for each 64 (ana_corr_group), which have a call and
     * the index of their earliest; where the calls are consecutive, an id's call is that
     * one plus the ids with a call before it (16 bytes per 64 ids); else the group has a
     * row of 64 distances from its earliest in corr_d (ANA_CORR_NONE: no call;
     * ANA_CORR_FAR: in corr_map). Ids too sparse for it all go in corr_map instead. */
    ana_corr_group *corr_g;
    uint16_t *corr_d;
    size_t n_corr_d;
    uint64_t corr_lo, corr_n;
    ana_u64map corr_map;
    uint64_t gpu_dropped_records, gpu_dropped_by_reason[3]; /* GPU_DROPPED: [0] other reasons */
    ana_libs libs; /* library calls and NVTX (empty in summary mode) */
    const char *source; /* "anatomist" (a .anat trace) or "kineto" (imported, kineto.h) */
    ana_u64map call_ctx; /* imported traces: library call id -> enum ana_ctx (classify.h) */
    /* The uses, read in time order (then file order) through a cursor on use_spill
     * (ana_trace_uses_open): in memory while the trace has at most ANATOMIST_SPILL_USES of
     * them (16 Mi), else in a temporary file, so that they do not hold memory in proportion
     * to the run's length (sorter.h: use_sort sorts them while the model is built).
     * n_uses counts them all, once ana_trace_finish has added the tables' (use_spill.n). */
    ana_spill use_spill;
    size_t n_uses;
    ana_sorter use_sort;
    uint64_t launch_ptrs; /* LAUNCH records that carried pointer words (1.3) */
    uint64_t launch_ptrs_cut; /* LAUNCH records at the cap of pointer words (more may have been) */
    /* Pointer tables (2.1 PTR_TABLE): host-to-device copies whose bytes held device pointers; a
     * kernel that is handed an address inside one reads them (ana_trace_finish adds its
     * uses of the table's pointers). An entry with n == 0 is a later write that replaced
     * a table's contents. */
    struct ana_ptr_table *tables;
    size_t n_tables, cap_tables;
    uint64_t *table_ptrs; /* the tables' pointers, each table's a run */
    size_t n_table_ptrs, cap_table_ptrs;
    ana_u64map table_dsts; /* addresses a table ever started at (a write there ends it) */
    uint64_t table_launches; /* launches that were handed a table (their uses added) */
    uint64_t *wide;       /* values of the *_w fields at or above 2^31 (ana_trace_wide) */
    size_t n_wide, cap_wide;
    ana_u64map wide_idx;  /* value -> index into wide */
    uint64_t *use_ptrs;   /* the distinct addresses of uses (ana_ptr_use ptr_w) */
    size_t n_use_ptrs, cap_use_ptrs;
    ana_u64map use_ptr_idx; /* address -> index into use_ptrs */
    uint32_t use_ptr_cache[ANA_TRACE_INTERN_CACHE]; /* 1 + index of a recent address */
} ana_trace;

/* A cursor on the uses in time order (spill.h: ana_spill_peek gives ana_ptr_use items). */
static inline void ana_trace_uses_open(const ana_trace *t, ana_spill_cur *c)
{
    ana_spill_open(c, &t->use_spill, 0, UINT64_MAX);
}

/* Reading the GPU activities in order:
 *   ana_gpu_iter it;
 *   ana_trace_gpu_begin(t, &it);
 *   for (const ana_gpu_act *a; (a = ana_trace_gpu_next(&it));) ...
 *   ana_trace_gpu_end(&it);
 * An activity's pointer stays valid until the next call. */
typedef ana_spill_iter ana_gpu_iter;
static inline void ana_trace_gpu_begin(const ana_trace *t, ana_gpu_iter *it)
{
    ana_spill_iter_begin(it, &t->gpu_spill, 0);
}
static inline const ana_gpu_act *ana_trace_gpu_next(ana_gpu_iter *it)
{
    return ana_spill_iter_next(it);
}
static inline void ana_trace_gpu_end(ana_gpu_iter *it) { ana_spill_iter_end(it); }
/* Every GPU activity in order, in one array (malloc'd; *n of them): for a view that looks
 * them up at random, and holds them all anyway (trace_index.c). */
ana_gpu_act *ana_trace_gpu_all(const ana_trace *t, size_t *n);

/* The value of a *_w field (see ANA_TRACE_WIDE_BIT). */
static inline uint64_t ana_trace_wide(const ana_trace *t, uint32_t w)
{
    return (w & ANA_TRACE_WIDE_BIT) ? t->wide[w & ~ANA_TRACE_WIDE_BIT] : w;
}
/* The *_w form of v (interning v in t->wide when it is 2^31 or more). */
uint32_t ana_trace_narrow(ana_trace *t, uint64_t v);

/* The kind_arg of an ana_ptr_use. */
uint32_t ana_trace_use_pack(ana_trace *t, unsigned kind, uint64_t arg);
static inline unsigned ana_trace_use_kind(const ana_ptr_use *u) { return u->kind_arg & 15; }
static inline const ana_call_site *ana_trace_call_site(const ana_trace *t, const ana_api_call *c)
{
    return &t->sites[c->site];
}
static inline const ana_gpu_lane *ana_trace_gpu_lane(const ana_trace *t, const ana_gpu_act *a)
{
    return &t->lanes[a->lane];
}
/* The site of the i-th call in time order. */
static inline const ana_call_site *ana_trace_call_site_at(const ana_trace *t, size_t i);
/* The index of lane l in t->lanes (added when new). */
uint32_t ana_trace_lane_of(ana_trace *t, const ana_gpu_lane *l);
/* The index of site s in t->sites (added when new). */
uint32_t ana_trace_site_of(ana_trace *t, const ana_call_site *s);
static inline uint64_t ana_trace_use_ptr(const ana_trace *t, const ana_ptr_use *u)
{
    return t->use_ptrs[u->ptr_w];
}
/* The ptr_w of address p (interned in t->use_ptrs). */
uint32_t ana_trace_use_ptr_w(ana_trace *t, uint64_t p);
static inline uint64_t ana_trace_use_arg(const ana_trace *t, const ana_ptr_use *u)
{
    uint32_t a = u->kind_arg >> 4;
    return (a & ANA_TRACE_WIDE28_BIT) ? t->wide[a & ~ANA_TRACE_WIDE28_BIT] : a;
}

enum ana_load_flags {
    ANA_LOAD_ALL = 0,
    ANA_LOAD_SUMMARY = 1, /* counts and tables only: no events, no stacks (for `info`) */
};

/* Building a model record by record (the loader, and importers of other formats):
 * new, then add each record (counted, timed, kept as the loader keeps it), then finish
 * (sorts, resolves stacks, links launches). Records need not come in time order. */
ana_trace *ana_trace_new(const char *path, unsigned flags);
void ana_trace_add(ana_trace *t, const ana_record *r);
void ana_trace_finish(ana_trace *t);
void ana_trace_free(ana_trace *t);

/* Time relative to the first record of the trace (0 for times before it). */
uint64_t ana_trace_rel_ns(const ana_trace *t, uint64_t time_ns);

/* The kernel table's entry for a KERNEL id, or NULL when the trace has none. */
const ana_trace_kernel *ana_trace_kernel_by_id(const ana_trace *t, uint64_t id);
/* Its index in t->kernels: 1 and *k set, or 0 (inline for the ids below
 * ANA_TRACE_KERNEL_DENSE: the analyses look a kernel up per use and per activity). */
int ana_trace_kernel_index_map(const ana_trace *t, uint64_t id, size_t *k);
static inline int ana_trace_kernel_index(const ana_trace *t, uint64_t id, size_t *k)
{
    if (id >= ANA_TRACE_KERNEL_DENSE)
        return ana_trace_kernel_index_map(t, id, k);
    if (id >= t->n_kernel_dense || !t->kernel_dense[id])
        return 0;
    *k = t->kernel_dense[id] - 1;
    return 1;
}

/* Module whose [lo, hi) holds addr, or NULL. */
const ana_trace_module *ana_trace_module_at(const ana_trace *t, uint64_t addr);
/* Builds t->spans from t->modules (trace_modules.c; ana_trace_finish calls it). */
void ana_trace_index_modules(ana_trace *t);
/* Builds the corr -> call index of t->calls, sorted (trace_index.c; ana_trace_finish). */
void ana_trace_index_calls(ana_trace *t);

/* Memory class of an allocation api (device / pinned host / other). */
int ana_trace_alloc_class(uint64_t api);

/* A string of a record as a name the program chose (util.h ana_name_dup), NUL-terminated. */
char *ana_str_name(ana_str s);
/* Value of the last INFO record with this key (the latest state), or NULL. */
const char *ana_trace_info(const ana_trace *t, const char *key);
/* 0 when the trace cannot tell device memory (an imported profiler trace without memory
 * events: INFO import.device_memory), 1 otherwise. */
int ana_trace_memory_recorded(const ana_trace *t);

/* The first index of t->calls (in time order) whose time is at or after time_ns (after:
 * strictly after); n_calls when none. */
size_t ana_trace_call_bound(const ana_trace *t, uint64_t time_ns, int after);

/* The i-th call in time order (i < n_calls), a copy: it stays valid. */
static inline ana_api_call ana_trace_call(const ana_trace *t, size_t i)
{
    return ana_calls_get(&t->calls, i);
}

static inline const ana_call_site *ana_trace_call_site_at(const ana_trace *t, size_t i)
{
    return &t->sites[ana_trace_call(t, i).site];
}

/* The index of the API call with this correlation id, or SIZE_MAX (corr 0 matches
 * nothing). */
size_t ana_trace_call_index_map(const ana_trace *t, uint64_t corr);
static inline size_t ana_trace_call_index(const ana_trace *t, uint64_t corr)
{
    if (!corr || !t->corr_g)
        return ana_trace_call_index_map(t, corr);
    if (corr < t->corr_lo || corr - t->corr_lo >= t->corr_n)
        return SIZE_MAX;
    uint64_t k = corr - t->corr_lo, j = k % ANA_CORR_GROUP;
    const ana_corr_group *g = &t->corr_g[k / ANA_CORR_GROUP];
    if (!(g->has >> j & 1))
        return SIZE_MAX;
    if (!g->d)
        return (size_t)g->base + (size_t)ana_popcount64(g->has & ((1ull << j) - 1));
    uint16_t d = t->corr_d[(size_t)(g->d - 1) * ANA_CORR_GROUP + j];
    if (d >= ANA_CORR_FAR)
        return d == ANA_CORR_NONE ? SIZE_MAX : ana_trace_call_index_map(t, corr);
    return (size_t)g->base + d;
}
/* 1 and *c, the API call with this correlation id; 0 when there is none. */
static inline int ana_trace_call_by_corr(const ana_trace *t, uint64_t corr, ana_api_call *c)
{
    size_t i = ana_trace_call_index(t, corr);
    if (i == SIZE_MAX)
        return 0;
    *c = ana_trace_call(t, i);
    return 1;
}

#endif
