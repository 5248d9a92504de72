/*
 * graph.c — CUDA graphs built by stream capture: cudaStreamBeginCapture/EndCapture,
 * capture queries, instantiation, launch and destruction.
 *
 * While a stream captures, every kernel launch, Async copy and Async set submitted to it
 * is validated and appended, as a graph node, to the graph being captured instead of
 * running (no bytes move, no clock advances, no activity record). A synchronising call
 * on the stream (cudaStreamSynchronize, a synchronous copy on a per-thread stream)
 * fails with cudaErrorStreamCaptureUnsupported and invalidates the capture, as in CUDA;
 * cudaStreamEndCapture then fails with cudaErrorStreamCaptureInvalidated. Captures are
 * single-stream: events recorded or waited for inside one add no node.
 *
 * Instantiation copies the nodes into an executable graph that gets its own graph id and
 * fresh node ids (as CUPTI numbers a graph exec's nodes); a launch replays the nodes in
 * capture order on the launch stream through the same code as eager work, so each node
 * moves its bytes, takes its cost-model time and yields its activity record, with the
 * correlation id of the cudaGraphLaunch call and the exec's graphId / the node's
 * graphNodeId. Graph ids (graphs and execs) count 1, 2, ...; node ids likewise,
 * process-wide, never reused.
 *
 * Handles are the sim's own objects, validated against live tables; a graph being
 * captured into is live too (cudaStreamGetCaptureInfo hands it out) but cannot be
 * instantiated or destroyed until its capture ends.
 */
#include "sim.h"
#include "api.h"

#include <stdlib.h>
#include <string.h>

struct graph_node {
    uint64_t id;
    struct ana_sim_op op;
};

struct ana_sim_graph {
    uint32_t id;
    int capturing;               /* owned by a capture until it ends */
    struct graph_node **nodes;   /* capture order */
    size_t n, cap;
};

struct graph_exec {
    uint32_t id;
    struct graph_node *nodes;
    size_t n;
};

struct ana_sim_capture {
    struct ana_sim_graph *graph;
    unsigned long long id;
    int invalidated;
};

static struct ana_sim_map graphs, execs;
static uint32_t next_graph_id = 1;     /* shared by graphs and executable graphs */
static uint64_t next_node_id = 1;
static unsigned long long next_capture_id = 1;

/* ---- graphs ---------------------------------------------------------------------- */

static void graph_free(struct ana_sim_graph *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->n; i++)
        free(g->nodes[i]);
    free(g->nodes);
    free(g);
}

static cudaError_t graph_append_locked(struct ana_sim_graph *g, const struct ana_sim_op *op)
{
    if (g->n == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 8;
        struct graph_node **nodes = realloc(g->nodes, cap * sizeof(*nodes));
        if (!nodes)
            return cudaErrorMemoryAllocation;
        g->nodes = nodes;
        g->cap = cap;
    }
    struct graph_node *node = malloc(sizeof(*node));
    if (!node)
        return cudaErrorMemoryAllocation;
    node->id = next_node_id++;
    node->op = *op;
    g->nodes[g->n++] = node;
    return cudaSuccess;
}

/* ---- capture state (sim.h) --------------------------------------------------------- */

int ana_sim_capturing_locked(struct ana_sim_stream *s)
{
    return *ana_sim_stream_capture_slot_locked(s) != NULL;
}

cudaError_t ana_sim_capture_add_locked(struct ana_sim_stream *s, const struct ana_sim_op *op)
{
    struct ana_sim_capture *c = *ana_sim_stream_capture_slot_locked(s);
    if (c->invalidated)
        return cudaErrorStreamCaptureInvalidated;
    cudaError_t err = graph_append_locked(c->graph, op);
    if (err != cudaSuccess)
        c->invalidated = 1;
    return err;
}

cudaError_t ana_sim_capture_sync_locked(struct ana_sim_stream *s)
{
    struct ana_sim_capture *c = *ana_sim_stream_capture_slot_locked(s);
    if (!c)
        return cudaSuccess;
    c->invalidated = 1;
    return cudaErrorStreamCaptureUnsupported;
}

void ana_sim_capture_drop_locked(struct ana_sim_stream *s)
{
    struct ana_sim_capture **slot = ana_sim_stream_capture_slot_locked(s);
    if (!*slot)
        return;
    ana_sim_map_del(&graphs, (*slot)->graph);
    graph_free((*slot)->graph);
    free(*slot);
    *slot = NULL;
}

/* ---- capture entry points ---------------------------------------------------------- */

static cudaError_t begin_capture(cudaStream_t stream, enum cudaStreamCaptureMode mode,
                                 int ptsz)
{
    struct ana_sim_stream *s;
    if ((unsigned)mode > cudaStreamCaptureModeRelaxed)
        return cudaErrorInvalidValue;
    struct ana_sim_capture *c = calloc(1, sizeof(*c));
    struct ana_sim_graph *g = calloc(1, sizeof(*g));
    ana_sim_enter();
    cudaError_t err = ana_sim_stream_resolve_locked(stream, ptsz, &s);
    if (err == cudaSuccess && ana_sim_stream_is_legacy(s))
        err = cudaErrorStreamCaptureUnsupported;   /* the legacy stream cannot capture */
    else if (err == cudaSuccess && ana_sim_capturing_locked(s))
        err = cudaErrorIllegalState;
    else if (err == cudaSuccess && (!c || !g || ana_sim_map_put(&graphs, g, g) != 0))
        err = cudaErrorMemoryAllocation;
    if (err == cudaSuccess) {
        g->id = next_graph_id++;
        g->capturing = 1;
        c->graph = g;
        c->id = next_capture_id++;
        *ana_sim_stream_capture_slot_locked(s) = c;
    }
    ana_sim_leave();
    if (err != cudaSuccess) {
        free(c);
        free(g);
    }
    return err;
}

ANA_SIM_API cudaError_t cudaStreamBeginCapture(cudaStream_t stream,
                                               enum cudaStreamCaptureMode mode)
{
    ANA_SIM_TRACED(cudaStreamBeginCapture, v10000, begin_capture(stream, mode, 0), stream,
                   mode);
}

ANA_SIM_API cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream,
                                                    enum cudaStreamCaptureMode mode)
{
    ANA_SIM_TRACED(cudaStreamBeginCapture_ptsz, v10000, begin_capture(stream, mode, 1),
                   stream, mode);
}

static cudaError_t end_capture(cudaStream_t stream, cudaGraph_t *pGraph, int ptsz)
{
    struct ana_sim_stream *s;
    if (!pGraph)
        return cudaErrorInvalidValue;
    ana_sim_enter();
    cudaError_t err = ana_sim_stream_resolve_locked(stream, ptsz, &s);
    struct ana_sim_capture *c = err == cudaSuccess ? *ana_sim_stream_capture_slot_locked(s)
                                                   : NULL;
    if (err == cudaSuccess && !c) {
        err = cudaErrorIllegalState;
    } else if (c && c->invalidated) {
        *pGraph = NULL;
        ana_sim_capture_drop_locked(s);
        err = cudaErrorStreamCaptureInvalidated;
    } else if (c) {
        c->graph->capturing = 0;
        *pGraph = (cudaGraph_t)(void *)c->graph;
        *ana_sim_stream_capture_slot_locked(s) = NULL;
        free(c);
    }
    ana_sim_leave();
    return err;
}

ANA_SIM_API cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph)
{
    ANA_SIM_TRACED(cudaStreamEndCapture, v10000, end_capture(stream, pGraph, 0), stream,
                   pGraph);
}

ANA_SIM_API cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t *pGraph)
{
    ANA_SIM_TRACED(cudaStreamEndCapture_ptsz, v10000, end_capture(stream, pGraph, 1), stream,
                   pGraph);
}

static cudaError_t capture_info(cudaStream_t stream, int ptsz,
        enum cudaStreamCaptureStatus *status, unsigned long long *id, cudaGraph_t *graph,
        const cudaGraphNode_t **deps, const cudaGraphEdgeData **edges, size_t *ndeps)
{
    struct ana_sim_stream *s;
    if (!status)
        return cudaErrorInvalidValue;
    ana_sim_enter();
    cudaError_t err = ana_sim_stream_resolve_locked(stream, ptsz, &s);
    const struct ana_sim_capture *c = err == cudaSuccess
                                      ? *ana_sim_stream_capture_slot_locked(s) : NULL;
    const struct ana_sim_graph *g = c ? c->graph : NULL;
    *status = !c ? cudaStreamCaptureStatusNone
                 : c->invalidated ? cudaStreamCaptureStatusInvalidated
                                  : cudaStreamCaptureStatusActive;
    /* Nodes are appended in order, each depending on the previous one. */
    int active = *status == cudaStreamCaptureStatusActive;
    if (id)
        *id = c ? c->id : 0;
    if (graph)
        *graph = active ? (cudaGraph_t)(void *)c->graph : NULL;
    if (deps)
        *deps = active && g->n ? (const cudaGraphNode_t *)(void *)&g->nodes[g->n - 1] : NULL;
    if (edges)
        *edges = NULL;         /* NULL: every edge is a default edge */
    if (ndeps)
        *ndeps = active && g->n ? 1 : 0;
    ana_sim_leave();
    return err;
}

ANA_SIM_API cudaError_t cudaStreamIsCapturing(cudaStream_t stream,
                                              enum cudaStreamCaptureStatus *pCaptureStatus)
{
    ANA_SIM_TRACED(cudaStreamIsCapturing, v10000,
                   capture_info(stream, 0, pCaptureStatus, NULL, NULL, NULL, NULL, NULL),
                   stream, pCaptureStatus);
}

ANA_SIM_API cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t stream,
        enum cudaStreamCaptureStatus *pCaptureStatus)
{
    ANA_SIM_TRACED(cudaStreamIsCapturing_ptsz, v10000,
                   capture_info(stream, 1, pCaptureStatus, NULL, NULL, NULL, NULL, NULL),
                   stream, pCaptureStatus);
}

ANA_SIM_API cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream,
        enum cudaStreamCaptureStatus *captureStatus_out, unsigned long long *id_out,
        cudaGraph_t *graph_out, const cudaGraphNode_t **dependencies_out,
        const cudaGraphEdgeData **edgeData_out, size_t *numDependencies_out)
{
    ANA_SIM_TRACED(cudaStreamGetCaptureInfo, v12030,
                   capture_info(stream, 0, captureStatus_out, id_out, graph_out,
                                dependencies_out, edgeData_out, numDependencies_out),
                   stream, captureStatus_out, id_out, graph_out, dependencies_out,
                   edgeData_out, numDependencies_out);
}

ANA_SIM_API cudaError_t cudaStreamGetCaptureInfo_ptsz(cudaStream_t stream,
        enum cudaStreamCaptureStatus *captureStatus_out, unsigned long long *id_out,
        cudaGraph_t *graph_out, const cudaGraphNode_t **dependencies_out,
        const cudaGraphEdgeData **edgeData_out, size_t *numDependencies_out)
{
    ANA_SIM_TRACED(cudaStreamGetCaptureInfo_ptsz, v12030,
                   capture_info(stream, 1, captureStatus_out, id_out, graph_out,
                                dependencies_out, edgeData_out, numDependencies_out),
                   stream, captureStatus_out, id_out, graph_out, dependencies_out,
                   edgeData_out, numDependencies_out);
}

/* ---- graphs and executable graphs ---------------------------------------------------- */

static cudaError_t graph_get_nodes(cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *num)
{
    if (!num)
        return cudaErrorInvalidValue;
    ana_sim_enter();
    const struct ana_sim_graph *g = ana_sim_map_get(&graphs, graph);
    if (g && nodes) {
        for (size_t i = 0; i < *num; i++)
            nodes[i] = i < g->n ? (cudaGraphNode_t)(void *)g->nodes[i] : NULL;
    }
    if (g)
        *num = g->n;
    ana_sim_leave();
    return g ? cudaSuccess : cudaErrorInvalidValue;
}

ANA_SIM_API cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes,
                                          size_t *numNodes)
{
    ANA_SIM_TRACED(cudaGraphGetNodes, v10000, graph_get_nodes(graph, nodes, numNodes), graph,
                   nodes, numNodes);
}

static cudaError_t graph_destroy(cudaGraph_t graph)
{
    cudaError_t err = cudaSuccess;
    ana_sim_enter();
    struct ana_sim_graph *g = ana_sim_map_get(&graphs, graph);
    if (!g)
        err = cudaErrorInvalidValue;
    else if (g->capturing)
        err = cudaErrorIllegalState;
    else
        ana_sim_map_del(&graphs, g);
    ana_sim_leave();
    if (err == cudaSuccess)
        graph_free(g);
    return err;
}

ANA_SIM_API cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
    ANA_SIM_TRACED(cudaGraphDestroy, v10000, graph_destroy(graph), graph);
}

static cudaError_t instantiate(cudaGraphExec_t *pExec, cudaGraph_t graph,
                               unsigned long long flags)
{
    const unsigned long long known = cudaGraphInstantiateFlagAutoFreeOnLaunch |
                                     cudaGraphInstantiateFlagUpload |
                                     cudaGraphInstantiateFlagDeviceLaunch |
                                     cudaGraphInstantiateFlagUseNodePriority;
    if (!pExec || (flags & ~known))
        return cudaErrorInvalidValue;
    struct graph_exec *x = calloc(1, sizeof(*x));
    if (!x)
        return cudaErrorMemoryAllocation;
    cudaError_t err = cudaSuccess;
    ana_sim_enter();
    const struct ana_sim_graph *g = ana_sim_map_get(&graphs, graph);
    if (!g || g->capturing)
        err = cudaErrorInvalidValue;
    else if (g->n && !(x->nodes = calloc(g->n, sizeof(*x->nodes))))
        err = cudaErrorMemoryAllocation;
    else if (ana_sim_map_put(&execs, x, x) != 0)
        err = cudaErrorMemoryAllocation;
    if (err == cudaSuccess) {
        x->id = next_graph_id++;
        x->n = g->n;
        for (size_t i = 0; i < g->n; i++)
            x->nodes[i] = (struct graph_node){ next_node_id++, g->nodes[i]->op };
        *pExec = (cudaGraphExec_t)(void *)x;
    }
    ana_sim_leave();
    if (err != cudaSuccess) {
        free(x->nodes);
        free(x);
    }
    return err;
}

ANA_SIM_API cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                             unsigned long long flags)
{
    ANA_SIM_TRACED(cudaGraphInstantiate, v12000, instantiate(pGraphExec, graph, flags),
                   pGraphExec, graph, flags);
}

ANA_SIM_API cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *pGraphExec,
                                                      cudaGraph_t graph,
                                                      unsigned long long flags)
{
    ANA_SIM_TRACED(cudaGraphInstantiateWithFlags, v11040,
                   instantiate(pGraphExec, graph, flags), pGraphExec, graph, flags);
}

static cudaError_t exec_destroy(cudaGraphExec_t exec)
{
    ana_sim_enter();
    struct graph_exec *x = ana_sim_map_del(&execs, exec);
    ana_sim_leave();
    if (x)
        free(x->nodes);
    free(x);
    return x ? cudaSuccess : cudaErrorInvalidValue;
}

ANA_SIM_API cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec)
{
    ANA_SIM_TRACED(cudaGraphExecDestroy, v10000, exec_destroy(graphExec), graphExec);
}

/* Replays x's nodes in order on s, each validated again; stops at the first that fails. */
static cudaError_t replay_locked(const struct graph_exec *x, struct ana_sim_stream *s,
                                 uint64_t want, union ana_sim_record *recs)
{
    union ana_sim_record scratch;
    for (size_t i = 0; i < x->n; i++) {
        const struct graph_node *node = &x->nodes[i];
        struct ana_sim_exec where = { s, x->id, node->id, want };
        union ana_sim_record *rec = recs ? &recs[i] : &scratch;
        cudaError_t err = node->op.kind == ANA_SIM_OP_KERNEL
                          ? ana_sim_kernel_replay_locked(&node->op, &where, rec)
                          : ana_sim_copy_replay_locked(&node->op, &where, rec);
        if (err != cudaSuccess)
            return err;
    }
    return cudaSuccess;
}

/* Launched into a capturing stream, the exec's nodes join the capture (flattened). */
static cudaError_t capture_exec_locked(const struct graph_exec *x, struct ana_sim_stream *s)
{
    for (size_t i = 0; i < x->n; i++) {
        cudaError_t err = ana_sim_capture_add_locked(s, &x->nodes[i].op);
        if (err != cudaSuccess)
            return err;
    }
    return cudaSuccess;
}

static cudaError_t graph_launch(cudaGraphExec_t exec, cudaStream_t stream, int ptsz)
{
    uint64_t want = ana_sim_wanted_kinds();
    union ana_sim_record *recs = NULL;
    size_t n = 0;
    struct ana_sim_stream *s;
    ana_sim_enter();
    const struct graph_exec *x = ana_sim_map_get(&execs, exec);
    cudaError_t err = x ? ana_sim_stream_resolve_locked(stream, ptsz, &s)
                        : cudaErrorInvalidResourceHandle;
    if (err == cudaSuccess && ana_sim_capturing_locked(s)) {
        err = capture_exec_locked(x, s);
    } else if (err == cudaSuccess) {
        n = want & ANA_SIM_WORK_KINDS ? x->n : 0;
        /* calloc: kind 0 is CUPTI_ACTIVITY_KIND_INVALID, so unused slots emit nothing. */
        if (n && !(recs = calloc(n, sizeof(*recs))))
            err = cudaErrorMemoryAllocation;
        else
            err = replay_locked(x, s, want, recs);
    }
    ana_sim_leave();
    if (recs)
        ana_sim_emit(recs, n);
    free(recs);
    return err;
}

ANA_SIM_API cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    ANA_SIM_TRACED(cudaGraphLaunch, v10000, graph_launch(graphExec, stream, 0), graphExec,
                   stream);
}

ANA_SIM_API cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    ANA_SIM_TRACED(cudaGraphLaunch_ptsz, v10000, graph_launch(graphExec, stream, 1),
                   graphExec, stream);
}
