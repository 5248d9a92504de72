/* json.h — a small streaming JSON writer for the analyzer's machine-readable outputs.
 *
 * Tracks nesting so callers never place commas by hand. Strings are escaped and any
 * invalid UTF-8 byte (traces carry raw bytes from the profiled process) becomes U+FFFD,
 * so the output always parses. Output is indented by two spaces per level. One writer per
 * FILE; not thread-safe. */
#ifndef ANA_JSON_H
#define ANA_JSON_H

#include <stdint.h>
#include <stdio.h>

#define ANA_JSON_MAX_DEPTH 32

typedef struct ana_json {
    FILE *f;
    int depth;
    int after_key;
    uint8_t has_items[ANA_JSON_MAX_DEPTH];
    int inline_depth; /* set after init, 0 = off: what is nested deeper than this many
                       * levels stays on one line (one event a line for large outputs) */
} ana_json;

void ana_json_init(ana_json *j, FILE *f);
void ana_json_obj_begin(ana_json *j);
void ana_json_obj_end(ana_json *j);
void ana_json_arr_begin(ana_json *j);
void ana_json_arr_end(ana_json *j);
void ana_json_key(ana_json *j, const char *key);
void ana_json_str(ana_json *j, const char *s); /* NULL writes null */
void ana_json_strn(ana_json *j, const char *s, size_t n);
void ana_json_u64(ana_json *j, uint64_t v);
void ana_json_i64(ana_json *j, int64_t v);
void ana_json_dbl(ana_json *j, double v); /* non-finite writes null */
/* v / 10^decimals written exactly ("1234.567" for 1234567, 3): ns as µs, without the
 * rounding of a double (decimals at most 9). */
void ana_json_fixed(ana_json *j, uint64_t v, int decimals);
void ana_json_bool(ana_json *j, int v);
void ana_json_null(ana_json *j);
/* Ends the document with a newline. */
void ana_json_finish(ana_json *j);

/* Shorthands for "key": value members. */
void ana_json_kstr(ana_json *j, const char *key, const char *s);
void ana_json_ku64(ana_json *j, const char *key, uint64_t v);
void ana_json_ki64(ana_json *j, const char *key, int64_t v);
void ana_json_kdbl(ana_json *j, const char *key, double v);
/* v, or null when v < 0 ("not known" in the analyses' convention). */
void ana_json_kdbl_known(ana_json *j, const char *key, double v);

#endif
