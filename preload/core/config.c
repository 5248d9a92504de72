/* config.c — the configuration table (config.h, docs/configuration.md) and ana_cfg, the
 * preload's configuration, loaded once by lifecycle.c's constructor and read by every part
 * of the preload. Calls nothing of the preload. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "naming.h"
#include "records.h"

ana_config ana_cfg;

#define OFF(m) offsetof(ana_config, m)

static const ana_config_var VARS[] = {
    { "ANATOMIST_OUTPUT", ANA_CFG_STR, ANA_DEFAULT_OUTPUT, 0, 0, OFF(output),
      "Trace file name pattern: %h host, %p pid, %r rank, %% a percent sign. A process that is "
      "not the root of the run gets -PID inserted when the pattern has no %p. A relative name "
      "is resolved against the working directory the process had when the preload loaded." },
    { "ANATOMIST_DISABLE", ANA_CFG_BOOL, "0", 0, 1, OFF(disable),
      "1 turns the preload into a pass-through: nothing is recorded or written." },
    { "ANATOMIST_STACKS", ANA_CFG_BOOL, "1", 0, 1, OFF(stacks),
      "0 records no call stacks (cheaper; reports then have no allocation sites)." },
    { "ANATOMIST_CALL_DURATIONS", ANA_CFG_BOOL, "0", 0, 1, OFF(call_durations),
      "1 also times allocations, frees and launches (dur_ns of ALLOC, FREE, LAUNCH: a second "
      "clock reading per call); 0 records their start only. Copies, sets and virtual-memory "
      "calls are always timed." },
    { "ANATOMIST_PYTHON", ANA_CFG_BOOL, "1", 0, 1, OFF(python),
      "0 leaves Python frames out of stacks (they then show the interpreter's native frames)." },
    { "ANATOMIST_STACK_DEPTH", ANA_CFG_INT, "64", 1, 256, OFF(stack_depth),
      "Most frames kept per stack, innermost first." },
    { "ANATOMIST_FLUSH_MS", ANA_CFG_INT, "200", 10, 10000, OFF(flush_ms),
      "Longest time a record waits in memory before it is written; what a killed process can lose." },
    { "ANATOMIST_BUFFER_KB", ANA_CFG_INT, "1024", 64, 65536, OFF(buffer_kb),
      "Per-thread record buffer, KiB (rounded up to a power of two). A full buffer drops "
      "records and counts them." },
    { "ANATOMIST_ZSTD_LEVEL", ANA_CFG_INT, "3", 1, 19, OFF(zstd_level),
      "zstd compression level of trace chunks." },
    { "ANATOMIST_PACK", ANA_CFG_BOOL, "1", 0, 1, OFF(pack),
      "0 writes chunks unpacked: records as they are, not re-coded in columns before "
      "compression (packed traces are ~2x smaller and cheaper to compress)." },
    { "ANATOMIST_CHUNK_KB", ANA_CFG_INT, "1024", 16, 16384, OFF(chunk_kb),
      "Records gathered in the live file before a trace chunk is compressed and written, KiB "
      "(at least every 10 s). Bigger chunks compress better." },
    { "ANATOMIST_ROOT_PID", ANA_CFG_INT, "0", 0, 0x7fffffff, OFF(root_pid),
      "Set by `anatomist run`: the pid of the process it started, whose trace gets the name as "
      "given. Not for users." },
    { "ANATOMIST_RUN_ID", ANA_CFG_INT, "0", 0, 0x7fffffff, OFF(run_id),
      "Set by `anatomist run`: a random number each process of the run writes into its trace "
      "(INFO) and live file, so that what the run lists and recovers at its end are its own "
      "processes' files. Not for users." },
    { "ANATOMIST_CUPTI", ANA_CFG_BOOL, "1", 0, 1, OFF(cupti),
      "0 collects no GPU activity (kernels, copies, sets as the GPU ran them): API calls only." },
    { "ANATOMIST_CUPTI_BUFFER_KB", ANA_CFG_INT, "4096", 64, 262144, OFF(cupti_buffer_kb),
      "Size of one GPU activity buffer handed to CUPTI, KiB." },
    { "ANATOMIST_CUPTI_BUFFERS", ANA_CFG_INT, "16", 2, 1024, OFF(cupti_buffers),
      "Most GPU activity buffers in use at once (the pool's cap). When all are waiting to be "
      "written CUPTI drops records and counts them." },
    { "ANATOMIST_DRIVER_HOOKS", ANA_CFG_BOOL, "1", 0, 1, OFF(driver_hooks),
      "0 leaves driver entry points obtained through dlsym, cuGetProcAddress or "
      "cudaGetDriverEntryPoint unwrapped (CUPTI callbacks then record driver memory calls)." },
    { "ANATOMIST_NVTX", ANA_CFG_BOOL, "1", 0, 1, OFF(nvtx),
      "0 records no NVTX ranges, marks or names: the preload does not offer itself as the "
      "program's NVTX injection library." },
    { "ANATOMIST_KERNEL_ARGS", ANA_CFG_BOOL, "1", 0, 1, OFF(kernel_args),
      "0 records no kernel parameter words: LAUNCH records carry no device pointers (ptrs)." },
    { "ANATOMIST_LIVE", ANA_CFG_BOOL, "1", 0, 1, OFF(live),
      "0 keeps the record rings in anonymous memory instead of the live file beside the "
      "trace: a killed process then loses the records of its last flush interval." },
    { "ANATOMIST_TSC", ANA_CFG_BOOL, "1", 0, 1, OFF(tsc),
      "0 reads every record's time with clock_gettime instead of the CPU's time-stamp counter "
      "(used where it is invariant, mapped onto CLOCK_MONOTONIC)." },
    { "ANATOMIST_TIME_RESOLUTION", ANA_CFG_INT, "1", 1, 1L << ANA_TIME_SHIFT_MAX, OFF(time_res_ns),
      "Tick of every time and duration in the trace, ns: a power of two. Coarser ticks make "
      "traces smaller (times are most of their bytes); 1 keeps nanoseconds." },
    { "ANATOMIST_UNWIND", ANA_CFG_ENUM, "auto", 0, 0, OFF(unwind),
      "How call stacks are walked: auto (libunwind, repeated stacks recognised from a per-thread "
      "cache), fp (frame pointers only: for programs built with -fno-omit-frame-pointer), dwarf "
      "(libunwind at every call, no cache)." },
    { "ANATOMIST_CAPTURE_RANGE", ANA_CFG_STR, "none", 0, 0, OFF(capture_range),
      "Records activity only inside a range, as nsys --capture-range: cudaProfilerApi (from "
      "cudaProfilerStart to cudaProfilerStop, each time), nvtx:NAME (while the NVTX range with "
      "message NAME is pushed or started), or none. Outside, allocations, frees and definitions "
      "are still recorded; launches, copies, sets, library calls, NVTX ranges and GPU activity "
      "are not." },
    { "ANATOMIST_DELAY_MS", ANA_CFG_INT, "0", 0, 0x7fffffff, OFF(delay_ms),
      "Records activity only from this many ms after the process started (its preload "
      "loaded), as nsys --delay; what is kept outside is as for ANATOMIST_CAPTURE_RANGE." },
    { "ANATOMIST_DURATION_MS", ANA_CFG_INT, "0", 0, 0x7fffffff, OFF(duration_ms),
      "Records activity for this many ms after the delay, as nsys --duration; 0 = to the end. "
      "With a capture range, a window is the time both allow." },
    { NULL, 0, NULL, 0, 0, 0, NULL },
};

const ana_config_var *ana_config_vars(void) { return VARS; }

const char *ana_config_choices(const ana_config_var *v)
{
    return v->type == ANA_CFG_ENUM && v->off == OFF(unwind) ? "auto|fp|dwarf" : NULL;
}

static int parse_bool(const char *v, int *out)
{
    static const char *const yes[] = { "1", "yes", "true", "on" };
    static const char *const no[] = { "0", "no", "false", "off" };
    for (int i = 0; i < 4; i++) {
        if (!strcasecmp(v, yes[i])) { *out = 1; return 0; }
        if (!strcasecmp(v, no[i])) { *out = 0; return 0; }
    }
    return -1;
}

static int parse_int(const char *v, long min, long max, long *out)
{
    char *end;
    long n = strtol(v, &end, 10);
    if (end == v || *end != 0 || n < min || n > max)
        return -1;
    *out = n;
    return 0;
}

void ana_config_choice_text(const ana_config_var *v, int index, char *out, size_t cap)
{
    const char *w = ana_config_choices(v);
    for (int i = 0; w && i < index; i++)
        w = strchr(w, '|') ? strchr(w, '|') + 1 : NULL;
    size_t n = w ? strcspn(w, "|") : 0;
    snprintf(out, cap, "%.*s", (int)n, w ? w : "");
}

/* The index of text among the '|'-separated words of choices, or -1. */
static int parse_choice(const char *text, const char *choices, int *out)
{
    size_t len = strlen(text);
    for (int i = 0; *choices; i++) {
        const char *end = strchr(choices, '|');
        size_t n = end ? (size_t)(end - choices) : strlen(choices);
        if (n == len && !strncasecmp(text, choices, n)) {
            *out = i;
            return 0;
        }
        choices += n + (end != NULL);
    }
    return -1;
}

/* Stores text into the field of var; returns -1 when the text is not valid for it. */
static int store(ana_config *cfg, const ana_config_var *var, const char *text)
{
    char *field = (char *)cfg + var->off;
    switch (var->type) {
    case ANA_CFG_STR: {
        size_t cap = var->off == OFF(capture_range) ? sizeof(cfg->capture_range) : sizeof(cfg->output);
        if (!*text || strlen(text) >= cap)
            return -1;
        if (var->off == OFF(capture_range) && strcmp(text, "none") && strcmp(text, "cudaProfilerApi") &&
            (strncmp(text, "nvtx:", 5) || !text[5]))
            return -1;
        strcpy(field, text);
        return 0;
    }
    case ANA_CFG_BOOL:
        return parse_bool(text, (int *)field);
    case ANA_CFG_ENUM:
        return parse_choice(text, ana_config_choices(var), (int *)field);
    case ANA_CFG_INT: {
        long n;
        if (parse_int(text, var->min, var->max, &n) < 0)
            return -1;
        if (var->off == OFF(time_res_ns) && (n & (n - 1)))
            return -1; /* not a power of two */
        if (var->off == OFF(root_pid) || var->off == OFF(run_id))
            *(long *)field = n;
        else
            *(int *)field = (int)n;
        return 0;
    }
    }
    return -1;
}

int ana_config_load(ana_config *cfg, const char *(*get)(const char *name),
                    void (*warn)(const char *fmt, ...))
{
    int bad = 0, e = errno; /* strtol's ERANGE is not the program's to see */
    memset(cfg, 0, sizeof(*cfg));
    for (const ana_config_var *v = VARS; v->name; v++) {
        store(cfg, v, v->def);
        const char *text = get ? get(v->name) : getenv(v->name);
        if (!text)
            continue;
        if (store(cfg, v, text) < 0) {
            bad++;
            if (warn) {
                if (v->type == ANA_CFG_INT)
                    warn("ignoring %s=%s (expected an integer from %ld to %ld%s); using %s", v->name,
                         text, v->min, v->max,
                         v->off == OFF(time_res_ns) ? " that is a power of two" : "", v->def);
                else if (v->type == ANA_CFG_ENUM)
                    warn("ignoring %s=%s (expected one of %s); using %s", v->name, text, ana_config_choices(v), v->def);
                else if (v->type == ANA_CFG_BOOL)
                    warn("ignoring %s=%s (expected 0 or 1); using %s", v->name, text, v->def);
                else if (v->off == OFF(capture_range))
                    warn("ignoring %s=%s (expected none, cudaProfilerApi or nvtx:NAME); using %s",
                         v->name, text, v->def);
                else
                    warn("ignoring %s (empty or longer than %zu bytes); using %s", v->name,
                         sizeof(cfg->output) - 1, v->def);
            }
            store(cfg, v, v->def);
        }
    }
    cfg->time_shift = (unsigned)__builtin_ctz((unsigned)cfg->time_res_ns);
    errno = e;
    return bad;
}

int ana_config_absolute_output(ana_config *cfg)
{
    char cwd[sizeof(cfg->output)];
    if (cfg->output[0] == '/')
        return 0;
    if (!getcwd(cwd, sizeof(cwd)))
        return -1;
    size_t n = strlen(cwd), m = strlen(cfg->output);
    if (n == 1)
        n = 0; /* "/": no doubled slash */
    if (n + 1 + m >= sizeof(cfg->output)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memmove(cfg->output + n + 1, cfg->output, m + 1);
    memcpy(cfg->output, cwd, n);
    cfg->output[n] = '/';
    return 0;
}
