/* kineto.h — imports a PyTorch profiler / Kineto Chrome-trace JSON file (.json or
 * .json.gz, gzip detected by its magic) into the analyzer's model, so every analysis of
 * a .anat trace runs on it (docs/kineto-import.md).
 *
 * The file is read as a stream (no document tree): memory stays proportional to the
 * events kept, not to the text. Events become the records of docs/trace-format.md fed
 * through ana_trace_add: device properties → DEVICE; kernels → KERNEL + GPU_KERNEL;
 * memcpy/memset → GPU_MEMCPY/GPU_MEMSET; cuda_runtime/cuda_driver launches, copies and
 * sets → LAUNCH/MEMCPY/MEMSET with the correlation id; `[memory]` events on a GPU →
 * ALLOC/FREE with api ANA_API_IMPORTED_ALLOC/FREE; user annotations → NVTX-like RANGE
 * push/pop (ProfilerStep#N makes steps); NCCL collectives' metadata → COLL. The op that
 * enclosed a launch (its External id) gives the kernel's API context (t->call_ctx: a
 * matmul, convolution, attention or collective op).
 *
 * Both schemas are read: the current one (`cat` kernel, gpu_memcpy, cuda_runtime, ...,
 * `External id`) and the legacy 2021 one (`Kernel`, `Memcpy`, `Runtime`, `Operator`,
 * `external id`, tid "stream 7"). Timestamps (µs with up to 3 decimals) become ns exactly.
 * What is skipped is counted and said once, on stderr and as an INFO record
 * ("import.skipped"). A malformed file fails with err naming the byte offset (in the
 * decompressed text). */
#ifndef ANA_KINETO_H
#define ANA_KINETO_H

#include "model/trace.h"

/* Memory allocated before the trace began: model/memevents.h ANA_KINETO_PRE_BASE. */

/* Returns 0 and a finished model in *out (t->source "kineto"), or -1 with err filled. */
int ana_kineto_load(const char *path, unsigned flags, ana_trace **out, ana_error *err);

#endif
