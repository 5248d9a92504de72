/* reader.h — streaming, crash-tolerant reader of .anat traces (docs/trace-format.md,
 * "Reader rules").
 *
 * One caller thread per reader (which may start threads of its own: ana_reader_set_threads).
 * Memory is bounded by the largest chunk (times the threads). Records
 * returned by ana_reader_next() (their strings and frames included) stay valid until the
 * next call to ana_reader_next() or ana_reader_close(); copy what you keep. */
#ifndef ANA_READER_H
#define ANA_READER_H

#include "records.h"

typedef struct ana_reader ana_reader;

typedef enum ana_ended {
    ANA_ENDED_UNKNOWN = 0, /* not at the end yet */
    ANA_ENDED_EXIT,        /* an END record was read */
    ANA_ENDED_TRUNCATED,   /* ends at a chunk boundary without END: killed or crashed */
    ANA_ENDED_TORN,        /* ends inside a chunk: the torn tail was discarded */
    ANA_ENDED_RECOVERED,   /* the process died before finishing its trace: what it had not
                            * written was read from its live file (or an END with reason
                            * ANA_END_RECOVERED says `anatomist recover` wrote it in) */
} ana_ended;

typedef struct ana_error {
    char path[512];
    uint64_t offset;         /* file offset of the problem (chunk start for frame errors) */
    uint64_t chunk_offset;   /* file offset of the chunk holding it */
    uint64_t payload_offset; /* offset inside the decompressed chunk, or UINT64_MAX */
    uint32_t kind;           /* record kind involved, or 0 */
    char msg[256];
} ana_error;

/* Formats err as "FILE: offset N (chunk at M, payload offset K, record KIND): msg". */
void ana_error_format(const ana_error *err, char *buf, size_t cap);

/* Opens and validates the header. Returns 0, or -1 with err filled (err->offset 0..32). */
int ana_reader_open(const char *path, ana_reader **out, ana_error *err);

/* Next record in file order: 1 = rec filled, 0 = end of trace (see ana_reader_ended),
 * -1 = corrupt (err filled; the reader cannot continue). SEGMENT records are consumed
 * internally and not returned; rec->tid carries the segment's thread. Unknown kinds are
 * skipped. */
int ana_reader_next(ana_reader *r, ana_record *rec, ana_error *err);

typedef struct ana_reader_stats {
    uint16_t major, minor;
    uint64_t file_bytes;
    uint64_t chunks;
    uint64_t packed_chunks;    /* (2.0) chunks stored packed (docs/trace-format.md) */
    uint64_t raw_bytes;        /* decompressed payload bytes read so far */
    uint64_t torn_bytes;       /* bytes discarded at a torn tail */
    uint64_t unknown_records;  /* records of kinds this reader does not know, skipped */
    ana_ended ended;
    uint64_t trace_id;           /* the header's id (0 in traces before 1.4) */
    unsigned time_shift;         /* (1.5) times were stored in ticks of 2^time_shift ns;
                                  * records come out in ns (multiples of that tick) */
    uint64_t recovered_records;  /* records read from the live file (live.h) */
    uint64_t recovered_threads;  /* threads they came from */
    uint64_t recovered_bad_bytes; /* live-file bytes that did not add up, skipped */
    uint64_t defs_lost;          /* definitions the process could not keep in its live file */
    char live_error[256];        /* why a live file beside the trace was not used, or "" */
} ana_reader_stats;

void ana_reader_get_stats(const ana_reader *r, ana_reader_stats *st);
const char *ana_ended_name(ana_ended e); /* "exit", "truncated", "torn", "recovered", "unknown" */

/* Worker threads (none by default): with n >= 2, n threads of the reader's own read,
 * decompress and decode the chunks after the caller's current one, each into a batch of
 * records; the caller gets them in file order, one batch at a time, and at most n + 1
 * chunks are held at once. What ana_reader_next returns, every error and its offset, how
 * the trace ended and the stats are the same with any n; only the time differs. The
 * definitions, END and stats are taken as the caller reads each record, and the live file
 * is read by the caller's thread alone. Call before the first ana_reader_next. 0, or -1 (no
 * thread could start: it reads alone; with fewer than asked, with those). n <= 1: no
 * threads. For the analyzer; the preload, which must not start threads in a program,
 * leaves it off. */
int ana_reader_set_threads(ana_reader *r, int n);
/* With on, one such thread (reading ahead); off: none. */
int ana_reader_set_read_ahead(ana_reader *r, int on);

/* Whether, past the trace's last chunk, the reader goes on into the trace's live file (on by
 * default). Call before the first ana_reader_next. */
void ana_reader_set_live(ana_reader *r, int on);
struct ana_live_known;
/* The STACK and KERNEL ids read so far. */
const struct ana_live_known *ana_reader_known(const ana_reader *r);
/* Moves on to the last complete chunk of the trace, reading only the headers of the chunks
 * before it (16 bytes each, nothing decompressed): the next records are that chunk's, and
 * the end is as a full read would see it (END, truncated, torn) — for callers that want
 * only how a trace ended, such as `anatomist run` listing its traces. Records left in the
 * current chunk are dropped only when a later complete chunk exists. The live file is not
 * read afterwards (the skipped chunks' definitions are unknown). Returns 0, or -1 (err
 * filled) at a corrupt chunk header, as ana_reader_next would. */
int ana_reader_skip_to_last_chunk(ana_reader *r, ana_error *err);

/* Offset just past the last complete chunk read so far. */
uint64_t ana_reader_good_end(const ana_reader *r);

void ana_reader_close(ana_reader *r);

#endif
