/* tick_study — the same trace at a coarser time resolution: reads a trace recorded in
 * nanoseconds and writes its records again with ANATOMIST_TIME_RESOLUTION's rounding
 * (docs/trace-format.md "Time resolution": times down to the tick, durations to the
 * nearest), so that the analyzer's reports of one run can be compared tick against tick
 * without the run-to-run jitter of recording the program again.
 *   tick_study SHIFT IN.anat OUT.anat      (tick = 2^SHIFT ns)
 * Chunks of 1 MiB of records (CHUNK_KB in the environment: other sizes), zstd level 3,
 * packed: as the preload writes them. Not a test; docs/overhead.md, "Trace size". */
#include "reader.h"
#include "writer.h"

#include <stdio.h>
#include <stdlib.h>


int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: tick_study SHIFT IN.anat OUT.anat\n");
        return 2;
    }
    unsigned shift = (unsigned)atoi(argv[1]);
    size_t chunk = getenv("CHUNK_KB") ? (size_t)atol(getenv("CHUNK_KB")) << 10 : 1u << 20;
    ana_reader *r;
    ana_error err;
    char msg[1024];
    if (ana_reader_open(argv[2], &r, &err) < 0) {
        ana_error_format(&err, msg, sizeof(msg));
        fprintf(stderr, "%s\n", msg);
        return 2;
    }
    ana_reader_stats st;
    ana_reader_get_stats(r, &st);
    ana_tw *tw = ana_tw_open(argv[3], 3);
    if (!tw || st.time_shift || ana_tw_set_time_shift(tw, shift) < 0) {
        fprintf(stderr, "tick_study: %s\n",
                tw ? "input not in ns, or bad shift" : "cannot create output");
        return 2;
    }
    ana_chunkbuf cb = { .shift = shift };
    ana_record rec;
    int rc, fail = 0;
    while ((rc = ana_reader_next(r, &rec, &err)) == 1) {
        if (ana_chunkbuf_add(&cb, &rec) < 0) {
            fail = 1;
            break;
        }
        if (cb.len >= chunk) {
            fail |= ana_tw_chunk(tw, cb.buf, cb.len) < 0;
            ana_chunkbuf_reset(&cb);
        }
    }
    if (cb.len)
        fail |= ana_tw_chunk(tw, cb.buf, cb.len) < 0;
    if (rc < 0) {
        ana_error_format(&err, msg, sizeof(msg));
        fprintf(stderr, "%s\n", msg);
        fail = 1;
    }
    ana_chunkbuf_free(&cb);
    ana_reader_close(r);
    fail |= ana_tw_close(tw) < 0;
    return fail ? 1 : 0;
}
