/* import.c — the one way in for a trace file (import.h): the first bytes choose the
 * importer, Kineto JSON (kineto.h) or .anat (anat.c). Part of import/: called by the
 * commands (cli/) and tests; calls the importers. */
#include "import/import.h"
#include "import/kineto.h"
#include "safe_open.h"

#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

/* 1 when the file starts like JSON ('{' or '[' after blanks) or gzip (1f 8b). */
static int ana_import_is_foreign(const char *path)
{
    unsigned char b[64];
    /* What cannot be opened here (a FIFO, a device) the trace reader refuses in words. */
    int fd = ana_open_file(path, O_RDONLY, 0, NULL);
    if (fd < 0)
        return 0;
    ssize_t got = pread(fd, b, sizeof(b), 0);
    close(fd);
    size_t n = got > 0 ? (size_t)got : 0;
    if (n >= 2 && b[0] == 0x1f && b[1] == 0x8b)
        return 1;
    for (size_t i = 0; i < n; i++) {
        if (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r')
            continue;
        return b[i] == '{' || b[i] == '[';
    }
    return 0;
}


int ana_import_load(const char *path, unsigned flags, ana_trace **out, ana_error *err)
{
    if (ana_import_is_foreign(path)) {
        *out = NULL;
        return ana_kineto_load(path, flags, out, err);
    }
    return ana_anat_load(path, flags, out, err);
}
