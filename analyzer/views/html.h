/* html.h — the self-contained HTML pages (`anatomist html`, `anatomist diff --format html`,
 * `anatomist flame --format html`): one offline file each, with the viewer (viewer/: HTML,
 * CSS and JS embedded in the executable at build time) and the data embedded as JSON in
 * <script type="application/json" id="anatomist-data">. No CDN, no network.
 *
 * The report page's data: {"kind":"report","report":<the `report --json` document>,
 * "flames":{"gpu-time":<flame json>,"peak-memory":...},"timeline":{...}}.
 * The diff page's data: {"kind":"diff","diff":<the `diff --format json` document>,
 * "flames":{<metric>:<merged flame json>}}.
 * The flame page's data: {"kind":"flame","flame":<flame json>,"title":<the traced command
 * or null>,"trace":<its path or null>}, drawn by the report's flame component.
 * Every figure the page shows is an element with data-figure="<JSON pointer into the
 * report (or diff) document>" and data-value="<the raw value>", so a test can check each
 * against `report --json` (docs/html.md). Not thread-safe. */
#ifndef ANA_HTML_H
#define ANA_HTML_H

#include <stddef.h>
#include <stdio.h>

struct ana_report;
struct ana_diff;
struct ana_flame;
struct ana_ranks;

/* 0, or -1 when writing failed (errno set). */
int ana_html_write_report(const struct ana_report *r, FILE *out);
int ana_html_write_diff(const struct ana_diff *d, const struct ana_report *base,
                        const struct ana_report *head, FILE *out);
/* One flame graph (a merged one too: then coloured as on the diff page), full width.
 * title (the page's heading, e.g. the traced command) and trace (the trace's path) may be
 * NULL. */
int ana_html_write_flame(const struct ana_flame *f, const char *title, const char *trace,
                         FILE *out);

/* The bytes of viewer/NAME (page.html, viewer.css, common.js, ...) as embedded at build
 * time (cmake/embed.cmake; generated viewer_assets.c), NUL-terminated, size in *size; NULL
 * for a name not embedded. */
const char *ana_html_asset(const char *name, size_t *size);

/* The job page of many ranks (ranks.h, docs/ranks.md): data {"kind":"ranks","ranks":<the
 * `report --json` job document>}, drawn by viewer/ranks.js; top as --top. */
int ana_html_write_ranks(const struct ana_ranks *rs, size_t top, FILE *out);

#endif
