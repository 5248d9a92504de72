/* diff_figures.c — a compared figure (diff_int.h): its delta and ratio, and its text by
 * unit ("12.3 MiB", "+1.234 ms", "+5.1%"), shared by the verdict (diff.c), --fail-on
 * (diff_fail.c), the job diff (ranks_diff.c) and the views (views/diff_*.c). Part of
 * analyses/; calls model/ only.
 * Part of analyses/: called by cli/, views/, import/ and other analyses; calls analyses/
 * and model/ only, never a view. */
#include "analyses/diff_int.h"

#include "model/util.h"

#include <stdio.h>

int ana_diff_delta(const ana_diff_row *r, double *delta)
{
    *delta = r->has_base && r->has_head ? r->head - r->base : 0;
    return r->has_base && r->has_head;
}

int ana_diff_ratio(const ana_diff_row *r, double *ratio)
{
    int ok = r->has_base && r->has_head && r->base != 0;
    *ratio = ok ? (r->head - r->base) / r->base : 0;
    return ok;
}

ana_diff_row ana_diff_item_row(const ana_diff_item *it, int unit)
{
    return (ana_diff_row){ it->name, it->name, unit, (double)it->base, (double)it->head, 1, 1 };
}

size_t ana_diff_shown(const ana_diff *d, size_t n) { return d->top && d->top < n ? d->top : n; }

const char *ana_diff_unit_name(int unit)
{
    static const char *const names[] = { "ns", "bytes", "count", "ratio" };
    return names[unit];
}

const char *ana_diff_item_status(const ana_diff_item *it)
{
    if (!it->in_base)
        return "new";
    if (!it->in_head)
        return "vanished";
    return it->base != it->head || it->base_count != it->head_count ? "changed" : "same";
}

void ana_diff_fmt(int unit, double v, char *buf, size_t cap)
{
    uint64_t u = v < 0 ? (uint64_t)-v : (uint64_t)v;
    const char *sign = v < 0 ? "-" : "";
    char tmp[48];
    if (unit == ANA_DU_RATIO) {
        snprintf(buf, cap, "%.2f%%", 100.0 * v);
        return;
    }
    if (unit == ANA_DU_BYTES)
        ana_fmt_bytes(u, tmp, sizeof(tmp));
    else if (unit == ANA_DU_NS)
        ana_fmt_ns(u, tmp, sizeof(tmp));
    else
        snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)u);
    snprintf(buf, cap, "%s%s", sign, tmp);
}

void ana_diff_fmt_delta(int unit, double d, char *buf, size_t cap)
{
    char tmp[48];
    if (unit == ANA_DU_RATIO) {
        snprintf(buf, cap, "%+.2f pt", 100.0 * d); /* percentage points */
        return;
    }
    ana_diff_fmt(unit, d, tmp, sizeof(tmp));
    snprintf(buf, cap, "%s%s", d > 0 ? "+" : "", tmp);
}

void ana_diff_fmt_change(const ana_diff_row *r, char *buf, size_t cap)
{
    double ratio;
    if (r->has_base && r->has_head && r->base == r->head)
        snprintf(buf, cap, "0.0%%");
    else if (ana_diff_ratio(r, &ratio))
        snprintf(buf, cap, "%+.1f%%", 100.0 * ratio);
    else if (r->has_base && r->has_head)
        snprintf(buf, cap, "new"); /* from 0 */
    else
        snprintf(buf, cap, "n/a");
}
