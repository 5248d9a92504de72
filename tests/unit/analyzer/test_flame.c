/* test_flame.c — flame graphs (analyzer/views/flame.h, docs/flame.md).
 *
 * The writers and the merge run on flames written here node by node; the build runs on a
 * trace written here record by record (stacks, kernels, launches, copies, GPU activity,
 * allocations, a driver-only allocation, a frame of the profiler's own library), with
 * symbols off, so every frame name is one the test knows ("0x4010" for a bare address,
 * "libfoo.so+0x10" for an address in a module). Every expected line and number is
 * written out by hand from what the test put in. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "views/flame.h"
#include "analyses/report.h"
#include "model/trace.h"

/* ---- flames written node by node ---- */

typedef struct fnode {
    const char *name;
    uint32_t parent;
    uint64_t self;
} fnode;

/* A flame from nodes in preorder (nodes[0] the root); totals summed here. */
static void mk(ana_flame *f, int metric, const fnode *n, size_t count)
{
    memset(f, 0, sizeof(*f));
    f->metric = metric;
    f->names = calloc(count, sizeof(char *));
    f->nodes = calloc(count, sizeof(ana_flame_node));
    for (size_t i = 0; i < count; i++) {
        f->names[i] = strdup(n[i].name);
        f->nodes[i] = (ana_flame_node){ .name = (uint32_t)i, .parent = n[i].parent,
                                        .self = n[i].self, .total = n[i].self };
    }
    for (size_t i = count; i-- > 1;)
        f->nodes[n[i].parent].total += f->nodes[i].total;
    f->n_names = f->cap_names = f->n_nodes = f->cap_nodes = count;
    f->total = f->nodes[0].total;
}

/* What a writer printed, malloc'd. */
typedef void (*writer)(const ana_flame *, FILE *);
static char *capture(writer w, const ana_flame *f)
{
    FILE *m = tmpfile();
    cr_assert(m);
    w(f, m);
    long len = ftell(m);
    char *buf = calloc((size_t)len + 1, 1);
    rewind(m);
    cr_assert_eq(fread(buf, 1, (size_t)len, m), (size_t)len);
    fclose(m);
    return buf;
}

static void svg_untitled(const ana_flame *f, FILE *out) { ana_flame_write_svg(f, out, NULL); }

static void json_writer(const ana_flame *f, FILE *out)
{
    ana_json j;
    ana_json_init(&j, out);
    ana_flame_write_json(f, &j);
    ana_json_finish(&j);
}

static size_t count_of(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

Test(flame, metric_names)
{
    static const char *names[] = { "gpu-time", "peak-memory", "leaked-memory", "alloc-bytes",
                                   "alloc-count" };
    for (int m = 0; m < ANA_FLAME_METRICS; m++) {
        cr_expect_eq(ana_flame_metric_parse(names[m]), m);
        cr_expect_str_eq(ana_flame_metric_name(m), names[m]);
    }
    cr_expect_eq(ana_flame_metric_parse("gpu_time"), -1);
    cr_expect_str_eq(ana_flame_metric_unit(ANA_FLAME_GPU_TIME), "ns");
    cr_expect_str_eq(ana_flame_metric_unit(ANA_FLAME_PEAK_MEMORY), "bytes");
    cr_expect_str_eq(ana_flame_metric_unit(ANA_FLAME_ALLOC_COUNT), "allocations");
}

/* ';' would split a frame in two and a newline would end the line: both are replaced.
 * An inner frame with a self value of its own gets a line of its own. */
Test(flame, folded_sanitizes_and_writes_inner_self)
{
    static const fnode n[] = {
        { "all", 0, 0 }, { "main", 0, 2 }, { "ns::f;g", 1, 0 }, { "line\nbreak", 2, 4 },
        { "k", 1, 3 },
    };
    ana_flame f;
    mk(&f, ANA_FLAME_GPU_TIME, n, 5);
    char *s = capture(ana_flame_write_folded, &f);
    cr_expect_str_eq(s, "main 2\nmain;ns::f:g;line break 4\nmain;k 3\n");
    free(s);
    ana_flame_free(&f);
}

Test(flame, json_shape)
{
    static const fnode n[] = { { "all", 0, 0 }, { "a\"b", 0, 5 }, { "c", 1, 2 } };
    ana_flame f;
    mk(&f, ANA_FLAME_ALLOC_COUNT, n, 3);
    char *s = capture(json_writer, &f);
    cr_expect_str_eq(s, "{\n"
                        "  \"metric\": \"alloc-count\",\n"
                        "  \"unit\": \"allocations\",\n"
                        "  \"total\": 7,\n"
                        "  \"names\": [\n"
                        "    \"all\",\n"
                        "    \"a\\\"b\",\n"
                        "    \"c\"\n"
                        "  ],\n"
                        "  \"nodes\": [\n"
                        "    [0,0,7,0],\n"
                        "    [1,0,7,5],\n"
                        "    [2,1,2,2]\n"
                        "  ]\n"
                        "}\n");
    free(s);
    ana_flame_free(&f);
}

/* base: a;b 5, a;c 3, x 1. head: d 2, a;b 7, a;e 4, a;c 1 — written with children out of
 * name order, which the merge must put in order (preorder, siblings by name). */
static void merge_pair(ana_flame *base, ana_flame *head, ana_flame *out)
{
    static const fnode b[] = { { "all", 0, 0 }, { "a", 0, 0 }, { "b", 1, 5 }, { "c", 1, 3 },
                               { "x", 0, 1 } };
    static const fnode h[] = { { "all", 0, 0 }, { "d", 0, 2 }, { "a", 0, 0 }, { "e", 2, 4 },
                               { "b", 2, 7 }, { "c", 2, 1 } };
    mk(base, ANA_FLAME_PEAK_MEMORY, b, 5);
    mk(head, ANA_FLAME_PEAK_MEMORY, h, 6);
    ana_flame_merge(base, head, out);
}

Test(flame, merge_every_stack_of_both)
{
    ana_flame base, head, m;
    merge_pair(&base, &head, &m);
    cr_expect_eq(m.diff, 1);
    cr_expect_eq(m.metric, ANA_FLAME_PEAK_MEMORY);
    cr_expect_eq(m.total, 14);
    cr_expect_eq(m.base_total, 9);
    char *s = capture(ana_flame_write_folded, &m);
    cr_expect_str_eq(s, "a;b 5 7\na;c 3 1\na;e 0 4\nd 0 2\nx 1 0\n");
    free(s);
    /* all, a, b, c, e, d, x in preorder: a's totals 12 head / 8 base */
    cr_assert_eq(m.n_nodes, 7);
    cr_expect_str_eq(m.names[m.nodes[1].name], "a");
    cr_expect_eq(m.nodes[1].total, 12);
    cr_expect_eq(m.nodes[1].base_total, 8);
    cr_expect_str_eq(m.names[m.nodes[4].name], "e");
    cr_expect_eq(m.nodes[4].parent, 1);
    cr_expect_str_eq(m.names[m.nodes[6].name], "x");
    cr_expect_eq(m.nodes[6].base_self, 1);
    cr_expect_eq(m.nodes[6].self, 0);
    s = capture(json_writer, &m);
    cr_expect(strstr(s, "\"base_total\": 9"), "%s", s);
    cr_expect(strstr(s, "[1,0,12,0,8,0]"), "%s", s);
    free(s);
    ana_flame_free(&m);
    ana_flame_free(&base);
    ana_flame_free(&head);
}

/* Red where the head grew, blue where it shrank: b grew 5 -> 7, c shrank 3 -> 1. Widths
 * are the head's, so x (1 -> 0) is not drawn. */
Test(flame, merged_svg_colours)
{
    ana_flame base, head, m;
    merge_pair(&base, &head, &m);
    char *s = capture(svg_untitled, &m);
    const char *b = strstr(s, "<title>b (");
    const char *c = strstr(s, "<title>c (");
    cr_assert(b && c, "%s", s);
    cr_expect(strncmp(strstr(b, "fill=\"") + 6, "rgb(255,", 8) == 0);
    const char *cf = strstr(c, "fill=\"") + 6;
    cr_expect(strncmp(strchr(cf, ')') - 4, ",255", 4) == 0, "%.30s", cf);
    cr_expect(!strstr(s, "<title>x ("));
    free(s);
    ana_flame_free(&m);
    ana_flame_free(&base);
    ana_flame_free(&head);
}

/* One <g class="f"> per frame of at least 1/10000 of the total; names escaped. */
Test(flame, svg_frames_and_escaping)
{
    static const fnode n[] = {
        { "all", 0, 0 }, { "a<&>'\"", 0, 0 }, { "wide", 1, 100000 }, { "thin", 1, 9 },
        { "bad\xff utf8", 0, 100 },
    };
    ana_flame f;
    mk(&f, ANA_FLAME_GPU_TIME, n, 5);
    char *s = capture(svg_untitled, &f);
    /* total 100109: "thin" (9) is under 1/10000 of it and is not drawn, the 4 others are */
    cr_expect_eq(count_of(s, "<g class=\"f\""), 4, "%s", s);
    cr_expect_eq(count_of(s, "<rect x="), 5); /* and the background */
    cr_expect(strstr(s, "<title>a&lt;&amp;&gt;&apos;&quot; ("));
    cr_expect(!strstr(s, "thin"));
    cr_expect(strstr(s, "bad\xef\xbf\xbd utf8"));
    cr_expect(!strchr(s, '\xff'));
    cr_expect(strstr(s, "data-total=\"100109\""));
    free(s);
    ana_flame_free(&f);
}

/* ---- a flame built from a trace ---- */

typedef struct trb {
    ana_trace *t;
    uint64_t now;
} trb;

static void add(trb *b, ana_record *r)
{
    b->now += 100;
    r->tid = 7;
    r->time_ns = b->now;
    ana_trace_add(b->t, r);
}

static void stack(trb *b, uint64_t id, const uint64_t *ip, uint32_t n)
{
    ana_record r = { .kind = ANA_K_STACK };
    r.u.stack = (ana_rec_stack){ .id = id, .frames = { ip, n } };
    add(b, &r);
}

static void module(trb *b, const char *path, uint64_t lo, uint64_t hi)
{
    ana_record r = { .kind = ANA_K_MODULE };
    r.u.module = (ana_rec_module){ .bias = lo, .lo = lo, .hi = hi,
                                   .path = { path, (uint32_t)strlen(path) } };
    add(b, &r);
}

static void kernel(trb *b, uint64_t id, const char *name)
{
    ana_record r = { .kind = ANA_K_KERNEL };
    r.u.kernel = (ana_rec_kernel){ .id = id, .host_fn = 0x1000 + id,
                                   .name = { name, (uint32_t)strlen(name) } };
    add(b, &r);
}

/* A launch of kernel k from stack st (corr), and the kernel as the GPU ran it for dur ns
 * (corr 0 in the activity: no host call). */
static void launch(trb *b, uint64_t k, uint64_t st, uint64_t corr, uint64_t gpu_corr, uint64_t dur)
{
    ana_record r = { .kind = ANA_K_LAUNCH };
    r.u.launch = (ana_rec_launch){ .api = 20, .kernel = k, .grid_x = 1, .grid_y = 1, .grid_z = 1,
                                   .block_x = 32, .block_y = 1, .block_z = 1, .stack = st,
                                   .corr = corr };
    add(b, &r);
    ana_record g = { .kind = ANA_K_GPU_KERNEL };
    g.u.gpu_kernel = (ana_rec_gpu_kernel){ .corr = gpu_corr, .dur_ns = dur, .kernel = k };
    add(b, &g);
}

static void h2d(trb *b, uint64_t st, uint64_t corr, uint64_t dur)
{
    ana_record r = { .kind = ANA_K_MEMCPY };
    r.u.memcpy = (ana_rec_memcpy){ .api = 31, .bytes = 4096, .dir = 1, .stack = st, .corr = corr };
    add(b, &r);
    ana_record g = { .kind = ANA_K_GPU_MEMCPY };
    g.u.gpu_memcpy = (ana_rec_gpu_memcpy){ .corr = corr, .dur_ns = dur, .bytes = 4096,
                                           .copy_kind = ANA_COPY_HTOD,
                                           .src_kind = ANA_MEMKIND_PAGEABLE,
                                           .dst_kind = ANA_MEMKIND_DEVICE };
    add(b, &g);
}

static void alloc(trb *b, uint64_t st, uint64_t ptr, uint64_t size)
{
    ana_record r = { .kind = ANA_K_ALLOC };
    r.u.alloc = (ana_rec_alloc){ .api = ANA_API_MALLOC, .ptr = ptr, .size = size, .stack = st };
    add(b, &r);
}

static void dfree(trb *b, uint64_t ptr)
{
    ana_record r = { .kind = ANA_K_FREE };
    r.u.free = (ana_rec_free){ .api = ANA_API_FREE, .ptr = ptr };
    add(b, &r);
}

/* Stacks (innermost first): 1 = main 0x4020 -> f 0x4010 -> the profiler's hook; 2 = main
 * 0x4020 -> libfoo.so+0x10. Kernels: "_Z6matmulPfi" (matmul(float*, int): contraction),
 * "softmax" (normalization). GPU: matmul 300 + 200 ns from stack 1, softmax 50 ns from
 * stack 2, softmax 7 ns with no host call, an H2D copy of 40 ns from stack 2. Memory:
 * 1000 bytes from stack 1 (freed), then 500 from stack 2 (never freed): peak 1500; a
 * 64-byte allocation only the driver saw, after the free. */
static ana_trace *sample_trace(void)
{
    trb b = { ana_trace_new("flame.anat", ANA_LOAD_ALL), 1000000 };
    module(&b, "/opt/x/libanatomist.so", 0x900000, 0x910000);
    module(&b, "/opt/app/libfoo.so", 0x700000, 0x710000);
    stack(&b, 1, (const uint64_t[]){ 0x900100, 0x4010, 0x4020 }, 3);
    stack(&b, 2, (const uint64_t[]){ 0x700010, 0x4020 }, 2);
    kernel(&b, 1, "_Z6matmulPfi");
    kernel(&b, 2, "softmax");
    launch(&b, 1, 1, 11, 11, 300);
    launch(&b, 1, 1, 12, 12, 200);
    launch(&b, 2, 2, 13, 13, 50);
    launch(&b, 2, 2, 14, 0, 7);
    h2d(&b, 2, 15, 40);
    alloc(&b, 1, 0x10000, 1000);
    alloc(&b, 2, 0x20000, 500);
    dfree(&b, 0x10000);
    ana_record g = { .kind = ANA_K_GPU_MEMORY };
    g.u.gpu_memory = (ana_rec_gpu_memory){ .op = 1, .mem_kind = ANA_MEMKIND_DEVICE,
                                           .address = 0x30000, .bytes = 64 };
    add(&b, &g);
    ana_trace_finish(b.t);
    return b.t;
}

static char *folded_of(int metric)
{
    ana_trace *t = sample_trace();
    ana_report_opts o = { .symbols = 0, .min_gap_ns = ANA_GPU_MIN_GAP_NS };
    ana_report r;
    ana_flame f;
    ana_report_build(&r, t, &o);
    ana_flame_build(&r, metric, &f);
    char *s = capture(ana_flame_write_folded, &f);
    ana_flame_free(&f);
    ana_report_free(&r);
    ana_trace_free(t);
    return s;
}

Test(flame, build_gpu_time)
{
    char *s = folded_of(ANA_FLAME_GPU_TIME);
    cr_expect_str_eq(s, "0x4020;0x4010;contraction;matmul 500\n"
                        "0x4020;libfoo.so+0x10;memory;memcpy HtoD (pageable) 40\n"
                        "0x4020;libfoo.so+0x10;normalization;softmax 50\n"
                        "[no host stack];normalization;softmax 7\n");
    free(s);
}

/* Program allocations without any use are unattributed, driver-only memory is
 * functionality (docs/memory-anatomy.md, "The rules, in order"). */
Test(flame, build_memory_metrics)
{
    char *s = folded_of(ANA_FLAME_PEAK_MEMORY);
    cr_expect_str_eq(s, "0x4020;0x4010;[unattributed] 1000\n0x4020;libfoo.so+0x10;[unattributed] 500\n");
    free(s);
    s = folded_of(ANA_FLAME_LEAKED_MEMORY);
    cr_expect_str_eq(s, "0x4020;libfoo.so+0x10;[unattributed] 500\n[driver];[functionality] 64\n");
    free(s);
    s = folded_of(ANA_FLAME_ALLOC_BYTES);
    cr_expect_str_eq(s, "0x4020;0x4010;[unattributed] 1000\n0x4020;libfoo.so+0x10;[unattributed] 500\n"
                        "[driver];[functionality] 64\n");
    free(s);
    s = folded_of(ANA_FLAME_ALLOC_COUNT);
    cr_expect_str_eq(s, "0x4020;0x4010;[unattributed] 1\n0x4020;libfoo.so+0x10;[unattributed] 1\n"
                        "[driver];[functionality] 1\n");
    free(s);
}

Test(flame, build_is_deterministic)
{
    for (int m = 0; m < ANA_FLAME_METRICS; m++) {
        char *a = folded_of(m), *b = folded_of(m);
        cr_expect_str_eq(a, b);
        free(a);
        free(b);
    }
}
