/* pyframes.c — the Python frames of a stack (pyframes.h, docs/trace-format.md "Python frames").
 *
 * At each capture the calling thread's CPython frame chain is read directly: the thread's
 * own state comes from PyGILState_GetThisThreadState (a thread-specific-data read that
 * needs no GIL: ctypes and C extensions call CUDA with the GIL released), and its frames
 * are read at the offsets of pylayouts.h for the running minor version. Only this thread
 * changes its own frames, and it is inside the call being recorded, so the chain is
 * stable while we read it. Each frame becomes one word appended after the native frames
 * (ANA_PYFRAME_BIT | entry | code id << 32 | instruction byte offset); code objects are
 * interned like stacks (a lock-free table keyed by the object's address and its name's),
 * and defined once by a PYCODE record carrying the qualified name, file, first line and
 * line table, so lines are computed offline. The analyzer puts each Python frame in place
 * of the interpreter's native frame that ran it.
 *
 * Safety: a version without a row in pylayouts.h is never read (said once, in the trace
 * and on stderr). Every code, str and bytes object is checked to be of its exact type
 * before anything else is read from it; a frame whose code is not a code object ends
 * nothing, it is skipped. Not async-signal-safe only in the way stacks are (the tables are
 * lock-free; the live mirror takes its lock).
 *
 * Called by unwind.c (a capture, the start-up), the writer (PYCODE, INFO) and lifecycle.c
 * (fork); calls stacks.c, live.c, dl_real.c, the configuration and warnings. */
#define _GNU_SOURCE
#include "preload.h"
#include "pylayouts.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PY_MAX 128               /* Python frames kept per stack, innermost first */
#define CODE_SLOTS (1u << 16)
#define MAX_CODES (1u << 20)
#define ARENA_BYTES (64u << 20)  /* names, files and line tables, reserved lazily */
#define NAME_MAX_BYTES 1024
#define TABLE_MAX_BYTES (48u << 10)
#define PROBES 32

_Atomic int ana_py_on;

static const ana_pylayout *L;
static void *(*get_ts)(void);
static const void *code_type, *str_type, *bytes_type;
static char version[32], status[160];
static uint64_t eval_lo, eval_hi;
static unsigned version_num; /* major * 100 + minor */

struct slot {
    _Atomic uint64_t code; /* the code object's address; 0 = empty, 1 = being filled */
    _Atomic uint64_t name; /* its co_name's address when interned */
    _Atomic uint32_t id;
};
struct code_entry {
    uint64_t first_line;
    uint32_t qual_off, qual_len, file_off, file_len, table_off, table_len;
    _Atomic uint32_t ready;
};
static struct slot *slots;
static struct code_entry *codes;
static char *arena;
static uint8_t *emitted; /* collector-owned */
static _Atomic uint32_t next_code = 1;
static _Atomic uint64_t arena_used;
static uint32_t emit_cursor = 1;

/* Per thread (mmap'd on its first capture): code objects seen lately, and the stacks made
 * lately from a native id and Python words, so that a repeated capture neither probes the
 * shared tables nor hashes the whole stack. Both are checked exactly before use; `busy`
 * sends a signal handler's capture that interrupts one of ours around them. */
#define CC_WAYS 128
#define MEMO 8
struct pythread {
    struct { uint64_t code, name; uint32_t id; } cc[CC_WAYS];
    struct { uint64_t native, hash, id; uint32_t n, nn; } memo[MEMO];
    unsigned victim;
    int busy;
};
static __thread struct pythread *tls_py __attribute__((tls_model("initial-exec")));

static inline uint64_t rd64(const void *base, unsigned off) { return *(const uint64_t *)((const char *)base + off); }
static inline const void *rdp(const void *base, unsigned off) { return *(const void *const *)((const char *)base + off); }
static inline const void *type_of(const void *o) { return rdp(o, 8); } /* ob_type follows ob_refcnt */

/* The running interpreter's version, "3.11.7", from Py_Version (3.11+) or Py_GetVersion. */
static int find_version(unsigned *major, unsigned *minor)
{
    const unsigned long *hex = ana_real_dlsym(RTLD_DEFAULT, "Py_Version");
    if (hex) {
        unsigned long v = *hex;
        snprintf(version, sizeof(version), "%lu.%lu.%lu", v >> 24, (v >> 16) & 0xff, (v >> 8) & 0xff);
    } else {
        const char *(*gv)(void) = (const char *(*)(void))ana_real_dlsym(RTLD_DEFAULT, "Py_GetVersion");
        if (!gv)
            return -1;
        const char *s = gv();
        size_t n = strcspn(s, " ");
        snprintf(version, sizeof(version), "%.*s", (int)(n < sizeof(version) ? n : sizeof(version) - 1), s);
    }
    return sscanf(version, "%u.%u", major, minor) == 2 ? 0 : -1;
}

/* 3.13 publishes where its structures keep things (_Py_DebugOffsets, at the start of
 * _PyRuntime): the row must agree with it, and a free-threaded build (whose objects have a
 * larger header) is not read. Positions of the fields below in _Py_DebugOffsets, from the
 * 3.13 header (internal/pycore_runtime.h): cookie 0, free_threaded 16, thread_state at 152,
 * interpreter_frame at 224, code_object at 272. */
static int check_debug_offsets(void)
{
    const uint8_t *rt = ana_real_dlsym(RTLD_DEFAULT, "_PyRuntime");
    if (!rt || memcmp(rt, "xdebugpy", 8) != 0)
        return 0; /* nothing published: the row stands alone */
    if (rd64(rt, 16)) {
        snprintf(status, sizeof(status), "off: CPython %s is a free-threaded build", version);
        return -1;
    }
    const struct { unsigned at; uint16_t want; } f[] = {
        { 152 + 32, L->ts_frame },      { 224 + 8, L->fr_back },        { 224 + 16, L->fr_code },
        { 224 + 24, L->fr_instr },      { 224 + 40, L->fr_owner },      { 272 + 8, L->co_filename },
        { 272 + 16, L->co_name },       { 272 + 24, L->co_qualname },   { 272 + 32, L->co_linetable },
        { 272 + 40, L->co_firstlineno }, { 272 + 72, L->co_code },
    };
    for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
        if (rd64(rt, f[i].at) != f[i].want) {
            snprintf(status, sizeof(status), "off: CPython %s keeps its frames differently from its headers' "
                     "(_Py_DebugOffsets)", version);
            return -1;
        }
    return 0;
}

static void init(void)
{
    get_ts = (void *(*)(void))ana_real_dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
    if (!get_ts)
        return; /* not a Python process (or one whose libpython is not global): nothing to say */
    unsigned major = 0, minor = 0;
    if (find_version(&major, &minor) < 0) {
        snprintf(status, sizeof(status), "off: the interpreter's version could not be read");
        return;
    }
    for (size_t i = 0; i < sizeof(ana_pylayouts) / sizeof(ana_pylayouts[0]); i++)
        if (ana_pylayouts[i].major == major && ana_pylayouts[i].minor == minor)
            L = &ana_pylayouts[i];
    if (!L) {
        snprintf(status, sizeof(status), "off: CPython %s is not supported (3.9 to 3.13 are)", version);
        ana_warn("Python frames are off: CPython %s is not supported (3.9 to 3.13 are); stacks show the "
                 "interpreter's native frames", version);
        return;
    }
    if (L->minor >= 13 && check_debug_offsets() < 0) {
        ana_warn("Python frames are off: %s", status + 5);
        L = NULL;
        return;
    }
    if (!ana_cfg.python) {
        snprintf(status, sizeof(status), "off: ANATOMIST_PYTHON=0");
        return;
    }
    code_type = ana_real_dlsym(RTLD_DEFAULT, "PyCode_Type");
    str_type = ana_real_dlsym(RTLD_DEFAULT, "PyUnicode_Type");
    bytes_type = ana_real_dlsym(RTLD_DEFAULT, "PyBytes_Type");
    void *eval = ana_real_dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
    Dl_info di;
    const ElfW(Sym) *sym = NULL;
    if (eval && dladdr1(eval, &di, (void **)&sym, RTLD_DL_SYMENT) && sym && sym->st_size) {
        eval_lo = (uint64_t)(uintptr_t)eval;
        eval_hi = eval_lo + sym->st_size;
    }
    slots = ana_reserve(sizeof(struct slot) * CODE_SLOTS);
    codes = ana_reserve(sizeof(struct code_entry) * MAX_CODES);
    arena = ana_reserve(ARENA_BYTES);
    emitted = ana_reserve(MAX_CODES);
    if (!code_type || !str_type || !bytes_type || !slots || !codes || !arena || !emitted) {
        snprintf(status, sizeof(status), "off: %s", !code_type || !str_type || !bytes_type
                 ? "the interpreter's type objects could not be found" : "no room for the code table");
        ana_warn("Python frames are off: %s", status + 5);
        return;
    }
    version_num = major * 100 + minor;
    snprintf(status, sizeof(status), "on");
    atomic_store(&ana_py_on, 1);
}

/* UTF-8 of a str object into dst (at most cap - 1 bytes, NUL-terminated); "?" when it is
 * not an exact, compact str. Returns the length. */
static uint32_t copy_str(const void *o, char *dst, uint32_t cap)
{
    uint32_t n = 0;
    if (!o || type_of(o) != str_type) {
        memcpy(dst, "?", 2);
        return 1;
    }
    uint64_t len = rd64(o, L->str_length);
    uint32_t st = *(const uint32_t *)((const char *)o + L->str_state);
    unsigned kind = (st >> L->st_kind) & 7, compact = (st >> L->st_compact) & 1, ascii = (st >> L->st_ascii) & 1;
    if (!compact || (kind != 1 && kind != 2 && kind != 4)) {
        memcpy(dst, "?", 2);
        return 1;
    }
    const uint8_t *d = (const uint8_t *)o + (ascii ? L->str_ascii_size : L->str_compact_size);
    for (uint64_t i = 0; i < len && n + 4 < cap; i++) {
        uint32_t c = kind == 1 ? d[i] : kind == 2 ? ((const uint16_t *)d)[i] : ((const uint32_t *)d)[i];
        if (c < 0x80) {
            dst[n++] = (char)c;
        } else if (c < 0x800) {
            dst[n++] = (char)(0xc0 | c >> 6);
            dst[n++] = (char)(0x80 | (c & 0x3f));
        } else if (c < 0x10000) {
            dst[n++] = (char)(0xe0 | c >> 12);
            dst[n++] = (char)(0x80 | ((c >> 6) & 0x3f));
            dst[n++] = (char)(0x80 | (c & 0x3f));
        } else {
            dst[n++] = (char)(0xf0 | c >> 18);
            dst[n++] = (char)(0x80 | ((c >> 12) & 0x3f));
            dst[n++] = (char)(0x80 | ((c >> 6) & 0x3f));
            dst[n++] = (char)(0x80 | (c & 0x3f));
        }
    }
    dst[n] = 0;
    return n;
}

static uint64_t take_arena(uint64_t n)
{
    uint64_t off = atomic_fetch_add_explicit(&arena_used, n, memory_order_relaxed);
    return off + n <= ARENA_BYTES ? off : UINT64_MAX;
}

static void code_record(uint32_t id, ana_record *r)
{
    const struct code_entry *e = &codes[id];
    r->kind = ANA_K_PYCODE;
    r->time_ns = 0;
    r->u.pycode = (ana_rec_pycode){ id, version_num, e->first_line,
                                    { arena + e->qual_off, e->qual_len }, { arena + e->file_off, e->file_len },
                                    { arena + e->table_off, e->table_len } };
}

/* Defines the code object at co: its names, first line and line table copied into the
 * arena. 0 when the tables are full. */
static uint32_t define(const void *co)
{
    char buf[NAME_MAX_BYTES];
    const void *qual = L->co_qualname != 0xffff ? rdp(co, L->co_qualname) : rdp(co, L->co_name);
    uint32_t ql = copy_str(qual, buf, sizeof(buf));
    uint64_t qo = take_arena(ql + 1);
    if (qo == UINT64_MAX)
        return 0;
    memcpy(arena + qo, buf, ql + 1);
    uint32_t fl = copy_str(rdp(co, L->co_filename), buf, sizeof(buf));
    uint64_t fo = take_arena(fl + 1);
    if (fo == UINT64_MAX)
        return 0;
    memcpy(arena + fo, buf, fl + 1);
    const void *tb = rdp(co, L->co_linetable);
    uint64_t tl = 0;
    if (tb && type_of(tb) == bytes_type) {
        tl = rd64(tb, L->var_size);
        if (tl > TABLE_MAX_BYTES)
            tl = TABLE_MAX_BYTES; /* lines past it read as unknown */
    }
    uint64_t to = take_arena(tl + 1);
    if (to == UINT64_MAX)
        return 0;
    if (tl)
        memcpy(arena + to, (const char *)tb + L->bytes_data, tl);
    uint32_t id = atomic_fetch_add_explicit(&next_code, 1, memory_order_relaxed);
    if (id >= MAX_CODES)
        return 0;
    struct code_entry *e = &codes[id];
    e->first_line = (uint64_t)*(const int *)((const char *)co + L->co_firstlineno);
    e->qual_off = (uint32_t)qo, e->qual_len = ql;
    e->file_off = (uint32_t)fo, e->file_len = fl;
    e->table_off = (uint32_t)to, e->table_len = (uint32_t)tl;
    atomic_store_explicit(&e->ready, 1, memory_order_release);
    ana_record def;
    code_record(id, &def);
    ana_live_def(&def); /* a killed process's stacks find their code objects in the live file */
    return id;
}

/* The id of the code object at co (defined on first sight); 0 when none can be had. */
static uint32_t code_id(const void *co)
{
    uint64_t a = (uint64_t)(uintptr_t)co, name = (uint64_t)(uintptr_t)rdp(co, L->co_name);
    uint64_t h = (a >> 4) * 0x9E3779B97F4A7C15ull;
    for (uint32_t i = 0; i < PROBES; i++) {
        struct slot *s = &slots[((h >> 40) + i) & (CODE_SLOTS - 1)];
        uint64_t k = atomic_load_explicit(&s->code, memory_order_acquire);
        if (k == a) {
            if (atomic_load_explicit(&s->name, memory_order_relaxed) == name)
                return atomic_load_explicit(&s->id, memory_order_relaxed);
            /* Another code object now lives at this address: define it, and the slot
             * names the newer one from now on. */
            uint32_t id = define(co);
            if (id) {
                atomic_store_explicit(&s->id, id, memory_order_relaxed);
                atomic_store_explicit(&s->name, name, memory_order_relaxed);
            }
            return id;
        }
        if (k == 0) {
            uint64_t expect = 0;
            if (atomic_compare_exchange_strong(&s->code, &expect, 1)) {
                uint32_t id = define(co);
                atomic_store_explicit(&s->id, id, memory_order_relaxed);
                atomic_store_explicit(&s->name, name, memory_order_relaxed);
                atomic_store_explicit(&s->code, id ? a : 1, memory_order_release);
                return id;
            }
        }
    }
    return define(co); /* crowded here: defined without interning */
}

/* code_id through the thread's cache (pt may be NULL). */
__attribute__((always_inline)) static inline uint32_t code_id_cached(struct pythread *pt, const void *co,
                                                                     const ana_pylayout *Lx)
{
    if (!pt)
        return code_id(co);
    uint64_t a = (uint64_t)(uintptr_t)co, name = (uint64_t)(uintptr_t)rdp(co, Lx->co_name);
    unsigned k = (unsigned)((a >> 4) ^ (a >> 12)) & (CC_WAYS - 1);
    if (pt->cc[k].code == a && pt->cc[k].name == name)
        return pt->cc[k].id;
    uint32_t id = code_id(co);
    if (id) {
        pt->cc[k].code = a;
        pt->cc[k].name = name;
        pt->cc[k].id = id;
    }
    return id;
}

/* The calling thread's Python frames, innermost first, as STACK words. Inlined once per
 * row of pylayouts.h (walk), so that every offset is a constant. */
__attribute__((always_inline)) static inline uint32_t walk_at(struct pythread *pt, uint64_t *out,
                                                              const ana_pylayout *L)
{
    const void *ts = get_ts();
    if (!ts)
        return 0;
    const void *f = rdp(ts, L->ts_frame);
    if (f && L->frames == ANA_PYF_CFRAME)
        f = rdp(f, L->cf_current);
    uint32_t n = 0;
    for (int guard = 0; f && n < PY_MAX && guard < 4 * PY_MAX; guard++, f = rdp(f, L->fr_back)) {
        int owner = L->fr_owner != 0xffff ? *((const signed char *)f + L->fr_owner) : 0;
        int entry = L->frames == ANA_PYF_FRAMEOBJ ||
                    (L->fr_entry != 0xffff && *((const unsigned char *)f + L->fr_entry));
        if (owner == L->own_cstack) { /* 3.12+: the evaluation loop's shim below its first frame */
            if (n)
                out[n - 1] |= ANA_PYFRAME_ENTRY;
            continue;
        }
        const void *co = rdp(f, L->fr_code);
        if (!co || type_of(co) != code_type)
            continue;
        int64_t off;
        if (L->lasti == ANA_PYL_PTR) {
            const char *code0 = (const char *)co + L->co_code;
            off = (const char *)rdp(f, L->fr_instr) - code0;
            int first = *(const int *)((const char *)co + L->co_firsttraceable);
            if (owner != L->own_generator && off < 2 * (int64_t)first) {
                if (entry && n) /* a frame not started yet: its caller ran this loop's call */
                    out[n - 1] |= ANA_PYFRAME_ENTRY;
                continue;
            }
        } else {
            off = *(const int *)((const char *)f + L->fr_instr);
            if (L->lasti == ANA_PYL_UNITS)
                off *= 2;
        }
        if (off < 0)
            off = 0;
        uint32_t id = code_id_cached(pt, co, L);
        if (!id)
            continue;
        out[n++] = ANA_PYFRAME_BIT | (entry ? ANA_PYFRAME_ENTRY : 0) | ((uint64_t)id << 32) |
                   ((uint64_t)off & 0xffffffffull);
    }
    return n;
}

#define WALK_ROW(i)                                                                               \
    case i:                                                                                       \
        if (i < sizeof(ana_pylayouts) / sizeof(ana_pylayouts[0]))                                 \
            return walk_at(pt, out, &ana_pylayouts[i < sizeof(ana_pylayouts) / sizeof(ana_pylayouts[0]) ? i : 0]); \
        break;
static uint32_t walk(struct pythread *pt, uint64_t *out)
{
    switch (L - ana_pylayouts) {
        WALK_ROW(0) WALK_ROW(1) WALK_ROW(2) WALK_ROW(3) WALK_ROW(4) WALK_ROW(5)
    default: break;
    }
    return walk_at(pt, out, L); /* rows past the sixth: offsets read at run time */
}

static struct pythread *thread_state(void)
{
    struct pythread *pt = tls_py;
    if (ANA_UNLIKELY(!pt)) {
        pt = ana_reserve(sizeof(*pt));
        if (!pt)
            return NULL;
        tls_py = pt;
    }
    return pt->busy ? NULL : pt;
}

/* Selects memo entries only (every hit is compared word for word): cheap, not strong. */
static inline uint64_t hash_words(uint64_t h, const uint64_t *w, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        h = ((h << 7) | (h >> 57)) ^ w[i];
    return h;
}

uint64_t ana_py_extend(uint64_t native_id)
{
    uint64_t buf[ANA_MAX_FRAMES];
    uint64_t py[PY_MAX];
    struct pythread *pt = thread_state();
    if (pt)
        pt->busy = 1;
    atomic_signal_fence(memory_order_seq_cst);
    uint64_t id = native_id;
    uint32_t n = walk(pt, py);
    if (!n)
        goto out;
    if (n > ANA_MAX_FRAMES / 2)
        n = ANA_MAX_FRAMES / 2;
    uint64_t h = 0;
    if (pt) { /* the same native stack and Python words as lately: that stack's id */
        h = hash_words(native_id * 0x9E3779B97F4A7C15ull + n, py, n);
        for (int i = 0; i < MEMO; i++) {
            const uint64_t *f;
            if (pt->memo[i].hash != h || pt->memo[i].native != native_id || pt->memo[i].n != n)
                continue;
            uint32_t all = ana_stack_frames(pt->memo[i].id, &f);
            if (all == pt->memo[i].nn + n && memcmp(f + pt->memo[i].nn, py, n * sizeof(uint64_t)) == 0) {
                id = pt->memo[i].id;
                goto out;
            }
        }
    }
    const uint64_t *nf = NULL;
    uint32_t nn = native_id ? ana_stack_frames(native_id, &nf) : 0;
    if (nn > ANA_MAX_FRAMES - n)
        nn = ANA_MAX_FRAMES - n; /* the outermost native frames go first */
    if (nn)
        memcpy(buf, nf, nn * sizeof(uint64_t));
    memcpy(buf + nn, py, n * sizeof(uint64_t));
    uint64_t got = ana_stack_intern(buf, nn + n);
    if (got) {
        id = got;
        if (pt) {
            unsigned v = pt->victim++ % MEMO;
            pt->memo[v].native = native_id, pt->memo[v].hash = h, pt->memo[v].id = got;
            pt->memo[v].n = n, pt->memo[v].nn = nn;
        }
    }
out:
    atomic_signal_fence(memory_order_seq_cst);
    if (pt)
        pt->busy = 0;
    return id;
}

static int code_ready(uint32_t id) { return atomic_load_explicit(&codes[id].ready, memory_order_acquire); }

struct code_emit {
    void (*fn)(const ana_record *r, void *arg);
    void *arg;
};

static void code_emit(uint32_t id, void *arg)
{
    const struct code_emit *e = arg;
    ana_record r;
    code_record(id, &r);
    e->fn(&r, e->arg);
}

void ana_py_emit_new(void (*fn)(const ana_record *r, void *arg), void *arg)
{
    if (!atomic_load_explicit(&ana_py_on, memory_order_relaxed))
        return;
    uint32_t end = atomic_load_explicit(&next_code, memory_order_acquire);
    struct code_emit e = { fn, arg };
    ana_defs_emit(&emit_cursor, end > MAX_CODES ? MAX_CODES : end, emitted, code_ready, code_emit, &e);
}

void ana_py_info(void (*fn)(const char *key, const char *value, void *arg), void *arg)
{
    if (!get_ts)
        return;
    char v[64];
    fn("python.version", version[0] ? version : "?", arg);
    fn("python.frames", status, arg);
    if (eval_hi) {
        snprintf(v, sizeof(v), "0x%llx-0x%llx", (unsigned long long)eval_lo, (unsigned long long)eval_hi);
        fn("python.eval", v, arg);
    }
}

void ana_py_init(void)
{
    init();
    (void)dlerror(); /* the lookups that found nothing leave the program's dlerror() as it was */
}

void ana_py_atfork_child(void)
{
    if (!emitted)
        return;
    uint32_t end = atomic_load(&next_code);
    memset(emitted, 0, end < MAX_CODES ? end : MAX_CODES);
    emit_cursor = 1;
}
