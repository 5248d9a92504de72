/* report_libs_text.c — the library sections of `anatomist report` for people: GEMMs by
 * GPU time with achieved and peak TFLOP/s, tensor-core alignment and math-mode findings,
 * NCCL collectives with bus bandwidth, NVTX ranges, and the memory section's lines by
 * library and NVTX memory region. Each section is printed only when the trace has the
 * records it reads, so a trace without library records reads as before. Same numbers
 * as the JSON.
 * Part of views/: called by the commands (cli/) and by other views; calls analyses/ and
 * model/, never cli/. */
#include "views/report_write.h"

#include "model/util.h"

#include <stdlib.h>
#include <string.h>

static double ana_rlt_pct(uint64_t num, uint64_t den)
{
    return den ? 100.0 * (double)num / (double)den : 0.0;
}

static const char *ana_rlt_or(const char *s, const char *dflt) { return s ? s : dflt; }

static void ana_rlt_gemm_row(FILE *o, const ana_report *r, const ana_gemm_row *g)
{
    const ana_gemm_shape *s = g->s;
    char tm[32], api[32], tf[16] = "-", pk[16] = "-", types[40], tr[3];
    ana_fmt_ns(g->gpu_ns, tm, sizeof(tm));
    ana_report_gemm_trans(s, tr);
    if (g->gpu_ns) {
        double t = (double)g->timed_flops / (double)g->gpu_ns / 1000.0;
        snprintf(tf, sizeof(tf), "%.1f", t);
        if (g->peak_tflops > 0)
            snprintf(pk, sizeof(pk), "%.1f%%", 100.0 * t / g->peak_tflops);
    }
    snprintf(types, sizeof(types), "%s/%s/%s", ana_rlt_or(ana_cuda_type_name(s->a_type), "?"),
             ana_rlt_or(ana_cuda_type_name(s->b_type), "?"),
             ana_rlt_or(ana_cuda_type_name(s->c_type), "?"));
    fprintf(o, "  %10s %5.1f%% %7llu %6llu %6llu %6llu %5llu %-2s %-22s %-14s %-4s %7s %6s  %s\n",
            tm, ana_rlt_pct(g->gpu_ns, r->lc.kernel_ns), (unsigned long long)s->count,
            (unsigned long long)s->m, (unsigned long long)s->n, (unsigned long long)s->k,
            (unsigned long long)s->batch, tr, types,
            ana_rlt_or(ana_compute_type_name(s->compute_type), "?"), ana_prec_name(s->prec), tf,
            pk, ana_report_api_name(s->api, api, sizeof(api)));
}

static void ana_rlt_gemms(FILE *o, const ana_report *r)
{
    const ana_libcalls *lc = &r->lc;
    char tm[32];
    size_t n = ana_report_limit(r, lc->n_gemms);
    ana_fmt_ns(lc->gemm_gpu_ns, tm, sizeof(tm));
    fprintf(o, "\nGEMMs (cuBLAS, cuBLASLt): %llu call%s in %zu shape%s, %s on the GPU "
               "(%.1f%% of kernel time)",
            (unsigned long long)lc->gemm_calls, lc->gemm_calls == 1 ? "" : "s", lc->n_gemms,
            lc->n_gemms == 1 ? "" : "s", tm, ana_rlt_pct(lc->gemm_gpu_ns, lc->kernel_ns));
    if (lc->gemm_gpu_ns)
        fprintf(o, ", %.1f TFLOP/s achieved",
                (double)lc->gemm_timed_flops / (double)lc->gemm_gpu_ns / 1000.0);
    fprintf(o, "\n  %10s %6s %7s %6s %6s %6s %5s %-2s %-16s %-14s %-4s %7s %6s  %s\n", "GPU time",
            "share", "calls", "m", "n", "k", "batch", "tr", "types A/B/C", "compute", "prec",
            "TFLOP/s", "peak", "api");
    for (size_t i = 0; i < n; i++)
        ana_rlt_gemm_row(o, r, &lc->gemms[i]);
    if (n < lc->n_gemms)
        fprintf(o, "  ... %zu more (use --top)\n", lc->n_gemms - n);
}

/* A GEMM finding's heading, "\n<what>: N calls in M shapes, T on the GPU" (no newline at
 * its end); 0, printing nothing, when no shape has the finding. */
static int ana_rlt_finding(FILE *o, const char *what, uint64_t calls, uint64_t shapes,
                           uint64_t gpu_ns)
{
    char tm[32];
    if (!shapes)
        return 0;
    ana_fmt_ns(gpu_ns, tm, sizeof(tm));
    fprintf(o, "\n%s: %llu call%s in %llu shape%s, %s on the GPU", what,
            (unsigned long long)calls, calls == 1 ? "" : "s", (unsigned long long)shapes,
            shapes == 1 ? "" : "s", tm);
    return 1;
}

static void ana_rlt_alignment(FILE *o, const ana_report *r)
{
    const ana_libcalls *lc = &r->lc;
    char tm[32];
    if (!ana_rlt_finding(o, "GEMMs not aligned for tensor cores", lc->misaligned_calls,
                         lc->misaligned_shapes, lc->misaligned_gpu_ns))
        return;
    fputc('\n', o);
    for (size_t i = 0; i < lc->n_gemms; i++) {
        const ana_gemm_row *g = &lc->gemms[i];
        if (!g->misaligned)
            continue;
        ana_fmt_ns(g->gpu_ns, tm, sizeof(tm));
        char dims[8] = "";
        for (int d = 0; d < 3; d++)
            if (g->misaligned & (1 << d))
                snprintf(dims + strlen(dims), sizeof(dims) - strlen(dims), "%s%c",
                         dims[0] ? "," : "", "mnk"[d]);
        fprintf(o, "  %-4s m=%llu n=%llu k=%llu: %s not a multiple of %u; %llu call%s, %s\n",
                ana_prec_name(g->s->prec), (unsigned long long)g->s->m,
                (unsigned long long)g->s->n, (unsigned long long)g->s->k, dims, g->multiple,
                (unsigned long long)g->s->count, g->s->count == 1 ? "" : "s", tm);
    }
    fprintf(o, "  advice: pad the hidden size / batch × sequence to a multiple of 8 (16 for fp8, "
               "4 for tf32)\n");
}

static void ana_rlt_math(FILE *o, const ana_report *r)
{
    const ana_libcalls *lc = &r->lc;
    if (!ana_rlt_finding(o, "fp32 GEMMs without TF32", lc->fp32_calls, lc->fp32_shapes,
                         lc->fp32_gpu_ns))
        return;
    if (lc->fp32_peak > 0 && lc->tf32_peak > 0)
        fprintf(o, "; TF32's peak is %.1fx fp32's on this device (%.1f vs %.1f TFLOP/s)",
                lc->tf32_peak / lc->fp32_peak, lc->tf32_peak, lc->fp32_peak);
    fprintf(o, "\n  advice: cublasSetMathMode(handle, CUBLAS_TF32_TENSOR_OP_MATH); in PyTorch "
               "torch.backends.cuda.matmul.allow_tf32 = True\n");
}

static void ana_rlt_coll_row(FILE *o, const ana_coll_row *c)
{
    char tm[32], b[32], ranks[24] = "?", ap[40], alg[16] = "-", bus[16] = "-";
    double algbw = ana_nccl_algbw(c->api, c->bytes, c->ranks, c->count, c->gpu_ns);
    double factor = ana_nccl_busbw_factor(c->api, c->ranks);
    ana_fmt_ns(c->gpu_ns, tm, sizeof(tm));
    ana_fmt_bytes(c->bytes, b, sizeof(b));
    if (c->ranks > 0)
        snprintf(ranks, sizeof(ranks), "%lld", (long long)c->ranks);
    if (c->algorithm[0] || c->protocol[0]) /* kernel names without them: "-" */
        snprintf(ap, sizeof(ap), "%s/%s", c->algorithm[0] ? c->algorithm : "?",
                 c->protocol[0] ? c->protocol : "?");
    else
        snprintf(ap, sizeof(ap), "-");
    if (algbw >= 0)
        snprintf(alg, sizeof(alg), "%.2f", algbw);
    if (algbw >= 0 && factor >= 0)
        snprintf(bus, sizeof(bus), "%.2f", algbw * factor);
    fprintf(o, "  %10s %7llu %-13s %-7s %11s %5s %-14s %8s %8s  0x%016llx\n", tm,
            (unsigned long long)c->count, ana_nccl_op_name(c->api),
            ana_rlt_or(ana_nccl_type_name(c->dtype), "?"), b, ranks, ap, alg, bus,
            (unsigned long long)c->comm_id);
}

static void ana_rlt_colls(FILE *o, const ana_report *r)
{
    const ana_libcalls *lc = &r->lc;
    char tm[32], api[32];
    size_t n = ana_report_limit(r, lc->n_colls);
    if (!lc->coll_calls && !lc->n_comms)
        return;
    ana_fmt_ns(lc->coll_gpu_ns, tm, sizeof(tm));
    fprintf(o, "\nNCCL collectives: %llu call%s, %s on the GPU (%.1f%% of kernel time)\n",
            (unsigned long long)lc->coll_calls, lc->coll_calls == 1 ? "" : "s", tm,
            ana_rlt_pct(lc->coll_gpu_ns, lc->kernel_ns));
    if (lc->n_colls)
        fprintf(o, "  %10s %7s %-13s %-7s %11s %5s %-14s %8s %8s  %s\n", "GPU time", "calls",
                "op", "dtype", "bytes", "ranks", "algo/proto", "algbw", "busbw", "communicator");
    for (size_t i = 0; i < n; i++)
        ana_rlt_coll_row(o, &lc->colls[i]);
    if (n < lc->n_colls)
        fprintf(o, "  ... %zu more (use --top)\n", lc->n_colls - n);
    if (lc->n_colls)
        fprintf(o, "  (GB/s as nccl-tests defines algbw and busbw, over the mean GPU time per "
                   "call)\n");
    for (size_t i = 0; i < lc->n_comms; i++) {
        const ana_comm_row *c = &lc->comms[i];
        fprintf(o, "  communicator 0x%016llx: rank %lld of %lld on device %lld (%s",
                (unsigned long long)c->c->comm_id, (long long)c->c->rank, (long long)c->c->size,
                (long long)c->c->device, ana_report_api_name(c->c->api, api, sizeof(api)));
        if (c->parent)
            fprintf(o, " of 0x%016llx, color %lld", (unsigned long long)c->parent->comm_id,
                    (long long)c->c->color);
        fprintf(o, "), %llu collective%s\n", (unsigned long long)c->colls,
                c->colls == 1 ? "" : "s");
    }
}

static void ana_rlt_range_name(FILE *o, const ana_report *r, const ana_range_row *g)
{
    const char *domain = ana_libs_domain_name(&r->t->libs, g->domain);
    const char *name = ana_libs_str(&r->t->libs, g->name);
    if (domain)
        fprintf(o, "%s:", domain);
    fprintf(o, "%s", name[0] ? name : "(unnamed)");
}

static void ana_rlt_ranges(FILE *o, const ana_report *r)
{
    const ana_nvtx *n = &r->nvtx;
    size_t shown = ana_report_limit(r, n->n_rows);
    char h[32], g[32];
    if (!r->t->libs.n_ranges)
        return;
    fprintf(o, "\nNVTX ranges (host time: push to pop; GPU time: kernels launched inside)\n"
               "  %12s %12s %8s %5s  %s\n", "host time", "GPU time", "count", "depth", "name");
    for (size_t i = 0; i < shown; i++) {
        const ana_range_row *w = &n->rows[i];
        ana_fmt_ns(w->host_ns, h, sizeof(h));
        ana_fmt_ns(w->gpu_ns, g, sizeof(g));
        fprintf(o, "  %12s %12s %8llu ", h, g, (unsigned long long)w->count);
        if (w->kind == ANA_RANGE_PUSH)
            fprintf(o, "%5u  %*s", w->depth, (int)(2 * (w->depth < 8 ? w->depth : 8)), "");
        else
            fprintf(o, "%5s  ", "s/e");
        ana_rlt_range_name(o, r, w);
        fputc('\n', o);
    }
    if (shown < n->n_rows)
        fprintf(o, "  ... %zu more (use --top)\n", n->n_rows - shown);
    for (size_t i = 0; i < ana_report_limit(r, n->n_marks); i++) {
        fprintf(o, "  mark %llu x ", (unsigned long long)n->marks[i].count);
        ana_rlt_range_name(o, r, &n->marks[i]);
        fputc('\n', o);
    }
    if (n->unmatched_pops || n->unclosed_pushes || n->unmatched_ends || n->unclosed_starts)
        fprintf(o, "  unmatched: %llu pop%s without a push, %llu push%s never popped, %llu end%s "
                   "without a start, %llu start%s never ended\n",
                (unsigned long long)n->unmatched_pops, n->unmatched_pops == 1 ? "" : "s",
                (unsigned long long)n->unclosed_pushes, n->unclosed_pushes == 1 ? "" : "es",
                (unsigned long long)n->unmatched_ends, n->unmatched_ends == 1 ? "" : "s",
                (unsigned long long)n->unclosed_starts, n->unclosed_starts == 1 ? "" : "s");
}

void ana_report_libs_text(const ana_report *r, FILE *o)
{
    if (r->t->libs.n_gemms || r->lc.n_gemms) {
        ana_rlt_gemms(o, r);
        ana_rlt_alignment(o, r);
        ana_rlt_math(o, r);
    }
    ana_rlt_colls(o, r);
    ana_rlt_ranges(o, r);
}

/* "cuBLAS 1.00 MiB, none 3.00 MiB" for the libraries with bytes. */
static void ana_rlt_libs(FILE *o, const uint64_t *bytes)
{
    char b[32];
    int any = 0;
    for (size_t lib = 0; lib < ANA_MEM_LIBS; lib++) {
        const char *name = lib ? ana_lib_name((uint32_t)lib) : "none";
        if (!bytes[lib])
            continue;
        ana_fmt_bytes(bytes[lib], b, sizeof(b));
        fprintf(o, "%s%s %s", any++ ? ", " : "", name ? name : "other", b);
    }
    if (!any)
        fprintf(o, "nothing");
}

void ana_report_libs_memory_text(const ana_report *r, FILE *o)
{
    const ana_mem_result *m = &r->mem;
    const ana_libs *l = &r->t->libs;
    char b[32], sz[32];
    int libs = 0;
    for (size_t lib = 1; lib < ANA_MEM_LIBS; lib++)
        libs |= m->peak_by_lib[lib] || m->end_by_lib[lib];
    if (libs) {
        fprintf(o, "  by library         at the peak: ");
        ana_rlt_libs(o, m->peak_by_lib);
        fprintf(o, "; at the end: ");
        ana_rlt_libs(o, m->end_by_lib);
        fputc('\n', o);
    }
    for (size_t i = 0; i < l->n_regions; i++) {
        ana_fmt_bytes(r->regions[i].peak_bytes, b, sizeof(b));
        ana_fmt_bytes(r->regions[i].size, sz, sizeof(sz));
        fprintf(o, "  region \"%s\" (%s at 0x%llx): %s in %llu allocation%s at the peak\n",
                ana_libs_str(l, l->regions[i].name), sz,
                (unsigned long long)r->regions[i].address, b,
                (unsigned long long)r->regions[i].peak_count,
                r->regions[i].peak_count == 1 ? "" : "s");
    }
}
