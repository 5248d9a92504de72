/* libctx.h — library calls (cuBLAS, cuBLASLt, NCCL): the bracket the library hooks
 * (preload/hooks/cublas.c, nccl.c) put around a library call, and the calling thread's
 * library context the record builders (calls.c) read. No CUDA types (libctx.c). */
#ifndef ANA_LIBCTX_H
#define ANA_LIBCTX_H

#include "defs.h"
#include "tbuf.h"

/* The calling thread's library context: the library and call id of the outermost library
 * call it is in (0, 0 outside), read by the record builders for `lib` and `call`. */
extern __thread uint32_t ana_tls_lib ANA_HIDDEN __attribute__((tls_model("initial-exec")));
extern __thread uint64_t ana_tls_libcall ANA_HIDDEN __attribute__((tls_model("initial-exec")));

typedef struct ana_libcall {
    ana_thread *t;
    uint64_t t0, dur, stack;
    uint64_t id;      /* the call id, when recorded */
    int outer;        /* the thread's outermost library call */
    int record;       /* to be recorded: ana_lib_emit must follow ana_lib_leave */
    int saved_errno;
} ana_libcall;

/* Before forwarding a library call of `lib` (enum ana_lib). Returns 1 when the call is to
 * be recorded: the outermost library call of the thread, with the session running (it
 * starts the session, as the first CUDA call does); the call then is the thread's library
 * context. ana_lib_leave must follow every ana_lib_enter, whatever it returned. */
int ana_lib_enter(ana_libcall *c, uint32_t lib);
/* After the real call returned: ends the timing and the context; when recording, captures
 * the stack and saves errno (the record is then built and given to ana_lib_emit). */
void ana_lib_leave(ana_libcall *c);
/* Appends rec (time = the call's start) and restores the errno the real call left. Only
 * after ana_lib_leave of a call that is recorded. */
void ana_lib_emit(ana_libcall *c, ana_record *rec);
void ana_lib_atfork_child(void);
/* The library (enum ana_lib) whose module holds code address pc; ANA_LIB_NONE for any
 * other module. Cached per address; the first lookup of an address calls dladdr. */
uint32_t ana_lib_of_pc(uintptr_t pc);

/* Says once per entry point (`said` is its flag) that `name` cannot be found in `soname`;
 * the wrapper then returns the library's own error code. */
void ana_lib_missing(const char *soname, const char *name, int *said);

#endif
