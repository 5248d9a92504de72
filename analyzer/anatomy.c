/* anatomy.c — placeholder; the time anatomy is being written. */
#include "anatomy.h"

#include <string.h>

void ana_anatomy_build(const ana_trace *t, const ana_gpu_result *g, const ana_libcalls *lc,
                       ana_anatomy *out)
{
    (void)g;
    (void)lc;
    memset(out, 0, sizeof(*out));
    ana_steps_find(t, &out->steps);
}

void ana_anatomy_free(ana_anatomy *a)
{
    ana_steps_free(&a->steps);
}

int ana_anatomy_ctx(const ana_trace *t, const ana_gpu_act *act)
{
    (void)t;
    return act->type == ANA_GPU_KERNEL ? ANA_CTX_NONE : ANA_CTX_MEMORY;
}
