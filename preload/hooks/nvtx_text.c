/* nvtx_text.c — what the NVTX entry points (nvtx.c, nvtx_mem.c) share: a message as
 * UTF-8 cut to ANA_NVTX_TEXT bytes, the registered strings, and the bracket and LABEL of
 * a recorded NVTX call (nvtx_int.h). Called by nvtx.c and nvtx_mem.c; calls the core (the
 * bracket, the rings). On the program's threads: no lock, no malloc. */
#include "nvtx_int.h"

#include <errno.h>
#include <string.h>

#define ANA_NVTX_STRINGS (1u << 20)

/* ---- texts ---- */

/* Bytes of s to keep: at most ANA_NVTX_TEXT, not splitting a UTF-8 sequence. */
static uint32_t cut(const char *s)
{
    size_t n = strnlen(s, ANA_NVTX_TEXT + 1);
    if (n > ANA_NVTX_TEXT) {
        n = ANA_NVTX_TEXT;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
    }
    return (uint32_t)n;
}

void ana_nvtx_text_ascii(ana_nvtx_text *t, const char *s)
{
    t->s = s ? s : "";
    t->len = s ? cut(s) : 0;
}

/* wchar_t (UTF-32 here) as UTF-8 in t->buf; invalid code points become U+FFFD. */
void ana_nvtx_text_wide(ana_nvtx_text *t, const wchar_t *w)
{
    uint32_t n = 0;
    for (; w && *w; w++) {
        uint32_t c = (uint32_t)*w;
        if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
            c = 0xFFFD;
        uint32_t k = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
        if (n + k > ANA_NVTX_TEXT)
            break;
        if (k == 1) {
            t->buf[n++] = (char)c;
            continue;
        }
        static const uint8_t lead[5] = { 0, 0, 0xC0, 0xE0, 0xF0 };
        for (uint32_t i = k - 1; i > 0; i--, c >>= 6)
            t->buf[n + i] = (char)(0x80 | (c & 0x3F));
        t->buf[n] = (char)(lead[k] | c);
        n += k;
    }
    t->buf[n] = 0;
    t->s = t->buf;
    t->len = n;
}

/* Registered strings: NUL-terminated copies in one arena; a handle is the copy's address.
 * Offset 0 holds "", the handle given when the arena is full. */
static char strings[ANA_NVTX_STRINGS];
static _Atomic size_t strings_used = 1;

nvtxStringHandle_t ana_nvtx_string_register(const ana_nvtx_text *t)
{
    size_t at = atomic_fetch_add_explicit(&strings_used, t->len + 1, memory_order_relaxed);
    if (at + t->len + 1 > sizeof(strings))
        return (nvtxStringHandle_t)(void *)strings;
    memcpy(strings + at, t->s, t->len);
    strings[at + t->len] = 0;
    return (nvtxStringHandle_t)(void *)(strings + at);
}

static void text_registered(ana_nvtx_text *t, nvtxStringHandle_t h)
{
    const char *p = (const char *)(void *)h;
    if (p >= strings && p < strings + sizeof(strings))
        ana_nvtx_text_ascii(t, p);
    else
        ana_nvtx_text_ascii(t, NULL); /* not a handle of ours: never read it */
}

void ana_nvtx_text_of(ana_nvtx_text *t, int32_t type, nvtxMessageValue_t v)
{
    switch (type) {
    case NVTX_MESSAGE_TYPE_ASCII: ana_nvtx_text_ascii(t, v.ascii); break;
    case NVTX_MESSAGE_TYPE_UNICODE: ana_nvtx_text_wide(t, v.unicode); break;
    case NVTX_MESSAGE_TYPE_REGISTERED: text_registered(t, v.registered); break;
    default: ana_nvtx_text_ascii(t, NULL); break;
    }
}

/* ---- records ---- */

/* Opens the bracket of a recorded call; 0 when nothing is to be recorded. */
int ana_nvtx_rec_begin(ana_call *c)
{
    if (!ana_enter_host(c)) /* NVTX needs no device: it never starts CUPTI */
        return 0;
    c->saved_errno = errno;
    return 1;
}

void ana_nvtx_rec_label(ana_call *c, uint64_t what, uint64_t domain, uint64_t id, uint64_t size,
                        const ana_nvtx_text *t)
{
    ana_record r = { .kind = ANA_K_LABEL, .time_ns = c->t0 };
    r.u.label = (ana_rec_label){ what, domain, id, size, { t ? t->s : "", t ? t->len : 0 } };
    ana_emit(c->t, &r);
}

void ana_nvtx_put_label(uint64_t what, uint64_t domain, uint64_t id, uint64_t size,
                        const ana_nvtx_text *t)
{
    ana_call c;
    if (!ana_nvtx_rec_begin(&c))
        return;
    ana_nvtx_rec_label(&c, what, domain, id, size, t);
    ana_leave(&c);
}
