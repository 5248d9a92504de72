#include <criterion/criterion.h>
#include <string.h>
#include "records.h"
#include "varint.h"

static uint8_t scratch_mem[1 << 16];

static ana_record round_trip(const ana_record *in, uint64_t prev)
{
    uint8_t buf[4096];
    size_t n = ana_record_encode(buf, sizeof(buf), in, prev);
    cr_assert_gt(n, 0, "encode kind %u", in->kind);
    uint32_t kind;
    size_t plen;
    size_t h = ana_record_header(buf, n, &kind, &plen);
    cr_assert_gt(h, 0);
    cr_assert_eq(h + plen, n, "record length covers exactly the encoding");
    cr_assert_eq(kind, in->kind);
    ana_record out;
    memset(&out, 0xAB, sizeof(out));
    ana_scratch sc = { scratch_mem, sizeof(scratch_mem), 0 };
    cr_assert_eq(ana_record_decode(kind, buf + h, plen, prev, &out, &sc), ANA_DEC_OK);
    return out;
}

Test(codec, alloc_round_trip_with_negative_and_large_values)
{
    ana_record r = { .kind = ANA_K_ALLOC, .time_ns = 1000500 };
    r.u.alloc = (ana_rec_alloc){ .api = ANA_API_MALLOC, .ret = -7, .ptr = 0x7f12345678f0ull,
                                 .size = 1ull << 40, .device = -1, .stream = 0xdeadbeef,
                                 .stack = 42, .dur_ns = 1234, .flags = 3 };
    ana_record o = round_trip(&r, 1000000);
    cr_expect_eq(o.time_ns, 1000500);
    cr_expect_eq(o.u.alloc.api, ANA_API_MALLOC);
    cr_expect_eq(o.u.alloc.ret, -7);
    cr_expect_eq(o.u.alloc.ptr, 0x7f12345678f0ull);
    cr_expect_eq(o.u.alloc.size, 1ull << 40);
    cr_expect_eq(o.u.alloc.device, -1);
    cr_expect_eq(o.u.alloc.stream, 0xdeadbeef);
    cr_expect_eq(o.u.alloc.stack, 42);
    cr_expect_eq(o.u.alloc.dur_ns, 1234);
    cr_expect_eq(o.u.alloc.flags, 3);
}

Test(codec, time_may_go_backwards_within_a_segment)
{
    ana_record r = { .kind = ANA_K_FREE, .time_ns = 90 };
    r.u.free.ptr = 5;
    ana_record o = round_trip(&r, 100);
    cr_expect_eq(o.time_ns, 90);
}

Test(codec, strings_vectors_and_frames)
{
    ana_str argv[3] = { { "python", 6 }, { "", 0 }, { "train.py", 8 } };
    ana_record p = { .kind = ANA_K_PROCESS, .time_ns = 5 };
    p.u.process = (ana_rec_process){ .pid = 4242, .ppid = 1, .rank = -1, .local_rank = 3,
                                     .world_size = 8, .realtime_ns = 1700000000000000000ull,
                                     .host = { "node01", 6 }, .exe = { "/usr/bin/python3", 16 },
                                     .argv = { argv, 3 } };
    ana_record o = round_trip(&p, 0);
    cr_expect_str_eq(o.u.process.host.s, "node01");
    cr_expect_str_eq(o.u.process.exe.s, "/usr/bin/python3");
    cr_assert_eq(o.u.process.argv.n, 3);
    cr_expect_str_eq(o.u.process.argv.v[0].s, "python");
    cr_expect_str_eq(o.u.process.argv.v[1].s, "");
    cr_expect_str_eq(o.u.process.argv.v[2].s, "train.py");
    cr_expect_eq(o.u.process.rank, -1);
    cr_expect_eq(o.u.process.world_size, 8);

    /* Frames go up and down: deltas must be signed. */
    uint64_t ips[5] = { 0x401000, 0x7f0000001000ull, 0x400010, 0x400010, 0xffffffffffffff00ull };
    ana_record s = { .kind = ANA_K_STACK, .time_ns = 9 };
    s.u.stack.id = 77;
    s.u.stack.frames = (ana_frames){ ips, 5 };
    o = round_trip(&s, 9);
    cr_expect_eq(o.u.stack.id, 77);
    cr_assert_eq(o.u.stack.frames.n, 5);
    for (int i = 0; i < 5; i++)
        cr_expect_eq(o.u.stack.frames.ip[i], ips[i], "frame %d", i);
}

Test(codec, long_payload_gets_a_longer_length)
{
    static char name[3000];
    memset(name, 'k', sizeof(name) - 1);
    ana_record k = { .kind = ANA_K_KERNEL, .time_ns = 1 };
    k.u.kernel = (ana_rec_kernel){ .id = 3, .host_fn = 0x401234, .name = { name, sizeof(name) - 1 } };
    ana_record o = round_trip(&k, 0);
    cr_expect_eq(o.u.kernel.name.len, sizeof(name) - 1);
    cr_expect_eq(strcmp(o.u.kernel.name.s, name), 0);
}

Test(codec, absent_trailing_fields_decode_as_zero_and_extra_bytes_are_ignored)
{
    /* An older writer's FREE with only dt, api, ret: the rest must be zero. */
    uint8_t payload[8];
    size_t n = 0;
    n += ana_varint_put(payload + n, ana_zigzag(10));
    n += ana_varint_put(payload + n, ANA_API_FREE);
    n += ana_varint_put(payload + n, ana_zigzag(0));
    ana_record o;
    ana_scratch sc = { scratch_mem, sizeof(scratch_mem), 0 };
    cr_assert_eq(ana_record_decode(ANA_K_FREE, payload, n, 100, &o, &sc), ANA_DEC_OK);
    cr_expect_eq(o.time_ns, 110);
    cr_expect_eq(o.u.free.api, ANA_API_FREE);
    cr_expect_eq(o.u.free.ptr, 0);
    cr_expect_eq(o.u.free.stack, 0);

    /* A newer writer's MEMINFO with a field this reader does not know. */
    uint8_t p2[16];
    n = 0;
    n += ana_varint_put(p2 + n, 0);
    n += ana_varint_put(p2 + n, ana_zigzag(0));
    n += ana_varint_put(p2 + n, 100);
    n += ana_varint_put(p2 + n, 200);
    n += ana_varint_put(p2 + n, 1);
    n += ana_varint_put(p2 + n, 999999); /* unknown */
    cr_assert_eq(ana_record_decode(ANA_K_MEMINFO, p2, n, 0, &o, &sc), ANA_DEC_OK);
    cr_expect_eq(o.u.meminfo.free, 100);
    cr_expect_eq(o.u.meminfo.total, 200);
    cr_expect_eq(o.u.meminfo.reason, 1);
}

/* The payload of `in` (encoded), with its last `cut` bytes removed: what a writer of an
 * older minor version, which did not know the trailing fields, would have written. */
static ana_record decode_cut(const ana_record *in, size_t cut)
{
    uint8_t buf[4096];
    size_t n = ana_record_encode(buf, sizeof(buf), in, 0);
    uint32_t kind;
    size_t plen, h = ana_record_header(buf, n, &kind, &plen);
    cr_assert(h > 0 && plen > cut);
    ana_record out;
    memset(&out, 0xAB, sizeof(out));
    ana_scratch sc = { scratch_mem, sizeof(scratch_mem), 0 };
    cr_assert_eq(ana_record_decode(kind, buf + h, plen - cut, 0, &out, &sc), ANA_DEC_OK);
    return out;
}

Test(codec, launch_pointer_words_round_trip)
{
    /* 64 words (the preload's cap), values going down and up by more than 2^32 and
     * repeating, offsets ascending with gaps. */
    uint64_t ptrs[64], at[64];
    for (int i = 0; i < 64; i++) {
        ptrs[i] = (i % 3 == 0) ? 0x7f0000000000ull + (uint64_t)i * 0x1000 : 0x7e0000000000ull - (uint64_t)i;
        at[i] = (uint64_t)i * 8 + (i > 10 ? 4096 : 0);
    }
    ptrs[5] = ptrs[4];
    ana_record r = { .kind = ANA_K_LAUNCH, .time_ns = 7 };
    r.u.launch = (ana_rec_launch){ .api = ANA_API_LAUNCH_KERNEL, .kernel = 3, .grid_x = 2, .block_x = 32,
                                   .call = 99, .ptrs = { ptrs, 64 }, .ptr_at = { at, 64 } };
    ana_record o = round_trip(&r, 0);
    cr_expect_eq(o.u.launch.call, 99);
    cr_assert_eq(o.u.launch.ptrs.n, 64);
    cr_assert_eq(o.u.launch.ptr_at.n, 64);
    for (int i = 0; i < 64; i++) {
        cr_expect_eq(o.u.launch.ptrs.ip[i], ptrs[i], "ptrs[%d]", i);
        cr_expect_eq(o.u.launch.ptr_at.ip[i], at[i], "ptr_at[%d]", i);
    }
    cr_expect_eq(o.u.launch.ptr_at.ip[11], 11 * 8 + 4096);
}

Test(codec, a_1_2_launch_has_no_pointer_words)
{
    /* Empty FRAMES are one byte each (a count of 0): a 1.2 LAUNCH ends two bytes earlier. */
    ana_record r = { .kind = ANA_K_LAUNCH, .time_ns = 1 };
    r.u.launch = (ana_rec_launch){ .api = ANA_API_LAUNCH_KERNEL, .kernel = 5, .lib = 2, .call = 77 };
    ana_record o = decode_cut(&r, 2);
    cr_expect_eq(o.u.launch.kernel, 5);
    cr_expect_eq(o.u.launch.lib, 2);
    cr_expect_eq(o.u.launch.call, 77);
    cr_expect_eq(o.u.launch.ptrs.n, 0);
    cr_expect_eq(o.u.launch.ptr_at.n, 0);
}

Test(codec, pointer_table_round_trips)
{
    uint64_t ptrs[3] = { 0x7f0000001000ull, 0x7f0000000040ull, 0x7f0000900000ull }, at[3] = { 0, 8, 24 };
    ana_record r = { .kind = ANA_K_PTR_TABLE, .time_ns = 9 };
    r.u.ptr_table = (ana_rec_ptr_table){ .dst = 0x7f0000a00000ull, .bytes = 32, .ptrs = { ptrs, 3 },
                                         .ptr_at = { at, 3 }, .more = 2 };
    ana_record o = round_trip(&r, 0);
    cr_expect_eq(o.u.ptr_table.dst, 0x7f0000a00000ull);
    cr_expect_eq(o.u.ptr_table.bytes, 32);
    cr_assert_eq(o.u.ptr_table.ptrs.n, 3);
    cr_assert_eq(o.u.ptr_table.ptr_at.n, 3);
    for (int i = 0; i < 3; i++) {
        cr_expect_eq(o.u.ptr_table.ptrs.ip[i], ptrs[i]);
        cr_expect_eq(o.u.ptr_table.ptr_at.ip[i], at[i]);
    }
    cr_expect_eq(o.u.ptr_table.more, 2);
    cr_expect_str_eq(ana_kind_name(ANA_K_PTR_TABLE), "pointer_table");
}

Test(codec, gemm_pointers_round_trip_and_a_1_2_gemm_has_zeros)
{
    ana_record r = { .kind = ANA_K_GEMM, .time_ns = 3 };
    r.u.gemm = (ana_rec_gemm){ .api = ANA_API_CUBLAS_SGEMM, .m = 37, .dur_ns = 1234, .a = 0x7f0000001000ull,
                               .b = 0x7f0000002000ull, .c = 0x7f0000003000ull, .d = 0x7f0000004000ull,
                               .ws = 0x7e0000000000ull };
    ana_record o = round_trip(&r, 0);
    cr_expect_eq(o.u.gemm.m, 37);
    cr_expect_eq(o.u.gemm.a, 0x7f0000001000ull);
    cr_expect_eq(o.u.gemm.b, 0x7f0000002000ull);
    cr_expect_eq(o.u.gemm.c, 0x7f0000003000ull);
    cr_expect_eq(o.u.gemm.d, 0x7f0000004000ull);
    cr_expect_eq(o.u.gemm.ws, 0x7e0000000000ull);

    /* Pointers of one byte each (values 1..5): a 1.2 GEMM ends five bytes earlier. */
    r.u.gemm.a = 1, r.u.gemm.b = 2, r.u.gemm.c = 3, r.u.gemm.d = 4, r.u.gemm.ws = 5;
    o = decode_cut(&r, 5);
    cr_expect_eq(o.u.gemm.m, 37);
    cr_expect_eq(o.u.gemm.dur_ns, 1234);
    cr_expect_eq(o.u.gemm.a, 0);
    cr_expect_eq(o.u.gemm.b, 0);
    cr_expect_eq(o.u.gemm.c, 0);
    cr_expect_eq(o.u.gemm.d, 0);
    cr_expect_eq(o.u.gemm.ws, 0);
}

Test(codec, malformed_payloads_are_rejected)
{
    ana_record o;
    ana_scratch sc = { scratch_mem, sizeof(scratch_mem), 0 };
    /* A string whose length runs past the payload. */
    uint8_t p[4] = { 0, 1, 50, 'x' };
    cr_expect_eq(ana_record_decode(ANA_K_THREAD, p, sizeof(p), 0, &o, &sc), ANA_DEC_MALFORMED);
    /* A varint cut in the middle. */
    uint8_t q[2] = { 0, 0x80 };
    cr_expect_eq(ana_record_decode(ANA_K_ALLOC, q, sizeof(q), 0, &o, &sc), ANA_DEC_MALFORMED);
    /* Missing dt. */
    cr_expect_eq(ana_record_decode(ANA_K_ALLOC, q, 0, 0, &o, &sc), ANA_DEC_MALFORMED);
    cr_expect_eq(ana_record_decode(200, q, 2, 0, &o, &sc), ANA_DEC_UNKNOWN_KIND);
}

Test(codec, encode_refuses_small_buffers)
{
    ana_record r = { .kind = ANA_K_ALLOC };
    r.u.alloc.ptr = UINT64_MAX;
    r.u.alloc.size = UINT64_MAX;
    uint8_t buf[16];
    cr_expect_eq(ana_record_encode(buf, sizeof(buf), &r, 0), 0);
    cr_expect_eq(ana_record_encode(buf, sizeof(buf), &(ana_record){ .kind = 99 }, 0), 0);
}

Test(api, names_and_device_classification)
{
    cr_expect_str_eq(ana_api_name(ANA_API_MALLOC), "cudaMalloc");
    cr_expect_str_eq(ana_api_name(ANA_API_STUB_LAUNCH_KERNEL), "__cudaLaunchKernel");
    cr_expect_null(ana_api_name(9));
    cr_expect_null(ana_api_name(1000));
    cr_expect(ana_api_is_device_alloc(ANA_API_MALLOC_MANAGED));
    cr_expect_not(ana_api_is_device_alloc(ANA_API_MALLOC_HOST));
    cr_expect_not(ana_api_is_device_alloc(ANA_API_HOST_ALLOC));
    cr_expect_str_eq(ana_kind_name(ANA_K_LAUNCH), "launch");
}
