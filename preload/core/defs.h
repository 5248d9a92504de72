/* defs.h — the attributes every file of the preload uses (visibility, branch hints). */
#ifndef ANA_DEFS_H
#define ANA_DEFS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define ANA_EXPORT __attribute__((visibility("default")))
#define ANA_HIDDEN __attribute__((visibility("hidden")))
#define ANA_LIKELY(x) __builtin_expect(!!(x), 1)
#define ANA_UNLIKELY(x) __builtin_expect(!!(x), 0)

#endif
