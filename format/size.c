/* size.c — byte sizes written by people ("80GiB", "1.5 GB", "512M"); see size.h.
 * Called by the analyzer's options and the simulated device (library ana_common); calls
 * nothing. */
#include "size.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

/* "<number>[.<fraction>] [suffix]": K/M/G/T and KiB.. are binary, KB/MB/GB/TB decimal,
 * B or nothing means bytes. Case-insensitive. Zero and overflow are rejected. */
int ana_parse_size(const char *text, uint64_t *out)
{
    static const struct { const char *suffix; uint64_t mult; } units[] = {
        { "", 1 }, { "b", 1 },
        { "k", 1ull << 10 }, { "kib", 1ull << 10 }, { "kb", 1000ull },
        { "m", 1ull << 20 }, { "mib", 1ull << 20 }, { "mb", 1000000ull },
        { "g", 1ull << 30 }, { "gib", 1ull << 30 }, { "gb", 1000000000ull },
        { "t", 1ull << 40 }, { "tib", 1ull << 40 }, { "tb", 1000000000000ull },
    };
    if (!text)
        return -1;
    const char *p = text;
    while (isspace((unsigned char)*p))
        p++;
    if (!isdigit((unsigned char)*p))
        return -1;
    uint64_t whole = 0, frac_num = 0, frac_den = 1;
    for (; isdigit((unsigned char)*p); p++) {
        if (whole > (UINT64_MAX - 9) / 10)
            return -1;
        whole = whole * 10 + (uint64_t)(*p - '0');
    }
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            return -1;
        for (; isdigit((unsigned char)*p); p++) {
            if (frac_den < 1000000000ull) {
                frac_num = frac_num * 10 + (uint64_t)(*p - '0');
                frac_den *= 10;
            }
        }
    }
    while (isspace((unsigned char)*p))
        p++;
    size_t n = strlen(p);
    while (n > 0 && isspace((unsigned char)p[n - 1]))
        n--;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strlen(units[i].suffix) != n || strncasecmp(p, units[i].suffix, n) != 0)
            continue;
        uint64_t mult = units[i].mult;
        if (whole > UINT64_MAX / mult)
            return -1;
        uint64_t bytes = whole * mult + (uint64_t)((long double)frac_num * mult / frac_den);
        if (bytes < whole * mult || bytes == 0)
            return -1;
        *out = bytes;
        return 0;
    }
    return -1;
}
