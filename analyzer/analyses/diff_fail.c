/* diff_fail.c — --fail-on (diff.h; grammar in docs/diff.md): parsing a threshold spec
 * before any trace is read, and checking it against a diff, for CI's exit status. A
 * figure one side does not know (no steps, base 0 for a relative change) is never
 * "crossed": the check says so instead.
 * Part of analyses/: called by cli/, views/, import/ and other analyses; calls analyses/
 * and model/ only, never a view. */
#include "analyses/diff_int.h"

#include "model/util.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static int ana_fail_err(char *err, size_t cap, const char *part, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int ana_fail_err(char *err, size_t cap, const char *part, const char *fmt, ...)
{
    va_list ap;
    int n = snprintf(err, cap, "'%s': ", part);
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < cap)
        vsnprintf(err + n, cap - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

/* What a unit suffix multiplies by, for a metric in `unit`; 0 when it is not one of its
 * units. No suffix: the metric's own unit. */
static double ana_fail_scale(int unit, const char *suffix)
{
    char buf[24];
    uint64_t v;
    if (!*suffix)
        return 1;
    if (strlen(suffix) > 8)
        return 0;
    snprintf(buf, sizeof(buf), "1%s", suffix);
    if (unit == ANA_DU_BYTES && ana_parse_size(buf, &v) == 0)
        return (double)v;
    if (unit == ANA_DU_NS && ana_parse_duration(buf, &v) == 0)
        return (double)v;
    return 0;
}

static const char ana_fail_keys[] =
    "step-time, peak-memory, gpu-busy, gpu-idle, gpu-time, memory-at-end, kernel-launches, "
    "mfu, time:CLASS, memory:CATEGORY";

/* VALUE of a part: "+5%", "-2ms", "+100MiB", "70GiB", "0.3". */
static int ana_fail_value(ana_diff_limit *l, int unit, const char *v, char *err, size_t cap)
{
    static const char *const unit_hint[] = { "a duration like +2ms", "a size like +100MiB",
                                              "a plain number", "a plain number" };
    double sign = 1, num;
    int has_sign = *v == '+' || *v == '-';
    char *end;
    if (has_sign)
        sign = *v++ == '-' ? -1 : 1;
    if (!isdigit((unsigned char)*v) && *v != '.')
        return ana_fail_err(err, cap, l->spec, "the value must be a number: a change like "
                            "+5%% or +100MiB, or a level like 70GiB");
    num = strtod(v, &end);
    while (isspace((unsigned char)*end))
        end++;
    if (strcmp(end, "%") == 0) {
        l->cmp = ANA_DIFF_RATIO;
        l->limit = sign * num / 100.0;
        return 0;
    }
    double scale = ana_fail_scale(unit, end);
    if (scale == 0)
        return ana_fail_err(err, cap, l->spec, "'%s' is not a unit of %s (in %s): write %s, "
                            "or a percentage", end, l->key, ana_diff_unit_name(unit),
                            unit_hint[unit]);
    l->cmp = has_sign ? ANA_DIFF_DELTA : ANA_DIFF_HEAD;
    l->limit = sign * num * scale;
    return 0;
}

/* One "KEY OP VALUE" of p[0..len). */
static int ana_fail_part(const char *p, size_t len, ana_diff_limit *l, char *err, size_t cap)
{
    while (len && isspace((unsigned char)p[0]))
        p++, len--;
    while (len && isspace((unsigned char)p[len - 1]))
        len--;
    memset(l, 0, sizeof(*l));
    if (!len)
        return ana_fail_err(err, cap, "", "empty threshold (two commas, or one at an end?)");
    if (len >= sizeof(l->spec))
        return ana_fail_err(err, cap, "", "a threshold longer than %zu bytes",
                            sizeof(l->spec) - 1);
    memcpy(l->spec, p, len);
    size_t k = strcspn(l->spec, "<>"), klen = k;
    if (!l->spec[k])
        return ana_fail_err(err, cap, l->spec, "no comparison: write KEY>VALUE, e.g. "
                            "peak-memory>+5%%");
    while (klen && isspace((unsigned char)l->spec[klen - 1]))
        klen--;
    if (!klen || klen >= sizeof(l->key))
        return ana_fail_err(err, cap, l->spec, "%s metric (metrics: %s)",
                            klen ? "unknown" : "no", ana_fail_keys);
    memcpy(l->key, l->spec, klen);
    int unit = ana_diff_key_unit(l->key);
    if (unit < 0)
        return ana_fail_err(err, cap, l->spec, "unknown metric '%s' (metrics: %s)", l->key,
                            ana_fail_keys);
    l->op[0] = l->spec[k++];
    if (l->spec[k] == '=')
        l->op[1] = l->spec[k++];
    while (isspace((unsigned char)l->spec[k]))
        k++;
    return ana_fail_value(l, unit, l->spec + k, err, cap);
}

int ana_diff_limits_parse(const char *spec, ana_diff_limit *out, size_t max, size_t *n,
                          char *err, size_t cap)
{
    *n = 0;
    for (const char *p = spec;; p++) {
        size_t len = strcspn(p, ",");
        if (*n == max)
            return ana_fail_err(err, cap, p, "more than %zu thresholds", max);
        if (ana_fail_part(p, len, &out[*n], err, cap) != 0)
            return -1;
        (*n)++;
        p += len;
        if (!*p)
            return 0;
    }
}

static int ana_fail_crossed(const char *op, double v, double limit)
{
    if (op[0] == '>')
        return op[1] ? v >= limit : v > limit;
    return op[1] ? v <= limit : v < limit;
}

static void ana_fail_why(const ana_diff_row *row, char *buf, size_t cap)
{
    const char *who = !row->has_base ? (!row->has_head ? "either run" : "the base run")
                                     : !row->has_head ? "the head run" : NULL;
    if (who)
        snprintf(buf, cap, "%s is not known in %s%s", row->label, who,
                 strcmp(row->key, "step-time") == 0 ? " (no steps found)" : "");
    else
        snprintf(buf, cap, "%s is 0 in the base run: no relative change", row->label);
}

static void ana_fail_say(FILE *msg, const ana_diff_row *row, const ana_diff_result *r)
{
    char b[48], h[48], c[48];
    if (!r->known) {
        fprintf(msg, "anatomist: threshold not evaluated: %s: %s\n", r->lim.spec, r->note);
        return;
    }
    if (!r->crossed)
        return;
    ana_diff_fmt(row->unit, row->base, b, sizeof(b));
    ana_diff_fmt(row->unit, row->head, h, sizeof(h));
    ana_diff_fmt_change(row, c, sizeof(c));
    fprintf(msg, "anatomist: threshold crossed: %s (%s %s -> %s, %s)\n", r->lim.spec,
            row->label, b, h, c);
}

size_t ana_diff_check(ana_diff *d, const ana_diff_limit *lim, size_t n, FILE *msg)
{
    size_t crossed = 0;
    free(d->results);
    d->results = ana_xcalloc(n + 1, sizeof(*d->results));
    d->n_results = n;
    for (size_t i = 0; i < n; i++) {
        ana_diff_result *r = &d->results[i];
        const ana_diff_row *row = ana_diff_find(d, lim[i].key);
        r->lim = lim[i];
        if (!row) { /* ana_diff_limits_parse accepts only known keys */
            snprintf(r->note, sizeof(r->note), "unknown metric");
            continue;
        }
        if (lim[i].cmp == ANA_DIFF_RATIO)
            r->known = (uint8_t)ana_diff_ratio(row, &r->value);
        else if (lim[i].cmp == ANA_DIFF_DELTA)
            r->known = (uint8_t)ana_diff_delta(row, &r->value);
        else
            r->known = row->has_head, r->value = row->head;
        if (!r->known)
            ana_fail_why(row, r->note, sizeof(r->note));
        else
            r->crossed = (uint8_t)ana_fail_crossed(lim[i].op, r->value, lim[i].limit);
        crossed += r->crossed;
        if (msg)
            ana_fail_say(msg, row, r);
    }
    return crossed;
}
