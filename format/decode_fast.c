/* decode_fast.c — see decode_fast.h. Each kind's fields are read in the order of its row
 * list in codec.c (ana_fields); the rules are those of the table decoder: an absent trailing
 * field is zero, a varint running past the payload or longer than 10 bytes is malformed,
 * decoding stops at the first malformed field.
 *
 * Called by reader.c only; calls nothing of ours (the table decoder's rules, written out).
 */
#include "decode_fast.h"
#include "varint.h"

#include <string.h>

typedef struct fin {
    const uint8_t *p, *end;
    int bad;
} fin;

static inline __attribute__((always_inline)) uint64_t fu(fin *in)
{
    if (in->p >= in->end)
        return 0;
    uint8_t b = *in->p;
    if (b < 0x80) {
        in->p++;
        return b;
    }
    uint64_t v;
    size_t n = ana_varint_get(in->p, (size_t)(in->end - in->p), &v);
    if (!n) {
        in->bad = 1;
        return 0;
    }
    in->p += n;
    return v;
}

static inline __attribute__((always_inline)) int64_t fs(fin *in) { return ana_unzigzag(fu(in)); }

/* F_FRAMES of the table decoder: n, then the first address and zigzag deltas, placed in
 * the scratch at the alignment it uses. 0, or -1 when the scratch is too small. */
static int ffr(fin *in, ana_frames *fr, ana_scratch *sc)
{
    uint64_t n = fu(in);
    fr->n = 0;
    fr->ip = NULL;
    if (in->bad)
        return 0;
    if (n > (uint64_t)(in->end - in->p)) {
        in->bad = 1;
        return 0;
    }
    size_t need = (size_t)n * sizeof(uint64_t) + 1;
    size_t at = (sc->used + _Alignof(uint64_t) - 1) & ~(_Alignof(uint64_t) - 1);
    if (at > sc->cap || sc->cap - at < need)
        return -1;
    sc->used = at + need;
    uint64_t *ip = (uint64_t *)(sc->buf + at);
    for (uint64_t i = 0; i < n && !in->bad; i++) {
        uint64_t v;
        size_t k; /* addresses and their deltas take several bytes: one load each */
        if (in->end - in->p >= 8 && (k = ana_varint_get8(in->p, &v)) != 0)
            in->p += k;
        else
            v = fu(in);
        ip[i] = i == 0 ? v : ip[i - 1] + (uint64_t)ana_unzigzag(v);
    }
    fr->ip = ip;
    fr->n = (uint32_t)n;
    return 0;
}

#define U_(f) x->f = fu(in)
#define S_(f) x->f = fs(in)

static int dec_launch(fin *in, ana_rec_launch *x, ana_scratch *sc)
{
    U_(api); S_(ret); U_(kernel); U_(grid_x); U_(grid_y); U_(grid_z);
    U_(block_x); U_(block_y); U_(block_z); U_(shmem); U_(stream); U_(stack); U_(dur_ns);
    U_(corr); U_(via); U_(lib); U_(call);
    if (in->bad || ffr(in, &x->ptrs, sc) < 0)
        return -1 + in->bad * 2; /* bad: 1 (malformed); scratch: -1 */
    if (in->bad || ffr(in, &x->ptr_at, sc) < 0)
        return -1 + in->bad * 2;
    return 0;
}

static void dec_gpu_kernel(fin *in, ana_rec_gpu_kernel *x)
{
    U_(corr); U_(dur_ns); U_(kernel); S_(device); U_(context); U_(stream);
    U_(grid_x); U_(grid_y); U_(grid_z); U_(block_x); U_(block_y); U_(block_z);
    U_(shmem_static); U_(shmem_dynamic); U_(regs); U_(graph); U_(graph_node);
}

static void dec_alloc(fin *in, ana_rec_alloc *x)
{
    U_(api); S_(ret); U_(ptr); U_(size); S_(device); U_(stream); U_(stack); U_(dur_ns);
    U_(flags); U_(corr); U_(via); U_(lib); U_(call);
}

static void dec_free(fin *in, ana_rec_free *x)
{
    U_(api); S_(ret); U_(ptr); S_(device); U_(stream); U_(stack); U_(dur_ns);
    U_(corr); U_(via); U_(lib); U_(call);
}

static void dec_memcpy(fin *in, ana_rec_memcpy *x)
{
    U_(api); S_(ret); U_(dst); U_(src); U_(bytes); U_(dir); U_(stream); U_(stack); U_(dur_ns);
    U_(corr); U_(via); U_(lib); U_(call);
}

static void dec_memset(fin *in, ana_rec_memset *x)
{
    U_(api); S_(ret); U_(ptr); S_(value); U_(bytes); U_(stream); U_(stack); U_(dur_ns);
    U_(corr); U_(via); U_(lib); U_(call);
}

static void dec_gpu_memcpy(fin *in, ana_rec_gpu_memcpy *x)
{
    U_(corr); U_(dur_ns); U_(bytes); U_(copy_kind); U_(src_kind); U_(dst_kind); U_(flags);
    S_(device); U_(context); U_(stream); S_(src_device); S_(dst_device); U_(graph);
    U_(graph_node);
}

static void dec_gpu_memset(fin *in, ana_rec_gpu_memset *x)
{
    U_(corr); U_(dur_ns); U_(bytes); U_(value); U_(mem_kind); U_(flags); S_(device);
    U_(context); U_(stream); U_(graph); U_(graph_node);
}

static void dec_gemm(fin *in, ana_rec_gemm *x)
{
    U_(api); S_(ret); U_(call); U_(handle); U_(stream); U_(m); U_(n); U_(k); U_(batch);
    U_(trans_a); U_(trans_b); U_(lda); U_(ldb); U_(ldc); U_(a_type); U_(b_type); U_(c_type);
    U_(compute_type); U_(math_mode); U_(epilogue); U_(workspace); U_(flops); U_(stack);
    U_(dur_ns); U_(a); U_(b); U_(c); U_(d); U_(ws);
}

static void dec_coll(fin *in, ana_rec_coll *x)
{
    U_(api); S_(ret); U_(call); U_(comm); U_(stream); U_(count); U_(dtype); U_(bytes); U_(op);
    S_(peer); U_(sendbuff); U_(recvbuff); U_(group); U_(seq); U_(stack); U_(dur_ns);
}

static void dec_libcall(fin *in, ana_rec_libcall *x)
{
    U_(lib); U_(api); S_(ret); U_(call); U_(handle); U_(arg); U_(arg2); U_(stack); U_(dur_ns);
}

/* 1 = malformed, -1 = scratch too small, 0 = ok. */
static int dec_kind(uint32_t kind, fin *in, ana_record *rec, ana_scratch *sc)
{
    switch (kind) {
    case ANA_K_LAUNCH:
        memset(&rec->u.launch, 0, sizeof(rec->u.launch));
        return dec_launch(in, &rec->u.launch, sc);
    case ANA_K_GPU_KERNEL: dec_gpu_kernel(in, &rec->u.gpu_kernel); return 0;
    case ANA_K_ALLOC: dec_alloc(in, &rec->u.alloc); return 0;
    case ANA_K_FREE: dec_free(in, &rec->u.free); return 0;
    case ANA_K_MEMCPY: dec_memcpy(in, &rec->u.memcpy); return 0;
    case ANA_K_MEMSET: dec_memset(in, &rec->u.memset); return 0;
    case ANA_K_GPU_MEMCPY: dec_gpu_memcpy(in, &rec->u.gpu_memcpy); return 0;
    case ANA_K_GPU_MEMSET: dec_gpu_memset(in, &rec->u.gpu_memset); return 0;
    case ANA_K_GEMM: dec_gemm(in, &rec->u.gemm); return 0;
    case ANA_K_COLL: dec_coll(in, &rec->u.coll); return 0;
    case ANA_K_LIBCALL: dec_libcall(in, &rec->u.libcall); return 0;
    default: return 2;
    }
}

int ana_record_decode_fast(uint32_t kind, const uint8_t *payload, size_t len, uint64_t prev_ns,
                           ana_record *rec, ana_scratch *scratch)
{
    switch (kind) {
    case ANA_K_LAUNCH: case ANA_K_GPU_KERNEL: case ANA_K_ALLOC: case ANA_K_FREE:
    case ANA_K_MEMCPY: case ANA_K_MEMSET: case ANA_K_GPU_MEMCPY: case ANA_K_GPU_MEMSET:
    case ANA_K_GEMM: case ANA_K_COLL: case ANA_K_LIBCALL: break;
    default: return ana_record_decode(kind, payload, len, prev_ns, rec, scratch);
    }
    if (len == 0)
        return ANA_DEC_MALFORMED; /* dt is mandatory */
    fin in = { payload, payload + len, 0 };
    rec->kind = kind;
    rec->time_ns = prev_ns + (uint64_t)fs(&in);
    if (in.bad)
        return ANA_DEC_MALFORMED;
    int rc = dec_kind(kind, &in, rec, scratch);
    if (rc < 0)
        return ANA_DEC_NOMEM;
    return rc || in.bad ? ANA_DEC_MALFORMED : ANA_DEC_OK;
}
