/* classify_int.h — private to classify.c and classify_rules.c: the shape of a rule of the
 * kernel classifier's table, and the table itself (classify_rules.c). How rows match is
 * described at the top of classify.c; what each family means in docs/classification.md. */
#ifndef ANA_CLASSIFY_INT_H
#define ANA_CLASSIFY_INT_H

#include <stddef.h>
#include <stdint.h>

#include "analyses/classify.h"

/* How a row's pattern matches the reduced name (see the header comment of classify.c). */
enum ana_pat_kind {
    ANA_PAT_PREFIX,   /* fn starts with pat */
    ANA_PAT_CONTAINS, /* pat occurs in fn */
    ANA_PAT_BASE,     /* pat occurs in fn's own name (after its last "::") */
    ANA_PAT_TOKEN,    /* pat is a sequence of whole tokens of fn ('*', '&': see above) */
    ANA_PAT_OWN_TOKEN, /* the same, of fn's own name (after its last "::") */
    ANA_PAT_ANY,      /* always */
};

typedef struct ana_rule {
    uint8_t kind;       /* enum ana_pat_kind, on fn */
    const char *pat;    /* lowercase */
    const char *within; /* lowercase text that must occur in args, or NULL */
    uint8_t cls;
    uint8_t hints;
    const char *label;
} ana_rule;

/* The ordered table (classify_rules.c); its last row matches every name. */
extern const ana_rule ana_rules[];
extern const size_t ana_n_rules;

#endif
