#!/usr/bin/env bash
# Start-up cost of the Anatomist preload: the wall time it adds to a minimal CUDA program
# (goal: 5 ms or less). Run by hand to fill docs/overhead.md; not a test.
#
#   bench/startup.sh BUILD_DIR [RUNS]        (RUNS per variant, default 200)
#   STRACE=1 bench/startup.sh BUILD_DIR      (also: where the time goes, see below)
#
# The program is bench/peer_alloc.c built as peer_cudamalloc, run as
# `peer_cudamalloc --pairs 1 --reps 1 --warmup 0 --depth 0`: one cudaMalloc and one
# cudaFree on the simulated device (LD_LIBRARY_PATH=BUILD_DIR/sim), four lines of output.
# Its whole life is timed from fork to the parent's wait (posix_spawn, CLOCK_MONOTONIC),
# so the figure holds what the preload costs at load time (its constructor), at the first
# CUDA call (the session: trace and live files, writer thread, CUPTI) and at exit (the
# final flush, the writer's join). Variants, run in a shuffled order in every round so
# that drift in the machine's speed hits all alike:
#   base       no preload
#   default    LD_PRELOAD=libanatomist.so with its defaults
#   live0      ANATOMIST_LIVE=0   (rings in anonymous memory, no live file)
#   cupti0     ANATOMIST_CUPTI=0  (no CUPTI subscription, no activity buffers)
#   stacks0    ANATOMIST_STACKS=0 (libunwind is not loaded)
#   minimal    all three off
#   load-only  the preload on peer_malloc (which makes no CUDA call): the constructor alone,
#              against base-malloc (peer_malloc without the preload)
# Prints one markdown row per variant: median and 90th percentile wall time and what they
# add against the variant's baseline, and the median CPU time (user + system of all the
# process's threads, wait4): wall time also holds waits for the preload's threads to be
# scheduled, which grow with whatever else competes for the CPUs; CPU time does not.
#
# With STRACE=1 it then runs the default variant and the baseline once each under
# `strace -f -r` and `strace -f -c` and prints the system calls the preload adds (count
# and time by call) and the slowest gaps of the preloaded run, so that the time can be
# traced to what causes it (loading libunwind, creating the live file, the writer thread,
# CUPTI); the full logs are kept in the directory it names.
set -euo pipefail

die() { echo "bench/startup.sh: $*" >&2; exit 1; }

[[ $# -ge 1 && $# -le 2 ]] || die "usage: bench/startup.sh BUILD_DIR [RUNS]"
build=$(cd "$1" 2>/dev/null && pwd) || die "no such build directory: $1"
runs=${2:-200}
[[ $runs =~ ^[1-9][0-9]*$ ]] || die "RUNS must be a positive integer, not '$runs'"
pc=$build/bench/peer_cudamalloc pm=$build/bench/peer_malloc
sim=$build/sim preload=$build/lib/libanatomist.so
[[ -x $pc && -x $pm ]] || die "$pc or $pm not found: build the bench directory"
[[ -e $sim/libcudart.so.13 ]] || die "$sim/libcudart.so.13 not found: build with -DANA_BUILD_SIM=ON"
[[ -e $preload ]] || die "$preload not found: build the preload first"

out=$(mktemp -d "${TMPDIR:-/tmp}/anatomist-startup.XXXXXX")
[[ -n ${STRACE:-} ]] || trap 'rm -rf "$out"' EXIT

echo "Machine: $(nproc) CPUs, $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo), $(uname -sr), $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d" " -f1-3 /proc/loadavg) at the start (the runs compete with whatever else runs)"
echo "Program: peer_cudamalloc --pairs 1 --reps 1 --warmup 0 --depth 0 (one cudaMalloc/cudaFree on the sim), $runs runs per variant, shuffled within each round"
echo
python3 - "$out" "$runs" "$pc" "$pm" "$sim" "$preload" <<'EOF'
import os, random, statistics as st, sys, time
out, runs, pc, pm, sim, preload = sys.argv[1], int(sys.argv[2]), *sys.argv[3:]
args = ["--pairs", "1", "--reps", "1", "--warmup", "0", "--depth", "0"]
pre = {"LD_PRELOAD": preload, "ANATOMIST_OUTPUT": out + "/t.anat"}
V = {  # name: (program, extra environment, baseline)
    "base": (pc, {}, None),
    "default": (pc, pre, "base"),
    "live0": (pc, {**pre, "ANATOMIST_LIVE": "0"}, "base"),
    "cupti0": (pc, {**pre, "ANATOMIST_CUPTI": "0"}, "base"),
    "stacks0": (pc, {**pre, "ANATOMIST_STACKS": "0"}, "base"),
    "minimal": (pc, {**pre, "ANATOMIST_LIVE": "0", "ANATOMIST_CUPTI": "0", "ANATOMIST_STACKS": "0"}, "base"),
    "base-malloc": (pm, {}, None),
    "load-only": (pm, pre, "base-malloc"),
}
env0 = {k: v for k, v in os.environ.items() if not k.startswith(("ANATOMIST_", "LD_PRELOAD"))}
env0["LD_LIBRARY_PATH"] = sim
devnull = os.open(os.devnull, os.O_WRONLY)
fa = [(os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)]
def once(name):
    prog, extra, _ = V[name]
    env = {**env0, **extra}
    t0 = time.perf_counter_ns()
    pid = os.posix_spawn(prog, [prog] + args, env, file_actions=fa)
    _, status, ru = os.wait4(pid, 0)
    t = time.perf_counter_ns() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"bench/startup.sh: {name} failed (status {status})")
    return t / 1e6, (ru.ru_utime + ru.ru_stime) * 1e3
T = {n: [] for n in V}  # wall ms
C = {n: [] for n in V}  # CPU ms (user + system, all threads)
for n in V:  # one untimed run each: page cache, dynamic loader caches
    once(n)
for r in range(runs):
    order = list(V)
    random.shuffle(order)
    for n in order:
        t, c = once(n)
        T[n].append(t)
        C[n].append(c)
p90 = lambda xs: sorted(xs)[int(0.9 * (len(xs) - 1))]
print("| variant | median wall | p90 wall | added (median) | added (p90) | median CPU | added CPU |")
print("|---|---:|---:|---:|---:|---:|---:|")
for n, (_, _, b) in V.items():
    m, q = st.median(T[n]), p90(T[n])
    add = "" if b is None else f"{m - st.median(T[b]):+.2f} ms"
    addq = "" if b is None else f"{q - p90(T[b]):+.2f} ms"
    c = st.median(C[n])
    addc = "" if b is None else f"{c - st.median(C[b]):+.2f} ms"
    print(f"| {n} | {m:.2f} ms | {q:.2f} ms | {add} | {addq} | {c:.2f} ms | {addc} |")
EOF

[[ -n ${STRACE:-} ]] || exit 0
command -v strace >/dev/null || die "strace not found (Debian package strace)"
args=(--pairs 1 --reps 1 --warmup 0 --depth 0)
for v in base default; do
    env=(LD_LIBRARY_PATH="$sim")
    [[ $v == base ]] || env+=(LD_PRELOAD="$preload" ANATOMIST_OUTPUT="$out/s.anat")
    env "${env[@]}" strace -f -r -o "$out/$v.r" "$pc" "${args[@]}" >/dev/null
    env "${env[@]}" strace -f -c -o "$out/$v.c" "$pc" "${args[@]}" >/dev/null
done
echo
echo "System calls added by the preload (strace -f -c, one run each; strace slows every call):"
echo
python3 - "$out" <<'EOF'
import re, sys
out = sys.argv[1]
def counts(v):
    c = {}
    for l in open(f"{out}/{v}.c"):
        f = l.split()
        if len(f) >= 5 and re.match(r"^[0-9.]+$", f[0]) and f[-1] not in ("total",):
            c[f[-1]] = (int(f[3]), float(f[1]))  # calls, seconds
    return c
b, d = counts("base"), counts("default")
print("| system call | calls without | calls with | time with (strace) |")
print("|---|---:|---:|---:|")
for k in sorted(d, key=lambda k: -d[k][1]):
    if d[k][0] != b.get(k, (0, 0))[0]:
        print(f"| {k} | {b.get(k, (0, 0))[0]} | {d[k][0]} | {d[k][1] * 1e3:.2f} ms |")
print()
print("Slowest gaps in the preloaded run (strace -f -r: time since the previous call, then the call):")
print()
rows = []
for l in open(f"{out}/default.r"):
    m = re.match(r"^(\d+)\s+([0-9.]+)\s+(.*)$", l.strip())
    if m:
        rows.append((float(m.group(2)), m.group(1), m.group(3)[:110]))
for gap, pid, call in sorted(rows, reverse=True)[:15]:
    print(f"    {gap * 1e3:7.2f} ms  [{pid}] {call}")
EOF
echo
echo "(logs: $out/{base,default}.{r,c})"
