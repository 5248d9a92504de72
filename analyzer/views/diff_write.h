/* diff_write.h — a diff of two runs (analyses/diff.h) or of two jobs
 * (analyses/ranks_diff.h) written for people and programs: markdown for a pull request
 * (diff_markdown.c, ranks_diff_write.c) and JSON (diff_json.c, ranks_diff_write.c;
 * schemas in docs/diff.md, docs/ranks.md). Not thread-safe. */
#ifndef ANA_DIFF_WRITE_H
#define ANA_DIFF_WRITE_H

#include <stdio.h>

#include "analyses/diff.h"
#include "analyses/ranks_diff.h"
#include "model/json.h"

/* The `diff --format json` document as a value (the HTML page embeds it). */
void ana_diff_write_json_value(const ana_diff *d, ana_json *j);
void ana_diff_write_json(const ana_diff *d, FILE *out);
/* A pull-request comment: tables and a one-line verdict, under 60 KB. */
void ana_diff_write_markdown(const ana_diff *d, FILE *out);

void ana_ranks_diff_write_markdown(const ana_ranks_diff *x, FILE *f);
/* Schema "anatomist.ranks-diff/1" (docs/ranks.md). */
void ana_ranks_diff_write_json(const ana_ranks_diff *x, FILE *f);

#endif
