/* ofile.h — the preload's own descriptors (the trace, the live file) (ofile.c).
 * Placed high and checked before each use: a program that closes or reuses descriptor
 * numbers never gets our writes, and never has its file closed by us. Not for the hot path
 * (fstat per use); no locking of its own. */
#ifndef ANA_OFILE_H
#define ANA_OFILE_H

#include <sys/types.h>
#include "defs.h"

typedef struct ana_ofile {
    int fd;
    dev_t dev;
    ino_t ino;
    char path[1100];
} ana_ofile;
/* Takes fd (opened on path) as ours, moved to a high number; returns the number, -1 on a
 * bad fd. errno kept. */
int ana_ofile_adopt(ana_ofile *f, int fd, const char *path);
/* The descriptor, still naming the file that was adopted, or reopened by its path (and
 * checked to be that same file); -1 when the file is gone. errno kept. */
int ana_ofile_fd(ana_ofile *f);
/* Closes the descriptor if it is still ours (never the program's). */
void ana_ofile_close(ana_ofile *f);
/* fd moved to the lowest free number >= floor (close-on-exec), the old number closed; fd
 * itself when it is already there or no such number is free. errno kept. */
int ana_fd_raise(int fd, int floor);

#endif
