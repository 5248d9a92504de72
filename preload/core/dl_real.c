/* dl_real.c — functions found without the preload's own dlsym (dl_real.h):
 * glibc's dlsym and dlvsym, the real function of a CUDA library (ana_dl_real_sym), whether
 * an address lies in libcuda, and the preload's own exports by name. Called by the hooks
 * (hooks/dl_entry.c's entry points jump through ana_dl_glibc_dlsym), calls/, cupti/ and the
 * core's own loaders (libunwind, CPython); calls nothing of the preload.
 *
 * glibc's functions are found without calling dlsym: the dynamic symbol table of libc.so.6
 * (libdl.so.2 before glibc 2.34) is searched through its GNU hash table, once, by the first
 * caller (the entry points' constructor, or whichever lookup comes earlier). The later
 * lookups (ana_dl_real_sym: the runtime's for the hooks, the driver's for its wrappers,
 * CUPTI's for the interposed cupti* calls; the test of whether a function lies in libcuda;
 * the preload's own exports) call library functions; the bootstrap never does.
 *
 * Thread-safety: the two pointers are written once with the same value by whichever thread
 * gets there first; readers see either NULL (and look them up themselves) or the value. */
#define _GNU_SOURCE
#include "preload.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdatomic.h>
#include <string.h>

/* Read by hooks/dl_entry.c's assembly; written by ana_dl_bootstrap. */
void *ana_dl_glibc_dlsym;
void *ana_dl_glibc_dlvsym;

/* ---- finding glibc's functions ------------------------------------------------------- */

/* The first dlsym(RTLD_NEXT, ...) may come before anything else of the process is ready:
 * AddressSanitizer's runtime, for one, looks up the functions it intercepts while it is
 * initialising, before its shadow memory exists. So the bootstrap path calls no library
 * function (no dl_iterate_phdr, memset or strcmp, which sanitizers intercept), walks the
 * loader's list through _r_debug, and is never instrumented. */
#define ANA_DL_RAW __attribute__((no_sanitize("address", "undefined"), noinline))

ANA_DL_RAW static int raw_streq(const char *a, const char *b)
{
    while (*a && *a == *b)
        a++, b++;
    return *a == *b;
}

typedef struct elf_view {
    uintptr_t base;
    const ElfW(Sym) *symtab;
    const char *strtab;
    const uint32_t *gnu_hash;
    const ElfW(Versym) *versym;
    const char *soname;
} elf_view;

/* Addresses in a module's dynamic section are relocated by the loader on most targets,
 * left as link-time offsets on a few (read-only dynamic sections). */
ANA_DL_RAW static const void *dyn_ptr(uintptr_t base, ElfW(Addr) v)
{
    return (const void *)(v < base ? base + v : v);
}

ANA_DL_RAW static int elf_view_of(uintptr_t base, const ElfW(Dyn) *dyn, elf_view *v)
{
    v->symtab = NULL;
    v->strtab = NULL;
    v->gnu_hash = NULL;
    v->versym = NULL;
    v->soname = NULL;
    v->base = base;
    ElfW(Addr) soname = 0;
    int have_soname = 0;
    for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
        switch (dyn->d_tag) {
        case DT_SYMTAB: v->symtab = dyn_ptr(base, dyn->d_un.d_ptr); break;
        case DT_STRTAB: v->strtab = dyn_ptr(base, dyn->d_un.d_ptr); break;
        case DT_GNU_HASH: v->gnu_hash = dyn_ptr(base, dyn->d_un.d_ptr); break;
        case DT_VERSYM: v->versym = dyn_ptr(base, dyn->d_un.d_ptr); break;
        case DT_SONAME: soname = dyn->d_un.d_val; have_soname = 1; break;
        default: break;
        }
    }
    if (!v->symtab || !v->strtab)
        return -1;
    v->soname = have_soname ? v->strtab + soname : NULL;
    return 0;
}

ANA_DL_RAW static uint32_t gnu_hash(const char *s)
{
    uint32_t h = 5381;
    for (; *s; s++)
        h = h * 33 + (unsigned char)*s;
    return h;
}

/* The default-version definition of the function `name` in the module, or NULL. */
ANA_DL_RAW static void *elf_find(const elf_view *v, const char *name)
{
    if (!v->gnu_hash)
        return NULL;
    const uint32_t nbuckets = v->gnu_hash[0], symoffset = v->gnu_hash[1];
    const uint32_t bloom_words = v->gnu_hash[2];
    const ElfW(Addr) *bloom = (const ElfW(Addr) *)(v->gnu_hash + 4);
    const uint32_t *buckets = (const uint32_t *)(bloom + bloom_words);
    const uint32_t *chain = buckets + nbuckets;
    if (nbuckets == 0)
        return NULL;
    uint32_t h = gnu_hash(name);
    for (uint32_t i = buckets[h % nbuckets]; i >= symoffset && i != 0; i++) {
        uint32_t ch = chain[i - symoffset];
        const ElfW(Sym) *s = &v->symtab[i];
        if ((ch | 1) == (h | 1) && s->st_shndx != SHN_UNDEF && ELF64_ST_TYPE(s->st_info) == STT_FUNC /* = ELF32_ST_TYPE */ &&
            (!v->versym || !(v->versym[i] & 0x8000)) && raw_streq(v->strtab + s->st_name, name))
            return (void *)(v->base + s->st_value);
        if (ch & 1)
            break;
    }
    return NULL;
}

ANA_DL_RAW void ana_dl_bootstrap(void)
{
    if (__atomic_load_n(&ana_dl_glibc_dlsym, __ATOMIC_ACQUIRE))
        return;
    static const char *const where[] = { "libc.so.6", "libdl.so.2" };
    for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
        for (const struct link_map *l = _r_debug.r_map; l; l = l->l_next) {
            elf_view v;
            if (elf_view_of(l->l_addr, l->l_ld, &v) < 0 || !v.soname || !raw_streq(v.soname, where[i]))
                continue;
            void *sym = elf_find(&v, "dlsym"), *vsym = elf_find(&v, "dlvsym");
            if (sym && vsym) {
                __atomic_store_n(&ana_dl_glibc_dlvsym, vsym, __ATOMIC_RELEASE);
                __atomic_store_n(&ana_dl_glibc_dlsym, sym, __ATOMIC_RELEASE);
                return;
            }
        }
    }
}

void *ana_real_dlsym(void *handle, const char *name)
{
    void *(*fn)(void *, const char *) = __atomic_load_n(&ana_dl_glibc_dlsym, __ATOMIC_ACQUIRE);
    if (!fn) {
        ana_dl_bootstrap();
        fn = __atomic_load_n(&ana_dl_glibc_dlsym, __ATOMIC_ACQUIRE);
    }
    return fn ? fn(handle, name) : NULL;
}

void *ana_real_dlvsym(void *handle, const char *name, const char *version)
{
    void *(*fn)(void *, const char *, const char *) = __atomic_load_n(&ana_dl_glibc_dlvsym, __ATOMIC_ACQUIRE);
    if (!fn) {
        ana_dl_bootstrap();
        fn = __atomic_load_n(&ana_dl_glibc_dlvsym, __ATOMIC_ACQUIRE);
    }
    return fn ? fn(handle, name, version) : NULL;
}

/* ---- later lookups (library calls allowed) ------------------------------------------- */

void *ana_dl_real_sym(const char *soname, const char *version, const char *name)
{
    void *p = version ? ana_real_dlvsym(RTLD_NEXT, name, version) : NULL;
    if (!p)
        p = ana_real_dlsym(RTLD_NEXT, name);
    if (!p) {
        void *h = dlopen(soname, RTLD_LAZY | RTLD_NOLOAD);
        if (h) {
            p = ana_real_dlsym(h, name);
            dlclose(h); /* the NOLOAD open only counted one more reference */
        }
    }
    return p;
}

/* The load base (dli_fbase) of the libcuda.so.1 recognised last: a lookup that returns a
 * driver function (the common case) is answered without reading dynamic sections again.
 * (A libcuda unloaded and another module mapped at its base would be mistaken for it;
 * libcuda is not unloaded in practice.) */
static _Atomic uintptr_t libcuda_base;

int ana_dl_in_libcuda(const void *addr)
{
    Dl_info info;
    struct link_map *lm = NULL;
    if (!addr || !dladdr1(addr, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
        return 0;
    uintptr_t base = (uintptr_t)info.dli_fbase;
    if (base && base == atomic_load_explicit(&libcuda_base, memory_order_relaxed))
        return 1;
    int yes;
    elf_view v;
    if (elf_view_of(lm->l_addr, lm->l_ld, &v) == 0 && v.soname) {
        yes = strcmp(v.soname, "libcuda.so.1") == 0;
    } else {
        const char *file = info.dli_fname ? strrchr(info.dli_fname, '/') : NULL;
        file = file ? file + 1 : info.dli_fname;
        yes = file && strncmp(file, "libcuda.so", 10) == 0;
    }
    if (yes)
        atomic_store_explicit(&libcuda_base, base, memory_order_relaxed);
    return yes;
}

/* Read afresh at each call (a walk of the dynamic section): only lookups of runtime names
 * come here, and there is then no state to share between threads. */
void *ana_dl_own_export(const char *name)
{
    Dl_info info;
    struct link_map *lm = NULL;
    elf_view v;
    if (!name || !dladdr1((const void *)ana_dl_own_export, &info, (void **)&lm, RTLD_DL_LINKMAP) ||
        !lm || elf_view_of(lm->l_addr, lm->l_ld, &v) < 0)
        return NULL;
    return elf_find(&v, name);
}
