/* import.h — files into the model (model/trace.h). The commands call ana_import_load,
 * which picks the importer by the file's first bytes; each importer builds the model
 * with ana_trace_new/add/finish and never reaches an analysis.
 *
 * Importers: .anat traces (anat.c, through format/reader.h) and PyTorch profiler /
 * Kineto JSON (kineto.h). A new format: a file here with its ana_<format>_load, and a
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

#endif
