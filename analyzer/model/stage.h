/* stage.h — the analyzer's long stages once a trace is read (putting what was spilled in
 * order, each analysis of a report), for a progress line: a command that shows one
 * (cli/progress.c, when standard error is a terminal) sets a function; each stage says
 * when it begins, and the work the stages were part of says when it is over (what NULL).
 * With no function set, nothing is said and nothing is done. Part of model/: any layer
 * may call it. Not thread-safe: stages are said one at a time (a report's analyses, which
 * run on several threads, say theirs under the report's lock). */
#ifndef ANA_STAGE_H
#define ANA_STAGE_H

/* what: the stage beginning, on the trace at path (NULL: the work is over); i of n when
 * the work counts its stages (n 0 when it does not). */
typedef void (*ana_stage_fn)(void *ctx, const char *path, const char *what, int i, int n);

void ana_stage_set(ana_stage_fn fn, void *ctx);
void ana_stage(const char *path, const char *what, int i, int n);

#endif
