/* modules.c — the module map: every loaded ELF object with its load bias, address range,
 * build-id and path, so the analyzer can symbolize addresses offline (MODULE records);
 * and the preload's own text range. Runs on the collector thread (and at start-up for
 * ana_modules_find_self: lifecycle.c, unwind.c). Calls nothing of the preload. */
#define _GNU_SOURCE
#include "preload.h"

#include <elf.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

uintptr_t ana_self_lo, ana_self_hi;

struct seen {
    uintptr_t bias, lo;
};
static struct seen *seen;
static size_t nseen, capseen;
static unsigned long long last_adds = ~0ull, last_subs = ~0ull;

static void range_of(const struct dl_phdr_info *info, uintptr_t *lo, uintptr_t *hi)
{
    uintptr_t l = UINTPTR_MAX, h = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t a = info->dlpi_addr + ph->p_vaddr;
        if (a < l)
            l = a;
        if (a + ph->p_memsz > h)
            h = a + ph->p_memsz;
    }
    *lo = l == UINTPTR_MAX ? 0 : l;
    *hi = h;
}

static size_t build_id(const struct dl_phdr_info *info, const uint8_t **out)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
        const uint8_t *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
            const uint8_t *name = p + sizeof(*nh);
            const uint8_t *desc = name + ((nh->n_namesz + 3) & ~3u);
            if (desc + nh->n_descsz > end)
                break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4)) {
                *out = desc;
                return nh->n_descsz;
            }
            p = desc + ((nh->n_descsz + 3) & ~3u);
        }
    }
    return 0;
}

static int was_seen(uintptr_t bias, uintptr_t lo)
{
    for (size_t i = 0; i < nseen; i++)
        if (seen[i].bias == bias && seen[i].lo == lo)
            return 1;
    return 0;
}

static void remember(uintptr_t bias, uintptr_t lo)
{
    if (nseen == capseen) {
        size_t nc = capseen ? capseen * 2 : 64;
        struct seen *ns = realloc(seen, nc * sizeof(*ns));
        if (!ns)
            return;
        seen = ns;
        capseen = nc;
    }
    seen[nseen++] = (struct seen){ bias, lo };
}

struct emit_ctx {
    void (*fn)(const ana_rec_module *m, void *arg);
    void *arg;
    int first;
    int unchanged;
};

static int emit_one(struct dl_phdr_info *info, size_t size, void *data)
{
    struct emit_ctx *ctx = data;
    if (ctx->first) {
        ctx->first = 0;
        if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
            if (info->dlpi_adds == last_adds && info->dlpi_subs == last_subs) {
                ctx->unchanged = 1;
                return 1; /* nothing loaded or unloaded since the last scan */
            }
            last_adds = info->dlpi_adds;
            last_subs = info->dlpi_subs;
        }
    }
    uintptr_t lo, hi;
    range_of(info, &lo, &hi);
    if (hi == 0 || was_seen(info->dlpi_addr, lo))
        return 0;
    remember(info->dlpi_addr, lo);
    static char exe[4096];
    const char *path = info->dlpi_name;
    if (!path || !*path) {
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        exe[n > 0 ? n : 0] = 0;
        path = exe;
    }
    const uint8_t *bid = NULL;
    size_t bid_len = build_id(info, &bid);
    ana_rec_module m = { .bias = info->dlpi_addr, .lo = lo, .hi = hi,
                         .build_id = { (const char *)bid, (uint32_t)bid_len },
                         .path = { path, (uint32_t)strlen(path) } };
    ctx->fn(&m, ctx->arg);
    return 0;
}

void ana_modules_emit_new(void (*fn)(const ana_rec_module *m, void *arg), void *arg)
{
    struct emit_ctx ctx = { fn, arg, 1, 0 };
    dl_iterate_phdr(emit_one, &ctx);
}

void ana_modules_reset(void)
{
    nseen = 0;
    last_adds = last_subs = ~0ull;
}

struct find_ctx {
    uintptr_t addr, lo, hi;
};

static int find_one(struct dl_phdr_info *info, size_t size, void *data)
{
    struct find_ctx *f = data;
    uintptr_t lo, hi;
    range_of(info, &lo, &hi);
    if (f->addr >= lo && f->addr < hi) {
        f->lo = lo;
        f->hi = hi;
        return 1;
    }
    return 0;
}

void ana_modules_find_self(const void *addr, uintptr_t *lo, uintptr_t *hi)
{
    struct find_ctx f = { (uintptr_t)addr, 0, 0 };
    dl_iterate_phdr(find_one, &f);
    *lo = f.lo;
    *hi = f.hi;
}
