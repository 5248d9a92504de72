/* kargs.c — the parameter words of a kernel launch that look like device pointers
 * (LAUNCH.ptrs / ptr_at, docs/trace-format.md; ANATOMIST_KERNEL_ARGS).
 *
 * A word is a candidate when it lies at an 8-byte-aligned offset of the parameter buffer,
 * wholly inside one parameter of 8 bytes or more (struct parameters included: frameworks
 * pass pointers inside structs); it is kept when its value lies in [lowest, highest) of
 * the device addresses the process's successful allocations and cuMemMap's have returned
 * so far (two relaxed atomics). At most ANA_KARGS_MAX words per launch, in offset order.
 *
 * Parameter layouts come from cudaFuncGetParamInfo (a host stub or cudaKernel_t) or
 * cuFuncGetParamInfo (a CUfunction), asked once per function on its first launch, inside
 * the caller's bracket (the re-entrancy guard is held) and under no lock of ours, and kept
 * in a fixed-size open-addressing table (mmap'ed once, never freed, no malloc): a slot's
 * key is claimed with a CAS, its layout filled, then published with a release store of
 * its state; readers that find a slot still being filled record no pointers this time.
 * A full table means no pointers for functions not in it.
 *
 * cudaFuncGetParamInfo sets the runtime's per-thread last error when asked past the last
 * parameter (which is how the count is found). A layout is therefore read only when no
 * error is pending (cudaPeekAtLastError), and the error our query left is then cleared
 * (cudaGetLastError): the program's own last error is never lost or invented. The
 * driver's query leaves the runtime's last error alone.
 *
 * Called by calls.c (the builders of LAUNCH and MEMCPY); calls the CUDA runtime and driver
 * (parameter layouts, through dl_real.c) and the core's configuration and ana_reserve. */
#define _GNU_SOURCE
#include "calls.h"
#include "preload.h"

#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#define SLOT_BITS 12
#define SLOTS (1u << SLOT_BITS)
#define MAX_PROBE 64
#define WIDE_MAX 64          /* parameters of 8+ bytes kept per function */
#define PARAMS_MAX 8192      /* a parameter buffer holds at most 32764 bytes */

enum { SLOT_EMPTY, SLOT_FILLING, SLOT_READY };

struct wide {
    uint16_t index, offset, size;
};
struct layout {
    _Atomic uintptr_t key;
    _Atomic uint32_t state;
    uint32_t n;
    struct wide w[WIDE_MAX];
};

static struct layout *_Atomic table;
static _Atomic uint64_t dev_lo = UINT64_MAX, dev_hi;

void ana_kargs_note_range(uint64_t ptr, uint64_t size)
{
    if (!ptr || !size)
        return;
    uint64_t lo = atomic_load_explicit(&dev_lo, memory_order_relaxed);
    while (ptr < lo && !atomic_compare_exchange_weak_explicit(&dev_lo, &lo, ptr, memory_order_relaxed,
                                                              memory_order_relaxed))
        ;
    uint64_t end = ptr + size, hi = atomic_load_explicit(&dev_hi, memory_order_relaxed);
    while (end > hi && !atomic_compare_exchange_weak_explicit(&dev_hi, &hi, end, memory_order_relaxed,
                                                              memory_order_relaxed))
        ;
}

static struct layout *get_table(void)
{
    struct layout *t = atomic_load_explicit(&table, memory_order_acquire);
    if (ANA_LIKELY(t))
        return t;
    size_t bytes = sizeof(struct layout) * SLOTS;
    void *p = ana_reserve(bytes);
    if (!p)
        return NULL;
    struct layout *expected = NULL;
    if (!atomic_compare_exchange_strong_explicit(&table, &expected, (struct layout *)p, memory_order_acq_rel,
                                                 memory_order_acquire)) {
        munmap(p, bytes);
        return expected;
    }
    return p;
}

typedef int (*param_info_fn)(const void *fn, size_t index, size_t *offset, size_t *size);

/* The real query functions, resolved once; NULL when the library has none. */
static param_info_fn rt_info(void)
{
    static void *_Atomic f;
    void *p = atomic_load_explicit(&f, memory_order_relaxed);
    if (!p) {
        p = ana_resolve("cudaFuncGetParamInfo");
        atomic_store_explicit(&f, p, memory_order_relaxed);
    }
    return (param_info_fn)p;
}

static param_info_fn drv_info(void)
{
    static void *_Atomic f;
    void *p = atomic_load_explicit(&f, memory_order_relaxed);
    if (!p) {
        p = ana_dl_real_sym("libcuda.so.1", NULL, "cuFuncGetParamInfo");
        atomic_store_explicit(&f, p, memory_order_relaxed);
    }
    return (param_info_fn)p;
}

typedef cudaError_t (*last_error_fn)(void);
static last_error_fn rt_error(const char *name, void *_Atomic *cache)
{
    void *p = atomic_load_explicit(cache, memory_order_relaxed);
    if (!p) {
        p = ana_resolve(name);
        atomic_store_explicit(cache, p, memory_order_relaxed);
    }
    return (last_error_fn)p;
}
static void *_Atomic peek_fn, *_Atomic get_fn;

/* 1 when a runtime query may run now: no last error of the program's is pending. */
static int runtime_quiet(void)
{
    last_error_fn peek = rt_error("cudaPeekAtLastError", &peek_fn);
    return peek && rt_error("cudaGetLastError", &get_fn) && peek() == cudaSuccess;
}

/* Asks for every parameter until the query fails; keeps those of 8 bytes or more. */
static void read_layout(struct layout *l, const void *fn, int driver)
{
    param_info_fn info = driver ? drv_info() : rt_info();
    l->n = 0;
    for (size_t i = 0; info && i < PARAMS_MAX && l->n < WIDE_MAX; i++) {
        size_t off = 0, size = 0;
        if (info(fn, i, &off, &size) != 0)
            break;
        if (size >= 8 && off + size <= 0xffff)
            l->w[l->n++] = (struct wide){ (uint16_t)i, (uint16_t)off, (uint16_t)size };
    }
    if (!driver)
        rt_error("cudaGetLastError", &get_fn)();   /* the error our last query left */
}

static uint32_t slot_of(uintptr_t key) { return (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> (64 - SLOT_BITS)); }

/* The ready layout of fn, reading it when fn is new; NULL when none is available now. */
static const struct layout *layout_of(const void *fn, int driver)
{
    struct layout *t = get_table();
    /* Keyed by function and query: a CUfunction may share its value with a runtime
     * handle (the sim's do), and each is asked of the API it belongs to. */
    uintptr_t key = (uintptr_t)fn << 1 | (uintptr_t)(driver != 0);
    for (uint32_t i = 0, s = slot_of(key); t && i < MAX_PROBE; i++, s = (s + 1) & (SLOTS - 1)) {
        struct layout *l = &t[s];
        uintptr_t k = atomic_load_explicit(&l->key, memory_order_acquire);
        if (k == 0) {
            if (!driver && !runtime_quiet())
                return NULL;  /* try again at a later launch */
            if (!atomic_compare_exchange_strong_explicit(&l->key, &k, key, memory_order_acq_rel,
                                                         memory_order_acquire)) {
                if (k != key)
                    continue;
            } else {
                atomic_store_explicit(&l->state, SLOT_FILLING, memory_order_relaxed);
                read_layout(l, fn, driver);
                atomic_store_explicit(&l->state, SLOT_READY, memory_order_release);
                return l;
            }
        }
        if (k == key)
            return atomic_load_explicit(&l->state, memory_order_acquire) == SLOT_READY ? l : NULL;
    }
    return NULL;
}

/* Appends the kept words of one parameter (bytes [off, off + size) of the buffer, its
 * value at `value`); returns the new count. At ANA_KARGS_MAX words it stops, or, with
 * `more`, goes on counting the further ones there. */
static uint32_t scan_param(const uint8_t *value, uint32_t off, uint32_t size, uint64_t lo, uint64_t hi,
                           uint64_t *ptrs, uint64_t *at, uint32_t n, uint64_t *more)
{
    for (uint32_t a = (off + 7) & ~7u; a + 8 <= off + size; a += 8) {
        uint64_t v;
        memcpy(&v, value + (a - off), sizeof(v));
        if (v >= lo && v < hi) {
            if (n == ANA_KARGS_MAX) {
                if (!more)
                    break;
                (*more)++;
                continue;
            }
            ptrs[n] = v;
            at[n++] = a;
        }
    }
    return n;
}

uint32_t ana_kargs_collect(const ana_launch_args *la, uint64_t *ptrs, uint64_t *at)
{
    if (!la || !la->fn || !la->args || !ana_cfg.kernel_args)
        return 0;
    uint64_t lo = atomic_load_explicit(&dev_lo, memory_order_relaxed);
    uint64_t hi = atomic_load_explicit(&dev_hi, memory_order_relaxed);
    if (lo >= hi)
        return 0;  /* nothing allocated yet: no word can be a device pointer */
    const struct layout *l = layout_of(la->fn, la->driver);
    uint32_t n = 0;
    for (uint32_t i = 0; l && i < l->n && n < ANA_KARGS_MAX; i++) {
        const uint8_t *value = la->args[l->w[i].index];
        if (value)
            n = scan_param(value, l->w[i].offset, l->w[i].size, lo, hi, ptrs, at, n, NULL);
    }
    return n;
}

uint32_t ana_kargs_scan_host(uint64_t src, uint64_t bytes, int direct, uint64_t *ptrs, uint64_t *at,
                             uint64_t *more)
{
    *more = 0;
    uint64_t lo = atomic_load_explicit(&dev_lo, memory_order_relaxed);
    uint64_t hi = atomic_load_explicit(&dev_hi, memory_order_relaxed);
    /* The device range is only the span from the lowest allocation to the end of the
     * highest: host memory can lie inside it (the simulated device's allocations are host
     * mappings among the program's; an ASan fake stack between two of them held a table
     * that was skipped). A host-to-device source inside it is read with care, not skipped;
     * a cudaMemcpyDefault source inside it may be device memory and is left alone. */
    int inside = src < hi && src + bytes > lo;
    if (!ana_cfg.kernel_args || !src || bytes < 8 || bytes > ANA_KARGS_TABLE_BYTES || lo >= hi ||
        (inside && !direct))
        return 0;
    if (direct && !inside) /* host memory the copy has just read */
        return scan_param((const uint8_t *)(uintptr_t)src, 0, (uint32_t)bytes, lo, hi, ptrs, at, 0, more);
    uint8_t buf[4096];
    uint32_t n = 0;
    for (uint64_t off = 0; off + 8 <= bytes; off += sizeof(buf)) {
        size_t len = bytes - off < sizeof(buf) ? (size_t)(bytes - off) : sizeof(buf);
        struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)(src + off), len };
        if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != (ssize_t)len)
            return 0; /* not readable (or not all of it): no table */
        n = scan_param(buf, (uint32_t)off, (uint32_t)len, lo, hi, ptrs, at, n, more);
    }
    return n;
}
