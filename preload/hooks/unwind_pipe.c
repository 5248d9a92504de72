/* unwind_pipe.c — libunwind's descriptors, kept out of the program's way.
 *
 * When libunwind meets a frame without unwind information it checks every address before
 * reading it, by writing a byte from it into a pipe it keeps in two static descriptors
 * (opened with pipe2 at its first unwind, reopened when a read from them fails). Left to
 * itself it takes the program's lowest free numbers (the program's next open then gets 5,
 * not 3), and after the program closes them (closefrom, a daemon's close loop) and opens
 * its own files, libunwind reads from and writes into the program's files and, when that
 * fails, closes them. So the pipe2 calls that come from libunwind are given numbers at
 * ANA_UNWIND_FD_FLOOR or above (below the preload's own, ofile.c), where a program that
 * reuses low numbers never meets them. Every other caller's pipe2 is only passed on.
 *
 * Called by libunwind (and any caller of pipe2) only; calls the core (ofile.c, unwind.c,
 * dl_real.c). */
#define _GNU_SOURCE
#include "preload.h"
#include "unwind.h"

#include <dlfcn.h>
#include <errno.h>
#include <sys/resource.h>
#include <unistd.h>

#define ANA_UNWIND_FD_FLOOR 950

/* fd moved to ANA_UNWIND_FD_FLOOR or above (close-on-exec, as libunwind asks), when the
 * descriptor limit leaves room there. */
static int move_high(int fd)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 1100)
        return fd;
    return ana_fd_raise(fd, ANA_UNWIND_FD_FLOOR);
}

ANA_EXPORT int pipe2(int fds[2], int flags)
{
    static int (*real)(int[2], int);
    if (!real && !(*(void **)&real = ana_real_dlsym(RTLD_NEXT, "pipe2"))) {
        errno = ENOSYS;
        return -1;
    }
    int rc = real(fds, flags);
    if (rc == 0 && ana_unwind_owns((uintptr_t)__builtin_return_address(0))) {
        fds[0] = move_high(fds[0]);
        fds[1] = move_high(fds[1]);
    }
    return rc;
}
