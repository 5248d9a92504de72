/* symbolize.c — see symbolize.h. One Dwfl session per module, opened on first use, so
 * that modules whose recorded ranges overlap over time never conflict.
 * Part of model/ (README.md): any layer may call it; it calls only model/ and format/. */
#include "model/symbolize.h"

#include "safe_open.h"
#include "model/util.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct ana_sym_module {
    Dwfl *dwfl;
    Dwfl_Module *mod;
    int state; /* 0 = not tried, 1 = open, -1 = unusable */
} ana_sym_module;

typedef struct ana_sym_entry {
    ana_frame frame;
    char *function, *file; /* owned */
    char **inlined;        /* owned, frame.n_inlined names */
    Dwfl_Module *mod;      /* the module that resolved it, NULL when none */
    int inlined_done;      /* ana_sym_lookup_inlined has looked */
} ana_sym_entry;

struct ana_symbolizer {
    const ana_trace *t;
    int enabled;
    ana_sym_module *mods; /* parallel to t->modules */
    ana_u64map cache;     /* address -> index into entries */
    ana_sym_entry **entries; /* one allocation each: returned pointers must not move */
    size_t n_entries, cap_entries;
};

static char *ana_sym_debuginfo_path = NULL;

static const Dwfl_Callbacks ana_sym_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &ana_sym_debuginfo_path,
};

ana_symbolizer *ana_sym_new(const ana_trace *t, int enabled)
{
    ana_symbolizer *s = ana_xcalloc(1, sizeof(*s));
    s->t = t;
    s->enabled = enabled;
    s->mods = ana_xcalloc(t->n_modules + 1, sizeof(ana_sym_module));
    ana_u64map_init(&s->cache);
    return s;
}

void ana_sym_free(ana_symbolizer *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->t->n_modules; i++)
        if (s->mods[i].dwfl)
            dwfl_end(s->mods[i].dwfl);
    for (size_t i = 0; i < s->n_entries; i++) {
        free(s->entries[i]->function);
        free(s->entries[i]->file);
        for (size_t k = 0; k < s->entries[i]->frame.n_inlined; k++)
            free(s->entries[i]->inlined[k]);
        free(s->entries[i]->inlined);
        free(s->entries[i]);
    }
    free(s->entries);
    free(s->mods);
    ana_u64map_free(&s->cache);
    free(s);
}

/* A file whose build id differs from the recorded one is another build: its symbols
 * would be wrong, so it is treated as missing. */
static int ana_sym_build_id_matches(Dwfl_Module *mod, const ana_trace_module *m)
{
    const unsigned char *bits;
    GElf_Addr vaddr;
    if (m->build_id_len == 0)
        return 1;
    int n = dwfl_module_build_id(mod, &bits, &vaddr);
    if (n <= 0)
        return 1; /* the file has none: nothing to compare */
    return (size_t)n == m->build_id_len && memcmp(bits, m->build_id, (size_t)n) == 0;
}

static ana_sym_module *ana_sym_open(ana_symbolizer *s, const ana_trace_module *m)
{
    ana_sym_module *sm = &s->mods[m - s->t->modules];
    if (sm->state != 0)
        return sm->state > 0 ? sm : NULL;
    sm->state = -1;
    if (!s->enabled || !m->path[0])
        return NULL;
    /* The path comes from the trace: a FIFO planted there would block libdwfl's open. */
    int fd = ana_open_file(m->path, O_RDONLY, 0, NULL);
    if (fd < 0)
        return NULL;
    sm->dwfl = dwfl_begin(&ana_sym_callbacks);
    if (!sm->dwfl) {
        close(fd);
        return NULL;
    }
    dwfl_report_begin(sm->dwfl);
    sm->mod = dwfl_report_elf(sm->dwfl, m->path, m->path, fd, m->bias, false);
    dwfl_report_end(sm->dwfl, NULL, NULL);
    if (!sm->mod)
        close(fd); /* consumed only on success (libdwfl.h) */
    if (!sm->mod || !ana_sym_build_id_matches(sm->mod, m)) {
        dwfl_end(sm->dwfl);
        sm->dwfl = NULL;
        sm->mod = NULL;
        return NULL;
    }
    sm->state = 1;
    return sm;
}

/* A symbol's name as shown: its demangled form (malloc'd, taken) or else the raw name,
 * escaped for text outputs (util.h ana_name_dup) — the module file is anyone's. */
static char *ana_sym_name(char *demangled, const char *raw)
{
    const char *s = demangled ? demangled : raw;
    char *out = ana_name_dup(s, strlen(s));
    free(demangled);
    return out;
}

/* The name of an inlined instance: its abstract origin's linkage name demangled (the
 * qualified name), else its plain name; NULL when it has neither. */
static char *ana_sym_die_name(Dwarf_Die *die)
{
    Dwarf_Attribute mem;
    const char *link = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &mem));
    if (!link)
        link = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &mem));
    const char *name = link ? link : dwarf_diename(die);
    return name ? ana_sym_name(link ? ana_demangle(link) : NULL, name) : NULL;
}

/* The chain of inlined subroutines that hold pc, outermost first (scopes come innermost
 * first). Instances without a name are skipped. */
static void ana_sym_inlined(ana_sym_entry *e, Dwfl_Module *mod, uint64_t pc)
{
    Dwarf_Addr bias = 0;
    Dwarf_Die *cu = dwfl_module_addrdie(mod, pc, &bias);
    Dwarf_Die *scopes = NULL;
    int n = cu ? dwarf_getscopes(cu, pc - bias, &scopes) : 0;
    for (int i = n - 1; i >= 0; i--) {
        if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine)
            continue;
        char *name = ana_sym_die_name(&scopes[i]);
        if (!name)
            continue;
        e->inlined = ana_xrealloc(e->inlined, (e->frame.n_inlined + 1) * sizeof(char *));
        e->inlined[e->frame.n_inlined++] = name;
    }
    free(scopes);
    e->frame.inlined = (const char *const *)e->inlined;
}

static void ana_sym_resolve(ana_symbolizer *s, ana_sym_entry *e, uint64_t pc)
{
    const ana_trace_module *m = ana_trace_module_at(s->t, pc);
    if (!m)
        return;
    e->frame.module = m->shown;
    e->frame.offset = e->frame.address - m->bias;
    ana_sym_module *sm = ana_sym_open(s, m);
    if (!sm)
        return;
    GElf_Off off;
    GElf_Sym sym;
    const char *name = dwfl_module_addrinfo(sm->mod, pc, &off, &sym, NULL, NULL, NULL);
    if (name)
        e->function = ana_sym_name(ana_demangle(name), name);
    Dwfl_Line *line = dwfl_module_getsrc(sm->mod, pc);
    int lineno = 0;
    const char *file = line ? dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL) : NULL;
    if (file) {
        e->file = ana_name_dup(file, strlen(file));
        e->frame.line = lineno > 0 ? lineno : 0;
    }
    e->frame.function = e->function;
    e->frame.file = e->file;
    e->mod = sm->mod;
}

static const char *ana_sym_file_base(const ana_frame *f)
{
    const char *base = f->file ? strrchr(f->file, '/') : NULL;
    return base ? base + 1 : f->file ? f->file : "?";
}

const char *ana_sym_python_label(const ana_frame *f, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s (%s:%lld)", f->function ? f->function : "?", ana_sym_file_base(f), (long long)f->line);
    return buf;
}

const char *ana_sym_frame_label(const ana_frame *f, char *buf, size_t cap)
{
    if (f->python) {
        snprintf(buf, cap, "%s:%s", ana_sym_file_base(f), f->function ? f->function : "?");
        return buf;
    }
    if (f->function)
        return f->function;
    if (f->module) {
        const char *base = strrchr(f->module, '/');
        snprintf(buf, cap, "%s+0x%llx", base ? base + 1 : f->module,
                 (unsigned long long)f->offset);
    } else {
        snprintf(buf, cap, "0x%llx", (unsigned long long)f->address);
    }
    return buf;
}

int ana_sym_is_profiler(const ana_frame *f)
{
    const char *base = f->module ? strrchr(f->module, '/') : NULL;
    base = base ? base + 1 : f->module;
    return base && strncmp(base, "libanatomist", 12) == 0;
}

const ana_frame *ana_sym_lookup(ana_symbolizer *s, uint64_t address)
{
    uint64_t k;
    if (ana_u64map_get(&s->cache, address, &k))
        return &s->entries[k]->frame;
    ANA_GROW(s->entries, s->cap_entries, s->n_entries + 1);
    ana_sym_entry *e = ana_xcalloc(1, sizeof(*e));
    s->entries[s->n_entries] = e;
    e->frame.address = address;
    e->frame.offset = address;
    if (ana_py_is_frame(address)) { /* after ana_py_merge: code id and line */
        const ana_pycode *c = ana_py_code(&s->t->py, ANA_PYFRAME_CODE(address));
        e->frame.python = 1;
        e->frame.function = c ? c->qualname : "?";
        e->frame.file = c ? c->file : NULL;
        e->frame.line = (int64_t)ana_py_frame_line(address);
        e->frame.offset = e->frame.line;
    } else {
        /* Return addresses point after the call: the call site is one byte before. */
        ana_sym_resolve(s, e, address ? address - 1 : 0);
    }
    ana_u64map_put(&s->cache, address, s->n_entries);
    s->n_entries++;
    return &e->frame;
}

const ana_frame *ana_sym_lookup_inlined(ana_symbolizer *s, uint64_t address)
{
    const ana_frame *f = ana_sym_lookup(s, address);
    uint64_t k;
    ana_u64map_get(&s->cache, address, &k);
    ana_sym_entry *e = s->entries[k];
    if (!e->inlined_done && e->mod && address)
        ana_sym_inlined(e, e->mod, address - 1);
    e->inlined_done = 1;
    return f;
}
