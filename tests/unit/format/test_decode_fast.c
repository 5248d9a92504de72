/* The reader's decoders (decode_fast.h) against the table decoder (codec.c): the same status
 * and, when it is ANA_DEC_OK, the same record, on random records of every fast kind encoded
 * by the table encoder, then on the same payloads cut short, with bytes flipped, with
 * trailing fields missing, and with too little scratch. */
#include <criterion/criterion.h>
#include <string.h>
#include "decode_fast.h"
#include "records.h"
#include "../random.h"

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint64_t next64(void) { return ana_xorshift64(&rng); }
static uint64_t value(void) { return ana_random_value(&rng); }

static const uint32_t kinds[] = { ANA_K_LAUNCH, ANA_K_GPU_KERNEL, ANA_K_ALLOC, ANA_K_FREE,
                                  ANA_K_MEMCPY, ANA_K_MEMSET, ANA_K_GPU_MEMCPY,
                                  ANA_K_GPU_MEMSET, ANA_K_GEMM, ANA_K_COLL, ANA_K_LIBCALL,
                                  ANA_K_VMM, ANA_K_RANGE };
#define N_KINDS (sizeof(kinds) / sizeof(kinds[0]))

static size_t struct_size(uint32_t kind)
{
    switch (kind) {
    case ANA_K_LAUNCH: return offsetof(ana_rec_launch, ptrs);
    case ANA_K_GPU_KERNEL: return sizeof(ana_rec_gpu_kernel);
    case ANA_K_ALLOC: return sizeof(ana_rec_alloc);
    case ANA_K_FREE: return sizeof(ana_rec_free);
    case ANA_K_MEMCPY: return sizeof(ana_rec_memcpy);
    case ANA_K_MEMSET: return sizeof(ana_rec_memset);
    case ANA_K_GPU_MEMCPY: return sizeof(ana_rec_gpu_memcpy);
    case ANA_K_GPU_MEMSET: return sizeof(ana_rec_gpu_memset);
    case ANA_K_GEMM: return sizeof(ana_rec_gemm);
    case ANA_K_COLL: return sizeof(ana_rec_coll);
    case ANA_K_LIBCALL: return sizeof(ana_rec_libcall);
    case ANA_K_VMM: return sizeof(ana_rec_vmm);
    default: return 0; /* RANGE: a kind without a fast decoder, compared by hand */
    }
}

static uint64_t ips[2][200];

static void fill(ana_record *r, uint32_t kind)
{
    memset(r, 0, sizeof(*r));
    r->kind = kind;
    r->time_ns = value();
    uint64_t *w = (uint64_t *)&r->u;
    for (size_t i = 0; i < struct_size(kind) / 8; i++)
        w[i] = value();
    if (kind == ANA_K_LAUNCH) {
        uint32_t n = (next64() & 15) == 0 ? 150 + (uint32_t)(next64() % 50) : (uint32_t)(next64() % 9);
        for (uint32_t i = 0; i < n; i++) {
            ips[0][i] = value();
            ips[1][i] = (next64() % 4096) * 8;
        }
        r->u.launch.ptrs = (ana_frames){ ips[0], n };
        r->u.launch.ptr_at = (ana_frames){ ips[1], n / 2 };
    }
    if (kind == ANA_K_RANGE)
        r->u.range = (ana_rec_range){ 1, value(), value(), value(), value(), { "step", 4 } };
}

static uint8_t buf_a[1 << 16], buf_b[1 << 16], enc[1 << 16];

static void same_frames(const ana_frames *a, const ana_frames *b)
{
    cr_assert_eq(a->n, b->n);
    if (a->n)
        cr_assert(memcmp(a->ip, b->ip, a->n * sizeof(uint64_t)) == 0);
}

/* Decodes payload both ways with `cap` bytes of scratch each; asserts they agree. */
static int both(uint32_t kind, const uint8_t *p, size_t len, uint64_t prev, size_t cap)
{
    ana_record a, b;
    memset(&a, 0x11, sizeof(a));
    memset(&b, 0x11, sizeof(b));
    ana_scratch sa = { buf_a, cap, 0 }, sb = { buf_b, cap, 0 };
    int ra = ana_record_decode(kind, p, len, prev, &a, &sa);
    int rb = ana_record_decode_fast(kind, p, len, prev, &b, &sb);
    cr_assert_eq(rb, ra, "kind %u len %zu: status %d, the table decoder %d", kind, len, rb, ra);
    if (ra != ANA_DEC_OK)
        return ra;
    cr_assert_eq(a.kind, b.kind);
    cr_assert_eq(a.time_ns, b.time_ns, "kind %u", kind);
    size_t n = struct_size(kind);
    cr_assert(memcmp(&a.u, &b.u, n) == 0, "kind %u len %zu: fields differ", kind, len);
    if (kind == ANA_K_LAUNCH) {
        same_frames(&a.u.launch.ptrs, &b.u.launch.ptrs);
        same_frames(&a.u.launch.ptr_at, &b.u.launch.ptr_at);
        cr_assert_eq(sa.used, sb.used, "the same scratch");
    }
    if (kind == ANA_K_RANGE)
        cr_assert(a.u.range.name.len == b.u.range.name.len &&
                  !memcmp(a.u.range.name.s, b.u.range.name.s, a.u.range.name.len));
    return ra;
}

Test(decode_fast, same_as_the_table_decoder)
{
    size_t ok = 0, bad = 0;
    for (int iter = 0; iter < 100000; iter++) {
        ana_record r;
        uint32_t kind = kinds[iter % N_KINDS];
        fill(&r, kind);
        uint64_t prev = (next64() & 1) ? r.time_ns - next64() % 100000 : value();
        size_t n = ana_record_encode(enc, sizeof(enc), &r, prev);
        cr_assert_gt(n, 0);
        uint32_t k;
        size_t plen, h = ana_record_header(enc, n, &k, &plen);
        cr_assert(h && k == kind);
        const uint8_t *p = enc + h;
        /* whole, then cut anywhere, with a flipped byte, with too little scratch */
        cr_assert_eq(both(kind, p, plen, prev, sizeof(buf_a)), ANA_DEC_OK);
        ok++;
        both(kind, p, (size_t)(next64() % (plen + 1)), prev, sizeof(buf_a));
        size_t at = (size_t)(next64() % plen);
        uint8_t save = enc[h + at];
        enc[h + at] ^= (uint8_t)(1u << (next64() % 8));
        if (both(kind, p, plen, prev, sizeof(buf_a)) != ANA_DEC_OK)
            bad++;
        enc[h + at] = 0xff; /* a varint that may run on past the payload */
        both(kind, p, plen, prev, sizeof(buf_a));
        enc[h + at] = save;
        both(kind, p, plen, prev, (size_t)(next64() % 64));
    }
    cr_assert_gt(ok, 0);
    cr_assert_gt(bad, 0, "some damaged payloads were malformed");
}

Test(decode_fast, edge_payloads)
{
    static const uint8_t ten[] = { 2, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02 };
    static const uint8_t eleven[] = { 2, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0 };
    static const uint8_t frames_too_many[] = { 2, 1, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 40, 1 };
    for (size_t i = 0; i < N_KINDS; i++) {
        both(kinds[i], ten, 0, 5, sizeof(buf_a));   /* no dt */
        both(kinds[i], ten, 1, 5, sizeof(buf_a));   /* dt only */
        both(kinds[i], ten, sizeof(ten), 5, sizeof(buf_a));
        both(kinds[i], eleven, sizeof(eleven), 5, sizeof(buf_a));
        both(kinds[i], frames_too_many, sizeof(frames_too_many), 5, sizeof(buf_a));
        both(kinds[i], frames_too_many, sizeof(frames_too_many), 5, 0);
    }
    cr_assert_eq(both(ANA_K_ALLOC, ten, 1, 5, 16), ANA_DEC_OK);
    cr_assert_eq(both(ANA_K_ALLOC, ten, sizeof(ten), 5, 16), ANA_DEC_MALFORMED);
}
