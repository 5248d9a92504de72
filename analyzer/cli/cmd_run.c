/* cmd_run.c — `anatomist run [OPTIONS] -- PROGRAM [ARGS...]`: runs a program with the
 * profiler preloaded and says where its trace went.
 *
 * Like time(1) and nsys, the parent lets the terminal's SIGINT/SIGQUIT go to the program,
 * which decides (the terminal sends them to the whole foreground group); one sent to this
 * process alone (kill PID) is passed on to the program, as are SIGTERM and SIGHUP. It exits
 * with the program's status (128 + signal when a signal killed it). Each run has a random
 * id (ANATOMIST_RUN_ID) that its processes write into their traces and live files, so that
 * what it lists and recovers at its end (run_traces.c) are the files of this run only.
 * The output pattern is handed to the processes as an absolute path, resolved against the
 * directory `run` was started in.
 * Part of cli/, the top layer: called by main.c (the commands) or by the commands (their
 * helpers); may call every layer below. */
#define _GNU_SOURCE /* pipe2 */
#include "cli/cli.h"
#include "format/naming.h"
#include "model/util.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char ana_run_usage[] =
    "Usage: anatomist run [OPTIONS] -- PROGRAM [ARGS...]\n"
    "       anatomist run [OPTIONS] PROGRAM [ARGS...]\n"
    "\n"
    "Runs PROGRAM with the profiler (libanatomist.so) preloaded. Each process of its tree\n"
    "that uses CUDA (the program, its children by fork, exec or subprocess) writes one\n"
    "trace; read it with 'anatomist report TRACE'. At the end, run lists the traces its\n"
    "processes wrote, with each one's pid, how it ended and its command, after writing in\n"
    "what the processes that did not finish their traces left in their live files. It\n"
    "suggests one report of them all when there are several.\n"
    "\n"
    "Options:\n"
    "  -o, --output PATTERN   trace file name (default " ANA_DEFAULT_OUTPUT "); %p is the\n"
    "                         pid, %h the host, %r the rank, %% a percent sign. A relative\n"
    "                         name is taken in the directory run was started in. The\n"
    "                         program's trace gets the name; another process's gets -PID\n"
    "                         before the extension when the pattern has no %p\n"
    "      --sim              run on the simulated CUDA device (no GPU needed)\n"
    "      --sim-memory SIZE  capacity of the simulated device, e.g. 16GiB, 512M (implies\n"
    "                         --sim)\n"
    "      --no-stacks        do not capture call stacks (less overhead, no sites)\n"
    "      --no-cupti         do not collect GPU activity through CUPTI (API calls only)\n"
    "      --no-nvtx          do not record NVTX ranges, marks and names\n"
    "      --stack-depth N    frames captured per stack (1..256)\n"
    "      --flush-ms N       write the trace at least every N milliseconds\n"
    "      --capture-range R  record activity only inside a range, as nsys does:\n"
    "                         cudaProfilerApi (cudaProfilerStart to cudaProfilerStop) or\n"
    "                         nvtx:NAME (while the NVTX range NAME is open); allocations,\n"
    "                         frees and definitions are recorded throughout\n"
    "      --delay SECONDS    record activity only from SECONDS after the start\n"
    "      --duration SECONDS and for SECONDS from then (with a range: both must allow)\n"
    "      --torch-per-tensor make PyTorch allocate every tensor with cudaMallocAsync\n"
    "                         (PYTORCH_CUDA_ALLOC_CONF backend:cudaMallocAsync), so that the\n"
    "                         memory anatomy sees tensors instead of cached segments\n"
    "  -q, --quiet            do not say where the trace was written\n"
    "  -h, --help             show this help\n"
    "\n"
    "Options after PROGRAM are the program's own. Settings can also come from the\n"
    "environment (ANATOMIST_OUTPUT, ANATOMIST_STACKS, ...); options win.\n"
    "\n"
    "Examples:\n"
    "  anatomist run -- python train.py --bf16\n"
    "  anatomist run -o traces/job.anat -- torchrun --nproc_per_node 8 train.py\n"
    "  anatomist run --sim --sim-memory 8GiB ./train_mlp\n"
    "\n"
    "Exit status: the program's own (128 + N when signal N killed it); 126 when PROGRAM is\n"
    "not executable, 127 when it is not found; 2 for a usage error or a missing profiler.\n";

typedef struct ana_run_opts {
    const char *output;
    int sim, quiet, no_stacks, no_cupti, no_nvtx, torch_per_tensor;
    const char *stack_depth, *flush_ms, *capture_range;
    char sim_memory[32], delay_ms[16], duration_ms[16];
} ana_run_opts;

enum { ANA_OPT_SIM = 256, ANA_OPT_SIM_MEMORY, ANA_OPT_NO_STACKS, ANA_OPT_DEPTH, ANA_OPT_FLUSH,
       ANA_OPT_NO_CUPTI, ANA_OPT_NO_NVTX, ANA_OPT_TORCH_PER_TENSOR, ANA_OPT_CAPTURE_RANGE,
       ANA_OPT_DELAY, ANA_OPT_DURATION };

/* SECONDS (a decimal number) as milliseconds for the preload (preload/core/config.c bounds). */
static int ana_run_seconds(const char *opt, const char *val, char *ms, size_t cap)
{
    char *end;
    double s = strtod(val, &end);
    if (end == val || *end || !(s >= 0) || s > 2000000.0)
        return ana_cli_usage_error("run", "run: %s wants seconds (e.g. 30 or 2.5), not '%s'", opt, val);
    snprintf(ms, cap, "%lld", (long long)(s * 1000.0 + 0.5));
    return 0;
}

static int ana_run_check_range(const char *val)
{
    if (!strcmp(val, "cudaProfilerApi") || !strcmp(val, "none") || (!strncmp(val, "nvtx:", 5) && val[5]))
        return 0;
    return ana_cli_usage_error("run", "run: --capture-range wants cudaProfilerApi or nvtx:NAME, not '%s'", val);
}

static volatile sig_atomic_t ana_run_child = 0;

static void ana_run_forward(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    /* The terminal's SIGINT/SIGQUIT (si_code SI_KERNEL) reached the program already; one
     * of our own (kill of our group) is not to be sent twice. */
    if ((sig == SIGINT || sig == SIGQUIT) && si && (si->si_code == SI_KERNEL || si->si_pid == getpid()))
        return;
    if (ana_run_child > 0)
        kill((pid_t)ana_run_child, sig);
}

static int ana_run_check_uint(const char *opt, const char *val, uint64_t lo, uint64_t hi)
{
    uint64_t v;
    if (ana_parse_uint(val, hi, &v) != 0 || v < lo)
        return ana_cli_usage_error("run", "run: %s wants a number from %llu to %llu, not '%s'",
                                   opt, (unsigned long long)lo, (unsigned long long)hi, val);
    return 0;
}

static int ana_run_parse_opt(ana_run_opts *o, int c, char **argv)
{
    uint64_t bytes;
    switch (c) {
    case 'o': o->output = optarg; return 0;
    case 'q': o->quiet = 1; return 0;
    case ANA_OPT_SIM: o->sim = 1; return 0;
    case ANA_OPT_NO_STACKS: o->no_stacks = 1; return 0;
    case ANA_OPT_NO_CUPTI: o->no_cupti = 1; return 0;
    case ANA_OPT_NO_NVTX: o->no_nvtx = 1; return 0;
    case ANA_OPT_TORCH_PER_TENSOR: o->torch_per_tensor = 1; return 0;
    case ANA_OPT_CAPTURE_RANGE: o->capture_range = optarg; return ana_run_check_range(optarg);
    case ANA_OPT_DELAY: return ana_run_seconds("--delay", optarg, o->delay_ms, sizeof(o->delay_ms));
    case ANA_OPT_DURATION: return ana_run_seconds("--duration", optarg, o->duration_ms, sizeof(o->duration_ms));
    case ANA_OPT_SIM_MEMORY:
        if (ana_parse_size(optarg, &bytes) != 0)
            return ana_cli_usage_error("run", "run: --sim-memory wants a size such as 16GiB, "
                                              "512M or 1000000000, not '%s'", optarg);
        snprintf(o->sim_memory, sizeof(o->sim_memory), "%llu", (unsigned long long)bytes);
        o->sim = 1;
        return 0;
    case ANA_OPT_DEPTH: o->stack_depth = optarg; return ana_run_check_uint("--stack-depth", optarg, 1, 256);
    /* the preload's ranges (preload/core/config.c): a value outside is ignored there */
    case ANA_OPT_FLUSH: o->flush_ms = optarg; return ana_run_check_uint("--flush-ms", optarg, 10, 10000);
    default: return ana_cli_bad_option("run", argv, c);
    }
}

/* Returns the index of PROGRAM in argv, 0 after --help, or -ANA_EXIT_BAD. */
static int ana_run_parse(ana_run_opts *o, int argc, char **argv)
{
    static const struct option opts[] = {
        { "output", required_argument, NULL, 'o' },
        { "quiet", no_argument, NULL, 'q' },
        { "sim", no_argument, NULL, ANA_OPT_SIM },
        { "sim-memory", required_argument, NULL, ANA_OPT_SIM_MEMORY },
        { "no-stacks", no_argument, NULL, ANA_OPT_NO_STACKS },
        { "no-cupti", no_argument, NULL, ANA_OPT_NO_CUPTI },
        { "no-nvtx", no_argument, NULL, ANA_OPT_NO_NVTX },
        { "stack-depth", required_argument, NULL, ANA_OPT_DEPTH },
        { "flush-ms", required_argument, NULL, ANA_OPT_FLUSH },
        { "torch-per-tensor", no_argument, NULL, ANA_OPT_TORCH_PER_TENSOR },
        { "capture-range", required_argument, NULL, ANA_OPT_CAPTURE_RANGE },
        { "delay", required_argument, NULL, ANA_OPT_DELAY },
        { "duration", required_argument, NULL, ANA_OPT_DURATION },
        { "help", no_argument, NULL, 'h' },
        { 0, 0, 0, 0 },
    };
    int c;
    opterr = 0;
    /* '+': stop at PROGRAM, whose options are its own. */
    while ((c = getopt_long(argc, argv, "+:ho:q", opts, NULL)) != -1) {
        if (c == 'h') {
            fputs(ana_run_usage, stdout);
            return 0;
        }
        if (ana_run_parse_opt(o, c, argv) != 0)
            return -ANA_EXIT_BAD;
    }
    if (optind >= argc) {
        ana_cli_usage_error("run", "run: which program? (anatomist run -- PROGRAM [ARGS...])");
        return -ANA_EXIT_BAD;
    }
    return optind;
}

/* <directory of this executable>/REL into out (resolved), or -1 when it does not exist. */
static int ana_run_beside_exe(const char *rel, char *out, size_t cap)
{
    char self[PATH_MAX], resolved[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0)
        return -1;
    self[n] = 0;
    char *slash = strrchr(self, '/');
    if (slash)
        *slash = 0;
    if ((size_t)snprintf(out, cap, "%s/%s", self, rel) >= cap || !realpath(out, resolved))
        return -1;
    snprintf(out, cap, "%s", resolved);
    return 0;
}

static void ana_run_prepend(const char *var, const char *value)
{
    const char *old = getenv(var);
    if (!old || !*old) {
        setenv(var, value, 1);
        return;
    }
    size_t n = strlen(value) + strlen(old) + 2;
    char *s = ana_xmalloc(n);
    snprintf(s, n, "%s:%s", value, old);
    setenv(var, s, 1);
    free(s);
}

/* The trace's directory must exist and be writable: better to say so now than to run a
 * long job that leaves no trace. (%-escapes may only appear in the file name part.) */
static int ana_run_check_outdir(const char *pattern)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(pattern, '/');
    if (!slash)
        snprintf(dir, sizeof(dir), ".");
    else if (slash == pattern)
        snprintf(dir, sizeof(dir), "/");
    else
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash - pattern), pattern);
    if (strchr(dir, '%'))
        return 0; /* expanded per process by the preload; it reports problems itself */
    if (access(dir, W_OK | X_OK) != 0) {
        fprintf(stderr, "anatomist: cannot write the trace into %s: %s; create it or choose "
                        "another place with -o\n", dir, strerror(errno));
        return -1;
    }
    return 0;
}

typedef struct ana_run_env {
    char preload[PATH_MAX], simdir[PATH_MAX];
    char pattern[PATH_MAX];  /* absolute */
    size_t shown_from;       /* see ana_run_end */
    long run_id; /* ANATOMIST_RUN_ID: 1..2^31-1 */
} ana_run_env;

/* The pattern against the directory run was started in, so that every process of the run
 * writes where the user expects, whatever directory it is in at its first CUDA call. */
static int ana_run_absolute(const char *pattern, ana_run_env *env)
{
    char cwd[PATH_MAX];
    env->shown_from = 0;
    if (pattern[0] == '/') {
        if ((size_t)snprintf(env->pattern, sizeof(env->pattern), "%s", pattern) < sizeof(env->pattern))
            return 0;
    } else if (!getcwd(cwd, sizeof(cwd))) {
        fprintf(stderr, "anatomist: cannot resolve the output name %s: the working directory is "
                        "unknown (%s); give -o an absolute path\n", pattern, strerror(errno));
        return -1;
    } else {
        const char *sep = strcmp(cwd, "/") ? "/" : "";
        int n = snprintf(env->pattern, sizeof(env->pattern), "%s%s%s", cwd, sep, pattern);
        env->shown_from = strlen(cwd) + strlen(sep);
        if (n > 0 && (size_t)n < sizeof(env->pattern))
            return 0;
    }
    fprintf(stderr, "anatomist: the output name %s is too long\n", pattern);
    return -1;
}

/* A random id for this run (never 0: 0 is "not under anatomist run"). */
static long ana_run_new_id(void)
{
    uint32_t v = 0;
    if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v))
        v = (uint32_t)time(NULL) ^ ((uint32_t)getpid() << 12);
    v &= 0x7fffffff;
    return v ? (long)v : 1;
}

static int ana_run_locate(const ana_run_opts *o, ana_run_env *env)
{
    if (ana_run_beside_exe("../lib/libanatomist.so", env->preload, sizeof(env->preload)) != 0) {
        fprintf(stderr, "anatomist: the profiler library %s is missing; build it with "
                        "scripts/build (or cmake --build on this build directory)\n",
                env->preload);
        return -1;
    }
    if (o->sim && ana_run_beside_exe("../sim", env->simdir, sizeof(env->simdir)) != 0) {
        fprintf(stderr, "anatomist: the simulated CUDA libraries (%s) are missing; configure "
                        "with -DANA_BUILD_SIM=ON and build\n", env->simdir);
        return -1;
    }
    const char *user = getenv("ANATOMIST_OUTPUT");
    if (ana_run_absolute(o->output ? o->output : user && *user ? user : ANA_DEFAULT_OUTPUT, env) != 0)
        return -1;
    return ana_run_check_outdir(env->pattern);
}

/* The program's NVTX loads its injection library at its first NVTX call; the preload is
 * that library (unless NVTX is off, or the user named another, e.g. a second profiler's).
 * Set here as well as by the preload's constructor: NVTX may initialise before that ran. */
static void ana_run_nvtx_env(const ana_run_opts *o, const ana_run_env *env)
{
    const char *v = getenv("ANATOMIST_NVTX"), *inj = getenv("NVTX_INJECTION64_PATH");
    int off = o->no_nvtx || (v && (!strcmp(v, "0") || !strcasecmp(v, "no") || !strcasecmp(v, "false") ||
                                   !strcasecmp(v, "off")));
    if (!off && (!inj || !*inj))
        setenv("NVTX_INJECTION64_PATH", env->preload, 1);
}

/* In the child, between fork and exec. */
/* PYTORCH_CUDA_ALLOC_CONF with its backend set to cudaMallocAsync, the user's other
 * settings kept: each tensor is then one cudaMallocAsync/cudaFreeAsync pair the profiler
 * sees, where the native caching allocator hands out pieces of large segments. */
static void ana_run_torch_env(const ana_run_opts *o)
{
    const char *old = getenv("PYTORCH_CUDA_ALLOC_CONF");
    char conf[1024] = "";
    size_t used = 0;
    if (old) {
        char *copy = ana_xstrdup(old), *save = NULL;
        for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
            while (*item == ' ')
                item++;
            if (!*item || strncmp(item, "backend", 7) == 0)
                continue;
            int n = snprintf(conf + used, sizeof(conf) - used, "%s,", item);
            if (n > 0 && (size_t)n < sizeof(conf) - used)
                used += (size_t)n;
        }
        free(copy);
    }
    snprintf(conf + used, sizeof(conf) - used, "backend:cudaMallocAsync");
    setenv("PYTORCH_CUDA_ALLOC_CONF", conf, 1);
    if (!o->quiet)
        fprintf(stderr, "anatomist: PYTORCH_CUDA_ALLOC_CONF=%s (one allocation per tensor)\n", conf);
}

static void ana_run_child_env(const ana_run_opts *o, const ana_run_env *env)
{
    if (o->torch_per_tensor)
        ana_run_torch_env(o);
    char pid[32], id[32];
    snprintf(id, sizeof(id), "%ld", env->run_id);
    setenv("ANATOMIST_RUN_ID", id, 1);
    ana_run_prepend("LD_PRELOAD", env->preload);
#ifdef ANA_SANITIZER_RUNTIME
    /* A sanitizer build (cmake/AnaSanitize.cmake): the preload is instrumented, and
     * AddressSanitizer's runtime must be the first library of the process, before it. */
    ana_run_prepend("LD_PRELOAD", ANA_SANITIZER_RUNTIME);
#endif
    if (o->sim)
        ana_run_prepend("LD_LIBRARY_PATH", env->simdir);
    setenv("ANATOMIST_OUTPUT", env->pattern, 1);
    if (o->sim_memory[0])
        setenv("ANATOMIST_SIM_MEMORY", o->sim_memory, 1);
    if (o->no_stacks)
        setenv("ANATOMIST_STACKS", "0", 1);
    if (o->no_cupti)
        setenv("ANATOMIST_CUPTI", "0", 1);
    if (o->no_nvtx)
        setenv("ANATOMIST_NVTX", "0", 1);
    ana_run_nvtx_env(o, env);
    if (o->stack_depth)
        setenv("ANATOMIST_STACK_DEPTH", o->stack_depth, 1);
    if (o->flush_ms)
        setenv("ANATOMIST_FLUSH_MS", o->flush_ms, 1);
    if (o->capture_range)
        setenv("ANATOMIST_CAPTURE_RANGE", o->capture_range, 1);
    if (o->delay_ms[0])
        setenv("ANATOMIST_DELAY_MS", o->delay_ms, 1);
    if (o->duration_ms[0])
        setenv("ANATOMIST_DURATION_MS", o->duration_ms, 1);
    snprintf(pid, sizeof(pid), "%ld", (long)getpid());
    setenv("ANATOMIST_ROOT_PID", pid, 1);
}

static void ana_run_signals(int install)
{
    struct sigaction fwd = { .sa_sigaction = ana_run_forward, .sa_flags = SA_SIGINFO | SA_RESTART },
                     dfl = { .sa_handler = SIG_DFL };
    sigemptyset(&fwd.sa_mask);
    sigaction(SIGINT, install ? &fwd : &dfl, NULL);
    sigaction(SIGQUIT, install ? &fwd : &dfl, NULL);
    sigaction(SIGTERM, install ? &fwd : &dfl, NULL);
    sigaction(SIGHUP, install ? &fwd : &dfl, NULL);
}

static void ana_run_block(int block, sigset_t *saved)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    if (block)
        sigprocmask(SIG_BLOCK, &set, saved);
    else
        sigprocmask(SIG_SETMASK, saved, NULL);
}

static _Noreturn void ana_run_exec(const ana_run_opts *o, const ana_run_env *env, char **prog,
                                   int errfd, const sigset_t *mask)
{
    ana_run_signals(0);
    sigprocmask(SIG_SETMASK, mask, NULL);
    ana_run_child_env(o, env);
    execvp(prog[0], prog);
    int e = errno;
    if (write(errfd, &e, sizeof(e)) < 0) {
        /* the parent then sees a plain exit status 127 */
    }
    _exit(e == ENOENT ? 127 : 126);
}

/* Waits for the child; returns its exit status in the shell's convention. */
static int ana_run_wait(pid_t pid)
{
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            return ANA_EXIT_BAD;
    }
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return ANA_EXIT_FAIL;
}

/* Parent side: learns from the close-on-exec pipe whether exec worked. */
static int ana_run_exec_failed(int fd, const char *prog)
{
    int e;
    ssize_t n;
    while ((n = read(fd, &e, sizeof(e))) < 0 && errno == EINTR)
        ;
    close(fd);
    if (n != (ssize_t)sizeof(e))
        return 0;
    fprintf(stderr, "anatomist: cannot run %s: %s\n", prog, strerror(e));
    return e == ENOENT ? 127 : 126;
}

int ana_cmd_run(int argc, char **argv)
{
    ana_run_opts o = { 0 };
    ana_run_env env;
    int pfd[2], idx = ana_run_parse(&o, argc, argv), rc;
    sigset_t saved;
    if (idx <= 0)
        return idx == 0 ? ANA_EXIT_OK : -idx;
    if (ana_run_locate(&o, &env) != 0 || pipe2(pfd, O_CLOEXEC) != 0)
        return ANA_EXIT_BAD;
    env.run_id = ana_run_new_id();
    struct timespec started;
    clock_gettime(CLOCK_REALTIME, &started);
    fflush(NULL);
    ana_run_signals(1);
    ana_run_block(1, &saved);
    pid_t pid = fork();
    if (pid == 0) {
        close(pfd[0]);
        ana_run_exec(&o, &env, argv + idx, pfd[1], &saved);
    }
    close(pfd[1]);
    if (pid < 0) {
        fprintf(stderr, "anatomist: cannot start %s: %s\n", argv[idx], strerror(errno));
        close(pfd[0]);
        return ANA_EXIT_BAD;
    }
    ana_run_child = pid;
    ana_run_block(0, &saved);
    int failed = ana_run_exec_failed(pfd[0], argv[idx]);
    rc = ana_run_wait(pid);
    ana_run_child = 0;
    ana_run_signals(0); /* the program is gone: ^C now stops us */
    if (failed)
        return failed;
    ana_run_traces(&(ana_run_end){ .pattern = env.pattern, .shown_from = env.shown_from,
                                   .root_pid = (long)pid, .run_id = env.run_id, .status = rc,
                                   .started = started, .quiet = o.quiet });
    return rc;
}
