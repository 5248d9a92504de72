/* stage.c — see stage.h. Part of model/: calls nothing. */
#include "model/stage.h"

#include <stddef.h>

static ana_stage_fn stage_fn;
static void *stage_ctx;

void ana_stage_set(ana_stage_fn fn, void *ctx)
{
    stage_fn = fn;
    stage_ctx = ctx;
}

void ana_stage(const char *path, const char *what, int i, int n)
{
    if (stage_fn)
        stage_fn(stage_ctx, path, what, i, n);
}
