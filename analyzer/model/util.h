/* util.h — allocation that cannot fail silently, growable arrays, and human-readable
 * formatting of bytes and durations for the analyzer.
 *
 * The analyzer is a batch tool: running out of memory ends it with a message and exit
 * status 2 (ANA_EXIT_BAD) rather than a crash. Single-threaded; the one global state is
 * ana_text_names (below). */
#ifndef ANA_UTIL_H
#define ANA_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "size.h" /* ana_parse_size, shared with the simulated device */

/* Exit statuses of every subcommand (documented in `anatomist --help`). */
#define ANA_EXIT_OK 0
#define ANA_EXIT_FAIL 1 /* the profiled program failed, or a threshold was exceeded */
#define ANA_EXIT_BAD 2  /* usage error, unreadable or corrupt trace */

void *ana_xmalloc(size_t n);
void *ana_xcalloc(size_t n, size_t size);
void *ana_xrealloc(void *p, size_t n);
char *ana_xstrdup(const char *s);
char *ana_xstrndup(const char *s, size_t n);

/* The analyses of one report run on up to ANA_MODEL_SLOTS threads (analyses/report.c); each
 * thread has a slot, 0 on every thread until one is given, for the model's caches that
 * reading changes (the packed calls' decoded blocks, calls.h). Two threads never share a
 * slot. */
#define ANA_MODEL_SLOTS 4
extern _Thread_local unsigned ana_model_slot;

/* The bits set in x: the instruction where the build may use it, else a few shifts and
 * adds inline (__builtin_popcountll alone is a call into libgcc there). */
static inline unsigned ana_popcount64(uint64_t x)
{
#if defined(__POPCNT__)
    return (unsigned)__builtin_popcountll(x);
#else
    x -= (x >> 1) & 0x5555555555555555ull;
    x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
    return (unsigned)((x * 0x0101010101010101ull) >> 56);
#endif
}

/* Bit i of a byte array (ana_xcalloc(n / 8 + 1, 1) holds n). */
static inline int ana_bit_get(const uint8_t *b, size_t i)
{
    return b[i / 8] >> (i % 8) & 1;
}
static inline void ana_bit_set(uint8_t *b, size_t i)
{
    b[i / 8] |= (uint8_t)(1u << (i % 8));
}

/* Grows *arr (elements of elem bytes, capacity *cap) so that it holds at least need. */
void ana_grow(void **arr, size_t *cap, size_t need, size_t elem);
#define ANA_GROW(arr, cap, need) ana_grow((void **)&(arr), &(cap), (need), sizeof(*(arr)))
/* qsort for the analyzer's growable arrays, which are NULL while empty: qsort's array must
 * not be NULL even for zero elements (C11 7.22.5), so fewer than two are left alone. */
void ana_sort(void *base, size_t n, size_t elem, int (*cmp)(const void *, const void *));
/* The k-th smallest of v[0..n) (k < n), in place (v is reordered) and without memory:
 * a quickselect with three-way partitions (runs of equal values cost nothing). */
uint64_t ana_select_u64(uint64_t *v, size_t n, size_t k);
/* The lower middle of v[0..n) (reordered, as ana_select_u64): the analyses' median; 0 when
 * n is 0. */
static inline uint64_t ana_median_u64(uint64_t *v, size_t n)
{
    return n ? ana_select_u64(v, n, (n - 1) / 2) : 0;
}
/* As ana_sort, but equal elements keep their order whatever the input (a merge sort with a
 * copy of the array when the input is far from sorted). */
void ana_sort_stable(void *base, size_t n, size_t elem, int (*cmp)(const void *, const void *));

/* "1.50 GiB", "512 B": binary units, three significant digits. */
const char *ana_fmt_bytes(uint64_t bytes, char *buf, size_t cap); /* returns buf */
/* "1.234 s", "12.3 ms", "850 ns". */
void ana_fmt_ns(uint64_t ns, char *buf, size_t cap);

/* Parses a non-negative decimal integer that fits in max. Returns 0 or -1. */
int ana_parse_uint(const char *text, uint64_t max, uint64_t *out);
/* "250us" -> 250000 ns (units ns, us, ms, s; a unit is required). 0 or -1. */
int ana_parse_duration(const char *text, uint64_t *ns);

/* FNV-1a of n bytes, continuing from h (ANA_FNV1A_SEED to start). */
#define ANA_FNV1A_SEED 0xcbf29ce484222325ull
uint64_t ana_fnv1a(const void *p, size_t n, uint64_t h);

/* C++ demangling of an Itanium-ABI name; a malloc'd string, or NULL when s is not a
 * mangled name. */
char *ana_demangle(const char *s);

/* Length of the well-formed UTF-8 character at s (at most n bytes): 1 for ASCII, 2–4, or
 * 0 for a byte that does not start one (overlong forms, surrogates, above U+10FFFF). */
size_t ana_utf8_len(const unsigned char *s, size_t n);

/* Strings a traced program (or anyone who wrote the trace) chose — kernel, NVTX and
 * function names, paths, argv, file names of a job directory — reach text outputs that
 * people read in terminals and pagers (`report | less -R`) and that tools split into
 * lines. After ana_text_names(1), which a command calls before it loads anything when
 * what it prints is text for people, ana_name_dup returns such a string with every
 * control byte — C0 including tab and newline, DEL, and C1 (U+0080..U+009F in UTF-8) —
 * written as \xNN, so a name can neither drive a terminal nor forge a line. Outputs for
 * programs (JSON, HTML, SQLite, folded stacks, Perfetto) leave the switch off and keep the
 * exact bytes, escaped by their own writers. The one global switch of the analyzer: a
 * command writes one kind of output. */
void ana_text_names(int on);
char *ana_name_dup(const char *s, size_t n);
/* s with its control bytes escaped as above, into a malloc'd string. */
char *ana_text_escape(const char *s, size_t n);

#endif
