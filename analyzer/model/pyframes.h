/* pyframes.h — the Python frames of a trace's stacks (docs/trace-format.md "Python
 * frames"): the code objects their PYCODE records define, each frame's line from its
 * code's line table, and stacks rewritten so that each Python frame stands where the
 * interpreter's native frame that ran it stood. Not thread-safe. */
#ifndef ANA_PYFRAMES_H
#define ANA_PYFRAMES_H

#include <stddef.h>
#include <stdint.h>

#include "records.h"
#include "model/u64map.h"

typedef struct ana_pycode {
    uint64_t id;
    unsigned version; /* major * 100 + minor: the line table's format */
    int64_t first_line;
    char *qualname, *file;
    uint8_t *table;
    size_t table_len;
} ana_pycode;

typedef struct ana_pycodes {
    ana_u64map by_id; /* id -> index */
    ana_pycode *v;
    size_t n, cap;
    uint64_t frames, stacks; /* Python frames and stacks holding one, after ana_py_merge */
} ana_pycodes;

void ana_py_init(ana_pycodes *p);
void ana_py_free(ana_pycodes *p);
/* Keeps a PYCODE definition (a later one with the same id is ignored). */
void ana_py_add(ana_pycodes *p, const ana_rec_pycode *r);
const ana_pycode *ana_py_code(const ana_pycodes *p, uint64_t id);
/* The line the instruction at byte offset `offset` of c belongs to; 0 when its table says
 * it has none or cannot say. */
int64_t ana_py_line(const ana_pycode *c, uint64_t offset);

/* A frame after ana_py_merge: ANA_PYFRAME_BIT | code id << 32 | line. */
static inline int ana_py_is_frame(uint64_t w) { return (w & ANA_PYFRAME_BIT) != 0; }
static inline uint64_t ana_py_frame_line(uint64_t w) { return w & 0xffffffffull; }

struct ana_trace;
/* Rewrites every stack holding Python frames: each native frame of the evaluation loop
 * (python.eval, from the trace's INFO) becomes the Python frames it ran; the other
 * frames of the interpreter's own module go; Python frames the native part cannot place
 * (its walk was cut, or the loop's range is unknown) go where the interpreter's frames
 * began, after the last placed one. Each Python word becomes code id and line. Call
 * before the stacks are resolved. */
void ana_py_merge(struct ana_trace *t);

#endif
