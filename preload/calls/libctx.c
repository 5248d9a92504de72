/* libctx.c — library calls: the thread's library context and the library of a code address.
 *
 * A hook of a library entry point (cuBLAS, cuBLASLt, NCCL: hooks/cublas.c, hooks/nccl.c)
 * brackets the real call in ana_lib_enter()/ana_lib_leave(). The outermost library call of
 * a thread gets the next call id (1, 2, ... per process) and becomes the thread's library
 * context until it returns: every API record made meanwhile (the workspace cuMemAlloc_v2,
 * the kernel launches, copies) carries its library and call id in `lib` and `call`, and
 * the library's own record (GEMM, COLL, COMM, LIBCALL) carries the same id. Library calls
 * nested in it (cuBLAS calling cuBLASLt) are forwarded unrecorded and keep the outer
 * context. Unlike ana_enter, the bracket is not held during the real call, so the CUDA
 * calls the library makes are recorded by their own hooks.
 *
 * An allocation outside any hooked library call is attributed by its caller instead: when
 * the code that called the allocation entry point lies in a library's module (libcudnn*,
 * libcublas*, libnccl*: they link the CUDA runtime statically), the record gets that
 * library and call 0. Addresses are classified once, by dladdr, and cached.
 *
 * Called by hooks/cublas.c and hooks/nccl.c (the bracket), calls.c (the context) and
 * lifecycle.c (fork); calls the core (session, rings, stacks, capture windows, clock). */
#define _GNU_SOURCE
#include "libctx.h"
#include "preload.h"

#include <dlfcn.h>
#include <errno.h>
#include <string.h>

__thread uint32_t ana_tls_lib __attribute__((tls_model("initial-exec")));
__thread uint64_t ana_tls_libcall __attribute__((tls_model("initial-exec")));
static __thread uint32_t tls_lib_depth __attribute__((tls_model("initial-exec")));
static _Atomic uint64_t next_call_id = 1;

int ana_lib_enter(ana_libcall *c, uint32_t lib)
{
    c->record = 0;
    c->outer = tls_lib_depth++ == 0;
    if (!c->outer || ana_tls_busy)
        return 0;
    int e = errno;
    ana_tls_busy = 1;
    int ok = ana_session_ensure(1) && (c->t = ana_thread_self()) != NULL;
    ana_tls_busy = 0;
    errno = e;
    if (!ok)
        return 0;
    c->record = 1;
    c->id = atomic_fetch_add_explicit(&next_call_id, 1, memory_order_relaxed);
    ana_tls_lib = lib;
    ana_tls_libcall = c->id;
    c->t0 = ana_now_ns();
    return 1;
}

void ana_lib_leave(ana_libcall *c)
{
    tls_lib_depth--;
    if (!c->record)
        return;
    c->saved_errno = errno;
    c->dur = ana_now_ns() - c->t0;
    ana_tls_lib = 0;
    ana_tls_libcall = 0;
    ana_tls_busy = 1;
    c->stack = ana_stack_capture();
}

void ana_lib_emit(ana_libcall *c, ana_record *rec)
{
    rec->time_ns = c->t0;
    /* Outside a capture window only communicators (definitions) are kept. */
    if (rec->kind == ANA_K_COMM || ana_capture_open_now())
        ana_emit(c->t, rec);
    ana_tls_busy = 0;
    errno = c->saved_errno;
}

void ana_lib_atfork_child(void) { tls_lib_depth = 0, ana_tls_lib = 0, ana_tls_libcall = 0; }

/* ---- the library of a code address ---- */

/* Open addressing on the address; a slot holds addr and lib + 1 (0: empty). Racing
 * writers may store the same answer twice or lose one: it is a cache. */
#define PC_SLOTS 4096u
static struct { _Atomic uintptr_t pc; _Atomic uint32_t lib1; } pcs[PC_SLOTS];

static uint32_t lib_of_path(const char *path)
{
    const char *base = path ? strrchr(path, '/') : NULL;
    base = base ? base + 1 : path;
    if (!base)
        return ANA_LIB_NONE;
    if (strncmp(base, "libcublasLt", 11) == 0)
        return ANA_LIB_CUBLASLT;
    if (strncmp(base, "libcublas", 9) == 0)
        return ANA_LIB_CUBLAS;
    if (strncmp(base, "libnccl", 7) == 0)
        return ANA_LIB_NCCL;
    if (strncmp(base, "libcudnn", 8) == 0)
        return ANA_LIB_CUDNN;
    return ANA_LIB_NONE;
}

/* The thread's recent answers, direct-mapped by address: a loop allocating and freeing
 * asks for the same few call sites over and over. */
#define PC_TLS 8u
static __thread struct { uintptr_t pc; uint32_t lib; } tls_pcs[PC_TLS] __attribute__((tls_model("initial-exec")));

static uint32_t lib_of_pc_shared(uintptr_t pc);

/* A miss of the thread's cache: the shared table's answer, kept in slot i. Apart, so that
 * a hit saves no registers. */
static __attribute__((noinline)) uint32_t lib_of_pc_miss(uintptr_t pc, uint32_t i)
{
    uint32_t lib = lib_of_pc_shared(pc);
    /* A signal handler's hook on this thread must never pair one address with another's
     * answer. */
    tls_pcs[i].pc = 0;
    atomic_signal_fence(memory_order_seq_cst);
    tls_pcs[i].lib = lib;
    atomic_signal_fence(memory_order_seq_cst);
    tls_pcs[i].pc = pc;
    return lib;
}

uint32_t ana_lib_of_pc(uintptr_t pc)
{
    if (!pc)
        return ANA_LIB_NONE;
    uint32_t i = (uint32_t)(pc ^ (pc >> 7)) & (PC_TLS - 1);
    if (ANA_LIKELY(tls_pcs[i].pc == pc))
        return tls_pcs[i].lib;
    return lib_of_pc_miss(pc, i);
}

static uint32_t lib_of_pc_shared(uintptr_t pc)
{
    uint32_t h = (uint32_t)((pc * 0x9E3779B97F4A7C15ull) >> 52) & (PC_SLOTS - 1);
    for (uint32_t i = 0; i < 8; i++) {
        uint32_t s = (h + i) & (PC_SLOTS - 1);
        uintptr_t k = atomic_load_explicit(&pcs[s].pc, memory_order_acquire);
        if (k == pc) {
            uint32_t l = atomic_load_explicit(&pcs[s].lib1, memory_order_relaxed);
            if (l)
                return l - 1;
            break;
        }
        if (k == 0)
            break;
    }
    Dl_info info;
    int e = errno;
    uint32_t lib = dladdr((void *)pc, &info) ? lib_of_path(info.dli_fname) : ANA_LIB_NONE;
    errno = e;
    for (uint32_t i = 0; i < 8; i++) {
        uint32_t s = (h + i) & (PC_SLOTS - 1);
        uintptr_t expected = 0;
        if (atomic_compare_exchange_strong(&pcs[s].pc, &expected, pc) || expected == pc) {
            atomic_store_explicit(&pcs[s].lib1, lib + 1, memory_order_relaxed);
            break;
        }
    }
    return lib;
}

void ana_lib_missing(const char *soname, const char *name, int *said)
{
    if (!__atomic_exchange_n(said, 1, __ATOMIC_RELAXED))
        ana_warn("cannot find %s in %s; returning the library's error to the caller", name, soname);
}
