/* anatrace_dump — prints every record of a trace as one JSON object per line, in file
 * order, through format/reader.h:
 *
 *     {"kind":"ALLOC","tid":1234,"time":5678,"api":1,"ret":0,"ptr":...}
 *
 * Field names are those of docs/trace-format.md ("time" is the record's absolute time in
 * ns; SEGMENT records are not printed: "tid" carries them). Kinds the reader does not know
 * are skipped by the reader. The last line is {"end":"exit|truncated|torn"}. Exit status:
 * 0, or 2 with a message on stderr when the trace is corrupt or cannot be opened. For tests
 * and for looking into a trace by hand: `anatrace_dump t.anat | grep GPU_KERNEL`. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "reader.h"

/* The names of docs/trace-format.md's "Record kinds" table. */
static const char *const KIND_NAMES[ANA_K_COUNT] = {
    [ANA_K_SEGMENT] = "SEGMENT", [ANA_K_PROCESS] = "PROCESS", [ANA_K_THREAD] = "THREAD",
    [ANA_K_MODULE] = "MODULE", [ANA_K_STACK] = "STACK", [ANA_K_KERNEL] = "KERNEL",
    [ANA_K_ALLOC] = "ALLOC", [ANA_K_FREE] = "FREE", [ANA_K_MEMINFO] = "MEMINFO",
    [ANA_K_LAUNCH] = "LAUNCH", [ANA_K_MEMCPY] = "MEMCPY", [ANA_K_MEMSET] = "MEMSET",
    [ANA_K_DEVICE] = "DEVICE", [ANA_K_DROPPED] = "DROPPED", [ANA_K_END] = "END", [ANA_K_INFO] = "INFO",
    [ANA_K_GPU_KERNEL] = "GPU_KERNEL", [ANA_K_GPU_MEMCPY] = "GPU_MEMCPY", [ANA_K_GPU_MEMSET] = "GPU_MEMSET",
    [ANA_K_GPU_MEMORY] = "GPU_MEMORY", [ANA_K_GPU_POOL] = "GPU_POOL", [ANA_K_GPU_DROPPED] = "GPU_DROPPED",
    [ANA_K_VMM] = "VMM", [ANA_K_GEMM] = "GEMM", [ANA_K_COLL] = "COLL", [ANA_K_COMM] = "COMM",
    [ANA_K_LIBCALL] = "LIBCALL", [ANA_K_RANGE] = "RANGE", [ANA_K_LABEL] = "LABEL",
    [ANA_K_PTR_TABLE] = "PTR_TABLE", [ANA_K_PYCODE] = "PYCODE",
};

static void str(const char *key, ana_str s)
{
    printf(",\"%s\":\"", key);
    for (uint32_t i = 0; i < s.len; i++) {
        unsigned char c = (unsigned char)s.s[i];
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

static void u(const char *key, uint64_t v) { printf(",\"%s\":%" PRIu64, key, v); }
static void s(const char *key, int64_t v) { printf(",\"%s\":%" PRId64, key, v); }

/* An array of integers: "key":[v,...]. */
static void list(const char *key, ana_frames f)
{
    printf(",\"%s\":[", key);
    for (uint32_t i = 0; i < f.n; i++)
        printf(i ? ",%" PRIu64 : "%" PRIu64, f.ip[i]);
    putchar(']');
}

static void call_tail(uint64_t stack, uint64_t dur, uint64_t corr, uint64_t via, uint64_t lib, uint64_t call)
{
    u("stack", stack), u("dur_ns", dur), u("corr", corr), u("via", via), u("lib", lib), u("call", call);
}

static void fields(const ana_record *r)
{
    const ana_rec_gpu_kernel *k = &r->u.gpu_kernel;
    const ana_rec_gpu_memcpy *gc = &r->u.gpu_memcpy;
    const ana_rec_gpu_memset *gs = &r->u.gpu_memset;
    const ana_rec_gpu_memory *gm = &r->u.gpu_memory;
    const ana_rec_gpu_pool *gp = &r->u.gpu_pool;
    switch (r->kind) {
    case ANA_K_PROCESS:
        u("pid", r->u.process.pid), u("ppid", r->u.process.ppid), s("rank", r->u.process.rank);
        str("host", r->u.process.host), str("exe", r->u.process.exe);
        break;
    case ANA_K_THREAD: u("thread", r->u.thread.tid), str("name", r->u.thread.name); break;
    case ANA_K_MODULE: u("lo", r->u.module.lo), u("hi", r->u.module.hi), str("path", r->u.module.path); break;
    case ANA_K_STACK: {
        /* Python frames (bit 63) as [code id, instruction offset, entry]; native ones as counted */
        uint32_t npy = 0;
        for (uint32_t i = 0; i < r->u.stack.frames.n; i++)
            npy += (r->u.stack.frames.ip[i] & ANA_PYFRAME_BIT) != 0;
        u("id", r->u.stack.id), u("frames", r->u.stack.frames.n - npy);
        if (npy) {
            printf(",\"py\":[");
            for (uint32_t i = 0, k = 0; i < r->u.stack.frames.n; i++) {
                uint64_t w = r->u.stack.frames.ip[i];
                if (w & ANA_PYFRAME_BIT)
                    printf("%s[%llu,%llu,%d]", k++ ? "," : "", (unsigned long long)ANA_PYFRAME_CODE(w),
                           (unsigned long long)ANA_PYFRAME_OFFSET(w), (w & ANA_PYFRAME_ENTRY) != 0);
            }
            printf("]");
        }
        break;
    }
    case ANA_K_PYCODE: {
        const ana_rec_pycode *c = &r->u.pycode;
        u("id", c->id), u("version", c->version), u("first_line", c->first_line);
        str("qualname", c->qualname), str("file", c->file), u("linetable_bytes", c->linetable.len);
        break;
    }
    case ANA_K_KERNEL: u("id", r->u.kernel.id), u("host_fn", r->u.kernel.host_fn), str("name", r->u.kernel.name); break;
    case ANA_K_ALLOC: {
        const ana_rec_alloc *a = &r->u.alloc;
        u("api", a->api), s("ret", a->ret), u("ptr", a->ptr), u("size", a->size), s("device", a->device);
        u("stream", a->stream), u("flags", a->flags), call_tail(a->stack, a->dur_ns, a->corr, a->via, a->lib, a->call);
        break;
    }
    case ANA_K_FREE: {
        const ana_rec_free *f = &r->u.free;
        u("api", f->api), s("ret", f->ret), u("ptr", f->ptr), s("device", f->device), u("stream", f->stream);
        call_tail(f->stack, f->dur_ns, f->corr, f->via, f->lib, f->call);
        break;
    }
    case ANA_K_MEMINFO:
        s("device", r->u.meminfo.device), u("free", r->u.meminfo.free), u("total", r->u.meminfo.total);
        u("reason", r->u.meminfo.reason);
        break;
    case ANA_K_LAUNCH: {
        const ana_rec_launch *l = &r->u.launch;
        u("api", l->api), s("ret", l->ret), u("kernel", l->kernel), u("grid_x", l->grid_x), u("grid_y", l->grid_y);
        u("grid_z", l->grid_z), u("block_x", l->block_x), u("block_y", l->block_y), u("block_z", l->block_z);
        u("shmem", l->shmem), u("stream", l->stream), call_tail(l->stack, l->dur_ns, l->corr, l->via, l->lib, l->call);
        list("ptrs", l->ptrs), list("ptr_at", l->ptr_at);
        break;
    }
    case ANA_K_MEMCPY: {
        const ana_rec_memcpy *m = &r->u.memcpy;
        u("api", m->api), s("ret", m->ret), u("dst", m->dst), u("src", m->src), u("bytes", m->bytes);
        u("dir", m->dir), u("stream", m->stream), call_tail(m->stack, m->dur_ns, m->corr, m->via, m->lib, m->call);
        break;
    }
    case ANA_K_MEMSET: {
        const ana_rec_memset *m = &r->u.memset;
        u("api", m->api), s("ret", m->ret), u("ptr", m->ptr), s("value", m->value), u("bytes", m->bytes);
        u("stream", m->stream), call_tail(m->stack, m->dur_ns, m->corr, m->via, m->lib, m->call);
        break;
    }
    case ANA_K_DEVICE:
        s("ordinal", r->u.device.ordinal), str("name", r->u.device.name), u("total_mem", r->u.device.total_mem);
        break;
    case ANA_K_DROPPED:
        u("thread", r->u.dropped.tid), u("records", r->u.dropped.records), u("bytes", r->u.dropped.bytes);
        break;
    case ANA_K_END: u("reason", r->u.end.reason), str("detail", r->u.end.detail); break;
    case ANA_K_INFO: str("key", r->u.info.key), str("value", r->u.info.value); break;
    case ANA_K_GPU_KERNEL:
        u("corr", k->corr), u("dur_ns", k->dur_ns), u("kernel", k->kernel), s("device", k->device);
        u("context", k->context), u("stream", k->stream), u("grid_x", k->grid_x), u("grid_y", k->grid_y);
        u("grid_z", k->grid_z), u("block_x", k->block_x), u("block_y", k->block_y), u("block_z", k->block_z);
        u("shmem_static", k->shmem_static), u("shmem_dynamic", k->shmem_dynamic), u("regs", k->regs);
        u("graph", k->graph), u("graph_node", k->graph_node);
        break;
    case ANA_K_GPU_MEMCPY:
        u("corr", gc->corr), u("dur_ns", gc->dur_ns), u("bytes", gc->bytes), u("copy_kind", gc->copy_kind);
        u("src_kind", gc->src_kind), u("dst_kind", gc->dst_kind), u("flags", gc->flags), s("device", gc->device);
        u("context", gc->context), u("stream", gc->stream), s("src_device", gc->src_device);
        s("dst_device", gc->dst_device), u("graph", gc->graph), u("graph_node", gc->graph_node);
        break;
    case ANA_K_GPU_MEMSET:
        u("corr", gs->corr), u("dur_ns", gs->dur_ns), u("bytes", gs->bytes), u("value", gs->value);
        u("mem_kind", gs->mem_kind), u("flags", gs->flags), s("device", gs->device), u("context", gs->context);
        u("stream", gs->stream), u("graph", gs->graph), u("graph_node", gs->graph_node);
        break;
    case ANA_K_GPU_MEMORY:
        u("corr", gm->corr), u("op", gm->op), u("mem_kind", gm->mem_kind), u("address", gm->address);
        u("bytes", gm->bytes), s("device", gm->device), u("context", gm->context), u("stream", gm->stream);
        u("async", gm->async), u("pool_type", gm->pool_type), u("pool_address", gm->pool_address), u("pc", gm->pc);
        break;
    case ANA_K_GPU_POOL:
        u("corr", gp->corr), u("op", gp->op), u("pool_type", gp->pool_type), u("address", gp->address);
        u("size", gp->size), u("release_threshold", gp->release_threshold), u("utilized", gp->utilized);
        s("device", gp->device);
        break;
    case ANA_K_GPU_DROPPED: u("records", r->u.gpu_dropped.records), u("reason", r->u.gpu_dropped.reason); break;
    case ANA_K_VMM: {
        const ana_rec_vmm *v = &r->u.vmm;
        u("api", v->api), s("ret", v->ret), u("va", v->va), u("size", v->size), u("handle", v->handle);
        u("offset", v->offset), s("device", v->device), u("flags", v->flags);
        call_tail(v->stack, v->dur_ns, v->corr, v->via, v->lib, v->call);
        break;
    }
    case ANA_K_GEMM: {
        const ana_rec_gemm *g = &r->u.gemm;
        u("api", g->api), s("ret", g->ret), u("call", g->call), u("handle", g->handle), u("stream", g->stream);
        u("m", g->m), u("n", g->n), u("k", g->k), u("batch", g->batch), u("trans_a", g->trans_a);
        u("trans_b", g->trans_b), u("lda", g->lda), u("ldb", g->ldb), u("ldc", g->ldc), u("a_type", g->a_type);
        u("b_type", g->b_type), u("c_type", g->c_type), u("compute_type", g->compute_type);
        u("math_mode", g->math_mode), u("epilogue", g->epilogue), u("workspace", g->workspace);
        u("flops", g->flops), u("stack", g->stack), u("dur_ns", g->dur_ns);
        u("a", g->a), u("b", g->b), u("c", g->c), u("d", g->d), u("ws", g->ws);
        break;
    }
    case ANA_K_COLL: {
        const ana_rec_coll *c = &r->u.coll;
        u("api", c->api), s("ret", c->ret), u("call", c->call), u("comm", c->comm), u("stream", c->stream);
        u("count", c->count), u("dtype", c->dtype), u("bytes", c->bytes), u("op", c->op), s("peer", c->peer);
        u("sendbuff", c->sendbuff), u("recvbuff", c->recvbuff), u("group", c->group), u("seq", c->seq);
        u("stack", c->stack), u("dur_ns", c->dur_ns);
        break;
    }
    case ANA_K_COMM: {
        const ana_rec_comm *c = &r->u.comm;
        u("api", c->api), s("ret", c->ret), u("call", c->call), u("comm", c->comm), u("comm_id", c->comm_id);
        s("rank", c->rank), s("size", c->size), s("device", c->device), u("parent", c->parent);
        s("color", c->color), s("key", c->key), u("stack", c->stack), u("dur_ns", c->dur_ns);
        break;
    }
    case ANA_K_LIBCALL: {
        const ana_rec_libcall *c = &r->u.libcall;
        u("lib", c->lib), u("api", c->api), s("ret", c->ret), u("call", c->call), u("handle", c->handle);
        u("arg", c->arg), u("arg2", c->arg2), u("stack", c->stack), u("dur_ns", c->dur_ns);
        break;
    }
    case ANA_K_RANGE: {
        const ana_rec_range *g = &r->u.range;
        u("op", g->op), u("domain", g->domain), u("id", g->id), u("category", g->category), u("color", g->color);
        str("name", g->name);
        break;
    }
    case ANA_K_LABEL: {
        const ana_rec_label *l = &r->u.label;
        u("what", l->what), u("domain", l->domain), u("id", l->id), u("size", l->size), str("name", l->name);
        break;
    }
    case ANA_K_PTR_TABLE: {
        const ana_rec_ptr_table *p = &r->u.ptr_table;
        u("dst", p->dst), u("bytes", p->bytes), list("ptrs", p->ptrs), list("ptr_at", p->ptr_at);
        u("more", p->more);
        break;
    }
    default: break;
    }
}

int main(int argc, char **argv)
{
    if (argc != 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: anatrace_dump TRACE.anat\n");
        return 2;
    }
    ana_reader *rd;
    ana_error err;
    char msg[1024];
    if (ana_reader_open(argv[1], &rd, &err) < 0) {
        ana_error_format(&err, msg, sizeof(msg));
        fprintf(stderr, "anatrace_dump: %s\n", msg);
        return 2;
    }
    ana_record r;
    int rc;
    while ((rc = ana_reader_next(rd, &r, &err)) == 1) {
        const char *name = r.kind < ANA_K_COUNT ? KIND_NAMES[r.kind] : NULL;
        printf("{\"kind\":\"%s\",\"tid\":%" PRIu64 ",\"time\":%" PRIu64, name ? name : "?", r.tid, r.time_ns);
        fields(&r);
        printf("}\n");
    }
    if (rc < 0) {
        ana_error_format(&err, msg, sizeof(msg));
        fprintf(stderr, "anatrace_dump: %s\n", msg);
        ana_reader_close(rd);
        return 2;
    }
    ana_reader_stats st;
    ana_reader_get_stats(rd, &st);
    printf("{\"end\":\"%s\"}\n", ana_ended_name(st.ended));
    ana_reader_close(rd);
    return 0;
}
