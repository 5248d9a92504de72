/*
 * Simulated runtime: kernel parameter layouts (cudaFuncGetParamInfo) read from a cubin in
 * a fat binary built here byte by byte as nvcc lays it out (docs/sim.md, "Kernel
 * parameters"): nvcc's wrapper, the fat binary header, one ELF entry whose section
 * .nv.info.<name> holds EIATTR_KPARAM_INFO attributes among others. Expected offsets and
 * sizes are the ones written into the image; a compressed cubin, an image that is not
 * one nvcc makes, and indices past the last parameter give the documented errors.
 */
#include <criterion/criterion.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <string.h>

#include "stub_abi.h" /* the nvcc stub ABI */

#define KERNEL "_Z1kPfid"   /* k(float *, int, double) */
#define SECTION ".nv.info." KERNEL

static uint8_t image[4096];   /* the fat binary */
static size_t image_len;
static struct { int magic, version; const void *data; void *rest; } wrapper, packed_wrapper, bad_wrapper;
static uint8_t packed[4096];  /* the same image with its cubin "compressed" */
static char zeros[16];

static void k(void) {}
static void k_packed(void) {}
static void k_bad(void) {}
static void no_params(void) {}
static void other(void) {}

static void put16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }
static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

/* One EIATTR_KPARAM_INFO (format 4, 12 bytes): index 0, ordinal, offset, size in bits
 * 18..31 of the last word (the low bits as nvcc sets them). */
static size_t kparam(uint8_t *p, uint16_t ordinal, uint16_t offset, uint32_t size)
{
    p[0] = 4, p[1] = 0x17;
    put16(p + 2, 12);
    put32(p + 4, 0);
    put16(p + 8, ordinal);
    put16(p + 10, offset);
    put32(p + 12, size << 18 | 0x1f000);
    return 16;
}

/* .nv.info.<KERNEL>: the parameters in reverse order, as nvcc writes them, between
 * attributes of other kinds (format 3 with a 2-byte value, format 4 with 8 bytes). */
static size_t nv_info(uint8_t *p)
{
    size_t n = 0;
    p[n] = 4, p[n + 1] = 0x0a, put16(p + n + 2, 8), n += 4 + 8;
    n += kparam(p + n, 2, 16, 8);
    n += kparam(p + n, 1, 8, 4);
    n += kparam(p + n, 0, 0, 8);
    p[n] = 3, p[n + 1] = 0x1b, put16(p + n + 2, 0xff), n += 4;
    return n;
}

/* An ELF64 with a null section, .shstrtab, the .nv.info section of KERNEL and that of
 * no_params (one attribute, no parameter); returns its size. */
static size_t cubin(uint8_t *e)
{
    static const char strtab[] = "\0.shstrtab\0" SECTION "\0.nv.info._Z9no_paramsv";
    memset(e, 0, 64);
    memcpy(e, "\177ELF\2\1\1", 7);
    size_t at = 64;
    memcpy(e + at, strtab, sizeof(strtab));
    size_t str_off = at, str_len = sizeof(strtab);
    at += (str_len + 7) & ~7u;
    size_t info_off = at, info_len = nv_info(e + at);
    at += (info_len + 7) & ~7u;
    size_t none_off = at;
    e[at] = 3, e[at + 1] = 0x1b, put16(e + at + 2, 0xff), at += 8;
    put64(e + 0x28, at);
    put16(e + 0x3a, 64);
    put16(e + 0x3c, 4);
    put16(e + 0x3e, 1);
    uint8_t *sh = e + at;
    memset(sh, 0, 4 * 64);
    put32(sh + 64, 1), put64(sh + 64 + 0x18, str_off), put64(sh + 64 + 0x20, str_len);
    put32(sh + 128, 11), put64(sh + 128 + 0x18, info_off), put64(sh + 128 + 0x20, info_len);
    put32(sh + 192, 11 + sizeof(SECTION)), put64(sh + 192 + 0x18, none_off), put64(sh + 192 + 0x20, 4);
    return at + 4 * 64;
}

/* Fat binary header (16 bytes) and one ELF entry (64-byte header) holding the cubin. */
static size_t fatbin(uint8_t *f)
{
    size_t elf = cubin(f + 16 + 64);
    put32(f, 0xBA55ED50), put16(f + 4, 1), put16(f + 6, 16), put64(f + 8, 64 + elf);
    uint8_t *h = f + 16;
    memset(h, 0, 64);
    put16(h, 2), put16(h + 2, 0x101), put32(h + 4, 64), put64(h + 8, elf);
    return 16 + 64 + elf;
}

static void register_modules(void)
{
    image_len = fatbin(image);
    wrapper = (typeof(wrapper)){ 0x466243B1, 1, image, NULL };
    memcpy(packed, image, image_len);
    memset(packed + 16 + 64, 0x28, 4);   /* a payload that is not an ELF: compressed */
    packed_wrapper = (typeof(packed_wrapper)){ 0x466243B1, 1, packed, NULL };
    bad_wrapper = (typeof(bad_wrapper)){ 0x466243B1, 1, zeros, NULL };

    void **m = __cudaRegisterFatBinary(&wrapper);
    __cudaRegisterFunction(m, (const char *)k, KERNEL, KERNEL, -1, NULL, NULL, NULL, NULL, NULL);
    __cudaRegisterFunction(m, (const char *)no_params, "_Z9no_paramsv", "_Z9no_paramsv", -1, NULL, NULL,
                           NULL, NULL, NULL);
    __cudaRegisterFunction(m, (const char *)other, "_Z5otherv", "_Z5otherv", -1, NULL, NULL, NULL, NULL, NULL);
    __cudaRegisterFatBinaryEnd(m);
    m = __cudaRegisterFatBinary(&packed_wrapper);
    __cudaRegisterFunction(m, (const char *)k_packed, KERNEL, KERNEL, -1, NULL, NULL, NULL, NULL, NULL);
    m = __cudaRegisterFatBinary(&bad_wrapper);
    __cudaRegisterFunction(m, (const char *)k_bad, KERNEL, KERNEL, -1, NULL, NULL, NULL, NULL, NULL);
}

TestSuite(sim_params, .init = register_modules);

Test(sim_params, offsets_and_sizes_from_the_cubin)
{
    const size_t want[3][2] = { { 0, 8 }, { 8, 4 }, { 16, 8 } };
    for (size_t i = 0; i < 3; i++) {
        size_t off = 99, size = 99;
        cr_assert_eq(cudaFuncGetParamInfo((const void *)k, i, &off, &size), cudaSuccess, "param %zu", i);
        cr_expect_eq(off, want[i][0], "param %zu offset", i);
        cr_expect_eq(size, want[i][1], "param %zu size", i);
    }
    /* The kernel handle names the same kernel; the size is optional. */
    cudaKernel_t h;
    size_t off = 0;
    cr_assert_eq(cudaGetKernel(&h, (const void *)k), cudaSuccess);
    cr_expect_eq(cudaFuncGetParamInfo((const void *)h, 2, &off, NULL), cudaSuccess);
    cr_expect_eq(off, 16);
}

Test(sim_params, past_the_last_parameter_is_invalid_value_and_the_last_error)
{
    size_t off, size;
    cr_expect_eq(cudaFuncGetParamInfo((const void *)k, 3, &off, &size), cudaErrorInvalidValue);
    cr_expect_eq(cudaGetLastError(), cudaErrorInvalidValue);
    cr_expect_eq(cudaFuncGetParamInfo((const void *)no_params, 0, &off, &size), cudaErrorInvalidValue);
    cr_expect_eq(cudaFuncGetParamInfo((const void *)k, 0, NULL, &size), cudaErrorInvalidValue);
    cudaGetLastError();
}

Test(sim_params, unknown_functions_and_unreadable_images)
{
    size_t off, size;
    cr_expect_eq(cudaFuncGetParamInfo((const void *)register_modules, 0, &off, &size),
                 cudaErrorInvalidDeviceFunction);
    cr_expect_eq(cudaFuncGetParamInfo((const void *)k_packed, 0, &off, &size), cudaErrorNotSupported);
    cr_expect_eq(cudaFuncGetParamInfo((const void *)k_bad, 0, &off, &size), cudaErrorInvalidKernelImage);
    /* A kernel the image has no .nv.info section for. */
    cr_expect_eq(cudaFuncGetParamInfo((const void *)other, 0, &off, &size), cudaErrorNotSupported);
    cudaGetLastError();
}
