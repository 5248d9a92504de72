#!/usr/bin/env bash
# Instructions the Anatomist preload adds per hooked cudaMalloc, cudaFree and kernel launch
# (stacks and CUPTI off), counted by callgrind: exact and free of the noise of a shared
# machine, unlike bench/run.sh's times. Run by hand to fill docs/overhead.md; not a test.
#
#   bench/hook_instr.sh BUILD_DIR [PRELOAD]
#
# Runs BUILD_DIR/bench/bench_hooks --stack-only under valgrind --tool=callgrind twice, without
# the preload and with PRELOAD (default BUILD_DIR/lib/libanatomist.so; an earlier build's to
# compare), counting only inside the bench's operations (alloc_free_op, launch_op: each a
# cudaMalloc+cudaFree pair or one launch, called ITERS + 1000 times). Per call it prints
# what the preload adds: the call edges alloc_free_op -> cudaMalloc / cudaFree (inclusive)
# and launch_op as a whole, from the main thread's profile (the writer thread is counted
# apart). ITERS (environment, default 20000) sets the timed iterations.
set -euo pipefail

die() { echo "bench/hook_instr.sh: $*" >&2; exit 1; }

[[ $# -ge 1 && $# -le 2 ]] || die "usage: bench/hook_instr.sh BUILD_DIR [PRELOAD]"
build=$(cd "$1" 2>/dev/null && pwd) || die "no such build directory: $1"
preload=${2:-$build/lib/libanatomist.so}
iters=${ITERS:-20000}
calls=$((iters + 1000)) # the bench's warm-up makes 1000 more of each
bench=$build/bench/bench_hooks
[[ -x $bench ]] || die "$bench not found: build the bench_hooks target (needs nvcc)"
[[ -e $preload ]] || die "$preload not found"
command -v valgrind >/dev/null && command -v callgrind_annotate >/dev/null ||
    die "valgrind and callgrind_annotate are needed"

out=$(mktemp -d "${TMPDIR:-/tmp}/anatomist-instr.XXXXXX")
trap 'rm -rf "$out"' EXIT

# profile NAME [ENV...]: one callgrind run; the main thread's profile is $out/NAME-01
profile() {
    local name=$1
    shift
    env LD_LIBRARY_PATH="$build/sim" "$@" valgrind --tool=callgrind --separate-threads=yes \
        --callgrind-out-file="$out/$name" --toggle-collect='*alloc_free_op*' \
        --toggle-collect='*launch_op*' "$bench" --alloc-iters "$iters" --launch-iters "$iters" \
        --reps 1 --stack-only --depth 5 >"$out/$name.log" 2>&1 ||
        { cat "$out/$name.log" >&2; die "bench_hooks failed under callgrind ($name)"; }
}

profile plain
profile preload LD_PRELOAD="$preload" ANATOMIST_STACKS=0 ANATOMIST_CUPTI=0 \
    ANATOMIST_BUFFER_KB=65536 ANATOMIST_OUTPUT="$out/t.anat"

# edge PROFILE CALLER CALLEE: inclusive instructions of CALLER's calls to CALLEE
edge() {
    callgrind_annotate --tree=calling --inclusive=yes --threshold=100 "$out/$1-01" |
        awk -v f="$2" -v g="$3" '$0 ~ "\\* .*" f { p = 1; next } p && /\*/ { p = 0 }
            p && index($0, g) { gsub(",", "", $1); print $1; exit }'
}
# total PROFILE FUNCTION: inclusive instructions of FUNCTION
total() {
    callgrind_annotate --inclusive=yes --threshold=100 "$out/$1-01" | grep -F "$2" | head -1 |
        awk '{ gsub(",", "", $1); print $1 }'
}
per_call() { awk -v p="$1" -v n="$2" -v c="$calls" 'BEGIN { printf "%.0f", (p - n) / c }'; }

# added FUNCTION: what the preload adds per call of FUNCTION made by alloc_free_op
added() { per_call "$(edge preload alloc_free_op "$1 (")" "$(edge plain alloc_free_op "$1 (")"; }
malloc=$(added cudaMalloc)
free=$(added cudaFree)
launch=$(per_call "$(total preload ":launch_op(")" "$(total plain ":launch_op(")")
echo "Instructions added per hooked call (callgrind, stacks and CUPTI off, $calls calls each):"
echo "cudaMalloc $malloc, cudaFree $free, launch $launch"
echo "Preload: $preload; $(valgrind --version); $(date -u '+%Y-%m-%d %H:%M UTC')."
