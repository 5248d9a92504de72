/* pyframes.h — Python frames in stacks (docs/trace-format.md "Python frames") (pyframes.c). */
#ifndef ANA_PYFRAMES_H
#define ANA_PYFRAMES_H

#include <stdatomic.h>
#include <stdint.h>
#include "defs.h"
#include "records.h"

/* 1 once the running CPython's frames can be read. */
extern _Atomic int ana_py_on;
/* Finds the interpreter (none: stays off silently; an unsupported one: says so once). */
void ana_py_init(void);
/* The id of native_id's frames followed by the calling thread's Python frames (native_id
 * itself when the thread runs no Python). Hot path: no malloc, no lock. */
uint64_t ana_py_extend(uint64_t native_id);
/* Collector: a PYCODE record for each code object defined since the last call. */
void ana_py_emit_new(void (*fn)(const ana_record *r, void *arg), void *arg);
/* The python.* INFO pairs of the trace (none outside Python). */
void ana_py_info(void (*fn)(const char *key, const char *value, void *arg), void *arg);
void ana_py_atfork_child(void);

#endif
