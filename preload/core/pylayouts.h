/* pylayouts.h — where each CPython version keeps what pyframes.c reads: the thread's
 * frame chain, each frame's code object and instruction, and the code object's names,
 * first line and line table. One row per minor version, every offset in bytes, printed
 * by preload/pylayout_gen.c compiled against that version's own headers (scripts/pylayouts
 * writes the rows; tests/scenario/test_pyframes.py checks them against every interpreter
 * installed). 0xffff: the version has no such field; -1: no such owner value. */
#ifndef ANA_PYLAYOUTS_H
#define ANA_PYLAYOUTS_H

#include <stdint.h>

/* How a thread state leads to its innermost frame. */
enum {
    ANA_PYF_FRAMEOBJ = 1, /* 3.9, 3.10: tstate->frame, a PyFrameObject chained by f_back */
    ANA_PYF_CFRAME = 2,   /* 3.11, 3.12: tstate->cframe->current_frame, _PyInterpreterFrame */
    ANA_PYF_DIRECT = 3,   /* 3.13: tstate->current_frame */
};
/* What a frame's instruction field holds. */
enum {
    ANA_PYL_BYTES = 1, /* 3.9: f_lasti, a byte offset (-1 before the first instruction) */
    ANA_PYL_UNITS = 2, /* 3.10: f_lasti, in 2-byte code units */
    ANA_PYL_PTR = 3,   /* 3.11+: a pointer into the code object's co_code_adaptive */
};

typedef struct ana_pylayout {
    uint8_t major, minor, frames, lasti;
    uint16_t ts_frame, cf_current;                          /* thread state; _PyCFrame */
    uint16_t fr_back, fr_code, fr_instr, fr_owner, fr_entry; /* frame */
    int8_t own_generator, own_cstack;                       /* owner values */
    uint16_t co_name, co_qualname, co_filename, co_firstlineno, co_linetable, co_code,
        co_firsttraceable;                                  /* code object */
    uint16_t var_size, bytes_data;                          /* bytes object */
    uint16_t str_length, str_state, str_ascii_size, str_compact_size; /* str object */
    uint8_t st_kind, st_compact, st_ascii;                  /* bits of str state */
} ana_pylayout;

static const ana_pylayout ana_pylayouts[] = {
    /* rows: begin */
    { 3, 9, ANA_PYF_FRAMEOBJ, ANA_PYL_BYTES, 24, 0, 24, 32, 104, 0xffff, 0xffff, -1, -1, 112, 0xffff, 104, 40, 120, 0xffff, 0xffff, 16, 32, 16, 32, 48, 72, 2, 5, 6 },
    { 3, 10, ANA_PYF_FRAMEOBJ, ANA_PYL_UNITS, 24, 0, 24, 32, 96, 0xffff, 0xffff, -1, -1, 112, 0xffff, 104, 40, 120, 0xffff, 0xffff, 16, 32, 16, 32, 48, 72, 2, 5, 6 },
    { 3, 11, ANA_PYF_CFRAME, ANA_PYL_PTR, 56, 8, 48, 32, 56, 69, 68, 1, -1, 120, 128, 112, 72, 136, 184, 168, 16, 32, 16, 32, 48, 72, 2, 5, 6 },
    { 3, 12, ANA_PYF_CFRAME, ANA_PYL_PTR, 56, 0, 8, 0, 56, 70, 0xffff, 1, 3, 120, 128, 112, 68, 136, 192, 176, 16, 32, 16, 32, 40, 56, 2, 5, 6 },
    { 3, 13, ANA_PYF_DIRECT, ANA_PYL_PTR, 72, 0, 8, 0, 56, 70, 0xffff, 1, 3, 120, 128, 112, 68, 136, 200, 184, 16, 32, 16, 32, 40, 56, 2, 5, 6 },
    /* rows: end */
};

#endif
