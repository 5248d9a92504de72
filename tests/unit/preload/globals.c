/* The globals lifecycle.c owns in the real preload, for unit tests of the core parts. */
#include <stdarg.h>
#include "preload.h"

ana_config ana_cfg = { .stacks = 1, .stack_depth = 64, .flush_ms = 200, .buffer_kb = 64, .zstd_level = 1 };
_Atomic int ana_active = 1;
uintptr_t ana_self_lo, ana_self_hi;

void ana_warn(const char *fmt, ...) { (void)fmt; }
void ana_disable(const char *fmt, ...) { (void)fmt; }
void ana_collector_kick(void) {}
