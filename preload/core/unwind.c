/* unwind.c — ana_stack_capture: the walkers of unwind.h and the per-thread stack cache.
 *
 * The cache. A capture is keyed by its own frame address (the preload is built with frame
 * pointers, so ana_stack_capture's frame sits at a fixed distance above the hook's stack
 * pointer) and the return address it goes back to; a key has up to WAYS stacks. A filled
 * entry holds every stack word the walk's result depended on: for each frame above the
 * capture's, where its return address was read from; when its unwind rule reads rbp (the
 * canonical frame address, CFA, is rbp + 16), where that rbp was saved; and when its CFA
 * is the word at rbp - 8 (a stack-realigning prologue keeps it there and its rule reads
 * it), that word and rbp's. Given the key, these words determine the walk: the first
 * frame's position follows from the key, and each next frame's position from its return
 * address (which selects the unwind rule) and what the rule reads (rsp, computed, or rbp
 * and words above, noted). A hit re-reads the noted words and reuses the stack id only
 * when every one is unchanged: a different chain at the same stack position differs in
 * at least one. Not covered: unwind rules based on other registers (compilers emit rsp,
 * rbp or the realigning rule), walks through a signal frame (whose registers come from the
 * saved context: never cached), and code unloaded and replaced at the same address.
 *
 * Filling. ANATOMIST_UNWIND=fp fills from its own walk, at once. auto takes a miss's
 * stack from unw_backtrace and keeps it as a candidate (CANDS per set); it fills
 * (stepping libunwind frame by frame, ~1 us a frame) only when that stack comes back at
 * the same key, from a budget (FILL_COST).
 *
 * Safety. Words are read only inside [capture frame, top of the thread's stack): the
 * capture runs on that stack below them, so all of it is mapped. The top comes from
 * /proc/self/maps once per thread (open/read, no malloc: a signal handler may be the
 * first to capture). A capture on any other stack uses unw_backtrace, uncached.
 *
 * Called by calls/calls.c and calls/libctx.c (captures), lifecycle.c (ana_unwind_start, fork) and
 * hooks/unwind_pipe.c (ana_unwind_owns); calls stacks.c, pyframes.c, modules.c, dl_real.c,
 * the configuration and warnings. */
#define _GNU_SOURCE
#include "unwind.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "preload.h"

/* libunwind's local x86-64 API (libunwind-x86_64.h), declared here so that its headers are
 * not needed to build. */
typedef struct {
    uint64_t opaque[127];
} unw_cursor;
typedef struct {
    int type;
    union {
        uint64_t addr;
        int regnum;
    } u;
    char extra;
} unw_save_loc;
enum { U_SLT_MEMORY = 1, U_RBP = 6, U_RSP = 7, U_RIP = 16 };

static int (*u_backtrace)(void **, int);
static int (*u_getcontext)(ucontext_t *);
static int (*u_init_local)(unw_cursor *, ucontext_t *);
static int (*u_step)(unw_cursor *);
static int (*u_get_reg)(unw_cursor *, int, uint64_t *);
static int (*u_get_save_loc)(unw_cursor *, int, unw_save_loc *);
static int (*u_is_signal_frame)(unw_cursor *);
static uintptr_t unw_lo, unw_hi;

/* The readers of other frames' stack words: an instrumented frame's redzones are ours to
 * read here (the words are proven mapped; their values are only compared). */
#define ANA_RAW_READ __attribute__((no_sanitize_address))

#define WAYS 4           /* stacks cached per key set */
#define CANDS 8          /* stacks seen once, per key set */
#define SETS 8
#define MAX_CHECKS 400   /* words noted per stack (a multiple of 4); a longer walk is not cached */
/* A libunwind fill steps frame by frame (~1 us a frame, against ~10 ns in unw_backtrace's
 * own cached walk), so it is paid for from a budget: one token per capture, FILL_COST a
 * fill, at most TOKENS_MAX saved, TOKENS_START for a new thread (a short-lived one pays for
 * few fills). A program whose stacks change faster than the cache can hold them then pays
 * at most ~1/FILL_COST of a fill per capture on top of unw_backtrace. */
#define FILL_COST 512
#define TOKENS_MAX (32 * FILL_COST)
#define TOKENS_START (4 * FILL_COST)
#define MAX_WALK (ANA_MAX_FRAMES + 32)

struct check {
    uintptr_t addr;
    uint64_t val;
};
/* A stack seen once at (fp, ret0), not filled: the fill is for stacks that come back. */
struct cand {
    uintptr_t fp, ret0;
    uint64_t id;
};
/* A stack cached at (fp, ret0), with the n words to re-read; n == 0: empty. */
struct centry {
    uintptr_t fp, ret0;
    uint64_t id;
    uint32_t n;
    struct check c[MAX_CHECKS];
};
struct tstate {
    uintptr_t lo, top; /* the thread's stack mapping */
    uint32_t gen;
    int busy;           /* a capture is using the cache (a signal handler's does not) */
    int bounds_fails;   /* captures seen on stacks we have no bounds for */
    long tokens;        /* fill budget (FILL_COST) */
    unsigned victim[SETS], cvictim[SETS];
    struct cand cand[SETS][CANDS];
    struct centry e[SETS][WAYS];
};

static __thread struct tstate *tls_st __attribute__((tls_model("initial-exec")));
static __thread int tls_no_state __attribute__((tls_model("initial-exec")));
static _Atomic uint32_t cache_gen = 1;
static pthread_key_t st_key;
static int have_key;

static void st_free(void *p)
{
    tls_st = NULL;
    munmap(p, sizeof(struct tstate));
}

/* Resolves the libunwind entry points from its handle; 0, or -1 (no unw_backtrace). */
static int load_unwinder(void *h)
{
    u_backtrace = (int (*)(void **, int))ana_real_dlsym(h, "unw_backtrace");
    u_getcontext = (int (*)(ucontext_t *))ana_real_dlsym(h, "_Ux86_64_getcontext");
    u_init_local = (int (*)(unw_cursor *, ucontext_t *))ana_real_dlsym(h, "_ULx86_64_init_local");
    u_step = (int (*)(unw_cursor *))ana_real_dlsym(h, "_ULx86_64_step");
    u_get_reg = (int (*)(unw_cursor *, int, uint64_t *))ana_real_dlsym(h, "_ULx86_64_get_reg");
    u_get_save_loc = (int (*)(unw_cursor *, int, unw_save_loc *))ana_real_dlsym(h, "_ULx86_64_get_save_loc");
    u_is_signal_frame = (int (*)(unw_cursor *))ana_real_dlsym(h, "_ULx86_64_is_signal_frame");
    if (!u_backtrace)
        return -1;
    ana_modules_find_self((const void *)u_backtrace, &unw_lo, &unw_hi);
    int stepping = u_getcontext && u_init_local && u_step && u_get_reg && u_get_save_loc && u_is_signal_frame;
    if (!stepping && ana_cfg.unwind == ANA_UNWIND_AUTO)
        ana_cfg.unwind = ANA_UNWIND_DWARF; /* an older libunwind: no cache */
    have_key = pthread_key_create(&st_key, st_free) == 0;
    return 0;
}

int ana_unwind_start(void)
{
    void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        ana_warn("call stacks are off: libunwind.so.8 could not be loaded (install libunwind8)");
        return -1;
    }
    if (ana_stacks_init() < 0)
        return -1;
    if (load_unwinder(h) < 0) {
        ana_warn("call stacks are off: this libunwind.so.8 lacks unw_backtrace");
        return -1;
    }
    ana_py_init();
    return 0;
}

void ana_unwind_atfork_child(void) { atomic_fetch_add(&cache_gen, 1); }

int ana_unwind_owns(uintptr_t pc) { return pc >= unw_lo && pc < unw_hi; }

int ana_unwind_skippable(uintptr_t ip)
{
    return (ip >= ana_self_lo && ip < ana_self_hi) || (ip >= unw_lo && ip < unw_hi);
}

int ana_unwind_backtrace(uint64_t *ips, int max)
{
    void *buf[MAX_WALK];
    int want = max + 16 < MAX_WALK ? max + 16 : MAX_WALK;
    int n = u_backtrace(buf, want);
    int skip = 0;
    while (skip < n && ana_unwind_skippable((uintptr_t)buf[skip]))
        skip++;
    int keep = n - skip < max ? n - skip : max;
    for (int i = 0; i < keep; i++)
        ips[i] = (uint64_t)(uintptr_t)buf[skip + i];
    return keep > 0 ? keep : 0;
}

static uint64_t intern(const uint64_t *ips, int n)
{
    return n > 0 ? ana_stack_intern(ips, (uint32_t)n) : 0;
}

/* ---- the thread's stack bounds ---- */

static const char *hex(const char *p, const char *end, uintptr_t *v)
{
    uintptr_t x = 0;
    const char *s = p;
    for (; p < end; p++) {
        int d = *p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;
        if (d < 0)
            break;
        x = x << 4 | (uintptr_t)d;
    }
    *v = x;
    return p > s ? p : NULL;
}

/* The mapping holding addr, from /proc/self/maps; 0 when found. */
static int mapping_of(uintptr_t addr, uintptr_t *lo, uintptr_t *hi)
{
    int saved = errno, found = -1;
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[4096];
    size_t have = 0;
    for (;;) {
        ssize_t r = read(fd, buf + have, sizeof(buf) - have);
        if (r <= 0)
            break;
        have += (size_t)r;
        char *line = buf, *end = buf + have, *nl;
        while ((nl = memchr(line, '\n', (size_t)(end - line)))) {
            uintptr_t a, b;
            const char *p = hex(line, nl, &a);
            if (p && *p == '-' && hex(p + 1, nl, &b) && addr >= a && addr < b) {
                *lo = a, *hi = b, found = 0;
                goto out;
            }
            line = nl + 1;
        }
        have = (size_t)(end - line);
        if (have == sizeof(buf))
            have = 0; /* a line longer than the buffer: no address range in it we need */
        memmove(buf, line, have);
    }
out:
    close(fd);
    errno = saved;
    return found;
}

/* The calling thread's cache, set up on its first capture; NULL when it has none. */
static struct tstate *state_get(uintptr_t fp)
{
    struct tstate *st = tls_st;
    if (!st) {
        if (tls_no_state)
            return NULL;
        void *p = mmap(NULL, sizeof(*st), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        uintptr_t lo, hi;
        if (p == MAP_FAILED || mapping_of(fp, &lo, &hi) < 0) {
            if (p != MAP_FAILED)
                munmap(p, sizeof(*st));
            tls_no_state = 1;
            return NULL;
        }
        /* A thread glibc started keeps its descriptor at the top of its stack block, above
         * every frame: the bound, should the kernel have merged the block with a mapping
         * above it (which could go away). The main thread's is elsewhere. */
        uintptr_t self = (uintptr_t)pthread_self();
        if (self > fp && self < hi)
            hi = self & ~(uintptr_t)15;
        st = p;
        st->lo = lo, st->top = hi;
        st->gen = atomic_load(&cache_gen);
        st->tokens = TOKENS_START;
        if (have_key)
            pthread_setspecific(st_key, st);
        tls_st = st;
    }
    if (st->gen != atomic_load_explicit(&cache_gen, memory_order_relaxed)) {
        memset(st->cand, 0, sizeof(st->cand));
        for (int k = 0; k < SETS; k++) /* not memset: pages never used stay untouched */
            for (int w = 0; w < WAYS; w++)
                st->e[k][w].n = 0, st->e[k][w].fp = 0;
        st->gen = atomic_load(&cache_gen);
    }
    if (fp < st->lo || fp >= st->top) {
        /* The main thread's stack grows down; any other stack gets no cache. */
        uintptr_t lo, hi;
        if (st->bounds_fails >= 64 || mapping_of(fp, &lo, &hi) < 0 || hi != st->top) {
            if (st->bounds_fails < 64)
                st->bounds_fails++;
            return NULL;
        }
        st->lo = lo;
    }
    return st;
}

/* ---- filling an entry ---- */

struct fill {
    uintptr_t fp, top;
    uint32_t n;
    int ok; /* the walk can be cached */
    struct check *c;
};

/* Notes the word at addr as one the walk read; it must lie in [fp, top). */
ANA_RAW_READ static void note(struct fill *f, uintptr_t addr)
{
    if (!f->ok)
        return;
    if (addr < f->fp || addr > f->top - 8 || (addr & 7) || f->n == MAX_CHECKS) {
        f->ok = 0;
        return;
    }
    if (f->n && f->c[f->n - 1].addr == addr)
        return;
    f->c[f->n].addr = addr;
    f->c[f->n].val = *(const uint64_t *)addr;
    f->n++;
}

/* Notes the word at addr (in [fp, top)) if it holds v; 1 when it does. */
ANA_RAW_READ static int note_if(struct fill *f, uintptr_t addr, uint64_t v)
{
    if (addr < f->fp || addr > f->top - 8 || (addr & 7) || *(const uint64_t *)addr != v)
        return 0;
    note(f, addr);
    return 1;
}

/* Notes where register reg of the cursor's frame was saved. */
static void note_loc(struct fill *f, unw_cursor *cur, int reg)
{
    unw_save_loc loc;
    if (u_get_save_loc(cur, reg, &loc) < 0 || loc.type != U_SLT_MEMORY)
        f->ok = 0;
    else
        note(f, (uintptr_t)loc.u.addr);
}

/* libunwind, frame by frame, noting the words each frame above fp depends on: where its
 * return address was read, and where its rbp was saved when its unwind rule reads rbp
 * (CFA = rbp + 16, the realigned rule) or its walk ended (libunwind's fallback for code
 * without unwind tables follows rbp). rbp is otherwise a plain register whose value
 * (often a loop counter) must not keep a stack from being recognised. */
__attribute__((noinline)) static int walk_dwarf(struct fill *f, uint64_t *ips, int max)
{
    ucontext_t uc;
    unw_cursor cur;
    if (u_getcontext(&uc) < 0 || u_init_local(&cur, &uc) < 0)
        return f->ok = 0, 0;
    int n = 0, leading = 1;
    for (int k = 0; k < MAX_WALK; k++) {
        uint64_t ip = 0, sp = 0, rbp = 0, cfa = 0;
        u_get_reg(&cur, U_RIP, &ip);
        u_get_reg(&cur, U_RSP, &sp);
        u_get_reg(&cur, U_RBP, &rbp);
        if (!(leading && ana_unwind_skippable((uintptr_t)ip))) {
            leading = 0;
            ips[n++] = ip;
        }
        int above = sp > f->fp; /* frames at or below fp are the capture's own */
        unw_save_loc rbp_loc = { 0 };
        if (above) {
            note_loc(f, &cur, U_RIP);
            if (u_get_save_loc(&cur, U_RBP, &rbp_loc) < 0)
                rbp_loc.type = 0;
            if (u_is_signal_frame(&cur) > 0)
                f->ok = 0;
        }
        if (n >= max)
            break;
        int more = u_step(&cur) > 0;
        if (more)
            u_get_reg(&cur, U_RSP, &cfa);
        /* The realigned rule reads the CFA from rbp - 8, inside the frame. */
        int drap = above && more && cfa != rbp + 16 && rbp - 8 >= sp && rbp - 8 < cfa &&
                   note_if(f, (uintptr_t)rbp - 8, cfa);
        if (above && (!more || cfa == rbp + 16 || drap)) {
            if (rbp_loc.type == U_SLT_MEMORY)
                note(f, (uintptr_t)rbp_loc.u.addr);
            else
                f->ok = 0;
        }
        if (!more)
            break;
    }
    return n;
}

/* The frame-pointer chain from the capture's frame: each link aligned, increasing and in
 * the stack; the walk stops at the first that is not. */
ANA_RAW_READ static int walk_fp(struct fill *f, uint64_t *ips, int max)
{
    uintptr_t fr = f->fp;
    int n = 0, leading = 1;
    for (int k = 0; k < MAX_WALK && n < max; k++) {
        note(f, fr);
        note(f, fr + 8);
        uintptr_t next = ((const uintptr_t *)fr)[0], ip = ((const uintptr_t *)fr)[1];
        if (!ip)
            break;
        if (!(leading && ana_unwind_skippable(ip))) {
            leading = 0;
            ips[n++] = ip;
        }
        if ((next & 15) || next <= fr || next > f->top - 16)
            break;
        fr = next;
    }
    return n;
}

/* Walks again, noting the words the walk depends on, into e; the stack's id. */
static uint64_t fill(struct tstate *st, struct centry *e, uintptr_t fp, uintptr_t ret0)
{
    uint64_t ips[MAX_WALK];
    struct fill f = { fp, st->top, 0, 1, e->c };
    e->n = 0, e->fp = 0;
    int n = ana_cfg.unwind == ANA_UNWIND_FP ? walk_fp(&f, ips, ana_cfg.stack_depth)
                                             : walk_dwarf(&f, ips, ana_cfg.stack_depth);
    uint64_t id = intern(ips, n);
    if (f.ok && f.n && id) {
        while (f.n % 4) /* still_valid reads four at a time: repeat the first word */
            e->c[f.n++] = e->c[0];
        e->fp = fp, e->ret0 = ret0, e->id = id, e->n = f.n;
    }
    return id;
}

/* No valid entry: fp mode fills at once (its walk is the cheap part); auto takes
 * unw_backtrace's stack and fills when that stack comes back at this key while it is
 * still a candidate, budget permitting. */
__attribute__((noinline)) static uint64_t capture_miss(struct tstate *st, unsigned k, uintptr_t fp, uintptr_t ret0)
{
    struct centry *e = &st->e[k][st->victim[k] % WAYS];
    if (ana_cfg.unwind == ANA_UNWIND_FP) {
        st->victim[k]++;
        return fill(st, e, fp, ret0);
    }
    uint64_t ips[MAX_WALK];
    uint64_t id = intern(ips, ana_unwind_backtrace(ips, ana_cfg.stack_depth));
    struct cand *c = st->cand[k], *seen = NULL;
    for (int i = 0; i < CANDS && !seen; i++)
        if (c[i].fp == fp && c[i].ret0 == ret0 && c[i].id == id)
            seen = &c[i];
    if (seen && st->tokens >= FILL_COST) {
        st->tokens -= FILL_COST;
        st->victim[k]++;
        seen->fp = 0;
        fill(st, e, fp, ret0);
    } else if (!seen && id) {
        c[st->cvictim[k]++ % CANDS] = (struct cand){ fp, ret0, id };
    }
    return id;
}

/* No cache for this capture (a stack without known bounds, a capture interrupted by a
 * signal handler's, or ANATOMIST_UNWIND=dwarf): libunwind's own fast walk. */
static uint64_t capture_uncached(void)
{
    uint64_t ips[MAX_WALK];
    return intern(ips, ana_unwind_backtrace(ips, ana_cfg.stack_depth));
}

static inline unsigned set_of(uintptr_t fp, uintptr_t ret0)
{
    return (unsigned)((((fp >> 4) ^ (ret0 * 0x9E3779B97F4A7C15ull)) * 0xff51afd7ed558ccdull) >> 61) & (SETS - 1);
}

/* Every noted word still holds what the walk read. Four at a time without a branch
 * between them, so that the loads overlap (fill pads n to a multiple of 4). */
ANA_RAW_READ static inline int still_valid(const struct centry *e)
{
    const struct check *c = e->c;
    for (uint32_t i = 0; i < e->n; i += 4) {
        uint64_t d = (*(const uint64_t *)c[i].addr ^ c[i].val) | (*(const uint64_t *)c[i + 1].addr ^ c[i + 1].val) |
                     (*(const uint64_t *)c[i + 2].addr ^ c[i + 2].val) | (*(const uint64_t *)c[i + 3].addr ^ c[i + 3].val);
        if (d)
            return 0;
    }
    return 1;
}

/* The native frames' id. Inlined into ana_stack_capture, whose frame address and return
 * address are the cache's key. */
ANA_RAW_READ __attribute__((always_inline)) static inline uint64_t capture_native(uintptr_t fp, uintptr_t ret0)
{
    if (ana_cfg.unwind == ANA_UNWIND_DWARF)
        return capture_uncached();
    struct tstate *st = tls_st;
    if (ANA_UNLIKELY(!st || st->busy || fp < st->lo || fp >= st->top ||
                     st->gen != atomic_load_explicit(&cache_gen, memory_order_relaxed))) {
        if ((st && st->busy) || !(st = state_get(fp)))
            return capture_uncached();
    }
    /* busy: a signal handler's capture on this thread, which could rewrite the entry being
     * read, takes the uncached path instead. */
    st->busy = 1;
    atomic_signal_fence(memory_order_seq_cst);
    if (st->tokens < TOKENS_MAX)
        st->tokens++;
    unsigned k = set_of(fp, ret0);
    const struct centry *set = st->e[k];
    uint64_t id = 0;
    for (int w = 0; w < WAYS && !id; w++) {
        const struct centry *e = &set[w];
        if (e->n && e->fp == fp && e->ret0 == ret0 && still_valid(e))
            id = e->id;
    }
    if (!id)
        id = capture_miss(st, k, fp, ret0);
    atomic_signal_fence(memory_order_seq_cst);
    st->busy = 0;
    return id;
}

ANA_RAW_READ __attribute__((noinline)) uint64_t ana_stack_capture(void)
{
    if (!ana_cfg.stacks || !u_backtrace)
        return 0;
    uint64_t id = capture_native((uintptr_t)__builtin_frame_address(0), (uintptr_t)__builtin_return_address(0));
    /* In a Python process: the thread's Python frames follow (pyframes.c). */
    return ANA_UNLIKELY(atomic_load_explicit(&ana_py_on, memory_order_relaxed)) ? ana_py_extend(id) : id;
}
