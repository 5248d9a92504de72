/* anat.c — imports an .anat trace (docs/trace-format.md), read through format/reader.h,
 * into the model (model/trace.h): every record through ana_trace_add, then
 * ana_trace_finish; tells the progress function (ana_import_set_progress), when one is set,
 * how far it got. Part of import/: called by import.c (and tests); calls model/ and
 * format/. */
#include "import/import.h"

#include <unistd.h>

static ana_import_progress_fn progress;
static void *progress_ctx;
static int jobs; /* ana_import_set_jobs; 0: one per online CPU */

void ana_import_set_jobs(int n) { jobs = n; }

/* The threads to read with: jobs, or one per online CPU. */
static int threads(void)
{
    long n = jobs > 0 ? jobs : sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 256 ? 256 : (int)n;
}

void ana_import_set_progress(ana_import_progress_fn fn, void *ctx)
{
    progress = fn;
    progress_ctx = ctx;
}

/* Every 2^16 records: the reader's offset past its last whole chunk, of the file's size. */
static void tell(const char *path, const ana_reader *rd, uint64_t records, int done)
{
    ana_reader_stats st;
    ana_reader_get_stats(rd, &st);
    progress(progress_ctx, &(ana_import_progress){ .path = path, .records = records,
                                                   .bytes_read = ana_reader_good_end(rd),
                                                   .bytes_total = st.file_bytes, .done = done });
}

int ana_anat_load(const char *path, unsigned flags, ana_trace **out, ana_error *err)
{
    ana_reader *rd;
    ana_record rec;
    int rc;
    *out = NULL;
    if (ana_reader_open(path, &rd, err) != 0)
        return -1;
    ana_reader_set_threads(rd, threads()); /* if no thread can start, it reads alone */
    ana_trace *t = ana_trace_new(path, flags);
    uint64_t n = 0;
    if (progress)
        tell(path, rd, 0, 0);
    while ((rc = ana_reader_next(rd, &rec, err)) == 1) {
        ana_trace_add(t, &rec);
        if (progress && (++n & 0xFFFF) == 0)
            tell(path, rd, n, 0);
    }
    if (progress)
        tell(path, rd, n, 1);
    ana_reader_get_stats(rd, &t->stats);
    ana_reader_close(rd);
    if (rc < 0) {
        ana_trace_free(t);
        return -1;
    }
    ana_trace_finish(t);
    *out = t;
    return 0;
}
