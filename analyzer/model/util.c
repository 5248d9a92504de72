/* util.c — see util.h.
 * Part of model/ (README.md): any layer may call it; it calls only model/ and format/. */
#include "model/util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* From the C++ runtime (libstdc++ / libc++abi); declared here to keep the analyzer C. */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

static void ana_oom(void)
{
    fputs("anatomist: out of memory\n", stderr);
    exit(ANA_EXIT_BAD);
}

void *ana_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        ana_oom();
    return p;
}

void *ana_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        ana_oom();
    return p;
}

void *ana_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        ana_oom();
    return q;
}

char *ana_xstrdup(const char *s) { return ana_xstrndup(s ? s : "", s ? strlen(s) : 0); }

char *ana_xstrndup(const char *s, size_t n)
{
    char *d = ana_xmalloc(n + 1);
    if (n)
        memcpy(d, s, n);
    d[n] = 0;
    return d;
}

void ana_grow(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return;
    size_t ncap = *cap ? *cap : 16;
    while (ncap < need) {
        if (ncap > ((size_t)-1) / 2 / elem)
            ana_oom();
        ncap *= 2;
    }
    *arr = ana_xrealloc(*arr, ncap * elem);
    *cap = ncap;
}

/* Insertion sort while it stays cheap: most arrays of a trace are in order or nearly (records
 * come in time order per thread). 0 when it gave up after `budget` element moves, leaving a
 * permutation of the input for qsort to finish. Stable, as glibc's qsort is in practice. */
static int ana_sort_nearly(char *p, size_t n, size_t elem, int (*cmp)(const void *, const void *),
                           size_t budget)
{
    char tmp[256];
    if (elem > sizeof(tmp))
        return 0;
    for (size_t i = 1; i < n; i++) {
        if (cmp(p + (i - 1) * elem, p + i * elem) <= 0)
            continue;
        size_t j = i - 1;
        while (j > 0 && cmp(p + (j - 1) * elem, p + i * elem) > 0)
            j--;
        if (i - j > budget)
            return 0;
        budget -= i - j;
        memcpy(tmp, p + i * elem, elem);
        memmove(p + (j + 1) * elem, p + j * elem, (i - j) * elem);
        memcpy(p + j * elem, tmp, elem);
    }
    return 1;
}

void ana_sort(void *base, size_t n, size_t elem, int (*cmp)(const void *, const void *))
{
    if (n > 1 && !ana_sort_nearly(base, n, elem, cmp, n / 4 + 64))
        qsort(base, n, elem, cmp);
}

uint64_t ana_select_u64(uint64_t *v, size_t n, size_t k)
{
    size_t lo = 0, hi = n; /* k lies in [lo, hi) */
    while (hi - lo > 1) {
        uint64_t a = v[lo], b = v[lo + (hi - lo) / 2], c = v[hi - 1];
        uint64_t p = a < b ? (b < c ? b : a < c ? c : a) : (a < c ? a : b < c ? c : b);
        /* [lo, lt) < p, [lt, i) == p, [gt, hi) > p */
        size_t lt = lo, i = lo, gt = hi;
        while (i < gt) {
            uint64_t x = v[i];
            if (x < p)
                v[i++] = v[lt], v[lt++] = x;
            else if (x > p)
                v[i] = v[--gt], v[gt] = x;
            else
                i++;
        }
        if (k < lt)
            hi = lt;
        else if (k >= gt)
            lo = gt;
        else
            return p;
    }
    return v[k];
}

/* Merges the sorted runs [a, m) and [m, b) of src into dst, the left run first on ties. */
static void ana_sort_merge(const char *src, char *dst, size_t a, size_t m, size_t b, size_t elem,
                           int (*cmp)(const void *, const void *))
{
    size_t i = a, j = m, o = a;
    while (i < m && j < b) {
        if (cmp(src + j * elem, src + i * elem) < 0)
            memcpy(dst + o++ * elem, src + j++ * elem, elem);
        else
            memcpy(dst + o++ * elem, src + i++ * elem, elem);
    }
    memcpy(dst + o * elem, src + i * elem, (m - i) * elem);
    o += m - i;
    memcpy(dst + o * elem, src + j * elem, (b - j) * elem);
}

void ana_sort_stable(void *base, size_t n, size_t elem, int (*cmp)(const void *, const void *))
{
    if (n < 2 || ana_sort_nearly(base, n, elem, cmp, n / 4 + 64))
        return;
    /* bottom-up merge sort: runs of 1, 2, 4, ... ping-ponged between base and a copy */
    char *a = base, *b = ana_xmalloc(n * elem), *buf = b;
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t m = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            ana_sort_merge(a, b, lo, m, hi, elem, cmp);
        }
        char *x = a;
        a = b, b = x;
    }
    if (a != (char *)base)
        memcpy(base, a, n * elem);
    free(buf);
}

const char *ana_fmt_bytes(uint64_t bytes, char *buf, size_t cap)
{
    static const char *units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
    if (bytes < 1024) {
        snprintf(buf, cap, "%llu B", (unsigned long long)bytes);
        return buf;
    }
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 6) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, cap, v >= 100 ? "%.0f %s" : v >= 10 ? "%.1f %s" : "%.2f %s", v, units[u]);
    return buf;
}

void ana_fmt_ns(uint64_t ns, char *buf, size_t cap)
{
    if (ns >= 1000000000ull)
        snprintf(buf, cap, "%.3f s", (double)ns / 1e9);
    else if (ns >= 1000000ull)
        snprintf(buf, cap, "%.3f ms", (double)ns / 1e6);
    else if (ns >= 1000ull)
        snprintf(buf, cap, "%.3f us", (double)ns / 1e3);
    else
        snprintf(buf, cap, "%llu ns", (unsigned long long)ns);
}


int ana_parse_uint(const char *text, uint64_t max, uint64_t *out)
{
    if (!text || !isdigit((unsigned char)*text))
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || *end || v > max)
        return -1;
    *out = v;
    return 0;
}

char *ana_demangle(const char *s)
{
    if (!s || strncmp(s, "_Z", 2) != 0)
        return NULL;
    int status = 0;
    char *d = __cxa_demangle(s, NULL, NULL, &status);
    if (status != 0) {
        free(d);
        return NULL;
    }
    return d;
}

uint64_t ana_fnv1a(const void *p, size_t n, uint64_t h)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* "250us" -> 250000; a unit is required so that a bare number is not misread. */
int ana_parse_duration(const char *text, uint64_t *ns)
{
    static const struct { const char *unit; uint64_t mul; } units[] = {
        { "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", 1000000000 },
    };
    size_t digits = strspn(text, "0123456789");
    char num[24];
    uint64_t v;
    if (digits == 0 || digits >= sizeof(num))
        return -1;
    memcpy(num, text, digits);
    num[digits] = 0;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
        if (strcmp(text + digits, units[i].unit) == 0 &&
            ana_parse_uint(num, UINT64_MAX / units[i].mul, &v) == 0) {
            *ns = v * units[i].mul;
            return 0;
        }
    return -1;
}

size_t ana_utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned min;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef)
        len = 3, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4)
        len = 4, min = 0x10000;
    else
        return 0;
    if (len > n)
        return 0;
    unsigned cp = c & (0x3f >> (len - 1));
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

_Thread_local unsigned ana_model_slot; /* util.h */

static int ana_text_on; /* util.h: ana_text_names */

void ana_text_names(int on) { ana_text_on = on; }

char *ana_text_escape(const char *s, size_t n)
{
    char *out = ana_xmalloc(n * 4 + 1), *o = out; /* a byte becomes at most 4 */
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n; i++) {
        if (p[i] == 0xc2 && i + 1 < n && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f) {
            o += sprintf(o, "\\xc2\\x%02x", p[i + 1]);
            i++;
        } else if (p[i] < 0x20 || p[i] == 0x7f) {
            o += sprintf(o, "\\x%02x", p[i]);
        } else {
            *o++ = (char)p[i];
        }
    }
    *o = 0;
    return out;
}

char *ana_name_dup(const char *s, size_t n)
{
    return ana_text_on ? ana_text_escape(s, n) : ana_xstrndup(s, n);
}
