#!/usr/bin/env bash
# Host memory of the Anatomist preload: the peak resident set it adds to a program, by
# thread count, run length and setting, and where it lies (goal: at most 16 MiB + 1 MiB per
# thread, whatever the run's length). Run by hand to fill docs/overhead.md; not a test.
#
#   bench/memory.sh BUILD_DIR [ROUNDS]       (ROUNDS defaults to 3; medians are printed)
#   OWNERS=0 bench/memory.sh BUILD_DIR       (skip the slower breakdown by owner)
#
# Workloads (samples, on the simulated device, LD_LIBRARY_PATH=BUILD_DIR/sim):
#   threads_alloc T 20000 for T = 1, 2, 8, 32 (T threads allocating, launching, freeing)
#   threads_alloc 8 200000                    (the same, 10x longer)
#   train_mlp --steps 300 --hidden 256 and --steps 3000 (one thread, 10x longer)
# each run, interleaved in every round, as: base (no preload), default (stacks and CUPTI
# on), stacks0 (ANATOMIST_STACKS=0), cupti0 (ANATOMIST_CUPTI=0), off (both off) and
# cupti4 (defaults but ANATOMIST_CUPTI_BUFFERS=4, the smallest pool that drops no activity
# record here). Peak RSS is the kernel's (ru_maxrss, bench/smaps_peak.py); "allowed" is
# 16 MiB + 1 MiB per thread that calls CUDA (T, plus the main thread) against base.
#
# Then (unless OWNERS=0) the default run of threads_alloc 1/32, 8 long and of the long train_mlp
# once more under strace, so that the memory of the peak reading is charged to the code
# that mapped it (bench/smaps_peak.py --owners): the rings in the live file
# (ana_live_slot_new), the definition ring (ana_live_open), CUPTI activity buffers
# (buffer_requested), the writer's chunk buffer (ana_collector_start, ana_tw_chunk), zstd's
# context, libunwind's per-thread caches, the stack and kernel tables (ana_stacks_init,
# add_entry: reserved with MAP_NORESERVE, resident only as far as used).
set -euo pipefail

die() { echo "bench/memory.sh: $*" >&2; exit 1; }

[[ $# -ge 1 && $# -le 2 ]] || die "usage: bench/memory.sh BUILD_DIR [ROUNDS]"
build=$(cd "$1" 2>/dev/null && pwd) || die "no such build directory: $1"
rounds=${2:-3}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive integer, not '$rounds'"
here=$(cd "$(dirname "$0")" && pwd)
sim=$build/sim preload=$build/lib/libanatomist.so samples=$build/samples
[[ -x $samples/threads_alloc && -x $samples/train_mlp ]] || die "samples not built in $build"
[[ -e $sim/libcudart.so.13 ]] || die "$sim/libcudart.so.13 not found: build with -DANA_BUILD_SIM=ON"
[[ -e $preload ]] || die "$preload not found: build the preload first"
[[ -x /usr/bin/time ]] || die "/usr/bin/time not found (Debian package time)"
[[ ${OWNERS:-1} == 0 ]] || command -v strace >/dev/null || die "strace not found (or set OWNERS=0)"

out=$(mktemp -d "${TMPDIR:-/tmp}/anatomist-memory.XXXXXX")
trap 'rm -rf "$out"' EXIT

workloads=("threads_alloc 1 20000" "threads_alloc 2 20000" "threads_alloc 8 20000" "threads_alloc 32 20000"
           "threads_alloc 8 200000" "train_mlp --steps 300 --hidden 256" "train_mlp --steps 3000 --hidden 256")
configs="base default stacks0 cupti0 off cupti4"

# envof CONFIG: the environment of a run
envof() {
    local -a e=(LD_LIBRARY_PATH="$sim")
    [[ $1 == base ]] || e+=(LD_PRELOAD="$preload" ANATOMIST_OUTPUT="$out/t.anat")
    case $1 in
        stacks0) e+=(ANATOMIST_STACKS=0) ;;
        cupti0) e+=(ANATOMIST_CUPTI=0) ;;
        off) e+=(ANATOMIST_STACKS=0 ANATOMIST_CUPTI=0) ;;
        cupti4) e+=(ANATOMIST_CUPTI_BUFFERS=4) ;;
    esac
    printf '%s\n' "${e[@]}"
}

# measure WORKLOAD-INDEX CONFIG [--owners]: appends the JSON of one run to $out/W.CONFIG[.owners]
measure() {
    local w=$1 c=$2 owners=${3:-}
    local -a e
    mapfile -t e < <(envof "$c")
    # shellcheck disable=SC2086  # the workload is split into program and arguments on purpose
    python3 "$here/smaps_peak.py" --json $owners -- env "${e[@]}" $samples/${workloads[$w]} \
        >>"$out/$w.$c${owners:+.owners}" || die "${workloads[$w]} ($c) failed"
    rm -f "$out"/t*.anat
}

for ((r = 1; r <= rounds; r++)); do
    for w in "${!workloads[@]}"; do
        for c in $configs; do measure "$w" "$c"; done
    done
    echo "bench/memory.sh: round $r of $rounds done" >&2
done
if [[ ${OWNERS:-1} != 0 ]]; then
    for w in 0 3 4 6; do measure "$w" default --owners; done
fi

echo "Machine: $(nproc) CPUs, $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo), $(uname -sr), $(free -g | awk '/Mem:/ { print $2 }') GiB, $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d" " -f1-3 /proc/loadavg) at the end (the runs compete with whatever else runs)"
echo "Peak RSS (ru_maxrss), median of $rounds rounds; the added figure is against base in the same rounds"
echo
python3 - "$out" "$configs" "${workloads[@]}" <<'EOF'
import json, os, statistics as st, sys
out, configs, workloads = sys.argv[1], sys.argv[2].split(), sys.argv[3:]
def runs(w, c, suffix=""):
    p = f"{out}/{w}.{c}{suffix}"
    return [json.loads(l) for l in open(p)] if os.path.exists(p) else []
print("| workload | base | default | stacks off | CUPTI off | both off | CUPTI_BUFFERS=4 | allowed added | default within? |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
for w, name in enumerate(workloads):
    med = {c: st.median(r["maxrss_kib"] for r in runs(w, c)) / 1024 for c in configs}
    threads = int(name.split()[1]) + 1 if name.startswith("threads_alloc") else 1
    allowed = 16 + threads
    cell = lambda c: f"{med[c]:.1f} MiB" if c == "base" else f"{med[c]:.1f} (+{med[c] - med['base']:.1f})"
    ok = "yes" if med["default"] - med["base"] <= allowed else f"no, by {med['default'] - med['base'] - allowed:.1f} MiB"
    print(f"| `{name}` | " + " | ".join(cell(c) for c in configs) + f" | {allowed} MiB | {ok} |")
print()
print("Where the default run's peak lies (sampled /proc/PID/smaps at the largest total Rss, median of the rounds, MiB):")
print()
kinds = ["live file", "anon 4 MiB", "anon other", "heap", "stacks", "preload code", "cuda libraries", "other files"]
print("| workload | " + " | ".join(kinds) + " | base total |")
print("|---|" + "---:|" * (len(kinds) + 1))
for w, name in enumerate(workloads):
    k = {x: st.median(r["kinds_kib"].get(x, 0) for r in runs(w, "default")) / 1024 for x in kinds}
    base = st.median(r["sampled_kib"] for r in runs(w, "base")) / 1024
    print(f"| `{name}` | " + " | ".join(f"{k[x]:.1f}" for x in kinds) + f" | {base:.1f} |")
own = [(w, runs(w, "default", ".owners")) for w in range(len(workloads))]
own = [(w, r[0]) for w, r in own if r]
if own:
    print()
    print("Anonymous and live-file memory of the default run's peak by the code that mapped it (strace -k; one run each, MiB):")
    print()
    names = sorted({k for _, r in own for k, v in r["owners_kib"].items() if v >= 256},
                   key=lambda k: -max(r["owners_kib"].get(k, 0) for _, r in own))
    print("| mapped by | " + " | ".join(f"`{workloads[w]}`" for w, _ in own) + " |")
    print("|---|" + "---:|" * len(own))
    for n in names:
        print(f"| `{n}` | " + " | ".join(f"{r['owners_kib'].get(n, 0) / 1024:.1f}" for _, r in own) + " |")
    print("| (peak RSS of that run) | " + " | ".join(f"{r['maxrss_kib'] / 1024:.1f}" for _, r in own) + " |")
EOF
