/* export_chrome_sf.c — the Chrome trace's stack frame nodes (export_chrome_sf.h). Part of
 * views/: calls model/ only. */
#include "views/export_chrome_sf.h"

#include "model/memevents.h"
#include "model/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ana_chrome_frames_init(ana_chrome_frames *f, const ana_stacks *stacks, ana_symbolizer *sym)
{
    memset(f, 0, sizeof(*f));
    f->stacks = stacks;
    f->sym = sym;
    ana_u64map_init(&f->child);
    ana_u64map_init(&f->leaf);
}

static uint64_t ana_chrome_sf_node(ana_chrome_frames *f, uint64_t parent, uint64_t address)
{
    uint64_t k = (parent * 0x9E3779B97F4A7C15ull) ^ (address * 0xff51afd7ed558ccdull), v;
    for (;; k++) { /* probe on: distinct (parent, address) pairs may share a hash */
        if (!ana_u64map_get(&f->child, k, &v))
            break;
        if (f->sf[v - 1].parent == parent && f->sf[v - 1].address == address)
            return v;
    }
    ANA_GROW(f->sf, f->cap_sf, f->n_sf + 1);
    f->sf[f->n_sf++] = (struct ana_chrome_sf){ parent, address };
    ana_u64map_put(&f->child, k, f->n_sf);
    return f->n_sf;
}

uint64_t ana_chrome_frames_leaf(ana_chrome_frames *f, uint64_t stack)
{
    uint64_t leaf = 0;
    if (!stack || stack == ANA_MEM_STACK_DRIVER)
        return 0;
    if (!ana_u64map_get(&f->leaf, stack, &leaf)) {
        const uint64_t *ip;
        size_t n = ana_stacks_frames(f->stacks, stack, &ip);
        while (n-- > 0)
            if (!ana_sym_is_profiler(ana_sym_lookup(f->sym, ip[n])))
                leaf = ana_chrome_sf_node(f, leaf, ip[n]);
        ana_u64map_put(&f->leaf, stack, leaf);
    }
    return leaf;
}

void ana_chrome_frames_write(const ana_chrome_frames *f, ana_json *j)
{
    char buf[1024], id[24];
    ana_json_key(j, "stackFrames");
    ana_json_obj_begin(j);
    for (size_t i = 0; i < f->n_sf; i++) {
        const ana_frame *fr = ana_sym_lookup(f->sym, f->sf[i].address);
        snprintf(id, sizeof(id), "%zu", i + 1);
        ana_json_key(j, id);
        ana_json_obj_begin(j);
        if (fr->python) {
            ana_json_kstr(j, "name", ana_sym_python_label(fr, buf, sizeof(buf)));
            ana_json_kstr(j, "category", "python");
        } else {
            ana_json_kstr(j, "name", ana_sym_frame_label(fr, buf, sizeof(buf)));
            const char *m = fr->module ? strrchr(fr->module, '/') : NULL;
            ana_json_kstr(j, "category", m ? m + 1 : fr->module ? fr->module : "native");
        }
        if (f->sf[i].parent) {
            snprintf(id, sizeof(id), "%llu", (unsigned long long)f->sf[i].parent);
            ana_json_kstr(j, "parent", id);
        }
        ana_json_obj_end(j);
    }
    ana_json_obj_end(j);
}

void ana_chrome_frames_free(ana_chrome_frames *f)
{
    ana_u64map_free(&f->child);
    ana_u64map_free(&f->leaf);
    free(f->sf);
}
