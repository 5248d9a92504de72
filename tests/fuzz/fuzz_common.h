/* fuzz_common.h — what the fuzz targets (fuzz_trace.c, fuzz_kineto.c) share.
 *
 * An input becomes a file the analyzer opens by path, as `anatomist report` does: an
 * anonymous memory file (memfd) named by /proc/self/fd/N, so nothing touches the disk.
 * What loads is run through the whole report (ana_report_build, both writers) with its
 * output discarded, so every analysis sees the hostile model. Not thread-safe: libFuzzer
 * runs one input at a time. */
#ifndef ANA_FUZZ_COMMON_H
#define ANA_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "import/import.h"
#include "model/trace.h"

/* Writes data to a new memfd and its path to path. Returns the fd (close it when done),
 * or -1. */
int ana_fuzz_file(const void *data, size_t size, char *path, size_t cap);

/* Builds the report of t (no symbols: module paths in a hostile trace name arbitrary
 * files), writes it as text and JSON to /dev/null, frees t. */
void ana_fuzz_report(ana_trace *t);

/* Loads path with ana_import_load (full, then summary as `info` does), formats any error
 * and reports what loaded. */
void ana_fuzz_load(const char *path);

#endif
