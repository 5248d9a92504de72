/* records.h — the record kinds of the trace format as neutral C structs, and their codec.
 *
 * Contract: docs/trace-format.md is the specification; this header mirrors its "Record
 * kinds" table. ana_record_encode() allocates nothing and may run on the preload's hot path.
 * ana_record_decode() is the reader's: strings and frames it returns point into memory the
 * caller provides (a scratch arena) and live as long as that memory. Both are reentrant. */
#ifndef ANA_RECORDS_H
#define ANA_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#define ANA_FORMAT_MAJOR 2
#define ANA_FORMAT_MINOR 2
#define ANA_HEADER_SIZE 32
#define ANA_CHUNK_HEADER_SIZE 16
#define ANA_CHUNK_MAX (64u << 20)
#define ANA_MAX_FRAMES 256
/* (1.5) Header flags bits 0..7: the time shift s. Every time and duration of the trace is
 * in ticks of 2^s ns (0 = nanoseconds); readers give nanoseconds back. */
#define ANA_FLAG_TIME_SHIFT_MASK 0xffull
#define ANA_TIME_SHIFT_MAX 20

enum ana_kind {
    ANA_K_SEGMENT = 1,
    ANA_K_PROCESS = 2,
    ANA_K_THREAD = 3,
    ANA_K_MODULE = 4,
    ANA_K_STACK = 5,
    ANA_K_KERNEL = 6,
    ANA_K_ALLOC = 7,
    ANA_K_FREE = 8,
    ANA_K_MEMINFO = 9,
    ANA_K_LAUNCH = 10,
    ANA_K_MEMCPY = 11,
    ANA_K_MEMSET = 12,
    ANA_K_DEVICE = 13,
    ANA_K_DROPPED = 14,
    ANA_K_END = 15,
    ANA_K_INFO = 16,
    ANA_K_GPU_KERNEL = 17,  /* (1.1) a kernel as the GPU ran it (CUPTI activity) */
    ANA_K_GPU_MEMCPY = 18,  /* (1.1) a copy as the GPU ran it */
    ANA_K_GPU_MEMSET = 19,  /* (1.1) a memset as the GPU ran it */
    ANA_K_GPU_MEMORY = 20,  /* (1.1) an allocation or release as the driver saw it */
    ANA_K_GPU_POOL = 21,    /* (1.1) a memory-pool operation as the driver saw it */
    ANA_K_GPU_DROPPED = 22, /* (1.1) activity records lost before reaching the trace */
    ANA_K_VMM = 23,         /* (1.1) a virtual-memory call: reserve, map, unmap, access, free */
    ANA_K_GEMM = 24,        /* (1.2) a cuBLAS / cuBLASLt matrix multiplication */
    ANA_K_COLL = 25,        /* (1.2) an NCCL collective or point-to-point operation */
    ANA_K_COMM = 26,        /* (1.2) an NCCL communicator created or destroyed */
    ANA_K_LIBCALL = 27,     /* (1.2) any other recorded library call (handles, settings, groups) */
    ANA_K_RANGE = 28,       /* (1.2) an NVTX range push/pop/start/end or mark */
    ANA_K_LABEL = 29,       /* (1.2) an NVTX name given to a thread, stream, domain, memory region... */
    ANA_K_PTR_TABLE = 30,   /* (2.1) the device addresses a host-to-device copy carried (a pointer
                             * table); never packed (docs/trace-format.md) */
    ANA_K_PYCODE = 31,      /* (2.2) a Python code object that stacks' Python frames name; never packed */
    ANA_K_COUNT /* one past the last known kind */
};

enum ana_api {
    ANA_API_NONE = 0,
    ANA_API_MALLOC = 1,
    ANA_API_MALLOC_ASYNC = 2,
    ANA_API_MALLOC_MANAGED = 3,
    ANA_API_MALLOC_HOST = 4,
    ANA_API_HOST_ALLOC = 5,
    ANA_API_MALLOC_PITCH = 6,
    ANA_API_MALLOC_FROM_POOL_ASYNC = 7,
    ANA_API_FREE = 10,
    ANA_API_FREE_ASYNC = 11,
    ANA_API_FREE_HOST = 12,
    ANA_API_LAUNCH_KERNEL = 20,
    ANA_API_LAUNCH_KERNEL_PTSZ = 21,
    ANA_API_LAUNCH_KERNEL_EXC = 22,
    ANA_API_LAUNCH_KERNEL_EXC_PTSZ = 23,
    ANA_API_STUB_LAUNCH_KERNEL = 24,
    ANA_API_STUB_LAUNCH_KERNEL_PTSZ = 25,
    ANA_API_MEMCPY = 30,
    ANA_API_MEMCPY_ASYNC = 31,
    ANA_API_MEMCPY_2D = 32,
    ANA_API_MEMCPY_2D_ASYNC = 33,
    ANA_API_MEMCPY_TO_SYMBOL = 34,
    ANA_API_MEMCPY_FROM_SYMBOL = 35,
    ANA_API_MEMCPY_PEER = 36,
    ANA_API_MEMCPY_PEER_ASYNC = 37,
    ANA_API_MEMCPY_3D = 38,       /* (1.1) */
    ANA_API_MEMCPY_3D_ASYNC = 39, /* (1.1) */
    ANA_API_MEMSET = 40,
    ANA_API_MEMSET_ASYNC = 41,
    ANA_API_MEMSET_2D = 42,
    ANA_API_MEMSET_2D_ASYNC = 43,
    ANA_API_MEMSET_3D = 44,       /* (1.1) */
    ANA_API_MEMSET_3D_ASYNC = 45, /* (1.1) */
    /* (1.1) launches seen through CUPTI callbacks or replayed graphs */
    ANA_API_LAUNCH_COOPERATIVE = 18,
    ANA_API_CU_GRAPH_LAUNCH = 19,
    ANA_API_GRAPH_LAUNCH = 26,
    ANA_API_GRAPH_LAUNCH_PTSZ = 27,
    ANA_API_CU_LAUNCH_KERNEL = 28,
    ANA_API_CU_LAUNCH_KERNEL_EX = 29,
    /* (1.1) driver allocations (ALLOC) */
    ANA_API_CU_MEM_ALLOC = 50,
    ANA_API_CU_MEM_ALLOC_ASYNC = 51,
    ANA_API_CU_MEM_ALLOC_MANAGED = 52,
    ANA_API_CU_MEM_ALLOC_HOST = 53,
    ANA_API_CU_MEM_HOST_ALLOC = 54,
    ANA_API_CU_MEM_ALLOC_PITCH = 55,
    ANA_API_CU_MEM_ALLOC_FROM_POOL_ASYNC = 56,
    ANA_API_CU_MEM_CREATE = 57, /* ptr = the allocation handle, not an address */
    /* (1.1) driver frees (FREE) */
    ANA_API_CU_MEM_FREE = 60,
    ANA_API_CU_MEM_FREE_ASYNC = 61,
    ANA_API_CU_MEM_FREE_HOST = 62,
    ANA_API_CU_MEM_RELEASE = 63, /* ptr = the allocation handle */
    /* (1.1) virtual-memory calls (VMM) */
    ANA_API_CU_MEM_ADDRESS_RESERVE = 70,
    ANA_API_CU_MEM_ADDRESS_FREE = 71,
    ANA_API_CU_MEM_MAP = 72,
    ANA_API_CU_MEM_UNMAP = 73,
    ANA_API_CU_MEM_SET_ACCESS = 74,
    /* (1.1) driver copies and sets seen through CUPTI callbacks */
    ANA_API_CU_MEMCPY = 80,
    ANA_API_CU_MEMCPY_ASYNC = 81,
    ANA_API_CU_MEMCPY_HTOD = 82,
    ANA_API_CU_MEMCPY_HTOD_ASYNC = 83,
    ANA_API_CU_MEMCPY_DTOH = 84,
    ANA_API_CU_MEMCPY_DTOH_ASYNC = 85,
    ANA_API_CU_MEMCPY_DTOD = 86,
    ANA_API_CU_MEMCPY_DTOD_ASYNC = 87,
    ANA_API_CU_MEMSET_D8 = 90,
    ANA_API_CU_MEMSET_D32 = 91,
    ANA_API_CU_MEMSET_D8_ASYNC = 92,
    ANA_API_CU_MEMSET_D32_ASYNC = 93,
    /* (1.2) cuBLAS and cuBLASLt (GEMM; the others LIBCALL). The _64 forms record the
     * number of their 32-bit form. */
    ANA_API_CUBLAS_CREATE = 128,
    ANA_API_CUBLAS_DESTROY = 129,
    ANA_API_CUBLAS_SET_STREAM = 130,
    ANA_API_CUBLAS_SET_WORKSPACE = 131,
    ANA_API_CUBLAS_SET_MATH_MODE = 132,
    ANA_API_CUBLASLT_CREATE = 133,
    ANA_API_CUBLASLT_DESTROY = 134,
    ANA_API_CUBLAS_SGEMM = 140,
    ANA_API_CUBLAS_DGEMM = 141,
    ANA_API_CUBLAS_HGEMM = 142,
    ANA_API_CUBLAS_GEMM_EX = 143,
    ANA_API_CUBLAS_SGEMM_STRIDED_BATCHED = 144,
    ANA_API_CUBLAS_DGEMM_STRIDED_BATCHED = 145,
    ANA_API_CUBLAS_HGEMM_STRIDED_BATCHED = 146,
    ANA_API_CUBLAS_GEMM_STRIDED_BATCHED_EX = 147,
    ANA_API_CUBLAS_SGEMM_BATCHED = 148,
    ANA_API_CUBLAS_GEMM_BATCHED_EX = 149,
    ANA_API_CUBLASLT_MATMUL = 150,
    ANA_API_CUBLAS_DGEMM_BATCHED = 151,
    ANA_API_CUBLAS_HGEMM_BATCHED = 152,
    ANA_API_CUBLAS_SGEMM_EX = 153,
    /* (1.2) NCCL: communicators (COMM), operations (COLL), groups (LIBCALL) */
    ANA_API_NCCL_COMM_INIT_RANK = 160,
    ANA_API_NCCL_COMM_INIT_RANK_CONFIG = 161,
    ANA_API_NCCL_COMM_INIT_ALL = 162,
    ANA_API_NCCL_COMM_SPLIT = 163,
    ANA_API_NCCL_COMM_DESTROY = 164,
    ANA_API_NCCL_COMM_ABORT = 165,
    ANA_API_NCCL_COMM_FINALIZE = 166,
    ANA_API_NCCL_ALL_REDUCE = 170,
    ANA_API_NCCL_REDUCE = 171,
    ANA_API_NCCL_BROADCAST = 172,
    ANA_API_NCCL_BCAST = 173,
    ANA_API_NCCL_ALL_GATHER = 174,
    ANA_API_NCCL_REDUCE_SCATTER = 175,
    ANA_API_NCCL_SEND = 176,
    ANA_API_NCCL_RECV = 177,
    ANA_API_NCCL_GROUP_START = 178,
    ANA_API_NCCL_GROUP_END = 179,
    /* (1.2) never written by the preload: allocations of a framework's caching allocator
     * as an imported trace reports them (PyTorch profiler `[memory]` events, kineto.h) */
    ANA_API_IMPORTED_ALLOC = 200,
    ANA_API_IMPORTED_FREE = 201,
    ANA_API_COUNT = 256
};

/* The library a call belongs to: LIBCALL.lib, and the `lib` field of the API records made
 * inside a library call (1.2). */
enum ana_lib { ANA_LIB_NONE = 0, ANA_LIB_CUBLAS = 1, ANA_LIB_CUBLASLT = 2, ANA_LIB_NCCL = 3,
               ANA_LIB_CUDNN = 4, ANA_LIB_COUNT };
/* RANGE.op (1.2). */
enum ana_range_op { ANA_RANGE_PUSH = 1, ANA_RANGE_POP = 2, ANA_RANGE_START = 3, ANA_RANGE_END = 4,
                    ANA_RANGE_MARK = 5 };
/* LABEL.what (1.2). */
enum ana_label_what { ANA_LABEL_THREAD = 1, ANA_LABEL_STREAM = 2, ANA_LABEL_DEVICE = 3,
                      ANA_LABEL_CONTEXT = 4, ANA_LABEL_EVENT = 5, ANA_LABEL_DOMAIN = 6,
                      ANA_LABEL_CATEGORY = 7, ANA_LABEL_MEM_REGION = 8 };

enum ana_end_reason { ANA_END_EXIT = 1, ANA_END_DISABLED = 2, ANA_END_RECOVERED = 3 };
enum ana_meminfo_reason { ANA_MEMINFO_FAILED_ALLOC = 1 };
/* How an API record was captured (the `via` field, 1.1). */
enum ana_via { ANA_VIA_HOOK = 0, ANA_VIA_CUPTI = 1 };
/* GPU_MEMORY.op and GPU_MEMCPY/GPU_MEMSET.flags (1.1). */
enum ana_gpu_memory_op { ANA_GPU_MEM_ALLOC = 1, ANA_GPU_MEM_RELEASE = 2 };
enum { ANA_GPU_FLAG_ASYNC = 1 };
/* Memory kinds of GPU_MEMCPY/GPU_MEMSET/GPU_MEMORY: CUPTI's CUpti_ActivityMemoryKind. */
enum ana_mem_kind {
    ANA_MEMKIND_UNKNOWN = 0, ANA_MEMKIND_PAGEABLE = 1, ANA_MEMKIND_PINNED = 2,
    ANA_MEMKIND_DEVICE = 3, ANA_MEMKIND_ARRAY = 4, ANA_MEMKIND_MANAGED = 5,
    ANA_MEMKIND_DEVICE_STATIC = 6, ANA_MEMKIND_MANAGED_STATIC = 7
};
/* GPU_MEMCPY.copy_kind: CUPTI's CUpti_ActivityMemcpyKind. */
enum ana_copy_kind {
    ANA_COPY_UNKNOWN = 0, ANA_COPY_HTOD = 1, ANA_COPY_DTOH = 2, ANA_COPY_HTOA = 3,
    ANA_COPY_ATOH = 4, ANA_COPY_ATOA = 5, ANA_COPY_ATOD = 6, ANA_COPY_DTOA = 7,
    ANA_COPY_DTOD = 8, ANA_COPY_HTOH = 9, ANA_COPY_PTOP = 10
};

/* Name of an api number ("cudaMalloc"), or NULL when unknown. */
const char *ana_api_name(uint32_t api);
/* Name of a record kind ("ALLOC"), or NULL when unknown. */
const char *ana_kind_name(uint32_t kind);
/* 1 when the api allocates device memory (counts against GPU capacity). */
int ana_api_is_device_alloc(uint32_t api);
/* 1 when the api allocates pinned host memory. */
int ana_api_is_host_alloc(uint32_t api);
/* 1 when the api launches a graph (a LAUNCH with kernel 0 that runs the graph's work). */
int ana_api_is_graph_launch(uint32_t api);
/* Name of a library ("cuBLAS"), or NULL when unknown. */
const char *ana_lib_name(uint32_t lib);

typedef struct ana_str {
    const char *s; /* NUL-terminated when produced by the decoder */
    uint32_t len;
} ana_str;

typedef struct ana_strv {
    const ana_str *v;
    uint32_t n;
} ana_strv;

typedef struct ana_frames {
    const uint64_t *ip;
    uint32_t n;
} ana_frames;

typedef struct { uint64_t tid, base_ns; } ana_rec_segment;
typedef struct {
    uint64_t pid, ppid;
    int64_t rank, local_rank, world_size;
    uint64_t realtime_ns;
    ana_str host, exe;
    ana_strv argv;
} ana_rec_process;
typedef struct { uint64_t tid; ana_str name; } ana_rec_thread;
typedef struct { uint64_t bias, lo, hi; ana_str build_id; ana_str path; } ana_rec_module;
typedef struct { uint64_t id; ana_frames frames; } ana_rec_stack;
typedef struct { uint64_t id, host_fn; ana_str name; } ana_rec_kernel;
typedef struct {
    uint64_t api; int64_t ret; uint64_t ptr, size; int64_t device;
    uint64_t stream, stack, dur_ns, flags;
    uint64_t corr, via; /* (1.1) */
    uint64_t lib, call; /* (1.2) */
} ana_rec_alloc;
typedef struct {
    uint64_t api; int64_t ret; uint64_t ptr; int64_t device;
    uint64_t stream, stack, dur_ns;
    uint64_t corr, via; /* (1.1) */
    uint64_t lib, call; /* (1.2) */
} ana_rec_free;
typedef struct { int64_t device; uint64_t free, total, reason; } ana_rec_meminfo;
typedef struct {
    uint64_t api; int64_t ret; uint64_t kernel;
    uint64_t grid_x, grid_y, grid_z, block_x, block_y, block_z, shmem;
    uint64_t stream, stack, dur_ns;
    uint64_t corr, via; /* (1.1) */
    uint64_t lib, call; /* (1.2) */
    /* (1.3) The parameter words that looked like device pointers when the kernel was
     * launched: ptrs[i] is the value of the 8 bytes at byte ptr_at[i] of the parameter
     * buffer (docs/trace-format.md, LAUNCH). */
    ana_frames ptrs, ptr_at;
} ana_rec_launch;
typedef struct {
    uint64_t api; int64_t ret; uint64_t dst, src, bytes, dir, stream, stack, dur_ns;
    uint64_t corr, via; /* (1.1) */
    uint64_t lib, call; /* (1.2) */
} ana_rec_memcpy;
typedef struct {
    uint64_t api; int64_t ret; uint64_t ptr; int64_t value;
    uint64_t bytes, stream, stack, dur_ns;
    uint64_t corr, via; /* (1.1) */
    uint64_t lib, call; /* (1.2) */
} ana_rec_memset;
typedef struct {
    int64_t ordinal; ana_str name; uint64_t total_mem, sm_count, cc_major, cc_minor;
} ana_rec_device;
typedef struct { uint64_t tid, records, bytes; } ana_rec_dropped;
typedef struct { uint64_t reason; ana_str detail; } ana_rec_end;
typedef struct { ana_str key, value; } ana_rec_info;
/* GPU records (1.1): time_ns is the start (GPU_KERNEL/GPU_MEMCPY/GPU_MEMSET) or the moment
 * (GPU_MEMORY/GPU_POOL), on the same clock as every other record. */
typedef struct {
    uint64_t corr, dur_ns, kernel; int64_t device; uint64_t context, stream;
    uint64_t grid_x, grid_y, grid_z, block_x, block_y, block_z;
    uint64_t shmem_static, shmem_dynamic, regs, graph, graph_node;
} ana_rec_gpu_kernel;
typedef struct {
    uint64_t corr, dur_ns, bytes, copy_kind, src_kind, dst_kind, flags; int64_t device;
    uint64_t context, stream; int64_t src_device, dst_device; uint64_t graph, graph_node;
} ana_rec_gpu_memcpy;
typedef struct {
    uint64_t corr, dur_ns, bytes, value, mem_kind, flags; int64_t device;
    uint64_t context, stream, graph, graph_node;
} ana_rec_gpu_memset;
typedef struct {
    uint64_t corr, op, mem_kind, address, bytes; int64_t device;
    uint64_t context, stream, async, pool_type, pool_address, pc;
} ana_rec_gpu_memory;
typedef struct {
    uint64_t corr, op, pool_type, address, size, release_threshold, utilized; int64_t device;
} ana_rec_gpu_pool;
typedef struct { uint64_t records, reason; } ana_rec_gpu_dropped;
typedef struct {
    uint64_t api; int64_t ret; uint64_t va, size, handle, offset; int64_t device;
    uint64_t flags, stack, dur_ns, corr, via;
    uint64_t lib, call; /* (1.2) */
} ana_rec_vmm;
/* Library records (1.2). `call` numbers the process's recorded library calls (1, 2, ...);
 * API records made while the call ran carry it. Types are cudaDataType_t numbers, compute
 * types cublasComputeType_t, data types ncclDataType_t, operations ncclRedOp_t. */
typedef struct {
    uint64_t api; int64_t ret; uint64_t call, handle, stream;
    uint64_t m, n, k, batch, trans_a, trans_b, lda, ldb, ldc;
    uint64_t a_type, b_type, c_type, compute_type, math_mode, epilogue, workspace, flops;
    uint64_t stack, dur_ns;
    uint64_t a, b, c, d, ws; /* (1.3) operand, result and workspace pointers; 0 = unknown */
} ana_rec_gemm;
typedef struct {
    uint64_t api; int64_t ret; uint64_t call, comm, stream, count, dtype, bytes, op;
    int64_t peer; uint64_t sendbuff, recvbuff, group, seq, stack, dur_ns;
} ana_rec_coll;
typedef struct {
    uint64_t api; int64_t ret; uint64_t call, comm, comm_id; int64_t rank, size, device;
    uint64_t parent; int64_t color, key; uint64_t stack, dur_ns;
} ana_rec_comm;
typedef struct {
    uint64_t lib, api; int64_t ret; uint64_t call, handle, arg, arg2, stack, dur_ns;
} ana_rec_libcall;
typedef struct {
    uint64_t op, domain, id, category, color; ana_str name;
} ana_rec_range;
typedef struct {
    uint64_t what, domain, id, size; ana_str name;
} ana_rec_label;
/* (2.1) Right after the MEMCPY of a successful host-to-device copy whose bytes held device
 * addresses: ptrs[i] is the 8-byte value at byte ptr_at[i] of the copied bytes; `more`
 * counts those past the recorded ones. */
typedef struct {
    uint64_t dst, bytes;
    ana_frames ptrs, ptr_at;
    uint64_t more;
} ana_rec_ptr_table;
/* (2.2) A Python code object, defined before the STACK records whose Python frames name
 * it (docs/trace-format.md, "Python frames"). version = major * 100 + minor of the
 * interpreter, which fixes the line table's format; linetable holds co_linetable (3.10+)
 * or co_lnotab (3.9) as the interpreter kept it. */
typedef struct {
    uint64_t id, version, first_line;
    ana_str qualname, file, linetable;
} ana_rec_pycode;
/* A STACK frame with this bit set is a Python frame (2.2): bits 32..61 are the PYCODE id,
 * bits 0..31 the byte offset of the instruction the frame was executing, and ENTRY marks
 * the first Python frame run by one call of the interpreter's evaluation loop (the native
 * frame it stands for; docs/trace-format.md). */
#define ANA_PYFRAME_BIT (1ull << 63)
#define ANA_PYFRAME_ENTRY (1ull << 62)
#define ANA_PYFRAME_CODE(w) (((w) >> 32) & 0x3fffffffull)
#define ANA_PYFRAME_OFFSET(w) ((w) & 0xffffffffull)
enum ana_gpu_dropped_reason { ANA_GPU_DROPPED_CUPTI = 1, ANA_GPU_DROPPED_DECODE = 2 };

typedef struct ana_record {
    uint32_t kind;
    uint64_t tid;     /* from the enclosing SEGMENT */
    uint64_t time_ns; /* absolute (CLOCK_MONOTONIC); for SEGMENT its base */
    union {
        ana_rec_segment segment;
        ana_rec_process process;
        ana_rec_thread thread;
        ana_rec_module module;
        ana_rec_stack stack;
        ana_rec_kernel kernel;
        ana_rec_alloc alloc;
        ana_rec_free free;
        ana_rec_meminfo meminfo;
        ana_rec_launch launch;
        ana_rec_memcpy memcpy;
        ana_rec_memset memset;
        ana_rec_device device;
        ana_rec_dropped dropped;
        ana_rec_end end;
        ana_rec_info info;
        ana_rec_gpu_kernel gpu_kernel;
        ana_rec_gpu_memcpy gpu_memcpy;
        ana_rec_gpu_memset gpu_memset;
        ana_rec_gpu_memory gpu_memory;
        ana_rec_gpu_pool gpu_pool;
        ana_rec_gpu_dropped gpu_dropped;
        ana_rec_vmm vmm;
        ana_rec_gemm gemm;
        ana_rec_coll coll;
        ana_rec_comm comm;
        ana_rec_libcall libcall;
        ana_rec_range range;
        ana_rec_label label;
        ana_rec_ptr_table ptr_table;
        ana_rec_pycode pycode;
    } u;
} ana_record;

/* Upper bound of an encoded record whose strings/frames total `var_bytes` bytes of content
 * (string lengths, 10 bytes per frame). Callers size their scratch with it. */
/* An INFO record of key and value (NUL-terminated; they must outlive the record) at t. */
static inline ana_record ana_info_record(const char *key, const char *value, uint64_t t)
{
    ana_record r = { .kind = ANA_K_INFO, .time_ns = t };
    r.u.info = (ana_rec_info){ { key, (uint32_t)__builtin_strlen(key) }, { value, (uint32_t)__builtin_strlen(value) } };
    return r;
}

#define ANA_RECORD_FIXED_MAX 256
static inline size_t ana_record_bound(size_t var_bytes) { return ANA_RECORD_FIXED_MAX + var_bytes; }

/* Encodes rec (kind, u, and dt = rec->time_ns - prev_ns for non-SEGMENT kinds) as
 * kind, length, payload into buf. Returns the bytes written, or 0 when cap is too small or
 * the kind is unknown. Strings are taken by (s, len); frames by (ip, n). */
size_t ana_record_encode(uint8_t *buf, size_t cap, const ana_record *rec, uint64_t prev_ns);

/* Reads the kind and payload bounds of the record at p. Returns the header size, or 0 when
 * the header is malformed or the payload runs past avail. */
size_t ana_record_header(const uint8_t *p, size_t avail, uint32_t *kind, size_t *payload_len);

/* Scratch memory the decoder places strings, string vectors and frames in. */
typedef struct ana_scratch {
    uint8_t *buf;
    size_t cap, used;
} ana_scratch;

enum ana_decode_status { ANA_DEC_OK = 0, ANA_DEC_UNKNOWN_KIND = 1, ANA_DEC_MALFORMED = -1, ANA_DEC_NOMEM = -2 };

/* Decodes one payload of a known kind into rec->u and sets rec->kind and rec->time_ns
 * (= prev_ns + dt; for SEGMENT, base_ns). Does not touch rec->tid. */
int ana_record_decode(uint32_t kind, const uint8_t *payload, size_t len, uint64_t prev_ns,
                      ana_record *rec, ana_scratch *scratch);

/* (1.5) Time resolution. ana_record_to_ticks turns rec's time (time_ns; a SEGMENT's base_ns)
 * and its duration field, if its kind has one, from nanoseconds into ticks of 2^shift ns:
 * times rounded down, durations to the nearest tick. ana_record_from_ticks is the reverse
 * (tick * 2^shift). Both do nothing for shift 0. */
void ana_record_to_ticks(ana_record *rec, unsigned shift);
void ana_record_from_ticks(ana_record *rec, unsigned shift);

/* Reads only dt of a non-SEGMENT payload (the writer uses it to track a thread's clock).
 * Returns 1 on success. */
int ana_record_peek_dt(const uint8_t *payload, size_t len, int64_t *dt);

#endif
