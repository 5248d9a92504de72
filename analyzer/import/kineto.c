/* kineto.c — see kineto.h; the mapping is specified in docs/kineto-import.md.
 *
 * One pass over the JSON (jsonr.h): each event is read whole into `kin_ev` (keys come in
 * any order), then turned into records at once (kernels, copies, device properties,
 * GEMMs) or kept in compact arrays for the end (API calls, whose kernel or byte count comes
 * from the GPU event with the same correlation; `[memory]` events, whose allocations made
 * before the trace began are only known after the last event; ranges — annotations and
 * the step, autograd and optimizer ops — emitted as properly nested push/pop pairs per
 * thread; collectives). Times are integer ns from the text.
 *
 * This file reads; kineto_names.c holds the name tables, kineto_emit.c what is emitted
 * at the end (kineto_int.h).
 * Part of import/: called by import.c (and the fuzz target); calls model/ and format/
 * only. */
#include "import/kineto.h"
#include "import/kineto_int.h"

#include "analyses/classify.h"
#include "model/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define KIN_ARENA_MAX (16u << 20)

/* ---- events as read --------------------------------------------------------------- */

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

/* An array of up to n numbers (grid, block, one input's dims). *count (when not NULL):
 * how many were read, or -1 when an element is not a number or there are more than n. */
static int kin_read_nums(kin *k, int tok, int64_t *v, int n, int *count)
{
    int i = 0, bad = 0;
    if (tok != ANA_JSON_ARR_BEGIN)
        return ana_jsonr_skip(k->r, tok);
    while ((tok = ana_jsonr_next(k->r)) != ANA_JSON_ARR_END) {
        size_t len;
        const char *s = ana_jsonr_text(k->r, &len);
        if (tok == ANA_JSON_ERROR)
            return -1;
        if (tok == ANA_JSON_NUMBER && i < n && ana_jsonr_decimal(s, len, 0, &v[i]) == 0)
            i++;
        else if ((bad = 1, ana_jsonr_skip(k->r, tok) < 0))
            return -1;
    }
    if (count)
        *count = bad ? -1 : i;
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
        int i = e->n_in++;
        if (kin_read_nums(k, tok, e->dims[i], KIN_MAX_DIMS, &e->ndims[i]) < 0)
            return -1;
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
    case A_GRID: e->set |= 1u << a; return kin_read_nums(k, tok, e->grid, 3, NULL);
    case A_BLOCK: e->set |= 1u << a; return kin_read_nums(k, tok, e->block, 3, NULL);
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

static void kin_note_time(kin *k, uint64_t ns)
{
    if (!k->has_t0 || ns < k->t0)
        k->t0 = ns;
    k->has_t0 = 1;
}

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

/* An op or annotation; range: what it is kept as (enum kin_rkind; KIN_R_NONE: no range). */
static void kin_on_op(kin *k, int range)
{
    const kin_ev *e = &k->ev;
    const char *name = kin_str(k, e->name);
    int ctx = kin_op_ctx(name);
    if (ctx && kin_has(e, A_EXT)) {
        ana_u64map_put(&k->t->call_ctx, (uint64_t)e->num[A_EXT], (uint64_t)ctx);
        ANA_GROW(k->ctxops, k->cap_ctxops, k->n_ctxops + 1);
        k->ctxops[k->n_ctxops++] = (kin_ctxop){ (uint64_t)e->ts, (uint64_t)e->ts + (uint64_t)e->dur, e->tid,
                                                (uint64_t)e->num[A_EXT] };
    }
    if (range != KIN_R_NONE) {
        ANA_GROW(k->ranges, k->cap_ranges, k->n_ranges + 1);
        uint64_t ts = (uint64_t)e->ts, end = ts + (uint64_t)e->dur; /* both >= 0: no overflow */
        k->ranges[k->n_ranges] = (kin_range){ ts, end, e->tid, ana_xstrdup(name), k->n_ranges, range };
        k->n_ranges++;
        return;
    }
    if (ctx == ANA_CTX_GEMM)
        kin_gemm(k, name); /* without shapes it is counted (import.matmuls_without_shapes) */
    if (strcmp(name, "record_param_comms") == 0 && kin_has(e, A_COLL))
        kin_coll_keep(k, 0);
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
    case K_OP: /* step (2021 schema), autograd and optimizer ops are ranges too */
        kin_on_op(k, kin_op_range(kin_str(k, e->name)));
        break;
    default: kin_on_op(k, KIN_R_ANNOT); break; /* K_USER */
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
    free(k->ctxops);
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
