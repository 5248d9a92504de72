/* codec.c — table-driven encoder/decoder of record payloads (docs/trace-format.md).
 *
 * Each kind's layout is one row list in ana_fields below: the order of the fields on disk and
 * where each lives in its ana_rec_* struct. Appending a field to a kind = appending a row.
 *
 * The bottom of format/: called by every other coding file here, the preload's writer and the
 * analyzer's tests of records; calls nothing of ours.
 */
#include "codec_int.h"
#include "records.h"
#include "varint.h"

#include <string.h>

#define U(T, m) { F_U, offsetof(T, m), R_NONE }
#define S(T, m) { F_S, offsetof(T, m), R_NONE }
#define STR(T, m) { F_STR, offsetof(T, m), R_NONE }
#define BLOB(T, m) { F_BLOB, offsetof(T, m), R_NONE }
#define STRV(T, m) { F_STRV, offsetof(T, m), R_NONE }
#define FRAMES(T, m) { F_FRAMES, offsetof(T, m), R_NONE }
#define END { F_END, 0, R_NONE }
/* Fields the packed chunks give columns of their own (pack.c): correlation ids, library
 * call ids, durations. */
#define CORR(T, m) { F_U, offsetof(T, m), R_CORR }
#define CALL(T, m) { F_U, offsetof(T, m), R_CALL }
#define DUR(T, m) { F_U, offsetof(T, m), R_DUR }

static const struct ana_field f_segment[] = { U(ana_rec_segment, tid), U(ana_rec_segment, base_ns), END };
static const struct ana_field f_process[] = {
    U(ana_rec_process, pid), U(ana_rec_process, ppid), S(ana_rec_process, rank),
    S(ana_rec_process, local_rank), S(ana_rec_process, world_size),
    U(ana_rec_process, realtime_ns), STR(ana_rec_process, host), STR(ana_rec_process, exe),
    STRV(ana_rec_process, argv), END };
static const struct ana_field f_thread[] = { U(ana_rec_thread, tid), STR(ana_rec_thread, name), END };
static const struct ana_field f_module[] = {
    U(ana_rec_module, bias), U(ana_rec_module, lo), U(ana_rec_module, hi),
    BLOB(ana_rec_module, build_id), STR(ana_rec_module, path), END };
static const struct ana_field f_stack[] = { U(ana_rec_stack, id), FRAMES(ana_rec_stack, frames), END };
static const struct ana_field f_kernel[] = {
    U(ana_rec_kernel, id), U(ana_rec_kernel, host_fn), STR(ana_rec_kernel, name), END };
static const struct ana_field f_alloc[] = {
    U(ana_rec_alloc, api), S(ana_rec_alloc, ret), U(ana_rec_alloc, ptr), U(ana_rec_alloc, size),
    S(ana_rec_alloc, device), U(ana_rec_alloc, stream), U(ana_rec_alloc, stack),
    DUR(ana_rec_alloc, dur_ns), U(ana_rec_alloc, flags),
    CORR(ana_rec_alloc, corr), U(ana_rec_alloc, via),
    U(ana_rec_alloc, lib), CALL(ana_rec_alloc, call), END };
static const struct ana_field f_free[] = {
    U(ana_rec_free, api), S(ana_rec_free, ret), U(ana_rec_free, ptr), S(ana_rec_free, device),
    U(ana_rec_free, stream), U(ana_rec_free, stack), DUR(ana_rec_free, dur_ns),
    CORR(ana_rec_free, corr), U(ana_rec_free, via),
    U(ana_rec_free, lib), CALL(ana_rec_free, call), END };
static const struct ana_field f_meminfo[] = {
    S(ana_rec_meminfo, device), U(ana_rec_meminfo, free), U(ana_rec_meminfo, total),
    U(ana_rec_meminfo, reason), END };
static const struct ana_field f_launch[] = {
    U(ana_rec_launch, api), S(ana_rec_launch, ret), U(ana_rec_launch, kernel),
    U(ana_rec_launch, grid_x), U(ana_rec_launch, grid_y), U(ana_rec_launch, grid_z),
    U(ana_rec_launch, block_x), U(ana_rec_launch, block_y), U(ana_rec_launch, block_z),
    U(ana_rec_launch, shmem), U(ana_rec_launch, stream), U(ana_rec_launch, stack),
    DUR(ana_rec_launch, dur_ns),
    CORR(ana_rec_launch, corr), U(ana_rec_launch, via),
    U(ana_rec_launch, lib), CALL(ana_rec_launch, call),
    FRAMES(ana_rec_launch, ptrs), FRAMES(ana_rec_launch, ptr_at), END };
static const struct ana_field f_memcpy[] = {
    U(ana_rec_memcpy, api), S(ana_rec_memcpy, ret), U(ana_rec_memcpy, dst), U(ana_rec_memcpy, src),
    U(ana_rec_memcpy, bytes), U(ana_rec_memcpy, dir), U(ana_rec_memcpy, stream),
    U(ana_rec_memcpy, stack), DUR(ana_rec_memcpy, dur_ns),
    CORR(ana_rec_memcpy, corr), U(ana_rec_memcpy, via),
    U(ana_rec_memcpy, lib), CALL(ana_rec_memcpy, call), END };
static const struct ana_field f_memset[] = {
    U(ana_rec_memset, api), S(ana_rec_memset, ret), U(ana_rec_memset, ptr), S(ana_rec_memset, value),
    U(ana_rec_memset, bytes), U(ana_rec_memset, stream), U(ana_rec_memset, stack),
    DUR(ana_rec_memset, dur_ns),
    CORR(ana_rec_memset, corr), U(ana_rec_memset, via),
    U(ana_rec_memset, lib), CALL(ana_rec_memset, call), END };
static const struct ana_field f_device[] = {
    S(ana_rec_device, ordinal), STR(ana_rec_device, name), U(ana_rec_device, total_mem),
    U(ana_rec_device, sm_count), U(ana_rec_device, cc_major), U(ana_rec_device, cc_minor), END };
static const struct ana_field f_dropped[] = {
    U(ana_rec_dropped, tid), U(ana_rec_dropped, records), U(ana_rec_dropped, bytes), END };
static const struct ana_field f_end[] = { U(ana_rec_end, reason), STR(ana_rec_end, detail), END };
static const struct ana_field f_info[] = { STR(ana_rec_info, key), STR(ana_rec_info, value), END };

#define GK(m) U(ana_rec_gpu_kernel, m)
static const struct ana_field f_gpu_kernel[] = {
    CORR(ana_rec_gpu_kernel, corr), DUR(ana_rec_gpu_kernel, dur_ns), GK(kernel), S(ana_rec_gpu_kernel, device), GK(context), GK(stream),
    GK(grid_x), GK(grid_y), GK(grid_z), GK(block_x), GK(block_y), GK(block_z),
    GK(shmem_static), GK(shmem_dynamic), GK(regs), GK(graph), GK(graph_node), END };
#define GC(m) U(ana_rec_gpu_memcpy, m)
static const struct ana_field f_gpu_memcpy[] = {
    CORR(ana_rec_gpu_memcpy, corr), DUR(ana_rec_gpu_memcpy, dur_ns), GC(bytes), GC(copy_kind), GC(src_kind), GC(dst_kind), GC(flags),
    S(ana_rec_gpu_memcpy, device), GC(context), GC(stream), S(ana_rec_gpu_memcpy, src_device),
    S(ana_rec_gpu_memcpy, dst_device), GC(graph), GC(graph_node), END };
#define GS(m) U(ana_rec_gpu_memset, m)
static const struct ana_field f_gpu_memset[] = {
    CORR(ana_rec_gpu_memset, corr), DUR(ana_rec_gpu_memset, dur_ns), GS(bytes), GS(value), GS(mem_kind), GS(flags),
    S(ana_rec_gpu_memset, device), GS(context), GS(stream), GS(graph), GS(graph_node), END };
#define GM(m) U(ana_rec_gpu_memory, m)
static const struct ana_field f_gpu_memory[] = {
    CORR(ana_rec_gpu_memory, corr), GM(op), GM(mem_kind), U(ana_rec_gpu_memory, address), GM(bytes), S(ana_rec_gpu_memory, device),
    GM(context), GM(stream), GM(async), GM(pool_type), GM(pool_address), GM(pc), END };
#define GP(m) U(ana_rec_gpu_pool, m)
static const struct ana_field f_gpu_pool[] = {
    GP(corr), GP(op), GP(pool_type), GP(address), GP(size), GP(release_threshold), GP(utilized),
    S(ana_rec_gpu_pool, device), END };
static const struct ana_field f_gpu_dropped[] = {
    U(ana_rec_gpu_dropped, records), U(ana_rec_gpu_dropped, reason), END };
#define VM(m) U(ana_rec_vmm, m)
static const struct ana_field f_vmm[] = {
    VM(api), S(ana_rec_vmm, ret), VM(va), VM(size), VM(handle), VM(offset), S(ana_rec_vmm, device),
    VM(flags), VM(stack), DUR(ana_rec_vmm, dur_ns), CORR(ana_rec_vmm, corr), VM(via), VM(lib), CALL(ana_rec_vmm, call), END };
#define GE(m) U(ana_rec_gemm, m)
static const struct ana_field f_gemm[] = {
    GE(api), S(ana_rec_gemm, ret), CALL(ana_rec_gemm, call), GE(handle), GE(stream), GE(m), GE(n), GE(k), GE(batch),
    GE(trans_a), GE(trans_b), GE(lda), GE(ldb), GE(ldc), GE(a_type), GE(b_type), GE(c_type),
    GE(compute_type), GE(math_mode), GE(epilogue), GE(workspace), GE(flops), GE(stack), DUR(ana_rec_gemm, dur_ns),
    U(ana_rec_gemm, a), U(ana_rec_gemm, b), U(ana_rec_gemm, c), U(ana_rec_gemm, d),
    U(ana_rec_gemm, ws), END };
#define CO(m) U(ana_rec_coll, m)
static const struct ana_field f_coll[] = {
    CO(api), S(ana_rec_coll, ret), CALL(ana_rec_coll, call), CO(comm), CO(stream), CO(count), CO(dtype), CO(bytes),
    CO(op), S(ana_rec_coll, peer), U(ana_rec_coll, sendbuff), U(ana_rec_coll, recvbuff), CO(group), CO(seq), CO(stack),
    DUR(ana_rec_coll, dur_ns), END };
static const struct ana_field f_comm[] = {
    U(ana_rec_comm, api), S(ana_rec_comm, ret), CALL(ana_rec_comm, call), U(ana_rec_comm, comm),
    U(ana_rec_comm, comm_id), S(ana_rec_comm, rank), S(ana_rec_comm, size), S(ana_rec_comm, device),
    U(ana_rec_comm, parent), S(ana_rec_comm, color), S(ana_rec_comm, key), U(ana_rec_comm, stack),
    DUR(ana_rec_comm, dur_ns), END };
static const struct ana_field f_libcall[] = {
    U(ana_rec_libcall, lib), U(ana_rec_libcall, api), S(ana_rec_libcall, ret),
    CALL(ana_rec_libcall, call), U(ana_rec_libcall, handle), U(ana_rec_libcall, arg),
    U(ana_rec_libcall, arg2), U(ana_rec_libcall, stack), DUR(ana_rec_libcall, dur_ns), END };
static const struct ana_field f_range[] = {
    U(ana_rec_range, op), U(ana_rec_range, domain), U(ana_rec_range, id),
    U(ana_rec_range, category), U(ana_rec_range, color), STR(ana_rec_range, name), END };
static const struct ana_field f_label[] = {
    U(ana_rec_label, what), U(ana_rec_label, domain), U(ana_rec_label, id), U(ana_rec_label, size),
    STR(ana_rec_label, name), END };

static const struct ana_field f_ptr_table[] = {
    U(ana_rec_ptr_table, dst), U(ana_rec_ptr_table, bytes), FRAMES(ana_rec_ptr_table, ptrs),
    FRAMES(ana_rec_ptr_table, ptr_at), U(ana_rec_ptr_table, more), END };
static const struct ana_field f_pycode[] = {
    U(ana_rec_pycode, id), U(ana_rec_pycode, version), U(ana_rec_pycode, first_line),
    STR(ana_rec_pycode, qualname), STR(ana_rec_pycode, file), BLOB(ana_rec_pycode, linetable), END };
const struct ana_field *const ana_fields[ANA_K_COUNT] = {
    [ANA_K_SEGMENT] = f_segment, [ANA_K_PROCESS] = f_process, [ANA_K_THREAD] = f_thread,
    [ANA_K_MODULE] = f_module,   [ANA_K_STACK] = f_stack,     [ANA_K_KERNEL] = f_kernel,
    [ANA_K_ALLOC] = f_alloc,     [ANA_K_FREE] = f_free,       [ANA_K_MEMINFO] = f_meminfo,
    [ANA_K_LAUNCH] = f_launch,   [ANA_K_MEMCPY] = f_memcpy,   [ANA_K_MEMSET] = f_memset,
    [ANA_K_DEVICE] = f_device,   [ANA_K_DROPPED] = f_dropped, [ANA_K_END] = f_end,
    [ANA_K_INFO] = f_info,
    [ANA_K_GPU_KERNEL] = f_gpu_kernel, [ANA_K_GPU_MEMCPY] = f_gpu_memcpy,
    [ANA_K_GPU_MEMSET] = f_gpu_memset, [ANA_K_GPU_MEMORY] = f_gpu_memory,
    [ANA_K_GPU_POOL] = f_gpu_pool,     [ANA_K_GPU_DROPPED] = f_gpu_dropped,
    [ANA_K_VMM] = f_vmm,
    [ANA_K_GEMM] = f_gemm, [ANA_K_COLL] = f_coll, [ANA_K_COMM] = f_comm,
    [ANA_K_LIBCALL] = f_libcall, [ANA_K_RANGE] = f_range, [ANA_K_LABEL] = f_label,
    [ANA_K_PTR_TABLE] = f_ptr_table, [ANA_K_PYCODE] = f_pycode,
};

static const char *const KIND_NAMES[ANA_K_COUNT] = {
    [ANA_K_SEGMENT] = "segment", [ANA_K_PROCESS] = "process", [ANA_K_THREAD] = "thread",
    [ANA_K_MODULE] = "module",   [ANA_K_STACK] = "stack",     [ANA_K_KERNEL] = "kernel_name",
    [ANA_K_ALLOC] = "alloc",     [ANA_K_FREE] = "free",       [ANA_K_MEMINFO] = "meminfo",
    [ANA_K_LAUNCH] = "launch",   [ANA_K_MEMCPY] = "memcpy_call", [ANA_K_MEMSET] = "memset_call",
    [ANA_K_DEVICE] = "device",   [ANA_K_DROPPED] = "dropped", [ANA_K_END] = "end",
    [ANA_K_INFO] = "info",
    [ANA_K_GPU_KERNEL] = "kernel", [ANA_K_GPU_MEMCPY] = "memcpy", [ANA_K_GPU_MEMSET] = "memset",
    [ANA_K_GPU_MEMORY] = "gpu_memory", [ANA_K_GPU_POOL] = "gpu_pool",
    [ANA_K_GPU_DROPPED] = "gpu_dropped", [ANA_K_VMM] = "vmm",
    [ANA_K_GEMM] = "gemm", [ANA_K_COLL] = "collective", [ANA_K_COMM] = "communicator",
    [ANA_K_LIBCALL] = "library_call", [ANA_K_RANGE] = "range", [ANA_K_LABEL] = "label",
    [ANA_K_PTR_TABLE] = "pointer_table", [ANA_K_PYCODE] = "python_code",
};

const char *ana_kind_name(uint32_t kind)
{
    return kind < ANA_K_COUNT ? KIND_NAMES[kind] : NULL;
}

/* ---- encoding ---- */

struct out {
    uint8_t *p, *end;
    int overflow;
};

static void put_u(struct out *o, uint64_t v)
{
    if (o->end - o->p < ANA_VARINT_MAX) {
        o->overflow = 1;
        return;
    }
    o->p += ana_varint_put(o->p, v);
}

static void put_bytes(struct out *o, const void *s, size_t n)
{
    put_u(o, n);
    if (o->overflow || (size_t)(o->end - o->p) < n) {
        o->overflow = 1;
        return;
    }
    if (n)
        memcpy(o->p, s, n);
    o->p += n;
}

static void put_field(struct out *o, const struct ana_field *f, const uint8_t *base)
{
    const void *m = base + f->off;
    switch (f->type) {
    case F_U: put_u(o, *(const uint64_t *)m); break;
    case F_S: put_u(o, ana_zigzag(*(const int64_t *)m)); break;
    case F_STR:
    case F_BLOB: {
        const ana_str *s = m;
        put_bytes(o, s->s, s->s ? s->len : 0);
        break;
    }
    case F_STRV: {
        const ana_strv *v = m;
        put_u(o, v->n);
        for (uint32_t i = 0; i < v->n && !o->overflow; i++)
            put_bytes(o, v->v[i].s, v->v[i].s ? v->v[i].len : 0);
        break;
    }
    case F_FRAMES: {
        const ana_frames *fr = m;
        put_u(o, fr->n);
        for (uint32_t i = 0; i < fr->n && !o->overflow; i++)
            put_u(o, i == 0 ? fr->ip[0] : ana_zigzag((int64_t)(fr->ip[i] - fr->ip[i - 1])));
        break;
    }
    case F_END: break;
    }
}

size_t ana_record_encode(uint8_t *buf, size_t cap, const ana_record *rec, uint64_t prev_ns)
{
    if (rec->kind == 0 || rec->kind >= ANA_K_COUNT || cap < 2 + ANA_VARINT_MAX)
        return 0;
    /* The payload goes after a 1-byte length slot (most payloads are < 128 bytes); a
     * longer payload is moved once to make room for its longer length. */
    uint8_t *payload = buf + 2;
    struct out o = { payload, buf + cap, 0 };
    if (rec->kind != ANA_K_SEGMENT)
        put_u(&o, ana_zigzag((int64_t)(rec->time_ns - prev_ns)));
    for (const struct ana_field *f = ana_fields[rec->kind]; f->type != F_END && !o.overflow; f++)
        put_field(&o, f, (const uint8_t *)&rec->u);
    if (o.overflow)
        return 0;
    size_t plen = (size_t)(o.p - payload);
    uint8_t len[ANA_VARINT_MAX];
    size_t ln = ana_varint_put(len, plen);
    if (ln > 1) {
        if (1 + ln + plen > cap)
            return 0;
        memmove(buf + 1 + ln, payload, plen);
    }
    buf[0] = (uint8_t)rec->kind; /* kinds < 128 are one varint byte */
    memcpy(buf + 1, len, ln);
    return 1 + ln + plen;
}

/* ---- decoding ---- */

size_t ana_record_header(const uint8_t *p, size_t avail, uint32_t *kind, size_t *payload_len)
{
    uint64_t k, len;
    size_t a = ana_varint_get(p, avail, &k);
    if (!a || k > UINT32_MAX)
        return 0;
    size_t b = ana_varint_get(p + a, avail - a, &len);
    if (!b || len > avail - a - b)
        return 0;
    *kind = (uint32_t)k;
    *payload_len = (size_t)len;
    return a + b;
}

struct in {
    const uint8_t *p, *end;
    int bad;
};

static uint64_t get_u(struct in *in)
{
    uint64_t v = 0;
    if (in->p >= in->end)
        return 0; /* absent trailing field: zero */
    size_t n = ana_varint_get(in->p, (size_t)(in->end - in->p), &v);
    if (!n) {
        in->bad = 1;
        return 0;
    }
    in->p += n;
    return v;
}

static void *scratch_take(ana_scratch *sc, size_t n, size_t align)
{
    size_t at = (sc->used + align - 1) & ~(align - 1);
    if (at > sc->cap || sc->cap - at < n)
        return NULL;
    sc->used = at + n;
    return sc->buf + at;
}

static int get_str(struct in *in, ana_str *out, ana_scratch *sc)
{
    out->s = "";
    out->len = 0;
    if (in->p >= in->end)
        return 0;
    uint64_t n = get_u(in);
    if (in->bad || n > (uint64_t)(in->end - in->p)) {
        in->bad = 1;
        return 0;
    }
    char *d = scratch_take(sc, (size_t)n + 1, 1);
    if (!d)
        return -1;
    memcpy(d, in->p, (size_t)n);
    d[n] = 0;
    in->p += n;
    out->s = d;
    out->len = (uint32_t)n;
    return 0;
}

static int get_field(struct in *in, const struct ana_field *f, uint8_t *base, ana_scratch *sc)
{
    void *m = base + f->off;
    switch (f->type) {
    case F_U: *(uint64_t *)m = get_u(in); return 0;
    case F_S: *(int64_t *)m = ana_unzigzag(get_u(in)); return 0;
    case F_STR:
    case F_BLOB: return get_str(in, m, sc);
    case F_STRV: {
        ana_strv *v = m;
        uint64_t n = get_u(in);
        v->n = 0;
        v->v = NULL;
        if (n > (uint64_t)(in->end - in->p)) { /* each string takes at least one byte */
            in->bad = 1;
            return 0;
        }
        ana_str *arr = scratch_take(sc, (size_t)n * sizeof(ana_str) + 1, _Alignof(ana_str));
        if (!arr)
            return -1;
        for (uint64_t i = 0; i < n && !in->bad; i++)
            if (get_str(in, &arr[i], sc) < 0)
                return -1;
        v->v = arr;
        v->n = (uint32_t)n;
        return 0;
    }
    case F_FRAMES: {
        ana_frames *fr = m;
        uint64_t n = get_u(in);
        fr->n = 0;
        fr->ip = NULL;
        if (n > (uint64_t)(in->end - in->p)) {
            in->bad = 1;
            return 0;
        }
        uint64_t *ip = scratch_take(sc, (size_t)n * sizeof(uint64_t) + 1, _Alignof(uint64_t));
        if (!ip)
            return -1;
        for (uint64_t i = 0; i < n && !in->bad; i++) {
            uint64_t v = get_u(in);
            ip[i] = i == 0 ? v : ip[i - 1] + (uint64_t)ana_unzigzag(v);
        }
        fr->ip = ip;
        fr->n = (uint32_t)n;
        return 0;
    }
    case F_END: return 0;
    }
    return 0;
}

int ana_record_decode(uint32_t kind, const uint8_t *payload, size_t len, uint64_t prev_ns,
                      ana_record *rec, ana_scratch *scratch)
{
    if (kind == 0 || kind >= ANA_K_COUNT)
        return ANA_DEC_UNKNOWN_KIND;
    struct in in = { payload, payload + len, 0 };
    memset(&rec->u, 0, sizeof(rec->u));
    rec->kind = kind;
    if (kind != ANA_K_SEGMENT) {
        if (len == 0)
            return ANA_DEC_MALFORMED; /* dt is mandatory */
        rec->time_ns = prev_ns + (uint64_t)ana_unzigzag(get_u(&in));
    }
    for (const struct ana_field *f = ana_fields[kind]; f->type != F_END && !in.bad; f++)
        if (get_field(&in, f, (uint8_t *)&rec->u, scratch) < 0)
            return ANA_DEC_NOMEM;
    if (in.bad)
        return ANA_DEC_MALFORMED;
    if (kind == ANA_K_SEGMENT)
        rec->time_ns = rec->u.segment.base_ns;
    return ANA_DEC_OK;
}

int ana_record_peek_dt(const uint8_t *payload, size_t len, int64_t *dt)
{
    uint64_t v;
    size_t n = ana_varint_get(payload, len, &v);
    if (!n)
        return 0;
    *dt = ana_unzigzag(v);
    return 1;
}

/* ---- time resolution (1.5) ---- */

/* 1 + the offset of each kind's dur_ns in rec->u; 0 = the kind has no duration. */
static const uint16_t DUR_AT[ANA_K_COUNT] = {
    [ANA_K_ALLOC] = offsetof(ana_rec_alloc, dur_ns) + 1,
    [ANA_K_FREE] = offsetof(ana_rec_free, dur_ns) + 1,
    [ANA_K_LAUNCH] = offsetof(ana_rec_launch, dur_ns) + 1,
    [ANA_K_MEMCPY] = offsetof(ana_rec_memcpy, dur_ns) + 1,
    [ANA_K_MEMSET] = offsetof(ana_rec_memset, dur_ns) + 1,
    [ANA_K_GPU_KERNEL] = offsetof(ana_rec_gpu_kernel, dur_ns) + 1,
    [ANA_K_GPU_MEMCPY] = offsetof(ana_rec_gpu_memcpy, dur_ns) + 1,
    [ANA_K_GPU_MEMSET] = offsetof(ana_rec_gpu_memset, dur_ns) + 1,
    [ANA_K_VMM] = offsetof(ana_rec_vmm, dur_ns) + 1,
    [ANA_K_GEMM] = offsetof(ana_rec_gemm, dur_ns) + 1,
    [ANA_K_COLL] = offsetof(ana_rec_coll, dur_ns) + 1,
    [ANA_K_COMM] = offsetof(ana_rec_comm, dur_ns) + 1,
    [ANA_K_LIBCALL] = offsetof(ana_rec_libcall, dur_ns) + 1,
};

static uint64_t *dur_of(ana_record *rec)
{
    if (rec->kind >= ANA_K_COUNT || !DUR_AT[rec->kind])
        return NULL;
    return (uint64_t *)((uint8_t *)&rec->u + DUR_AT[rec->kind] - 1);
}

void ana_record_to_ticks(ana_record *rec, unsigned shift)
{
    if (!shift)
        return;
    rec->time_ns >>= shift;
    if (rec->kind == ANA_K_SEGMENT)
        rec->u.segment.base_ns >>= shift;
    uint64_t *d = dur_of(rec);
    if (d)
        *d = (*d >> shift) + ((*d >> (shift - 1)) & 1);
}

void ana_record_from_ticks(ana_record *rec, unsigned shift)
{
    if (!shift)
        return;
    rec->time_ns <<= shift;
    if (rec->kind == ANA_K_SEGMENT)
        rec->u.segment.base_ns <<= shift;
    uint64_t *d = dur_of(rec);
    if (d)
        *d <<= shift;
}
