/* ranks_read.c — see ranks.h: reads a rank's summary back from the "rank" member of a
 * `report --json` document (docs/report-schema.md), with the streaming reader (jsonr.h):
 * the rest of the document is skipped, not stored. Members it does not know are skipped,
 * so later versions may add some.
 * Part of import/: called by the job's loading (cli/ranks_load.c); calls analyses/ (the
 * summary it fills) and model/. */
#include "import/import.h"
#include "analyses/ranks.h"

#include "model/jsonr.h"
#include "model/util.h"

#include <stdlib.h>
#include <string.h>

typedef struct ana_rr {
    ana_jsonr *r;
    char *err;
    size_t cap;
    int failed;
    size_t n_coll_steps; /* entries of steps_collective_ns */
} ana_rr;

static int ana_rr_fail(ana_rr *x, const char *what)
{
    if (!x->failed) {
        const char *why = ana_jsonr_error(x->r);
        if (why && *why)
            snprintf(x->err, x->cap, "%s at byte %llu: %s", what,
                     (unsigned long long)ana_jsonr_offset(x->r), why);
        else
            snprintf(x->err, x->cap, "%s at byte %llu", what,
                     (unsigned long long)ana_jsonr_offset(x->r));
    }
    x->failed = 1;
    return -1;
}

/* A number that fits in int64_t, or null (-1). */
static int ana_rr_i64(ana_rr *x, const char *key, int64_t *out)
{
    size_t len;
    int tok = ana_jsonr_next(x->r);
    if (tok == ANA_JSON_NULL) {
        *out = -1;
        return 0;
    }
    const char *s = ana_jsonr_text(x->r, &len);
    if (tok != ANA_JSON_NUMBER || ana_jsonr_decimal(s, len, 0, out) != 0)
        return ana_rr_fail(x, key);
    return 0;
}

static int ana_rr_u64(ana_rr *x, const char *key, uint64_t *out)
{
    int64_t v;
    if (ana_rr_i64(x, key, &v) != 0)
        return -1;
    *out = v < 0 ? 0 : (uint64_t)v;
    return 0;
}

static int ana_rr_str(ana_rr *x, const char *key, char **out)
{
    size_t len;
    int tok = ana_jsonr_next(x->r);
    free(*out);
    *out = NULL;
    if (tok == ANA_JSON_NULL)
        return 0;
    const char *s = ana_jsonr_text(x->r, &len);
    if (tok != ANA_JSON_STRING)
        return ana_rr_fail(x, key);
    *out = ana_name_dup(s, len);
    return 0;
}

static int ana_rr_begin(ana_rr *x, int want, const char *key)
{
    return ana_jsonr_next(x->r) == want ? 0 : ana_rr_fail(x, key);
}

/* An array of numbers into a malloc'd array. */
static int ana_rr_u64s(ana_rr *x, const char *key, uint64_t **out, size_t *n)
{
    size_t cap = 0, len;
    int tok;
    if (ana_rr_begin(x, ANA_JSON_ARR_BEGIN, key) != 0)
        return -1;
    free(*out);
    *out = NULL;
    *n = 0;
    while ((tok = ana_jsonr_next(x->r)) != ANA_JSON_ARR_END) {
        int64_t v;
        const char *s = ana_jsonr_text(x->r, &len);
        if (tok != ANA_JSON_NUMBER || ana_jsonr_decimal(s, len, 0, &v) != 0 || v < 0)
            return ana_rr_fail(x, key);
        ANA_GROW(*out, cap, *n + 1);
        (*out)[(*n)++] = (uint64_t)v;
    }
    return 0;
}

/* Skips the value of a member it does not know. */
static int ana_rr_skip(ana_rr *x)
{
    int tok = ana_jsonr_next(x->r);
    if (tok == ANA_JSON_ERROR || ana_jsonr_skip(x->r, tok) != 0)
        return ana_rr_fail(x, "bad JSON");
    return 0;
}

/* {"name": number, ...} with names from name(i), i < n. */
static int ana_rr_named(ana_rr *x, const char *key, const char *(*name)(int), int n,
                        uint64_t *out)
{
    int tok;
    size_t len;
    if (ana_rr_begin(x, ANA_JSON_OBJ_BEGIN, key) != 0)
        return -1;
    while ((tok = ana_jsonr_next(x->r)) == ANA_JSON_KEY) {
        const char *k = ana_jsonr_text(x->r, &len);
        int i = 0;
        while (i < n && strcmp(k, name(i)) != 0)
            i++;
        if (i < n ? ana_rr_u64(x, key, &out[i]) : ana_rr_skip(x))
            return -1;
    }
    return tok == ANA_JSON_OBJ_END ? 0 : ana_rr_fail(x, key);
}

/* One ["0x...", seq, api, bytes, start_ns, dur_ns] row of "calls_list". */
static int ana_rr_call(ana_rr *x, ana_rank_coll *c)
{
    size_t len;
    uint64_t v[5];
    if (ana_jsonr_next(x->r) != ANA_JSON_STRING)
        return ana_rr_fail(x, "calls_list");
    const char *s = ana_jsonr_text(x->r, &len);
    char *end;
    c->comm_id = strtoull(s, &end, 16);
    if (len < 3 || *end)
        return ana_rr_fail(x, "calls_list comm_id");
    for (int i = 0; i < 5; i++)
        if (ana_rr_u64(x, "calls_list", &v[i]) != 0)
            return -1;
    *c = (ana_rank_coll){ c->comm_id, v[0], v[2], v[3], v[4], (uint32_t)v[1] };
    return ana_jsonr_next(x->r) == ANA_JSON_ARR_END ? 0 : ana_rr_fail(x, "calls_list");
}

static int ana_rr_calls(ana_rr *x, ana_rank *k)
{
    size_t cap = 0;
    int tok;
    if (ana_rr_begin(x, ANA_JSON_ARR_BEGIN, "calls_list") != 0)
        return -1;
    free(k->colls);
    k->colls = NULL;
    k->n_colls = 0;
    while ((tok = ana_jsonr_next(x->r)) == ANA_JSON_ARR_BEGIN) {
        ANA_GROW(k->colls, cap, k->n_colls + 1);
        if (ana_rr_call(x, &k->colls[k->n_colls++]) != 0)
            return -1;
    }
    return tok == ANA_JSON_ARR_END ? 0 : ana_rr_fail(x, "calls_list");
}

typedef struct ana_rr_field {
    const char *key;
    size_t off; /* of a uint64_t in ana_rank */
} ana_rr_field;

#define ANA_RR_F(k, m) { k, offsetof(ana_rank, m) }

/* An object of u64 members named in f, the class and category tables, "calls_list". */
static int ana_rr_obj(ana_rr *x, const char *what, ana_rank *k, const ana_rr_field *f,
                      size_t nf)
{
    int tok;
    size_t len;
    if (ana_rr_begin(x, ANA_JSON_OBJ_BEGIN, what) != 0)
        return -1;
    while ((tok = ana_jsonr_next(x->r)) == ANA_JSON_KEY) {
        char key[64];
        snprintf(key, sizeof(key), "%s", ana_jsonr_text(x->r, &len));
        size_t i = 0;
        while (i < nf && strcmp(key, f[i].key) != 0)
            i++;
        int rc;
        if (i < nf)
            rc = ana_rr_u64(x, key, (uint64_t *)((char *)k + f[i].off));
        else if (strcmp(key, "by_class") == 0)
            rc = ana_rr_named(x, key, ana_class_name, ANA_CLASS_COUNT, k->class_ns);
        else if (strcmp(key, "by_class_count") == 0)
            rc = ana_rr_named(x, key, ana_class_name, ANA_CLASS_COUNT, k->class_count);
        else if (strcmp(key, "by_category") == 0)
            rc = ana_rr_named(x, key, ana_mcat_name, ANA_MCAT_COUNT, k->by_category);
        else if (strcmp(key, "calls_list") == 0)
            rc = ana_rr_calls(x, k);
        else
            rc = ana_rr_skip(x);
        if (rc != 0)
            return -1;
    }
    return tok == ANA_JSON_OBJ_END ? 0 : ana_rr_fail(x, what);
}

static const ana_rr_field ana_rr_top[] = {
    ANA_RR_F("pid", pid), ANA_RR_F("start_monotonic_ns", start_mono_ns),
    ANA_RR_F("start_realtime_ns", start_real_ns), ANA_RR_F("duration_ns", duration_ns),
    ANA_RR_F("records", records),
};
static const ana_rr_field ana_rr_time[] = {
    ANA_RR_F("busy_ns", busy_ns), ANA_RR_F("idle_ns", idle_ns), ANA_RR_F("span_ns", span_ns),
    ANA_RR_F("overlap_ns", overlap_ns), ANA_RR_F("kernel_ns", kernel_ns),
    ANA_RR_F("memcpy_ns", memcpy_ns), ANA_RR_F("memset_ns", memset_ns),
    ANA_RR_F("launches", launches),
};
static const ana_rr_field ana_rr_mem[] = {
    ANA_RR_F("peak_bytes", peak_bytes), ANA_RR_F("peak_at_ns", peak_at_ns),
    ANA_RR_F("live_at_end_bytes", live_end_bytes),
    ANA_RR_F("host_pinned_peak_bytes", host_peak_bytes),
};
static const ana_rr_field ana_rr_coll[] = {
    ANA_RR_F("calls", coll_calls), ANA_RR_F("host_ns", coll_host_ns),
    ANA_RR_F("gpu_ns", coll_gpu_ns), ANA_RR_F("bytes", coll_bytes),
};
#define ANA_RR_N(a) (sizeof(a) / sizeof(*(a)))

/* One member of "rank" (its key just read). */
static int ana_rr_member(ana_rr *x, const char *key, ana_rank *k)
{
    size_t n1 = 0;
    for (size_t i = 0; i < ANA_RR_N(ana_rr_top); i++)
        if (strcmp(key, ana_rr_top[i].key) == 0)
            return ana_rr_u64(x, key, (uint64_t *)((char *)k + ana_rr_top[i].off));
    if (strcmp(key, "rank") == 0)
        return ana_rr_i64(x, key, &k->rank);
    if (strcmp(key, "local_rank") == 0)
        return ana_rr_i64(x, key, &k->local_rank);
    if (strcmp(key, "world_size") == 0)
        return ana_rr_i64(x, key, &k->world_size);
    if (strcmp(key, "host") == 0)
        return ana_rr_str(x, key, &k->host);
    if (strcmp(key, "exe") == 0)
        return ana_rr_str(x, key, &k->exe);
    if (strcmp(key, "source") == 0)
        return ana_rr_str(x, key, &k->source);
    if (strcmp(key, "steps_ns") == 0)
        return ana_rr_u64s(x, key, &k->step_ns, &n1) ? -1 : (k->n_steps = n1, 0);
    if (strcmp(key, "steps_collective_ns") == 0)
        return ana_rr_u64s(x, key, &k->step_coll_ns, &x->n_coll_steps);
    if (strcmp(key, "time") == 0)
        return ana_rr_obj(x, key, k, ana_rr_time, ANA_RR_N(ana_rr_time));
    if (strcmp(key, "memory") == 0)
        return ana_rr_obj(x, key, k, ana_rr_mem, ANA_RR_N(ana_rr_mem));
    if (strcmp(key, "collectives") == 0)
        return ana_rr_obj(x, key, k, ana_rr_coll, ANA_RR_N(ana_rr_coll));
    return ana_rr_skip(x);
}

static int ana_rr_rank(ana_rr *x, ana_rank *k)
{
    int tok;
    size_t len;
    if (ana_rr_begin(x, ANA_JSON_OBJ_BEGIN, "\"rank\" (not an object)") != 0)
        return -1;
    while ((tok = ana_jsonr_next(x->r)) == ANA_JSON_KEY) {
        char key[64];
        snprintf(key, sizeof(key), "%s", ana_jsonr_text(x->r, &len));
        if (ana_rr_member(x, key, k) != 0)
            return -1;
    }
    if (tok != ANA_JSON_OBJ_END)
        return ana_rr_fail(x, "\"rank\"");
    if (x->n_coll_steps != k->n_steps)
        return ana_rr_fail(x, "\"rank\": steps_collective_ns is not one value per step");
    return 0;
}

int ana_rank_json_is_report(const char *path)
{
    char msg[256];
    size_t len;
    int yes = 0;
    ana_jsonr *r = ana_jsonr_open(path, msg, sizeof(msg));
    if (!r)
        return 0;
    if (ana_jsonr_next(r) == ANA_JSON_OBJ_BEGIN && ana_jsonr_next(r) == ANA_JSON_KEY &&
        strcmp(ana_jsonr_text(r, &len), "schema") == 0 && ana_jsonr_next(r) == ANA_JSON_STRING)
        yes = strncmp(ana_jsonr_text(r, &len), "anatomist.report/", 17) == 0;
    ana_jsonr_close(r);
    return yes;
}

int ana_rank_read_json(const char *path, ana_rank *out, char *err, size_t cap)
{
    char msg[256];
    size_t len;
    int tok, found = 0;
    memset(out, 0, sizeof(*out));
    out->rank = out->local_rank = out->world_size = -1;
    ana_rr x = { ana_jsonr_open(path, msg, sizeof(msg)), err, cap, 0, 0 };
    if (!x.r) {
        snprintf(err, cap, "%s", msg);
        return -1;
    }
    if (ana_jsonr_next(x.r) != ANA_JSON_OBJ_BEGIN)
        ana_rr_fail(&x, "not a JSON object (expected `anatomist report --json` output)");
    while (!x.failed && (tok = ana_jsonr_next(x.r)) == ANA_JSON_KEY) {
        if (strcmp(ana_jsonr_text(x.r, &len), "rank") == 0)
            found = ana_rr_rank(&x, out) == 0;
        else
            ana_rr_skip(&x);
    }
    if (!x.failed && !found)
        snprintf(err, cap, "no \"rank\" member (write it with `anatomist report --json TRACE`)");
    ana_jsonr_close(x.r);
    if (x.failed || !found) {
        ana_rank_free(out);
        return -1;
    }
    if (!out->source)
        out->source = ana_name_dup(path, strlen(path));
    if (!out->step_ns) { /* no steps: empty arrays, as ana_rank_from_report makes */
        out->step_ns = ana_xcalloc(1, sizeof(uint64_t));
        out->step_coll_ns = ana_xcalloc(1, sizeof(uint64_t));
    }
    ana_rank_derive(out);
    return 0;
}
