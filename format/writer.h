/* writer.h — the file side of the trace format: header and compressed chunks.
 *
 * Used by the preload's writer thread (never on an application thread) and by tests and
 * generators. Not thread-safe: one thread owns an ana_tw. Every chunk goes out in a single
 * write(2), so a process killed at any moment leaves only whole chunks plus at most one
 * torn tail, which readers treat as a clean end. */
#ifndef ANA_WRITER_H
#define ANA_WRITER_H

#include <stddef.h>
#include <stdint.h>

struct ana_record;

typedef struct ana_tw ana_tw;

/* Creates (truncates) path and writes the header. level: zstd level (1..19).
 * Returns NULL with errno set on failure. */
ana_tw *ana_tw_open(const char *path, int level);

/* Same, on an already open descriptor, which the ana_tw takes ownership of. */
ana_tw *ana_tw_open_fd(int fd, int level);
/* Same, with the header's trace id (ties the trace to its live file, live.h). */
ana_tw *ana_tw_open_fd_id(int fd, int level, uint64_t trace_id);

/* Creates path for writing (read-write, mode 0644 less the umask) without ever following a
 * symbolic link planted there: O_CREAT|O_EXCL|O_NOFOLLOW; a regular file of this user
 * already there (an earlier run's) is removed first, anything else is refused. Returns the
 * descriptor, or -1 with errno set and `why` saying what is wrong in words. */
int ana_file_create(const char *path, char *why, size_t cap);

/* ana_file_create, then the header with trace_id. NULL with errno and `why` on failure. */
ana_tw *ana_tw_create(const char *path, int level, uint64_t trace_id, char *why, size_t cap);

/* Continues a trace on fd after its first `bytes` bytes, which hold `chunks` whole chunks:
 * anything past them (a torn tail) is cut off. NULL with errno set on failure. */
ana_tw *ana_tw_append_fd(int fd, int level, uint64_t bytes, uint64_t chunks);

/* Compresses raw[0..n) (a sequence of records that begins with a SEGMENT) into one chunk
 * and writes it. Returns 0, or -1 with errno set (the file is then cut back to its whole
 * chunks; if even that fails, it may end in a torn tail). */
int ana_tw_chunk(ana_tw *tw, const void *raw, size_t n);

/* Writes a chunk holding only an END record (reason, detail of at most 512 bytes) at
 * time_ns, in the process segment. 0, or -1 as ana_tw_chunk. */
int ana_tw_end(ana_tw *tw, uint64_t time_ns, uint64_t reason, const char *detail);

/* (1.5) Sets the header's time shift: the records of every chunk written after this hold
 * times and durations in ticks of 2^shift ns (ana_record_to_ticks); ana_tw_end converts its
 * time itself. Only before the first chunk; 0, or -1 with errno set. A trace continued with
 * ana_tw_append_fd takes the shift from its header. */
int ana_tw_set_time_shift(ana_tw *tw, unsigned shift);
unsigned ana_tw_time_shift(const ana_tw *tw);

/* (2.0) Whether chunks are packed (pack.h; docs/trace-format.md, "Packed chunks"): on by
 * default, off for a trace continued with ana_tw_append_fd whose header is older than 2.0.
 * A chunk that cannot be packed is written as it is either way. */
void ana_tw_set_pack(ana_tw *tw, int on);
uint64_t ana_tw_packed(const ana_tw *tw); /* packed chunks written */

/* The descriptor written to; set_fd: the same file, opened again (the old number is not
 * closed: it may be someone else's now), positioned at the end of what was written. */
int ana_tw_fd(const ana_tw *tw);
int ana_tw_set_fd(ana_tw *tw, int fd);
/* Bytes written so far (header included) and chunks written. */
uint64_t ana_tw_bytes(const ana_tw *tw);
uint64_t ana_tw_chunks(const ana_tw *tw);

/* Closes the file. Returns 0, or -1 if close failed. */
int ana_tw_close(ana_tw *tw);

/* Builds a chunk payload in memory: a convenience for tests and generators (the preload
 * builds payloads from its rings). Grows with malloc. */
typedef struct ana_chunkbuf {
    uint8_t *buf;
    size_t len, cap;
    uint64_t seg_tid, prev_ns;
    int in_segment;
    unsigned shift; /* (1.5) records are added in ns and encoded in ticks of 2^shift ns */
} ana_chunkbuf;

/* Appends rec, opening a SEGMENT for rec->tid when the thread changes or the buffer is
 * empty. Returns 0, or -1 if rec cannot be encoded. */
int ana_chunkbuf_add(ana_chunkbuf *cb, const struct ana_record *rec);
void ana_chunkbuf_reset(ana_chunkbuf *cb); /* empties it; the next add opens a segment */
void ana_chunkbuf_free(ana_chunkbuf *cb);

#endif
