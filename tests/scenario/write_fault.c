/* write_fault.c — a fault injector for the faults test (test_faults.py), preloaded before
 * libanatomist: once ANA_TEST_FAULT_AFTER bytes have been written to files whose name ends
 * in ".anat", every further write(2)/writev(2) to them fails with ANA_TEST_FAULT_ERRNO
 * (ENOSPC by default; EIO, EFBIG by name) — as a disk that fills, a device that fails, or a
 * file that cannot grow would. Other files, and the program's own output, are untouched. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static _Atomic long long written;

static int is_trace(int fd)
{
    char link[64], path[PATH_MAX];
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof(path) - 1);
    if (n < 5)
        return 0;
    path[n] = 0;
    return strcmp(path + n - 5, ".anat") == 0;
}

static int fault_errno(void)
{
    const char *e = getenv("ANA_TEST_FAULT_ERRNO");
    if (e && !strcmp(e, "EIO"))
        return EIO;
    if (e && !strcmp(e, "EFBIG"))
        return EFBIG;
    return ENOSPC;
}

/* 1 when this write of n bytes to fd must fail. */
static int must_fail(int fd, size_t n)
{
    const char *a = getenv("ANA_TEST_FAULT_AFTER");
    if (!a || !is_trace(fd))
        return 0;
    return atomic_fetch_add(&written, (long long)n) + (long long)n > atoll(a);
}

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    static ssize_t (*real)(int, const struct iovec *, int);
    if (!real)
        real = (ssize_t(*)(int, const struct iovec *, int))dlsym(RTLD_NEXT, "writev");
    size_t n = 0;
    for (int i = 0; i < cnt; i++)
        n += iov[i].iov_len;
    if (must_fail(fd, n)) {
        errno = fault_errno();
        return -1;
    }
    return real(fd, iov, cnt);
}

ssize_t write(int fd, const void *buf, size_t n)
{
    static ssize_t (*real)(int, const void *, size_t);
    if (!real)
        real = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
    if (must_fail(fd, n)) {
        errno = fault_errno();
        return -1;
    }
    return real(fd, buf, n);
}
