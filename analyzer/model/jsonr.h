/* jsonr.h — a streaming pull reader of JSON (RFC 8259) over a byte source: a plain file,
 * a gzip file (detected by its magic, read through zlib) or a memory buffer.
 *
 * The caller pulls one token at a time; no document tree is built. Memory is bounded: an
 * input buffer of fixed size, a string buffer of at most ANA_JSONR_MAX_STRING bytes and a
 * container stack of at most ANA_JSONR_MAX_DEPTH levels. No recursion. Strings (keys and
 * values) are returned decoded (escapes, \uXXXX, surrogate pairs as UTF-8; a lone
 * surrogate becomes U+FFFD; bytes above 0x7f pass through as they are); numbers are
 * returned as their text, validated against the JSON grammar, so that the caller converts
 * them exactly (ana_jsonr_decimal). Text returned is valid until the next call.
 *
 * Errors: ANA_JSON_ERROR with ana_jsonr_error() saying what and ana_jsonr_offset() where
 * (the byte offset in the decompressed text). ana_jsonr_truncated() tells an input that
 * ends inside the document (a file cut short, a gzip stream cut) from one that is
 * malformed. After an error every call returns ANA_JSON_ERROR again.
 *
 * One reader is used by one thread; readers are independent. */
#ifndef ANA_JSONR_H
#define ANA_JSONR_H

#include <stddef.h>
#include <stdint.h>

#define ANA_JSONR_MAX_DEPTH 256
#define ANA_JSONR_MAX_STRING (8u << 20)
#define ANA_JSONR_MAX_NUMBER 128

enum ana_json_tok {
    ANA_JSON_ERROR = -1,
    ANA_JSON_END = 0,  /* the document ended (only whitespace follows) */
    ANA_JSON_OBJ_BEGIN,
    ANA_JSON_OBJ_END,
    ANA_JSON_ARR_BEGIN,
    ANA_JSON_ARR_END,
    ANA_JSON_KEY,      /* an object member's name: ana_jsonr_text */
    ANA_JSON_STRING,   /* ana_jsonr_text */
    ANA_JSON_NUMBER,   /* ana_jsonr_text: the number as written */
    ANA_JSON_TRUE,
    ANA_JSON_FALSE,
    ANA_JSON_NULL,
};

typedef struct ana_jsonr ana_jsonr;

/* Opens a file (gzip when it starts with 1f 8b). Returns NULL with msg filled when it
 * cannot be opened. */
ana_jsonr *ana_jsonr_open(const char *path, char *msg, size_t cap);
/* Reads len bytes at buf (not copied: they must outlive the reader). */
ana_jsonr *ana_jsonr_open_mem(const void *buf, size_t len);
void ana_jsonr_close(ana_jsonr *r);

/* The next token (enum ana_json_tok). */
int ana_jsonr_next(ana_jsonr *r);
/* After ana_jsonr_next returned tok: when tok opened an object or array, consumes the rest
 * of it up to its matching end (strings are scanned, not stored); otherwise nothing.
 * Returns 0, or -1 on error. */
int ana_jsonr_skip(ana_jsonr *r, int tok);

/* Text of the last KEY, STRING or NUMBER token, NUL-terminated (a string may also hold NUL
 * bytes: len tells). */
const char *ana_jsonr_text(const ana_jsonr *r, size_t *len);
/* Containers open around the last token. */
int ana_jsonr_depth(const ana_jsonr *r);
/* Offset of the last token's first byte, or of the error. */
uint64_t ana_jsonr_offset(const ana_jsonr *r);
/* Bytes of text read from the source so far (decompressed). */
uint64_t ana_jsonr_bytes_read(const ana_jsonr *r);
/* 1 when the source is gzip. */
int ana_jsonr_is_gzip(const ana_jsonr *r);
/* After ANA_JSON_ERROR: what went wrong, and 1 when the input merely ended early. */
const char *ana_jsonr_error(const ana_jsonr *r);
int ana_jsonr_truncated(const ana_jsonr *r);

/* Converts a JSON number's text to an integer scaled by 10^scale (scale 3: µs text to
 * ns), rounding half away from zero. Returns 0, or -1 when the text is not a number or
 * the result does not fit in int64_t. */
int ana_jsonr_decimal(const char *text, size_t len, int scale, int64_t *out);

#endif
