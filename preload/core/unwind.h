/* unwind.h — the stack walkers behind ana_stack_capture (unwind.c).
 *
 * Three ways to walk (ANATOMIST_UNWIND, docs/configuration.md):
 *   dwarf  libunwind's unw_backtrace at every capture (the reference);
 *   auto   unw_backtrace on a miss; a stack that comes back at the same stack position is
 *          walked once more with libunwind frame by frame, noting every stack word the
 *          walk depended on, into a per-thread cache; a later capture there re-reads those
 *          words and, when all are unchanged, reuses the stack id without unwinding or
 *          interning (the walk is a function of those words);
 *   fp     the frame-pointer chain, checked link by link, with the same cache.
 * Every word the walkers read lies between the capture's frame and the top of the
 * thread's stack (found once per thread), so no read can fault. A capture on a stack we
 * have no bounds for (sigaltstack, coroutine stacks) takes the dwarf path.
 * Thread-safety: per-thread state only (initial-exec TLS). The cache takes no lock and
 * calls no malloc (mmap, open and read only); a signal handler's capture that interrupts
 * one using the cache walks uncached. libunwind's own walks are what they always were. */
#ifndef ANA_UNWIND_H
#define ANA_UNWIND_H

#include <stdint.h>

enum ana_unwind_mode { ANA_UNWIND_AUTO = 0, ANA_UNWIND_FP = 1, ANA_UNWIND_DWARF = 2 };

/* Loads libunwind (RTLD_LOCAL, so that its own exported backtrace() never replaces
 * glibc's for the traced program), the stack tables (ana_stacks_init) and the Python frame
 * reader (ana_py_init); 0, or -1 saying once why stacks are off. The constructor's. */
int ana_unwind_start(void);
/* The caller's frames, innermost first, without the preload's and libunwind's, at most
 * max: libunwind's unw_backtrace. Returns the count. */
int ana_unwind_backtrace(uint64_t *ips, int max);
/* 1 when ip lies in the preload or in libunwind (frames a stack never shows). */
int ana_unwind_skippable(uintptr_t ip);
/* After fork, in the child: forget the cached stacks. */
void ana_unwind_atfork_child(void);

/* 1 when pc lies in libunwind's code (once loaded). */
int ana_unwind_owns(uintptr_t pc);

#endif
