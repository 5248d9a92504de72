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

#define ANA_FORMAT_MAJOR 1
#define ANA_FORMAT_MINOR 0
#define ANA_HEADER_SIZE 32
#define ANA_CHUNK_HEADER_SIZE 16
#define ANA_CHUNK_MAX (64u << 20)
#define ANA_MAX_FRAMES 256

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
    ANA_API_MEMSET = 40,
    ANA_API_MEMSET_ASYNC = 41,
    ANA_API_MEMSET_2D = 42,
    ANA_API_MEMSET_2D_ASYNC = 43,
    ANA_API_COUNT = 64
};

enum ana_end_reason { ANA_END_EXIT = 1, ANA_END_DISABLED = 2 };
enum ana_meminfo_reason { ANA_MEMINFO_FAILED_ALLOC = 1 };

/* Name of an api number ("cudaMalloc"), or NULL when unknown. */
const char *ana_api_name(uint32_t api);
/* Name of a record kind ("ALLOC"), or NULL when unknown. */
const char *ana_kind_name(uint32_t kind);
/* 1 when the api allocates device memory (counts against GPU capacity). */
int ana_api_is_device_alloc(uint32_t api);

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
} ana_rec_alloc;
typedef struct {
    uint64_t api; int64_t ret; uint64_t ptr; int64_t device;
    uint64_t stream, stack, dur_ns;
} ana_rec_free;
typedef struct { int64_t device; uint64_t free, total, reason; } ana_rec_meminfo;
typedef struct {
    uint64_t api; int64_t ret; uint64_t kernel;
    uint64_t grid_x, grid_y, grid_z, block_x, block_y, block_z, shmem;
    uint64_t stream, stack, dur_ns;
} ana_rec_launch;
typedef struct {
    uint64_t api; int64_t ret; uint64_t dst, src, bytes, dir, stream, stack, dur_ns;
} ana_rec_memcpy;
typedef struct {
    uint64_t api; int64_t ret; uint64_t ptr; int64_t value;
    uint64_t bytes, stream, stack, dur_ns;
} ana_rec_memset;
typedef struct {
    int64_t ordinal; ana_str name; uint64_t total_mem, sm_count, cc_major, cc_minor;
} ana_rec_device;
typedef struct { uint64_t tid, records, bytes; } ana_rec_dropped;
typedef struct { uint64_t reason; ana_str detail; } ana_rec_end;
typedef struct { ana_str key, value; } ana_rec_info;

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
    } u;
} ana_record;

/* Upper bound of an encoded record whose strings/frames total `var_bytes` bytes of content
 * (string lengths, 10 bytes per frame). Callers size their scratch with it. */
#define ANA_RECORD_FIXED_MAX 192
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

/* Reads only dt of a non-SEGMENT payload (the writer uses it to track a thread's clock).
 * Returns 1 on success. */
int ana_record_peek_dt(const uint8_t *payload, size_t len, int64_t *dt);

#endif
