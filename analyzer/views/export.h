/* export.h — `anatomist export`: a trace's data in formats other tools read
 * (docs/export.md): the Chrome trace event format that Perfetto and chrome://tracing open
 * (a track per GPU stream with kernels, copies and sets; NVTX ranges and the API calls on
 * a track per host thread; a counter track of device memory by category), and an SQLite
 * database with one table per kind of thing (kernels, copies, allocations, GEMMs,
 * collectives, ranges, strings, stacks, ...), queryable like an Nsight Systems export.
 * Folded stacks come from flame.h. Built from a finished report. Not thread-safe. */
#ifndef ANA_EXPORT_H
#define ANA_EXPORT_H

#include <stddef.h>
#include <stdio.h>

struct ana_report;

/* 0, or -1 when writing failed. */
int ana_export_chrome(const struct ana_report *r, FILE *out);
/* Writes a new database into the empty file (or new name) path. 0, or -1 with why in err. */
int ana_export_sqlite(const struct ana_report *r, const char *path, char *err, size_t cap);

#endif
