/* local_c — loaded with dlopen(RTLD_LOCAL); depends on local_d. dlsym(RTLD_DEFAULT) from
 * here searches this library's own scope, which holds local_d: only if the loader still
 * sees this library as the caller. */
#define _GNU_SOURCE
#include <dlfcn.h>

char ana_dl_local_value(void);

char ana_dl_default_value(void)
{
    char (*fn)(void) = (char (*)(void))dlsym(RTLD_DEFAULT, "ana_dl_local_value");
    return fn ? fn() : '-';
}

/* Keeps the dependency on local_d in the link. */
char ana_dl_direct_value(void) { return ana_dl_local_value(); }
