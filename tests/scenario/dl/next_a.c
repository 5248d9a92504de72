/* next_a — first of two libraries defining ana_dl_value (returns 'a'). Its probes ask the
 * loader for the *next* definition after this library, which is next_b's ('b') — unless
 * an interposed dlsym made the lookup relative to itself (then it would be 'a' again). */
#define _GNU_SOURCE
#include <dlfcn.h>

char ana_dl_value(void) { return 'a'; }

char ana_dl_next_value(void)
{
    char (*fn)(void) = (char (*)(void))dlsym(RTLD_NEXT, "ana_dl_value");
    return fn ? fn() : '-';
}

char ana_dl_vnext_value(void)
{
    char (*fn)(void) = (char (*)(void))dlvsym(RTLD_NEXT, "ana_dl_value", "ANA_DL_TEST_1");
    return fn ? fn() : '-';
}
