/* flame.h — flame graphs of a trace: a tree of host call stacks (outermost frame at the
 * root) whose leaves are the GPU work or the memory they stand for, weighted by one
 * metric, and its writers (folded stacks, a self-contained SVG, JSON for the HTML viewer).
 *
 * Metrics (docs/flame.md):
 *   gpu-time       ns of every GPU activity (kernel, copy, set) under the host stack of
 *                  the call that issued it (by correlation id), leaves "<class>;<kernel>"
 *                  for kernels, "memory;memcpy H2D" style for copies and sets;
 *   peak-memory    bytes of the device allocations live at the device peak, leaf = the
 *                  allocation's category (memcat.h) in brackets, e.g. "[weights]";
 *   leaked-memory  bytes of the device allocations still live at the end, same leaves;
 *   alloc-bytes    bytes of every successful device allocation, same leaves;
 *   alloc-count    the number of those allocations, same leaves.
 * Host frames are symbolized (demangled, with the functions inlined at the call site when
 * the module has debug info, as frames of their own); frames inside the profiler's own
 * library are dropped; an address that cannot be named is "module+0xoffset". Activity
 * with no host call is under "[no host stack]".
 *
 * Built from a finished ana_report (report.h), which must outlive the flame. Node 0 is
 * the root ("all"); children come after their parent (preorder), siblings ordered by name,
 * so output is deterministic. Not thread-safe. */
#ifndef ANA_FLAME_H
#define ANA_FLAME_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model/json.h"

struct ana_report;

enum ana_flame_metric {
    ANA_FLAME_GPU_TIME = 0,
    ANA_FLAME_PEAK_MEMORY = 1,
    ANA_FLAME_LEAKED_MEMORY = 2,
    ANA_FLAME_ALLOC_BYTES = 3,
    ANA_FLAME_ALLOC_COUNT = 4,
    ANA_FLAME_METRICS = 5
};

typedef struct ana_flame_node {
    uint32_t name;      /* index into ana_flame.names */
    uint32_t parent;    /* root: 0 */
    uint64_t total;     /* the metric of this frame and everything under it */
    uint64_t self;      /* of this frame alone (a leaf: its total) */
    uint64_t base_total, base_self; /* merged (diff) flames: the base's values, else 0 */
} ana_flame_node;

typedef struct ana_flame {
    int metric;          /* enum ana_flame_metric */
    int diff;            /* 1: made by ana_flame_merge (total/self are head's) */
    char **names;        /* interned frame names */
    size_t n_names, cap_names;
    ana_flame_node *nodes; /* preorder; nodes[0] is the root */
    size_t n_nodes, cap_nodes;
    uint64_t total, base_total; /* = nodes[0].total / base_total */
} ana_flame;

/* 1 when a frame name is a Python frame's, "qualname (file.py:line)" (symbolize.h
 * ana_sym_python_label). */
int ana_flame_is_python(const char *name);
/* "gpu-time" ... "alloc-count" <-> enum; -1 for an unknown name. */
int ana_flame_metric_parse(const char *s);
const char *ana_flame_metric_name(int metric);
/* "ns", "bytes" or "allocations". */
const char *ana_flame_metric_unit(int metric);

void ana_flame_build(const struct ana_report *r, int metric, ana_flame *out);
/* A differential flame: every stack of either, total/self from head, base_* from base
 * (same metric). */
void ana_flame_merge(const ana_flame *base, const ana_flame *head, ana_flame *out);
/* The merged flame of two reports: ana_flame_build of each, then ana_flame_merge. */
void ana_flame_build_diff(const struct ana_report *base, const struct ana_report *head,
                          int metric, ana_flame *out);
void ana_flame_free(ana_flame *f);

/* "frame;frame;leaf value" per stack with a nonzero self, ';' in names replaced, one line
 * each, root excluded (flamegraph.pl, inferno, speedscope). A merged flame writes
 * "stack base head" (difffolded.pl). */
void ana_flame_write_folded(const ana_flame *f, FILE *out);
/* {"metric","unit","total","base_total"(diff only),"names":[...],
 *  "nodes":[[name,parent,total,self(,base_total,base_self)],...]} for the viewer. */
void ana_flame_write_json(const ana_flame *f, ana_json *j);
/* One standalone SVG with its own script: hover for tooltips, click to zoom, Ctrl-F
 * search. title may be NULL. */
void ana_flame_write_svg(const ana_flame *f, FILE *out, const char *title);

#endif
