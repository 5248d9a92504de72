/* nvtx.c — NVTX injection: ranges, marks and names as RANGE and LABEL records (nvtx.h;
 * docs/trace-format.md, "NVTX"); the injection entry points; memory regions are in
 * nvtx_mem.c, texts and labels in nvtx_text.c. Called by the program's NVTX (through the
 * function slots it fills) and by lifecycle.c (set-up, the session's first records,
 * fork); calls nvtx_text.c, nvtx_mem.c and the core.
 *
 * Results the program sees are NVTX's own contract, kept whether or not records are being
 * written: a push returns the 0-based level of the new range and a pop the level of the
 * range it ended (−1 with nothing to pop), per thread and per domain; a start returns a
 * range id unique in the process (1, 2, ...); a domain, a registered string, a heap and a
 * memory region get handles that point into the preload's fixed tables. Records: every
 * entry point brackets its work in ana_enter/ana_leave (never recursive, errno kept,
 * nothing when the session is off); texts go inline (at most ANA_NVTX_TEXT bytes of
 * UTF-8, cut on a character boundary). */
#define _GNU_SOURCE
#include "nvtx_int.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define ANA_NVTX_DOMAINS 128   /* domains with their own push/pop stack */

static void put_range(uint64_t op, uint64_t domain, uint64_t id, uint64_t category, uint64_t color,
                      const ana_nvtx_text *t)
{
    ana_call c;
    if (!ana_capture_open_now() || !ana_nvtx_rec_begin(&c)) /* outside a capture window */
        return;
    ana_record r; /* only the header and the range: zeroing the whole union costs more */
    r.kind = ANA_K_RANGE;
    r.tid = 0;
    r.time_ns = c.t0;
    r.u.range = (ana_rec_range){ op, domain, id, category, color, { t ? t->s : "", t ? t->len : 0 } };
    ana_emit(c.t, &r);
    ana_leave(&c);
}

/* ---- domains ---- */

typedef struct domain {
    _Atomic int ready;
    _Atomic int live;
    uint32_t len;
    char name[ANA_NVTX_TEXT + 1];
} domain;

/* The last slot is shared by the domains created once the table is full. */
static domain domains[ANA_NVTX_DOMAINS + 1];
static _Atomic int domains_used;

/* Push/pop levels of this thread: [0] the default domain, [1 + i] domains[i], the last
 * any handle that is not ours. */
static __thread int32_t tls_depth[ANA_NVTX_DOMAINS + 3] __attribute__((tls_model("initial-exec")));

static int domain_index(nvtxDomainHandle_t h)
{
    const domain *d = (const domain *)(void *)h;
    if (!d)
        return 0;
    if (d >= domains && d <= domains + ANA_NVTX_DOMAINS)
        return 1 + (int)(d - domains);
    return ANA_NVTX_DOMAINS + 2;
}

static nvtxDomainHandle_t domain_create(const ana_nvtx_text *t)
{
    int n = atomic_load(&domains_used);
    domain *d = NULL;
    for (int i = 0; i < n && i < ANA_NVTX_DOMAINS && !d; i++)
        if (atomic_load(&domains[i].ready) && domains[i].len == t->len &&
            !memcmp(domains[i].name, t->s, t->len))
            d = &domains[i];
    if (!d) {
        int i = atomic_fetch_add(&domains_used, 1);
        d = &domains[i < ANA_NVTX_DOMAINS ? i : ANA_NVTX_DOMAINS];
        if (i <= ANA_NVTX_DOMAINS) { /* the shared slot keeps the first overflowing name */
            memcpy(d->name, t->s, t->len);
            d->name[t->len] = 0;
            d->len = t->len;
            atomic_store(&d->ready, 1);
        }
    }
    nvtxDomainHandle_t h = (nvtxDomainHandle_t)(void *)d;
    ana_nvtx_put_label(ANA_LABEL_DOMAIN, ana_nvtx_dom_id(h), ana_nvtx_dom_id(h), 0, t);
    /* Live after its LABEL: a session this call starts does not write the domain twice. */
    atomic_store(&d->live, 1);
    return h;
}

static nvtxDomainHandle_t NVTX_API ana_DomainCreateA(const char *name)
{
    ana_nvtx_text t;
    ana_nvtx_text_ascii(&t, name);
    return domain_create(&t);
}

static nvtxDomainHandle_t NVTX_API ana_DomainCreateW(const wchar_t *name)
{
    ana_nvtx_text t;
    ana_nvtx_text_wide(&t, name);
    return domain_create(&t);
}

/* The slot stays: handles the program still holds keep meaning the same domain. */
static void NVTX_API ana_DomainDestroy(nvtxDomainHandle_t h)
{
    int i = domain_index(h);
    if (i == 0 || i > ANA_NVTX_DOMAINS + 1)
        return;
    atomic_store(&domains[i - 1].live, 0);
    ana_nvtx_put_label(ANA_LABEL_DOMAIN, ana_nvtx_dom_id(h), ana_nvtx_dom_id(h), 0, NULL);
}

static nvtxStringHandle_t NVTX_API ana_DomainRegisterStringA(nvtxDomainHandle_t h, const char *s)
{
    ana_nvtx_text t;
    ana_nvtx_text_ascii(&t, s);
    return ana_nvtx_string_register(&t);
}

static nvtxStringHandle_t NVTX_API ana_DomainRegisterStringW(nvtxDomainHandle_t h, const wchar_t *s)
{
    ana_nvtx_text t;
    ana_nvtx_text_wide(&t, s);
    return ana_nvtx_string_register(&t);
}

/* ---- ranges and marks ---- */

static _Atomic uint64_t next_range_id = 1;

/* The category, colour (ARGB when given as such) and message of an event; fields past
 * the size the program declared are absent. */
static void event_of(const nvtxEventAttributes_t *a, uint64_t *category, uint64_t *color, ana_nvtx_text *t)
{
#define HAS(f) (a && a->size >= offsetof(nvtxEventAttributes_t, f) + sizeof(a->f))
    *category = HAS(category) ? a->category : 0;
    *color = HAS(color) && a->colorType == NVTX_COLOR_ARGB ? a->color : 0;
    if (HAS(message))
        ana_nvtx_text_of(t, a->messageType, a->message);
    else
        ana_nvtx_text_ascii(t, NULL);
#undef HAS
}

/* What pairs a push with its pop for the capture range: the domain and the level. */
static uint64_t capture_key(int di, int32_t level) { return ((uint64_t)di << 32) | (uint32_t)(level + 1); }

static int push(nvtxDomainHandle_t h, uint64_t category, uint64_t color, const ana_nvtx_text *t)
{
    int di = domain_index(h);
    int32_t level = tls_depth[di]++;
    ana_capture_nvtx_push(t->s, t->len, capture_key(di, level)); /* the range's own push is in */
    put_range(ANA_RANGE_PUSH, ana_nvtx_dom_id(h), 0, category, color, t);
    return level;
}

static int pop(nvtxDomainHandle_t h)
{
    int di = domain_index(h);
    int32_t *depth = &tls_depth[di];
    if (*depth <= 0)
        return -1;
    int32_t level = --*depth;
    put_range(ANA_RANGE_POP, ana_nvtx_dom_id(h), 0, 0, 0, NULL);
    ana_capture_nvtx_pop(capture_key(di, level)); /* and its pop */
    return level;
}

static nvtxRangeId_t start(nvtxDomainHandle_t h, uint64_t category, uint64_t color, const ana_nvtx_text *t)
{
    nvtxRangeId_t id = atomic_fetch_add_explicit(&next_range_id, 1, memory_order_relaxed);
    ana_capture_nvtx_start(t->s, t->len, id);
    put_range(ANA_RANGE_START, ana_nvtx_dom_id(h), id, category, color, t);
    return id;
}

/* A range opened with a text: op ANA_RANGE_PUSH (returns the level, as push), ANA_RANGE_START
 * (the new id, as start) or ANA_RANGE_MARK (0). */
static int64_t open_range(uint64_t op, nvtxDomainHandle_t h, uint64_t category, uint64_t color,
                          const ana_nvtx_text *t)
{
    if (op == ANA_RANGE_PUSH)
        return push(h, category, color, t);
    if (op == ANA_RANGE_START)
        return (int64_t)start(h, category, color, t);
    put_range(ANA_RANGE_MARK, ana_nvtx_dom_id(h), 0, category, color, t);
    return 0;
}

/* open_range with a message alone (the A and W entry points: no domain, category, colour). */
static int64_t open_ascii(uint64_t op, const char *m)
{
    ana_nvtx_text t;
    ana_nvtx_text_ascii(&t, m);
    return open_range(op, NULL, 0, 0, &t);
}

static int64_t open_wide(uint64_t op, const wchar_t *m)
{
    ana_nvtx_text t;
    ana_nvtx_text_wide(&t, m);
    return open_range(op, NULL, 0, 0, &t);
}

/* open_range with event attributes (the Ex entry points). */
static int64_t open_event(uint64_t op, nvtxDomainHandle_t h, const nvtxEventAttributes_t *a)
{
    uint64_t category, color;
    ana_nvtx_text t;
    event_of(a, &category, &color, &t);
    return open_range(op, h, category, color, &t);
}

static int NVTX_API ana_RangePushA(const char *m) { return (int)open_ascii(ANA_RANGE_PUSH, m); }
static int NVTX_API ana_RangePushW(const wchar_t *m) { return (int)open_wide(ANA_RANGE_PUSH, m); }
static int NVTX_API ana_DomainRangePushEx(nvtxDomainHandle_t h, const nvtxEventAttributes_t *a)
{
    return (int)open_event(ANA_RANGE_PUSH, h, a);
}
static int NVTX_API ana_RangePushEx(const nvtxEventAttributes_t *a) { return ana_DomainRangePushEx(NULL, a); }
static int NVTX_API ana_RangePop(void) { return pop(NULL); }
static int NVTX_API ana_DomainRangePop(nvtxDomainHandle_t h) { return pop(h); }

static nvtxRangeId_t NVTX_API ana_RangeStartA(const char *m)
{
    return (nvtxRangeId_t)open_ascii(ANA_RANGE_START, m);
}
static nvtxRangeId_t NVTX_API ana_RangeStartW(const wchar_t *m)
{
    return (nvtxRangeId_t)open_wide(ANA_RANGE_START, m);
}
static nvtxRangeId_t NVTX_API ana_DomainRangeStartEx(nvtxDomainHandle_t h, const nvtxEventAttributes_t *a)
{
    return (nvtxRangeId_t)open_event(ANA_RANGE_START, h, a);
}
static nvtxRangeId_t NVTX_API ana_RangeStartEx(const nvtxEventAttributes_t *a)
{
    return ana_DomainRangeStartEx(NULL, a);
}

/* Id 0 is no range of ours (one started before NVTX had a tool): nothing to end. */
static void NVTX_API ana_DomainRangeEnd(nvtxDomainHandle_t h, nvtxRangeId_t id)
{
    if (id) {
        put_range(ANA_RANGE_END, ana_nvtx_dom_id(h), id, 0, 0, NULL);
        ana_capture_nvtx_end(id);
    }
}

static void NVTX_API ana_RangeEnd(nvtxRangeId_t id) { ana_DomainRangeEnd(NULL, id); }

static void NVTX_API ana_DomainMarkEx(nvtxDomainHandle_t h, const nvtxEventAttributes_t *a)
{
    open_event(ANA_RANGE_MARK, h, a);
}
static void NVTX_API ana_MarkEx(const nvtxEventAttributes_t *a) { ana_DomainMarkEx(NULL, a); }
static void NVTX_API ana_MarkA(const char *m) { open_ascii(ANA_RANGE_MARK, m); }
static void NVTX_API ana_MarkW(const wchar_t *m) { open_wide(ANA_RANGE_MARK, m); }

/* ---- names ---- */

/* ana_NAME_A/W: an entry point naming `what` (id = the first argument as an integer). */
#define ANA_NAME_FNS(fn, what, domain_arg, idtype, idexpr)          \
    static void NVTX_API ana_##fn##A(idtype x, const char *name)    \
    {                                                               \
        ana_nvtx_text t;                                            \
        ana_nvtx_text_ascii(&t, name);                              \
        ana_nvtx_put_label(what, domain_arg, idexpr, 0, &t);        \
    }                                                               \
    static void NVTX_API ana_##fn##W(idtype x, const wchar_t *name) \
    {                                                               \
        ana_nvtx_text t;                                            \
        ana_nvtx_text_wide(&t, name);                               \
        ana_nvtx_put_label(what, domain_arg, idexpr, 0, &t);        \
    }

ANA_NAME_FNS(NameCategory, ANA_LABEL_CATEGORY, 0, uint32_t, x)
ANA_NAME_FNS(NameOsThread, ANA_LABEL_THREAD, 0, uint32_t, x)
ANA_NAME_FNS(NameCuDevice, ANA_LABEL_DEVICE, 0, nvtx_CUdevice, (uint64_t)(int64_t)x)
ANA_NAME_FNS(NameCuContext, ANA_LABEL_CONTEXT, 0, nvtx_CUcontext, (uint64_t)(uintptr_t)x)
ANA_NAME_FNS(NameCuStream, ANA_LABEL_STREAM, 0, nvtx_CUstream, (uint64_t)(uintptr_t)x)
ANA_NAME_FNS(NameCuEvent, ANA_LABEL_EVENT, 0, nvtx_CUevent, (uint64_t)(uintptr_t)x)
ANA_NAME_FNS(NameCudaDevice, ANA_LABEL_DEVICE, 0, int, (uint64_t)(int64_t)x)
ANA_NAME_FNS(NameCudaStream, ANA_LABEL_STREAM, 0, nvtx_cudaStream_t, (uint64_t)(uintptr_t)x)
ANA_NAME_FNS(NameCudaEvent, ANA_LABEL_EVENT, 0, nvtx_cudaEvent_t, (uint64_t)(uintptr_t)x)

static void NVTX_API ana_DomainNameCategoryA(nvtxDomainHandle_t h, uint32_t category, const char *name)
{
    ana_nvtx_text t;
    ana_nvtx_text_ascii(&t, name);
    ana_nvtx_put_label(ANA_LABEL_CATEGORY, ana_nvtx_dom_id(h), category, 0, &t);
}

static void NVTX_API ana_DomainNameCategoryW(nvtxDomainHandle_t h, uint32_t category, const wchar_t *name)
{
    ana_nvtx_text t;
    ana_nvtx_text_wide(&t, name);
    ana_nvtx_put_label(ANA_LABEL_CATEGORY, ana_nvtx_dom_id(h), category, 0, &t);
}

/* ---- injection ---- */

typedef struct slot {
    unsigned cbid;
    NvtxFunctionPointer fn;
} slot;

#define S(mod, name) { NVTX_CBID_##mod##_##name, (NvtxFunctionPointer)ana_##name }
static const slot core[] = {
    S(CORE, MarkEx), S(CORE, MarkA), S(CORE, MarkW), S(CORE, RangeStartEx), S(CORE, RangeStartA),
    S(CORE, RangeStartW), S(CORE, RangeEnd), S(CORE, RangePushEx), S(CORE, RangePushA),
    S(CORE, RangePushW), S(CORE, RangePop), S(CORE, NameCategoryA), S(CORE, NameCategoryW),
    S(CORE, NameOsThreadA), S(CORE, NameOsThreadW), { 0, NULL } };
static const slot core2[] = {
    S(CORE2, DomainMarkEx), S(CORE2, DomainRangeStartEx), S(CORE2, DomainRangeEnd),
    S(CORE2, DomainRangePushEx), S(CORE2, DomainRangePop), S(CORE2, DomainNameCategoryA),
    S(CORE2, DomainNameCategoryW), S(CORE2, DomainRegisterStringA), S(CORE2, DomainRegisterStringW),
    S(CORE2, DomainCreateA), S(CORE2, DomainCreateW), S(CORE2, DomainDestroy), { 0, NULL } };
static const slot cuda[] = {
    S(CUDA, NameCuDeviceA), S(CUDA, NameCuDeviceW), S(CUDA, NameCuContextA), S(CUDA, NameCuContextW),
    S(CUDA, NameCuStreamA), S(CUDA, NameCuStreamW), S(CUDA, NameCuEventA), S(CUDA, NameCuEventW),
    { 0, NULL } };
static const slot cudart[] = {
    S(CUDART, NameCudaDeviceA), S(CUDART, NameCudaDeviceW), S(CUDART, NameCudaStreamA),
    S(CUDART, NameCudaStreamW), S(CUDART, NameCudaEventA), S(CUDART, NameCudaEventW), { 0, NULL } };
#undef S

/* Fills the module's slots NVTX has; 0 when it has no table for the module. */
static int fill(const NvtxExportTableCallbacks *cb, NvtxCallbackModule module, const slot *s)
{
    NvtxFunctionTable table = NULL;
    unsigned int size = 0;
    if (!cb->GetModuleFunctionTable(module, &table, &size) || !table)
        return 0;
    for (; s->fn; s++)
        if (s->cbid < size && table[s->cbid])
            *table[s->cbid] = s->fn;
    return 1;
}

/* INFO "nvtx": "on", "off", or "taken by PATH"; written once per session. */
static _Atomic(const char *) status;
static char status_taken[PATH_MAX + 16];
static _Atomic int status_written;

/* Inside a bracket: writes INFO "nvtx" unless this session has it already. */
static void write_status(ana_thread *t)
{
    const char *v = atomic_load(&status);
    if (!v || atomic_exchange(&status_written, 1))
        return;
    ana_record r = ana_info_record("nvtx", v, ana_now_ns());
    ana_emit(t, &r);
}

/* Whether NVTX is to be recorded: ANATOMIST_NVTX=1 and the preload not disabled. NVTX may
 * initialise before the preload's constructor ran; the environment then decides. */
static int wanted(void)
{
    if (ana_cfg.output[0])
        return !ana_cfg.disable && ana_cfg.nvtx;
    ana_config cfg;
    ana_config_load(&cfg, NULL, NULL);
    return !cfg.disable && cfg.nvtx;
}

ANA_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get)
{
    if (!get || !wanted())
        return 0;
    const NvtxExportTableCallbacks *cb = (const NvtxExportTableCallbacks *)get(NVTX_ETID_CALLBACKS);
    if (!cb || cb->struct_size < sizeof(*cb) || !cb->GetModuleFunctionTable ||
        !fill(cb, NVTX_CB_MODULE_CORE, core))
        return 0;
    fill(cb, NVTX_CB_MODULE_CORE2, core2);
    fill(cb, NVTX_CB_MODULE_CUDA, cuda);
    fill(cb, NVTX_CB_MODULE_CUDART, cudart);
    const NvtxExportTableVersionInfo *vi = (const NvtxExportTableVersionInfo *)get(NVTX_ETID_VERSIONINFO);
    if (vi && vi->struct_size >= sizeof(*vi) && vi->SetInjectionNvtxVersion)
        vi->SetInjectionNvtxVersion(NVTX_VERSION);
    atomic_store(&status, "on");
    ana_call c;
    if (atomic_load(&ana_active) && ana_nvtx_rec_begin(&c)) {
        write_status(c.t);
        ana_leave(&c);
    }
    return 1;
}

ANA_EXPORT int InitializeInjectionNvtxExtension(nvtxExtModuleInfo_t *info)
{
    if (!info || !wanted() || info->moduleId != NVTX_EXT_MODULEID_MEM ||
        info->compatId != NVTX_EXT_COMPATID_MEM)
        return 0;
    for (size_t i = 0; i < info->segmentsCount; i++)
        if (info->segments[i].segmentId == 1)
            ana_nvtx_mem_fill(info->segments[i].functionSlots, info->segments[i].slotCount);
    return 1;
}

/* ---- lifecycle ---- */

static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

void ana_nvtx_setup(void)
{
    if (!ana_cfg.nvtx) {
        atomic_store(&status, "off");
        return;
    }
    Dl_info di;
    char self[PATH_MAX];
    if (!dladdr((const void *)ana_nvtx_setup, &di) || !di.dli_fname || !realpath(di.dli_fname, self))
        return;
    const char *cur = getenv("NVTX_INJECTION64_PATH");
    if (!cur || !*cur) {
        setenv("NVTX_INJECTION64_PATH", self, 1); /* absolute: the program may chdir first */
    } else if (!same_file(cur, self)) {
        snprintf(status_taken, sizeof(status_taken), "taken by %s", cur);
        atomic_store(&status, status_taken);
    }
}

void ana_nvtx_session_started(void)
{
    ana_thread *t = ana_thread_self();
    if (!t)
        return;
    write_status(t);
    int n = atomic_load(&domains_used);
    for (int i = 0; i <= ANA_NVTX_DOMAINS && i < n; i++) {
        domain *d = &domains[i];
        if (!atomic_load(&d->ready) || !atomic_load(&d->live))
            continue;
        ana_record r = { .kind = ANA_K_LABEL, .time_ns = ana_now_ns() };
        uint64_t h = (uint64_t)(uintptr_t)d;
        r.u.label = (ana_rec_label){ ANA_LABEL_DOMAIN, h, h, 0, { d->name, d->len } };
        ana_emit(t, &r);
    }
}

void ana_nvtx_atfork_child(void) { atomic_store(&status_written, 0); }
