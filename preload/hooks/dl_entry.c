/* dl_entry.c — the preload's dlsym and dlvsym entry points, and glibc's own ones behind them.
 *
 * The preload exports dlsym and dlvsym so that it can hand out wrappers for the driver's
 * memory functions (hooks_dl.c). glibc resolves the pseudo-handles RTLD_NEXT and
 * RTLD_DEFAULT relative to the *caller* of dlsym (its return address: the next object after
 * the caller; the caller's own lookup scope and namespace). A C wrapper calling glibc would
 * make every such lookup relative to the preload, breaking RTLD_NEXT for every other
 * interposer (allocator shims' dlsym(RTLD_NEXT, "malloc"), the preload's own ana_resolve).
 * So the entry points are a few instructions of assembly: for RTLD_NEXT and RTLD_DEFAULT
 * they jump straight into glibc with the caller's return address untouched, and the
 * result is not looked at (RTLD_DEFAULT finds the preload's own exports first anyway); for
 * any real handle — where glibc ignores the caller — they jump to ana_dlsym_impl /
 * ana_dlvsym_impl (hooks_dl.c), which may replace a libcuda function by its wrapper.
 *
 * glibc's functions are found without calling dlsym: the dynamic symbol table of libc.so.6
 * (libdl.so.2 before glibc 2.34) is searched through its GNU hash table, once, by the first
 * caller (the constructor, or whichever lookup comes earlier). x86-64 and aarch64 have
 * entry points; elsewhere the preload exports no dlsym/dlvsym and driver memory is seen only
 * through programs linked against libcuda and through CUPTI (docs/trace-format.md).
 *
 * Also here, built on glibc's functions once found: the one lookup of a CUDA library's
 * real functions the preload makes (ana_dl_real_sym: the runtime's for the hooks, the
 * driver's for its wrappers, CUPTI's for the interposed cupti* calls), the test of
 * whether a function lies in libcuda, and the preload's own exports by name. These call library functions; the bootstrap never
 * does.
 *
 * Thread-safety: the two pointers are written once with the same value by whichever thread
 * gets there first; readers see either NULL (and look them up themselves) or the value. */
#define _GNU_SOURCE
#include "hooks.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdatomic.h>
#include <string.h>

/* Read by the assembly below; written by ana_dl_bootstrap. */
ANA_HIDDEN void *ana_dl_glibc_dlsym;
ANA_HIDDEN void *ana_dl_glibc_dlvsym;

void ana_dl_bootstrap(void) ANA_HIDDEN;
void *ana_dlsym_impl(void *handle, const char *name) ANA_HIDDEN;
void *ana_dlvsym_impl(void *handle, const char *name, const char *version) ANA_HIDDEN;

/* ---- the entry points ---------------------------------------------------------------- */

#if defined(__x86_64__)
#if defined(__CET__)
#define ANA_ENDBR "endbr64\n"
#else
#define ANA_ENDBR ""
#endif
/* ENTRY(name, impl, ptr, saves): RTLD_DEFAULT (0) and RTLD_NEXT (-1) tail-jump to glibc's
 * function at `ptr`; other handles tail-jump to `impl`. When `ptr` is still unknown the
 * argument registers are saved around ana_dl_bootstrap (`saves` pushes and pops, keeping
 * the stack 16-byte aligned at the call), then the jump is taken. */
#define ANA_DL_ENTRY(name, impl, ptr, push, pop)                                            \
    __asm__(".text\n"                                                                       \
            ".globl " #name "\n"                                                            \
            ".type " #name ", @function\n"                                                  \
            ".p2align 4\n" #name ":\n"                                                      \
            ".cfi_startproc\n" ANA_ENDBR                                                    \
            "    test %rdi, %rdi\n"                                                         \
            "    je 1f\n"                                                                   \
            "    cmp $-1, %rdi\n"                                                           \
            "    je 1f\n"                                                                   \
            "    jmp " #impl "\n"                                                           \
            "1:  mov " #ptr "(%rip), %rax\n"                                                \
            "    test %rax, %rax\n"                                                         \
            "    je 2f\n"                                                                   \
            "    jmp *%rax\n"                                                               \
            "2:\n" push                                                                     \
            "    call ana_dl_bootstrap\n" pop                                               \
            "    mov " #ptr "(%rip), %rax\n"                                                \
            "    test %rax, %rax\n"                                                         \
            "    je 3f\n"                                                                   \
            "    jmp *%rax\n"                                                               \
            "3:  xor %eax, %eax\n"                                                          \
            "    ret\n"                                                                     \
            ".cfi_endproc\n"                                                                \
            ".size " #name ", .-" #name "\n")

ANA_DL_ENTRY(dlsym, ana_dlsym_impl, ana_dl_glibc_dlsym,
             "    push %rdi\n .cfi_adjust_cfa_offset 8\n"
             "    push %rsi\n .cfi_adjust_cfa_offset 8\n"
             "    sub $8, %rsp\n .cfi_adjust_cfa_offset 8\n",
             "    add $8, %rsp\n .cfi_adjust_cfa_offset -8\n"
             "    pop %rsi\n .cfi_adjust_cfa_offset -8\n"
             "    pop %rdi\n .cfi_adjust_cfa_offset -8\n");
ANA_DL_ENTRY(dlvsym, ana_dlvsym_impl, ana_dl_glibc_dlvsym,
             "    push %rdi\n .cfi_adjust_cfa_offset 8\n"
             "    push %rsi\n .cfi_adjust_cfa_offset 8\n"
             "    push %rdx\n .cfi_adjust_cfa_offset 8\n",
             "    pop %rdx\n .cfi_adjust_cfa_offset -8\n"
             "    pop %rsi\n .cfi_adjust_cfa_offset -8\n"
             "    pop %rdi\n .cfi_adjust_cfa_offset -8\n");
#define ANA_DL_HAVE_ENTRY 1

#elif defined(__aarch64__)
#if defined(__ARM_FEATURE_BTI_DEFAULT)
#define ANA_BTI "bti c\n"
#else
#define ANA_BTI ""
#endif
/* As above; the caller's return address is x30, restored before the tail branch. x0-x2
 * (handle, name, version) are saved around ana_dl_bootstrap. */
#define ANA_DL_ENTRY(name, impl, ptr)                                                       \
    __asm__(".text\n"                                                                       \
            ".globl " #name "\n"                                                            \
            ".type " #name ", %function\n"                                                  \
            ".p2align 4\n" #name ":\n"                                                      \
            ".cfi_startproc\n" ANA_BTI                                                      \
            "    cbz x0, 1f\n"                                                              \
            "    cmn x0, #1\n"                                                              \
            "    b.eq 1f\n"                                                                 \
            "    b " #impl "\n"                                                             \
            "1:  adrp x16, " #ptr "\n"                                                      \
            "    ldr x16, [x16, :lo12:" #ptr "]\n"                                          \
            "    cbz x16, 2f\n"                                                             \
            "    br x16\n"                                                                  \
            "2:  stp x29, x30, [sp, #-32]!\n"                                               \
            "    .cfi_def_cfa_offset 32\n"                                                  \
            "    .cfi_offset 29, -32\n"                                                     \
            "    .cfi_offset 30, -24\n"                                                     \
            "    mov x29, sp\n"                                                             \
            "    stp x0, x1, [sp, #16]\n"                                                   \
            "    str x2, [sp, #8]\n"                                                        \
            "    bl ana_dl_bootstrap\n"                                                     \
            "    ldr x2, [sp, #8]\n"                                                        \
            "    ldp x0, x1, [sp, #16]\n"                                                   \
            "    ldp x29, x30, [sp], #32\n"                                                 \
            "    .cfi_def_cfa_offset 0\n"                                                   \
            "    .cfi_restore 29\n"                                                         \
            "    .cfi_restore 30\n"                                                         \
            "    adrp x16, " #ptr "\n"                                                      \
            "    ldr x16, [x16, :lo12:" #ptr "]\n"                                          \
            "    cbz x16, 3f\n"                                                             \
            "    br x16\n"                                                                  \
            "3:  mov x0, #0\n"                                                              \
            "    ret\n"                                                                     \
            ".cfi_endproc\n"                                                                \
            ".size " #name ", .-" #name "\n")

ANA_DL_ENTRY(dlsym, ana_dlsym_impl, ana_dl_glibc_dlsym);
ANA_DL_ENTRY(dlvsym, ana_dlvsym_impl, ana_dl_glibc_dlvsym);
#define ANA_DL_HAVE_ENTRY 1

#else
/* No entry points: lookups are not interposed on this architecture (see the header). */
#define ANA_DL_HAVE_ENTRY 0
#endif

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

/* Early, so that the first lookups take the fast path; says once if glibc's functions
 * cannot be found (then every dlsym/dlvsym through the preload returns NULL). */
__attribute__((constructor(101))) static void dl_entry_init(void)
{
    ana_dl_bootstrap();
    if (ANA_DL_HAVE_ENTRY && !__atomic_load_n(&ana_dl_glibc_dlsym, __ATOMIC_ACQUIRE))
        ana_warn("cannot find the C library's dlsym; dynamic symbol lookups will fail");
}
