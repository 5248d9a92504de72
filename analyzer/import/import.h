/* import.h — files into the model (model/trace.h). The commands call ana_import_load,
 * which picks the importer by the file's first bytes; each importer of a trace builds the
 * model with ana_trace_new/add/finish and never reaches an analysis.
 *
 * Importers: .anat traces (anat.c, through format/reader.h) and PyTorch profiler /
 * Kineto JSON (kineto.h); and a rank's summary from a `report --json` document
 * (ranks_read.c). A new format: a file here with its ana_<format>_load, and a
 * test of its first bytes in ana_import_load. Single-threaded. */
#ifndef ANA_IMPORT_H
#define ANA_IMPORT_H

#include "model/trace.h"

/* Reads path to its end. Returns 0 and a model in *out, or -1 with err filled (bad
 * header, corrupt chunk, I/O error). flags: enum ana_load_flags. A file that starts like
 * JSON or gzip (a PyTorch profiler / Kineto trace) is imported by kineto.h, any other as
 * an .anat trace. */
int ana_import_load(const char *path, unsigned flags, ana_trace **out, ana_error *err);

/* The same for an .anat trace, whatever its first bytes. */
int ana_anat_load(const char *path, unsigned flags, ana_trace **out, ana_error *err);

/* How far a load got, for a progress line (the command decides whether to show one). An
 * .anat load calls the function set here once at its start (records 0), every 65,536
 * records, and once at its end (done 1, also after an error). bytes_read: the file offset
 * past the last whole chunk read, of bytes_total (the file's size; the live file's records,
 * read last, add none). NULL (the default) calls nothing. */
typedef struct ana_import_progress {
    const char *path;
    uint64_t records, bytes_read, bytes_total;
    int done;
} ana_import_progress;
typedef void (*ana_import_progress_fn)(void *ctx, const ana_import_progress *p);
void ana_import_set_progress(ana_import_progress_fn fn, void *ctx);

/* The threads an .anat load reads with (format/reader.h, ana_reader_set_threads): n of them
 * read, decompress and decode chunks ahead of the one being added to the model; 1 = none,
 * the caller reads alone. 0 (the default): one per online CPU. What is loaded is the same
 * with any n. */
void ana_import_set_jobs(int n);

/* A rank's summary (analyses/ranks.h) back from a report (ranks_read.c). Reads the "rank"
 * member of a `report --json` document at path into out (source set to
 * path). 0, or -1 with why in err (not JSON, no "rank" member, a bad value). */
struct ana_rank;
int ana_rank_read_json(const char *path, struct ana_rank *out, char *err, size_t cap);
/* 1 when path is a `report --json` document (its first member is "schema":
 * "anatomist.report/..."); a PyTorch profiler trace, also JSON, is not. */
int ana_rank_json_is_report(const char *path);

#endif
