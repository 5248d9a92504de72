/* libs_load.c — see libs.h: keeping the library and NVTX records of a trace.
 * Part of model/ (README.md): any layer may call it; it calls only model/ and format/. */
#include "model/libs.h"

#include "model/util.h"

#include <stdlib.h>
#include <string.h>

/* 4 Mi GEMM calls (64 MiB) in memory at most; past that they go to a temporary file */
#define ANA_GEMMS_IN_MEMORY_DEFAULT (1u << 22)

/* 1 Mi collectives (64 MiB) in memory at most; past that they go to a temporary file */
#define ANA_COLLS_IN_MEMORY_DEFAULT (1u << 20)

/* 1 Mi ranges (40 MiB) in memory at most; past that they are sorted in runs and merged
 * into a temporary file */
#define ANA_RANGES_RUN_DEFAULT (1u << 20)

static int ana_range_ev_cmp(const void *a, const void *b)
{
    const ana_range_ev *x = a, *y = b;
    if (x->time_ns != y->time_ns)
        return x->time_ns < y->time_ns ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void ana_libs_init(ana_libs *l)
{
    memset(l, 0, sizeof(*l));
    ana_u64map_init(&l->str_idx);
    ana_u64map_init(&l->shape_idx);
    ANA_GROW(l->strs, l->cap_strs, 1);
    l->strs[l->n_strs++] = ana_xstrdup("");
    size_t cap = 0; /* both domain arrays share cap_domains */
    ANA_GROW(l->domains, l->cap_domains, 1);
    ANA_GROW(l->domain_names, cap, 1);
    l->domains[0] = 0;
    l->domain_names[0] = 0;
    l->n_domains = 1;
    ana_spill_init(&l->gemms, sizeof(ana_gemm_call), "GEMM calls");
    l->gemms.in_memory = ana_sorter_setting("ANATOMIST_SPILL_GEMMS", ANA_GEMMS_IN_MEMORY_DEFAULT,
                                            sizeof(ana_gemm_call));
    ana_spill_init(&l->colls, sizeof(ana_coll_call), "collective calls");
    l->colls.in_memory = ana_sorter_setting("ANATOMIST_SPILL_COLLS", ANA_COLLS_IN_MEMORY_DEFAULT,
                                            sizeof(ana_coll_call));
    ana_spill_init(&l->ranges, sizeof(ana_range_ev), "NVTX ranges");
    size_t run = ana_sorter_setting("ANATOMIST_SPILL_RANGES", ANA_RANGES_RUN_DEFAULT,
                                    sizeof(ana_range_ev));
    ana_sorter_init(&l->range_sort, sizeof(ana_range_ev), run, 0, ana_range_ev_cmp, l,
                    "NVTX ranges");
}

void ana_libs_free(ana_libs *l)
{
    for (size_t i = 0; i < l->n_strs; i++)
        free(l->strs[i]);
    free(l->strs);
    ana_u64map_free(&l->str_idx);
    ana_u64map_free(&l->shape_idx);
    free(l->shapes);
    ana_spill_free(&l->gemms);
    ana_spill_free(&l->colls);
    free(l->comms);
    free(l->group_ends);
    ana_sorter_free(&l->range_sort);
    ana_spill_free(&l->ranges);
    free(l->domains);
    free(l->domain_names);
    free(l->regions);
}

/* Interns s as shown (util.h ana_name_dup); equal strings get one index. Hash collisions
 * probe the next key. */
static uint32_t ana_libs_intern(ana_libs *l, ana_str raw)
{
    uint64_t idx, h;
    if (!raw.s || !raw.len)
        return 0;
    char *s = ana_name_dup(raw.s, raw.len);
    size_t len = strlen(s);
    for (h = ana_fnv1a(s, len, ANA_FNV1A_SEED);; h++) {
        if (!ana_u64map_get(&l->str_idx, h, &idx))
            break;
        if (strcmp(l->strs[idx], s) == 0) {
            free(s);
            return (uint32_t)idx;
        }
    }
    if (l->n_strs >= UINT32_MAX) {
        free(s);
        return 0;
    }
    ANA_GROW(l->strs, l->cap_strs, l->n_strs + 1);
    l->strs[l->n_strs] = s;
    ana_u64map_put(&l->str_idx, h, l->n_strs);
    return (uint32_t)l->n_strs++;
}

const char *ana_libs_str(const ana_libs *l, uint32_t idx)
{
    return idx < l->n_strs ? l->strs[idx] : "";
}

static uint8_t ana_libs_u8(uint64_t v) { return (uint8_t)(v < 0xff ? v : 0xff); }
static uint16_t ana_libs_u16(uint64_t v) { return (uint16_t)(v < 0xffff ? v : 0xffff); }

static int ana_libs_same_shape(const ana_gemm_shape *a, const ana_gemm_shape *b)
{
    return a->m == b->m && a->n == b->n && a->k == b->k && a->batch == b->batch &&
           a->api == b->api && a->compute_type == b->compute_type && a->trans_a == b->trans_a &&
           a->trans_b == b->trans_b && a->a_type == b->a_type && a->b_type == b->b_type &&
           a->c_type == b->c_type && a->prec == b->prec;
}

static uint32_t ana_libs_shape(ana_libs *l, const ana_gemm_shape *key)
{
    uint64_t v[7] = { key->m, key->n, key->k, key->batch,
                      (uint64_t)key->api << 16 | key->compute_type,
                      (uint64_t)key->trans_a << 8 | key->trans_b | (uint64_t)key->prec << 16,
                      (uint64_t)key->a_type << 16 | (uint64_t)key->b_type << 8 | key->c_type };
    uint64_t idx, h;
    for (h = ana_fnv1a(v, sizeof(v), ANA_FNV1A_SEED);; h++) {
        if (!ana_u64map_get(&l->shape_idx, h, &idx))
            break;
        if (ana_libs_same_shape(&l->shapes[idx], key))
            return (uint32_t)idx;
    }
    ANA_GROW(l->shapes, l->cap_shapes, l->n_shapes + 1);
    l->shapes[l->n_shapes] = *key;
    ana_u64map_put(&l->shape_idx, h, l->n_shapes);
    return (uint32_t)l->n_shapes++;
}

static void ana_libs_on_gemm(ana_libs *l, const ana_rec_gemm *g)
{
    ana_gemm_shape key = {
        .m = g->m, .n = g->n, .k = g->k, .batch = g->batch ? g->batch : 1,
        .api = ana_libs_u16(g->api), .compute_type = ana_libs_u16(g->compute_type),
        .trans_a = ana_libs_u8(g->trans_a), .trans_b = ana_libs_u8(g->trans_b),
        .a_type = ana_libs_u8(g->a_type), .b_type = ana_libs_u8(g->b_type),
        .c_type = ana_libs_u8(g->c_type),
        .prec = (uint8_t)ana_gemm_precision(g->a_type, g->compute_type, g->math_mode),
    };
    if (g->ret != 0)
        return; /* a failed call computed nothing */
    uint32_t s = ana_libs_shape(l, &key);
    l->shapes[s].count++;
    l->shapes[s].flops += ana_gemm_call_flops(&key);
    l->n_gemms++;
    ana_spill_push(&l->gemms, &(ana_gemm_call){ .call = g->call, .shape = s }, 1);
}

static void ana_libs_on_coll(ana_libs *l, const ana_record *r)
{
    const ana_rec_coll *c = &r->u.coll;
    if (c->ret != 0)
        return;
    l->n_colls++;
    ana_spill_push(&l->colls, &(ana_coll_call){
        .time_ns = r->time_ns, .tid = r->tid, .call = c->call, .comm = c->comm,
        .bytes = c->bytes, .seq = c->seq, .dur_ns = c->dur_ns,
        .group = (uint32_t)(c->group < UINT32_MAX ? c->group : UINT32_MAX),
        .api = ana_libs_u16(c->api), .dtype = ana_libs_u8(c->dtype),
    }, 1);
}

static void ana_libs_on_comm(ana_libs *l, const ana_rec_comm *c)
{
    if (c->ret != 0 || c->api < ANA_API_NCCL_COMM_INIT_RANK || c->api > ANA_API_NCCL_COMM_SPLIT)
        return; /* destroy, abort and finalize make no communicator */
    ANA_GROW(l->comms, l->cap_comms, l->n_comms + 1);
    l->comms[l->n_comms++] = (ana_nccl_comm){
        .handle = c->comm, .comm_id = c->comm_id, .parent = c->parent, .rank = c->rank,
        .size = c->size, .device = c->device, .color = c->color, .key = c->key,
        .api = ana_libs_u16(c->api),
    };
}

const ana_nccl_comm *ana_libs_comm_by_handle(const ana_libs *l, uint64_t handle)
{
    for (size_t i = l->n_comms; i-- > 0;)
        if (l->comms[i].handle == handle)
            return &l->comms[i];
    return NULL;
}

static void ana_libs_on_libcall(ana_libs *l, const ana_record *r)
{
    const ana_rec_libcall *c = &r->u.libcall;
    l->libcalls++;
    if (c->api != ANA_API_NCCL_GROUP_END || c->arg != 0)
        return;
    ANA_GROW(l->group_ends, l->cap_group_ends, l->n_group_ends + 1);
    l->group_ends[l->n_group_ends++] = (ana_group_end){ r->time_ns, r->tid, c->call };
}

/* The index of a domain handle, added when new (0 when the table is full). */
static uint16_t ana_libs_domain(ana_libs *l, uint64_t handle)
{
    for (size_t i = 0; i < l->n_domains; i++)
        if (l->domains[i] == handle)
            return (uint16_t)i;
    if (l->n_domains >= ANA_LIBS_MAX_DOMAINS)
        return 0;
    size_t cap = l->cap_domains;
    ANA_GROW(l->domains, l->cap_domains, l->n_domains + 1);
    ANA_GROW(l->domain_names, cap, l->n_domains + 1);
    l->domains[l->n_domains] = handle;
    l->domain_names[l->n_domains] = 0;
    return (uint16_t)l->n_domains++;
}

const char *ana_libs_domain_name(const ana_libs *l, uint16_t domain)
{
    if (domain == 0 || domain >= l->n_domains || !l->domain_names[domain])
        return NULL;
    return l->strs[l->domain_names[domain]];
}

static void ana_libs_on_range(ana_libs *l, const ana_record *r)
{
    const ana_rec_range *g = &r->u.range;
    *(ana_range_ev *)ana_sorter_slot(&l->range_sort) = (ana_range_ev){
        .time_ns = r->time_ns, .tid = r->tid, .id = g->id, .name = ana_libs_intern(l, g->name),
        .seq = (uint32_t)l->n_ranges, .domain = ana_libs_domain(l, g->domain),
        .op = ana_libs_u8(g->op),
    };
    l->n_ranges++;
}

static void ana_libs_on_label(ana_libs *l, const ana_rec_label *b)
{
    if (b->what == ANA_LABEL_DOMAIN) {
        /* nvtxDomainDestroy writes an empty name: the domain keeps the name it had. */
        uint16_t d = ana_libs_domain(l, b->id);
        if (d && b->name.len)
            l->domain_names[d] = ana_libs_intern(l, b->name);
    } else if (b->what == ANA_LABEL_MEM_REGION && b->name.len && b->size &&
               l->n_regions < ANA_LIBS_MAX_REGIONS) {
        ANA_GROW(l->regions, l->cap_regions, l->n_regions + 1);
        l->regions[l->n_regions++] = (ana_mem_region){ b->id, b->size, ana_libs_intern(l, b->name) };
    }
}

void ana_libs_on_record(ana_libs *l, const ana_record *r)
{
    switch (r->kind) {
    case ANA_K_GEMM: ana_libs_on_gemm(l, &r->u.gemm); break;
    case ANA_K_COLL: ana_libs_on_coll(l, r); break;
    case ANA_K_COMM: ana_libs_on_comm(l, &r->u.comm); break;
    case ANA_K_LIBCALL: ana_libs_on_libcall(l, r); break;
    case ANA_K_RANGE: ana_libs_on_range(l, r); break;
    case ANA_K_LABEL: ana_libs_on_label(l, &r->u.label); break;
    default: break;
    }
}

void ana_libs_finish(ana_libs *l)
{
    ana_spill_seal(&l->gemms);
    ana_spill_seal(&l->colls);
    ana_sorter_finish(&l->range_sort, &l->ranges, NULL, NULL);
}
