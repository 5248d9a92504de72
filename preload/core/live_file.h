/* live_file.h — the live file beside the trace (format/live.h) (live.c). */
#ifndef ANA_LIVE_FILE_H
#define ANA_LIVE_FILE_H

#include <signal.h>
#include <stdint.h>
#include "defs.h"
#include "live.h"
#include "records.h"

/* Creates TRACE.live for the trace with this id; slots will hold rings of ring_size bytes,
 * the staging area stage_size. 0, or -1 (then rings live in anonymous memory; said once). */
int ana_live_open(const char *trace_path, uint64_t trace_id, uint64_t ring_size, uint64_t stage_size);
/* Collector: the staging area (the payload of the chunk being built; *size bytes), NULL
 * without a live file. begin: the stage now fills chunk seq from its start; publish: its
 * first len bytes are whole records of that chunk. */
uint8_t *ana_live_stage(uint64_t *size);
void ana_live_stage_begin(uint64_t seq);
void ana_live_stage_publish(uint64_t len);
/* A slot with a ring of ring_size bytes after its header: in the live file when it can
 * grow, else in anonymous memory. NULL only when no memory can be had. */
ana_live_slot *ana_live_slot_new(uint64_t ring_size);
/* Mirrors a STACK or KERNEL definition into the live file's definitions ring. */
void ana_live_def(const ana_record *r);
/* Collector: the ring's head now, and, once everything defined before it is in the trace,
 * its commit. */
uint64_t ana_live_defs_snapshot(void);
void ana_live_defs_commit(uint64_t head);
/* The END a reader must give the trace (writing it failed). 1 when there is a live file. */
int ana_live_set_end(uint64_t reason, const char *detail);
/* The trace ended cleanly: the live file goes. */
void ana_live_finish(void);
/* Collector, each pass: 0, or -1 once the file was cut under us (truncated by someone
 * else, or gone): every mapping is then anonymous memory and what it held is lost. */
int ana_live_check(void);
void ana_live_atfork_child(void);
/* posix_fallocate that fails with EFBIG past RLIMIT_FSIZE instead of raising SIGXFSZ. */
int ana_file_grow(int fd, uint64_t off, uint64_t len);
/* Holds SIGXFSZ back on the calling thread around file writes made on a program's thread;
 * release consumes a SIGXFSZ they raised (one the program had pending stays). errno kept. */
typedef struct ana_xfsz {
    sigset_t old;
    int had;
} ana_xfsz;
void ana_xfsz_hold(ana_xfsz *x);
void ana_xfsz_release(ana_xfsz *x);

#endif
