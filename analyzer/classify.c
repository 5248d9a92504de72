/* classify.c — placeholder until the rule table lands: every kernel is "other"; the phase
 * hints are a first version (substrings of the name). */
#include "classify.h"

#include <string.h>

static const char *const ana_class_names[ANA_CLASS_COUNT] = {
    "contraction", "normalization", "elementwise", "communication", "memory", "other",
};

static int ana_has_any(const char *name, const char *const *subs)
{
    for (; *subs; subs++)
        if (strstr(name, *subs))
            return 1;
    return 0;
}

ana_classification ana_classify(const char *name, int ctx)
{
    static const char *const fwd[] = { "forward", "_fwd", "fwd_", NULL };
    static const char *const bwd[] = { "backward", "Backward", "_bwd", "bwd_", "dgrad", "wgrad",
                                       NULL };
    static const char *const opt[] = { "adam", "Adam", "sgd", "SGD", "lamb", "Lamb",
                                       "multi_tensor_apply", NULL };
    ana_classification c = { ANA_CLASS_OTHER, 0, 0 };
    if (ctx == ANA_CTX_MEMORY)
        c.cls = ANA_CLASS_MEMORY;
    if (name) {
        if (ana_has_any(name, bwd))
            c.hints |= ANA_HINT_BACKWARD;
        else if (ana_has_any(name, fwd))
            c.hints |= ANA_HINT_FORWARD;
        if (ana_has_any(name, opt))
            c.hints |= ANA_HINT_OPTIMIZER;
    }
    return c;
}

const char *ana_class_name(int cls)
{
    return cls >= 0 && cls < ANA_CLASS_COUNT ? ana_class_names[cls] : NULL;
}

int ana_class_parse(const char *name)
{
    for (int i = 0; i < ANA_CLASS_COUNT; i++)
        if (strcmp(name, ana_class_names[i]) == 0)
            return i;
    return -1;
}

const char *ana_classify_rule_name(uint16_t rule)
{
    (void)rule;
    return "none";
}

const char *ana_ctx_name(int ctx)
{
    static const char *const n[ANA_CTX_COUNT] = { "none", "gemm", "conv", "attention",
                                                  "comm", "memory", "library" };
    return ctx >= 0 && ctx < ANA_CTX_COUNT ? n[ctx] : NULL;
}
