/* kineto_int.h — the state shared by the Kineto importer's files; private to
 * import/kineto*.c (no other file includes it: the module's contract is kineto.h).
 *
 * kineto.c reads the document and each event into `kin_ev`, turning it into records or
 * keeping it in the compact arrays of `kin`; kineto_names.c holds the name tables (event
 * categories, argument keys, API numbers, copy kinds, op contexts, data types);
 * kineto_emit.c turns what was kept into records once all events are read, and counts and
 * reports what was skipped. Single-threaded, like the rest of the analyzer. */
#ifndef ANA_KINETO_INT_H
#define ANA_KINETO_INT_H

#include "model/jsonr.h"
#include "model/trace.h"

#include <stdint.h>
#include <string.h>

#define KIN_MAX_INPUTS 4
#define KIN_MAX_DIMS 8
#define KIN_MAX_SKIPS 48

enum kin_cat { K_NONE, K_KERNEL, K_MEMCPY, K_MEMSET, K_RUNTIME, K_OP, K_USER, K_GPU_USER,
               K_SILENT, K_OTHER };
enum kin_arg { A_EXT, A_CORR, A_DEVICE, A_STREAM, A_BYTES, A_REGS, A_SHMEM, A_DEVTYPE, A_DEVID,
               A_MBYTES, A_ADDR, A_TOTAL, A_IN, A_OUT, A_GROUP, A_NUMS, /* strings: */
               A_COLL = A_NUMS, A_DTYPE, A_PG, A_PGRANKS, A_NAME, A_STRS_END,
               A_GRID = A_STRS_END, A_BLOCK, A_DIMS, A_TYPES, A_COUNT };

typedef struct kin_s { uint32_t off, len; } kin_s; /* a string in the event arena */

typedef struct kin_ev {
    char ph;
    int cat;
    char cat_name[40];
    kin_s name;
    int has_ts, has_dur, has_pid, has_tid;
    int64_t ts, dur;
    uint64_t pid, tid;
    uint32_t set;                   /* bits of enum kin_arg present */
    int64_t num[A_NUMS];
    kin_s str[A_STRS_END - A_NUMS];
    int64_t grid[3], block[3];
    int n_in;                       /* inputs whose dims were read */
    int ndims[KIN_MAX_INPUTS];      /* -1: more than KIN_MAX_DIMS or not numbers */
    int64_t dims[KIN_MAX_INPUTS][KIN_MAX_DIMS];
    int n_types;
    kin_s types[KIN_MAX_INPUTS];
} kin_ev;

typedef struct kin_call { uint64_t time, dur, tid, corr, ext; uint16_t api; uint8_t kind; } kin_call;
typedef struct kin_mem { uint64_t time, tid, addr; int64_t bytes, total; int64_t device; size_t seq; } kin_mem;
/* What a kept range was (kineto_emit.c keeps only the outermost of nested autograd ones). */
enum kin_rkind { KIN_R_NONE = -1, KIN_R_ANNOT, KIN_R_EVAL, KIN_R_NODE, KIN_R_OPTIM };
typedef struct kin_range { uint64_t start, end, tid; char *name; size_t seq; int kind; } kin_range;
typedef struct kin_coll {
    uint64_t time, tid, ext, count, comm, comm_id;
    int64_t group;
    uint16_t api;
    uint8_t dtype, from_kernel;
} kin_coll;
/* An op that gives its launches an API context (a matmul, convolution, ...): its span. */
typedef struct kin_ctxop { uint64_t start, end, tid, ext; } kin_ctxop;
typedef struct kin_skip { char what[64]; uint64_t n; int silent; } kin_skip;
typedef struct kin_pname { uint64_t pid; char *name; } kin_pname;

typedef struct kin {
    ana_trace *t;
    ana_jsonr *r;
    const char *path;
    kin_ev ev;
    char *arena;
    size_t arena_len, arena_cap;
    char **knames;
    size_t n_knames, cap_knames;
    ana_u64map kname_idx, corr_kernel, corr_copy, comm_seq;
    kin_call *calls;
    size_t n_calls, cap_calls;
    kin_mem *mems;
    size_t n_mems, cap_mems;
    kin_range *ranges;
    size_t n_ranges, cap_ranges;
    kin_coll *colls;
    size_t n_colls, cap_colls;
    kin_ctxop *ctxops;
    size_t n_ctxops, cap_ctxops;
    ana_record *devs; /* DEVICE records, names strdup'd */
    size_t n_devs, cap_devs;
    kin_pname *pnames;
    size_t n_pnames, cap_pnames;
    kin_skip skips[KIN_MAX_SKIPS];
    size_t n_skips;
    int64_t rank, world;
    int has_pid, has_t0, has_events;
    uint64_t pid, t0, events, gemm_unshaped;
    int64_t base_ns;
    char *trace_name;
    char schema[32];
} kin;

/* ---- small accessors --------------------------------------------------------------- */

static inline const char *kin_str(const kin *k, kin_s s) { return s.len ? k->arena + s.off : ""; }
static inline int kin_has(const kin_ev *e, int a) { return (e->set >> a) & 1; }
static inline int64_t kin_num(const kin_ev *e, int a, int64_t dflt) { return kin_has(e, a) ? e->num[a] : dflt; }
static inline const char *kin_arg_str(const kin *k, int a) { return kin_str(k, k->ev.str[a - A_NUMS]); }
static inline void kin_add(kin *k, ana_record *rec) { ana_trace_add(k->t, rec); }
static inline int kin_prefix(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

/* kineto_names.c */
int kin_cat_of(const char *c);
int kin_arg_of(const char *key, size_t n);
void kin_copy_kinds(const char *name, uint64_t *kind, uint64_t *src, uint64_t *dst);
uint16_t kin_api_of(const char *name, uint8_t *kind);
int kin_op_ctx(const char *op);
int kin_op_range(const char *op);
int kin_cuda_type(const char *t);
int kin_nccl_type(const char *t, uint64_t *size);
uint16_t kin_coll_api(const char *c);

/* kineto_emit.c */
void kin_skip_count(kin *k, const char *what, int silent);
void kin_gemm(kin *k, const char *op);
void kin_coll_keep(kin *k, int from_kernel);
void kin_on_memory(kin *k);
void kin_info(kin *k, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void kin_finish(kin *k, uint64_t file_bytes);

#endif
