/* modules.h — the module map and the preload's own text range (modules.c). */
#ifndef ANA_MODULES_H
#define ANA_MODULES_H

#include <stdint.h>
#include "defs.h"
#include "records.h"

/* Collector: calls fn for each loaded module not reported yet (all of them after reset). */
void ana_modules_emit_new(void (*fn)(const ana_rec_module *m, void *arg), void *arg);
void ana_modules_reset(void);
/* Finds the address range of the module holding addr (the preload's, libunwind's). */
void ana_modules_find_self(const void *addr, uintptr_t *lo, uintptr_t *hi);
/* The preload's own text range, so stacks can skip its frames (set by the constructor). */
extern uintptr_t ana_self_lo, ana_self_hi;

#endif
