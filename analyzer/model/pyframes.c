/* pyframes.c — see pyframes.h. Line tables, by the interpreter that wrote them:
 *   3.9   co_lnotab: (byte offset increment, signed line increment) pairs;
 *   3.10  co_linetable: (byte length, signed line delta; -128 = no line) pairs, one range each;
 *   3.11+ the location table (CPython's Objects/locations.md): entries of a first byte
 *         1CCCCLLL (code C, length L + 1 code units) and code-dependent varints.
 * A table cut short by the preload (over 48 KiB) gives 0 (unknown) past its end.
 * Part of model/ (README.md): any layer may call it; it calls only model/ and format/. */
#include "model/pyframes.h"

#include "model/trace.h"
#include "model/util.h"

#include <stdlib.h>
#include <string.h>

void ana_py_init(ana_pycodes *p)
{
    memset(p, 0, sizeof(*p));
    ana_u64map_init(&p->by_id);
}

void ana_py_free(ana_pycodes *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->v[i].qualname);
        free(p->v[i].file);
        free(p->v[i].table);
    }
    free(p->v);
    ana_u64map_free(&p->by_id);
    memset(p, 0, sizeof(*p));
}

void ana_py_add(ana_pycodes *p, const ana_rec_pycode *r)
{
    uint64_t k;
    if (r->id == 0 || ana_u64map_get(&p->by_id, r->id, &k))
        return;
    ANA_GROW(p->v, p->cap, p->n + 1);
    ana_pycode *c = &p->v[p->n];
    c->id = r->id;
    c->version = (unsigned)r->version;
    c->first_line = (int64_t)r->first_line;
    c->qualname = ana_str_name(r->qualname); /* names the program chose: escaped for text */
    c->file = ana_str_name(r->file);
    c->table_len = r->linetable.len;
    c->table = ana_xmalloc(c->table_len + 1);
    if (c->table_len)
        memcpy(c->table, r->linetable.s, c->table_len);
    ana_u64map_put(&p->by_id, r->id, p->n++);
}

const ana_pycode *ana_py_code(const ana_pycodes *p, uint64_t id)
{
    uint64_t k;
    return ana_u64map_get(&p->by_id, id, &k) ? &p->v[k] : NULL;
}

static uint64_t ana_py_varint(const uint8_t **pp, const uint8_t *end)
{
    const uint8_t *p = *pp;
    uint64_t v = 0;
    unsigned shift = 0;
    while (p < end) {
        uint8_t b = *p++;
        v |= (uint64_t)(b & 63) << shift;
        shift += 6;
        if (!(b & 64) || shift > 60)
            break;
    }
    *pp = p;
    return v;
}

static int64_t ana_py_svarint(const uint8_t **pp, const uint8_t *end)
{
    uint64_t u = ana_py_varint(pp, end);
    return (u & 1) ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
}

static int64_t ana_py_line_311(const ana_pycode *c, uint64_t unit)
{
    const uint8_t *p = c->table, *end = c->table + c->table_len;
    int64_t line = c->first_line;
    uint64_t addr = 0;
    while (p < end) {
        uint8_t b = *p++;
        if (!(b & 0x80))
            return 0; /* not at an entry's first byte: a table we cannot read */
        unsigned code = (b >> 3) & 15, len = (b & 7) + 1;
        int64_t delta = 0;
        if (code == 14) { /* long form: line delta, end line delta, column, end column */
            delta = ana_py_svarint(&p, end);
            ana_py_varint(&p, end), ana_py_varint(&p, end), ana_py_varint(&p, end);
        } else if (code == 13) { /* no columns */
            delta = ana_py_svarint(&p, end);
        } else if (code >= 10 && code <= 12) { /* one line: delta code - 10, two column bytes */
            delta = code - 10;
            p += 2;
        } else if (code < 10) { /* short form: same line, one column byte */
            p += 1;
        }
        line += delta;
        if (unit >= addr && unit < addr + len)
            return code == 15 ? 0 : line;
        addr += len;
    }
    return 0;
}

static int64_t ana_py_line_310(const ana_pycode *c, uint64_t offset)
{
    int64_t line = c->first_line;
    uint64_t start = 0;
    for (size_t i = 0; i + 1 < c->table_len; i += 2) {
        uint64_t end = start + c->table[i];
        int8_t d = (int8_t)c->table[i + 1];
        int has = d != -128;
        if (has)
            line += d;
        if (offset >= start && offset < end)
            return has ? line : 0;
        start = end;
    }
    return 0;
}

static int64_t ana_py_line_39(const ana_pycode *c, uint64_t offset)
{
    int64_t line = c->first_line;
    uint64_t addr = 0;
    for (size_t i = 0; i + 1 < c->table_len; i += 2) {
        addr += c->table[i];
        if (addr > offset)
            break;
        line += (int8_t)c->table[i + 1];
    }
    return line;
}

int64_t ana_py_line(const ana_pycode *c, uint64_t offset)
{
    int64_t line = c->version >= 311 ? ana_py_line_311(c, offset / 2)
                   : c->version == 310 ? ana_py_line_310(c, offset)
                                       : ana_py_line_39(c, offset);
    return line > 0 && line < 0xffffffffll ? line : 0;
}

/* [lo, hi) from "0xLO-0xHI"; 0 when the trace has no such pair. */
static int ana_py_range(const ana_trace *t, const char *key, uint64_t *lo, uint64_t *hi)
{
    const char *v = ana_trace_info(t, key);
    char *e;
    if (!v)
        return 0;
    *lo = strtoull(v, &e, 16);
    if (*e != '-')
        return 0;
    *hi = strtoull(e + 1, &e, 16);
    return *lo < *hi;
}

struct ana_py_ctx {
    const ana_trace *t;
    uint64_t eval_lo, eval_hi;
    const ana_trace_module *interp; /* the module holding the evaluation loop */
};

static uint64_t ana_py_word(const ana_trace *t, uint64_t w)
{
    uint64_t id = ANA_PYFRAME_CODE(w);
    const ana_pycode *c = ana_py_code(&t->py, id);
    int64_t line = c ? ana_py_line(c, ANA_PYFRAME_OFFSET(w)) : 0;
    return ANA_PYFRAME_BIT | (id << 32) | (uint64_t)line;
}

/* in: one stack's frames; out: room for n. Returns the count written. */
static size_t ana_py_merge_one(const struct ana_py_ctx *c, const uint64_t *in, size_t n, uint64_t *out)
{
    size_t nn = 0, np = 0, k = 0, pi = 0;
    while (nn < n && !ana_py_is_frame(in[nn]))
        nn++;
    const uint64_t *py = in + nn;
    np = n - nn;
    long after_py = -1, interp_at = -1;
    for (size_t i = 0; i < nn; i++) {
        uint64_t ip = in[i];
        if (c->eval_hi && ip - 1 >= c->eval_lo && ip - 1 < c->eval_hi) {
            if (interp_at < 0)
                interp_at = (long)k;
            while (pi < np) {
                uint64_t w = py[pi++];
                out[k++] = ana_py_word(c->t, w);
                if (w & ANA_PYFRAME_ENTRY)
                    break;
            }
            after_py = (long)k;
            continue;
        }
        const ana_trace_module *m = c->interp ? ana_trace_module_at(c->t, ip - 1) : NULL;
        if (m && m == c->interp) {
            if (interp_at < 0)
                interp_at = (long)k;
            continue;
        }
        out[k++] = ip;
    }
    if (pi < np) { /* the rest go after the last placed Python frame, else where the interpreter began */
        size_t at = after_py >= 0 ? (size_t)after_py : interp_at >= 0 ? (size_t)interp_at : k;
        size_t rest = np - pi;
        memmove(out + at + rest, out + at, (k - at) * sizeof(uint64_t));
        for (size_t j = 0; j < rest; j++)
            out[at + j] = ana_py_word(c->t, py[pi + j]);
        k += rest;
    }
    return k;
}

void ana_py_merge(ana_trace *t)
{
    ana_stacks *s = &t->stacks;
    struct ana_py_ctx c = { t, 0, 0, NULL };
    if (!t->py.n)
        return;
    if (ana_py_range(t, "python.eval", &c.eval_lo, &c.eval_hi))
        c.interp = ana_trace_module_at(t, c.eval_lo);
    uint64_t *buf = NULL;
    size_t cap = 0;
    for (size_t i = 0; i < s->n_entries; i++) {
        struct ana_stack_entry *e = &s->entries[i];
        const uint64_t *in = s->frames + e->first;
        size_t np = 0;
        for (size_t j = 0; j < e->n; j++)
            np += ana_py_is_frame(in[j]);
        if (!np)
            continue;
        ANA_GROW(buf, cap, e->n);
        size_t k = ana_py_merge_one(&c, in, e->n, buf);
        /* never longer than before (native frames only go): rewritten in place */
        memcpy(s->frames + e->first, buf, k * sizeof(uint64_t));
        e->n = k;
        t->py.frames += np;
        t->py.stacks++;
    }
    free(buf);
}
