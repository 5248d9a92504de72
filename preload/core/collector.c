/* collector.c — the background writer thread (collector.h). Started and
 * stopped by core/session.c and lifecycle.c; flushed at once after a failed allocation
 * (calls/) and by cupti/. It calls only the core; GPU records come from the source
 * lifecycle.c installs (ana_collector_set_gpu: cupti/'s collection), never from cupti/ by
 * name.
 *
 * Each pass: (1) note every thread's state and head; (2) write definitions that those
 * records may use: modules, kernels, stacks, thread names, drop counts; (3) copy each
 * ring's bytes up to the noted head into the chunk behind a SEGMENT; (4) compress and
 * write the chunk once it is big enough (CHUNK_TARGET), old enough (STAGE_MAX_NS), or
 * asked for. Because definitions are published before any record that uses them is
 * appended, and (2) runs after (1), a definition always precedes its uses in the file.
 * The chunk is built in the live file's staging area (live.h): a ring's range is released
 * as soon as it is staged, so rings never wait for CUPTI, compression or the disk, and the
 * trace gets few, large chunks (zstd compresses them better) without risking a record.
 * Without a live file the chunk is in memory and is written every pass.
 * Between (3) and (4) GPU activity is collected (the installed source): its records carry their own
 * (GPU) times and go to the process segment, each GPU_KERNEL after its KERNEL definition.
 * A pass asked for by ana_collector_flush_now, and the last pass, force CUPTI to hand
 * over every buffer it holds. */
#define _GNU_SOURCE
#include "preload.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "varint.h"
#include "naming.h"
#include "safe_open.h"
#include "writer.h"

#define CHUNK_TARGET ((size_t)ana_cfg.chunk_kb * 1024)
#define STAGE_MAX_NS (10ull * 1000000000ull) /* a staged chunk is written within this */

static ana_tw *tw;
static ana_ofile trace_of; /* tw's descriptor, checked before each write (ofile.c) */
static char trace_path[1024];
static pthread_t thr;
static _Atomic int stop_req;
static _Atomic int force_req; /* the next pass forces a CUPTI flush */
static _Atomic uint64_t passes_started, passes_done;
static uint8_t *chunk; /* the live file's staging area, or (no live file) malloc'd */
static size_t chunk_len, chunk_cap;
static int staged, in_wseg, write_failed;
static uint64_t chunk_born; /* when the chunk's first byte was staged */
static uint64_t defs_snap; /* the live definitions ring's head when the pass began */
static uint64_t wseg_prev;
static uint64_t end_reason = ANA_END_EXIT;
static const char *end_detail = "exit";
static ana_gpu_collect gpu_collect; /* cupti/'s, installed by lifecycle.c; NULL: none */

void ana_collector_set_gpu(ana_gpu_collect collect) { gpu_collect = collect; }

/* The pending range of t's slot is staged: its space goes back to the thread. */
static void commit(ana_thread *t)
{
    ana_live_slot *ls = t->ls;
    atomic_store_explicit(&ls->base_ns, ls->pend_base, memory_order_relaxed);
    atomic_store_explicit(&ls->drop_rep, ls->pend_drop, memory_order_relaxed);
    atomic_store_explicit(&ls->dropb_rep, ls->pend_dropb, memory_order_relaxed);
    atomic_store_explicit(&ls->tail, ls->pend_tail, memory_order_release);
    atomic_store_explicit(&ls->pend_seq, ANA_LIVE_NONE, memory_order_release);
}

/* 0 when tw writes to the trace file: its descriptor is still ours, or the file could be
 * opened again by its name (the program closed or reused the number); -1 when it is gone. */
static int trace_fd_ok(void)
{
    int fd = ana_ofile_fd(&trace_of);
    if (fd != ana_tw_fd(tw))
        ana_tw_set_fd(tw, fd);
    return fd >= 0 ? 0 : -1;
}

#define FD_LOST "the program closed or reused the trace's file descriptor and the file is gone"

/* Writing failed: nothing more is written. What was not written stays in the live file,
 * whose header now carries the END a reader gives the trace; without a live file the END
 * goes into the trace if it still can. why: the error's words. */
static void write_failure(const char *why)
{
    char detail[200];
    write_failed = 1;
    snprintf(detail, sizeof(detail), "cannot write the trace: %s", why);
    int live = ana_live_set_end(ANA_END_DISABLED, detail);
    if (!live && trace_fd_ok() == 0)
        ana_tw_end(tw, ana_now_ns(), ANA_END_DISABLED, detail);
    ana_disable("cannot write the trace %s: %s; profiling stopped, the program goes on%s%s%s",
                trace_path, why, live ? "; the records not yet written are kept in " : "",
                live ? trace_path : "", live ? ANA_LIVE_SUFFIX " (anatomist recover)" : "");
}

/* Writes the chunk. After a failed write what was staged stays where it is, for readers
 * and `anatomist recover`: nothing is staged over it. */
static void flush_chunk(void)
{
    if (chunk_len == 0 || write_failed)
        return;
    ana_live_stage_publish(chunk_len);
    if (trace_fd_ok() < 0) {
        write_failure(FD_LOST);
        return;
    }
    if (ana_tw_chunk(tw, chunk, chunk_len) < 0) {
        write_failure(strerror(errno));
        return;
    }
    ana_live_stage_begin(ana_tw_chunks(tw));
    chunk_len = 0;
    in_wseg = 0;
}

static int room(size_t n)
{
    if (chunk_cap - chunk_len < n)
        flush_chunk();
    if (chunk_len == 0)
        chunk_born = ana_now_ns();
    return !write_failed && chunk_cap - chunk_len >= n;
}

/* Appends a record made by the collector itself, in the process segment (tid 0), at
 * r->time_ns (deltas may be negative: GPU records keep their own times). */
static void wrec_at(ana_record *r)
{
    if (!room(ANA_RECORD_FIXED_MAX + 2 * 4096 + 64 * 1024))
        return;
    ana_record_to_ticks(r, ana_cfg.time_shift);
    if (!in_wseg) {
        ana_record seg = { .kind = ANA_K_SEGMENT };
        seg.u.segment = (ana_rec_segment){ 0, r->time_ns };
        chunk_len += ana_record_encode(chunk + chunk_len, chunk_cap - chunk_len, &seg, 0);
        in_wseg = 1;
        wseg_prev = r->time_ns;
    }
    size_t n = ana_record_encode(chunk + chunk_len, chunk_cap - chunk_len, r, wseg_prev);
    if (n) {
        chunk_len += n;
        wseg_prev = r->time_ns;
    }
}

static void wrec(ana_record *r)
{
    r->time_ns = ana_now_ns();
    wrec_at(r);
}

static void on_module(const ana_rec_module *m, void *arg)
{
    ana_record r = { .kind = ANA_K_MODULE };
    r.u.module = *m;
    wrec(&r);
}

static void on_kernel(uint64_t id, uint64_t host_fn, const char *name, void *arg)
{
    ana_record r = { .kind = ANA_K_KERNEL };
    size_t len = strlen(name);
    r.u.kernel = (ana_rec_kernel){ id, host_fn, { name, (uint32_t)(len > 8192 ? 8192 : len) } };
    wrec(&r);
}

/* A decoded GPU record; the KERNEL records of names interned while decoding go first. */
static void on_gpu(ana_record *r, void *arg)
{
    if (!ana_capture_keep_gpu(r))
        return; /* the GPU work of a call made outside every capture window */
    if (r->kind == ANA_K_GPU_KERNEL)
        ana_kernels_emit_new(on_kernel, NULL);
    wrec_at(r);
}

static void on_stack(uint64_t id, const uint64_t *ips, uint32_t n, void *arg)
{
    ana_record r = { .kind = ANA_K_STACK };
    r.u.stack = (ana_rec_stack){ id, { ips, n } };
    wrec(&r);
}

static void on_pycode(const ana_record *r, void *arg)
{
    (void)arg;
    ana_record c = *r;
    wrec(&c);
}

static void winfo(const char *key, const char *value, void *arg)
{
    (void)arg;
    ana_record r = ana_info_record(key, value, 0);
    wrec(&r);
}

static void name_thread(ana_thread *t)
{
    char path[64], name[64] = "";
    snprintf(path, sizeof(path), "/proc/self/task/%llu/comm", (unsigned long long)t->tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = read(fd, name, sizeof(name) - 1);
        close(fd);
        name[n > 0 ? n : 0] = 0;
        name[strcspn(name, "\n")] = 0;
    }
    ana_record r = { .kind = ANA_K_THREAD };
    r.u.thread = (ana_rec_thread){ t->tid, { name, (uint32_t)strlen(name) } };
    wrec(&r);
    t->c_named = 1;
}

/* Copies t's n bytes from tl into the chunk behind a SEGMENT; advances t's clock. */
static void copy_ring(ana_thread *t, uint64_t tl, size_t n)
{
    ana_record seg = { .kind = ANA_K_SEGMENT };
    seg.u.segment = (ana_rec_segment){ t->tid, t->c_prev_ns };
    chunk_len += ana_record_encode(chunk + chunk_len, chunk_cap - chunk_len, &seg, 0);
    in_wseg = 0;
    uint8_t *dst = chunk + chunk_len;
    uint64_t pos = tl & (t->size - 1);
    size_t first = n < t->size - pos ? n : (size_t)(t->size - pos);
    memcpy(dst, t->ring + pos, first);
    memcpy(dst + first, t->ring, n - first);
    for (size_t at = 0; at < n;) {
        uint32_t kind;
        size_t plen, hn = ana_record_header(dst + at, n - at, &kind, &plen);
        int64_t dt;
        if (!hn || !ana_record_peek_dt(dst + at + hn, plen, &dt))
            break; /* cannot happen: the ring holds only what ana_emit encoded */
        t->c_prev_ns += (uint64_t)dt;
        at += hn + plen;
    }
    chunk_len += n;
}

#define WREC_ROOM (ANA_RECORD_FIXED_MAX + 2 * 4096 + 64 * 1024)

/* Copies t's records up to t->c_snap into the chunk behind its drops and advances t's
 * clock; notes in its slot what the chunk holds (pending), publishes the staged bytes, and
 * releases the range (docs/trace-format.md, "The live file": each step leaves every record
 * exactly once in the trace, the stage or the ring). */
static void drain(ana_thread *t)
{
    ana_live_slot *ls = t->ls;
    uint64_t tl = atomic_load_explicit(&ls->tail, memory_order_relaxed), h = t->c_snap;
    uint64_t d = atomic_load(&ls->dropped), db = atomic_load(&ls->dropped_bytes);
    if (h == tl && d == t->c_drop)
        return;
    size_t n = (size_t)(h - tl);
    if (!room(n + 32 + WREC_ROOM))
        return; /* (cannot happen but after a failed write: a chunk holds a ring and more) */
    atomic_store_explicit(&ls->pend_seq, ANA_LIVE_NONE, memory_order_relaxed);
    if (d != t->c_drop) {
        ana_record r = { .kind = ANA_K_DROPPED };
        r.u.dropped = (ana_rec_dropped){ t->tid, d - t->c_drop, db - t->c_dropb };
        wrec(&r);
        t->c_drop = d;
        t->c_dropb = db;
    }
    if (n)
        copy_ring(t, tl, n);
    ls->pend_tail = h;
    ls->pend_base = t->c_prev_ns;
    ls->pend_drop = t->c_drop;
    ls->pend_dropb = t->c_dropb;
    ls->pend_stage = chunk_len;
    atomic_store_explicit(&ls->pend_seq, ana_tw_chunks(tw), memory_order_release);
    ana_live_stage_publish(chunk_len); /* the one step that moves the range into the stage */
    commit(t);
    atomic_store_explicit(&t->kicked, 0, memory_order_relaxed);
}

/* The live file was cut under us (ana_live_check): the stage and the rings were pages of
 * it, so what they held is lost. The trace ends here, saying so. */
static void live_cut(void)
{
    char detail[1300];
    snprintf(detail, sizeof(detail), "%s" ANA_LIVE_SUFFIX " was truncated by another process; "
             "the records not yet written were lost", trace_path);
    chunk_len = 0;
    write_failed = 1;
    if (trace_fd_ok() == 0 && ana_tw_end(tw, ana_now_ns(), ANA_END_DISABLED, detail) == 0)
        ana_live_finish(); /* what is left of it holds nothing a reader could use */
    ana_disable("%s; profiling stopped, the program goes on", detail);
}

static void pass(int forced)
{
    atomic_fetch_add(&passes_started, 1);
    if (!write_failed && staged && ana_live_check() < 0)
        live_cut();
    if (write_failed) {
        atomic_fetch_add(&passes_done, 1);
        return;
    }
    ana_thread *list = ana_thread_list();
    for (ana_thread *t = list; t; t = t->next) {
        t->c_state = atomic_load_explicit(&t->state, memory_order_acquire);
        t->c_snap = atomic_load_explicit(&t->ls->head, memory_order_acquire);
    }
    defs_snap = ana_live_defs_snapshot(); /* after the heads: covers what they use */
    ana_modules_emit_new(on_module, NULL);
    ana_kernels_emit_new(on_kernel, NULL);
    ana_py_emit_new(on_pycode, NULL);
    ana_stacks_emit_new(on_stack, NULL);
    if (!write_failed) {
        /* The definitions are in the trace or the stage: their mirror may be overwritten. */
        ana_live_stage_publish(chunk_len);
        ana_live_defs_commit(defs_snap);
    }
    for (ana_thread *t = list; t; t = t->next) {
        if (t->c_state != ANA_T_LIVE && t->c_state != ANA_T_DEAD)
            continue;
        if (!t->c_named && t->c_snap != atomic_load(&t->ls->tail))
            name_thread(t);
        drain(t);
    }
    forced |= atomic_exchange(&force_req, 0);
    ana_capture_collect(on_gpu, NULL);
    if (gpu_collect)
        gpu_collect(forced, on_gpu, NULL);
    ana_live_stage_publish(chunk_len);
    if (forced || !staged || chunk_len >= CHUNK_TARGET || ana_now_ns() - chunk_born >= STAGE_MAX_NS)
        flush_chunk();
    if (!write_failed) {
        /* A thread that ended is free for reuse once all it wrote is staged or written. */
        for (ana_thread *t = list; t; t = t->next)
            if (t->c_state == ANA_T_DEAD && atomic_load(&t->ls->tail) == atomic_load(&t->ls->head))
                atomic_store_explicit(&t->state, ANA_T_FREE, memory_order_release);
    }
    atomic_fetch_add(&passes_done, 1);
}

static void finish(void)
{
    if (!write_failed) {
        pass(1); /* every GPU record CUPTI still holds lands before END */
        ana_record e = { .kind = ANA_K_END };
        e.u.end = (ana_rec_end){ end_reason, { end_detail, (uint32_t)strlen(end_detail) } };
        wrec(&e);
        flush_chunk();
    }
    /* Closes the trace's descriptor only if it is still ours. */
    int ours = ana_fd_is(ana_tw_fd(tw), trace_of.dev, trace_of.ino);
    if (!ours)
        ana_tw_set_fd(tw, -1);
    if (!write_failed && ana_tw_close(tw) == 0 && ours)
        ana_live_finish(); /* the trace is whole: the live file goes */
    else if (write_failed)
        ana_tw_close(tw);
    tw = NULL;
    ana_wake_stop();
}

static void *run(void *arg)
{
    struct timespec ts;
    while (!atomic_load(&stop_req)) {
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += (long)ana_cfg.flush_ms * 1000000L;
        ts.tv_sec += ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        while (ana_wake_wait(&ts) < 0 && errno == EINTR)
            ;
        if (atomic_load(&stop_req) || write_failed)
            break;
        ana_clock_refresh(); /* here rather than in a hook when the time line expires */
        pass(0);
    }
    finish();
    return NULL;
}

static void write_preamble(void)
{
    char host[256] = "", exe[4096] = "", cmd[16384];
    gethostname(host, sizeof(host) - 1);
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    exe[n > 0 ? n : 0] = 0;
    ana_str argv[256];
    uint32_t argc = 0;
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    ssize_t len = fd >= 0 ? read(fd, cmd, sizeof(cmd) - 1) : 0;
    if (fd >= 0)
        close(fd);
    for (ssize_t i = 0; i < len && argc < 256;) {
        size_t l = strnlen(cmd + i, (size_t)(len - i));
        argv[argc++] = (ana_str){ cmd + i, (uint32_t)l };
        i += (ssize_t)l + 1;
    }
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    ana_record p = { .kind = ANA_K_PROCESS };
    p.u.process = (ana_rec_process){
        .pid = (uint64_t)getpid(), .ppid = (uint64_t)getppid(), .rank = ana_env_rank(),
        .local_rank = ana_env_local_rank(), .world_size = ana_env_world_size(),
        .realtime_ns = (uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec,
        .host = { host, (uint32_t)strlen(host) }, .exe = { exe, (uint32_t)strlen(exe) },
        .argv = { argv, argc } };
    wrec(&p);
    for (const ana_config_var *v = ana_config_vars(); v->name; v++) {
        char val[1100];
        const char *field = (const char *)&ana_cfg + v->off;
        if (v->type == ANA_CFG_STR)
            snprintf(val, sizeof(val), "%s", field);
        else if (v->type == ANA_CFG_ENUM)
            ana_config_choice_text(v, *(const int *)field, val, sizeof(val));
        else if (v->off == offsetof(ana_config, root_pid) || v->off == offsetof(ana_config, run_id))
            snprintf(val, sizeof(val), "%ld", *(const long *)field);
        else
            snprintf(val, sizeof(val), "%d", *(const int *)field);
        winfo(v->name, val, NULL);
    }
    winfo("anatomist.version", ANA_VERSION, NULL);
    ana_py_info(winfo, NULL);
}

/* An id for the trace and its live file: random, never 0. */
static uint64_t new_trace_id(void)
{
    uint64_t id = 0;
    if (getrandom(&id, sizeof(id), GRND_NONBLOCK) != (ssize_t)sizeof(id))
        id = ana_now_ns() ^ ((uint64_t)getpid() << 32);
    return id ? id : 1;
}

/* Opens the trace and its live file and writes the first chunk: on the program's thread,
 * so SIGXFSZ is held back (a file size limit fails the write instead of killing). */
static int open_files(const char *path, char *why, size_t cap)
{
    ana_xfsz xf;
    ana_xfsz_hold(&xf);
    uint64_t id = new_trace_id();
    tw = ana_tw_create(path, ana_cfg.zstd_level, id, why, cap);
    if (tw) {
        ana_tw_set_pack(tw, ana_cfg.pack);
        ana_tw_set_fd(tw, ana_ofile_adopt(&trace_of, ana_tw_fd(tw), path));
    }
    if (tw && ana_tw_set_time_shift(tw, ana_cfg.time_shift) < 0) {
        snprintf(why, cap, "cannot write the header: %s", strerror(errno));
        ana_tw_close(tw);
        unlink(path); /* no stub a reader would take for a damaged trace */
        tw = NULL;
    }
    if (tw) {
        uint64_t stage_size;
        if (ana_cfg.live && ana_live_open(path, id, ana_ring_size(), chunk_cap) == 0 &&
            ana_live_stage(&stage_size)) {
            free(chunk);
            chunk = ana_live_stage(&stage_size);
            chunk_cap = (size_t)stage_size;
            staged = 1;
            ana_live_stage_begin(0);
        }
        write_preamble();
        ana_modules_emit_new(on_module, NULL);
        /* A forked child's tables hold its parent's definitions: they go in first. */
        ana_kernels_emit_new(on_kernel, NULL);
        ana_py_emit_new(on_pycode, NULL);
        ana_stacks_emit_new(on_stack, NULL);
        flush_chunk(); /* the header and the process record reach the disk at once */
        if (write_failed)
            snprintf(why, cap, "%s", "the first write failed");
    }
    ana_xfsz_release(&xf);
    return tw && !write_failed ? 0 : -1;
}

int ana_collector_start(const char *path, char *why, size_t cap)
{
    snprintf(trace_path, sizeof(trace_path), "%s", path);
    /* A full chunk plus a whole ring and room for the writer's own records (WREC_ROOM). */
    chunk_cap = ana_ring_size() + CHUNK_TARGET + (256u << 10);
    chunk = malloc(chunk_cap);
    if (!chunk) {
        snprintf(why, cap, "out of memory");
        return -1;
    }
    if (open_files(path, why, cap) < 0)
        return -1;
    ana_wake_start();
    sigset_t all, old;
    sigfillset(&all);
    /* The app's signals are not for our thread; faults stay deliverable (a blocked SIGBUS
     * from a cut live file would kill the process instead of reaching live.c's handler). */
    sigdelset(&all, SIGBUS);
    sigdelset(&all, SIGSEGV);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    /* 2 MiB of stack, not the default 8: address space is the program's (ulimit -v). */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 2u << 20);
    int rc = pthread_create(&thr, &attr, run, NULL);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        snprintf(why, cap, "cannot start the writer thread: %s", strerror(rc));
        return -1;
    }
    return 0;
}

void ana_collector_flush_now(int timeout_ms)
{
    if (!tw)
        return;
    uint64_t target = atomic_load(&passes_started) + 1;
    atomic_store(&force_req, 1);
    ana_wake_post();
    for (int i = 0; i < timeout_ms && atomic_load(&passes_done) < target; i++) {
        struct timespec d = { 0, 1000000 };
        nanosleep(&d, NULL);
    }
}

void ana_collector_stop(uint64_t reason, const char *detail)
{
    if (!tw)
        return;
    end_reason = reason;
    end_detail = detail;
    atomic_store(&stop_req, 1);
    ana_wake_post();
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 5;
    pthread_timedjoin_np(thr, NULL, &ts);
}

void ana_collector_atfork_child(void)
{
    /* The parent owns its file and its writer thread; the child starts its own trace on
     * its first CUDA call. Only async-signal-safe work here: the writer thread may have
     * been inside malloc, zstd or our buffers at the fork, so what it owned (tw, the
     * chunk) is abandoned as it is, never freed; the descriptor is closed if still ours. */
    if (tw)
        ana_ofile_close(&trace_of);
    tw = NULL;
    ana_wake_stop();
    chunk = NULL;
    chunk_len = chunk_cap = 0;
    staged = in_wseg = write_failed = 0;
    atomic_store(&stop_req, 0);
    atomic_store(&force_req, 0);
    atomic_store(&passes_started, 0);
    atomic_store(&passes_done, 0);
}
