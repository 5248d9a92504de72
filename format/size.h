/* size.h — parsing of byte sizes as users write them, shared by the analyzer's options
 * and the simulated device's ANATOMIST_SIM_MEMORY. Pure, no allocation. */
#ifndef ANA_SIZE_H
#define ANA_SIZE_H

#include <stdint.h>

/* "<number>[.<fraction>] [suffix]": K/M/G/T and KiB/MiB/GiB/TiB are binary, KB/MB/GB/TB
 * decimal, B or nothing means bytes; case-insensitive, surrounding blanks allowed. Zero
 * and overflow are rejected. Returns 0 and sets *out, or -1. */
int ana_parse_size(const char *text, uint64_t *out);

#endif
