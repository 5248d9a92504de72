/* safe_open.c — opening names others may have planted, and reading a range of the file
 * whole (safe_open.h). Called by the reader, the live-file reader and recovery, and the
 * analyzer; calls nothing of ours. */
#define _GNU_SOURCE
#include "safe_open.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

static int check(const struct stat *sb, unsigned how)
{
    if (!S_ISREG(sb->st_mode)) {
        errno = S_ISLNK(sb->st_mode) ? ELOOP : ANA_ENOTREG;
        return -1;
    }
    if ((how & ANA_OPEN_MINE) && sb->st_uid != geteuid()) {
        errno = ANA_ENOTMINE;
        return -1;
    }
    return 0;
}

int ana_open_file(const char *path, int flags, unsigned how, struct stat *st)
{
    struct stat before, after;
    int nofollow = (how & ANA_OPEN_NOFOLLOW) != 0;
    /* Look before opening: a device node may act on open(2) itself. */
    if ((nofollow ? lstat(path, &before) : stat(path, &before)) < 0 || check(&before, how) < 0)
        return -1;
    int fd = open(path, flags | O_NONBLOCK | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0));
    if (fd < 0)
        return -1;
    int e = 0;
    if (fstat(fd, &after) < 0 || check(&after, how) < 0)
        e = errno;
    else if (after.st_dev != before.st_dev || after.st_ino != before.st_ino)
        e = EAGAIN; /* replaced between the look and the open */
    if (e) {
        close(fd);
        errno = e;
        return -1;
    }
    if (st)
        *st = after;
    return fd;
}

const char *ana_open_strerror(int e)
{
    switch (e) {
    case ELOOP: return "it is a symbolic link, which is not followed";
    case ANA_ENOTREG: return "it is not a regular file (a FIFO, device, socket or directory)";
    case ANA_ENOTMINE: return "it belongs to another user";
    case EAGAIN: return "it was replaced while being opened";
    default: return strerror(e);
    }
}

int ana_fd_is(int fd, dev_t dev, ino_t ino)
{
    struct stat sb;
    return fd >= 0 && fstat(fd, &sb) == 0 && sb.st_dev == dev && sb.st_ino == ino;
}

int ana_pread_all(int fd, void *buf, size_t n, uint64_t off)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, (uint8_t *)buf + got, n - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}
