/* anat.c — imports an .anat trace (docs/trace-format.md), read through format/reader.h,
 * into the model (model/trace.h): every record through ana_trace_add, then
 * ana_trace_finish. Part of import/: called by import.c (and tests); calls model/ and
 * format/. */
#include "import/import.h"

int ana_anat_load(const char *path, unsigned flags, ana_trace **out, ana_error *err)
{
    ana_reader *rd;
    ana_record rec;
    int rc;
    *out = NULL;
    if (ana_reader_open(path, &rd, err) != 0)
        return -1;
    ana_trace *t = ana_trace_new(path, flags);
    while ((rc = ana_reader_next(rd, &rec, err)) == 1)
        ana_trace_add(t, &rec);
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
