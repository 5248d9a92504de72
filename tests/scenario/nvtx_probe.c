/* nvtx_probe.c — a program annotated with NVTX (v3, header-only) for test_nvtx.py.
 *
 * Marks "step 0" before its first CUDA call, then: nested pushes and pops (3 levels) on
 * the main thread and on a second one, one pop too many, a range started on one thread and
 * ended on the other (both ways), ASCII, wide and registered messages, categories and ARGB
 * colours, a domain with its own push/pop stack, names of a thread, categories, a device,
 * a stream and an event, and two memory regions of a heap over a cudaMalloc'ed buffer,
 * named by pointer and by handle, resized, unregistered. It prints one line
 * `ledger {json}`: what it did, in order per thread, with what each NVTX call returned. */
#define _GNU_SOURCE
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtCuda.h>
#include <nvtx3/nvToolsExtCudaRt.h>
#include <nvtx3/nvToolsExtMem.h>

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define COLOR_OUTER 0xFF00A0F0u
#define COLOR_T1 0xFF102030u
#define CAT_IO 7u
#define CAT_DOM 3u

/* The ledger: JSON objects appended to one of two lists (main thread, second thread). */
static char ev[2][16384];
static size_t evn[2];

static void note(int who, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(int who, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (evn[who])
        ev[who][evn[who]++] = ',';
    evn[who] += (size_t)vsnprintf(ev[who] + evn[who], sizeof(ev[who]) - evn[who], fmt, ap);
    va_end(ap);
}

static unsigned long long u(const void *p) { return (unsigned long long)(uintptr_t)p; }

static void range(int who, const char *op, nvtxDomainHandle_t d, unsigned long long id, unsigned cat,
                  unsigned color, const char *name, long long ret)
{
    note(who, "{\"op\":\"%s\",\"domain\":%llu,\"id\":%llu,\"category\":%u,\"color\":%u,\"name\":\"%s\","
              "\"ret\":%lld}", op, u(d), id, cat, color, name, ret);
}

/* A LABEL the preload should write (what: 1 thread, 2 stream, 3 device, 5 event,
 * 6 domain, 7 category, 8 memory region). */
static void label(int what, const void *domain, unsigned long long id, size_t size, const char *name)
{
    note(0, "{\"op\":\"label\",\"what\":%d,\"domain\":%llu,\"id\":%llu,\"size\":%zu,\"name\":\"%s\"}",
         what, u(domain), id, size, name);
}

static nvtxEventAttributes_t attr(unsigned cat, unsigned color, int type, nvtxMessageValue_t m)
{
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof(a));
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.category = cat;
    a.colorType = color ? NVTX_COLOR_ARGB : NVTX_COLOR_UNKNOWN;
    a.color = color;
    a.messageType = type;
    a.message = m;
    return a;
}

static nvtxEventAttributes_t ascii(unsigned cat, unsigned color, const char *s)
{
    nvtxMessageValue_t m = { .ascii = s };
    return attr(cat, color, NVTX_MESSAGE_TYPE_ASCII, m);
}

static nvtxRangeId_t cross_id, t1_span;
static pid_t t1_tid;

/* The second thread: ends the main thread's "cross" range, nests three levels (one of them
 * with attributes), and starts a range the main thread ends. */
static void *second(void *arg)
{
    (void)arg;
    t1_tid = gettid();
    nvtxRangeEnd(cross_id);
    range(1, "end", NULL, cross_id, 0, 0, "", 0);
    int r = nvtxRangePushA("t1-a");
    range(1, "push", NULL, 0, 0, 0, "t1-a", r);
    nvtxEventAttributes_t a = ascii(CAT_IO, COLOR_T1, "t1-b");
    r = nvtxRangePushEx(&a);
    range(1, "push", NULL, 0, CAT_IO, COLOR_T1, "t1-b", r);
    r = nvtxRangePushA("t1-c");
    range(1, "push", NULL, 0, 0, 0, "t1-c", r);
    for (int i = 0; i < 3; i++) {
        r = nvtxRangePop();
        range(1, "pop", NULL, 0, 0, 0, "", r);
    }
    a = ascii(CAT_IO, COLOR_T1, "t1-span");
    t1_span = nvtxRangeStartEx(&a);
    range(1, "start", NULL, t1_span, CAT_IO, COLOR_T1, "t1-span", 0);
    return NULL;
}

/* Default-domain nesting on the main thread: ASCII, attributes with a colour, wide. */
static void nest_main(void)
{
    int r = nvtxRangePushA("outer");
    range(0, "push", NULL, 0, 0, 0, "outer", r);
    nvtxEventAttributes_t a = ascii(CAT_IO, COLOR_OUTER, "middle");
    r = nvtxRangePushEx(&a);
    range(0, "push", NULL, 0, CAT_IO, COLOR_OUTER, "middle", r);
    r = nvtxRangePushW(L"inner \u00fc\u4e2d\U0001F600");
    range(0, "push", NULL, 0, 0, 0, "inner \u00fc\u4e2d\U0001F600", r);
    for (int i = 0; i < 4; i++) { /* the fourth has nothing to pop */
        r = nvtxRangePop();
        range(0, "pop", NULL, 0, 0, 0, "", r);
    }
}

/* A domain: its own stack beside the default domain's, a registered string, a mark and a
 * start/end in the domain. */
static nvtxDomainHandle_t domain_work(void)
{
    nvtxDomainHandle_t d = nvtxDomainCreateA("com.anatomist.probe");
    label(6, d, u(d), 0, "com.anatomist.probe");
    nvtxDomainNameCategoryA(d, CAT_DOM, "dom-cat");
    label(7, d, CAT_DOM, 0, "dom-cat");
    nvtxMessageValue_t m = { .registered = nvtxDomainRegisterStringA(d, "registered-op") };
    nvtxMessageValue_t mw = { .registered = nvtxDomainRegisterStringW(d, L"registered-w\u00e9") };
    int r = nvtxRangePushA("outer2");
    range(0, "push", NULL, 0, 0, 0, "outer2", r);
    nvtxEventAttributes_t a = attr(CAT_DOM, 0, NVTX_MESSAGE_TYPE_REGISTERED, m);
    r = nvtxDomainRangePushEx(d, &a);
    range(0, "push", d, 0, CAT_DOM, 0, "registered-op", r);
    a = ascii(0, 0, "dom-inner");
    r = nvtxDomainRangePushEx(d, &a);
    range(0, "push", d, 0, 0, 0, "dom-inner", r);
    for (int i = 0; i < 2; i++) {
        r = nvtxDomainRangePop(d);
        range(0, "pop", d, 0, 0, 0, "", r);
    }
    r = nvtxRangePop();
    range(0, "pop", NULL, 0, 0, 0, "", r);
    a = attr(0, 0, NVTX_MESSAGE_TYPE_REGISTERED, mw);
    nvtxDomainMarkEx(d, &a);
    range(0, "mark", d, 0, 0, 0, "registered-w\u00e9", 0);
    a = ascii(CAT_DOM, 0, "dom-span");
    nvtxRangeId_t id = nvtxDomainRangeStartEx(d, &a);
    range(0, "start", d, id, CAT_DOM, 0, "dom-span", 0);
    nvtxDomainRangeEnd(d, id);
    range(0, "end", d, id, 0, 0, "", 0);
    return d;
}

/* Two regions of a heap over buf: register, name (by pointer, by handle), resize the
 * second, unregister the first, unregister the heap (which ends the second). */
static void regions(nvtxDomainHandle_t d, char *buf, size_t bytes)
{
    nvtxMemVirtualRangeDesc_t whole = { bytes, buf };
    nvtxMemHeapDesc_t hd;
    memset(&hd, 0, sizeof(hd));
    hd.extCompatID = NVTX_EXT_COMPATID_MEM;
    hd.structSize = sizeof(hd);
    hd.usage = NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR;
    hd.type = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
    hd.typeSpecificDescSize = sizeof(whole);
    hd.typeSpecificDesc = &whole;
    hd.messageType = NVTX_MESSAGE_TYPE_ASCII;
    hd.message.ascii = "probe-heap";
    nvtxMemHeapHandle_t heap = nvtxMemHeapRegister(d, &hd);

    nvtxMemVirtualRangeDesc_t rd[2] = { { 4096, buf }, { 65536, buf + 8192 } };
    nvtxMemRegionHandle_t h[2] = { 0, 0 };
    nvtxMemRegionsRegisterBatch_t rb = { NVTX_EXT_COMPATID_MEM, sizeof(rb), NVTX_MEM_TYPE_VIRTUAL_ADDRESS,
                                         heap, 2, sizeof(rd[0]), rd, h };
    nvtxMemRegionsRegister(d, &rb);
    for (int i = 0; i < 2; i++)
        label(8, d, u(rd[i].ptr), rd[i].size, "");

    nvtxMemRegionNameDesc_t nd[2];
    memset(nd, 0, sizeof(nd));
    nd[0].regionRefType = NVTX_MEM_REGION_REF_TYPE_POINTER;
    nd[0].region.pointer = buf;
    nd[0].nameType = NVTX_MESSAGE_TYPE_ASCII;
    nd[0].name.ascii = "weights";
    nd[1].regionRefType = NVTX_MEM_REGION_REF_TYPE_HANDLE;
    nd[1].region.handle = h[1];
    nd[1].nameType = NVTX_MESSAGE_TYPE_UNICODE;
    nd[1].name.unicode = L"activations \u03b1";
    nvtxMemRegionsNameBatch_t nb = { NVTX_EXT_COMPATID_MEM, sizeof(nb), 0, 2, sizeof(nd[0]), nd, 0 };
    nvtxMemRegionsName(d, &nb);
    label(8, d, u(buf), 4096, "weights");
    label(8, d, u(buf + 8192), 65536, "activations \u03b1");

    nvtxMemVirtualRangeDesc_t smaller = { 32768, buf + 8192 };
    nvtxMemRegionsResizeBatch_t zb = { NVTX_EXT_COMPATID_MEM, sizeof(zb), NVTX_MEM_TYPE_VIRTUAL_ADDRESS, 1,
                                       sizeof(smaller), &smaller };
    nvtxMemRegionsResize(d, &zb);
    label(8, d, u(buf + 8192), 32768, "");

    nvtxMemRegionRef_t ref = { .pointer = buf };
    nvtxMemRegionsUnregisterBatch_t ub = { NVTX_EXT_COMPATID_MEM, sizeof(ub),
                                           NVTX_MEM_REGION_REF_TYPE_POINTER, 1, sizeof(ref), &ref };
    nvtxMemRegionsUnregister(d, &ub);
    label(8, d, u(buf), 0, "");
    nvtxMemHeapUnregister(d, heap);
    label(8, d, u(buf + 8192), 0, "");
}

int main(void)
{
    nvtxMarkA("step 0"); /* before any CUDA call */
    range(0, "mark", NULL, 0, 0, 0, "step 0", 0);
    pid_t tid = gettid();
    nvtxNameOsThreadA((uint32_t)tid, "probe-main");
    label(1, NULL, (unsigned long long)tid, 0, "probe-main");
    nvtxNameCategoryA(CAT_IO, "io");
    label(7, NULL, CAT_IO, 0, "io");
    nest_main();

    const size_t bytes = 1 << 20;
    char *buf = NULL;
    cudaError_t rm = cudaMalloc((void **)&buf, bytes);
    cudaStream_t s = NULL;
    cudaEvent_t e = NULL;
    cudaError_t rs = cudaStreamCreate(&s), re = cudaEventCreate(&e);
    nvtxNameCudaStreamA(s, "copy-stream");
    label(2, NULL, u(s), 0, "copy-stream");
    nvtxNameCuStreamW((CUstream)s, L"cu-stre\u00e4m");
    label(2, NULL, u(s), 0, "cu-stre\u00e4m");
    nvtxNameCudaDeviceA(0, "gpu-zero");
    label(3, NULL, 0, 0, "gpu-zero");
    nvtxNameCudaEventA(e, "done-event");
    label(5, NULL, u(e), 0, "done-event");

    cross_id = nvtxRangeStartA("cross");
    range(0, "start", NULL, cross_id, 0, 0, "cross", 0);
    pthread_t th;
    pthread_create(&th, NULL, second, NULL);
    pthread_join(th, NULL);
    nvtxRangeEnd(t1_span);
    range(0, "end", NULL, t1_span, 0, 0, "", 0);

    nvtxDomainHandle_t d = domain_work();
    if (rm == cudaSuccess)
        regions(d, buf, bytes);
    nvtxDomainDestroy(d);
    label(6, d, u(d), 0, "");
    cudaError_t rf = cudaFree(buf);
    cudaEventDestroy(e);
    cudaStreamDestroy(s);

    const char *inj = getenv("NVTX_INJECTION64_PATH");
    printf("ledger {\"tid\":%d,\"t1_tid\":%d,\"buf\":%llu,\"stream\":%llu,\"event\":%llu,"
           "\"cuda\":[%d,%d,%d,%d],\"injection\":\"%s\",\"main\":[%s],\"t1\":[%s]}\n",
           (int)tid, (int)t1_tid, u(buf), u(s), u(e), (int)rm, (int)rs, (int)re, (int)rf, inj ? inj : "",
           ev[0], ev[1]);
    return 0;
}
