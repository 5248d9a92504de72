/* stacks.c — process-wide interning of call stacks (stacks.h); capture is unwind.c's,
 * which calls it, as do pyframes.c, kernels.c, calls/kargs.c (ana_reserve) and the writer.
 *
 * Interning is a lock-free open-addressing table: a slot is claimed by CAS (0 -> BUSY),
 * its entry is filled, then the slot's key is published with a release store. Readers that meet a BUSY
 * slot probe on; at worst two ids get identical frames, which the format allows. Entries
 * are written out by the collector (ana_stacks_emit_new) before the records that use them
 * are drained, so a STACK record always precedes its uses in the file. Each new entry is
 * also mirrored into the live file (ana_live_def) before its id is returned, so the
 * records of a killed process find their stacks there. */
#define _GNU_SOURCE
#include "preload.h"

#include <string.h>
#include <sys/mman.h>

#define SLOT_BITS 18
#define SLOTS (1u << SLOT_BITS)
#define MAX_IDS (1u << 20)
#define MAX_FRAMES_TOTAL (1u << 23) /* 64 MiB of addresses, reserved lazily */
#define PROBES 64
#define BUSY 1ull

struct slot {
    _Atomic uint64_t key;
    _Atomic uint32_t id;
};
struct entry {
    uint64_t off;
    uint32_t n;
    _Atomic uint32_t ready;
};

static struct slot *slots;
static struct entry *entries;
static uint64_t *frames;
static uint8_t *emitted; /* collector-owned */
static _Atomic uint32_t next_id = 1;
static _Atomic uint64_t frames_used;
static uint32_t emit_cursor = 1;

void *ana_reserve(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

int ana_stacks_init(void)
{
    slots = ana_reserve(sizeof(struct slot) * SLOTS);
    entries = ana_reserve(sizeof(struct entry) * MAX_IDS);
    frames = ana_reserve(sizeof(uint64_t) * MAX_FRAMES_TOTAL);
    emitted = ana_reserve(MAX_IDS);
    if (!slots || !entries || !frames || !emitted) {
        ana_warn("call stacks are off: no room for their tables (%zu MiB of address space; "
                 "is there a limit, ulimit -v?)", (sizeof(struct slot) * SLOTS + sizeof(struct entry) *
                 MAX_IDS + sizeof(uint64_t) * MAX_FRAMES_TOTAL + MAX_IDS) >> 20);
        return -1;
    }
    return 0;
}

static uint64_t hash_frames(const uint64_t *ip, uint32_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
    for (uint32_t i = 0; i < n; i++) {
        h = (h ^ ip[i]) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    return h | (1ull << 63); /* never 0 (empty) nor BUSY */
}

static uint32_t new_entry(const uint64_t *ip, uint32_t n)
{
    uint64_t off = atomic_fetch_add_explicit(&frames_used, n, memory_order_relaxed);
    if (off + n > MAX_FRAMES_TOTAL)
        return 0;
    uint32_t id = atomic_fetch_add_explicit(&next_id, 1, memory_order_relaxed);
    if (id >= MAX_IDS)
        return 0;
    memcpy(frames + off, ip, n * sizeof(uint64_t));
    entries[id].off = off;
    entries[id].n = n;
    atomic_store_explicit(&entries[id].ready, 1, memory_order_release);
    /* Mirrored after `ready`: the writer, which commits the mirror up to where it stood
     * when a pass began, then finds every mirrored entry ready and writes it. */
    ana_record def = { .kind = ANA_K_STACK };
    def.u.stack = (ana_rec_stack){ id, { ip, n } };
    ana_live_def(&def);
    return id;
}

static int same(uint32_t id, const uint64_t *ip, uint32_t n)
{
    if (id == 0 || id >= MAX_IDS || entries[id].n != n)
        return 0;
    return memcmp(frames + entries[id].off, ip, n * sizeof(uint64_t)) == 0;
}

uint64_t ana_stack_intern(const uint64_t *ip, uint32_t n)
{
    if (!slots)
        return 0;
    uint64_t key = hash_frames(ip, n);
    for (uint32_t i = 0; i < PROBES; i++) {
        struct slot *s = &slots[(key + i) & (SLOTS - 1)];
        uint64_t k = atomic_load_explicit(&s->key, memory_order_acquire);
        if (k == 0) {
            if (atomic_compare_exchange_strong(&s->key, &k, BUSY)) {
                uint32_t id = new_entry(ip, n);
                atomic_store_explicit(&s->id, id, memory_order_relaxed);
                atomic_store_explicit(&s->key, id ? key : BUSY, memory_order_release);
                return id;
            }
        }
        if (k == key && same(atomic_load_explicit(&s->id, memory_order_relaxed), ip, n))
            return atomic_load_explicit(&s->id, memory_order_relaxed);
    }
    return new_entry(ip, n); /* table crowded here: define it without interning */
}

uint32_t ana_stack_frames(uint64_t id, const uint64_t **ips)
{
    if (!entries || id == 0 || id >= MAX_IDS || !atomic_load_explicit(&entries[id].ready, memory_order_acquire))
        return 0;
    *ips = frames + entries[id].off;
    return entries[id].n;
}

void ana_defs_emit(uint32_t *cursor, uint32_t end, uint8_t *emitted, int (*ready)(uint32_t id),
                   void (*emit)(uint32_t id, void *arg), void *arg)
{
    int contiguous = 1;
    for (uint32_t id = *cursor; id < end; id++) {
        if (emitted[id])
            goto next;
        if (!ready(id)) {
            contiguous = 0; /* being filled right now: next pass */
            continue;
        }
        emit(id, arg);
        emitted[id] = 1;
    next:
        if (contiguous)
            *cursor = id + 1;
    }
}

static int stack_ready(uint32_t id) { return atomic_load_explicit(&entries[id].ready, memory_order_acquire); }

struct stack_emit {
    void (*fn)(uint64_t id, const uint64_t *ips, uint32_t n, void *arg);
    void *arg;
};

static void stack_emit(uint32_t id, void *arg)
{
    const struct stack_emit *e = arg;
    e->fn(id, frames + entries[id].off, entries[id].n, e->arg);
}

void ana_stacks_emit_new(void (*fn)(uint64_t id, const uint64_t *ips, uint32_t n, void *arg), void *arg)
{
    if (!entries)
        return;
    uint32_t end = atomic_load_explicit(&next_id, memory_order_acquire);
    struct stack_emit e = { fn, arg };
    ana_defs_emit(&emit_cursor, end > MAX_IDS ? MAX_IDS : end, emitted, stack_ready, stack_emit, &e);
}

int ana_stacks_atfork_child(void)
{
    if (!emitted)
        return 0;
    uint32_t end = atomic_load(&next_id);
    memset(emitted, 0, end < MAX_IDS ? end : MAX_IDS);
    emit_cursor = 1;
    return 1;
}
