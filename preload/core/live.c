/* live.c — the live file beside the trace (format/live.h; live_file.h).
 *
 * The header, the definitions ring and each thread's slot are pages of `T.live` mapped
 * MAP_SHARED, so what threads append outlives the process. Every byte of the file is
 * allocated (posix_fallocate) before it is mapped: a full disk refuses the slot up front
 * instead of raising SIGBUS in the program later, and a thread that gets no slot in the
 * file records into anonymous memory (crash survival is then off for it; said once).
 * The mappings are MADV_DONTFORK: a forked child never writes into its parent's file.
 *
 * Someone else may truncate the file under us (a cleanup script, `: > T.live`): a store to
 * a mapped page past the new end raises SIGBUS in whichever thread made it — the program's.
 * A SIGBUS handler, installed with the file, catches exactly the faults inside our mappings:
 * it puts anonymous memory over every mapping (the store then goes through), and the writer
 * stops with one line. Any other SIGBUS goes on to the program's handler or the default
 * action, as without us. The writer also compares the file's size with what it mapped at
 * each pass, to stop before any thread faults.
 *
 * Called by the writer (collector.c), tbuf.c (slots), stacks.c, pyframes.c and kernels.c
 * (definitions) and lifecycle.c (fork); calls ofile.c, the clock, the configuration and
 * warnings. */
#define _GNU_SOURCE
#include "preload.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "writer.h"

static ana_ofile live_of = { .fd = -1 }; /* ofile.c: checked before each use */
#define live_fd (live_of.fd)
static ana_live_header *hdr;
static uint8_t *defs, *stage;
static char live_path[1100];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t enc[ANA_RECORD_FIXED_MAX + (64 << 10)]; /* under lock (a PYCODE's line table: up to 48 KiB) */
static int said_full;

/* Every mapping of the file, for the SIGBUS handler: appended under lock, read anywhere. */
#define MAX_MAPS 4096
static struct map { void *p; size_t len; } maps[MAX_MAPS];
static _Atomic int nmaps;
static _Atomic int lost;  /* the file was cut under us: the mappings are anonymous now */
static uint64_t mapped_end; /* bytes of the file the mappings cover (under lock) */
static struct sigaction prev_bus;
static _Atomic int bus_installed;

void ana_xfsz_hold(ana_xfsz *x)
{
    int e = errno;
    sigset_t xfsz, pend;
    sigemptyset(&xfsz);
    sigaddset(&xfsz, SIGXFSZ);
    pthread_sigmask(SIG_BLOCK, &xfsz, &x->old);
    sigpending(&pend);
    x->had = sigismember(&pend, SIGXFSZ);
    errno = e;
}

void ana_xfsz_release(ana_xfsz *x)
{
    int e = errno;
    sigset_t xfsz, pend;
    sigemptyset(&xfsz);
    sigaddset(&xfsz, SIGXFSZ);
    sigpending(&pend);
    if (!x->had && sigismember(&pend, SIGXFSZ)) {
        struct timespec zero = { 0, 0 };
        sigtimedwait(&xfsz, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &x->old, NULL);
    errno = e;
}

int ana_file_grow(int fd, uint64_t off, uint64_t len)
{
    ana_xfsz xf;
    ana_xfsz_hold(&xf);
    int rc = posix_fallocate(fd, (off_t)off, (off_t)len);
    ana_xfsz_release(&xf);
    errno = rc;
    return rc ? -1 : 0;
}

/* Anonymous memory over every mapping: async-signal-safe (system calls only). Stores into
 * them go on harmlessly; what they held past the file's new end is gone anyway. */
static void unmap_file(void)
{
    int n = atomic_load(&nmaps);
    for (int i = 0; i < n; i++)
        mmap(maps[i].p, maps[i].len, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

static int in_maps(const void *a)
{
    int n = atomic_load(&nmaps);
    for (int i = 0; i < n; i++)
        if ((const char *)a >= (const char *)maps[i].p && (const char *)a < (const char *)maps[i].p + maps[i].len)
            return 1;
    return 0;
}

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
    int e = errno;
    if (si && in_maps(si->si_addr)) {
        atomic_store(&lost, 1);
        unmap_file();
        errno = e;
        return; /* the faulting store runs again, into anonymous memory */
    }
    /* Not ours: as if we were not here. */
    if (prev_bus.sa_flags & SA_SIGINFO) {
        prev_bus.sa_sigaction(sig, si, uc);
    } else if (prev_bus.sa_handler != SIG_DFL && prev_bus.sa_handler != SIG_IGN) {
        prev_bus.sa_handler(sig);
    } else {
        /* The fault happens again on return, and now takes the default action. */
        sigaction(SIGBUS, &prev_bus, NULL);
    }
    errno = e;
}

static void install_sigbus(void)
{
    if (atomic_exchange(&bus_installed, 1))
        return;
    struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &prev_bus);
}

static void *map_shared(uint64_t off, uint64_t len)
{
    int n = atomic_load(&nmaps);
    if (n >= MAX_MAPS || ana_ofile_fd(&live_of) < 0)
        return NULL;
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, live_fd, (off_t)off);
    if (p == MAP_FAILED)
        return NULL;
    maps[n] = (struct map){ p, len };
    atomic_store(&nmaps, n + 1);
    if (off + len > mapped_end)
        mapped_end = off + len;
    madvise(p, len, MADV_DONTFORK);
    madvise(p, len, MADV_RANDOM); /* no readahead: a first touch zero-fills one page, not a window */
    return p;
}

int ana_live_open(const char *trace_path, uint64_t trace_id, uint64_t ring_size, uint64_t stage_size)
{
    char why[256];
    snprintf(live_path, sizeof(live_path), "%s%s", trace_path, ANA_LIVE_SUFFIX);
    ana_ofile_adopt(&live_of, ana_file_create(live_path, why, sizeof(why)), live_path);
    stage_size = (stage_size + 4095) & ~(uint64_t)4095;
    uint64_t first = ANA_LIVE_HEADER_SIZE + ANA_LIVE_DEFS_SIZE + stage_size;
    if (live_fd < 0 || ana_file_grow(live_fd, 0, first) < 0 || !(hdr = map_shared(0, first))) {
        if (live_fd >= 0) {
            snprintf(why, sizeof(why), "%s", strerror(errno));
            ana_ofile_close(&live_of);
            unlink(live_path);
        }
        live_fd = -1;
        ana_warn("cannot keep records in %s (%s): a crash may lose the last %d ms of the trace",
                 live_path, why, ana_cfg.flush_ms);
        return -1;
    }
    defs = (uint8_t *)hdr + ANA_LIVE_HEADER_SIZE;
    stage = defs + ANA_LIVE_DEFS_SIZE;
    hdr->stage_off = ANA_LIVE_HEADER_SIZE + ANA_LIVE_DEFS_SIZE;
    hdr->stage_size = stage_size;
    hdr->version = ANA_LIVE_VERSION;
    hdr->header_size = ANA_LIVE_HEADER_SIZE;
    hdr->trace_id = trace_id;
    hdr->pid = (uint64_t)getpid();
    hdr->defs_off = ANA_LIVE_HEADER_SIZE;
    hdr->defs_size = ANA_LIVE_DEFS_SIZE;
    hdr->slots_off = first;
    hdr->slot_stride = ANA_LIVE_SLOT_HEADER + ring_size;
    hdr->created_ns = ana_now_ns();
    ana_live_identity(hdr->boot_id, &hdr->pidns);
    hdr->run_id = (uint64_t)ana_cfg.run_id;
    install_sigbus();
    atomic_store_explicit((_Atomic uint64_t *)&hdr->nslots, 0, memory_order_relaxed);
    memcpy(hdr->magic, ANA_LIVE_MAGIC, 8);
    return 0;
}

static ana_live_slot *slot_init(void *mem, uint64_t ring_size)
{
    ana_live_slot *s = mem;
    s->ring_size = ring_size;
    atomic_store(&s->pend_seq, ANA_LIVE_NONE);
    memcpy(s->magic, ANA_LIVE_SLOT_MAGIC, 8);
    return s;
}

/* A slot in the file; NULL when the file cannot grow (or there is none). */
static ana_live_slot *file_slot(uint64_t ring_size)
{
    if (live_fd < 0 || !hdr || hdr->slot_stride != ANA_LIVE_SLOT_HEADER + ring_size)
        return NULL;
    pthread_mutex_lock(&lock);
    uint64_t i = atomic_load(&hdr->nslots), off = hdr->slots_off + i * hdr->slot_stride;
    void *mem = NULL;
    errno = EBADF;
    if (!atomic_load(&lost) && ana_ofile_fd(&live_of) >= 0 && ana_file_grow(live_fd, off, hdr->slot_stride) == 0)
        mem = map_shared(off, hdr->slot_stride);
    int e = errno;
    if (mem) {
        slot_init(mem, ring_size);
        atomic_store_explicit(&hdr->nslots, i + 1, memory_order_release);
    }
    pthread_mutex_unlock(&lock);
    if (!mem && !said_full) {
        said_full = 1;
        ana_warn("cannot grow %s (%s): threads that start recording from now on may lose "
                 "their last records if the program is killed", live_path, strerror(e));
    }
    return mem;
}

ana_live_slot *ana_live_slot_new(uint64_t ring_size)
{
    ana_live_slot *s = file_slot(ring_size);
    if (s)
        return s;
    void *mem = mmap(NULL, ANA_LIVE_SLOT_HEADER + ring_size, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return mem == MAP_FAILED ? NULL : slot_init(mem, ring_size);
}

void ana_live_def(const ana_record *r)
{
    if (!hdr)
        return;
    pthread_mutex_lock(&lock);
    ana_record rec = *r;
    rec.time_ns = 0; /* definitions carry no time */
    size_t n = ana_record_encode(enc, sizeof(enc), &rec, 0);
    uint64_t head = atomic_load_explicit(&hdr->defs_head, memory_order_relaxed);
    uint64_t tail = atomic_load_explicit(&hdr->defs_tail, memory_order_acquire);
    if (n == 0 || ANA_LIVE_DEFS_SIZE - (head - tail) < n) {
        atomic_fetch_add(&hdr->defs_lost, 1);
    } else {
        uint64_t pos = head & (ANA_LIVE_DEFS_SIZE - 1);
        size_t first = n < ANA_LIVE_DEFS_SIZE - pos ? n : (size_t)(ANA_LIVE_DEFS_SIZE - pos);
        memcpy(defs + pos, enc, first);
        memcpy(defs, enc + first, n - first);
        atomic_store_explicit(&hdr->defs_head, head + n, memory_order_release);
    }
    pthread_mutex_unlock(&lock);
}

uint64_t ana_live_defs_snapshot(void)
{
    return hdr ? atomic_load_explicit(&hdr->defs_head, memory_order_acquire) : 0;
}

void ana_live_defs_commit(uint64_t head)
{
    if (hdr)
        atomic_store_explicit(&hdr->defs_tail, head, memory_order_release);
}

uint8_t *ana_live_stage(uint64_t *size)
{
    *size = stage ? hdr->stage_size : 0;
    return stage;
}

void ana_live_stage_begin(uint64_t seq)
{
    if (!stage)
        return;
    /* len first: a reader never pairs the new seq with the old chunk's bytes */
    atomic_store_explicit(&hdr->stage_len, 0, memory_order_release);
    atomic_store_explicit(&hdr->stage_seq, seq, memory_order_release);
}

void ana_live_stage_publish(uint64_t len)
{
    if (stage)
        atomic_store_explicit(&hdr->stage_len, len, memory_order_release);
}

int ana_live_set_end(uint64_t reason, const char *detail)
{
    if (!hdr)
        return 0;
    snprintf(hdr->end_detail, sizeof(hdr->end_detail), "%s", detail);
    atomic_store(&hdr->end_reason, reason);
    return 1;
}

void ana_live_finish(void)
{
    /* The mappings stay: a thread still appending after the END lands in pages that no
     * file holds any more, harmlessly. */
    pthread_mutex_lock(&lock);
    if (live_fd >= 0) {
        unlink(live_path);
        ana_ofile_close(&live_of);
    }
    pthread_mutex_unlock(&lock);
}

int ana_live_check(void)
{
    if (atomic_load(&lost))
        return -1;
    struct stat sb;
    pthread_mutex_lock(&lock);
    int fd = hdr ? ana_ofile_fd(&live_of) : -1;
    int cut = fd >= 0 && fstat(fd, &sb) == 0 && (uint64_t)sb.st_size < mapped_end;
    if (cut) {
        atomic_store(&lost, 1);
        unmap_file();
    }
    pthread_mutex_unlock(&lock);
    return atomic_load(&lost) ? -1 : 0;
}

void ana_live_atfork_child(void)
{
    /* The parent's mappings are not in the child (MADV_DONTFORK); its descriptor is (closed
     * only if the number is still ours). */
    ana_ofile_close(&live_of);
    atomic_store(&nmaps, 0);
    atomic_store(&lost, 0);
    mapped_end = 0;
    hdr = NULL;
    defs = stage = NULL;
    said_full = 0;
    pthread_mutex_init(&lock, NULL);
}
