/* html.h — the self-contained HTML pages (`anatomist html`, `anatomist diff --format html`):
 * one offline file each, with the viewer (viewer/: HTML, CSS and JS embedded in the
 * executable at build time) and the data embedded as JSON in
 * <script type="application/json" id="anatomist-data">. No CDN, no network.
 *
 * The report page's data: {"kind":"report","report":<the `report --json` document>,
 * "flames":{"gpu-time":<flame json>,"peak-memory":...},"timeline":{...}}.
 * The diff page's data: {"kind":"diff","diff":<the `diff --format json` document>,
 * "flames":{<metric>:<merged flame json>}}.
 * Every figure the page shows is an element with data-figure="<JSON pointer into the
 * report (or diff) document>" and data-value="<the raw value>", so a test can check each
 * against `report --json` (docs/html.md). Not thread-safe. */
#ifndef ANA_HTML_H
#define ANA_HTML_H

#include <stddef.h>
#include <stdio.h>

struct ana_report;
struct ana_diff;

/* 0, or -1 when writing failed (errno set). */
int ana_html_write_report(const struct ana_report *r, FILE *out);
int ana_html_write_diff(const struct ana_diff *d, const struct ana_report *base,
                        const struct ana_report *head, FILE *out);

/* The bytes of viewer/NAME (page.html, viewer.css, common.js, ...) as embedded at build
 * time (cmake/embed.cmake; generated viewer_assets.c), NUL-terminated, size in *size; NULL
 * for a name not embedded. */
const char *ana_html_asset(const char *name, size_t *size);

#endif
