/*
 * split.c — ncclCommSplit: a collective over the parent. Every rank publishes its (color,
 * key) in its slot of the parent's segment; after a barrier each rank reads them all, and
 * after a second one (nobody overwrites a slot still being read) the ranks of each color
 * create the child: ordered by (key, parent rank), with a unique id derived from the
 * parent's id, the parent's split count and the color, so that every member derives the
 * same id and no two children share one. NCCL_SPLIT_NOCOLOR takes part and gets NULL.
 */
#include "nccl_sim.h"

#include <string.h>

/* splitmix64: spreads the parent id, split count and color over the child's id. */
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static void child_id(const struct ncclComm *parent, uint64_t split, int color,
                     unsigned char id[])
{
    uint64_t a, b;
    memcpy(&a, parent->id, 8);
    memcpy(&b, parent->id + 8, 8);
    uint64_t salt = mix(split ^ mix((uint64_t)(uint32_t)color));
    uint64_t h[2] = { mix(a ^ salt), mix(b ^ mix(salt)) };
    memset(id, 0, NCCL_UNIQUE_ID_BYTES);
    memcpy(id, h, sizeof(h));
}

/* This rank's place in its color: the rank count and its rank there. */
static void place(const ana_nccl_slot *slots, int nranks, int me, int *n, int *rank)
{
    *n = 0;
    *rank = 0;
    for (int r = 0; r < nranks; r++) {
        if (slots[r].color != slots[me].color)
            continue;
        (*n)++;
        if (slots[r].key < slots[me].key || (slots[r].key == slots[me].key && r < me))
            (*rank)++;
    }
}

ANA_NCCL_ENTRY(ncclResult_t, CommSplit,
               (ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config))
{
    if (!comm || !newcomm)
        return ana_nccl_fail(ncclInvalidArgument, "ncclCommSplit: NULL argument");
    if (config && config->magic != 0xcafebeef)
        return ana_nccl_fail(ncclInvalidArgument, "ncclCommSplit: the config was not "
                             "initialised with NCCL_CONFIG_INITIALIZER");
    if (color < 0 && color != NCCL_SPLIT_NOCOLOR)
        return ana_nccl_fail(ncclInvalidArgument, "ncclCommSplit: color %d", color);
    *newcomm = NULL;
    ana_nccl_slot *slots = ana_nccl_slots(comm);
    slots[comm->rank] = (ana_nccl_slot){ .seq = comm->coll_seq++, .kind = ANA_NCCL_SPLIT,
                                         .color = color, .key = key };
    ncclResult_t r = ana_nccl_barrier(comm);
    for (int p = 0; r == ncclSuccess && p < comm->nranks; p++)
        if (slots[p].kind != ANA_NCCL_SPLIT || slots[p].seq != slots[comm->rank].seq)
            r = ana_nccl_fail(ncclInvalidUsage, "ncclCommSplit: rank %d issued another "
                              "operation", p);
    int n = 0, rank = 0;
    if (r == ncclSuccess)
        place(slots, comm->nranks, comm->rank, &n, &rank);
    ncclResult_t b = ana_nccl_barrier(comm);   /* the slots are read */
    if (r == ncclSuccess)
        r = b;
    uint64_t split = comm->split_seq++;
    if (r != ncclSuccess || color == NCCL_SPLIT_NOCOLOR)
        return r;
    unsigned char id[NCCL_UNIQUE_ID_BYTES];
    child_id(comm, split, color, id);
    return ana_nccl_comm_init(newcomm, n, id, rank);
}
