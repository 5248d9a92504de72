/* config.h — the preload's settings, read once from the environment.
 *
 * One table (config.c) lists every variable with its type, default, bounds and meaning;
 * docs/configuration.md documents the same table and tests/unit/preload checks that the
 * two agree. Parsing allocates nothing. */
#ifndef ANA_CONFIG_H
#define ANA_CONFIG_H

#include <stddef.h>

typedef struct ana_config {
    char output[1024];
    int disable;
    int stacks;
    int call_durations; /* ALLOC, FREE and LAUNCH records carry how long the call took */
    int stack_depth;
    int python;       /* Python frames in stacks (pyframes.c) */
    int flush_ms;
    int buffer_kb;
    int zstd_level;
    int pack;         /* chunks packed in columns (format 2.0) */
    int chunk_kb;     /* raw bytes of a trace chunk, KiB (with the live file) */
    long root_pid; /* 0 = not set */
    long run_id;   /* 0 = not set: the `anatomist run` this process runs under */
    int cupti;        /* collect GPU activity through CUPTI */
    int cupti_buffer_kb;
    int cupti_buffers; /* most activity buffers in use at once */
    int driver_hooks; /* wrap driver entry points handed out by dlsym/cuGetProcAddress */
    int nvtx;         /* record NVTX ranges and names as the program's NVTX injection */
    int kernel_args;  /* LAUNCH records the parameter words that look like device pointers */
    int live;         /* rings in the live file beside the trace (format/live.h) */
    int tsc;          /* record times from the TSC where it is invariant (clock.c) */
    int time_res_ns;  /* tick of the trace's times, ns: a power of two (1.5) */
    unsigned time_shift; /* log2(time_res_ns), derived */
    int unwind;       /* enum ana_unwind_mode (unwind.h): how stacks are walked */
    char capture_range[256]; /* none | cudaProfilerApi | nvtx:NAME (capture.c) */
    int delay_ms;     /* capture starts this long after the preload loaded */
    int duration_ms;  /* and lasts this long; 0 = to the end */
} ana_config;

/* ANA_CFG_ENUM: one of the words ana_config_choices gives, stored as its index (int). */
enum ana_cfg_type { ANA_CFG_STR, ANA_CFG_BOOL, ANA_CFG_INT, ANA_CFG_ENUM };

typedef struct ana_config_var {
    const char *name;
    enum ana_cfg_type type;
    const char *def; /* default, as text */
    long min, max;   /* for ANA_CFG_INT */
    size_t off;
    const char *doc;
} ana_config_var;

/* The table, terminated by an entry with name NULL. */
const ana_config_var *ana_config_vars(void);
/* The words an ANA_CFG_ENUM variable accepts, "a|b|c"; NULL for other types. */
const char *ana_config_choices(const ana_config_var *v);
/* The word with this index among v's choices, into out ("" when there is none). */
void ana_config_choice_text(const ana_config_var *v, int index, char *out, size_t cap);

/* The preload's configuration (config.c): loaded by the constructor (lifecycle.c), read
 * everywhere after. */
extern ana_config ana_cfg;

/* Fills cfg from getenv-like lookup `get` (NULL = getenv). Each bad value is reported
 * through warn (if not NULL) and replaced by its default. Returns the number of bad values. */
int ana_config_load(ana_config *cfg, const char *(*get)(const char *name),
                    void (*warn)(const char *fmt, ...));

/* Makes cfg->output absolute when it is relative, against the working directory now
 * (the preload calls it as it loads, before the program's main): a program that changes
 * directory before its first CUDA call still writes its trace where it was started.
 * Returns 0 (absolute now or already), or -1 with cfg->output unchanged (no working
 * directory, or the result would not fit). Sets errno on failure. */
int ana_config_absolute_output(ana_config *cfg);

#endif
