/* safe_open.h — opening a name that someone else may have created, without being steered.
 *
 * A trace directory can be shared: anyone who can write there may plant a FIFO, a device
 * node or a symbolic link at a name the profiler or the analyzer will open. Opening a FIFO
 * blocks until a writer comes; a device may act on open. So every open of such a name goes
 * through ana_open_file: the name is looked at first (lstat, or stat when links are to be
 * followed) and only a regular file is opened, with O_NONBLOCK (a FIFO swapped in between
 * cannot block us) and O_CLOEXEC; after the open, fstat must show the same regular file.
 * ana_pread_all reads exactly a range of such a file (every reader of traces and live files
 * uses it). Thread-safe; no allocation; async-signal-safe apart from nothing (only system calls). */
#ifndef ANA_SAFE_OPEN_H
#define ANA_SAFE_OPEN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

enum {
    ANA_OPEN_NOFOLLOW = 1, /* a symbolic link is refused (ELOOP), not followed */
    ANA_OPEN_MINE = 2,     /* the file must belong to this effective user */
};

/* errno values ana_open_file gives beyond those of open(2) (ana_open_strerror words them). */
#define ANA_ENOTREG EMEDIUMTYPE /* not a regular file (FIFO, device, directory, socket) */
#define ANA_ENOTMINE EOWNERDEAD /* a regular file of another user (with ANA_OPEN_MINE) */

/* Opens the regular file at path with `flags` (O_RDONLY, O_RDWR, ...; O_NONBLOCK and
 * O_CLOEXEC are added; O_CREAT is not for this) and fills *st (may be NULL). Returns the
 * fd, or -1 with errno: ENOENT and the other open(2) errors, ELOOP for a symbolic link
 * under ANA_OPEN_NOFOLLOW, ANA_ENOTREG, ANA_ENOTMINE. O_NONBLOCK stays set: it changes
 * nothing for a regular file. */
int ana_open_file(const char *path, int flags, unsigned how, struct stat *st);

/* pread of exactly n bytes at off, retrying short reads and EINTR: 0, or -1 (an error or
 * the end of the file first). */
int ana_pread_all(int fd, void *buf, size_t n, uint64_t off);

/* strerror(e), with words for ELOOP, ANA_ENOTREG and ANA_ENOTMINE that say what to do. */
const char *ana_open_strerror(int e);

/* 1 when fd is still the file (dev, ino) it was: the program may close our descriptors
 * (closefrom, dup2 over them) and reuse their numbers for its own files. */
int ana_fd_is(int fd, dev_t dev, ino_t ino);

#endif
