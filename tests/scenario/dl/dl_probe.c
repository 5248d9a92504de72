/* dl_probe — what lookups through dlsym/dlvsym return, with or without the preload:
 *   next     dlsym(RTLD_NEXT) from next_a (expects b)
 *   vnext    dlvsym(RTLD_NEXT, ..., "ANA_DL_TEST_1") from next_a (expects b)
 *   default  dlsym(RTLD_DEFAULT) from local_c, loaded RTLD_LOCAL (expects d)
 *   handle   dlsym(handle of local_c, "ana_dl_local_value") (expects d, found in its deps)
 *   missing  dlsym(handle, an absent name) returns NULL and dlerror says why (expects 1)
 * Usage: dl_probe PATH-OF-liblocal_c.so; prints "name value" lines. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

char ana_dl_next_value(void);
char ana_dl_vnext_value(void);

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: dl_probe PATH-OF-liblocal_c.so\n");
        return 2;
    }
    printf("next %c\n", ana_dl_next_value());
    printf("vnext %c\n", ana_dl_vnext_value());
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("dlopen failed: %s\n", dlerror());
        return 1;
    }
    char (*def)(void) = (char (*)(void))dlsym(h, "ana_dl_default_value");
    printf("default %c\n", def ? def() : '-');
    char (*local)(void) = (char (*)(void))dlsym(h, "ana_dl_local_value");
    printf("handle %c\n", local ? local() : '-');
    dlerror();
    void *none = dlsym(h, "ana_dl_no_such_symbol");
    const char *err = dlerror();
    printf("missing %d\n", none == NULL && err && strstr(err, "ana_dl_no_such_symbol") != NULL);
    return 0;
}
