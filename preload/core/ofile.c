/* ofile.c — the preload's own file descriptors, kept out of the program's way (ofile.h).
 *
 * A program may close every descriptor it did not open (closefrom(3), a daemon's loop over
 * 3..N) or dup2 its own files over numbers it believes free. A descriptor of ours whose
 * number the program has taken is the program's file now: writing to it would put trace
 * chunks into the program's data, and closing it would close the program's file. So our
 * descriptors sit high (at ANA_FD_FLOOR or above, out of the low numbers programs reuse),
 * and before each use we check that the number still names the file we opened (device and
 * inode). When it does not, the file is opened again by its path, checked to be the same
 * file, and moved high again; if that fails, the caller stops with one line on stderr.
 * Never closes a number that is no longer ours.
 *
 * Called by the writer, live.c and hooks/unwind_pipe.c (ana_fd_raise); calls nothing of
 * the preload. */
#define _GNU_SOURCE
#include "preload.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "safe_open.h"

#define ANA_FD_FLOOR 1000

/* The lowest number we place our descriptors at: ANA_FD_FLOOR, or lower when the
 * descriptor limit is below it (a few under the limit, or 3). */
static int floor_fd(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > ANA_FD_FLOOR + 64)
        return ANA_FD_FLOOR;
    return rl.rlim_cur > 32 ? (int)rl.rlim_cur - 16 : 3;
}

int ana_fd_raise(int fd, int floor)
{
    if (fd < 0 || fd >= floor)
        return fd;
    int e = errno, high = fcntl(fd, F_DUPFD_CLOEXEC, floor);
    if (high >= 0) {
        close(fd);
        fd = high;
    }
    errno = e;
    return fd;
}

int ana_ofile_adopt(ana_ofile *f, int fd, const char *path)
{
    struct stat sb;
    int e = errno;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        f->fd = -1;
        errno = e;
        return -1;
    }
    fd = ana_fd_raise(fd, floor_fd());
    f->fd = fd;
    f->dev = sb.st_dev;
    f->ino = sb.st_ino;
    snprintf(f->path, sizeof(f->path), "%s", path);
    errno = e;
    return fd;
}

int ana_ofile_fd(ana_ofile *f)
{
    if (f->fd < 0)
        return -1;
    if (ana_fd_is(f->fd, f->dev, f->ino))
        return f->fd;
    /* The number is not ours any more: forget it (never close it) and open the file again. */
    int e = errno;
    f->fd = -1;
    struct stat sb;
    int fd = ana_open_file(f->path, O_RDWR, ANA_OPEN_NOFOLLOW | ANA_OPEN_MINE, &sb);
    if (fd >= 0 && (sb.st_dev != f->dev || sb.st_ino != f->ino)) {
        close(fd); /* another file took the name */
        fd = -1;
    }
    if (fd >= 0)
        ana_ofile_adopt(f, fd, f->path);
    errno = e;
    return f->fd;
}

void ana_ofile_close(ana_ofile *f)
{
    if (f->fd >= 0 && ana_fd_is(f->fd, f->dev, f->ino))
        close(f->fd);
    f->fd = -1;
}
