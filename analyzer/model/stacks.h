/* stacks.h — the process-wide stack table of a trace (docs/trace-format.md, "Interning").
 *
 * Stack ids are resolved after the whole file is read, because another thread's segment
 * may use an id before the defining segment appears in the file. Ids whose frames are
 * identical are merged: ana_stacks_canon() maps every id to the smallest id with the same
 * frames, so grouping by canonical id groups by call site. An id with no definition is
 * its own canonical id and has no frames ("unknown stack"). Not thread-safe. */
#ifndef ANA_STACKS_H
#define ANA_STACKS_H

#include <stddef.h>
#include <stdint.h>

#include "model/u64map.h"

typedef struct ana_stacks {
    ana_u64map by_id;   /* id -> index into entries */
    ana_u64map by_hash; /* hash of frames -> index of the first entry with that hash */
    struct ana_stack_entry {
        uint64_t id, canon;
        size_t first, n; /* frames[first .. first+n) */
    } *entries;
    size_t n_entries, cap_entries;
    uint64_t *frames;
    size_t n_frames, cap_frames;
    int resolved;
} ana_stacks;

void ana_stacks_init(ana_stacks *s);
void ana_stacks_free(ana_stacks *s);
/* Records a STACK definition (a later duplicate definition of an id is ignored). */
void ana_stacks_add(ana_stacks *s, uint64_t id, const uint64_t *ip, size_t n);
/* Drops the leading (innermost) frames of every stack for which drop(ip, arg) is true,
 * unless that would leave a stack with no frame. Call before ana_stacks_resolve. */
void ana_stacks_trim_leading(ana_stacks *s, int (*drop)(uint64_t ip, void *arg), void *arg);
/* Computes canonical ids; call once after the last ana_stacks_add. */
void ana_stacks_resolve(ana_stacks *s);
/* Canonical id of id (0 stays 0 = no stack). */
uint64_t ana_stacks_canon(const ana_stacks *s, uint64_t id);
/* Frames of id (innermost first); returns 0 frames for 0 or an undefined id. */
size_t ana_stacks_frames(const ana_stacks *s, uint64_t id, const uint64_t **ip);

#endif
