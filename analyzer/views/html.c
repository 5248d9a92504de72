/* html.c — the self-contained HTML pages (html.h): viewer/page.html with viewer.css and
 * the page's scripts inlined, and the data as JSON in
 * <script type="application/json" id="anatomist-data"> (docs/html.md).
 * Part of views/: called by the commands (cli/) and by other views; calls analyses/ and
 * model/, never cli/. */
#define _GNU_SOURCE /* open_memstream */
#include "views/html.h"

#include <stdlib.h>
#include <string.h>

#include "analyses/diff.h"
#include "views/diff_write.h"
#include "views/flame.h"
#include "analyses/ranks.h"
#include "views/ranks_write.h"
#include "views/report_write.h"
#include "model/util.h"

/* Points of the memory timeline: enough for a 2000-pixel-wide chart, and the peak is
 * always one of them (ana_memcat_timeline). */
#define ANA_HTML_TIMELINE_POINTS 2000

/* The scripts of each page, in order: common.js defines what the others use, the last
 * one draws the page. */
static const char *const ana_html_report_js[] = { "common.js", "flame.js", "report.js", NULL };
static const char *const ana_html_diff_js[] = { "common.js", "flame.js", "diff.js", NULL };
static const char *const ana_html_flame_js[] = { "common.js", "flame.js", "flamepage.js", NULL };
static const char *const ana_html_ranks_js[] = { "common.js", "ranks.js", NULL };

/* Writes JSON text without the writer's indentation (whitespace outside strings), with
 * "</" as "<\/" and "<!" as "\u003c!": in a <script> element "</" would end it and "<!--"
 * changes how the rest is parsed (HTML's script data states). '<' only occurs inside
 * strings, where both forms read the same to JSON.parse. */
static void ana_html_put_json(const char *s, size_t n, FILE *out)
{
    int in_str = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!in_str) {
            if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
                continue;
            in_str = c == '"';
            fputc(c, out);
            continue;
        }
        if (c == '\\' && i + 1 < n) {
            fputc(c, out);
            fputc(s[++i], out);
            continue;
        }
        if (c == '"')
            in_str = 0;
        if (c == '<' && i + 1 < n && s[i + 1] == '/')
            fputs("<\\", out);
        else if (c == '<' && i + 1 < n && s[i + 1] == '!')
            fputs("\\u003c", out);
        else
            fputc(c, out);
    }
}

static void ana_html_put_asset(const char *name, FILE *out)
{
    size_t n;
    const char *s = ana_html_asset(name, &n);
    if (s)
        fwrite(s, 1, n, out);
}

/* page.html with its markers replaced: @@CSS@@, @@JS@@ (the scripts), @@DATA@@. */
static int ana_html_page(FILE *out, const char *const *js, const char *data, size_t n)
{
    size_t len;
    const char *p = ana_html_asset("page.html", &len), *m;
    while (p && (m = strstr(p, "@@")) != NULL) {
        fwrite(p, 1, (size_t)(m - p), out);
        if (strncmp(m, "@@CSS@@", 7) == 0) {
            ana_html_put_asset("viewer.css", out);
            p = m + 7;
        } else if (strncmp(m, "@@JS@@", 6) == 0) {
            for (size_t i = 0; js[i]; i++)
                ana_html_put_asset(js[i], out);
            p = m + 6;
        } else if (strncmp(m, "@@DATA@@", 8) == 0) {
            ana_html_put_json(data, n, out);
            p = m + 8;
        } else {
            fputs("@@", out);
            p = m + 2;
        }
    }
    if (p)
        fputs(p, out);
    return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}

static void ana_html_flame(ana_json *j, const ana_report *r, int metric)
{
    ana_flame f;
    ana_flame_build(r, metric, &f);
    ana_json_key(j, ana_flame_metric_name(metric));
    ana_flame_write_json(&f, j);
    ana_flame_free(&f);
}

static void ana_html_report_flames(ana_json *j, const ana_report *r)
{
    ana_json_key(j, "flames");
    ana_json_obj_begin(j);
    ana_html_flame(j, r, ANA_FLAME_GPU_TIME);
    ana_html_flame(j, r, ANA_FLAME_PEAK_MEMORY);
    if (r->mem.live_end_bytes > 0)
        ana_html_flame(j, r, ANA_FLAME_LEAKED_MEMORY);
    ana_html_flame(j, r, ANA_FLAME_ALLOC_BYTES);
    ana_json_obj_end(j);
}

/* Device memory by category over time; times since the trace's first record. */
static void ana_html_timeline(ana_json *j, const ana_report *r)
{
    const ana_trace *t = r->t;
    ana_mem_point *pts = NULL;
    size_t n = ana_memcat_timeline(&r->mcat, &r->mem, t, ANA_HTML_TIMELINE_POINTS, &pts);
    ana_json_key(j, "timeline");
    ana_json_obj_begin(j);
    ana_json_ku64(j, "first_ns", t->has_time ? t->first_ns : 0);
    ana_json_key(j, "categories");
    ana_json_arr_begin(j);
    for (int c = 0; c < ANA_MCAT_COUNT; c++)
        ana_json_str(j, ana_mcat_name(c));
    ana_json_arr_end(j);
    ana_json_key(j, "points");
    ana_json_arr_begin(j);
    for (size_t i = 0; i < n; i++) {
        ana_json_arr_begin(j);
        ana_json_u64(j, ana_trace_rel_ns(t, pts[i].time_ns));
        ana_json_u64(j, pts[i].total);
        for (int c = 0; c < ANA_MCAT_COUNT; c++)
            ana_json_u64(j, pts[i].by[c]);
        ana_json_arr_end(j);
    }
    ana_json_arr_end(j);
    ana_json_ku64(j, "peak_ns", ana_trace_rel_ns(t, r->mem.peak_time_ns));
    ana_json_ku64(j, "peak_bytes", r->mem.peak_bytes);
    ana_json_key(j, "oom_ns");
    if (r->oom.present)
        ana_json_u64(j, ana_trace_rel_ns(t, r->oom.f->ev.time_ns));
    else
        ana_json_null(j);
    ana_json_obj_end(j);
    free(pts);
}

/* An open_memstream buffer; its ana_json writer. */
typedef struct ana_html_buf {
    char *text;
    size_t len;
    FILE *f;
    ana_json j;
} ana_html_buf;

static int ana_html_buf_open(ana_html_buf *b, const char *kind)
{
    b->text = NULL;
    b->len = 0;
    b->f = open_memstream(&b->text, &b->len);
    if (!b->f)
        return -1;
    ana_json_init(&b->j, b->f);
    ana_json_obj_begin(&b->j);
    ana_json_kstr(&b->j, "kind", kind);
    return 0;
}

/* Closes the document and writes the page around it; frees the buffer. */
static int ana_html_buf_page(ana_html_buf *b, const char *const *js, FILE *out)
{
    ana_json_obj_end(&b->j);
    ana_json_finish(&b->j);
    int rc = fclose(b->f) == 0 ? ana_html_page(out, js, b->text, b->len) : -1;
    free(b->text);
    return rc;
}

int ana_html_write_report(const ana_report *r, FILE *out)
{
    ana_html_buf b;
    if (ana_html_buf_open(&b, "report") != 0)
        return -1;
    ana_json_key(&b.j, "report");
    ana_report_write_json_value(r, &b.j);
    ana_html_report_flames(&b.j, r);
    ana_html_timeline(&b.j, r);
    return ana_html_buf_page(&b, ana_html_report_js, out);
}

static void ana_html_diff_flame(ana_json *j, const ana_report *base, const ana_report *head,
                                int metric)
{
    ana_flame fm;
    ana_flame_build_diff(base, head, metric, &fm);
    ana_json_key(j, ana_flame_metric_name(metric));
    ana_flame_write_json(&fm, j);
    ana_flame_free(&fm);
}

int ana_html_write_diff(const ana_diff *d, const ana_report *base, const ana_report *head,
                        FILE *out)
{
    ana_html_buf b;
    if (ana_html_buf_open(&b, "diff") != 0)
        return -1;
    ana_json_key(&b.j, "diff");
    ana_diff_write_json_value(d, &b.j);
    ana_json_key(&b.j, "flames");
    ana_json_obj_begin(&b.j);
    ana_html_diff_flame(&b.j, base, head, ANA_FLAME_GPU_TIME);
    ana_html_diff_flame(&b.j, base, head, ANA_FLAME_PEAK_MEMORY);
    ana_json_obj_end(&b.j);
    return ana_html_buf_page(&b, ana_html_diff_js, out);
}

int ana_html_write_flame(const ana_flame *f, const char *title, const char *trace, FILE *out)
{
    ana_html_buf b;
    if (ana_html_buf_open(&b, "flame") != 0)
        return -1;
    ana_json_key(&b.j, "flame");
    ana_flame_write_json(f, &b.j);
    ana_json_kstr(&b.j, "title", title);
    ana_json_kstr(&b.j, "trace", trace);
    return ana_html_buf_page(&b, ana_html_flame_js, out);
}

int ana_html_write_ranks(const struct ana_ranks *rs, size_t top, FILE *out)
{
    ana_html_buf b;
    if (ana_html_buf_open(&b, "ranks") != 0)
        return -1;
    ana_json_key(&b.j, "ranks");
    ana_ranks_write_json_value(rs, top, &b.j);
    return ana_html_buf_page(&b, ana_html_ranks_js, out);
}
