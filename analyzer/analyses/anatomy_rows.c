/* anatomy_rows.c — see anatomy.h: the steps' rows, in blocks while they are added to,
 * then packed. Part of analyses/: called by anatomy.c and the readers of the rows; calls
 * model/ and format/varint.h only. */
#include "analyses/anatomy.h"

#include <stdlib.h>
#include <string.h>

#include "format/varint.h"
#include "model/util.h"

void ana_anat_rows_init(ana_anat_rows *r, size_t n)
{
    memset(r, 0, sizeof(*r));
    r->n = n;
    size_t blocks = (n + ANA_ROWS_BLOCK - 1) / ANA_ROWS_BLOCK;
    r->blk = ana_xcalloc(blocks + 1, sizeof(*r->blk));
    for (size_t b = 0; b < blocks; b++) {
        size_t rows = n - b * ANA_ROWS_BLOCK < ANA_ROWS_BLOCK ? n - b * ANA_ROWS_BLOCK : ANA_ROWS_BLOCK;
        r->blk[b] = ana_xcalloc(rows, sizeof(ana_anat_step));
    }
}

static void ana_rows_put(ana_anat_rows *r, uint64_t v)
{
    ANA_GROW(r->bytes, r->cap_bytes, r->n_bytes + 10);
    r->n_bytes += ana_varint_put(r->bytes + r->n_bytes, v);
}

void ana_anat_rows_pack(ana_anat_rows *r, const ana_steps *s)
{
    r->at = ana_xcalloc(r->n / ANA_ROWS_EVERY + 1, sizeof(*r->at));
    for (size_t i = 0; i < r->n; i++) {
        const ana_anat_step *x = ana_anat_rows_mut(r, i);
        if (i % ANA_ROWS_EVERY == 0)
            r->at[i / ANA_ROWS_EVERY] = r->n_bytes;
        ana_rows_put(r, x->acts);
        if (x->acts) {
            ana_rows_put(r, ana_zigzag((int64_t)(x->gpu_first_ns - s->steps[i].start_ns)));
            ana_rows_put(r, x->gpu_last_ns - x->gpu_first_ns);
        }
        ana_rows_put(r, x->busy_ns);
        ana_rows_put(r, x->flops);
        for (int c = 0; c < ANA_CLASS_COUNT; c++)
            ana_rows_put(r, x->class_ns[c]);
        for (int p = 0; p < ANA_PHASE_COUNT; p++)
            ana_rows_put(r, x->phase_ns[p]);
        if (i % ANA_ROWS_BLOCK == ANA_ROWS_BLOCK - 1 || i + 1 == r->n) {
            free(r->blk[i / ANA_ROWS_BLOCK]); /* a block at a time: the full rows go */
            r->blk[i / ANA_ROWS_BLOCK] = NULL;
        }
    }
    free(r->blk);
    r->blk = NULL;
    r->bytes = ana_xrealloc(r->bytes, r->n_bytes + 1);
    r->cap_bytes = r->n_bytes + 1;
}

void ana_anat_rows_free(ana_anat_rows *r)
{
    size_t blocks = (r->n + ANA_ROWS_BLOCK - 1) / ANA_ROWS_BLOCK;
    for (size_t b = 0; r->blk && b < blocks; b++)
        free(r->blk[b]);
    free(r->blk);
    free(r->bytes);
    free(r->at);
    memset(r, 0, sizeof(*r));
}

void ana_anat_rowcur_init(ana_anat_rowcur *c, const ana_anat_rows *r, const ana_steps *s)
{
    memset(c, 0, sizeof(*c));
    c->r = r;
    c->s = s;
}

/* A varint ana_rows_put wrote at *p (advanced). */
static uint64_t ana_rows_get(const ana_anat_rows *r, const uint8_t **p)
{
    uint64_t v = 0;
    *p += ana_varint_get(*p, (size_t)(r->bytes + r->n_bytes - *p), &v);
    return v;
}

/* The next row at c->off into c->row. */
static void ana_rowcur_decode(ana_anat_rowcur *c)
{
    const uint8_t *p = c->r->bytes + c->off;
    ana_anat_step *x = &c->row;
    const ana_anat_rows *r = c->r;
    memset(x, 0, sizeof(*x));
    x->acts = ana_rows_get(r, &p);
    if (x->acts) {
        x->gpu_first_ns = c->s->steps[c->next].start_ns + (uint64_t)ana_unzigzag(ana_rows_get(r, &p));
        x->gpu_last_ns = x->gpu_first_ns + ana_rows_get(r, &p);
    }
    x->busy_ns = ana_rows_get(r, &p);
    x->flops = ana_rows_get(r, &p);
    for (int k = 0; k < ANA_CLASS_COUNT; k++)
        x->class_ns[k] = ana_rows_get(r, &p);
    for (int k = 0; k < ANA_PHASE_COUNT; k++)
        x->phase_ns[k] = ana_rows_get(r, &p);
    c->off = (size_t)(p - c->r->bytes);
    c->next++;
}

const ana_anat_step *ana_anat_row(ana_anat_rowcur *c, size_t i)
{
    if (c->r->blk) /* not packed yet */
        return ana_anat_rows_mut((ana_anat_rows *)c->r, i);
    if (i + 1 == c->next)
        return &c->row;
    if (i < c->next || i - c->next >= ANA_ROWS_EVERY) {
        c->next = i / ANA_ROWS_EVERY * ANA_ROWS_EVERY;
        c->off = (size_t)c->r->at[i / ANA_ROWS_EVERY];
    }
    while (c->next <= i)
        ana_rowcur_decode(c);
    return &c->row;
}
