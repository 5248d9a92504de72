/*
 * shm.c — the shared-memory segment where the ranks of one communicator meet.
 *
 * Name: ANA_NCCL_SHM_PREFIX + 32 hex digits of the unique id's first 16 bytes. The first
 * rank to arrive creates it (O_CREAT|O_EXCL: exactly one creator), sizes it, initialises a
 * process-shared robust mutex and a CLOCK_MONOTONIC condition variable in it, and
 * publishes a magic number last; the others open it, wait for the magic and check the
 * rank count. Layout (offsets from seg_layout): the header, one "joined" byte per rank,
 * one ana_nccl_slot per rank, posted/consumed message counters per (src, dst) pair, and
 * ANA_NCCL_SLOT_BYTES of staging per rank (the file is sparse: untouched pages cost
 * nothing).
 *
 * Every wait ends after the communicator's timeout: the waiter marks the segment broken
 * (so every other waiter fails at once instead of waiting out its own timeout) and fails.
 * A rank that dies holding the mutex leaves it EOWNERDEAD: the next locker makes it
 * consistent and marks the segment broken too. The last rank to leave — or any rank
 * leaving a broken segment — unlinks the segment and every message not received.
 */
#define _GNU_SOURCE
#include "nccl_sim.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SEG_MAGIC 0x414e4343u /* "ANCC" */

struct ana_nccl_seg {
    _Atomic uint32_t magic;       /* SEG_MAGIC once initialised */
    int32_t nranks;
    pthread_mutex_t mu;
    pthread_cond_t cv;            /* broadcast on every change below */
    int32_t joined, left, broken;
    int32_t barrier_count;
    uint64_t barrier_gen;
};

struct seg_layout {
    size_t joined, slots, posted, consumed, staging, total;
};

static size_t align_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

static struct seg_layout seg_layout(int nranks)
{
    size_t n = (size_t)nranks;
    struct seg_layout l;
    l.joined = align_up(sizeof(struct ana_nccl_seg), 64);
    l.slots = align_up(l.joined + n, 64);
    l.posted = align_up(l.slots + n * sizeof(ana_nccl_slot), 64);
    l.consumed = l.posted + n * n * sizeof(uint64_t);
    l.staging = align_up(l.consumed + n * n * sizeof(uint64_t), 4096);
    l.total = l.staging + n * ANA_NCCL_SLOT_BYTES;
    return l;
}

static void *at(struct ncclComm *c, size_t off) { return (unsigned char *)c->seg + off; }
static uint8_t *joined_flags(struct ncclComm *c) { return at(c, seg_layout(c->nranks).joined); }
static uint64_t *posted(struct ncclComm *c) { return at(c, seg_layout(c->nranks).posted); }
static uint64_t *consumed(struct ncclComm *c) { return at(c, seg_layout(c->nranks).consumed); }

ana_nccl_slot *ana_nccl_slots(struct ncclComm *c) { return at(c, seg_layout(c->nranks).slots); }

unsigned char *ana_nccl_staging(struct ncclComm *c, int r)
{
    return (unsigned char *)at(c, seg_layout(c->nranks).staging) +
           (size_t)r * ANA_NCCL_SLOT_BYTES;
}

int ana_nccl_timeout_ms(void)
{
    const char *v = getenv(ANA_NCCL_TIMEOUT_ENV);
    char *end;
    long ms = v ? strtol(v, &end, 10) : 0;
    if (!v || end == v || *end != '\0' || ms <= 0 || ms > 24L * 3600 * 1000)
        return ANA_NCCL_TIMEOUT_MS;
    return (int)ms;
}

static struct timespec deadline_after(int ms)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

static void seg_lock(struct ana_nccl_seg *s)
{
    if (pthread_mutex_lock(&s->mu) == EOWNERDEAD) {
        s->broken = 1;              /* a rank died inside: its state is unknown */
        pthread_mutex_consistent(&s->mu);
    }
}

static void seg_unlock(struct ana_nccl_seg *s) { pthread_mutex_unlock(&s->mu); }

/* Waits for a broadcast until `deadline`; 0 when woken, -1 when the deadline passed
 * (the segment is then marked broken and everyone is woken). Called with the lock held. */
static int seg_wait(struct ana_nccl_seg *s, const struct timespec *deadline)
{
    int rc = pthread_cond_timedwait(&s->cv, &s->mu, deadline);
    if (rc == EOWNERDEAD) {
        s->broken = 1;
        pthread_mutex_consistent(&s->mu);
    }
    if (rc == ETIMEDOUT) {
        s->broken = 1;
        pthread_cond_broadcast(&s->cv);
        return -1;
    }
    return 0;
}

static int seg_init(struct ana_nccl_seg *s, int nranks)
{
    pthread_mutexattr_t ma;
    pthread_condattr_t ca;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
    pthread_condattr_init(&ca);
    pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int bad = pthread_mutex_init(&s->mu, &ma) != 0 || pthread_cond_init(&s->cv, &ca) != 0;
    pthread_mutexattr_destroy(&ma);
    pthread_condattr_destroy(&ca);
    s->nranks = nranks;
    atomic_store_explicit(&s->magic, SEG_MAGIC, memory_order_release);
    return bad ? -1 : 0;
}

static int before(const struct timespec *deadline)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec < deadline->tv_sec ||
           (now.tv_sec == deadline->tv_sec && now.tv_nsec < deadline->tv_nsec);
}

/* Opens (or creates) the segment file: the fd, and whether this rank created it. Another
 * rank's file may not be sized yet: waits for it until the deadline. */
static int open_segment(const char *name, size_t size, const struct timespec *deadline,
                        int *created)
{
    static const struct timespec ms1 = { 0, 1000000L };
    for (;;) {
        int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
        if (fd >= 0) {
            *created = 1;
            if (ftruncate(fd, (off_t)size) != 0) {
                close(fd);
                shm_unlink(name);
                return -1;
            }
            return fd;
        }
        if (errno != EEXIST)
            return -1;
        fd = shm_open(name, O_RDWR, 0600);
        struct stat st;
        while (fd >= 0 && fstat(fd, &st) == 0 && st.st_size == 0 && before(deadline))
            nanosleep(&ms1, NULL);
        if (fd >= 0) {
            *created = 0;
            return fd;
        }
        if (errno != ENOENT || !before(deadline)) /* ENOENT: unlinked meanwhile, retry */
            return -1;
    }
}

static ncclResult_t map_segment(struct ncclComm *c, const struct timespec *deadline)
{
    static const struct timespec ms1 = { 0, 1000000L };
    struct seg_layout l = seg_layout(c->nranks);
    int created = 0;
    int fd = open_segment(c->name, l.total, deadline, &created);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0)
            close(fd);
        return ana_nccl_fail(ncclSystemError, "shared memory %s: %s", c->name,
                             strerror(errno));
    }
    if ((size_t)st.st_size != l.total) {
        close(fd);
        return ana_nccl_fail(ncclInvalidArgument, "%s was made for another rank count",
                             c->name);
    }
    void *p = mmap(NULL, l.total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return ana_nccl_fail(ncclSystemError, "mmap %s: %s", c->name, strerror(errno));
    c->seg = p;
    c->seg_bytes = l.total;
    if (created && seg_init(c->seg, c->nranks) != 0)
        return ana_nccl_fail(ncclSystemError, "cannot initialise %s", c->name);
    while (atomic_load_explicit(&c->seg->magic, memory_order_acquire) != SEG_MAGIC &&
           before(deadline))
        nanosleep(&ms1, NULL);
    if (atomic_load_explicit(&c->seg->magic, memory_order_acquire) != SEG_MAGIC)
        return ana_nccl_fail(ncclSystemError, "%s was never initialised", c->name);
    return ncclSuccess;
}

static void unmap(struct ncclComm *c)
{
    if (c->seg)
        munmap(c->seg, c->seg_bytes);
    c->seg = NULL;
}

ncclResult_t ana_nccl_seg_join(struct ncclComm *c)
{
    struct timespec deadline = deadline_after(c->timeout_ms);
    ncclResult_t r = map_segment(c, &deadline);
    if (r != ncclSuccess) {
        unmap(c);
        return r;
    }
    struct ana_nccl_seg *s = c->seg;
    seg_lock(s);
    if (joined_flags(c)[c->rank]) {
        seg_unlock(s);
        unmap(c);
        return ana_nccl_fail(ncclInvalidArgument, "rank %d joined communicator %s twice",
                             c->rank, c->name);
    }
    joined_flags(c)[c->rank] = 1;
    s->joined++;
    pthread_cond_broadcast(&s->cv);
    while (s->joined < s->nranks && !s->broken && seg_wait(s, &deadline) == 0)
        ;
    int joined = s->joined, ok = s->joined == s->nranks && !s->broken;
    seg_unlock(s);
    if (ok)
        return ncclSuccess;
    fprintf(stderr, "anatomist-sim: ncclCommInitRank: rank %d: only %d of %d ranks joined "
                    "within %d ms (%s)\n", c->rank, joined, c->nranks, c->timeout_ms,
            ANA_NCCL_TIMEOUT_ENV);
    shm_unlink(c->name);
    unmap(c);
    return ana_nccl_fail(ncclSystemError, "only %d of %d ranks joined within %d ms", joined,
                         c->nranks, c->timeout_ms);
}

/* Unlinks every message that was posted and never received. */
static void unlink_messages(struct ncclComm *c)
{
    char name[ANA_NCCL_SHM_NAME_MAX];
    for (int src = 0; src < c->nranks; src++)
        for (int dst = 0; dst < c->nranks; dst++) {
            size_t k = (size_t)src * (size_t)c->nranks + (size_t)dst;
            for (uint64_t n = consumed(c)[k]; n < posted(c)[k]; n++) {
                ana_nccl_msg_name(c, src, dst, n, name);
                shm_unlink(name);
            }
        }
}

void ana_nccl_seg_leave(struct ncclComm *c, int abort)
{
    struct ana_nccl_seg *s = c->seg;
    if (!s)
        return;
    seg_lock(s);
    if (abort)
        s->broken = 1;
    s->left++;
    int last = s->left == s->nranks || s->broken;
    pthread_cond_broadcast(&s->cv);
    if (last) {
        unlink_messages(c);
        shm_unlink(c->name);
    }
    seg_unlock(s);
    unmap(c);
}

ncclResult_t ana_nccl_barrier(struct ncclComm *c)
{
    struct ana_nccl_seg *s = c->seg;
    struct timespec deadline = deadline_after(c->timeout_ms);
    seg_lock(s);
    uint64_t gen = s->barrier_gen;
    if (!s->broken && ++s->barrier_count == s->nranks) {
        s->barrier_count = 0;
        s->barrier_gen++;
        pthread_cond_broadcast(&s->cv);
    }
    while (s->barrier_gen == gen && !s->broken && seg_wait(s, &deadline) == 0)
        ;
    int ok = s->barrier_gen != gen;
    seg_unlock(s);
    if (ok)
        return ncclSuccess;
    return ana_nccl_fail(ncclRemoteError, "rank %d: a peer of communicator %s did not "
                         "arrive within %d ms or failed", c->rank, c->name, c->timeout_ms);
}

void ana_nccl_msg_name(const struct ncclComm *c, int src, int dst, uint64_t n,
                       char out[ANA_NCCL_SHM_NAME_MAX])
{
    snprintf(out, ANA_NCCL_SHM_NAME_MAX, "%s-%d-%d-%llu", c->name, src, dst,
             (unsigned long long)n);
}

ncclResult_t ana_nccl_post(struct ncclComm *c, int dst)
{
    struct ana_nccl_seg *s = c->seg;
    seg_lock(s);
    posted(c)[(size_t)c->rank * (size_t)c->nranks + (size_t)dst]++;
    pthread_cond_broadcast(&s->cv);
    seg_unlock(s);
    return ncclSuccess;
}

ncclResult_t ana_nccl_wait_posted(struct ncclComm *c, int src, uint64_t n)
{
    struct ana_nccl_seg *s = c->seg;
    struct timespec deadline = deadline_after(c->timeout_ms);
    size_t k = (size_t)src * (size_t)c->nranks + (size_t)c->rank;
    seg_lock(s);
    while (posted(c)[k] <= n && !s->broken && seg_wait(s, &deadline) == 0)
        ;
    int ok = posted(c)[k] > n;
    seg_unlock(s);
    if (ok)
        return ncclSuccess;
    return ana_nccl_fail(ncclRemoteError, "rank %d: no message from rank %d within %d ms",
                         c->rank, src, c->timeout_ms);
}

void ana_nccl_msg_done(struct ncclComm *c, int src)
{
    struct ana_nccl_seg *s = c->seg;
    seg_lock(s);
    consumed(c)[(size_t)src * (size_t)c->nranks + (size_t)c->rank]++;
    seg_unlock(s);
}
