/* cli_output.c — writing a command's -o FILE (cli.h: ana_cli_write_output).
 *
 * Outputs often go to shared directories (a job's trace directory, /tmp). A fixed
 * temporary name (OUT.tmp) could be a symbolic link planted by someone else, and fopen
 * would write through it into any file we may write. So the file is written under a name
 * nobody can predict (mkstemp, created O_EXCL in OUT's directory, so rename stays on one
 * file system), given the mode fopen would have given, and renamed over OUT once whole:
 * rename replaces a link, never follows it. An OUT that already exists and is not a
 * regular file (a link, FIFO, directory, device) is refused: the user meant something
 * else by it.
 * Part of cli/: called by the commands that write files; calls model/ only. */
#define _GNU_SOURCE
#include "cli/cli.h"
#include "model/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* 0 when path may be replaced by the output (absent, or a regular file); -1 with why. */
static int ana_out_check(const char *path, char *err, size_t cap)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? 0 : (snprintf(err, cap, "%s", strerror(errno)), -1);
    if (S_ISLNK(st.st_mode))
        snprintf(err, cap, "cannot write %s: it is a symbolic link; remove it or choose another -o",
                 path);
    else if (!S_ISREG(st.st_mode))
        snprintf(err, cap, "cannot write %s: it is not a regular file; remove it or choose "
                           "another -o", path);
    else
        return 0;
    return -1;
}

/* Creates ".BASE.XXXXXX" beside path with the mode fopen(path, "w") would give; returns
 * the descriptor and the malloc'd name in *tmp, or -1 with why in err. */
static int ana_out_temp(const char *path, char **tmp, char *err, size_t cap)
{
    const char *slash = strrchr(path, '/');
    size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0;
    size_t n = strlen(path) + sizeof("..XXXXXX");
    *tmp = ana_xmalloc(n);
    snprintf(*tmp, n, "%.*s.%s.XXXXXX", (int)dirlen, path, path + dirlen);
    int fd = mkstemp(*tmp);
    if (fd < 0) {
        snprintf(err, cap, "%s", strerror(errno));
        free(*tmp);
        *tmp = NULL;
        return -1;
    }
    mode_t mask = umask(0); /* single-threaded: read the umask back at once */
    umask(mask);
    if (fchmod(fd, 0666 & ~mask) != 0) {
        snprintf(err, cap, "%s", strerror(errno));
        close(fd);
        unlink(*tmp);
        free(*tmp);
        *tmp = NULL;
        return -1;
    }
    return fd;
}

/* A stream writer run on fd (closed here); 0, or -1 with the reason in err. */
static int ana_out_stream(int fd, ana_cli_write_stream_fn write_stream, void *ctx, char *err,
                          size_t cap)
{
    FILE *f = fdopen(fd, "w");
    if (!f) {
        snprintf(err, cap, "%s", strerror(errno));
        close(fd);
        return -1;
    }
    errno = 0;
    int rc = write_stream(f, ctx);
    if (rc == 0 && (fflush(f) != 0 || ferror(f)))
        rc = -1;
    int saved = errno;
    if (fclose(f) != 0 && rc == 0)
        rc = -1, saved = errno;
    if (rc != 0)
        snprintf(err, cap, "%s", saved ? strerror(saved) : "write error (is the disk full?)");
    return rc;
}

static int ana_out_stdout(const char *cmd, ana_cli_write_stream_fn write_stream, void *ctx)
{
    errno = 0;
    if (write_stream(stdout, ctx) == 0 && fflush(stdout) == 0 && !ferror(stdout))
        return ANA_EXIT_OK;
    fprintf(stderr, "anatomist: %s: writing to standard output failed: %s\n", cmd,
            errno ? strerror(errno) : "write error");
    return ANA_EXIT_BAD;
}

int ana_cli_write_output(const char *cmd, const char *path, ana_cli_write_stream_fn write_stream,
                         ana_cli_write_path_fn write_path, void *ctx)
{
    char err[512] = "";
    char *tmp = NULL;
    if (!path || strcmp(path, "-") == 0)
        return ana_out_stdout(cmd, write_stream, ctx);
    if (ana_out_check(path, err, sizeof(err)) != 0) {
        fprintf(stderr, "anatomist: %s: %s\n", cmd, err);
        return ANA_EXIT_BAD;
    }
    int fd = ana_out_temp(path, &tmp, err, sizeof(err));
    int rc = fd < 0 ? -1 : 0;
    if (rc == 0 && write_stream)
        rc = ana_out_stream(fd, write_stream, ctx, err, sizeof(err));
    else if (rc == 0) {
        close(fd); /* the writer opens the (empty) file by its name itself */
        rc = write_path(tmp, ctx, err, sizeof(err));
    }
    if (rc == 0 && rename(tmp, path) != 0) {
        snprintf(err, sizeof(err), "%s", strerror(errno));
        rc = -1;
    }
    if (rc != 0) {
        if (tmp)
            unlink(tmp);
        fprintf(stderr, "anatomist: %s: cannot write %s: %s (choose another -o FILE)\n", cmd,
                path, err);
    }
    free(tmp);
    return rc == 0 ? ANA_EXIT_OK : ANA_EXIT_BAD;
}
