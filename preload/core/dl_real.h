/* dl_real.h — functions found without the preload's own dlsym (dl_real.c). */
#ifndef ANA_DL_REAL_H
#define ANA_DL_REAL_H

#include "defs.h"

/* `name` in the library whose soname is `soname`, wherever it was loaded, never loading
 * it: the next definition after the preload (of `version` first when one is given), else
 * the definition in the loaded object with that soname (glibc's dlopen(soname,
 * RTLD_NOLOAD) finds it by DT_SONAME), which covers a library loaded in a local scope — a
 * plugin or Python extension dlopen'ed with RTLD_LOCAL — invisible to RTLD_NEXT. Lookups
 * go to glibc's dlsym, never through the preload's own. NULL when neither has it. Calls
 * dlopen: not for the bootstrap of dl_real.c. */
void *ana_dl_real_sym(const char *soname, const char *version, const char *name);

/* glibc's own dlsym/dlvsym, past the preload's interposed ones (hooks/dl_entry.c). Found
 * once, without calling dlsym (the preload exports its own): NULL only when the C library
 * has none. The preload's own lookups (libunwind, CPython, CUPTI) go through these. */
void *ana_real_dlsym(void *handle, const char *name);
void *ana_real_dlvsym(void *handle, const char *name, const char *version);
/* Finds glibc's functions (hooks/dl_entry.c's entry points call it before their first jump;
 * no library call, no instrumentation). Hidden: read by assembly. */
void ana_dl_bootstrap(void) ANA_HIDDEN;
extern void *ana_dl_glibc_dlsym ANA_HIDDEN;
extern void *ana_dl_glibc_dlvsym ANA_HIDDEN;
/* 1 when addr lies in the CUDA driver (a module whose soname is libcuda.so.1). */
int ana_dl_in_libcuda(const void *addr);
/* The preload's own exported function `name` (its dynamic symbol table, default version),
 * or NULL: what dlsym on the preload's handle would find, without looking further. */
void *ana_dl_own_export(const char *name);

#endif
