/* flame.c — see flame.h: building the tree from a report, merging two trees, and the
 * folded and JSON writers (the SVG is flame_svg.c).
 *
 * The tree grows in creation order (a parent before its children) with a hash from
 * (parent, name) to the child, so adding a stack costs one lookup per frame; the finish
 * sums totals bottom-up and rewrites the nodes in preorder with siblings sorted by name
 * and names numbered in order of first use, so the result depends on the stacks and
 * values only, never on the order they were added in.
 * Part of views/: called by the commands (cli/) and by other views; calls analyses/ and
 * model/, never cli/. */
#include "views/flame.h"

#include "views/report_write.h"
#include "model/util.h"

#include <stdlib.h>
#include <string.h>

static const char *const ana_flame_metric_names[ANA_FLAME_METRICS] = {
    "gpu-time", "peak-memory", "leaked-memory", "alloc-bytes", "alloc-count",
};

int ana_flame_metric_parse(const char *s)
{
    for (int i = 0; s && i < ANA_FLAME_METRICS; i++)
        if (strcmp(s, ana_flame_metric_names[i]) == 0)
            return i;
    return -1;
}

const char *ana_flame_metric_name(int metric)
{
    return metric >= 0 && metric < ANA_FLAME_METRICS ? ana_flame_metric_names[metric] : "?";
}

const char *ana_flame_metric_unit(int metric)
{
    return metric == ANA_FLAME_GPU_TIME ? "ns" : metric == ANA_FLAME_ALLOC_COUNT ? "allocations"
                                                                                : "bytes";
}

/* ---- the tree under construction ---- */

typedef struct ana_fb {
    ana_flame *f;
    ana_u64map name_idx; /* FNV-1a of the name (+ probe) -> index into f->names */
    ana_u64map child;    /* parent << 32 | name -> node */
} ana_fb;

static uint32_t ana_fb_intern(ana_fb *b, const char *s)
{
    ana_flame *f = b->f;
    uint64_t v, k = ana_fnv1a(s, strlen(s), ANA_FNV1A_SEED);
    for (; ana_u64map_get(&b->name_idx, k, &v); k++) /* probe past other names' hashes */
        if (strcmp(f->names[v], s) == 0)
            return (uint32_t)v;
    ANA_GROW(f->names, f->cap_names, f->n_names + 1);
    f->names[f->n_names] = ana_xstrdup(s);
    ana_u64map_put(&b->name_idx, k, f->n_names); /* the first free key of the probe */
    return (uint32_t)f->n_names++;
}

static uint32_t ana_fb_child_id(ana_fb *b, uint32_t parent, uint32_t name)
{
    ana_flame *f = b->f;
    uint64_t key = (uint64_t)parent << 32 | name, v;
    if (ana_u64map_get(&b->child, key, &v))
        return (uint32_t)v;
    ANA_GROW(f->nodes, f->cap_nodes, f->n_nodes + 1);
    f->nodes[f->n_nodes] = (ana_flame_node){ .name = name, .parent = parent };
    ana_u64map_put(&b->child, key, f->n_nodes);
    return (uint32_t)f->n_nodes++;
}

static uint32_t ana_fb_child(ana_fb *b, uint32_t parent, const char *name)
{
    return ana_fb_child_id(b, parent, ana_fb_intern(b, name));
}

static void ana_fb_init(ana_fb *b, ana_flame *f, int metric)
{
    memset(f, 0, sizeof(*f));
    f->metric = metric;
    b->f = f;
    ana_u64map_init(&b->name_idx);
    ana_u64map_init(&b->child);
    uint32_t all = ana_fb_intern(b, "all");
    ANA_GROW(f->nodes, f->cap_nodes, 1);
    f->nodes[0] = (ana_flame_node){ .name = all, .parent = 0 };
    f->n_nodes = 1;
}

typedef struct ana_fb_name {
    const char *s;
    uint32_t id;
} ana_fb_name;

static int ana_fb_name_cmp(const void *a, const void *b)
{
    return strcmp(((const ana_fb_name *)a)->s, ((const ana_fb_name *)b)->s);
}

static int ana_fb_u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Rank of every name in strcmp order. */
static uint32_t *ana_fb_name_ranks(const ana_flame *f)
{
    ana_fb_name *v = ana_xcalloc(f->n_names + 1, sizeof(*v));
    uint32_t *rank = ana_xcalloc(f->n_names + 1, sizeof(*rank));
    for (size_t i = 0; i < f->n_names; i++)
        v[i] = (ana_fb_name){ f->names[i], (uint32_t)i };
    ana_sort(v, f->n_names, sizeof(*v), ana_fb_name_cmp);
    for (size_t i = 0; i < f->n_names; i++)
        rank[v[i].id] = (uint32_t)i;
    free(v);
    return rank;
}

/* Children of every node sorted by name: kid[first[p] .. first[p+1]) hold
 * rank << 32 | child. */
static uint64_t *ana_fb_children(const ana_flame *f, size_t **first_out)
{
    size_t n = f->n_nodes, *first = ana_xcalloc(n + 2, sizeof(size_t));
    uint64_t *kid = ana_xcalloc(n, sizeof(uint64_t));
    uint32_t *rank = ana_fb_name_ranks(f);
    for (size_t i = 1; i < n; i++)
        first[f->nodes[i].parent + 2]++;
    for (size_t p = 2; p < n + 2; p++)
        first[p] += first[p - 1];
    for (size_t i = 1; i < n; i++)
        kid[first[f->nodes[i].parent + 1]++] = (uint64_t)rank[f->nodes[i].name] << 32 | i;
    for (size_t p = 0; p < n; p++)
        ana_sort(kid + first[p], first[p + 1] - first[p], sizeof(uint64_t), ana_fb_u64_cmp);
    free(rank);
    *first_out = first;
    return kid;
}

/* Names renumbered in order of first use in the (preorder) nodes; unused ones freed. */
static void ana_fb_renumber_names(ana_flame *f)
{
    uint32_t *map = ana_xmalloc((f->n_names + 1) * sizeof(uint32_t));
    char **names = ana_xcalloc(f->n_names + 1, sizeof(char *));
    size_t n = 0;
    memset(map, 0xff, (f->n_names + 1) * sizeof(uint32_t));
    for (size_t i = 0; i < f->n_nodes; i++) {
        uint32_t id = f->nodes[i].name;
        if (map[id] == UINT32_MAX) {
            map[id] = (uint32_t)n;
            names[n++] = f->names[id];
        }
        f->nodes[i].name = map[id];
    }
    for (size_t i = 0; i < f->n_names; i++)
        if (map[i] == UINT32_MAX)
            free(f->names[i]);
    free(f->names);
    free(map);
    f->names = names;
    f->n_names = n;
    f->cap_names = f->n_names + 1;
}

/* Totals bottom-up (a child is always after its parent), then preorder. */
static void ana_fb_finish(ana_fb *b)
{
    ana_flame *f = b->f;
    size_t n = f->n_nodes, *first, top = 0, out = 0;
    for (size_t i = 0; i < n; i++) {
        f->nodes[i].total = f->nodes[i].self;
        f->nodes[i].base_total = f->nodes[i].base_self;
    }
    for (size_t i = n; i-- > 1;) {
        f->nodes[f->nodes[i].parent].total += f->nodes[i].total;
        f->nodes[f->nodes[i].parent].base_total += f->nodes[i].base_total;
    }
    uint64_t *kid = ana_fb_children(f, &first);
    ana_flame_node *pre = ana_xcalloc(n, sizeof(*pre));
    uint32_t *stack = ana_xcalloc(n, sizeof(uint32_t)), *newidx = ana_xcalloc(n, sizeof(uint32_t));
    stack[top++] = 0;
    while (top) {
        uint32_t i = stack[--top];
        newidx[i] = (uint32_t)out;
        pre[out] = f->nodes[i];
        pre[out++].parent = i ? newidx[f->nodes[i].parent] : 0;
        for (size_t k = first[i + 1]; k-- > first[i];) /* pushed last to first */
            stack[top++] = (uint32_t)kid[k];
    }
    free(f->nodes);
    f->nodes = pre;
    f->cap_nodes = n;
    f->total = pre[0].total;
    f->base_total = pre[0].base_total;
    ana_fb_renumber_names(f);
    free(kid);
    free(first);
    free(stack);
    free(newidx);
    ana_u64map_free(&b->name_idx);
    ana_u64map_free(&b->child);
}

void ana_flame_build_diff(const ana_report *base, const ana_report *head, int metric,
                          ana_flame *out)
{
    ana_flame side[2];
    ana_flame_build(base, metric, &side[0]);
    ana_flame_build(head, metric, &side[1]);
    ana_flame_merge(&side[0], &side[1], out);
    ana_flame_free(&side[0]);
    ana_flame_free(&side[1]);
}

void ana_flame_free(ana_flame *f)
{
    for (size_t i = 0; i < f->n_names; i++)
        free(f->names[i]);
    free(f->names);
    free(f->nodes);
    memset(f, 0, sizeof(*f));
}

/* ---- frames from a report ---- */

typedef struct ana_fctx {
    ana_fb b;
    const ana_report *r;
    ana_u64map stack_node; /* canonical stack id -> node of its innermost frame */
    uint32_t *kernel_name; /* per t->kernels index: interned leaf name, UINT32_MAX unset */
} ana_fctx;

/* The parameter list at the end of a demangled name, and what follows it (" const"),
 * cut: "ns::f(int, char) const" -> "ns::f". 0 when there is none. */
static size_t ana_flame_cut_params(const char *name, size_t n)
{
    size_t close = n;
    while (close > 0 && name[close - 1] != ')')
        close--;
    if (close == 0)
        return 0;
    for (size_t i = close; i < n; i++) /* only qualifiers may follow the list */
        if (name[i] == '(' || name[i] == '<' || name[i] == ':')
            return 0;
    int depth = 0;
    for (size_t i = close; i-- > 0;) {
        depth += name[i] == ')' ? 1 : name[i] == '(' ? -1 : 0;
        if (depth == 0)
            return i;
    }
    return 0;
}

/* Where the name starts after a template function's return type ("void f<int>" -> "f<int>"):
 * after the last space outside <>, () and {}; 0 for none, and for operators. */
static size_t ana_flame_skip_return(const char *name, size_t n)
{
    size_t start = 0;
    int depth = 0;
    if (strstr(name, "operator"))
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        depth += c == '<' || c == '(' || c == '{' ? 1 : c == '>' || c == ')' || c == '}' ? -1 : 0;
        if (c == ' ' && depth == 0)
            start = i + 1;
    }
    return start < n ? start : 0;
}

/* A frame's name as the flame shows it: a demangled name without its parameter list and
 * a template's return type ("void ns::f<int>(int*) const" -> "ns::f<int>"), a symbol
 * without its version ("__libc_start_main@@GLIBC_2.34" -> "__libc_start_main"). A name
 * that would become empty ("(unknown function)") stays whole. Uses buf (cap bytes). */
static const char *ana_flame_short(const char *name, char *buf, size_t cap)
{
    size_t n = strlen(name);
    const char *at = strchr(name, '@');
    if (n >= cap)
        return name;
    if (at && at > name)
        n = (size_t)(at - name);
    size_t cut = ana_flame_cut_params(name, n);
    if (cut)
        n = cut;
    memcpy(buf, name, n);
    buf[n] = 0;
    return buf + ana_flame_skip_return(buf, n);
}

/* Code nvcc generates for every <<<>>> launch (the kernel's device stub, its wrapper and
 * the runtime's launch helper): frames that say only "a kernel was launched", which the
 * leaves already say. The host function named after the kernel (the call site of the
 * launch) stays. */
static int ana_flame_is_launch_stub(const char *fn)
{
    static const char *const prefixes[] = { "__device_stub__", "__wrapper__device_stub_",
                                            "__cudaLaunchKernel_helper", "cudaLaunchKernel<",
                                            "__cudaLaunch" };
    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
        if (strncmp(fn, prefixes[i], strlen(prefixes[i])) == 0)
            return 1;
    return 0;
}

int ana_flame_is_python(const char *name)
{
    size_t n = strlen(name);
    const char *open = strrchr(name, '(');
    if (n < 8 || name[n - 1] != ')' || !open)
        return 0;
    const char *colon = strrchr(open, ':');
    if (!colon || colon - open < 4 || strncmp(colon - 3, ".py", 3) != 0)
        return 0;
    for (const char *d = colon + 1; d < name + n - 1; d++)
        if (*d < '0' || *d > '9')
            return 0;
    return 1;
}

/* The frames of one address appended under node: the function (or module+offset), then
 * the functions inlined at the call site; launch stubs are skipped. */
static uint32_t ana_flame_frame(ana_fctx *c, uint32_t node, const ana_frame *fr)
{
    char buf[1024];
    if (fr->python) /* "Block.forward (model.py:41)": flame_svg colours these apart */
        return ana_fb_child(&c->b, node, ana_sym_python_label(fr, buf, sizeof(buf)));
    if (!fr->function || !ana_flame_is_launch_stub(fr->function)) {
        const char *name = fr->function ? ana_flame_short(fr->function, buf, sizeof(buf))
                                        : ana_sym_frame_label(fr, buf, sizeof(buf));
        node = ana_fb_child(&c->b, node, name);
    }
    for (size_t i = 0; i < fr->n_inlined; i++)
        if (!ana_flame_is_launch_stub(fr->inlined[i]))
            node = ana_fb_child(&c->b, node, ana_flame_short(fr->inlined[i], buf, sizeof(buf)));
    return node;
}

/* The node of a host stack's innermost frame (outermost frame under the root). */
static uint32_t ana_flame_stack(ana_fctx *c, uint64_t stack)
{
    uint64_t v;
    if (ana_u64map_get(&c->stack_node, stack, &v))
        return (uint32_t)v;
    const uint64_t *ip;
    size_t n = stack == ANA_MEM_STACK_DRIVER ? 0 : ana_stacks_frames(&c->r->t->stacks, stack, &ip);
    uint32_t node = 0;
    for (size_t i = n; i-- > 0;) {
        const ana_frame *fr = ana_sym_lookup_inlined(c->r->sym, ip[i]);
        if (!ana_sym_is_profiler(fr))
            node = ana_flame_frame(c, node, fr);
    }
    if (stack == ANA_MEM_STACK_DRIVER)
        node = ana_fb_child(&c->b, 0, "[driver]");
    else if (node == 0)
        node = ana_fb_child(&c->b, 0, "[no host stack]");
    ana_u64map_put(&c->stack_node, stack, node);
    return node;
}

static uint32_t ana_flame_kernel_leaf(ana_fctx *c, const ana_trace_kernel *k)
{
    char buf[1024];
    size_t i = k ? (size_t)(k - c->r->t->kernels) : 0;
    if (k && c->kernel_name[i] != UINT32_MAX)
        return c->kernel_name[i];
    char *name = k ? ana_report_kernel_name(k) : ana_xstrdup("(unknown function)");
    uint32_t id = ana_fb_intern(&c->b, ana_flame_short(name, buf, sizeof(buf)));
    free(name);
    if (k)
        c->kernel_name[i] = id;
    return id;
}

/* "memcpy HtoD (pageable)", "memcpy DtoD", "memset". */
static const char *ana_flame_copy_leaf(const ana_gpu_lane *l, char *buf, size_t cap)
{
    if (l->type == ANA_GPU_MEMSET)
        return "memset";
    int dir = ana_gpu_dir_of(l->copy_kind), host = ana_gpu_host_of(l);
    if ((dir == ANA_DIR_HTOD || dir == ANA_DIR_DTOH) && host != ANA_HOST_OTHER)
        snprintf(buf, cap, "memcpy %s (%s)", ana_gpu_dir_names[dir], ana_gpu_host_names[host]);
    else
        snprintf(buf, cap, "memcpy %s", ana_gpu_dir_names[dir]);
    return buf;
}

static void ana_flame_gpu(ana_fctx *c)
{
    const ana_trace *t = c->r->t;
    char buf[64];
    ana_gpu_iter it;
    ana_trace_gpu_begin(t, &it);
    for (const ana_gpu_act *a; (a = ana_trace_gpu_next(&it));) {
        if (!ana_trace_wide(t, a->dur_w))
            continue;
        ana_api_call call;
        uint32_t node =
            ana_trace_call_by_corr(t, ana_trace_wide(t, a->corr_w), &call)
                ? ana_flame_stack(c, ana_trace_wide(t, ana_trace_call_site(t, &call)->stack_w))
                : ana_fb_child(&c->b, 0, "[no host stack]");
        if (ana_trace_gpu_lane(t, a)->type == ANA_GPU_KERNEL) {
            const ana_trace_kernel *k = ana_trace_kernel_by_id(t, ana_trace_wide(t, a->arg_w));
            const char *cls = k ? ana_report_kernel_class(c->r, k) : ana_class_name(ANA_CLASS_OTHER);
            node = ana_fb_child(&c->b, node, cls);
            node = ana_fb_child_id(&c->b, node, ana_flame_kernel_leaf(c, k));
        } else {
            node = ana_fb_child(&c->b, node, ana_class_name(ANA_CLASS_MEMORY));
            const char *leaf = ana_flame_copy_leaf(ana_trace_gpu_lane(t, a), buf, sizeof(buf));
            node = ana_fb_child(&c->b, node, leaf);
        }
        c->b.f->nodes[node].self += ana_trace_wide(t, a->dur_w);
    }
    ana_trace_gpu_end(&it);
}

static uint64_t ana_flame_alloc_value(const ana_report *r, int metric, size_t a)
{
    const ana_mem_life *l = &r->mem.lives[r->mcat.allocs[a].life];
    switch (metric) {
    case ANA_FLAME_PEAK_MEMORY:
        return r->mem.peak_bytes && ana_memcat_live_at(&r->mcat, &r->mem, a, r->mem.peak_idx)
                   ? l->size : 0;
    case ANA_FLAME_LEAKED_MEMORY: return l->f_idx == ANA_MEM_LIVE ? l->size : 0;
    case ANA_FLAME_ALLOC_BYTES: return l->size;
    default: return 1;
    }
}

static void ana_flame_memory(ana_fctx *c, int metric)
{
    const ana_report *r = c->r;
    char leaf[64];
    for (size_t a = 0; a < r->mcat.n_allocs; a++) {
        uint64_t v = ana_flame_alloc_value(r, metric, a);
        if (!v)
            continue;
        uint32_t node = ana_flame_stack(c, r->mem.lives[r->mcat.allocs[a].life].stack);
        snprintf(leaf, sizeof(leaf), "[%s]", ana_mcat_name(r->mcat.allocs[a].cat));
        node = ana_fb_child(&c->b, node, leaf);
        c->b.f->nodes[node].self += v;
    }
}

void ana_flame_build(const ana_report *r, int metric, ana_flame *out)
{
    ana_fctx c = { .r = r };
    ana_fb_init(&c.b, out, metric);
    ana_u64map_init(&c.stack_node);
    c.kernel_name = ana_xmalloc((r->t->n_kernels + 1) * sizeof(uint32_t));
    memset(c.kernel_name, 0xff, (r->t->n_kernels + 1) * sizeof(uint32_t));
    if (metric == ANA_FLAME_GPU_TIME)
        ana_flame_gpu(&c);
    else
        ana_flame_memory(&c, metric);
    ana_fb_finish(&c.b);
    ana_u64map_free(&c.stack_node);
    free(c.kernel_name);
}

/* ---- merging ---- */

/* Every node of src into b; its self into base_self (base) or self (head). */
static void ana_flame_merge_one(ana_fb *b, const ana_flame *src, int base)
{
    uint32_t *map = ana_xcalloc(src->n_nodes + 1, sizeof(uint32_t));
    for (size_t i = 1; i < src->n_nodes; i++) {
        const ana_flame_node *n = &src->nodes[i];
        map[i] = ana_fb_child(b, map[n->parent], src->names[n->name]);
        if (base)
            b->f->nodes[map[i]].base_self += n->self;
        else
            b->f->nodes[map[i]].self += n->self;
    }
    b->f->nodes[0].base_self += base && src->n_nodes ? src->nodes[0].self : 0;
    b->f->nodes[0].self += !base && src->n_nodes ? src->nodes[0].self : 0;
    free(map);
}

void ana_flame_merge(const ana_flame *base, const ana_flame *head, ana_flame *out)
{
    ana_fb b;
    ana_fb_init(&b, out, head->metric);
    out->diff = 1;
    ana_flame_merge_one(&b, base, 1);
    ana_flame_merge_one(&b, head, 0);
    ana_fb_finish(&b);
}

/* ---- writers ---- */

static void ana_flame_put_name(const char *s, FILE *out)
{
    for (; *s; s++)
        fputc(*s == ';' ? ':' : *s == '\n' || *s == '\r' ? ' ' : *s, out);
}

void ana_flame_write_folded(const ana_flame *f, FILE *out)
{
    uint32_t *path = ana_xcalloc(f->n_nodes + 1, sizeof(uint32_t));
    uint32_t *depth = ana_xcalloc(f->n_nodes + 1, sizeof(uint32_t));
    for (size_t i = 1; i < f->n_nodes; i++) {
        const ana_flame_node *n = &f->nodes[i];
        depth[i] = depth[n->parent] + 1;
        path[depth[i]] = n->name;
        if (!n->self && !(f->diff && n->base_self))
            continue;
        for (uint32_t d = 1; d <= depth[i]; d++) {
            if (d > 1)
                fputc(';', out);
            ana_flame_put_name(f->names[path[d]], out);
        }
        if (f->diff)
            fprintf(out, " %llu", (unsigned long long)n->base_self);
        fprintf(out, " %llu\n", (unsigned long long)n->self);
    }
    free(path);
    free(depth);
}

/* One node as a compact array (the caller keeps nodes' items on one line). */
static void ana_flame_json_node(const ana_flame *f, const ana_flame_node *n, ana_json *j)
{
    ana_json_arr_begin(j);
    ana_json_u64(j, n->name);
    ana_json_u64(j, n->parent);
    ana_json_u64(j, n->total);
    ana_json_u64(j, n->self);
    if (f->diff) {
        ana_json_u64(j, n->base_total);
        ana_json_u64(j, n->base_self);
    }
    ana_json_arr_end(j);
}

void ana_flame_write_json(const ana_flame *f, ana_json *j)
{
    ana_json_obj_begin(j);
    ana_json_kstr(j, "metric", ana_flame_metric_name(f->metric));
    ana_json_kstr(j, "unit", ana_flame_metric_unit(f->metric));
    ana_json_ku64(j, "total", f->total);
    if (f->diff)
        ana_json_ku64(j, "base_total", f->base_total);
    ana_json_key(j, "names");
    ana_json_arr_begin(j);
    for (size_t i = 0; i < f->n_names; i++)
        ana_json_str(j, f->names[i]);
    ana_json_arr_end(j);
    ana_json_key(j, "nodes");
    ana_json_arr_begin(j);
    int inline_depth = j->inline_depth;
    j->inline_depth = j->depth; /* a node a line */
    for (size_t i = 0; i < f->n_nodes; i++)
        ana_flame_json_node(f, &f->nodes[i], j);
    j->inline_depth = inline_depth;
    ana_json_arr_end(j);
    ana_json_obj_end(j);
}
