/* symbolize.h — offline symbolization of stack frames against the MODULE records of a
 * trace, with libdw (elfutils).
 *
 * A frame is a return address: the call site is looked up at address - 1. The module is
 * the one whose [lo, hi) holds that address; its ELF file is opened from the recorded path
 * (a build id that does not match the recorded one counts as a missing file). What
 * cannot be resolved stays NULL/0, but the module and offset are always given when a
 * module holds the address. When the module has DWARF, the functions inlined at the call
 * site are listed too (dwarf_getscopes), outermost first: `function` called inlined[0],
 * which called inlined[1], ..., and the last one holds the address. Results are cached
 * per address and owned by the symbolizer; the pointers stay valid until ana_sym_free.
 * Not thread-safe. Never fails: bad input gives unresolved frames. */
#ifndef ANA_SYMBOLIZE_H
#define ANA_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

#include "model/trace.h"

typedef struct ana_frame {
    uint64_t address;     /* as captured (a return address) */
    const char *module;   /* path of the module holding it, or NULL */
    uint64_t offset;      /* address - module load bias (address when no module) */
    const char *function; /* demangled when C++, or NULL */
    const char *file;     /* source file of the call site, or NULL */
    int64_t line;         /* 0 when unknown */
    const char *const *inlined; /* n_inlined names (demangled), outermost first; or NULL
                                 * (filled by ana_sym_lookup_inlined only) */
    size_t n_inlined;
    int python; /* a Python frame (trace-format "Python frames"): function is the code's
                 * qualified name, file and line its source; no module */
} ana_frame;

typedef struct ana_symbolizer ana_symbolizer;

/* enabled = 0 skips opening ELF files (module and offset only). t must outlive it. */
ana_symbolizer *ana_sym_new(const ana_trace *t, int enabled);
const ana_frame *ana_sym_lookup(ana_symbolizer *s, uint64_t address);
/* The same, with the functions inlined at the call site (from DWARF scopes: a cost per
 * address that only flame graphs pay). */
const ana_frame *ana_sym_lookup_inlined(ana_symbolizer *s, uint64_t address);
void ana_sym_free(ana_symbolizer *s);
/* What to call a frame: its function, else "module+0xOFFSET" (the module's basename), else
 * "0xADDRESS"; a Python frame is "file.py:qualname" (the file's basename). The last three
 * are written into buf. */
const char *ana_sym_frame_label(const ana_frame *f, char *buf, size_t cap);
/* A Python frame as flame graphs and the Chrome export name it: "qualname (file.py:line)"
 * (the file's basename), written into buf. */
const char *ana_sym_python_label(const ana_frame *f, char *buf, size_t cap);
/* 1 when f lies in the profiler's own library (a module named libanatomist*): frames that
 * reports leave out. */
int ana_sym_is_profiler(const ana_frame *f);

#endif
