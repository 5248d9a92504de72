/* preload.h — internal contract of libanatomist.so (never installed, never exported).
 *
 * Threads: application threads run hooks; they only capture and append encoded records
 * to their own ring (tbuf), touching no lock and no malloc. One collector thread drains
 * the rings, emits definitions (kernels, stacks, threads, modules), compresses and writes.
 * Every hook brackets its work in ana_enter()/ana_leave(), which guard re-entrancy,
 * preserve errno, and start the session on the first CUDA call of the process. */
#ifndef ANA_PRELOAD_H
#define ANA_PRELOAD_H

#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "config.h"
#include "live.h"
#include "records.h"

#define ANA_EXPORT __attribute__((visibility("default")))
#define ANA_HIDDEN __attribute__((visibility("hidden")))
#define ANA_LIKELY(x) __builtin_expect(!!(x), 1)
#define ANA_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ---- clock.c: the time of every record, CLOCK_MONOTONIC nanoseconds ----
 * Where the TSC is invariant, a reading is the TSC mapped onto CLOCK_MONOTONIC by the line
 * below (within ~1 us of clock_gettime; a thread's readings never go backwards); else a
 * clock_gettime call. Any thread, any time, hot path: no lock, no write, no libm. */
#define ANA_CLOCK_SHIFT 32
typedef struct ana_clock_line {
    _Atomic uint32_t seq;      /* seqlock: odd while the line is being redrawn */
    _Atomic uint64_t base_tsc, base_ns, mult;
    _Atomic uint64_t limit;    /* ticks past base_tsc the line is drawn for; 0 = no line */
} ana_clock_line;
extern ana_clock_line ana_clk ANA_HIDDEN;
/* Every reading the line cannot give (none yet, expired, no TSC). */
uint64_t ana_clock_slow(void);
/* Redraws the line when half its interval has gone (the collector, at each pass), so that
 * the hooks rarely find it expired; on the first call, sees whether the TSC can be used. */
void ana_clock_refresh(void);
/* 1 when readings come from the TSC (0 before the first millisecond of calibration). */
int ana_clock_uses_tsc(void);
/* Tests: readings come from clock_gettime from now on. */
void ana_clock_force_syscall(void);
void ana_clock_atfork_child(void);
/* Tests only: called by the thread redrawing the line, between reading its pair and
 * publishing (a refresher preempted there). NULL in the preload. */
extern void (*ana_clock_redraw_hook)(void);

static inline uint64_t ana_now_ns(void)
{
#if defined(__x86_64__)
    uint32_t s = atomic_load_explicit(&ana_clk.seq, memory_order_acquire);
    uint64_t d = __builtin_ia32_rdtsc() - atomic_load_explicit(&ana_clk.base_tsc, memory_order_relaxed);
    uint64_t ns = atomic_load_explicit(&ana_clk.base_ns, memory_order_relaxed) +
                  (uint64_t)(((unsigned __int128)d * atomic_load_explicit(&ana_clk.mult, memory_order_relaxed)) >>
                             ANA_CLOCK_SHIFT);
    uint64_t limit = atomic_load_explicit(&ana_clk.limit, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (ANA_LIKELY(d < limit && atomic_load_explicit(&ana_clk.seq, memory_order_relaxed) == s && !(s & 1)))
        return ns;
#endif
    return ana_clock_slow();
}

/* ---- lifecycle.c ---- */
extern ana_config ana_cfg;
/* 1 while records are being collected. */
extern _Atomic int ana_active;

/* Says `msg` once on stderr ("anatomist: ...") and stops collecting; the app runs on. */
void ana_disable(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints a warning line on stderr (configuration mistakes), never more than 8 per process. */
void ana_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Starts the trace on the first recorded call, and CUPTI on the first call that needs a
 * device (`device`): registration never calls it, so the preload never initialises the
 * driver before the program does. Returns 1 when records may be appended. */
int ana_session_ensure(int device);
/* The preload's own text range, so stacks can skip its frames. */
extern uintptr_t ana_self_lo, ana_self_hi;

/* ---- tbuf.c: per-thread rings ----
 * A ring and its counters are a slot (format/live.h): in the live file when there is one,
 * so that what a thread appended outlives the process. head, dropped and dropped_bytes are
 * the thread's; tail (released once the records are in the live file's staging area, or
 * written) and the rest are the collector's. */
typedef struct ana_thread {
    ana_live_slot *ls;
    uint8_t *ring;
    uint64_t size;         /* power of two */
    uint64_t prev_ns;      /* producer: time of the last appended record */
    _Atomic int state;     /* ANA_T_* */
    _Atomic int kicked;    /* the collector was woken for this ring filling up */
    uint64_t tid;
    /* collector-owned */
    uint64_t c_prev_ns, c_snap, c_drop, c_dropb;
    int c_state, c_named;
    struct ana_thread *next;
} ana_thread;

enum { ANA_T_FREE = 0, ANA_T_LIVE = 1, ANA_T_DEAD = 2, ANA_T_CLAIMING = 3 };

/* Bytes of each thread's ring: ANATOMIST_BUFFER_KB rounded up to a power of two. */
uint64_t ana_ring_size(void);
/* The calling thread's buffer, registering it on first use; NULL if none can be had. */
ana_thread *ana_thread_self(void);
/* The calling thread's buffer once registered, else NULL (what ana_thread_self reads first). */
extern __thread ana_thread *ana_tls_self ANA_HIDDEN __attribute__((tls_model("initial-exec")));
/* Encodes rec (rec->time_ns set by caller) into t's ring; counts a drop when full. */
void ana_emit(ana_thread *t, const ana_record *rec);
/* Head of the registry list (collector walks it; entries are never unlinked). */
ana_thread *ana_thread_list(void);
/* After fork in the child: forget every buffer (the parent writes what they hold; slots in
 * the parent's live file are not mapped in the child). */
void ana_threads_atfork_child(void);

/* ---- live.c: the live file beside the trace (format/live.h) ---- */
/* Creates TRACE.live for the trace with this id; slots will hold rings of ring_size bytes,
 * the staging area stage_size. 0, or -1 (then rings live in anonymous memory; said once). */
int ana_live_open(const char *trace_path, uint64_t trace_id, uint64_t ring_size, uint64_t stage_size);
/* Collector: the staging area (the payload of the chunk being built; *size bytes), NULL
 * without a live file. begin: the stage now fills chunk seq from its start; publish: its
 * first len bytes are whole records of that chunk. */
uint8_t *ana_live_stage(uint64_t *size);
void ana_live_stage_begin(uint64_t seq);
void ana_live_stage_publish(uint64_t len);
/* A slot with a ring of ring_size bytes after its header: in the live file when it can
 * grow, else in anonymous memory. NULL only when no memory can be had. */
ana_live_slot *ana_live_slot_new(uint64_t ring_size);
/* Mirrors a STACK or KERNEL definition into the live file's definitions ring. */
void ana_live_def(const ana_record *r);
/* Collector: the ring's head now, and, once everything defined before it is in the trace,
 * its commit. */
uint64_t ana_live_defs_snapshot(void);
void ana_live_defs_commit(uint64_t head);
/* The END a reader must give the trace (writing it failed). 1 when there is a live file. */
int ana_live_set_end(uint64_t reason, const char *detail);
/* The trace ended cleanly: the live file goes. */
void ana_live_finish(void);
/* Collector, each pass: 0, or -1 once the file was cut under us (truncated by someone
 * else, or gone): every mapping is then anonymous memory and what it held is lost. */
int ana_live_check(void);
void ana_live_atfork_child(void);
/* posix_fallocate that fails with EFBIG past RLIMIT_FSIZE instead of raising SIGXFSZ. */
int ana_file_grow(int fd, uint64_t off, uint64_t len);
/* Holds SIGXFSZ back on the calling thread around file writes made on a program's thread;
 * release consumes a SIGXFSZ they raised (one the program had pending stays). errno kept. */
typedef struct ana_xfsz {
    sigset_t old;
    int had;
} ana_xfsz;
void ana_xfsz_hold(ana_xfsz *x);
void ana_xfsz_release(ana_xfsz *x);

/* ---- ofile.c: the preload's own descriptors (the trace, the live file) ----
 * Placed high and checked before each use: a program that closes or reuses descriptor
 * numbers never gets our writes, and never has its file closed by us. Not for the hot path
 * (fstat per use); no locking of its own. */
typedef struct ana_ofile {
    int fd;
    dev_t dev;
    ino_t ino;
    char path[1100];
} ana_ofile;
/* Takes fd (opened on path) as ours, moved to a high number; returns the number, -1 on a
 * bad fd. errno kept. */
int ana_ofile_adopt(ana_ofile *f, int fd, const char *path);
/* The descriptor, still naming the file that was adopted, or reopened by its path (and
 * checked to be that same file); -1 when the file is gone. errno kept. */
int ana_ofile_fd(ana_ofile *f);
/* Closes the descriptor if it is still ours (never the program's). */
void ana_ofile_close(ana_ofile *f);
/* fd moved to the lowest free number >= floor (close-on-exec), the old number closed; fd
 * itself when it is already there or no such number is free. errno kept. */
int ana_fd_raise(int fd, int floor);

/* ---- stacks.c ---- */
/* Anonymous memory of that many bytes, reserved (pages come on first touch); NULL when
 * none can be had. Never freed: the tables of the process. */
void *ana_reserve(size_t bytes);
/* Loads the unwinder; returns 0 or -1 (stacks then stay off). */
int ana_stacks_init(void);
/* Captures the caller's stack (skipping the preload's frames) and returns its interned id,
 * or 0 when stacks are off or unavailable. Hot path: no malloc, no lock. */
uint64_t ana_stack_capture(void);
/* The id of these frames, defining a new one if needed; 0 when the tables are full. */
uint64_t ana_stack_intern(const uint64_t *ips, uint32_t n);
/* Collector: calls fn for each stack defined since the last call, in id order. */
void ana_stacks_emit_new(void (*fn)(uint64_t id, const uint64_t *ips, uint32_t n, void *arg), void *arg);
void ana_stacks_atfork_child(void);
/* Collector: emit(id) for each id in [*cursor, end) not yet emitted whose entry is
 * ready, marking it; *cursor moves past the ids done in a row (stacks, Python code). */
void ana_defs_emit(uint32_t *cursor, uint32_t end, uint8_t *emitted, int (*ready)(uint32_t id),
                   void (*emit)(uint32_t id, void *arg), void *arg);
/* The frames of a defined id (any thread): their count, 0 for an unknown id. */
uint32_t ana_stack_frames(uint64_t id, const uint64_t **ips);

/* ---- pyframes.c: Python frames in stacks (docs/trace-format.md "Python frames") ---- */
/* 1 once the running CPython's frames can be read. */
extern _Atomic int ana_py_on;
/* Finds the interpreter (none: stays off silently; an unsupported one: says so once). */
void ana_py_init(void);
/* The id of native_id's frames followed by the calling thread's Python frames (native_id
 * itself when the thread runs no Python). Hot path: no malloc, no lock. */
uint64_t ana_py_extend(uint64_t native_id);
/* Collector: a PYCODE record for each code object defined since the last call. */
void ana_py_emit_new(void (*fn)(const ana_record *r, void *arg), void *arg);
/* The python.* INFO pairs of the trace (none outside Python). */
void ana_py_info(void (*fn)(const char *key, const char *value, void *arg), void *arg);
void ana_py_atfork_child(void);

/* ---- kernels.c ---- */
void ana_kernel_register(const void *host_fn, const char *name);
void ana_kernel_map_handle(const void *handle, const void *host_fn);
uint64_t ana_kernel_id_of_fn(const void *host_fn);
uint64_t ana_kernel_id_of_handle(const void *handle);
void ana_kernels_emit_new(void (*fn)(uint64_t id, uint64_t host_fn, const char *name, void *arg), void *arg);
void ana_kernels_atfork_child(void);
/* Collector thread only: the id of the kernel called `name` (a GPU activity record's
 * kernel): a registered kernel's id if one has that name, else a new entry with host_fn 0
 * (written as a KERNEL record by the next ana_kernels_emit_new). 0 when the tables are full. */
uint64_t ana_kernel_intern_name(const char *name);

/* ---- modules.c ---- */
/* Collector: calls fn for each loaded module not reported yet (all of them after reset). */
void ana_modules_emit_new(void (*fn)(const ana_rec_module *m, void *arg), void *arg);
void ana_modules_reset(void);
/* Finds the preload's own address range. */
void ana_modules_find_self(const void *addr, uintptr_t *lo, uintptr_t *hi);

/* ---- collector.c ---- */
/* Creates the trace (and its live file) and starts the writer thread. 0, or -1 with `why`
 * saying in words what went wrong. */
int ana_collector_start(const char *path, char *why, size_t cap);
/* Wakes the collector and waits (at most timeout_ms) until everything appended so far by
 * this thread is written. */
void ana_collector_flush_now(int timeout_ms);
/* Wakes the collector without waiting (a ring is filling up). */
void ana_collector_kick(void);
/* Final drain, END record, close. Bounded wait. */
void ana_collector_stop(uint64_t reason, const char *detail);
void ana_collector_atfork_child(void);

/* ---- dl_entry.c: the real functions of CUDA's libraries ---- */
/* `name` in the library whose soname is `soname`, wherever it was loaded, never loading
 * it: the next definition after the preload (of `version` first when one is given), else
 * the definition in the loaded object with that soname (glibc's dlopen(soname,
 * RTLD_NOLOAD) finds it by DT_SONAME), which covers a library loaded in a local scope — a
 * plugin or Python extension dlopen'ed with RTLD_LOCAL — invisible to RTLD_NEXT. Lookups
 * go to glibc's dlsym, never through the preload's own. NULL when neither has it. Calls
 * dlopen: not for the bootstrap of dl_entry.c. */
void *ana_dl_real_sym(const char *soname, const char *version, const char *name);

/* ---- cupti: GPU activity and correlation (cupti.c, cupti_decode.c, cupti_calls.c) ----
 * libcupti.so.13 is loaded with dlopen, never linked; without it the preload records API
 * calls only. Activity buffers come from a capped pool; CUPTI's buffer callbacks only move
 * them; the collector decodes them. Docs: docs/trace-format.md, "GPU activity and
 * correlation". */
/* Where decoded GPU records go: the collector writes r (its time_ns as given) in the
 * process segment. */
typedef void (*ana_cupti_put)(ana_record *r, void *arg);
/* On the thread of the program's first call that needs a device (before it is forwarded):
 * loads CUPTI, subscribes, enables the activity kinds. Never fails the session. */
void ana_cupti_start(void);
/* Collector, every pass: writes INFO "cupti" when its state changed, flushes CUPTI
 * (forced when `forced`, or when CUPTI is being handed over), decodes every completed
 * buffer through `put`, and notes records CUPTI dropped (GPU_DROPPED). */
void ana_cupti_collect(int forced, ana_cupti_put put, void *arg);
/* After fork in the child: CUPTI does not survive fork; GPU activity stays off there. */
void ana_cupti_atfork_child(void);

/* ---- capture.c: capture windows (ANATOMIST_CAPTURE_RANGE, _DELAY_MS, _DURATION_MS) ----
 * Outside a window, launches, copies, sets, library calls, NVTX ranges and the GPU
 * activity of calls made outside are not recorded; allocations, frees and definitions
 * always are. The hot path reads ana_capture_all only (1: no capture settings). */
extern int ana_capture_all;
/* After the configuration is loaded (the delay counts from here). */
void ana_capture_init(void);
/* 1 when a window is open now (always without capture settings). Any thread. */
int ana_capture_open_now(void);
/* CUPTI's callback, at an API call's entry: the call entered while a window was open. */
void ana_capture_note_corr(uint32_t corr);
int ana_capture_keep_slow(uint64_t corr);
/* Whether the record of a call with correlation id `corr` (0: unknown) is to be made. */
static inline int ana_capture_keep(uint64_t corr) { return ANA_LIKELY(ana_capture_all) || ana_capture_keep_slow(corr); }
/* Writer: whether a decoded GPU record is to be written. */
int ana_capture_keep_gpu(const ana_record *r);
/* The range calls: cudaProfilerStart (1) / cudaProfilerStop (0); an NVTX push (key: its
 * domain and level, the same for its pop), pop, start (its id) and end. */
void ana_capture_profiler(int start);
void ana_capture_nvtx_push(const char *s, uint32_t len, uint64_t key);
void ana_capture_nvtx_pop(uint64_t key);
void ana_capture_nvtx_start(const char *s, uint32_t len, uint64_t id);
void ana_capture_nvtx_end(uint64_t id);
/* Writer, each pass: writes INFO capture.start / capture.stop for windows opened / closed
 * since (time = the window's edge). */
typedef void (*ana_capture_put)(ana_record *r, void *arg);
void ana_capture_collect(ana_capture_put put, void *arg);
/* At exit, before the last pass: closes an open window; says once on stderr when no
 * window ever opened. */
void ana_capture_at_exit(void);
void ana_capture_atfork_child(void);

/* ---- hooks: the bracket every hook uses ---- */
typedef struct ana_call {
    ana_thread *t;
    uint64_t t0;     /* when the call started */
    uint64_t dur;    /* how long the real call took */
    uint64_t stack;  /* interned stack id, 0 = none */
    uint64_t corr;   /* CUPTI correlation id of the call, 0 = unknown (set by the builder) */
    int saved_errno; /* errno as the real call left it */
    int via;         /* ANA_VIA_HOOK (set by ana_enter) or ANA_VIA_CUPTI (the callback's bracket) */
    uintptr_t caller; /* the hook's return address (ANA_CALLER), 0 = unknown: ALLOC's library
                       * outside a hooked library call */
} ana_call;

/* In an exported hook, after ana_enter succeeded: notes who called it. */
#define ANA_CALLER(c) ((c).caller = (uintptr_t)__builtin_return_address(0))

/* Returns 1 when this call is to be recorded (then ana_leave must follow). For calls into
 * CUDA (they need a device: the first one starts CUPTI). */
int ana_enter(ana_call *c);
/* The same for calls that need no device (NVTX): they open the trace, never CUPTI. */
int ana_enter_host(ana_call *c);

/* Returns `call` (of type `type`), a call that is not recorded because it is nested in one
 * that is (the runtime's own driver calls, or a signal handler's call that interrupted a
 * hook), with the thread's correlation id kept: CUPTI's callback for the nested call must
 * not leave its id for the interrupted call's record. */
#define ANA_PASS(type, call)                \
    do {                                    \
        uint32_t ana_corr_ = ana_tls_corr;  \
        type ana_r_ = call;                 \
        ana_tls_corr = ana_corr_;           \
        return ana_r_;                      \
    } while (0)
void ana_leave(ana_call *c);

/* 1 while the calling thread is inside a bracket (between ana_enter and ana_leave); hidden,
 * initial-exec, so that CUPTI's callback reads it inline. */
extern __thread int ana_tls_busy ANA_HIDDEN __attribute__((tls_model("initial-exec")));
/* CUPTI callbacks use it to tell calls a hook records from calls no hook saw. */
static inline int ana_in_hook(void) { return ana_tls_busy; }

/* Correlation: the CUPTI callback of the outermost API call a hook is in stores the call's
 * correlation id here at the call's entry (if it is still 0); ana_enter sets it to 0 and
 * the record builders read it after the real call returned. */
extern __thread uint32_t ana_tls_corr ANA_HIDDEN __attribute__((tls_model("initial-exec")));

/* ---- libctx.c: library calls (cuBLAS, cuBLASLt, NCCL) ----
 * The calling thread's library context: the library and call id of the outermost library
 * call it is in (0, 0 outside), read by the record builders for `lib` and `call`. */
extern __thread uint32_t ana_tls_lib ANA_HIDDEN __attribute__((tls_model("initial-exec")));
extern __thread uint64_t ana_tls_libcall ANA_HIDDEN __attribute__((tls_model("initial-exec")));

typedef struct ana_libcall {
    ana_thread *t;
    uint64_t t0, dur, stack;
    uint64_t id;      /* the call id, when recorded */
    int outer;        /* the thread's outermost library call */
    int record;       /* to be recorded: ana_lib_emit must follow ana_lib_leave */
    int saved_errno;
} ana_libcall;

/* Before forwarding a library call of `lib` (enum ana_lib). Returns 1 when the call is to
 * be recorded: the outermost library call of the thread, with the session running (it
 * starts the session, as the first CUDA call does); the call then is the thread's library
 * context. ana_lib_leave must follow every ana_lib_enter, whatever it returned. */
int ana_lib_enter(ana_libcall *c, uint32_t lib);
/* After the real call returned: ends the timing and the context; when recording, captures
 * the stack and saves errno (the record is then built and given to ana_lib_emit). */
void ana_lib_leave(ana_libcall *c);
/* Appends rec (time = the call's start) and restores the errno the real call left. Only
 * after ana_lib_leave of a call that is recorded. */
void ana_lib_emit(ana_libcall *c, ana_record *rec);
void ana_lib_atfork_child(void);
/* The library (enum ana_lib) whose module holds code address pc; ANA_LIB_NONE for any
 * other module. Cached per address; the first lookup of an address calls dladdr. */
uint32_t ana_lib_of_pc(uintptr_t pc);

#endif
