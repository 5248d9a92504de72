/* report_libs_json.c — the library members of `anatomist report --json`
 * (docs/report-schema.md): `libraries`, `gemms`, `gemm_alignment`, `findings`,
 * `collectives`, `communicators`, `ranges`, `marks`, `ranges_unmatched`, and the
 * memory section's `by_library`, `by_library_at_end` and `labels`.
 * Part of views/: called by the commands (cli/) and by other views; calls analyses/ and
 * model/, never cli/. */
#include "views/report_write.h"

#include "model/util.h"

#include <stdio.h>
#include <stdlib.h>

static void ana_rlj_ratio(ana_json *j, const char *key, double num, double den)
{
    ana_json_key(j, key);
    if (den > 0)
        ana_json_dbl(j, num / den);
    else
        ana_json_null(j);
}

static void ana_rlj_hex(ana_json *j, const char *key, uint64_t v)
{
    char b[24];
    snprintf(b, sizeof(b), "0x%016llx", (unsigned long long)v);
    ana_json_key(j, key);
    ana_json_str(j, b);
}

/* "NT": cublasOperation_t of A and B (0 N, 1 T, 2 C). */
void ana_report_gemm_trans(const ana_gemm_shape *s, char out[3])
{
    static const char ops[] = "NTC";
    out[0] = s->trans_a < 3 ? ops[s->trans_a] : '?';
    out[1] = s->trans_b < 3 ? ops[s->trans_b] : '?';
    out[2] = 0;
}

static void ana_rlj_shape_key(ana_json *j, const ana_gemm_shape *s)
{
    char buf[32], tr[3];
    ana_report_gemm_trans(s, tr);
    ana_json_kstr(j, "api", ana_report_api_name(s->api, buf, sizeof(buf)));
    ana_json_ku64(j, "m", s->m);
    ana_json_ku64(j, "n", s->n);
    ana_json_ku64(j, "k", s->k);
    ana_json_ku64(j, "batch", s->batch);
    ana_json_kstr(j, "trans", tr);
    ana_json_kstr(j, "a_type", ana_cuda_type_name(s->a_type));
    ana_json_kstr(j, "b_type", ana_cuda_type_name(s->b_type));
    ana_json_kstr(j, "c_type", ana_cuda_type_name(s->c_type));
    ana_json_kstr(j, "compute_type", ana_compute_type_name(s->compute_type));
    ana_json_kstr(j, "precision", ana_prec_name(s->prec));
}

static void ana_rlj_gemm(ana_json *j, const ana_gemm_row *g)
{
    double tflops = g->gpu_ns ? (double)g->timed_flops / (double)g->gpu_ns / 1000.0 : -1.0;
    ana_json_obj_begin(j);
    ana_rlj_shape_key(j, g->s);
    ana_json_ku64(j, "count", g->s->count);
    ana_json_ku64(j, "flops", g->s->flops);
    ana_json_ku64(j, "gpu_ns", g->gpu_ns);
    ana_json_ku64(j, "kernels", g->kernels);
    ana_json_ku64(j, "timed_calls", g->timed_calls);
    ana_json_kdbl_known(j, "tflops", tflops);
    ana_json_key(j, "device");
    g->device >= 0 ? ana_json_i64(j, g->device) : ana_json_null(j);
    ana_json_kdbl_known(j, "peak_tflops", g->peak_tflops);
    ana_json_kdbl_known(j, "peak_pct", tflops >= 0 && g->peak_tflops > 0
                                           ? 100.0 * tflops / g->peak_tflops : -1.0);
    ana_json_obj_end(j);
}

static void ana_rlj_alignment(ana_json *j, const ana_report *r)
{
    static const char *const dims[] = { "m", "n", "k" };
    ana_json_key(j, "gemm_alignment");
    ana_json_arr_begin(j);
    for (size_t i = 0; i < r->lc.n_gemms; i++) {
        const ana_gemm_row *g = &r->lc.gemms[i];
        if (!g->misaligned)
            continue;
        ana_json_obj_begin(j);
        ana_rlj_shape_key(j, g->s);
        ana_json_ku64(j, "multiple", g->multiple);
        ana_json_key(j, "misaligned");
        ana_json_arr_begin(j);
        for (int d = 0; d < 3; d++)
            if (g->misaligned & (1 << d))
                ana_json_str(j, dims[d]);
        ana_json_arr_end(j);
        ana_json_ku64(j, "count", g->s->count);
        ana_json_ku64(j, "gpu_ns", g->gpu_ns);
        ana_json_obj_end(j);
    }
    ana_json_arr_end(j);
}

static void ana_rlj_findings(ana_json *j, const ana_report *r)
{
    const ana_libcalls *lc = &r->lc;
    ana_json_key(j, "findings");
    ana_json_arr_begin(j);
    if (lc->fp32_shapes) {
        ana_json_obj_begin(j);
        ana_json_kstr(j, "id", "fp32_without_tf32");
        ana_json_ku64(j, "count", lc->fp32_calls);
        ana_json_ku64(j, "shapes", lc->fp32_shapes);
        ana_json_ku64(j, "gpu_ns", lc->fp32_gpu_ns);
        ana_json_kdbl_known(j, "peak_fp32_tflops", lc->fp32_peak);
        ana_json_kdbl_known(j, "peak_tf32_tflops", lc->tf32_peak);
        ana_json_kdbl_known(j, "peak_ratio", lc->fp32_peak > 0 && lc->tf32_peak > 0
                                                 ? lc->tf32_peak / lc->fp32_peak : -1.0);
        ana_json_kstr(j, "advice", "allow TF32 for fp32 GEMMs: cublasSetMathMode(handle, "
                                   "CUBLAS_TF32_TENSOR_OP_MATH), or in PyTorch "
                                   "torch.backends.cuda.matmul.allow_tf32 = True");
        ana_json_obj_end(j);
    }
    if (lc->misaligned_shapes) {
        ana_json_obj_begin(j);
        ana_json_kstr(j, "id", "gemm_misaligned");
        ana_json_ku64(j, "count", lc->misaligned_calls);
        ana_json_ku64(j, "shapes", lc->misaligned_shapes);
        ana_json_ku64(j, "gpu_ns", lc->misaligned_gpu_ns);
        ana_json_kstr(j, "advice", "pad the hidden size / batch × sequence to a multiple of 8 "
                                   "(16 for fp8, 4 for tf32) so the GEMMs run on tensor cores "
                                   "at full speed");
        ana_json_obj_end(j);
    }
    ana_json_arr_end(j);
}

static void ana_rlj_coll(ana_json *j, const ana_coll_row *c)
{
    double algbw = ana_nccl_algbw(c->api, c->bytes, c->ranks, c->count, c->gpu_ns);
    double factor = ana_nccl_busbw_factor(c->api, c->ranks);
    ana_json_obj_begin(j);
    ana_json_kstr(j, "op", ana_nccl_op_name(c->api));
    ana_json_kstr(j, "dtype", ana_nccl_type_name(c->dtype));
    ana_json_ku64(j, "bytes", c->bytes);
    ana_rlj_hex(j, "comm_id", c->comm_id);
    ana_json_key(j, "ranks");
    c->ranks > 0 ? ana_json_i64(j, c->ranks) : ana_json_null(j);
    ana_json_ku64(j, "count", c->count);
    ana_json_ku64(j, "grouped", c->grouped);
    ana_json_ku64(j, "gpu_ns", c->gpu_ns);
    ana_json_kstr(j, "algorithm", c->algorithm[0] ? c->algorithm : NULL);
    ana_json_kstr(j, "protocol", c->protocol[0] ? c->protocol : NULL);
    ana_json_kdbl_known(j, "algbw_gbps", algbw);
    ana_json_kdbl_known(j, "busbw_gbps", algbw >= 0 && factor >= 0 ? algbw * factor : -1.0);
    ana_json_obj_end(j);
}

static void ana_rlj_comms(ana_json *j, const ana_report *r)
{
    char buf[32];
    ana_json_key(j, "communicators");
    ana_json_arr_begin(j);
    for (size_t i = 0; i < r->lc.n_comms; i++) {
        const ana_comm_row *c = &r->lc.comms[i];
        int split = c->c->api == ANA_API_NCCL_COMM_SPLIT;
        ana_json_obj_begin(j);
        ana_rlj_hex(j, "comm_id", c->c->comm_id);
        ana_json_ki64(j, "rank", c->c->rank);
        ana_json_key(j, "size");
        c->c->size > 0 ? ana_json_i64(j, c->c->size) : ana_json_null(j);
        ana_json_ki64(j, "device", c->c->device);
        ana_json_kstr(j, "created_by", ana_report_api_name(c->c->api, buf, sizeof(buf)));
        if (c->parent)
            ana_rlj_hex(j, "parent_comm_id", c->parent->comm_id);
        else
            ana_json_kstr(j, "parent_comm_id", NULL);
        ana_json_key(j, "color");
        split ? ana_json_i64(j, c->c->color) : ana_json_null(j);
        ana_json_key(j, "key");
        split ? ana_json_i64(j, c->c->key) : ana_json_null(j);
        ana_json_ku64(j, "collectives", c->colls);
        ana_json_ku64(j, "gpu_ns", c->gpu_ns);
        ana_json_obj_end(j);
    }
    ana_json_arr_end(j);
}

static void ana_rlj_range(ana_json *j, const ana_report *r, const ana_range_row *g)
{
    const ana_libs *l = &r->t->libs;
    ana_json_obj_begin(j);
    if (g->kind != ANA_RANGE_MARK)
        ana_json_kstr(j, "kind", g->kind == ANA_RANGE_PUSH ? "push" : "start");
    ana_json_kstr(j, "domain", ana_libs_domain_name(l, g->domain));
    ana_json_kstr(j, "name", ana_libs_str(l, g->name));
    ana_json_ku64(j, "count", g->count);
    if (g->kind != ANA_RANGE_MARK) {
        ana_json_key(j, "depth");
        g->kind == ANA_RANGE_PUSH ? ana_json_u64(j, g->depth) : ana_json_null(j);
        ana_json_ku64(j, "host_ns", g->host_ns);
        ana_json_ku64(j, "gpu_ns", g->gpu_ns);
    }
    ana_json_obj_end(j);
}

static void ana_rlj_ranges(ana_json *j, const ana_report *r)
{
    const ana_nvtx *n = &r->nvtx;
    ana_json_key(j, "ranges");
    ana_json_arr_begin(j);
    for (size_t i = 0; i < ana_report_limit(r, n->n_rows); i++)
        ana_rlj_range(j, r, &n->rows[i]);
    ana_json_arr_end(j);
    ana_json_key(j, "marks");
    ana_json_arr_begin(j);
    for (size_t i = 0; i < ana_report_limit(r, n->n_marks); i++)
        ana_rlj_range(j, r, &n->marks[i]);
    ana_json_arr_end(j);
    ana_json_key(j, "ranges_unmatched");
    ana_json_obj_begin(j);
    ana_json_ku64(j, "pops", n->unmatched_pops);
    ana_json_ku64(j, "pushes", n->unclosed_pushes);
    ana_json_ku64(j, "ends", n->unmatched_ends);
    ana_json_ku64(j, "starts", n->unclosed_starts);
    ana_json_obj_end(j);
}

static void ana_rlj_totals(ana_json *j, const ana_report *r)
{
    const ana_libcalls *lc = &r->lc;
    ana_json_key(j, "libraries");
    ana_json_obj_begin(j);
    ana_json_ku64(j, "gemm_calls", lc->gemm_calls);
    ana_json_ku64(j, "gemm_shapes", lc->n_gemms);
    ana_json_ku64(j, "gemm_kernels", lc->gemm_kernels);
    ana_json_ku64(j, "gemm_gpu_ns", lc->gemm_gpu_ns);
    ana_rlj_ratio(j, "gemm_share", (double)lc->gemm_gpu_ns, (double)lc->kernel_ns);
    ana_json_ku64(j, "gemm_flops", lc->gemm_flops);
    ana_json_kdbl_known(j, "gemm_tflops", lc->gemm_gpu_ns ? (double)lc->gemm_timed_flops /
                                                                (double)lc->gemm_gpu_ns / 1000.0
                                                          : -1.0);
    ana_json_ku64(j, "collective_calls", lc->coll_calls);
    ana_json_ku64(j, "collective_kinds", lc->n_colls);
    ana_json_ku64(j, "collective_gpu_ns", lc->coll_gpu_ns);
    ana_rlj_ratio(j, "collective_share", (double)lc->coll_gpu_ns, (double)lc->kernel_ns);
    ana_json_ku64(j, "collectives_unlinked", lc->coll_unlinked);
    ana_json_ku64(j, "kernel_ns", lc->kernel_ns);
    ana_json_ku64(j, "range_kinds", r->nvtx.n_rows);
    ana_json_obj_end(j);
}

void ana_report_libs_json(const ana_report *r, ana_json *j)
{
    const ana_libcalls *lc = &r->lc;
    ana_rlj_totals(j, r);
    ana_json_key(j, "gemms");
    ana_json_arr_begin(j);
    for (size_t i = 0; i < ana_report_limit(r, lc->n_gemms); i++)
        ana_rlj_gemm(j, &lc->gemms[i]);
    ana_json_arr_end(j);
    ana_rlj_alignment(j, r);
    ana_rlj_findings(j, r);
    ana_json_key(j, "collectives");
    ana_json_arr_begin(j);
    for (size_t i = 0; i < ana_report_limit(r, lc->n_colls); i++)
        ana_rlj_coll(j, &lc->colls[i]);
    ana_json_arr_end(j);
    ana_rlj_comms(j, r);
    ana_rlj_ranges(j, r);
}

/* none, cuBLAS, cuBLASLt, NCCL, cuDNN always; "other" (library numbers this version does
 * not name) only when nonzero. */
static void ana_rlj_by_lib(ana_json *j, const char *key, const uint64_t *bytes)
{
    uint64_t other = 0;
    ana_json_key(j, key);
    ana_json_obj_begin(j);
    for (size_t lib = 0; lib < ANA_MEM_LIBS; lib++) {
        const char *name = lib ? ana_lib_name((uint32_t)lib) : "none";
        if (name && lib < ANA_MEM_LIB_OTHER)
            ana_json_ku64(j, name, bytes[lib]);
        else
            other += bytes[lib];
    }
    if (other)
        ana_json_ku64(j, "other", other);
    ana_json_obj_end(j);
}

void ana_report_libs_memory_json(const ana_report *r, ana_json *j)
{
    const ana_libs *l = &r->t->libs;
    ana_rlj_by_lib(j, "by_library", r->mem.peak_by_lib);
    ana_rlj_by_lib(j, "by_library_at_end", r->mem.end_by_lib);
    ana_json_key(j, "labels");
    ana_json_arr_begin(j);
    for (size_t i = 0; i < l->n_regions; i++) {
        ana_json_obj_begin(j);
        ana_json_kstr(j, "name", ana_libs_str(l, l->regions[i].name));
        ana_json_ku64(j, "address", r->regions[i].address);
        ana_json_ku64(j, "size", r->regions[i].size);
        ana_json_ku64(j, "peak_bytes", r->regions[i].peak_bytes);
        ana_json_ku64(j, "peak_count", r->regions[i].peak_count);
        ana_json_obj_end(j);
    }
    ana_json_arr_end(j);
}
