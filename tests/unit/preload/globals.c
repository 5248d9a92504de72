/* What the unit tests of the core's static library (ana_preload_core) need from the parts
 * of the preload it leaves out (state.c's warnings and ana_active), and the configuration
 * the tests start from. */
#include <stdarg.h>
#include "preload.h"

_Atomic int ana_active = 1;

void ana_warn(const char *fmt, ...) { (void)fmt; }
void ana_disable(const char *fmt, ...) { (void)fmt; }

__attribute__((constructor)) static void test_config(void)
{
    ana_cfg = (ana_config){ .stacks = 1, .stack_depth = 64, .flush_ms = 200, .buffer_kb = 64, .zstd_level = 1 };
}
