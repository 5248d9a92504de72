/* The live file's protocol (live.h, docs/trace-format.md "The live file"): a process killed
 * at any step of the writer's sequence leaves a trace and a live file from which a reader
 * gets every record exactly once, in order. Each test builds the files as that step leaves
 * them and reads them with the reader. Version 2 (stage-publish-release-write, the ring
 * released once its range is staged) and version 1 files (drain-write-commit, the ring
 * released once the chunk is written), which readers still read. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "live.h"
#include "reader.h"
#include "writer.h"

#define N 30
#define RING 4096u
#define TID 77
#define ID 0x5eed5eed5eedull

static uint8_t ring[RING];
static size_t off[N + 1]; /* ring offset of record i (off[N]: the end) */

static uint64_t t_of(int i) { return i < 0 ? 0 : 1000 + 10 * (uint64_t)i; }

/* The thread's N allocations (sizes 100 + i) as its ring holds them, from offset 0. */
static void fill_ring(void)
{
    size_t at = 0;
    for (int i = 0; i < N; i++) {
        ana_record r = { .kind = ANA_K_ALLOC, .time_ns = t_of(i) };
        r.u.alloc = (ana_rec_alloc){ .api = ANA_API_MALLOC, .ptr = 0x1000 * (uint64_t)(i + 1),
                                     .size = 100 + (uint64_t)i };
        off[i] = at;
        at += ana_record_encode(ring + at, RING - at, &r, t_of(i - 1));
    }
    off[N] = at;
}

/* A chunk of records [a, b) as the writer makes it: SEGMENT then the ring's bytes. */
static void put_chunk(ana_tw *tw, int a, int b)
{
    uint8_t buf[RING + 64];
    ana_record seg = { .kind = ANA_K_SEGMENT };
    seg.u.segment = (ana_rec_segment){ TID, t_of(a - 1) };
    size_t n = ana_record_encode(buf, sizeof(buf), &seg, 0);
    memcpy(buf + n, ring + off[a], off[b] - off[a]);
    cr_assert_eq(ana_tw_chunk(tw, buf, n + off[b] - off[a]), 0);
}

typedef struct state {
    int chunks;              /* whole chunks in the trace: [0,10) then [10,20) */
    int torn;                /* a torn piece of the next chunk after them */
    int tail, pend_tail;     /* record indices */
    uint64_t pend_seq;
    int base_committed;      /* base_ns already moved to the pending value */
    /* version 2: chunk 1 ([10,20)) is built in the staging area */
    int v2;
    int staged;              /* the stage's bytes hold chunk 1's payload */
    uint64_t stage_seq;
    int published;           /* stage_len covers them (1), only their SEGMENT (2), or is 0 */
    int noted;               /* the slot's pend_stage is set (pend_seq as given) */
} state;

#define STAGE 4096u

/* Chunk 1's payload as the writer stages it; its length. */
static size_t stage_payload(uint8_t *buf)
{
    ana_record seg = { .kind = ANA_K_SEGMENT };
    seg.u.segment = (ana_rec_segment){ TID, t_of(9) };
    size_t n = ana_record_encode(buf, 64, &seg, 0);
    memcpy(buf + n, ring + off[10], off[20] - off[10]);
    return n + off[20] - off[10];
}

static void write_files(const char *dir, const state *s, char *trace, size_t cap)
{
    snprintf(trace, cap, "%s/t.anat", dir);
    int fd = open(trace, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ana_tw *tw = ana_tw_open_fd_id(fd, 1, ID);
    cr_assert_not_null(tw);
    if (s->chunks > 0)
        put_chunk(tw, 0, 10);
    if (s->chunks > 1)
        put_chunk(tw, 10, 20);
    ana_tw_close(tw);
    if (s->torn) {
        FILE *f = fopen(trace, "ab");
        fwrite("ACHK\x40\0\0\0\x40\0\0\0", 1, 12, f); /* a chunk header cut short */
        fclose(f);
    }
    char live[300];
    snprintf(live, sizeof(live), "%s%s", trace, ANA_LIVE_SUFFIX);
    static uint8_t file[ANA_LIVE_HEADER_SIZE + 1024 + STAGE + ANA_LIVE_SLOT_HEADER + RING];
    memset(file, 0, sizeof(file));
    ana_live_header *h = (ana_live_header *)file;
    memcpy(h->magic, ANA_LIVE_MAGIC, 8);
    h->version = s->v2 ? 2 : 1;
    h->header_size = ANA_LIVE_HEADER_SIZE;
    h->trace_id = ID;
    h->pid = 999999999; /* no such process */
    h->defs_off = ANA_LIVE_HEADER_SIZE;
    h->defs_size = 1024;
    h->slots_off = ANA_LIVE_HEADER_SIZE + 1024 + STAGE;
    size_t staged_len = 0;
    if (s->v2) {
        h->stage_off = ANA_LIVE_HEADER_SIZE + 1024;
        h->stage_size = STAGE;
        h->stage_seq = s->stage_seq;
        if (s->staged)
            staged_len = stage_payload(file + h->stage_off);
        uint32_t kind;
        size_t plen, seg_len = ana_record_header(file + h->stage_off, STAGE, &kind, &plen) + plen;
        h->stage_len = s->published == 1 ? staged_len : s->published == 2 ? seg_len : 0;
    }
    h->slot_stride = ANA_LIVE_SLOT_HEADER + RING;
    h->nslots = 1;
    ana_live_slot *sl = (ana_live_slot *)(file + h->slots_off);
    memcpy(sl->magic, ANA_LIVE_SLOT_MAGIC, 8);
    sl->ring_size = RING;
    sl->tid = TID;
    sl->head = off[N];
    sl->tail = off[s->tail];
    sl->base_ns = s->base_committed ? t_of(s->pend_tail - 1) : t_of(s->tail - 1);
    sl->pend_seq = s->pend_seq;
    sl->pend_tail = off[s->pend_tail];
    sl->pend_base = t_of(s->pend_tail - 1);
    sl->pend_stage = s->noted ? stage_payload(file + h->stage_off) : 0;
    memcpy(file + h->slots_off + ANA_LIVE_SLOT_HEADER, ring, RING);
    /* Bytes before tail are the thread's again: it may have written over them. */
    memset(file + h->slots_off + ANA_LIVE_SLOT_HEADER, 0xee, off[s->tail]);
    FILE *f = fopen(live, "wb");
    cr_assert_eq(fwrite(file, 1, sizeof(file), f), sizeof(file));
    fclose(f);
}

/* Reads the trace (and its live file) with that many threads (ana_reader_set_threads):
 * the sizes of its allocations, in file order. */
static int read_sizes_threads(const char *trace, uint64_t *sizes, ana_ended *ended, int threads)
{
    ana_reader *r;
    ana_error err;
    ana_record rec;
    cr_assert_eq(ana_reader_open(trace, &r, &err), 0, "%s", err.msg);
    cr_assert_eq(ana_reader_set_threads(r, threads), 0);
    int n = 0, rc;
    while ((rc = ana_reader_next(r, &rec, &err)) == 1)
        if (rec.kind == ANA_K_ALLOC) {
            cr_assert_eq(rec.tid, TID);
            cr_assert_eq(rec.time_ns, t_of((int)rec.u.alloc.size - 100), "times survive");
            sizes[n++] = rec.u.alloc.size;
        }
    cr_assert_eq(rc, 0, "%s", err.msg);
    ana_reader_stats st;
    ana_reader_get_stats(r, &st);
    *ended = st.ended;
    ana_reader_close(r);
    return n;
}

/* The same, alone and with worker threads: the same records, the same end. */
static int read_sizes(const char *trace, uint64_t *sizes, ana_ended *ended)
{
    uint64_t other[2 * N];
    ana_ended other_ended;
    int n = read_sizes_threads(trace, sizes, ended, 1);
    for (int threads = 2; threads <= 3; threads++) {
        cr_assert_eq(read_sizes_threads(trace, other, &other_ended, threads), n);
        cr_assert_eq(other_ended, *ended);
        cr_assert_arr_eq(other, sizes, (size_t)n * sizeof(*sizes));
    }
    return n;
}

static void check(const state *s)
{
    char dir[] = "/tmp/ana-live-XXXXXX", trace[300];
    cr_assert_not_null(mkdtemp(dir));
    fill_ring();
    write_files(dir, s, trace, sizeof(trace));
    uint64_t sizes[2 * N];
    ana_ended ended;
    int n = read_sizes(trace, sizes, &ended);
    cr_expect_eq(ended, ANA_ENDED_RECOVERED);
    cr_assert_eq(n, N, "every record once (got %d)", n);
    for (int i = 0; i < N; i++)
        cr_assert_eq(sizes[i], 100 + (uint64_t)i, "in order");
    /* anatomist recover writes them in: the trace alone then holds them, once. */
    ana_live_recovery info;
    char msg[512];
    cr_assert_eq(ana_live_recover(trace, "test", 0, &info, msg, sizeof(msg)), 1, "%s", msg);
    n = read_sizes(trace, sizes, &ended);
    cr_expect_eq(ended, ANA_ENDED_RECOVERED);
    cr_assert_eq(n, N);
    for (int i = 0; i < N; i++)
        cr_assert_eq(sizes[i], 100 + (uint64_t)i);
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

/* Chunk 0 ([0,10)) is written and committed; the writer drains [10,20) into chunk 1. */
Test(live, killed_before_the_drain) { check(&(state){ 1, 0, 10, 0, ANA_LIVE_NONE, 0, 0, 0, 0, 0, 0 }); }
Test(live, killed_while_noting_the_pending_range) { check(&(state){ 1, 0, 10, 20, ANA_LIVE_NONE, 0, 0, 0, 0, 0, 0 }); }
Test(live, killed_before_the_chunk_was_written) { check(&(state){ 1, 0, 10, 20, 1, 0, 0, 0, 0, 0, 0 }); }
Test(live, killed_in_the_middle_of_the_write) { check(&(state){ 1, 1, 10, 20, 1, 0, 0, 0, 0, 0, 0 }); }
Test(live, killed_after_the_write_before_the_commit) { check(&(state){ 2, 0, 10, 20, 1, 0, 0, 0, 0, 0, 0 }); }
Test(live, killed_in_the_middle_of_the_commit) { check(&(state){ 2, 0, 10, 20, 1, 1, 0, 0, 0, 0, 0 }); }
Test(live, killed_after_the_commit) { check(&(state){ 2, 0, 20, 20, ANA_LIVE_NONE, 1, 0, 0, 0, 0, 0 }); }
Test(live, killed_before_anything_was_written) { check(&(state){ 0, 0, 0, 0, ANA_LIVE_NONE, 0, 0, 0, 0, 0, 0 }); }

/* Version 2: chunk 0 ([0,10)) is written; the writer stages [10,20) for chunk 1, releases
 * the ring range, and later writes chunk 1 and starts staging chunk 2. Fields: chunks,
 * torn, tail, pend_tail, pend_seq, base_committed, v2, staged, stage_seq, published, noted. */
#define NONE ANA_LIVE_NONE
Test(live2, killed_before_the_drain) { check(&(state){ 1, 0, 10, 0, NONE, 0, 1, 0, 1, 0, 0 }); }
Test(live2, killed_after_the_copy_into_the_stage) { check(&(state){ 1, 0, 10, 0, NONE, 0, 1, 1, 1, 0, 0 }); }
Test(live2, killed_after_noting_the_pending_range) { check(&(state){ 1, 0, 10, 20, 1, 0, 1, 1, 1, 0, 1 }); }
Test(live2, killed_after_publishing_the_stage) { check(&(state){ 1, 0, 10, 20, 1, 0, 1, 1, 1, 1, 1 }); }
Test(live2, killed_in_the_middle_of_the_release) { check(&(state){ 1, 0, 10, 20, 1, 1, 1, 1, 1, 1, 1 }); }
Test(live2, killed_after_the_release) { check(&(state){ 1, 0, 20, 20, 1, 1, 1, 1, 1, 1, 1 }); }
Test(live2, killed_after_the_release_was_noted) { check(&(state){ 1, 0, 20, 20, NONE, 1, 1, 1, 1, 1, 1 }); }
Test(live2, killed_in_the_middle_of_the_write) { check(&(state){ 1, 1, 20, 20, NONE, 1, 1, 1, 1, 1, 1 }); }
Test(live2, killed_after_the_write) { check(&(state){ 2, 0, 20, 20, NONE, 1, 1, 1, 1, 1, 1 }); }
Test(live2, killed_while_the_stage_starts_again) { check(&(state){ 2, 0, 20, 20, NONE, 1, 1, 1, 1, 0, 1 }); }
Test(live2, killed_after_the_stage_started_again) { check(&(state){ 2, 0, 20, 20, NONE, 1, 1, 1, 2, 0, 1 }); }
/* A range noted as staged past what the stage publishes is read from its ring. */
Test(live2, a_pending_range_beyond_the_published_stage) { check(&(state){ 1, 0, 10, 20, 1, 0, 1, 1, 1, 2, 1 }); }

/* A live file of another trace (another run at the same name) is never read. */
Test(live, a_live_file_of_another_trace_is_ignored)
{
    char dir[] = "/tmp/ana-live-XXXXXX", trace[300];
    cr_assert_not_null(mkdtemp(dir));
    fill_ring();
    write_files(dir, &(state){ 1, 0, 10, 0, ANA_LIVE_NONE, 0, 0, 0, 0, 0, 0 }, trace, sizeof(trace));
    int fd = open(trace, O_WRONLY);
    uint64_t other = ID + 1;
    cr_assert_eq(pwrite(fd, &other, 8, 24), 8);
    close(fd);
    uint64_t sizes[2 * N];
    ana_ended ended;
    cr_assert_eq(read_sizes(trace, sizes, &ended), 10, "only the trace's own chunk");
    cr_expect_eq(ended, ANA_ENDED_TRUNCATED);
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}
