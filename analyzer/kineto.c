/* kineto.c — see kineto.h; the mapping is specified in docs/kineto-import.md.
 *
 * One pass over the JSON (jsonr.h): each event is read whole into `kin_ev` (keys come in
 * any order), then turned into records at once (kernels, copies, device properties,
 * GEMMs) or kept in compact arrays for the end (API calls, whose kernel or byte count comes
 * from the GPU event with the same correlation; `[memory]` events, whose allocations made
 * before the trace began are only known after the last event; ranges, emitted as properly
 * nested push/pop pairs per thread; collectives). Times are integer ns from the text. */
#include "kineto.h"

#include "classify.h"
#include "jsonr.h"
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define KIN_MAX_INPUTS 4
#define KIN_MAX_DIMS 8
#define KIN_ARENA_MAX (16u << 20)
#define KIN_MAX_SKIPS 48
#define KIN_PRE_BASE 0xfff0000000000000ull /* pseudo addresses: memory from before the trace */
#define KIN_SYN_BASE 0xffe0000000000000ull /* pseudo addresses: [memory] events without Addr */

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
typedef struct kin_range { uint64_t start, end, tid; char *name; size_t seq; } kin_range;
typedef struct kin_coll {
    uint64_t time, tid, ext, count, comm, comm_id;
    int64_t group;
    uint16_t api;
    uint8_t dtype, from_kernel;
} kin_coll;
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

/* ---- events as read --------------------------------------------------------------- */

static const char *kin_str(const kin *k, kin_s s) { return s.len ? k->arena + s.off : ""; }

static kin_s kin_keep(kin *k, const char *s, size_t n)
{
    kin_s out = { 0, 0 };
    if (!n || n + 1 > KIN_ARENA_MAX - k->arena_len)
        return out;
    ANA_GROW(k->arena, k->arena_cap, k->arena_len + n + 1);
    memcpy(k->arena + k->arena_len, s, n);
    k->arena[k->arena_len + n] = 0;
    out.off = (uint32_t)k->arena_len;
    out.len = (uint32_t)n;
    k->arena_len += n + 1;
    return out;
}

static int kin_cat_of(const char *c)
{
    static const struct { const char *name; int cat; } cats[] = {
        { "kernel", K_KERNEL }, { "Kernel", K_KERNEL }, { "gpu_memcpy", K_MEMCPY },
        { "Memcpy", K_MEMCPY }, { "gpu_memset", K_MEMSET }, { "Memset", K_MEMSET },
        { "cuda_runtime", K_RUNTIME }, { "Runtime", K_RUNTIME }, { "cuda_driver", K_RUNTIME },
        { "cpu_op", K_OP }, { "Operator", K_OP }, { "user_annotation", K_USER },
        { "gpu_user_annotation", K_GPU_USER }, { "python_function", K_SILENT },
        { "python", K_SILENT }, { "ac2g", K_SILENT }, { "fwdbwd", K_SILENT },
        { "async", K_SILENT }, { "overhead", K_SILENT }, { "Trace", K_SILENT },
        { "cpu_instant_event", K_NONE },
    };
    for (size_t i = 0; i < sizeof(cats) / sizeof(cats[0]); i++)
        if (strcmp(c, cats[i].name) == 0)
            return cats[i].cat;
    return K_OTHER;
}

/* pid/tid: a number, or a string ("stream 7", "25738", "Spans"). */
static void kin_id(const ana_jsonr *r, int tok, uint64_t *out, int *has)
{
    size_t n;
    const char *s = ana_jsonr_text(r, &n);
    int64_t v;
    if (tok == ANA_JSON_STRING && strncmp(s, "stream ", 7) == 0)
        s += 7, n -= 7;
    if ((tok == ANA_JSON_NUMBER || tok == ANA_JSON_STRING) && ana_jsonr_decimal(s, n, 0, &v) == 0)
        *out = (uint64_t)v, *has = 1;
    else if (tok == ANA_JSON_STRING)
        *out = ana_fnv1a(s, n, ANA_FNV1A_SEED), *has = 2;
}

static int kin_arg_of(const char *key, size_t n)
{
    static const struct { const char *key; int arg; } args[] = {
        { "External id", A_EXT }, { "external id", A_EXT }, { "correlation", A_CORR },
        { "device", A_DEVICE }, { "stream", A_STREAM }, { "bytes", A_BYTES },
        { "registers per thread", A_REGS }, { "shared memory", A_SHMEM },
        { "Device Type", A_DEVTYPE }, { "Device Id", A_DEVID }, { "Bytes", A_MBYTES },
        { "Addr", A_ADDR }, { "Total Allocated", A_TOTAL }, { "In msg nelems", A_IN },
        { "Out msg nelems", A_OUT }, { "Group size", A_GROUP }, { "Collective name", A_COLL },
        { "dtype", A_DTYPE }, { "Process Group Name", A_PG },
        { "Process Group Ranks", A_PGRANKS }, { "name", A_NAME }, { "grid", A_GRID },
        { "block", A_BLOCK }, { "Input Dims", A_DIMS }, { "Input type", A_TYPES },
    };
    for (size_t i = 0; i < sizeof(args) / sizeof(args[0]); i++)
        if (strlen(args[i].key) == n && memcmp(args[i].key, key, n) == 0)
            return args[i].arg;
    return -1;
}

/* An array of up to n numbers (grid, block). */
static int kin_read_nums(kin *k, int tok, int64_t *v, int n)
{
    int i = 0;
    if (tok != ANA_JSON_ARR_BEGIN)
        return ana_jsonr_skip(k->r, tok);
    while ((tok = ana_jsonr_next(k->r)) != ANA_JSON_ARR_END) {
        size_t len;
        const char *s = ana_jsonr_text(k->r, &len);
        if (tok == ANA_JSON_ERROR)
            return -1;
        if (tok == ANA_JSON_NUMBER && i < n && ana_jsonr_decimal(s, len, 0, &v[i]) == 0)
            i++;
        else if (ana_jsonr_skip(k->r, tok) < 0)
            return -1;
    }
    return 0;
}

/* "Input Dims": [[d, d], [d], [], ...]; the first KIN_MAX_INPUTS inputs are kept. */
static int kin_read_dims(kin *k, int tok)
{
    kin_ev *e = &k->ev;
    if (tok != ANA_JSON_ARR_BEGIN)
        return ana_jsonr_skip(k->r, tok);
    e->n_in = 0;
    while ((tok = ana_jsonr_next(k->r)) != ANA_JSON_ARR_END) {
        if (tok == ANA_JSON_ERROR)
            return -1;
        if (tok != ANA_JSON_ARR_BEGIN || e->n_in >= KIN_MAX_INPUTS) {
            if (ana_jsonr_skip(k->r, tok) < 0)
                return -1;
            continue;
        }
        int i = e->n_in++, d = 0;
        while ((tok = ana_jsonr_next(k->r)) != ANA_JSON_ARR_END) {
            size_t len;
            const char *s = ana_jsonr_text(k->r, &len);
            if (tok == ANA_JSON_ERROR)
                return -1;
            if (tok == ANA_JSON_NUMBER && d >= 0 && d < KIN_MAX_DIMS &&
                ana_jsonr_decimal(s, len, 0, &e->dims[i][d]) == 0)
                d++;
            else if ((d = -1, ana_jsonr_skip(k->r, tok) < 0))
                return -1;
        }
        e->ndims[i] = d;
    }
    return 0;
}

static int kin_read_types(kin *k, int tok)
{
    kin_ev *e = &k->ev;
    if (tok != ANA_JSON_ARR_BEGIN)
        return ana_jsonr_skip(k->r, tok);
    e->n_types = 0;
    while ((tok = ana_jsonr_next(k->r)) != ANA_JSON_ARR_END) {
        size_t len;
        const char *s = ana_jsonr_text(k->r, &len);
        if (tok == ANA_JSON_ERROR)
            return -1;
        if (e->n_types < KIN_MAX_INPUTS)
            e->types[e->n_types++] = tok == ANA_JSON_STRING ? kin_keep(k, s, len) : (kin_s){ 0, 0 };
        if (ana_jsonr_skip(k->r, tok) < 0)
            return -1;
    }
    return 0;
}

static int kin_read_arg(kin *k, int a, int tok)
{
    kin_ev *e = &k->ev;
    size_t len;
    const char *s = ana_jsonr_text(k->r, &len);
    switch (a) {
    case A_GRID: e->set |= 1u << a; return kin_read_nums(k, tok, e->grid, 3);
    case A_BLOCK: e->set |= 1u << a; return kin_read_nums(k, tok, e->block, 3);
    case A_DIMS: e->set |= 1u << a; return kin_read_dims(k, tok);
    case A_TYPES: e->set |= 1u << a; return kin_read_types(k, tok);
    default: break;
    }
    if (a < A_NUMS && tok == ANA_JSON_NUMBER && ana_jsonr_decimal(s, len, 0, &e->num[a]) == 0)
        e->set |= 1u << a;
    else if (a >= A_NUMS && tok == ANA_JSON_STRING) {
        e->str[a - A_NUMS] = kin_keep(k, s, len);
        e->set |= 1u << a;
    }
    return ana_jsonr_skip(k->r, tok);
}

static int kin_read_args(kin *k)
{
    int tok;
    while ((tok = ana_jsonr_next(k->r)) == ANA_JSON_KEY) {
        size_t len;
        const char *key = ana_jsonr_text(k->r, &len);
        int a = kin_arg_of(key, len);
        tok = ana_jsonr_next(k->r);
        if (tok == ANA_JSON_ERROR || (a < 0 ? ana_jsonr_skip(k->r, tok) : kin_read_arg(k, a, tok)) < 0)
            return -1;
    }
    return tok == ANA_JSON_OBJ_END ? 0 : -1;
}

static void kin_read_time(kin *k, int tok, int64_t *v, int *has)
{
    size_t len;
    const char *s = ana_jsonr_text(k->r, &len);
    if ((tok == ANA_JSON_NUMBER || tok == ANA_JSON_STRING) && ana_jsonr_decimal(s, len, 3, v) == 0)
        *has = 1;
}

/* One event, after its '{'. Returns 0, or -1 when the reader failed. */
static int kin_read_event(kin *k)
{
    kin_ev *e = &k->ev;
    int tok;
    memset(e, 0, sizeof(*e));
    k->arena_len = 0;
    while ((tok = ana_jsonr_next(k->r)) == ANA_JSON_KEY) {
        size_t len;
        char key[8] = "";
        const char *s = ana_jsonr_text(k->r, &len);
        if (len < sizeof(key))
            memcpy(key, s, len + 1);
        tok = ana_jsonr_next(k->r);
        s = ana_jsonr_text(k->r, &len);
        if (tok == ANA_JSON_ERROR)
            return -1;
        if (strcmp(key, "args") == 0 && tok == ANA_JSON_OBJ_BEGIN) {
            if (kin_read_args(k) < 0)
                return -1;
            continue;
        }
        if (tok == ANA_JSON_STRING && strcmp(key, "ph") == 0)
            e->ph = s[0];
        else if (tok == ANA_JSON_STRING && strcmp(key, "cat") == 0) {
            e->cat = kin_cat_of(s);
            snprintf(e->cat_name, sizeof(e->cat_name), "%s", s);
        } else if (tok == ANA_JSON_STRING && strcmp(key, "name") == 0)
            e->name = kin_keep(k, s, len);
        else if (strcmp(key, "pid") == 0)
            kin_id(k->r, tok, &e->pid, &e->has_pid);
        else if (strcmp(key, "tid") == 0)
            kin_id(k->r, tok, &e->tid, &e->has_tid);
        else if (strcmp(key, "ts") == 0)
            kin_read_time(k, tok, &e->ts, &e->has_ts);
        else if (strcmp(key, "dur") == 0)
            kin_read_time(k, tok, &e->dur, &e->has_dur);
        if (ana_jsonr_skip(k->r, tok) < 0)
            return -1;
    }
    return tok == ANA_JSON_OBJ_END ? 0 : -1;
}

/* ---- bookkeeping ------------------------------------------------------------------- */

static void kin_skip_count(kin *k, const char *what, int silent)
{
    size_t i;
    for (i = 0; i < k->n_skips; i++)
        if (strcmp(k->skips[i].what, what) == 0)
            break;
    if (i == k->n_skips) {
        if (k->n_skips == KIN_MAX_SKIPS) {
            i = KIN_MAX_SKIPS - 1; /* the last slot takes the rest */
            snprintf(k->skips[i].what, sizeof(k->skips[i].what), "other");
            k->skips[i].silent = 0;
        } else {
            snprintf(k->skips[i].what, sizeof(k->skips[i].what), "%s", what);
            k->skips[i].silent = silent;
            k->n_skips++;
        }
    }
    k->skips[i].n++;
}

static int kin_has(const kin_ev *e, int a) { return (e->set >> a) & 1; }
static int64_t kin_num(const kin_ev *e, int a, int64_t dflt) { return kin_has(e, a) ? e->num[a] : dflt; }
static const char *kin_arg_str(const kin *k, int a) { return kin_str(k, k->ev.str[a - A_NUMS]); }

static void kin_note_time(kin *k, uint64_t ns)
{
    if (!k->has_t0 || ns < k->t0)
        k->t0 = ns;
    k->has_t0 = 1;
}

static void kin_add(kin *k, ana_record *rec) { ana_trace_add(k->t, rec); }

/* The KERNEL id of a name (1, 2, ...), adding its KERNEL record when new. */
static uint64_t kin_kernel_id(kin *k, const char *name, uint64_t time)
{
    size_t n = strlen(name);
    uint64_t h = ana_fnv1a(name, n, ANA_FNV1A_SEED), idx;
    for (;; h++) {
        if (!ana_u64map_get(&k->kname_idx, h, &idx))
            break;
        if (strcmp(k->knames[idx], name) == 0)
            return idx + 1;
    }
    ANA_GROW(k->knames, k->cap_knames, k->n_knames + 1);
    k->knames[k->n_knames] = ana_xstrdup(name);
    ana_u64map_put(&k->kname_idx, h, k->n_knames);
    ana_record rec = { .kind = ANA_K_KERNEL, .time_ns = time };
    rec.u.kernel = (ana_rec_kernel){ .id = ++k->n_knames, .name = { name, (uint32_t)n } };
    kin_add(k, &rec);
    return k->n_knames;
}

/* ---- names ------------------------------------------------------------------------- */

static int kin_word_is(const char *s, size_t n, const char *w) { return strlen(w) == n && memcmp(s, w, n) == 0; }

/* "Memcpy HtoD (Pageable -> Device)": the copy kind and the memory kinds of both sides. */
static void kin_copy_kinds(const char *name, uint64_t *kind, uint64_t *src, uint64_t *dst)
{
    static const char *const kinds[] = { "", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD",
                                         "DtoA", "DtoD", "HtoH", "PtoP" };
    static const char *const mems[] = { "", "Pageable", "Pinned", "Device", "Array", "Managed",
                                        "Device Static", "Managed Static" };
    const char *p = strchr(name, ' '), *o, *a, *c;
    *kind = *src = *dst = 0;
    if (!p)
        return;
    p++;
    size_t n = strcspn(p, " ");
    for (size_t i = 1; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (kin_word_is(p, n, kinds[i]))
            *kind = i;
    if (!(o = strchr(p, '(')) || !(c = strchr(o, ')')))
        return;
    o++;
    a = strstr(o, " -> ");
    for (size_t i = 1; i < sizeof(mems) / sizeof(mems[0]); i++) {
        if (a && a < c && kin_word_is(o, (size_t)(a - o), mems[i]))
            *src = i;
        if (kin_word_is(a && a < c ? a + 4 : o, (size_t)(c - (a && a < c ? a + 4 : o)), mems[i]))
            *dst = i;
    }
}

/* LAUNCH/MEMCPY/MEMSET api of a runtime or driver call (docs/kineto-import.md), or 0. */
static uint16_t kin_api_of(const char *name, uint8_t *kind)
{
    static const struct { const char *name; uint16_t api; uint8_t kind; } apis[] = {
        { "cudaLaunchKernel", 20, ANA_K_LAUNCH }, { "cudaLaunchKernel_ptsz", 21, ANA_K_LAUNCH },
        { "cudaLaunchKernelExC", 22, ANA_K_LAUNCH }, { "cudaLaunchKernelExC_ptsz", 23, ANA_K_LAUNCH },
        { "cudaLaunchCooperativeKernel", 18, ANA_K_LAUNCH },
        { "cudaLaunchCooperativeKernelMultiDevice", 18, ANA_K_LAUNCH },
        { "cuLaunchCooperativeKernel", 18, ANA_K_LAUNCH }, { "cuGraphLaunch", 19, ANA_K_LAUNCH },
        { "cudaGraphLaunch", 26, ANA_K_LAUNCH }, { "cudaGraphLaunch_ptsz", 27, ANA_K_LAUNCH },
        { "cuLaunchKernel", 28, ANA_K_LAUNCH }, { "cuLaunchKernelEx", 29, ANA_K_LAUNCH },
        { "cudaMemcpy", 30, ANA_K_MEMCPY }, { "cudaMemcpyAsync", 31, ANA_K_MEMCPY },
        { "cudaMemcpy2D", 32, ANA_K_MEMCPY }, { "cudaMemcpy2DAsync", 33, ANA_K_MEMCPY },
        { "cudaMemcpyToSymbol", 34, ANA_K_MEMCPY }, { "cudaMemcpyFromSymbol", 35, ANA_K_MEMCPY },
        { "cudaMemcpyPeer", 36, ANA_K_MEMCPY }, { "cudaMemcpyPeerAsync", 37, ANA_K_MEMCPY },
        { "cudaMemcpy3D", 38, ANA_K_MEMCPY }, { "cudaMemcpy3DAsync", 39, ANA_K_MEMCPY },
        { "cuMemcpy", 80, ANA_K_MEMCPY }, { "cuMemcpyAsync", 81, ANA_K_MEMCPY },
        { "cuMemcpyHtoD", 82, ANA_K_MEMCPY }, { "cuMemcpyHtoDAsync", 83, ANA_K_MEMCPY },
        { "cuMemcpyDtoH", 84, ANA_K_MEMCPY }, { "cuMemcpyDtoHAsync", 85, ANA_K_MEMCPY },
        { "cuMemcpyDtoD", 86, ANA_K_MEMCPY }, { "cuMemcpyDtoDAsync", 87, ANA_K_MEMCPY },
        { "cudaMemset", 40, ANA_K_MEMSET }, { "cudaMemsetAsync", 41, ANA_K_MEMSET },
        { "cudaMemset2D", 42, ANA_K_MEMSET }, { "cudaMemset2DAsync", 43, ANA_K_MEMSET },
        { "cudaMemset3D", 44, ANA_K_MEMSET }, { "cudaMemset3DAsync", 45, ANA_K_MEMSET },
        { "cuMemsetD8", 90, ANA_K_MEMSET }, { "cuMemsetD32", 91, ANA_K_MEMSET },
        { "cuMemsetD8Async", 92, ANA_K_MEMSET }, { "cuMemsetD32Async", 93, ANA_K_MEMSET },
    };
    /* versioned and per-thread-stream entry points: cuMemcpyHtoD_v2, cudaMemcpy_ptds... */
    size_t n = strlen(name);
    const char *v = strstr(name, "_v");
    if (!v)
        v = strstr(name, "_ptds");
    if (v && !(n >= 5 && strcmp(name + n - 5, "_ptsz") == 0))
        n = (size_t)(v - name);
    for (size_t i = 0; i < sizeof(apis) / sizeof(apis[0]); i++)
        if (kin_word_is(name, n, apis[i].name)) {
            *kind = apis[i].kind;
            return apis[i].api;
        }
    return 0;
}

static int kin_prefix(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

/* The API context an op gives the kernels launched inside it (classify.h). */
static int kin_op_ctx(const char *op)
{
    static const char *const gemm[] = { "aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm",
                                        "aten::matmul", "aten::linear", "aten::_scaled_mm",
                                        "aten::addbmm", "aten::_addmm_activation", "aten::_int_mm" };
    static const char *const conv[] = { "aten::cudnn_convolution", "aten::_convolution",
                                        "aten::convolution", "aten::conv1d", "aten::conv2d",
                                        "aten::conv3d", "aten::conv_transpose",
                                        "aten::miopen_convolution", "aten::mkldnn_convolution",
                                        "aten::_conv_depthwise", "aten::conv_depthwise",
                                        "aten::slow_conv", "aten::_slow_conv" };
    static const char *const attn[] = { "aten::_scaled_dot_product_", "aten::scaled_dot_product_attention",
                                        "aten::_flash_attention", "aten::_efficient_attention",
                                        "aten::_fused_sdp", "aten::_cudnn_attention" };
    static const char *const comm[] = { "nccl:", "c10d::", "record_param_comms",
                                        "c10d_functional::", "_c10d_functional::", "symm_mem::" };
    for (size_t i = 0; i < sizeof(gemm) / sizeof(gemm[0]); i++)
        if (strcmp(op, gemm[i]) == 0)
            return ANA_CTX_GEMM;
    for (size_t i = 0; i < sizeof(conv) / sizeof(conv[0]); i++)
        if (kin_prefix(op, conv[i]))
            return ANA_CTX_CONV;
    for (size_t i = 0; i < sizeof(attn) / sizeof(attn[0]); i++)
        if (kin_prefix(op, attn[i]))
            return ANA_CTX_ATTENTION;
    for (size_t i = 0; i < sizeof(comm) / sizeof(comm[0]); i++)
        if (kin_prefix(op, comm[i]))
            return ANA_CTX_COMM;
    return ANA_CTX_NONE;
}

/* cudaDataType_t of a PyTorch type name, or -1. */
static int kin_cuda_type(const char *t)
{
    static const struct { const char *name; int type; } types[] = {
        { "float", 0 }, { "double", 1 }, { "c10::Half", 2 }, { "signed char", 3 },
        { "unsigned char", 8 }, { "int", 10 }, { "c10::BFloat16", 14 },
        { "c10::Float8_e4m3fn", 28 }, { "c10::Float8_e5m2", 29 },
    };
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        if (strcmp(t, types[i].name) == 0)
            return types[i].type;
    return -1;
}

/* ncclDataType_t and its size from the profiler's dtype ("Float", "BFloat16"), or -1. */
static int kin_nccl_type(const char *t, uint64_t *size)
{
    static const struct { const char *name; int type; uint8_t size; } types[] = {
        { "Char", 0, 1 }, { "Byte", 1, 1 }, { "Bool", 1, 1 }, { "Int", 2, 4 }, { "Long", 4, 8 },
        { "Half", 6, 2 }, { "Float", 7, 4 }, { "Double", 8, 8 }, { "BFloat16", 9, 2 },
        { "Float8_e4m3fn", 10, 1 }, { "Float8_e5m2", 11, 1 },
    };
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        if (strcmp(t, types[i].name) == 0) {
            *size = types[i].size;
            return types[i].type;
        }
    return -1;
}

/* COLL api of a "Collective name" ("allreduce", "_allgather_base", ...), or 0. */
static uint16_t kin_coll_api(const char *c)
{
    while (*c == '_')
        c++;
    if (kin_prefix(c, "allreduce") || kin_prefix(c, "all_reduce"))
        return ANA_API_NCCL_ALL_REDUCE;
    if (kin_prefix(c, "allgather") || kin_prefix(c, "all_gather"))
        return ANA_API_NCCL_ALL_GATHER;
    if (kin_prefix(c, "reduce_scatter") || kin_prefix(c, "reducescatter"))
        return ANA_API_NCCL_REDUCE_SCATTER;
    if (kin_prefix(c, "broadcast"))
        return ANA_API_NCCL_BROADCAST;
    if (kin_prefix(c, "reduce"))
        return ANA_API_NCCL_REDUCE;
    if (kin_prefix(c, "send"))
        return ANA_API_NCCL_SEND;
    if (kin_prefix(c, "recv"))
        return ANA_API_NCCL_RECV;
    return 0;
}

/* ---- events to records ------------------------------------------------------------- */

static void kin_on_kernel(kin *k)
{
    const kin_ev *e = &k->ev;
    uint64_t kid = kin_kernel_id(k, kin_str(k, e->name), (uint64_t)e->ts);
    uint64_t corr = (uint64_t)kin_num(e, A_CORR, 0);
    ana_record rec = { .kind = ANA_K_GPU_KERNEL, .tid = e->tid, .time_ns = (uint64_t)e->ts };
    rec.u.gpu_kernel = (ana_rec_gpu_kernel){
        .corr = corr, .dur_ns = (uint64_t)e->dur, .kernel = kid,
        .device = kin_num(e, A_DEVICE, (int64_t)e->pid),
        .stream = (uint64_t)kin_num(e, A_STREAM, (int64_t)e->tid),
        .grid_x = (uint64_t)e->grid[0], .grid_y = (uint64_t)e->grid[1], .grid_z = (uint64_t)e->grid[2],
        .block_x = (uint64_t)e->block[0], .block_y = (uint64_t)e->block[1],
        .block_z = (uint64_t)e->block[2], .shmem_static = (uint64_t)kin_num(e, A_SHMEM, 0),
        .regs = (uint64_t)kin_num(e, A_REGS, 0),
    };
    kin_add(k, &rec);
    if (corr)
        ana_u64map_put(&k->corr_kernel, corr, kid);
}

static void kin_on_copy(kin *k, int memset)
{
    const kin_ev *e = &k->ev;
    uint64_t corr = (uint64_t)kin_num(e, A_CORR, 0), kind, src, dst;
    uint64_t bytes = (uint64_t)kin_num(e, A_BYTES, 0);
    ana_record rec = { .kind = memset ? ANA_K_GPU_MEMSET : ANA_K_GPU_MEMCPY, .tid = e->tid,
                       .time_ns = (uint64_t)e->ts };
    int64_t device = kin_num(e, A_DEVICE, (int64_t)e->pid);
    uint64_t stream = (uint64_t)kin_num(e, A_STREAM, (int64_t)e->tid);
    kin_copy_kinds(kin_str(k, e->name), &kind, &src, &dst);
    if (memset)
        rec.u.gpu_memset = (ana_rec_gpu_memset){ .corr = corr, .dur_ns = (uint64_t)e->dur,
                                                 .bytes = bytes, .mem_kind = dst,
                                                 .device = device, .stream = stream };
    else
        rec.u.gpu_memcpy = (ana_rec_gpu_memcpy){ .corr = corr, .dur_ns = (uint64_t)e->dur,
                                                 .bytes = bytes, .copy_kind = kind, .src_kind = src,
                                                 .dst_kind = dst, .device = device, .stream = stream,
                                                 .src_device = device, .dst_device = device };
    kin_add(k, &rec);
    if (corr && bytes < (1ull << 56))
        ana_u64map_put(&k->corr_copy, corr, bytes << 8 | kind);
}

static void kin_on_api(kin *k)
{
    const kin_ev *e = &k->ev;
    uint8_t kind = 0;
    uint16_t api = kin_api_of(kin_str(k, e->name), &kind);
    if (!api) {
        kin_skip_count(k, "cuda_runtime/cuda_driver (other calls)", 1);
        return;
    }
    ANA_GROW(k->calls, k->cap_calls, k->n_calls + 1);
    k->calls[k->n_calls++] = (kin_call){
        .time = (uint64_t)e->ts, .dur = (uint64_t)e->dur, .tid = e->tid,
        .corr = (uint64_t)kin_num(e, A_CORR, 0), .ext = (uint64_t)kin_num(e, A_EXT, 0),
        .api = api, .kind = kind,
    };
}

/* A matmul op with recorded shapes: its GEMM record (m × n output, k inner, row-major). */
static void kin_gemm(kin *k, const char *op)
{
    static const struct { const char *op; int first, rank; } ops[] = {
        { "aten::mm", 0, 2 }, { "aten::addmm", 1, 2 }, { "aten::_addmm_activation", 1, 2 },
        { "aten::_scaled_mm", 0, 2 }, { "aten::_int_mm", 0, 2 }, { "aten::bmm", 0, 3 },
        { "aten::baddbmm", 1, 3 },
    };
    const kin_ev *e = &k->ev;
    size_t i;
    for (i = 0; i < sizeof(ops) / sizeof(ops[0]) && strcmp(op, ops[i].op) != 0; i++)
        ;
    if (i == sizeof(ops) / sizeof(ops[0]))
        return;
    int a = ops[i].first, rk = ops[i].rank;
    int at = a < e->n_types ? kin_cuda_type(kin_str(k, e->types[a])) : -1;
    int bt = a + 1 < e->n_types ? kin_cuda_type(kin_str(k, e->types[a + 1])) : -1;
    if (a + 1 >= e->n_in || e->ndims[a] != rk || e->ndims[a + 1] != rk || at < 0 || bt < 0 ||
        !kin_has(e, A_EXT)) {
        k->gemm_unshaped++;
        return;
    }
    const int64_t *A = e->dims[a], *B = e->dims[a + 1];
    uint64_t batch = rk == 3 ? (uint64_t)A[0] : 1, m = (uint64_t)A[rk - 2];
    uint64_t kk = (uint64_t)A[rk - 1], n = (uint64_t)B[rk - 1];
    ana_record rec = { .kind = ANA_K_GEMM, .tid = e->tid, .time_ns = (uint64_t)e->ts };
    rec.u.gemm = (ana_rec_gemm){
        .api = rk == 3 ? ANA_API_CUBLAS_GEMM_STRIDED_BATCHED_EX : ANA_API_CUBLAS_GEMM_EX,
        .call = (uint64_t)e->num[A_EXT], .m = m, .n = n, .k = kk, .batch = batch,
        .a_type = (uint64_t)at, .b_type = (uint64_t)bt, .c_type = (uint64_t)at,
        .compute_type = 68, /* CUBLAS_COMPUTE_32F: PyTorch's default for these types */
        .flops = 2 * m * n * kk * batch, .dur_ns = (uint64_t)e->dur,
    };
    kin_add(k, &rec);
}

/* A collective the event describes (record_param_comms, or an NCCL kernel's args). */
static void kin_coll_keep(kin *k, int from_kernel)
{
    const kin_ev *e = &k->ev;
    uint16_t api = kin_coll_api(kin_arg_str(k, A_COLL));
    uint64_t size = 0;
    int dtype = kin_nccl_type(kin_arg_str(k, A_DTYPE), &size);
    if (!api || !kin_has(e, A_EXT)) {
        kin_skip_count(k, "record_param_comms of no NCCL operation", 1);
        return;
    }
    const char *pg = kin_arg_str(k, A_PG), *ranks = kin_arg_str(k, A_PGRANKS);
    uint64_t h = ana_fnv1a(pg, strlen(pg), ANA_FNV1A_SEED);
    int64_t count = kin_num(e, api == ANA_API_NCCL_REDUCE_SCATTER ? A_OUT : A_IN, 0);
    ANA_GROW(k->colls, k->cap_colls, k->n_colls + 1);
    k->colls[k->n_colls++] = (kin_coll){
        .time = (uint64_t)e->ts, .tid = from_kernel ? 0 : e->tid, .ext = (uint64_t)e->num[A_EXT],
        .count = count > 0 ? (uint64_t)count : 0, .comm = h | 1,
        .comm_id = ana_fnv1a(ranks, strlen(ranks), h), .group = kin_num(e, A_GROUP, -1),
        .api = api, .dtype = (uint8_t)(dtype < 0 ? 255 : dtype), .from_kernel = (uint8_t)from_kernel,
    };
}

static void kin_on_op(kin *k, int user)
{
    const kin_ev *e = &k->ev;
    const char *name = kin_str(k, e->name);
    int ctx = kin_op_ctx(name);
    if (ctx && kin_has(e, A_EXT))
        ana_u64map_put(&k->t->call_ctx, (uint64_t)e->num[A_EXT], (uint64_t)ctx);
    if (user) {
        ANA_GROW(k->ranges, k->cap_ranges, k->n_ranges + 1);
        k->ranges[k->n_ranges] = (kin_range){ (uint64_t)e->ts, (uint64_t)(e->ts + e->dur), e->tid,
                                              ana_xstrdup(name), k->n_ranges };
        k->n_ranges++;
        return;
    }
    if (ctx == ANA_CTX_GEMM && kin_has(e, A_DIMS))
        kin_gemm(k, name);
    if (strcmp(name, "record_param_comms") == 0 && kin_has(e, A_COLL))
        kin_coll_keep(k, 0);
}

static void kin_on_memory(kin *k)
{
    const kin_ev *e = &k->ev;
    int64_t type = kin_num(e, A_DEVTYPE, -1), bytes = kin_num(e, A_MBYTES, 0);
    if (type != 1) {
        kin_skip_count(k, type == 0 ? "[memory] on the CPU" : "[memory] on other devices", 1);
        return;
    }
    if (!bytes) {
        kin_skip_count(k, "[memory] of 0 bytes", 1);
        return;
    }
    ANA_GROW(k->mems, k->cap_mems, k->n_mems + 1);
    k->mems[k->n_mems] = (kin_mem){ (uint64_t)e->ts, e->tid, (uint64_t)kin_num(e, A_ADDR, 0),
                                    bytes, kin_num(e, A_TOTAL, -1), kin_num(e, A_DEVID, 0),
                                    k->n_mems };
    k->n_mems++;
}

static void kin_on_meta(kin *k)
{
    const kin_ev *e = &k->ev;
    if (strcmp(kin_str(k, e->name), "process_name") != 0 || !kin_has(e, A_NAME) || e->has_pid != 1)
        return;
    ANA_GROW(k->pnames, k->cap_pnames, k->n_pnames + 1);
    k->pnames[k->n_pnames++] = (kin_pname){ e->pid, ana_xstrdup(kin_arg_str(k, A_NAME)) };
}

/* Events that need a start and a duration. */
static int kin_timed(kin *k)
{
    kin_ev *e = &k->ev;
    if (!e->has_ts || e->ts < 0 || (e->has_dur && e->dur < 0) || !e->name.len) {
        kin_skip_count(k, "events without a name, a valid ts or dur", 0);
        return 0;
    }
    if (!e->has_dur)
        e->dur = 0;
    kin_note_time(k, (uint64_t)e->ts);
    return 1;
}

static void kin_on_event(kin *k)
{
    kin_ev *e = &k->ev;
    k->events++;
    if (e->ph == 'M') {
        kin_on_meta(k);
        kin_skip_count(k, "metadata", 1);
        return;
    }
    if (e->ph == 'i' || e->ph == 'I') {
        if (strcmp(kin_str(k, e->name), "[memory]") == 0 && kin_timed(k))
            kin_on_memory(k);
        else if (strcmp(kin_str(k, e->name), "[memory]") != 0)
            kin_skip_count(k, "instant events", 1);
        return;
    }
    if (e->ph != 'X' || e->cat == K_SILENT || e->cat == K_GPU_USER || e->cat == K_OTHER ||
        e->cat == K_NONE) {
        int silent = e->cat == K_SILENT || e->cat == K_GPU_USER ||
                     (e->ph != 'X' && e->cat != K_OTHER);
        kin_skip_count(k, e->cat_name[0] ? e->cat_name : "no category", silent);
        return;
    }
    if (!kin_timed(k))
        return;
    if (!k->has_pid && e->has_pid == 1 && (e->cat == K_RUNTIME || e->cat == K_OP)) {
        k->has_pid = 1;
        k->pid = e->pid;
    }
    switch (e->cat) {
    case K_KERNEL:
        kin_on_kernel(k);
        if (kin_has(e, A_COLL))
            kin_coll_keep(k, 1);
        break;
    case K_MEMCPY: kin_on_copy(k, 0); break;
    case K_MEMSET: kin_on_copy(k, 1); break;
    case K_RUNTIME: kin_on_api(k); break;
    case K_OP: /* the 2021 schema records the profiler's step ranges as ops */
        kin_on_op(k, kin_prefix(kin_str(k, e->name), "ProfilerStep#"));
        break;
    default: kin_on_op(k, 1); break; /* K_USER */
    }
}

/* ---- what is emitted at the end ---------------------------------------------------- */

static void kin_emit_calls(kin *k)
{
    static const uint8_t dir_of_kind[] = { 4, 1, 2, 4, 4, 4, 4, 4, 3, 0, 3 }; /* cudaMemcpyKind */
    for (size_t i = 0; i < k->n_calls; i++) {
        const kin_call *c = &k->calls[i];
        uint64_t v = 0;
        ana_record rec = { .kind = c->kind, .tid = c->tid, .time_ns = c->time };
        if (c->kind == ANA_K_LAUNCH) {
            ana_u64map_get(&k->corr_kernel, c->corr, &v);
            rec.u.launch = (ana_rec_launch){ .api = c->api, .kernel = v, .dur_ns = c->dur,
                                             .corr = c->corr, .via = ANA_VIA_CUPTI, .call = c->ext };
        } else if (c->kind == ANA_K_MEMCPY) {
            int known = ana_u64map_get(&k->corr_copy, c->corr, &v);
            rec.u.memcpy = (ana_rec_memcpy){ .api = c->api, .bytes = v >> 8,
                                             .dir = known && (v & 0xff) <= 10 ? dir_of_kind[v & 0xff] : 4,
                                             .dur_ns = c->dur, .corr = c->corr,
                                             .via = ANA_VIA_CUPTI, .call = c->ext };
        } else {
            ana_u64map_get(&k->corr_copy, c->corr, &v);
            rec.u.memset = (ana_rec_memset){ .api = c->api, .bytes = v >> 8, .dur_ns = c->dur,
                                             .corr = c->corr, .via = ANA_VIA_CUPTI, .call = c->ext };
        }
        kin_add(k, &rec);
    }
}

static int kin_mem_cmp(const void *a, const void *b)
{
    const kin_mem *x = a, *y = b;
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void kin_mem_record(kin *k, int alloc, uint64_t time, uint64_t tid, uint64_t ptr,
                           uint64_t size, int64_t device)
{
    ana_record rec = { .kind = alloc ? ANA_K_ALLOC : ANA_K_FREE, .tid = tid, .time_ns = time };
    if (alloc)
        rec.u.alloc = (ana_rec_alloc){ .api = ANA_API_IMPORTED_ALLOC, .ptr = ptr, .size = size,
                                       .device = device };
    else
        rec.u.free = (ana_rec_free){ .api = ANA_API_IMPORTED_FREE, .ptr = ptr, .device = device };
    kin_add(k, &rec);
}

static void kin_info(kin *k, const char *key, const char *fmt, ...);

/* Frees are matched by address; events without one (the 2021 schema) by size, to the
 * latest live allocation of that size. A free that matches nothing released memory
 * allocated before the trace began: it becomes an allocation at the trace's start, and so
 * does the rest of the first `Total Allocated` not explained by them (docs). */
static void kin_emit_memory(kin *k)
{
    ana_u64map live, by_size;       /* address -> size; size -> index of the latest node */
    uint64_t *next = ana_xcalloc(k->n_mems + 1, sizeof(uint64_t)), pre_bytes = 0, pre_n = 0;
    int64_t first_total = -1, first_bytes = 0, max_total = -1, device = 0;
    ana_u64map_init(&live);
    ana_u64map_init(&by_size);
    qsort(k->mems, k->n_mems, sizeof(*k->mems), kin_mem_cmp);
    for (size_t i = 0; i < k->n_mems; i++) {
        kin_mem *m = &k->mems[i];
        uint64_t size = m->bytes > 0 ? (uint64_t)m->bytes : (uint64_t)0 - (uint64_t)m->bytes, v;
        if (m->total > max_total)
            max_total = m->total;
        if (i == 0)
            first_total = m->total, first_bytes = m->bytes, device = m->device;
        if (!m->addr && m->bytes > 0) { /* no address: a node on the list of its size */
            m->addr = KIN_SYN_BASE + i;
            next[i] = ana_u64map_get(&by_size, size, &v) ? v + 1 : 0;
            ana_u64map_put(&by_size, size, i);
        } else if (!m->addr) {
            if (ana_u64map_get(&by_size, size, &v)) {
                m->addr = k->mems[v].addr;
                if (next[v])
                    ana_u64map_put(&by_size, size, next[v] - 1);
                else
                    ana_u64map_del(&by_size, size, NULL);
                continue;
            }
            m->addr = KIN_PRE_BASE + i;
        } else if (m->bytes > 0) {
            ana_u64map_put(&live, m->addr, size);
            continue;
        } else if (ana_u64map_del(&live, m->addr, NULL)) {
            continue;
        }
        if (m->bytes < 0) { /* memory from before the trace, released now */
            kin_mem_record(k, 1, k->t0, m->tid, m->addr, size, m->device);
            pre_bytes += size;
            pre_n++;
        }
    }
    if (first_total >= 0 && first_total - first_bytes > (int64_t)pre_bytes) {
        uint64_t rest = (uint64_t)(first_total - first_bytes) - pre_bytes;
        kin_mem_record(k, 1, k->t0, 0, KIN_PRE_BASE - 1, rest, device);
        pre_bytes += rest;
        pre_n++;
    }
    for (size_t i = 0; i < k->n_mems; i++) {
        const kin_mem *m = &k->mems[i];
        kin_mem_record(k, m->bytes > 0, m->time, m->tid, m->addr,
                       m->bytes > 0 ? (uint64_t)m->bytes : 0, m->device);
    }
    if (pre_n)
        kin_info(k, "import.memory_before_trace", "%llu bytes in %llu allocations",
                 (unsigned long long)pre_bytes, (unsigned long long)pre_n);
    if (max_total >= 0)
        kin_info(k, "kineto.max_total_allocated", "%lld", (long long)max_total);
    ana_u64map_free(&live);
    ana_u64map_free(&by_size);
    free(next);
}

static int kin_range_cmp(const void *a, const void *b)
{
    const kin_range *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->end != y->end)
        return x->end > y->end ? -1 : 1; /* the enclosing range first */
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void kin_range_record(kin *k, uint64_t tid, uint64_t time, int op, const char *name)
{
    ana_record rec = { .kind = ANA_K_RANGE, .tid = tid, .time_ns = time };
    rec.u.range = (ana_rec_range){ .op = (uint64_t)op,
                                   .name = { name ? name : "", name ? (uint32_t)strlen(name) : 0 } };
    kin_add(k, &rec);
}

/* Push/pop pairs, properly nested per thread: a range that outlives its parent is cut at
 * the parent's end (counted). */
static void kin_emit_ranges(kin *k)
{
    uint64_t *stack = ana_xcalloc(k->n_ranges + 1, sizeof(uint64_t)), cut = 0;
    size_t depth = 0;
    qsort(k->ranges, k->n_ranges, sizeof(*k->ranges), kin_range_cmp);
    for (size_t i = 0; i <= k->n_ranges; i++) {
        kin_range *r = i < k->n_ranges ? &k->ranges[i] : NULL;
        while (depth && (!r || r->tid != k->ranges[stack[depth - 1]].tid ||
                         r->start >= k->ranges[stack[depth - 1]].end)) {
            const kin_range *top = &k->ranges[stack[--depth]];
            kin_range_record(k, top->tid, top->end, ANA_RANGE_POP, NULL);
        }
        if (!r)
            break;
        if (depth && r->end > k->ranges[stack[depth - 1]].end) {
            r->end = k->ranges[stack[depth - 1]].end;
            cut++;
        }
        kin_range_record(k, r->tid, r->start, ANA_RANGE_PUSH, r->name);
        stack[depth++] = i;
    }
    if (cut)
        kin_info(k, "import.ranges_cut", "%llu user annotations cut at their parent's end",
                 (unsigned long long)cut);
    free(stack);
}

static void kin_emit_colls(kin *k)
{
    ana_u64map from_op, seen_comm;
    ana_u64map_init(&from_op);
    ana_u64map_init(&seen_comm);
    for (size_t i = 0; i < k->n_colls; i++)
        if (!k->colls[i].from_kernel)
            ana_u64map_put(&from_op, k->colls[i].ext, 1);
    for (size_t i = 0; i < k->n_colls; i++) {
        const kin_coll *c = &k->colls[i];
        uint64_t seq = 0, size = 0;
        if (c->from_kernel && ana_u64map_get(&from_op, c->ext, &seq))
            continue; /* the op said it already */
        if (c->from_kernel)
            ana_u64map_put(&from_op, c->ext, 1); /* one COLL per op, however many kernels */
        if (!ana_u64map_get(&seen_comm, c->comm, &seq)) {
            ana_record cm = { .kind = ANA_K_COMM, .time_ns = c->time, .tid = c->tid };
            cm.u.comm = (ana_rec_comm){ .api = ANA_API_NCCL_COMM_INIT_RANK, .comm = c->comm,
                                        .comm_id = c->comm_id, .rank = k->rank, .size = c->group,
                                        .device = -1 };
            kin_add(k, &cm);
            ana_u64map_put(&seen_comm, c->comm, 1);
        }
        seq = 0;
        ana_u64map_get(&k->comm_seq, c->comm, &seq);
        ana_u64map_put(&k->comm_seq, c->comm, ++seq);
        if (c->dtype != 255) {
            static const uint8_t sizes[] = { 1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1 };
            size = c->dtype < sizeof(sizes) ? sizes[c->dtype] : 0;
        }
        ana_record rec = { .kind = ANA_K_COLL, .time_ns = c->time, .tid = c->tid };
        rec.u.coll = (ana_rec_coll){ .api = c->api, .call = c->ext, .comm = c->comm,
                                     .count = c->count, .dtype = c->dtype,
                                     .bytes = c->count * size, .peer = -1, .seq = seq };
        kin_add(k, &rec);
    }
    ana_u64map_free(&from_op);
    ana_u64map_free(&seen_comm);
}

static void kin_info(kin *k, const char *key, const char *fmt, ...)
{
    char v[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v, sizeof(v), fmt, ap);
    va_end(ap);
    ana_record rec = { .kind = ANA_K_INFO, .time_ns = k->t0 };
    rec.u.info = (ana_rec_info){ { key, (uint32_t)strlen(key) }, { v, (uint32_t)strlen(v) } };
    kin_add(k, &rec);
}

/* "python_function 15230, ac2g 2301": the skipped events, silent ones or not. */
static void kin_skipped_text(const kin *k, int loud_only, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = 0;
    for (size_t i = 0; i < k->n_skips && n + 1 < cap; i++) {
        if (loud_only && k->skips[i].silent)
            continue;
        int w = snprintf(buf + n, cap - n, "%s%s %llu", n ? ", " : "", k->skips[i].what,
                         (unsigned long long)k->skips[i].n);
        n += w > 0 ? (size_t)w : 0;
    }
}

static void kin_emit_process(kin *k)
{
    const char *exe = "";
    for (size_t i = 0; i < k->n_pnames; i++)
        if (k->has_pid && k->pnames[i].pid == k->pid) {
            exe = k->pnames[i].name;
            break;
        }
    ana_record rec = { .kind = ANA_K_PROCESS, .time_ns = k->t0 };
    rec.u.process = (ana_rec_process){
        .pid = k->pid, .rank = k->rank, .local_rank = -1, .world_size = k->world,
        .realtime_ns = k->base_ns >= 0 ? (uint64_t)k->base_ns + k->t0 : 0,
        .host = { "", 0 }, .exe = { exe, (uint32_t)strlen(exe) },
    };
    kin_add(k, &rec);
    for (size_t i = 0; i < k->n_devs; i++) {
        k->devs[i].time_ns = k->t0;
        kin_add(k, &k->devs[i]);
    }
}

/* ---- the document ------------------------------------------------------------------ */

static int kin_read_events(kin *k)
{
    int tok;
    k->has_events = 1;
    while ((tok = ana_jsonr_next(k->r)) != ANA_JSON_ARR_END) {
        if (tok == ANA_JSON_OBJ_BEGIN) {
            if (kin_read_event(k) < 0)
                return -1;
            kin_on_event(k);
        } else if (tok == ANA_JSON_ERROR || ana_jsonr_skip(k->r, tok) < 0) {
            return -1;
        } else {
            kin_skip_count(k, "trace events that are not objects", 0);
        }
    }
    return 0;
}

/* deviceProperties: [{"id": 0, "name": ..., "totalGlobalMem": ..., ...}, ...] */
static int kin_read_device(kin *k)
{
    static const char *const keys[] = { "id", "totalGlobalMem", "numSms", "computeMajor",
                                        "computeMinor" };
    ana_rec_device d = { .ordinal = -1 };
    int64_t v[5] = { -1, 0, 0, 0, 0 };
    char name[256] = "";
    int tok;
    while ((tok = ana_jsonr_next(k->r)) == ANA_JSON_KEY) {
        char key[32] = "";
        size_t len;
        snprintf(key, sizeof(key), "%s", ana_jsonr_text(k->r, NULL));
        tok = ana_jsonr_next(k->r);
        const char *s = ana_jsonr_text(k->r, &len);
        for (size_t i = 0; tok == ANA_JSON_NUMBER && i < 5; i++)
            if (strcmp(key, keys[i]) == 0 && ana_jsonr_decimal(s, len, 0, &v[i]) != 0)
                v[i] = 0;
        if (tok == ANA_JSON_STRING && strcmp(key, "name") == 0)
            snprintf(name, sizeof(name), "%s", s);
        if (tok == ANA_JSON_ERROR || ana_jsonr_skip(k->r, tok) < 0)
            return -1;
    }
    if (tok != ANA_JSON_OBJ_END)
        return -1;
    d.ordinal = v[0];
    d.total_mem = v[1] > 0 ? (uint64_t)v[1] : 0;
    d.sm_count = v[2] > 0 ? (uint64_t)v[2] : 0;
    d.cc_major = v[3] > 0 ? (uint64_t)v[3] : 0;
    d.cc_minor = v[4] > 0 ? (uint64_t)v[4] : 0;
    d.name = (ana_str){ ana_xstrdup(name), (uint32_t)strlen(name) };
    ANA_GROW(k->devs, k->cap_devs, k->n_devs + 1);
    k->devs[k->n_devs++] = (ana_record){ .kind = ANA_K_DEVICE, .u.device = d };
    return 0;
}

static int kin_read_devices(kin *k, int tok)
{
    if (tok != ANA_JSON_ARR_BEGIN)
        return ana_jsonr_skip(k->r, tok);
    while ((tok = ana_jsonr_next(k->r)) != ANA_JSON_ARR_END) {
        int rc = tok == ANA_JSON_OBJ_BEGIN ? kin_read_device(k) : ana_jsonr_skip(k->r, tok);
        if (tok == ANA_JSON_ERROR || rc < 0)
            return -1;
    }
    return 0;
}

static int kin_read_dist(kin *k, int tok)
{
    if (tok != ANA_JSON_OBJ_BEGIN)
        return ana_jsonr_skip(k->r, tok);
    while ((tok = ana_jsonr_next(k->r)) == ANA_JSON_KEY) {
        char key[16] = "";
        size_t len;
        snprintf(key, sizeof(key), "%s", ana_jsonr_text(k->r, NULL));
        tok = ana_jsonr_next(k->r);
        const char *s = ana_jsonr_text(k->r, &len);
        if (tok == ANA_JSON_NUMBER && strcmp(key, "rank") == 0)
            ana_jsonr_decimal(s, len, 0, &k->rank);
        if (tok == ANA_JSON_NUMBER && strcmp(key, "world_size") == 0)
            ana_jsonr_decimal(s, len, 0, &k->world);
        if (tok == ANA_JSON_ERROR || ana_jsonr_skip(k->r, tok) < 0)
            return -1;
    }
    return tok == ANA_JSON_OBJ_END ? 0 : -1;
}

static int kin_read_top(kin *k, int tok)
{
    if (tok == ANA_JSON_ARR_BEGIN) { /* the JSON Array Format: the events alone */
        if (kin_read_events(k) < 0)
            return -1;
        return ana_jsonr_next(k->r) == ANA_JSON_END ? 0 : -1;
    }
    while ((tok = ana_jsonr_next(k->r)) == ANA_JSON_KEY) {
        char key[32] = "";
        size_t len;
        snprintf(key, sizeof(key), "%s", ana_jsonr_text(k->r, NULL));
        tok = ana_jsonr_next(k->r);
        const char *s = ana_jsonr_text(k->r, &len);
        int rc = 0;
        if (tok == ANA_JSON_ERROR)
            return -1;
        if (strcmp(key, "traceEvents") == 0 && tok == ANA_JSON_ARR_BEGIN)
            rc = kin_read_events(k);
        else if (strcmp(key, "deviceProperties") == 0)
            rc = kin_read_devices(k, tok);
        else if (strcmp(key, "distributedInfo") == 0)
            rc = kin_read_dist(k, tok);
        else if (strcmp(key, "traceName") == 0 && tok == ANA_JSON_STRING && !k->trace_name)
            k->trace_name = ana_xstrdup(s);
        else if (strcmp(key, "schemaVersion") == 0 && (tok == ANA_JSON_NUMBER || tok == ANA_JSON_STRING))
            snprintf(k->schema, sizeof(k->schema), "%s", s);
        else if (strcmp(key, "baseTimeNanoseconds") == 0 && tok == ANA_JSON_NUMBER)
            ana_jsonr_decimal(s, len, 0, &k->base_ns);
        else
            rc = ana_jsonr_skip(k->r, tok);
        if (rc < 0)
            return -1;
    }
    if (tok != ANA_JSON_OBJ_END)
        return -1;
    return ana_jsonr_next(k->r) == ANA_JSON_END ? 0 : -1;
}

static void kin_finish(kin *k, uint64_t file_bytes)
{
    char buf[1024];
    ana_trace *t = k->t;
    if (k->base_ns < 0 && k->t0 > 946684800000000000ull)
        k->base_ns = 0; /* no base: the 2021 schema's timestamps are since the epoch */
    kin_emit_process(k);
    kin_emit_calls(k);
    kin_emit_memory(k);
    kin_emit_ranges(k);
    kin_emit_colls(k);
    kin_info(k, "import.format", "PyTorch profiler (Kineto) trace, %s",
             ana_jsonr_is_gzip(k->r) ? "gzip JSON" : "JSON");
    if (k->trace_name)
        kin_info(k, "kineto.trace_name", "%s", k->trace_name);
    if (k->schema[0])
        kin_info(k, "kineto.schema_version", "%s", k->schema);
    kin_info(k, "import.events", "%llu", (unsigned long long)k->events);
    kin_skipped_text(k, 0, buf, sizeof(buf));
    kin_info(k, "import.skipped", "%s", buf[0] ? buf : "none");
    if (k->gemm_unshaped)
        kin_info(k, "import.matmuls_without_shapes", "%llu", (unsigned long long)k->gemm_unshaped);
    kin_skipped_text(k, 1, buf, sizeof(buf));
    if (buf[0])
        fprintf(stderr, "anatomist: %s: skipped %s\n", k->path, buf);
    t->stats.file_bytes = file_bytes;
    t->stats.raw_bytes = ana_jsonr_bytes_read(k->r);
    ana_trace_finish(t);
    t->source = "kineto";
}

static void kin_free(kin *k)
{
    for (size_t i = 0; i < k->n_knames; i++)
        free(k->knames[i]);
    for (size_t i = 0; i < k->n_ranges; i++)
        free(k->ranges[i].name);
    for (size_t i = 0; i < k->n_pnames; i++)
        free(k->pnames[i].name);
    for (size_t i = 0; i < k->n_devs; i++)
        free((char *)k->devs[i].u.device.name.s);
    free(k->knames);
    free(k->ranges);
    free(k->pnames);
    free(k->devs);
    free(k->calls);
    free(k->mems);
    free(k->colls);
    free(k->arena);
    free(k->trace_name);
    ana_u64map_free(&k->kname_idx);
    ana_u64map_free(&k->corr_kernel);
    ana_u64map_free(&k->corr_copy);
    ana_u64map_free(&k->comm_seq);
    ana_jsonr_close(k->r);
}

static int kin_error(ana_error *err, const char *path, uint64_t offset, const char *msg)
{
    memset(err, 0, sizeof(*err));
    snprintf(err->path, sizeof(err->path), "%s", path);
    snprintf(err->msg, sizeof(err->msg), "%s", msg);
    err->offset = offset;
    err->payload_offset = UINT64_MAX;
    return -1;
}

int ana_kineto_load(const char *path, unsigned flags, ana_trace **out, ana_error *err)
{
    char msg[256];
    struct stat st;
    kin k = { .path = path, .rank = -1, .world = -1, .base_ns = -1 };
    *out = NULL;
    if (!(k.r = ana_jsonr_open(path, msg, sizeof(msg))))
        return kin_error(err, path, 0, msg);
    k.t = ana_trace_new(path, flags);
    int tok = ana_jsonr_next(k.r);
    int rc = tok == ANA_JSON_OBJ_BEGIN || tok == ANA_JSON_ARR_BEGIN ? kin_read_top(&k, tok) : -1;
    if (rc < 0 && !ana_jsonr_error(k.r)[0] && tok != ANA_JSON_ERROR) {
        snprintf(msg, sizeof(msg), "not a PyTorch profiler trace: the JSON document is %s",
                 tok == ANA_JSON_OBJ_BEGIN || tok == ANA_JSON_ARR_BEGIN
                     ? "malformed" : "not an object or an array");
        kin_error(err, path, ana_jsonr_offset(k.r), msg);
    } else if (rc < 0 && (!ana_jsonr_truncated(k.r) || !k.has_events)) {
        snprintf(msg, sizeof(msg), "%s%s", ana_jsonr_error(k.r),
                 ana_jsonr_truncated(k.r) ? " (before any traceEvents)" : "");
        kin_error(err, path, ana_jsonr_offset(k.r), msg);
    } else if (!k.has_events) {
        rc = kin_error(err, path, 0, "not a PyTorch profiler trace: no traceEvents array");
    } else {
        if (rc < 0) { /* cut short: keep what was read */
            fprintf(stderr, "anatomist: %s: offset %llu: %s; read the %llu complete events "
                            "before it\n", path, (unsigned long long)ana_jsonr_offset(k.r),
                    ana_jsonr_error(k.r), (unsigned long long)k.events);
            k.t->stats.ended = ANA_ENDED_TRUNCATED;
            kin_info(&k, "import.truncated", "offset %llu: %s",
                     (unsigned long long)ana_jsonr_offset(k.r), ana_jsonr_error(k.r));
        }
        kin_finish(&k, stat(path, &st) == 0 ? (uint64_t)st.st_size : 0);
        *out = k.t;
        k.t = NULL;
        rc = 0;
    }
    if (k.t)
        ana_trace_free(k.t);
    kin_free(&k);
    return rc;
}
