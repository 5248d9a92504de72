/* dl_entry.c — the preload's dlsym and dlvsym entry points, and glibc's own ones behind them.
 *
 * The preload exports dlsym and dlvsym so that it can hand out wrappers for the driver's
 * memory functions (lookup.c). glibc resolves the pseudo-handles RTLD_NEXT and
 * RTLD_DEFAULT relative to the *caller* of dlsym (its return address: the next object after
 * the caller; the caller's own lookup scope and namespace). A C wrapper calling glibc would
 * make every such lookup relative to the preload, breaking RTLD_NEXT for every other
 * interposer (allocator shims' dlsym(RTLD_NEXT, "malloc"), the preload's own ana_resolve).
 * So the entry points are a few instructions of assembly: for RTLD_NEXT and RTLD_DEFAULT
 * they jump straight into glibc with the caller's return address untouched, and the
 * result is not looked at (RTLD_DEFAULT finds the preload's own exports first anyway); for
 * any real handle — where glibc ignores the caller — they jump to ana_dlsym_impl /
 * ana_dlvsym_impl (lookup.c), which may replace a libcuda function by its wrapper.
 *
 * glibc's functions themselves are found by core/dl_real.c (ana_dl_bootstrap), which the
 * entry points call before their first jump, and the constructor below calls early. x86-64
 * and aarch64 have entry points; elsewhere the preload exports no dlsym/dlvsym and driver
 * memory is seen only through programs linked against libcuda and through CUPTI
 * (docs/trace-format.md).
 *
 * Called by the program (dlsym, dlvsym) only; calls hooks/lookup.c and core/dl_real.c. */
#define _GNU_SOURCE
#include "hooks.h"

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

/* Early, so that the first lookups take the fast path; says once if glibc's functions
 * cannot be found (then every dlsym/dlvsym through the preload returns NULL). */
__attribute__((constructor(101))) static void dl_entry_init(void)
{
    ana_dl_bootstrap();
    if (ANA_DL_HAVE_ENTRY && !__atomic_load_n(&ana_dl_glibc_dlsym, __ATOMIC_ACQUIRE))
        ana_warn("cannot find the C library's dlsym; dynamic symbol lookups will fail");
}
