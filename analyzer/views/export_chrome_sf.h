/* export_chrome_sf.h — the Chrome trace's "stackFrames" dictionary (export_chrome.c): one
 * node per (parent, frame) met on the way from a stack's outermost frame to its innermost,
 * the profiler's own frames left out; an event names its stack's innermost node ("sf").
 * Part of views/: used by export_chrome.c only. */
#ifndef ANA_EXPORT_CHROME_SF_H
#define ANA_EXPORT_CHROME_SF_H

#include <stddef.h>
#include <stdint.h>

#include "model/json.h"
#include "model/stacks.h"
#include "model/symbolize.h"
#include "model/u64map.h"

typedef struct ana_chrome_frames {
    const ana_stacks *stacks;
    ana_symbolizer *sym;
    struct ana_chrome_sf { uint64_t parent, address; } *sf;
    size_t n_sf, cap_sf;
    ana_u64map child; /* hash of (parent, address), probed on -> node id (1-based) */
    ana_u64map leaf;  /* canonical stack id -> its innermost node id */
} ana_chrome_frames;

void ana_chrome_frames_init(ana_chrome_frames *f, const ana_stacks *stacks, ana_symbolizer *sym);
/* The innermost node of a stack's frames, made on first use; 0 when it has none. */
uint64_t ana_chrome_frames_leaf(ana_chrome_frames *f, uint64_t stack);
/* "stackFrames": every node made. */
void ana_chrome_frames_write(const ana_chrome_frames *f, ana_json *j);
void ana_chrome_frames_free(ana_chrome_frames *f);

#endif
