/* json.c — see json.h.
 * Part of model/ (README.md): any layer may call it; it calls only model/ and format/.
 * Writes with the unlocked stdio calls: a document is written by one thread (the
 * analyzer's reading threads never write), and the lock per character was a sixth of the
 * writing's instructions. */
#define _GNU_SOURCE /* fputc_unlocked, fputs_unlocked, fwrite_unlocked */
#include "model/json.h"

#include "model/util.h"

#include <math.h>
#include <string.h>

void ana_json_init(ana_json *j, FILE *f)
{
    memset(j, 0, sizeof(*j));
    j->f = f;
}

static void ana_json_indent(ana_json *j)
{
    if (j->inline_depth && j->depth > j->inline_depth)
        return;
    fputc_unlocked('\n', j->f);
    for (int i = 0; i < j->depth; i++)
        fputs_unlocked("  ", j->f);
}

/* Called before every value: separators and indentation, unless a key was just written. */
static void ana_json_pre(ana_json *j)
{
    if (j->after_key) {
        j->after_key = 0;
        return;
    }
    if (j->depth == 0)
        return;
    if (j->has_items[j->depth])
        fputc_unlocked(',', j->f);
    j->has_items[j->depth] = 1;
    ana_json_indent(j);
}

static void ana_json_open(ana_json *j, char c)
{
    ana_json_pre(j);
    fputc_unlocked(c, j->f);
    if (j->depth + 1 < ANA_JSON_MAX_DEPTH)
        j->depth++;
    j->has_items[j->depth] = 0;
}

static void ana_json_close(ana_json *j, char c)
{
    int had = j->has_items[j->depth];
    int inlined = j->inline_depth && j->depth > j->inline_depth; /* its items were inline */
    if (j->depth > 0)
        j->depth--;
    if (had && !inlined)
        ana_json_indent(j);
    fputc_unlocked(c, j->f);
}

void ana_json_obj_begin(ana_json *j) { ana_json_open(j, '{'); }
void ana_json_obj_end(ana_json *j) { ana_json_close(j, '}'); }
void ana_json_arr_begin(ana_json *j) { ana_json_open(j, '['); }
void ana_json_arr_end(ana_json *j) { ana_json_close(j, ']'); }

static void ana_json_escaped(FILE *f, const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    fputc_unlocked('"', f);
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        if (c == '"' || c == '\\') {
            fputc_unlocked('\\', f);
            fputc_unlocked((int)c, f);
            i++;
        } else if (c < 0x20) {
            fprintf(f, c == '\n' ? "\\n" : c == '\t' ? "\\t" : "\\u%04x", c);
            i++;
        } else {
            size_t len = ana_utf8_len(s + i, n - i);
            if (len == 0) {
                fputs_unlocked("\\ufffd", f);
                i++;
            } else {
                fwrite_unlocked(s + i, 1, len, f);
                i += len;
            }
        }
    }
    fputc_unlocked('"', f);
}

void ana_json_key(ana_json *j, const char *key)
{
    ana_json_pre(j);
    ana_json_escaped(j->f, key, strlen(key));
    fputs_unlocked(": ", j->f);
    j->after_key = 1;
}

void ana_json_strn(ana_json *j, const char *s, size_t n)
{
    ana_json_pre(j);
    if (!s)
        fputs_unlocked("null", j->f);
    else
        ana_json_escaped(j->f, s, n);
}

void ana_json_str(ana_json *j, const char *s) { ana_json_strn(j, s, s ? strlen(s) : 0); }

void ana_json_u64(ana_json *j, uint64_t v)
{
    ana_json_pre(j);
    fprintf(j->f, "%llu", (unsigned long long)v);
}

void ana_json_i64(ana_json *j, int64_t v)
{
    ana_json_pre(j);
    fprintf(j->f, "%lld", (long long)v);
}

void ana_json_dbl(ana_json *j, double v)
{
    ana_json_pre(j);
    if (isfinite(v))
        fprintf(j->f, "%.6g", v);
    else
        fputs_unlocked("null", j->f);
}

void ana_json_fixed(ana_json *j, uint64_t v, int decimals)
{
    uint64_t scale = 1;
    decimals = decimals < 0 ? 0 : decimals > 9 ? 9 : decimals;
    for (int i = 0; i < decimals; i++)
        scale *= 10;
    ana_json_pre(j);
    if (decimals == 0)
        fprintf(j->f, "%llu", (unsigned long long)v);
    else
        fprintf(j->f, "%llu.%0*llu", (unsigned long long)(v / scale), decimals,
                (unsigned long long)(v % scale));
}

void ana_json_bool(ana_json *j, int v)
{
    ana_json_pre(j);
    fputs_unlocked(v ? "true" : "false", j->f);
}

void ana_json_null(ana_json *j)
{
    ana_json_pre(j);
    fputs_unlocked("null", j->f);
}

void ana_json_finish(ana_json *j) { fputc_unlocked('\n', j->f); }

void ana_json_kstr(ana_json *j, const char *key, const char *s)
{
    ana_json_key(j, key);
    ana_json_str(j, s);
}

void ana_json_ku64(ana_json *j, const char *key, uint64_t v)
{
    ana_json_key(j, key);
    ana_json_u64(j, v);
}

void ana_json_ki64(ana_json *j, const char *key, int64_t v)
{
    ana_json_key(j, key);
    ana_json_i64(j, v);
}

void ana_json_kdbl(ana_json *j, const char *key, double v)
{
    ana_json_key(j, key);
    ana_json_dbl(j, v);
}

void ana_json_kdbl_known(ana_json *j, const char *key, double v)
{
    ana_json_key(j, key);
    if (v >= 0)
        ana_json_dbl(j, v);
    else
        ana_json_null(j);
}
