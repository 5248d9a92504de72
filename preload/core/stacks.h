/* stacks.h — call stacks: interning (stacks.c) and capture (unwind.c, ana_stack_capture). */
#ifndef ANA_STACKS_H
#define ANA_STACKS_H

#include <stddef.h>
#include <stdint.h>
#include "defs.h"

/* Anonymous memory of that many bytes, reserved (pages come on first touch); NULL when
 * none can be had. Never freed: the tables of the process. */
void *ana_reserve(size_t bytes);
/* Reserves the interning tables; 0, or -1 saying once why stacks are off. Called by
 * ana_unwind_start (unwind.h), which loads the unwinder first. */
int ana_stacks_init(void);
/* Captures the caller's stack (skipping the preload's frames) and returns its interned id,
 * or 0 when stacks are off or unavailable. Hot path: no malloc, no lock. */
uint64_t ana_stack_capture(void);
/* The id of these frames, defining a new one if needed; 0 when the tables are full. */
uint64_t ana_stack_intern(const uint64_t *ips, uint32_t n);
/* Collector: calls fn for each stack defined since the last call, in id order. */
void ana_stacks_emit_new(void (*fn)(uint64_t id, const uint64_t *ips, uint32_t n, void *arg), void *arg);
/* After fork in the child: every stack is defined again in its trace. 1 when the tables
 * exist (stacks are on), 0 otherwise. */
int ana_stacks_atfork_child(void);
/* Collector: emit(id) for each id in [*cursor, end) not yet emitted whose entry is
 * ready, marking it; *cursor moves past the ids done in a row (stacks, Python code). */
void ana_defs_emit(uint32_t *cursor, uint32_t end, uint8_t *emitted, int (*ready)(uint32_t id),
                   void (*emit)(uint32_t id, void *arg), void *arg);
/* The frames of a defined id (any thread): their count, 0 for an unknown id. */
uint32_t ana_stack_frames(uint64_t id, const uint64_t **ips);

#endif
