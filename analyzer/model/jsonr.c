/* jsonr.c — see jsonr.h.
 *
 * A table-free state machine: `state` says what may come next (a value, a member name, a
 * comma or a closing bracket), `stack` which containers are open. Input comes through one
 * fixed buffer refilled from the source; tokens never need to be contiguous in it
 * (strings are decoded into their own buffer, numbers and literals are copied byte by
 * byte), so a refill may happen anywhere.
 * Part of model/ (README.md): any layer may call it; it calls only model/ and format/. */
#include "model/jsonr.h"

#include "safe_open.h"
#include "model/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define ANA_JSONR_BUF (256u << 10)

enum { ST_TOP, ST_TOP_DONE, ST_OBJ_FIRST, ST_OBJ_NEXT, ST_OBJ_COLON, ST_ARR_FIRST, ST_ARR_NEXT };
enum { C_OBJ = 1, C_ARR = 2 };

struct ana_jsonr {
    gzFile gz;                   /* NULL: a memory source */
    int gzip;
    const uint8_t *p, *end;      /* unread bytes of the current block */
    const uint8_t *block;        /* start of the current block */
    uint8_t *buf;                /* the file's block buffer */
    uint64_t base;               /* offset of block[0] in the text */
    int eof, cut;                /* source exhausted; gzip stream ended before its end */
    char *str;
    size_t str_len, str_cap;
    char num[ANA_JSONR_MAX_NUMBER + 1];
    size_t num_len;
    const char *text;            /* text of the last KEY/STRING/NUMBER */
    size_t text_len;
    uint8_t stack[ANA_JSONR_MAX_DEPTH];
    int depth, state, nostore;
    uint64_t tok_off;
    int failed, truncated;
    char err[200];
};

static uint64_t jr_pos(const ana_jsonr *r) { return r->base + (uint64_t)(r->p - r->block); }

static int jr_fail(ana_jsonr *r, int truncated, const char *fmt, ...)
{
    va_list ap;
    if (r->failed)
        return ANA_JSON_ERROR;
    r->failed = 1;
    r->truncated = truncated;
    r->tok_off = jr_pos(r);
    va_start(ap, fmt);
    vsnprintf(r->err, sizeof(r->err), fmt, ap);
    va_end(ap);
    return ANA_JSON_ERROR;
}

/* The input ended where more was needed. */
static int jr_fail_end(ana_jsonr *r, const char *where)
{
    if (r->failed)
        return ANA_JSON_ERROR;
    return jr_fail(r, 1, "the text ends %s%s", where,
                   r->cut ? " (the gzip stream is cut short)" : "");
}

/* Makes bytes available: 1, or 0 at the end of the source, or -1 after a source error. */
static int jr_fill(ana_jsonr *r)
{
    if (r->p < r->end)
        return 1;
    if (r->failed)
        return -1;
    if (!r->gz || r->eof)
        return 0;
    r->base += (uint64_t)(r->end - r->block);
    r->p = r->end = r->block = r->buf;
    int n = gzread(r->gz, r->buf, ANA_JSONR_BUF);
    if (n > 0) {
        r->end = r->buf + n;
        return 1;
    }
    int code = Z_OK;
    const char *msg = gzerror(r->gz, &code);
    r->eof = 1;
    if (code == Z_BUF_ERROR) { /* "unexpected end of file": the stream was cut */
        r->cut = 1;
        return 0;
    }
    if (n < 0 || code != Z_OK) {
        jr_fail(r, 0, "cannot read the %s: %s", r->gzip ? "gzip stream" : "file",
                code == Z_ERRNO ? strerror(errno) : msg);
        return -1;
    }
    return 0;
}

/* Next byte without consuming it, or -1 at the end (or after an error). */
static inline int jr_peek(ana_jsonr *r)
{
    if (r->p < r->end || jr_fill(r) > 0)
        return *r->p;
    return -1;
}

static inline int jr_getc(ana_jsonr *r)
{
    int c = jr_peek(r);
    if (c >= 0)
        r->p++;
    return c;
}

static int jr_skip_ws(ana_jsonr *r)
{
    for (;;) {
        while (r->p < r->end) {
            uint8_t c = *r->p;
            if (c != ' ' && c != '\n' && c != '\r' && c != '\t')
                return c;
            r->p++;
        }
        if (jr_fill(r) <= 0)
            return -1;
    }
}

static int jr_str_put(ana_jsonr *r, const void *s, size_t n)
{
    if (r->nostore || !n)
        return 0;
    if (n > ANA_JSONR_MAX_STRING - r->str_len)
        return jr_fail(r, 0, "a string longer than %u bytes", ANA_JSONR_MAX_STRING);
    if (r->str_len + n + 1 > r->str_cap) {
        size_t cap = r->str_cap ? r->str_cap : 256;
        while (cap < r->str_len + n + 1)
            cap *= 2;
        r->str = ana_xrealloc(r->str, cap);
        r->str_cap = cap;
    }
    memcpy(r->str + r->str_len, s, n);
    r->str_len += n;
    return 0;
}

static int jr_put_utf8(ana_jsonr *r, uint32_t cp)
{
    uint8_t b[4];
    size_t n;
    if (cp < 0x80) {
        b[0] = (uint8_t)cp, n = 1;
    } else if (cp < 0x800) {
        b[0] = (uint8_t)(0xc0 | cp >> 6), b[1] = (uint8_t)(0x80 | (cp & 0x3f)), n = 2;
    } else if (cp < 0x10000) {
        b[0] = (uint8_t)(0xe0 | cp >> 12), b[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
        b[2] = (uint8_t)(0x80 | (cp & 0x3f)), n = 3;
    } else {
        b[0] = (uint8_t)(0xf0 | cp >> 18), b[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3f));
        b[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3f)), b[3] = (uint8_t)(0x80 | (cp & 0x3f)), n = 4;
    }
    return jr_str_put(r, b, n);
}

/* The 4 hex digits after "\u": the code unit, or -1. */
static int32_t jr_hex4(ana_jsonr *r)
{
    int32_t v = 0;
    for (int i = 0; i < 4; i++) {
        int c = jr_getc(r);
        if (c < 0)
            return jr_fail_end(r, "inside a \\u escape"), -1;
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= c - '0';
        else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
            v |= (c | 0x20) - 'a' + 10;
        else
            return jr_fail(r, 0, "a \\u escape needs 4 hex digits"), -1;
    }
    return v;
}

/* One escape; esc is the byte after the backslash. A high surrogate looks for its low
 * half in the escape that follows; a surrogate without its other half becomes U+FFFD. */
static int jr_escape(ana_jsonr *r, int esc)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    int32_t high = -1; /* a high surrogate waiting for its low half */
    for (;;) {
        if (esc < 0)
            return jr_fail_end(r, "inside a string escape");
        if (high >= 0 && esc != 'u' && jr_put_utf8(r, 0xfffd) < 0)
            return ANA_JSON_ERROR;
        if (esc != 'u') {
            const char *k = esc ? strchr(from, esc) : NULL;
            if (!k)
                return jr_fail(r, 0, "invalid escape '\\%c' in a string", esc);
            return jr_str_put(r, &to[k - from], 1);
        }
        int32_t u = jr_hex4(r);
        if (u < 0)
            return ANA_JSON_ERROR;
        if (high >= 0) {
            if (u >= 0xdc00 && u <= 0xdfff)
                return jr_put_utf8(r, 0x10000 + ((uint32_t)(high - 0xd800) << 10) +
                                          (uint32_t)(u - 0xdc00));
            if (jr_put_utf8(r, 0xfffd) < 0)
                return ANA_JSON_ERROR;
            high = -1;
        }
        if (u >= 0xd800 && u <= 0xdbff) {
            if (jr_peek(r) != '\\')
                return jr_put_utf8(r, 0xfffd);
            r->p++;
            high = u;
            esc = jr_getc(r);
            continue;
        }
        return jr_put_utf8(r, u >= 0xdc00 && u <= 0xdfff ? 0xfffd : (uint32_t)u);
    }
}

/* A string after its opening quote: decoded into r->str (unless nostore). */
static int jr_string(ana_jsonr *r)
{
    r->str_len = 0;
    for (;;) {
        const uint8_t *s = r->p, *e = r->end;
        while (s < e && *s != '"' && *s != '\\' && *s >= 0x20)
            s++;
        if (jr_str_put(r, r->p, (size_t)(s - r->p)) < 0)
            return ANA_JSON_ERROR;
        r->p = s;
        if (s == e) {
            if (jr_fill(r) <= 0)
                return jr_fail_end(r, "inside a string");
            continue;
        }
        if (*s == '"') {
            r->p++;
            break;
        }
        if (*s < 0x20)
            return jr_fail(r, 0, "control character 0x%02x in a string", *s);
        r->p++;
        if (jr_escape(r, jr_getc(r)) < 0)
            return ANA_JSON_ERROR;
    }
    if (!r->nostore) {
        if (!r->str)
            r->str = ana_xmalloc(r->str_cap = 256);
        r->str[r->str_len] = 0;
    }
    r->text = r->nostore ? "" : r->str;
    r->text_len = r->nostore ? 0 : r->str_len;
    return 0;
}

static int jr_digits(const char *s, size_t *i, size_t n)
{
    size_t start = *i;
    while (*i < n && s[*i] >= '0' && s[*i] <= '9')
        (*i)++;
    return *i > start;
}

/* 1 when s[0..n) is a JSON number. */
static int jr_is_number(const char *s, size_t n)
{
    size_t i = 0;
    if (i < n && s[i] == '-')
        i++;
    if (i < n && s[i] == '0')
        i++;
    else if (!jr_digits(s, &i, n))
        return 0;
    if (i < n && s[i] == '.' && (++i, !jr_digits(s, &i, n)))
        return 0;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        if (!jr_digits(s, &i, n))
            return 0;
    }
    return i == n;
}

static int jr_number(ana_jsonr *r)
{
    r->num_len = 0;
    for (;;) {
        int c = jr_peek(r);
        if (c < 0 || !((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' ||
                       c == 'E'))
            break;
        if (r->num_len == ANA_JSONR_MAX_NUMBER)
            return jr_fail(r, 0, "a number longer than %d characters", ANA_JSONR_MAX_NUMBER);
        r->num[r->num_len++] = (char)c;
        r->p++;
    }
    if (r->failed)
        return ANA_JSON_ERROR;
    r->num[r->num_len] = 0;
    if (!jr_is_number(r->num, r->num_len)) {
        jr_fail(r, 0, "invalid number '%s'", r->num);
        r->tok_off = jr_pos(r) - r->num_len;
        return ANA_JSON_ERROR;
    }
    r->text = r->num;
    r->text_len = r->num_len;
    return ANA_JSON_NUMBER;
}

static int jr_literal(ana_jsonr *r, const char *word, int tok)
{
    for (const char *w = word; *w; w++) {
        int c = jr_getc(r);
        if (c < 0)
            return jr_fail_end(r, "inside a literal");
        if (c != *w) {
            r->p--;
            return jr_fail(r, 0, "invalid literal (expected '%s')", word);
        }
    }
    return tok;
}

static void jr_after_value(ana_jsonr *r)
{
    if (!r->depth)
        r->state = ST_TOP_DONE;
    else
        r->state = r->stack[r->depth - 1] == C_OBJ ? ST_OBJ_NEXT : ST_ARR_NEXT;
}

static int jr_open(ana_jsonr *r, int kind)
{
    if (r->depth >= ANA_JSONR_MAX_DEPTH)
        return jr_fail(r, 0, "nesting deeper than %d levels", ANA_JSONR_MAX_DEPTH);
    r->p++;
    r->stack[r->depth++] = (uint8_t)kind;
    r->state = kind == C_OBJ ? ST_OBJ_FIRST : ST_ARR_FIRST;
    return kind == C_OBJ ? ANA_JSON_OBJ_BEGIN : ANA_JSON_ARR_BEGIN;
}

static int jr_close(ana_jsonr *r)
{
    int kind = r->stack[--r->depth];
    r->p++;
    jr_after_value(r);
    return kind == C_OBJ ? ANA_JSON_OBJ_END : ANA_JSON_ARR_END;
}

/* A value starting with c (not consumed). */
static int jr_value(ana_jsonr *r, int c)
{
    int tok;
    r->tok_off = jr_pos(r);
    switch (c) {
    case '{': return jr_open(r, C_OBJ);
    case '[': return jr_open(r, C_ARR);
    case '"':
        r->p++;
        tok = jr_string(r) < 0 ? ANA_JSON_ERROR : ANA_JSON_STRING;
        break;
    case 't': tok = jr_literal(r, "true", ANA_JSON_TRUE); break;
    case 'f': tok = jr_literal(r, "false", ANA_JSON_FALSE); break;
    case 'n': tok = jr_literal(r, "null", ANA_JSON_NULL); break;
    default:
        if (c < 0)
            return jr_fail_end(r, "where a value was expected");
        if (c != '-' && (c < '0' || c > '9'))
            return jr_fail(r, 0, c >= 0x20 && c < 0x7f ? "unexpected character '%c'"
                                                       : "unexpected byte 0x%02x", c);
        tok = jr_number(r);
    }
    if (tok != ANA_JSON_ERROR)
        jr_after_value(r);
    return tok;
}

static int jr_key(ana_jsonr *r, int c)
{
    r->tok_off = jr_pos(r);
    if (c != '"')
        return c < 0 ? jr_fail_end(r, "inside an object")
                     : jr_fail(r, 0, "expected a member name (a string)");
    r->p++;
    if (jr_string(r) < 0)
        return ANA_JSON_ERROR;
    r->state = ST_OBJ_COLON;
    return ANA_JSON_KEY;
}

int ana_jsonr_next(ana_jsonr *r)
{
    if (r->failed)
        return ANA_JSON_ERROR;
    int c = jr_skip_ws(r);
    if (r->failed)
        return ANA_JSON_ERROR;
    r->tok_off = jr_pos(r);
    switch (r->state) {
    case ST_TOP:
        if (c < 0)
            return jr_fail(r, r->cut, r->cut ? "the gzip stream is cut before any text"
                                             : "the text is empty (no JSON value)");
        return jr_value(r, c);
    case ST_TOP_DONE:
        if (c < 0)
            return ANA_JSON_END;
        return jr_fail(r, 0, "text after the end of the JSON document");
    case ST_OBJ_FIRST:
        if (c == '}')
            return jr_close(r);
        return jr_key(r, c);
    case ST_OBJ_NEXT:
        if (c == '}')
            return jr_close(r);
        if (c != ',')
            return c < 0 ? jr_fail_end(r, "inside an object")
                         : jr_fail(r, 0, "expected ',' or '}' in an object");
        r->p++;
        return jr_key(r, jr_skip_ws(r));
    case ST_OBJ_COLON:
        if (c != ':')
            return c < 0 ? jr_fail_end(r, "inside an object")
                         : jr_fail(r, 0, "expected ':' after a member name");
        r->p++;
        return jr_value(r, jr_skip_ws(r));
    case ST_ARR_FIRST:
        if (c == ']')
            return jr_close(r);
        return jr_value(r, c);
    default: /* ST_ARR_NEXT */
        if (c == ']')
            return jr_close(r);
        if (c != ',')
            return c < 0 ? jr_fail_end(r, "inside an array")
                         : jr_fail(r, 0, "expected ',' or ']' in an array");
        r->p++;
        return jr_value(r, jr_skip_ws(r));
    }
}

int ana_jsonr_skip(ana_jsonr *r, int tok)
{
    if (tok != ANA_JSON_OBJ_BEGIN && tok != ANA_JSON_ARR_BEGIN)
        return tok == ANA_JSON_ERROR ? -1 : 0;
    int target = r->depth - 1, t;
    r->nostore = 1;
    do
        t = ana_jsonr_next(r);
    while (t != ANA_JSON_ERROR && !((t == ANA_JSON_OBJ_END || t == ANA_JSON_ARR_END) &&
                                    r->depth == target));
    r->nostore = 0;
    return t == ANA_JSON_ERROR ? -1 : 0;
}

static ana_jsonr *jr_new(void)
{
    ana_jsonr *r = ana_xcalloc(1, sizeof(*r));
    r->text = "";
    return r;
}

ana_jsonr *ana_jsonr_open(const char *path, char *msg, size_t cap)
{
    uint8_t magic[2] = { 0, 0 };
    /* Regular files only: a FIFO planted at the name would block gzopen for ever. The
     * one descriptor is read by zlib (gzdopen), so what was looked at is what is read. */
    int fd = ana_open_file(path, O_RDONLY, 0, NULL);
    if (fd < 0) {
        snprintf(msg, cap, "cannot open: %s", ana_open_strerror(errno));
        return NULL;
    }
    ssize_t n = pread(fd, magic, 2, 0);
    gzFile gz = gzdopen(fd, "rb");
    if (!gz) {
        close(fd);
        snprintf(msg, cap, "cannot open: out of memory");
        return NULL;
    }
    gzbuffer(gz, 128u << 10);
    ana_jsonr *r = jr_new();
    r->gz = gz;
    r->gzip = n == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    r->buf = ana_xmalloc(ANA_JSONR_BUF);
    r->p = r->end = r->block = r->buf;
    return r;
}

ana_jsonr *ana_jsonr_open_mem(const void *buf, size_t len)
{
    ana_jsonr *r = jr_new();
    r->block = r->p = buf;
    r->end = r->p + len;
    r->eof = 1;
    return r;
}

void ana_jsonr_close(ana_jsonr *r)
{
    if (!r)
        return;
    if (r->gz)
        gzclose(r->gz);
    free(r->buf);
    free(r->str);
    free(r);
}

const char *ana_jsonr_text(const ana_jsonr *r, size_t *len)
{
    if (len)
        *len = r->text_len;
    return r->text;
}

int ana_jsonr_depth(const ana_jsonr *r) { return r->depth; }
uint64_t ana_jsonr_offset(const ana_jsonr *r) { return r->tok_off; }
uint64_t ana_jsonr_bytes_read(const ana_jsonr *r) { return r->base + (uint64_t)(r->end - r->block); }
int ana_jsonr_is_gzip(const ana_jsonr *r) { return r->gzip; }
const char *ana_jsonr_error(const ana_jsonr *r) { return r->failed ? r->err : ""; }
int ana_jsonr_truncated(const ana_jsonr *r) { return r->failed && r->truncated; }

/* The k-th significant digit of a number whose integer digits are at s[ia..ia+ni) and
 * fraction digits at s[fa..). */
static int jr_dig(const char *s, size_t ia, size_t ni, size_t fa, size_t nd, int64_t k)
{
    if (k < 0 || (size_t)k >= nd)
        return 0;
    return (size_t)k < ni ? s[ia + (size_t)k] - '0' : s[fa + (size_t)k - ni] - '0';
}

int ana_jsonr_decimal(const char *s, size_t len, int scale, int64_t *out)
{
    size_t i = 0, ia, ni, fa = 0, nf = 0;
    int neg = 0;
    int64_t exp = 0;
    if (!jr_is_number(s, len))
        return -1;
    if (s[i] == '-')
        neg = 1, i++;
    ia = i;
    while (i < len && s[i] >= '0' && s[i] <= '9')
        i++;
    ni = i - ia;
    if (i < len && s[i] == '.') {
        fa = ++i;
        while (i < len && s[i] >= '0' && s[i] <= '9')
            i++;
        nf = i - fa;
    }
    if (i < len) { /* exponent */
        int eneg = s[++i] == '-';
        if (s[i] == '+' || s[i] == '-')
            i++;
        for (; i < len; i++)
            if (exp < 100000)
                exp = exp * 10 + (s[i] - '0');
        exp = eneg ? -exp : exp;
    }
    /* value = digits · 10^(exp - nf + scale); keep the digits before the new point */
    int64_t keep = (int64_t)ni + exp + scale;
    size_t nd = ni + nf;
    uint64_t mag = 0;
    for (int64_t k = 0; k < keep; k++) {
        int d = jr_dig(s, ia, ni, fa, nd, k);
        if (mag > (UINT64_MAX - (uint64_t)d) / 10)
            return -1;
        mag = mag * 10 + (uint64_t)d;
        if (!mag && k >= (int64_t)nd)
            break; /* only zeros left */
    }
    if (jr_dig(s, ia, ni, fa, nd, keep) >= 5) {
        if (mag == UINT64_MAX)
            return -1;
        mag++;
    }
    if (mag > (uint64_t)INT64_MAX + (uint64_t)neg)
        return -1;
    *out = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    return 0;
}
