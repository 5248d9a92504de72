/* live.h — the live file: what a profiled process has not written to its trace yet, kept
 * where the kernel keeps it after the process dies (docs/trace-format.md, "The live file").
 *
 * While a process runs, the preload keeps `T.live` beside its trace `T`. Each recording
 * thread's ring of encoded records, and a ring that mirrors new STACK and KERNEL
 * definitions, are pages of that file mapped MAP_SHARED: a record is in the file's page
 * cache the moment its thread publishes it, so it outlives SIGKILL, the OOM killer, abort
 * or a crash. The writer notes in the file how far each ring has been written into `T`.
 * A reader of `T` that finds no END record reads on into `T.live` (ana_live_load); a clean
 * end removes `T.live`; `anatomist recover` writes what it holds into `T` for good.
 *
 * Layout: a 4096-byte header, the definitions ring, the staging area (version 2), then
 * slots, each a 4096-byte slot header followed by its ring. The staging area holds the
 * payload of the trace chunk the writer is building: ring bytes are copied there, and the
 * ring space released, at once, so a thread's ring never waits for compression or a write.
 * All integers are little-endian (the writer is the traced host itself; readers on other
 * byte orders refuse the file), at the offsets given. */
#ifndef ANA_LIVE_H
#define ANA_LIVE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "records.h"

#define ANA_LIVE_MAGIC "ANATLIVE"
#define ANA_LIVE_SLOT_MAGIC "ANASLOT1"
#define ANA_LIVE_VERSION 2 /* 2: the staging area; readers read version 1 files too */
#define ANA_LIVE_HEADER_SIZE 4096u
#define ANA_LIVE_SLOT_HEADER 4096u
#define ANA_LIVE_DEFS_SIZE (1u << 20)
#define ANA_LIVE_NONE UINT64_MAX /* pend_seq: nothing pending */
#define ANA_LIVE_SUFFIX ".live"

typedef struct ana_live_header {
    char magic[8];                /*   0 "ANATLIVE" */
    uint32_t version;             /*   8 */
    uint32_t header_size;         /*  12 4096 */
    uint64_t trace_id;            /*  16 the trace header's id (offset 24 of the trace) */
    uint64_t pid;                 /*  24 the process */
    uint64_t defs_off;            /*  32 file offset of the definitions ring */
    uint64_t defs_size;           /*  40 its size, a power of two */
    uint64_t slots_off;           /*  48 file offset of slot 0 */
    uint64_t slot_stride;         /*  56 bytes per slot: slot header + ring */
    _Atomic uint64_t nslots;      /*  64 slots in use */
    _Atomic uint64_t defs_head;   /*  72 bytes ever appended to the definitions ring */
    _Atomic uint64_t defs_tail;   /*  80 definitions before this are in the trace */
    _Atomic uint64_t defs_lost;   /*  88 definitions the ring had no room for */
    _Atomic uint64_t end_reason;  /*  96 0, or the END reason the trace must end with */
    char end_detail[256];         /* 104 its detail, NUL-terminated */
    uint64_t created_ns;          /* 360 when the trace began (CLOCK_MONOTONIC): the time
                                   * given to definitions read from the ring */
    uint64_t stage_off;           /* 368 (2) file offset of the staging area; 0 = none */
    uint64_t stage_size;          /* 376 (2) its size */
    _Atomic uint64_t stage_seq;   /* 384 (2) the trace chunk the staged bytes will become */
    _Atomic uint64_t stage_len;   /* 392 (2) bytes staged: records, as in a chunk payload */
    /* Who wrote the file, so that nobody acts on another machine's or namespace's process
     * by its pid (0 = not known: files of earlier versions). */
    uint8_t boot_id[16];          /* 400 (2) /proc/sys/kernel/random/boot_id of the host */
    uint64_t pidns;               /* 416 (2) inode of the writer's pid namespace */
    uint64_t run_id;              /* 424 (2) ANATOMIST_RUN_ID: the `anatomist run` it ran under */
} ana_live_header;

/* One thread's ring. [tail, head) are records neither in the trace nor staged; a drained
 * range [tail, pend_tail) is "pending" until the trace chunk pend_seq is known to hold it:
 * written, or (version 2) staged: stage_seq == pend_seq and stage_len >= pend_stage. A
 * reader takes the pending values then, else the committed ones (tail, base_ns, drop_rep,
 * dropb_rep). */
typedef struct ana_live_slot {
    char magic[8];                  /*   0 "ANASLOT1" */
    uint64_t ring_size;             /*   8 a power of two */
    _Atomic uint64_t tid;           /*  16 the thread now using the slot */
    _Atomic uint64_t head;          /*  24 bytes appended */
    _Atomic uint64_t tail;          /*  32 bytes written to the trace (free for the thread) */
    _Atomic uint64_t base_ns;       /*  40 time of the last record before tail (0 at start) */
    _Atomic uint64_t drop_rep;      /*  48 drops the trace reports */
    _Atomic uint64_t dropb_rep;     /*  56 their bytes */
    _Atomic uint64_t pend_seq;      /*  64 chunk holding the pending range, or ANA_LIVE_NONE */
    _Atomic uint64_t pend_tail;     /*  72 */
    _Atomic uint64_t pend_base;     /*  80 */
    _Atomic uint64_t pend_drop;     /*  88 */
    _Atomic uint64_t pend_dropb;    /*  96 */
    _Atomic uint64_t dropped;       /* 104 records the thread could not append */
    _Atomic uint64_t dropped_bytes; /* 112 */
    _Atomic uint64_t pend_stage;    /* 120 (2) stage_len that covers the pending range */
} ana_live_slot;

_Static_assert(sizeof(ana_live_header) <= ANA_LIVE_HEADER_SIZE, "live header fits its page");
_Static_assert(sizeof(ana_live_slot) <= ANA_LIVE_SLOT_HEADER, "slot header fits its page");

/* ---- reading (live_read.c) ---- */

/* Which STACK, KERNEL and PYCODE ids a trace already defines (ids below the bitmaps' bounds). */
typedef struct ana_live_known {
    uint8_t *stacks;   /* bitmap, ANA_LIVE_KNOWN_STACKS bits */
    uint8_t *kernels;  /* bitmap, ANA_LIVE_KNOWN_KERNELS bits */
    uint8_t *pycodes;  /* bitmap, ANA_LIVE_KNOWN_PYCODES bits (2.2) */
} ana_live_known;
#define ANA_LIVE_KNOWN_STACKS (1u << 21)
#define ANA_LIVE_KNOWN_KERNELS (1u << 18)
#define ANA_LIVE_KNOWN_PYCODES (1u << 21)
/* The kinds the definitions ring holds (a definition's id is its first field). */
static inline int ana_live_is_def(uint32_t kind)
{
    return kind == ANA_K_STACK || kind == ANA_K_KERNEL || kind == ANA_K_PYCODE;
}

/* Marks id as defined (allocating the bitmaps on first use; ids out of range are ignored). */
void ana_live_known_add(ana_live_known *k, uint32_t kind, uint64_t id);
void ana_live_known_free(ana_live_known *k);

/* What a live file gave. */
typedef struct ana_live_result {
    uint8_t *payload;        /* records, as in a chunk payload: segments, each opened by SEGMENT */
    size_t len;
    size_t *pieces;          /* end offsets of pieces of at most ANA_CHUNK_MAX - 64 bytes,
                              * each beginning with a SEGMENT (one chunk each) */
    size_t npieces;
    uint64_t records;        /* records recovered (definitions included) */
    uint64_t threads;        /* slots that held records */
    uint64_t defs_lost;      /* definitions the process could not mirror (ids may be unknown) */
    uint64_t bad_bytes;      /* bytes of slots that were inconsistent and skipped */
    int has_end;             /* the payload ends with an END (the writer had stopped) */
    uint64_t pid;
    uint64_t last_ns;        /* the latest record time it holds, in the trace's ticks (1.5) */
} ana_live_result;

/* Reads `trace_path`.live, if there is one for this trace (trace_id matches): every record
 * not among the trace's first `chunks` chunks: the staged payload (when the trace lacks
 * chunk stage_seq), the definitions the trace and the stage lack, then each ring. Returns 1 (res filled; free it with
 * ana_live_result_free), 0 when there is no live file for this trace, -1 on a live file
 * that cannot be used (msg says why). Bounded by the file's size; never trusts its fields. */
int ana_live_load(const char *trace_path, uint64_t trace_id, uint64_t chunks,
                  const ana_live_known *known, ana_live_result *res, char *msg, size_t cap);
void ana_live_result_free(ana_live_result *res);

/* The pid in the header of trace_path's live file; -1 when there is none (or not one). */
int ana_live_pid_of(const char *trace_path, uint64_t *pid);

/* Where the live file's process runs, as seen from here (live_recover.c). */
enum {
    ANA_LIVE_HERE = 0,     /* this host's boot and pid namespace: its pid can be asked */
    ANA_LIVE_ELSEWHERE,    /* another host, boot or pid namespace: its pid means nothing here */
    ANA_LIVE_UNKNOWN,      /* the file does not say (an earlier version) */
};
/* This host's boot id and pid namespace, as a live header records them (0s when unknown). */
void ana_live_identity(uint8_t boot_id[16], uint64_t *pidns);
int ana_live_where(const ana_live_header *h);
/* The header of trace_path's live file (read without blocking, never following a link);
 * 0, or -1 when there is none or it is not a live file. */
int ana_live_header_of(const char *trace_path, ana_live_header *h);

/* ---- writing it into the trace (live_recover.c) ---- */

typedef struct ana_live_recovery {
    uint64_t records, threads, pid;
    int wrote_end;           /* an END was added (else the live file held one) */
} ana_live_recovery;

/* Writes into trace_path the records its live file holds beyond the trace's whole chunks
 * (a torn tail is cut off first), then an END with reason ANA_END_RECOVERED and `detail`
 * (unless the live file ends with an END of its own), and removes the live file. A trace
 * that already ends with END only loses a leftover live file of its own. Unless `force`,
 * a live file whose process still runs (its pid answers kill 0) is left alone. Returns 1
 * when records were written, 0 when there was nothing to do, -2 (msg says why) when the
 * process still runs, -1 with msg on failure (the trace is then as it was, apart from a
 * torn tail). */
int ana_live_recover(const char *trace_path, const char *detail, int force,
                     ana_live_recovery *info, char *msg, size_t cap);

#endif
