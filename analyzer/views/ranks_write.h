/* ranks_write.h — the job report (analyses/ranks.h) as text (ranks_text.c) and as JSON
 * (ranks_json.c; schema in docs/ranks.md), and the JSON as a value inside the job's HTML
 * page (html.c). Top rows of the ranked lists, 0 = all. Not thread-safe. */
#ifndef ANA_RANKS_WRITE_H
#define ANA_RANKS_WRITE_H

#include <stdio.h>

#include "analyses/ranks.h"
#include "model/json.h"

void ana_ranks_write_text(const ana_ranks *rs, size_t top, FILE *f);
void ana_ranks_write_json(const ana_ranks *rs, size_t top, FILE *f);
void ana_ranks_write_json_value(const ana_ranks *rs, size_t top, ana_json *j);

#endif
