/* kernels.c — device-function registry: host stub / kernel handle -> kernel id -> name.
 *
 * Registration (__cudaRegisterFunction, __cudaGetKernel) is rare and takes a mutex;
 * lookups on the launch path are lock-free reads of open-addressing tables whose keys are
 * published with release stores after their values. The collector writes KERNEL records
 * for new entries before draining the rings, so a KERNEL record precedes its launches.
 *
 * Names that arrive only with GPU activity (CUPTI kernel records) are interned by the
 * collector thread alone (ana_kernel_intern_name): a registered kernel of the same name
 * keeps its id, any other name becomes a new entry with host_fn 0. The name index that
 * serves this is the collector's own; it catches up with registrations on each call.
 *
 * Called by hooks/launch.c (registration, ids), cupti/ (ids, names of GPU records), the
 * writer (KERNEL records) and lifecycle.c (fork); calls live.c and stacks.c (ana_reserve). */
#define _GNU_SOURCE
#include "preload.h"

#include <pthread.h>
#include <string.h>

#define MAP_BITS 18
#define MAP_SIZE (1u << MAP_BITS)
#define MAX_KERNELS (1u << 17)
#define NAMES_BYTES (64u << 20)

struct kslot {
    _Atomic uintptr_t key;
    _Atomic uint32_t id;
};
struct kentry {
    uintptr_t host_fn;
    uint32_t name_off;
};

static struct kslot *fn_map, *handle_map;
static struct kentry *kentries;
static char *names;
static uint32_t names_used;
static _Atomic uint32_t kcount = 1; /* next id; ids start at 1 */
static uint32_t kemitted = 1;       /* collector-owned */
static uint32_t *name_index;        /* collector-owned: name hash -> id (0 = empty) */
static uint32_t name_indexed = 1;   /* collector-owned: entries below this are indexed */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;

static int ensure_tables(void)
{
    if (fn_map)
        return 0;
    size_t map_bytes = sizeof(struct kslot) * MAP_SIZE;
    size_t total = 2 * map_bytes + sizeof(struct kentry) * MAX_KERNELS + NAMES_BYTES;
    uint8_t *p = ana_reserve(total);
    if (!p)
        return -1;
    handle_map = (struct kslot *)(p + map_bytes);
    kentries = (struct kentry *)(p + 2 * map_bytes);
    names = (char *)(p + 2 * map_bytes + sizeof(struct kentry) * MAX_KERNELS);
    fn_map = (struct kslot *)p; /* last: lookups test fn_map */
    return 0;
}

static inline uint32_t slot_of(uintptr_t key) { return (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> (64 - MAP_BITS)); }

static uint32_t lookup(struct kslot *map, uintptr_t key)
{
    if (!map || !key)
        return 0;
    for (uint32_t i = 0, s = slot_of(key); i < MAP_SIZE; i++, s = (s + 1) & (MAP_SIZE - 1)) {
        uintptr_t k = atomic_load_explicit(&map[s].key, memory_order_acquire);
        if (k == key)
            return atomic_load_explicit(&map[s].id, memory_order_relaxed);
        if (k == 0)
            return 0;
    }
    return 0;
}

/* Caller holds reg_lock. Re-registration of a key updates its id. */
static void insert(struct kslot *map, uintptr_t key, uint32_t id)
{
    for (uint32_t i = 0, s = slot_of(key); i < MAP_SIZE / 2; i++, s = (s + 1) & (MAP_SIZE - 1)) {
        uintptr_t k = atomic_load_explicit(&map[s].key, memory_order_relaxed);
        if (k == key || k == 0) {
            atomic_store_explicit(&map[s].id, id, memory_order_relaxed);
            atomic_store_explicit(&map[s].key, key, memory_order_release);
            return;
        }
    }
}

/* Adds an entry (host_fn may be 0: known by name only); returns its id, 0 when full. */
static uint32_t add_entry(uintptr_t host_fn, const char *name)
{
    pthread_mutex_lock(&reg_lock);
    uint32_t id = atomic_load_explicit(&kcount, memory_order_relaxed);
    size_t len = strlen(name);
    if (ensure_tables() == 0 && id < MAX_KERNELS && names_used + len + 1 <= NAMES_BYTES) {
        memcpy(names + names_used, name, len + 1);
        kentries[id].host_fn = host_fn;
        kentries[id].name_off = names_used;
        names_used += (uint32_t)len + 1;
        if (host_fn)
            insert(fn_map, host_fn, id);
        atomic_store_explicit(&kcount, id + 1, memory_order_release);
        ana_record def = { .kind = ANA_K_KERNEL }; /* for the live file (live.c) */
        def.u.kernel = (ana_rec_kernel){ id, host_fn, { name, (uint32_t)(len > 8192 ? 8192 : len) } };
        ana_live_def(&def);
    } else {
        id = 0;
    }
    pthread_mutex_unlock(&reg_lock);
    return id;
}

void ana_kernel_register(const void *host_fn, const char *name)
{
    if (host_fn && name)
        add_entry((uintptr_t)host_fn, name);
}

void ana_kernel_map_handle(const void *handle, const void *host_fn)
{
    uint32_t id = lookup(fn_map, (uintptr_t)host_fn);
    if (!handle || !id || lookup(handle_map, (uintptr_t)handle) == id)
        return;
    pthread_mutex_lock(&reg_lock);
    insert(handle_map, (uintptr_t)handle, id);
    pthread_mutex_unlock(&reg_lock);
}

uint64_t ana_kernel_id_of_fn(const void *host_fn) { return lookup(fn_map, (uintptr_t)host_fn); }
uint64_t ana_kernel_id_of_handle(const void *handle) { return lookup(handle_map, (uintptr_t)handle); }

/* ---- names (collector thread only) ---- */

#define NAME_INDEX_SIZE (2 * MAX_KERNELS) /* power of two, at most half full */

static uint32_t name_hash(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

/* The index slot holding `name`, or the empty slot where it belongs. */
static uint32_t *name_slot(const char *name)
{
    uint32_t i = name_hash(name) & (NAME_INDEX_SIZE - 1);
    while (name_index[i] && strcmp(names + kentries[name_index[i]].name_off, name) != 0)
        i = (i + 1) & (NAME_INDEX_SIZE - 1);
    return &name_index[i];
}

/* Indexes entries registered since the last call; the first of equal names wins. */
static void index_catch_up(void)
{
    uint32_t end = atomic_load_explicit(&kcount, memory_order_acquire);
    for (; name_indexed < end; name_indexed++) {
        uint32_t *slot = name_slot(names + kentries[name_indexed].name_off);
        if (!*slot)
            *slot = name_indexed;
    }
}

uint64_t ana_kernel_intern_name(const char *name)
{
    if (!name || !*name)
        return 0;
    if (!name_index) {
        void *p = ana_reserve(sizeof(uint32_t) * NAME_INDEX_SIZE);
        if (!p)
            return 0;
        name_index = p;
    }
    index_catch_up();
    uint32_t *slot = name_slot(name);
    if (*slot)
        return *slot;
    uint32_t id = add_entry(0, name);
    index_catch_up(); /* indexes the new entry (and any registered meanwhile) */
    return id;
}

void ana_kernels_emit_new(void (*fn)(uint64_t id, uint64_t host_fn, const char *name, void *arg), void *arg)
{
    uint32_t end = atomic_load_explicit(&kcount, memory_order_acquire);
    for (; kemitted < end; kemitted++)
        fn(kemitted, kentries[kemitted].host_fn, names + kentries[kemitted].name_off, arg);
}

void ana_kernels_atfork_child(void)
{
    pthread_mutex_init(&reg_lock, NULL);
    kemitted = 1; /* the child's trace needs every definition again */
}
