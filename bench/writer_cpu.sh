#!/usr/bin/env bash
# CPU of the preload's writer thread per record written, on bench_hooks' launch loop (mode b
# of bench/run.sh: stacks and GPU activity off, 64 MiB rings so that nothing is dropped).
# Each run is sampled by perf (cpu-clock, one sample per 100 us of a thread's CPU); the
# writer is the thread whose samples are in the packer (ana_pack). Prints its CPU per
# record (records: `anatomist info`) for each preload given, ROUNDS runs interleaved, and
# the medians. Run by hand for docs/overhead.md; not a test.
#
#   bench/writer_cpu.sh BUILD_DIR ROUNDS PRELOAD...
set -euo pipefail

die() { echo "bench/writer_cpu.sh: $*" >&2; exit 1; }
[[ $# -ge 3 ]] || die "usage: bench/writer_cpu.sh BUILD_DIR ROUNDS PRELOAD..."
build=$(cd "$1" && pwd) || die "no such build directory: $1"
rounds=$2
shift 2
command -v perf >/dev/null || die "perf not found"
out=$(mktemp -d "${TMPDIR:-/tmp}/anatomist-writer.XXXXXX")
trap 'rm -rf "$out"' EXIT
iters=${LAUNCH_ITERS:-2000000}

one() { # PRELOAD INDEX: prints the writer's ns per record of one run
    local trace=$out/t$2.anat
    rm -f "$trace"
    LD_LIBRARY_PATH=$build/sim LD_PRELOAD=$1 ANATOMIST_STACKS=0 ANATOMIST_CUPTI=0 \
        ANATOMIST_BUFFER_KB=65536 ANATOMIST_OUTPUT=$trace \
        perf record -q -e cpu-clock -c 100000 -o "$out/perf.data" \
        "$build/bench/bench_hooks" --alloc-iters 1 --launch-iters "$iters" --gemm-iters 1 \
        --nvtx-iters 1 --reps 1 >/dev/null 2>&1
    local records
    records=$("$build/bin/anatomist" info "$trace" --json |
        python3 -c 'import json,sys; d=json.load(sys.stdin); print(sum(d["records"].values()))')
    perf script -i "$out/perf.data" -F tid,ip,sym 2>/dev/null | python3 -c '
import collections, sys
samples, packer = collections.Counter(), collections.Counter()
for line in sys.stdin:
    f = line.split()
    if not f:
        continue
    samples[f[0]] += 1
    if len(f) > 2 and f[2] == "ana_pack":
        packer[f[0]] += 1
tid = packer.most_common(1)[0][0]
print("%.1f" % (samples[tid] * 100000.0 / int(sys.argv[1])))' "$records"
}

declare -A runs
for ((r = 0; r < rounds; r++)); do
    i=0
    for p in "$@"; do
        runs[$i]+=" $(one "$p" "$i")"
        i=$((i + 1))
    done
done
i=0
for p in "$@"; do
    echo "$p: writer ns/record${runs[$i]}; median $(echo "${runs[$i]}" | tr ' ' '\n' | sed '/^$/d' |
        sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}')"
    i=$((i + 1))
done
