/*
 * Simulated device memory: capacity setting, accounting, frees, host allocations,
 * copies and pointer attributes. Expectations come from docs/sim.md, not from the code:
 * capacity from ANATOMIST_SIM_MEMORY (re-read by cudaDeviceReset), device allocations
 * charged in multiples of 512 bytes, pinned host memory not charged.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define GIB (1ull << 30)

static size_t total_for(const char *setting)
{
    size_t free_b = 0, total_b = 0;
    if (setting)
        setenv("ANATOMIST_SIM_MEMORY", setting, 1);
    else
        unsetenv("ANATOMIST_SIM_MEMORY");
    cr_assert_eq(cudaDeviceReset(), cudaSuccess);
    cr_assert_eq(cudaMemGetInfo(&free_b, &total_b), cudaSuccess);
    cr_assert_eq(free_b, total_b, "a fresh device is empty");
    return total_b;
}

static size_t free_now(void)
{
    size_t free_b = 0, total_b = 0;
    cr_assert_eq(cudaMemGetInfo(&free_b, &total_b), cudaSuccess);
    return free_b;
}

Test(sim_capacity, default_is_80_gib)
{
    cr_assert_eq(total_for(NULL), 80 * GIB);
    struct cudaDeviceProp prop;
    cr_assert_eq(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
    cr_assert_eq(prop.totalGlobalMem, 80 * GIB);
}

Test(sim_capacity, suffixes)
{
    cr_assert_eq(total_for("123456789"), 123456789ull);
    cr_assert_eq(total_for("4096B"), 4096ull);
    cr_assert_eq(total_for("64k"), 64ull << 10);
    cr_assert_eq(total_for("64KiB"), 64ull << 10);
    cr_assert_eq(total_for("64KB"), 64000ull);
    cr_assert_eq(total_for("3M"), 3ull << 20);
    cr_assert_eq(total_for("3mib"), 3ull << 20);
    cr_assert_eq(total_for("3MB"), 3000000ull);
    cr_assert_eq(total_for("16G"), 16 * GIB);
    cr_assert_eq(total_for("16GiB"), 16 * GIB);
    cr_assert_eq(total_for("16gb"), 16000000000ull);
    cr_assert_eq(total_for("2T"), 2ull << 40);
    cr_assert_eq(total_for("2TiB"), 2ull << 40);
    cr_assert_eq(total_for("1.5GiB"), 3 * GIB / 2);
    cr_assert_eq(total_for(" 24 GiB "), 24 * GIB);
}

Test(sim_capacity, bad_values_fall_back_to_default, .init = cr_redirect_stderr)
{
    const char *bad[] = { "lots", "12XB", "-5G", "0", "G", "1.G", "99999999999999999999T" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert_eq(total_for(bad[i]), 80 * GIB, "'%s' must be rejected", bad[i]);
    fflush(stderr);
    /* One line per rejected reading, naming the value. */
    cr_assert_stderr_eq_str(
        "anatomist-sim: ANATOMIST_SIM_MEMORY='lots' is not a size (e.g. 80GiB, 512M, 1000000000); using 80 GiB\n"
        "anatomist-sim: ANATOMIST_SIM_MEMORY='12XB' is not a size (e.g. 80GiB, 512M, 1000000000); using 80 GiB\n"
        "anatomist-sim: ANATOMIST_SIM_MEMORY='-5G' is not a size (e.g. 80GiB, 512M, 1000000000); using 80 GiB\n"
        "anatomist-sim: ANATOMIST_SIM_MEMORY='0' is not a size (e.g. 80GiB, 512M, 1000000000); using 80 GiB\n"
        "anatomist-sim: ANATOMIST_SIM_MEMORY='G' is not a size (e.g. 80GiB, 512M, 1000000000); using 80 GiB\n"
        "anatomist-sim: ANATOMIST_SIM_MEMORY='1.G' is not a size (e.g. 80GiB, 512M, 1000000000); using 80 GiB\n"
        "anatomist-sim: ANATOMIST_SIM_MEMORY='99999999999999999999T' is not a size (e.g. 80GiB, 512M, 1000000000); using 80 GiB\n");
}

Test(sim_accounting, free_drops_by_rounded_size_and_comes_back)
{
    size_t total = total_for("1MiB");
    void *a = NULL, *b = NULL;
    cr_assert_eq(cudaMalloc(&a, 1), cudaSuccess);
    cr_assert_eq(free_now(), total - 512, "1 byte is charged as 512");
    cr_assert_eq(cudaMalloc(&b, 513), cudaSuccess);
    cr_assert_eq(free_now(), total - 512 - 1024, "513 bytes are charged as 1024");
    cr_assert_eq(cudaFree(a), cudaSuccess);
    cr_assert_eq(free_now(), total - 1024);
    cr_assert_eq(cudaFree(b), cudaSuccess);
    cr_assert_eq(free_now(), total);
}

Test(sim_accounting, alloc_until_full)
{
    size_t total = total_for("10000"); /* not a multiple of 512 */
    void *p[32];
    int n = 0;
    cudaError_t err;
    while ((err = cudaMalloc(&p[n], 1000)) == cudaSuccess)
        n++;
    cr_assert_eq(n, 9, "10000 bytes hold nine 1024-byte charges, not ten");
    cr_assert_eq(err, cudaErrorMemoryAllocation);
    cr_assert_eq(free_now(), total - 9 * 1024);
    cr_assert_eq(cudaPeekAtLastError(), cudaErrorMemoryAllocation);
    cr_assert_eq(cudaGetLastError(), cudaErrorMemoryAllocation);
    cr_assert_eq(cudaGetLastError(), cudaSuccess, "reading the last error resets it");
    void *small = NULL;
    cr_assert_eq(cudaMalloc(&small, 400), cudaSuccess, "a 512-byte charge still fits");
    cr_assert_eq(cudaMalloc(&small, 1), cudaErrorMemoryAllocation);
    cr_assert_eq(cudaMallocManaged(&small, 1, cudaMemAttachGlobal), cudaErrorMemoryAllocation);
    cr_assert_eq(cudaFree(p[0]), cudaSuccess);
    cr_assert_eq(cudaMalloc(&small, 1000), cudaSuccess);
    cr_assert_eq(cudaDeviceReset(), cudaSuccess);
    cr_assert_eq(free_now(), total, "cudaDeviceReset frees everything");
}

Test(sim_accounting, eighty_gib_costs_no_host_memory)
{
    total_for(NULL);
    void *p = NULL;
    cr_assert_eq(cudaMalloc(&p, 79 * GIB), cudaSuccess);
    cr_assert_eq(free_now(), 1 * GIB);
    ((char *)p)[0] = 1;                     /* touched pages are real memory */
    ((char *)p)[79 * GIB - 1] = 2;
    cr_assert_eq(cudaFree(p), cudaSuccess);
}

Test(sim_accounting, zero_size_and_pitch)
{
    size_t total = total_for("1MiB");
    void *p = (void *)1;
    size_t pitch = 0;
    cr_assert_eq(cudaMalloc(&p, 0), cudaSuccess);
    cr_assert_null(p);
    cr_assert_eq(free_now(), total);
    cr_assert_eq(cudaMallocPitch(&p, &pitch, 1000, 3), cudaSuccess);
    cr_assert_eq(pitch, 1024);
    cr_assert_eq(free_now(), total - 3 * 1024);
    cr_assert_eq(cudaFree(p), cudaSuccess);
    cr_assert_eq(cudaMalloc(NULL, 16), cudaErrorInvalidValue);
}

Test(sim_free, invalid_frees)
{
    total_for("1MiB");
    int on_stack;
    char *d = NULL;
    void *h = NULL;
    cr_assert_eq(cudaFree(NULL), cudaSuccess);
    cr_assert_eq(cudaGetLastError(), cudaSuccess);
    cr_assert_eq(cudaFree(&on_stack), cudaErrorInvalidValue);
    cr_assert_eq(cudaGetLastError(), cudaErrorInvalidValue);
    cr_assert_eq(cudaMalloc((void **)&d, 4096), cudaSuccess);
    cr_assert_eq(cudaFree(d + 16), cudaErrorInvalidValue, "interior pointers are not bases");
    cr_assert_eq(cudaFreeHost(d), cudaErrorInvalidValue, "device memory is not host memory");
    cr_assert_eq(cudaFree(d), cudaSuccess);
    cr_assert_eq(cudaFree(d), cudaErrorInvalidValue, "double free");
    cr_assert_eq(cudaMallocHost(&h, 64), cudaSuccess);
    cr_assert_eq(cudaFree(h), cudaErrorInvalidValue, "pinned memory is freed with cudaFreeHost");
    cr_assert_eq(cudaFreeHost(h), cudaSuccess);
    cr_assert_eq(cudaFreeHost(NULL), cudaSuccess);
}

Test(sim_host, host_allocations_are_not_charged)
{
    size_t total = total_for("4KiB");
    void *a = NULL, *b = NULL;
    cr_assert_eq(cudaMallocHost(&a, 1 << 20), cudaSuccess);
    cr_assert_eq(cudaHostAlloc(&b, 1 << 20, cudaHostAllocMapped | cudaHostAllocPortable),
                 cudaSuccess);
    cr_assert_eq(free_now(), total);
    memset(a, 7, 1 << 20);
    void *dev = NULL;
    cr_assert_eq(cudaHostGetDevicePointer(&dev, b, 0), cudaSuccess);
    cr_assert_eq(dev, b, "unified addressing");
    unsigned flags = 0;
    cr_assert_eq(cudaHostGetFlags(&flags, b), cudaSuccess);
    cr_assert_eq(flags, cudaHostAllocMapped | cudaHostAllocPortable);
    cr_assert_eq(cudaFreeHost(a), cudaSuccess);
    cr_assert_eq(cudaFreeHost(b), cudaSuccess);
    cr_assert_eq(cudaHostAlloc(&a, 16, 0x100), cudaErrorInvalidValue);
}

Test(sim_host, register_and_unregister)
{
    total_for("4KiB");
    char *buf = malloc(8192);
    void *dev = NULL;
    cr_assert_eq(cudaHostGetDevicePointer(&dev, buf, 0), cudaErrorInvalidValue);
    cr_assert_eq(cudaHostRegister(buf, 8192, cudaHostRegisterDefault), cudaSuccess);
    cr_assert_eq(cudaHostRegister(buf + 100, 10, 0), cudaErrorHostMemoryAlreadyRegistered);
    cr_assert_eq(cudaHostGetDevicePointer(&dev, buf + 100, 0), cudaSuccess);
    cr_assert_eq(dev, buf + 100);
    cr_assert_eq(cudaHostUnregister(buf), cudaSuccess);
    cr_assert_eq(cudaHostUnregister(buf), cudaErrorHostMemoryNotRegistered);
    free(buf);
}

Test(sim_copy, memcpy_moves_real_bytes)
{
    total_for("1MiB");
    unsigned char src[1000], dst[1000];
    for (int i = 0; i < 1000; i++)
        src[i] = (unsigned char)(i * 7 + 3);
    unsigned char *d1 = NULL, *d2 = NULL;
    cr_assert_eq(cudaMalloc((void **)&d1, 1000), cudaSuccess);
    cr_assert_eq(cudaMalloc((void **)&d2, 1000), cudaSuccess);
    cr_assert_eq(cudaMemcpy(d1, src, 1000, cudaMemcpyHostToDevice), cudaSuccess);
    cr_assert_eq(cudaMemcpy(d2, d1, 1000, cudaMemcpyDeviceToDevice), cudaSuccess);
    cr_assert_eq(cudaMemset(d2, 0xab, 10), cudaSuccess);
    cr_assert_eq(cudaMemcpyAsync(dst, d2, 1000, cudaMemcpyDefault, 0), cudaSuccess);
    cr_assert_eq(cudaStreamSynchronize(0), cudaSuccess);
    for (int i = 0; i < 10; i++)
        cr_assert_eq(dst[i], 0xab);
    cr_assert_arr_eq(dst + 10, src + 10, 990);
    cr_assert_eq(cudaMemcpy(dst, d1 + 1, 1000, cudaMemcpyDeviceToHost), cudaErrorInvalidValue,
                 "the device range must lie inside the allocation");
    cr_assert_eq(cudaMemcpy(dst, src, 10, (enum cudaMemcpyKind)9),
                 cudaErrorInvalidMemcpyDirection);
    cr_assert_eq(cudaMemcpy(dst, src, 1000, cudaMemcpyHostToDevice), cudaErrorInvalidValue,
                 "a host pointer is not device memory");
    cr_assert_eq(cudaFree(d1), cudaSuccess);
    cr_assert_eq(cudaFree(d2), cudaSuccess);
}

Test(sim_copy, pitched_copy_and_set)
{
    total_for("1MiB");
    char *d = NULL;
    size_t pitch = 0;
    char host[4][100], back[4][100];
    for (int r = 0; r < 4; r++)
        memset(host[r], 'a' + r, 100);
    cr_assert_eq(cudaMallocPitch((void **)&d, &pitch, 100, 4), cudaSuccess);
    cr_assert_eq(pitch, 512);
    cr_assert_eq(cudaMemcpy2D(d, pitch, host, 100, 100, 4, cudaMemcpyHostToDevice), cudaSuccess);
    cr_assert_eq(d[2 * pitch + 99], 'c');
    cr_assert_eq(cudaMemset2D(d, pitch, 'z', 10, 4), cudaSuccess);
    cr_assert_eq(cudaMemcpy2D(back, 100, d, pitch, 100, 4, cudaMemcpyDeviceToHost), cudaSuccess);
    cr_assert_eq(back[3][9], 'z');
    cr_assert_eq(back[3][10], 'd');
    cr_assert_eq(cudaMemcpy2D(back, 50, d, pitch, 100, 4, cudaMemcpyDeviceToHost),
                 cudaErrorInvalidPitchValue);
    cr_assert_eq(cudaFree(d), cudaSuccess);
}

Test(sim_pointer, attributes_by_kind)
{
    total_for("1MiB");
    struct cudaPointerAttributes a;
    char *dev = NULL, *managed = NULL, *pinned = NULL;
    int on_stack;
    cr_assert_eq(cudaMalloc((void **)&dev, 4096), cudaSuccess);
    cr_assert_eq(cudaMallocManaged((void **)&managed, 4096, cudaMemAttachGlobal), cudaSuccess);
    cr_assert_eq(cudaMallocHost((void **)&pinned, 4096), cudaSuccess);

    cr_assert_eq(cudaPointerGetAttributes(&a, dev + 10), cudaSuccess);
    cr_assert_eq(a.type, cudaMemoryTypeDevice);
    cr_assert_eq(a.device, 0);
    cr_assert_eq(a.devicePointer, dev + 10);
    cr_assert_null(a.hostPointer);

    cr_assert_eq(cudaPointerGetAttributes(&a, managed), cudaSuccess);
    cr_assert_eq(a.type, cudaMemoryTypeManaged);
    cr_assert_eq(a.devicePointer, managed);
    cr_assert_eq(a.hostPointer, managed);

    cr_assert_eq(cudaPointerGetAttributes(&a, pinned), cudaSuccess);
    cr_assert_eq(a.type, cudaMemoryTypeHost);
    cr_assert_eq(a.hostPointer, pinned);

    cr_assert_eq(cudaPointerGetAttributes(&a, &on_stack), cudaSuccess);
    cr_assert_eq(a.type, cudaMemoryTypeUnregistered);
    cr_assert_null(a.devicePointer);

    cr_assert_eq(cudaFree(dev), cudaSuccess);
    cr_assert_eq(cudaPointerGetAttributes(&a, dev), cudaSuccess);
    cr_assert_eq(a.type, cudaMemoryTypeUnregistered, "freed memory is unknown again");
    cr_assert_eq(cudaFree(managed), cudaSuccess);
    cr_assert_eq(cudaFreeHost(pinned), cudaSuccess);
}

static void *churn(void *arg)
{
    (void)arg;
    for (int i = 0; i < 2000; i++) {
        void *p = NULL;
        if (cudaMalloc(&p, (size_t)(i % 7 + 1) * 1000) == cudaSuccess)
            cudaFree(p);
    }
    return NULL;
}

Test(sim_accounting, concurrent_alloc_and_free_balance)
{
    size_t total = total_for("1GiB");
    pthread_t t[8];
    for (int i = 0; i < 8; i++)
        pthread_create(&t[i], NULL, churn, NULL);
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    cr_assert_eq(free_now(), total);
}
