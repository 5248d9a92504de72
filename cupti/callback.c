/* callback.c — the CUPTI subscriber callback: correlation ids for the calls the hooks
 * record, and API records for the calls no hook saw (docs/trace-format.md, "GPU activity
 * and correlation").
 *
 * At API entry, on the calling thread:
 *   - a hook is recording this call (ana_in_hook): the outermost enabled API's correlation
 *     id goes to ana_tls_corr, where the hook's record builder finds it; nothing else.
 *   - no hook is active (a library with the CUDA runtime linked in statically, a driver
 *     call made through a pointer no hook wrapped): the callback opens the bracket
 *     (ana_enter, via = ANA_VIA_CUPTI), stores the call's id in ana_tls_corr as a hook's
 *     call would, and keeps the bracket in TLS; at the matching exit it reads the call's
 *     parameters (generated_cuda_*_meta.h) and result and ends the bracket with the record
 *     builder a hook of that call uses (calls.h): the same record, the same MEMINFO and
 *     flush after a failed device allocation, the same DEVICE after the first success.
 *     Calls nested in it find the bracket busy and are not recorded twice; CUDA calls the
 *     builders make (cudaMemGetInfo, cudaGetDeviceProperties) likewise.
 * The common path (a hook is active) is one TLS test and one store.
 *
 * Called by CUPTI (on the program's threads) only; calls calls.c (which calls are ours,
 * and their records), library.c (our state), and the core's bracket and capture windows. */
#define _GNU_SOURCE
#include "cupti_int.h"

#include <errno.h>

#include "calls.h"

/* The call recorded through CUPTI on this thread, between its entry and its exit. Its
 * correlation id is ana_tls_corr, which nothing changes while the bracket is open: calls
 * nested in it store theirs only over a 0, and CUPTI's correlation ids are never 0. */
static __thread struct {
    ana_call c;
    const ana_cupti_call *e;
} tls_open __attribute__((tls_model("initial-exec")));

static void open_call(const ana_cupti_call *e, const CUpti_CallbackData *d)
{
    if (!e || !ana_enter(&tls_open.c))
        return;
    tls_open.c.via = ANA_VIA_CUPTI;
    ana_tls_corr = d->correlationId; /* the record's corr; nested calls see it and stay quiet */
    tls_open.e = e;
}

static void close_call(const ana_cupti_call *e, const CUpti_CallbackData *d)
{
    ana_call *c = &tls_open.c;
    tls_open.e = NULL;
    const void *params = d->functionParams, *ret = d->functionReturnValue;
    if (params && ret) {
        int r = e->domain == CUPTI_CB_DOMAIN_RUNTIME_API ? (int)*(const cudaError_t *)ret
                                                          : (int)*(const CUresult *)ret;
        if (e->rec(c, e->api, r, params))
            return;
    }
    c->saved_errno = errno;
    ana_leave(c);
}

void CUPTIAPI ana_cupti_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *data)
{
    (void)userdata;
    const CUpti_CallbackData *d = data;
    if (d->callbackSite == CUPTI_API_ENTER) {
        if (!ana_cupti_on())
            return; /* not yet, handed over, or a forked child */
        if (ANA_UNLIKELY(!ana_capture_all))
            ana_capture_note_corr(d->correlationId); /* entered inside a capture window */
        if (!ana_in_hook())
            open_call(ana_cupti_call_of(domain, cbid), d);
        else if (!ana_tls_corr)
            ana_tls_corr = d->correlationId;
        return;
    }
    const ana_cupti_call *e = tls_open.e;
    if (e && e->cbid == cbid && e->domain == domain && ana_tls_corr == d->correlationId)
        close_call(e, d);
}
