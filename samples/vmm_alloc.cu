// vmm_alloc — device memory obtained the way PyTorch's `expandable_segments` allocator
// obtains it: through the CUDA driver's virtual memory management (VMM) calls, with entry
// points resolved at run time, never linked.
//
// A large virtual address range is reserved once; a "segment" at its start grows by
// mapping physical chunks (cuMemCreate + cuMemMap + cuMemSetAccess) and shrinks by
// unmapping and releasing its upper chunks (cuMemUnmap + cuMemRelease). Kernels launched
// through the runtime write the mapped memory. Around it: one plain cuMemAlloc_v2 /
// cuMemFree_v2 pair and one cudaMalloc / cudaFree pair, so that device memory comes from
// three APIs at once. The program keeps its own ledger (driver calls, physical bytes,
// peaks, launches) and prints it as JSON on the last stdout line; a test compares the
// profiler's report with it.
//
//   vmm_alloc [--lookup dlsym|getproc|entrypoint] [--check]
//
// --lookup: how driver entry points are found. dlsym (default): dlopen("libcuda.so.1")
// and dlsym of each versioned name; getproc: cuGetProcAddress_v2 (itself from dlsym);
// entrypoint: the runtime's cudaGetDriverEntryPointByVersion (no dlopen at all).
// --check copies the segment back and verifies what the kernel wrote (meaningful on a
// real GPU only: the simulated device does not execute kernels).
//
// <cuda.h> is included for its types and prototypes only (decltype); libcuda is never
// linked, as in PyTorch.
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sample_common.h"

#define MIB (1024ull * 1024)
static const size_t RESERVE_BYTES = 1024 * MIB;  // virtual range, like a segment's reserve
static const size_t CHUNK_WANTED = 20 * MIB;     // rounded up to the granularity
static const size_t PLAIN_DRIVER_BYTES = 8 * MIB;  // the cuMemAlloc_v2 buffer
static const size_t RUNTIME_BYTES = 4 * MIB;       // the cudaMalloc buffer
#define MAX_CHUNKS 8
#define MAX_LAUNCHES 8

// ---------------------------------------------------------------- driver entry points

enum { GRANULARITY, RESERVE, ADDRESS_FREE, CREATE, RELEASE, MAP, UNMAP, SET_ACCESS,
       MEM_ALLOC, MEM_FREE, NENTRIES };

// symbol: the exported (versioned) name dlsym needs; base: the name cuGetProcAddress and
// cudaGetDriverEntryPointByVersion take, which pick the version from the CUDA version.
static struct { const char *symbol, *base; void *fn; long calls; } drv[NENTRIES] = {
    {"cuMemGetAllocationGranularity", "cuMemGetAllocationGranularity", NULL, 0},
    {"cuMemAddressReserve", "cuMemAddressReserve", NULL, 0},
    {"cuMemAddressFree", "cuMemAddressFree", NULL, 0},
    {"cuMemCreate", "cuMemCreate", NULL, 0},
    {"cuMemRelease", "cuMemRelease", NULL, 0},
    {"cuMemMap", "cuMemMap", NULL, 0},
    {"cuMemUnmap", "cuMemUnmap", NULL, 0},
    {"cuMemSetAccess", "cuMemSetAccess", NULL, 0},
    {"cuMemAlloc_v2", "cuMemAlloc", NULL, 0},
    {"cuMemFree_v2", "cuMemFree", NULL, 0},
};

static const char *lookup = "dlsym";
static long lookup_calls;  // dlsym / cuGetProcAddress_v2 / cudaGetDriverEntryPoint... calls

static void resolve_entry_points(void)
{
    void *lib = NULL;
    decltype(&cuGetProcAddress_v2) get_proc = NULL;
    if (strcmp(lookup, "entrypoint") != 0) {
        lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!lib)
            fatal("vmm_alloc: dlopen(libcuda.so.1): %s", dlerror());
    }
    if (!strcmp(lookup, "getproc")) {
        get_proc = (decltype(&cuGetProcAddress_v2))dlsym(lib, "cuGetProcAddress_v2");
        lookup_calls++;
        if (!get_proc)
            fatal("vmm_alloc: dlsym(cuGetProcAddress_v2): %s", dlerror());
    }
    for (int i = 0; i < NENTRIES; i++) {
        lookup_calls++;
        if (!strcmp(lookup, "dlsym")) {
            if (!(drv[i].fn = dlsym(lib, drv[i].symbol)))
                fatal("vmm_alloc: dlsym(%s): %s", drv[i].symbol, dlerror());
        } else if (get_proc) {
            CUdriverProcAddressQueryResult q = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
            CUresult r = get_proc(drv[i].base, &drv[i].fn, CUDA_VERSION,
                                  CU_GET_PROC_ADDRESS_DEFAULT, &q);
            if (r != CUDA_SUCCESS || q != CU_GET_PROC_ADDRESS_SUCCESS || !drv[i].fn)
                fatal("vmm_alloc: cuGetProcAddress_v2(%s): CUresult %d, query result %d",
                      drv[i].base, (int)r, (int)q);
        } else {
            cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
            cudaError_t e = cudaGetDriverEntryPointByVersion(drv[i].base, &drv[i].fn,
                                                             CUDART_VERSION, cudaEnableDefault, &q);
            if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || !drv[i].fn)
                fatal("vmm_alloc: cudaGetDriverEntryPointByVersion(%s): %s, query result %d",
                      drv[i].base, cudaGetErrorString(e), (int)q);
        }
    }
    // lib stays open: the entry points live in it.
}

// DRIVER(id, prototype, args...): call entry point `id` with the type of `prototype`,
// count the call, and die on any error.
static void driver_check(int id, CUresult r)
{
    drv[id].calls++;
    if (r != CUDA_SUCCESS)
        fatal("vmm_alloc: %s failed: CUresult %d", drv[id].symbol, (int)r);
}
#define DRIVER(id, proto, ...) driver_check(id, ((decltype(&proto))drv[id].fn)(__VA_ARGS__))

// ---------------------------------------------------------------- the ledger

static struct {
    size_t granularity, chunk_bytes;
    size_t phys_created, phys_released, phys_live, phys_peak;
    size_t driver_alloc_bytes, runtime_alloc_bytes;
    size_t dev_live, dev_peak;  // physical chunks + cuMemAlloc + cudaMalloc
    size_t check_d2h_bytes;
    struct { const char *kernel; dim3 grid, block; } launches[MAX_LAUNCHES];
    int nlaunches;
} ledger;

static void dev_charge(size_t bytes)
{
    ledger.dev_live += bytes;
    if (ledger.dev_live > ledger.dev_peak)
        ledger.dev_peak = ledger.dev_live;
}

static void print_ledger(void)
{
    printf("ledger {\"lookup\":\"%s\",\"lookup_calls\":%ld,\"granularity\":%zu,"
           "\"chunk_bytes\":%zu,\"reserved_bytes\":%zu,\"driver_calls\":{",
           lookup, lookup_calls, ledger.granularity, ledger.chunk_bytes, RESERVE_BYTES);
    for (int i = 0; i < NENTRIES; i++)
        printf("%s\"%s\":%ld", i ? "," : "", drv[i].symbol, drv[i].calls);
    printf("},\"physical_created_bytes\":%zu,\"physical_released_bytes\":%zu,"
           "\"physical_peak_bytes\":%zu,\"cuMemAlloc_bytes\":%zu,\"cudaMalloc_bytes\":%zu,"
           "\"device_peak_bytes\":%zu,\"live_at_exit_bytes\":%zu,\"check_d2h_bytes\":%zu,"
           "\"launches\":[",
           ledger.phys_created, ledger.phys_released, ledger.phys_peak,
           ledger.driver_alloc_bytes, ledger.runtime_alloc_bytes, ledger.dev_peak,
           ledger.dev_live, ledger.check_d2h_bytes);
    for (int i = 0; i < ledger.nlaunches; i++) {
        dim3 g = ledger.launches[i].grid, b = ledger.launches[i].block;
        printf("%s{\"kernel\":\"%s\",\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u]}", i ? "," : "",
               ledger.launches[i].kernel, g.x, g.y, g.z, b.x, b.y, b.z);
    }
    printf("]}\n");
    fflush(stdout);
}

// ---------------------------------------------------------------- kernel

// p[i] = seed ^ i over n words, grid-stride so any grid covers any n.
extern "C" __global__ void fill_words(unsigned *p, size_t n, unsigned seed)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = seed ^ (unsigned)i;
}

static void fill(CUdeviceptr ptr, size_t bytes, unsigned seed, dim3 grid, dim3 block)
{
    fill_words<<<grid, block>>>((unsigned *)ptr, bytes / sizeof(unsigned), seed);
    CUDA_CHECK(cudaGetLastError());
    if (ledger.nlaunches == MAX_LAUNCHES)
        fatal("vmm_alloc: too many launches");
    ledger.launches[ledger.nlaunches].kernel = "fill_words";
    ledger.launches[ledger.nlaunches].grid = grid;
    ledger.launches[ledger.nlaunches++].block = block;
}

static int check_fill(CUdeviceptr ptr, size_t bytes, unsigned seed)
{
    size_t n = bytes / sizeof(unsigned), bad = 0;
    unsigned *h = (unsigned *)malloc(bytes);
    if (!h)
        fatal("vmm_alloc: out of host memory");
    CUDA_CHECK(cudaMemcpy(h, (void *)ptr, bytes, cudaMemcpyDeviceToHost));
    ledger.check_d2h_bytes += bytes;
    for (size_t i = 0; i < n; i++)
        bad += h[i] != (seed ^ (unsigned)i);
    free(h);
    printf("check %s: %zu of %zu words wrong\n", bad ? "FAILED" : "passed", bad, n);
    return bad != 0;
}

// ---------------------------------------------------------------- the segment

static CUdeviceptr base;  // start of the reserved range; the segment grows from here
static CUmemGenericAllocationHandle chunks[MAX_CHUNKS];
static int nchunks;
static CUmemAllocationProp prop;

static void grow(void)  // map one more physical chunk at the segment's end
{
    if (nchunks == MAX_CHUNKS)
        fatal("vmm_alloc: segment full");
    CUdeviceptr at = base + nchunks * ledger.chunk_bytes;
    CUmemAccessDesc access = {};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    DRIVER(CREATE, cuMemCreate, &chunks[nchunks], ledger.chunk_bytes, &prop, 0ull);
    DRIVER(MAP, cuMemMap, at, ledger.chunk_bytes, (size_t)0, chunks[nchunks], 0ull);
    DRIVER(SET_ACCESS, cuMemSetAccess, at, ledger.chunk_bytes, &access, (size_t)1);
    nchunks++;
    ledger.phys_created += ledger.chunk_bytes;
    ledger.phys_live += ledger.chunk_bytes;
    if (ledger.phys_live > ledger.phys_peak)
        ledger.phys_peak = ledger.phys_live;
    dev_charge(ledger.chunk_bytes);
}

static void shrink(void)  // unmap and release the segment's last chunk
{
    nchunks--;
    DRIVER(UNMAP, cuMemUnmap, base + nchunks * ledger.chunk_bytes, ledger.chunk_bytes);
    DRIVER(RELEASE, cuMemRelease, chunks[nchunks]);
    ledger.phys_released += ledger.chunk_bytes;
    ledger.phys_live -= ledger.chunk_bytes;
    ledger.dev_live -= ledger.chunk_bytes;
}

// ---------------------------------------------------------------- main

int main(int argc, char **argv)
{
    int check = 0, failures = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--check"))
            check = 1;
        else if (!strcmp(argv[i], "--lookup") && i + 1 < argc &&
                 (!strcmp(argv[i + 1], "dlsym") || !strcmp(argv[i + 1], "getproc") ||
                  !strcmp(argv[i + 1], "entrypoint")))
            lookup = argv[++i];
        else
            fatal("usage: vmm_alloc [--lookup dlsym|getproc|entrypoint] [--check]");
    }

    // The runtime creates and makes current the primary context the driver calls use.
    int device = 0;
    CUDA_CHECK(cudaSetDevice(0));
    CUDA_CHECK(cudaGetDevice(&device));
    void *runtime_buf = NULL;
    CUDA_CHECK(cudaMalloc(&runtime_buf, RUNTIME_BYTES));
    ledger.runtime_alloc_bytes += RUNTIME_BYTES;
    dev_charge(RUNTIME_BYTES);

    resolve_entry_points();
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    DRIVER(GRANULARITY, cuMemGetAllocationGranularity, &ledger.granularity, &prop,
           CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    if (ledger.granularity == 0 || RESERVE_BYTES % ledger.granularity != 0)
        fatal("vmm_alloc: unexpected granularity %zu", ledger.granularity);
    size_t g = ledger.granularity;
    ledger.chunk_bytes = (CHUNK_WANTED + g - 1) / g * g;
    DRIVER(RESERVE, cuMemAddressReserve, &base, RESERVE_BYTES, (size_t)0, (CUdeviceptr)0, 0ull);

    // Grow to three chunks; with the driver's plain buffer this is the device peak.
    for (int i = 0; i < 3; i++)
        grow();
    CUdeviceptr driver_buf = 0;
    DRIVER(MEM_ALLOC, cuMemAlloc_v2, &driver_buf, PLAIN_DRIVER_BYTES);
    ledger.driver_alloc_bytes += PLAIN_DRIVER_BYTES;
    dev_charge(PLAIN_DRIVER_BYTES);

    size_t segment = nchunks * ledger.chunk_bytes;
    fill(base, segment, 0x1234u, dim3(480), dim3(256));
    fill(driver_buf, PLAIN_DRIVER_BYTES, 0x5678u, dim3(64), dim3(128));
    fill((CUdeviceptr)runtime_buf, RUNTIME_BYTES, 0x9abcu, dim3(32), dim3(64));
    CUDA_CHECK(cudaDeviceSynchronize());
    if (check)
        failures += check_fill(base, segment, 0x1234u);
    DRIVER(MEM_FREE, cuMemFree_v2, driver_buf);
    ledger.dev_live -= PLAIN_DRIVER_BYTES;

    // Shrink to one chunk (the allocator synchronizes before unmapping), grow back to
    // two: more physical bytes are created in all than are ever live at once.
    shrink();
    shrink();
    grow();
    segment = nchunks * ledger.chunk_bytes;
    fill(base, segment, 0xdef0u, dim3(240), dim3(256));
    CUDA_CHECK(cudaDeviceSynchronize());
    if (check)
        failures += check_fill(base, segment, 0xdef0u);

    CUDA_CHECK(cudaFree(runtime_buf));
    ledger.dev_live -= RUNTIME_BYTES;
    while (nchunks > 0)
        shrink();
    DRIVER(ADDRESS_FREE, cuMemAddressFree, base, RESERVE_BYTES);
    print_ledger();
    return failures ? 1 : 0;
}
