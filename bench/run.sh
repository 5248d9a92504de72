#!/usr/bin/env bash
# Hook overhead of the Anatomist preload, per cudaMalloc+cudaFree pair, per kernel launch,
# per cuBLAS GEMM call and per NVTX push/pop pair, on the simulated device. Run by hand to fill docs/overhead.md; not a test.
#
#   bench/run.sh BUILD_DIR [ROUNDS]        (ROUNDS defaults to 5)
#
# Each round runs BUILD_DIR/bench/bench_hooks four ways, interleaved so that drift in
# the machine's speed hits all alike:
#   a) baseline, no preload
#   b) LD_PRELOAD=BUILD_DIR/lib/libanatomist.so, ANATOMIST_STACKS=0 ANATOMIST_CUPTI=0
#   c) the preload, stacks off, GPU activity collection (CUPTI) on
#   d) the preload with its defaults: stacks on, CUPTI on
#   e) as b) with ANATOMIST_KERNEL_ARGS=0: against b), what reading the parameter words of
#      a launch costs (launch_args_ns: a kernel with 3 pointer parameters)
#   f) as b) with ANATOMIST_LIVE=0: against b), what keeping the rings in the live file
#      (a shared file mapping that survives a crash) costs instead of anonymous memory
#   g) only when BASE_PRELOAD names another libanatomist.so (an earlier build's): as b)
#      with that preload, to compare a change with what it replaces in the same run
# all with LD_LIBRARY_PATH=BUILD_DIR/sim (the simulated libcudart, libcuda, libcupti,
# libcublas). Prints
# the medians over the rounds and the added ns per operation (against a) as a markdown
# table, with the machine it ran on.
# Extra arguments for bench_hooks can be given in BENCH_ARGS (e.g. "--reps 3").
set -euo pipefail

die() { echo "bench/run.sh: $*" >&2; exit 1; }

[[ $# -ge 1 && $# -le 2 ]] || die "usage: bench/run.sh BUILD_DIR [ROUNDS]"
build=$(cd "$1" 2>/dev/null && pwd) || die "no such build directory: $1"
rounds=${2:-5}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive integer, not '$rounds'"

bench=$build/bench/bench_hooks
sim=$build/sim
preload=$build/lib/libanatomist.so
[[ -x $bench ]] || die "$bench not found: build the bench_hooks target (needs nvcc)"
[[ -e $sim/libcudart.so.13 ]] || die "$sim/libcudart.so.13 not found: build with -DANA_BUILD_SIM=ON"
[[ -e $preload ]] || die "$preload not found: build the preload (libanatomist.so) first"
modes="a b c d e f"
if [[ -n ${BASE_PRELOAD:-} ]]; then
    [[ -e $BASE_PRELOAD ]] || die "BASE_PRELOAD=$BASE_PRELOAD not found"
    modes+=" g"
fi

out=$(mktemp -d "${TMPDIR:-/tmp}/anatomist-bench.XXXXXX")
trap 'rm -rf "$out"' EXIT

# run MODE: one bench_hooks run; appends "alloc launch" to $out/MODE.txt
run() {
    local mode=$1 log=$out/$1.log
    local -a env=(LD_LIBRARY_PATH="$sim")
    case $mode in
        a) ;;
        b) env+=(LD_PRELOAD="$preload" ANATOMIST_STACKS=0 ANATOMIST_CUPTI=0 ANATOMIST_OUTPUT="$out/traces/t.anat") ;;
        c) env+=(LD_PRELOAD="$preload" ANATOMIST_STACKS=0 ANATOMIST_OUTPUT="$out/traces/t.anat") ;;
        d) env+=(LD_PRELOAD="$preload" ANATOMIST_OUTPUT="$out/traces/t.anat") ;;
        e) env+=(LD_PRELOAD="$preload" ANATOMIST_STACKS=0 ANATOMIST_CUPTI=0 ANATOMIST_KERNEL_ARGS=0
                 ANATOMIST_OUTPUT="$out/traces/t.anat") ;;
        f) env+=(LD_PRELOAD="$preload" ANATOMIST_STACKS=0 ANATOMIST_CUPTI=0 ANATOMIST_LIVE=0
                 ANATOMIST_OUTPUT="$out/traces/t.anat") ;;
        g) env+=(LD_PRELOAD="$BASE_PRELOAD" ANATOMIST_STACKS=0 ANATOMIST_CUPTI=0
                 ANATOMIST_OUTPUT="$out/traces/t.anat") ;;
    esac
    rm -rf "$out/traces" && mkdir "$out/traces"
    # shellcheck disable=SC2086  # BENCH_ARGS is split on purpose
    if ! env "${env[@]}" "$bench" ${BENCH_ARGS:-} >"$log" 2>&1; then
        cat "$log" >&2
        die "bench_hooks failed in mode $mode (output above)"
    fi
    local alloc launch gemm nvtx largs h2d
    alloc=$(awk '$1 == "alloc_free_pair_ns" { print $2 }' "$log")
    launch=$(awk '$1 == "launch_ns" { print $2 }' "$log")
    gemm=$(awk '$1 == "gemm_ns" { print $2 }' "$log")
    nvtx=$(awk '$1 == "nvtx_push_pop_ns" { print $2 }' "$log")
    largs=$(awk '$1 == "launch_args_ns" { print $2 }' "$log")
    h2d=$(awk '$1 == "h2d_table_ns" { print $2 }' "$log")
    [[ -n $alloc && -n $launch && -n $gemm && -n $nvtx && -n $largs && -n $h2d ]] || { cat "$log" >&2; die "no results from mode $mode"; }
    # With the preload, the trace must exist and say how many records had to be dropped:
    # a measurement that took the drop path would flatter the hooks.
    local dropped=0 gpu_dropped=0 kernels=0
    if [[ $mode != a ]]; then
        [[ -s $out/traces/t.anat ]] || die "mode $mode wrote no trace: the preload did not run"
        local t=$out/traces/t.anat
        dropped=$("$build/bin/anatomist" info --json "$t" |
                  python3 -c 'import json,sys; print(json.load(sys.stdin)["dropped"])')
        read -r gpu_dropped kernels < <("$build/bin/anatomist" report --json "$t" |
            python3 -c 'import json,sys
g = json.load(sys.stdin).get("gpu") or {}
print((g.get("dropped") or {}).get("records", 0), sum(k["count"] for k in g.get("kernels_by_time") or []))')
    fi
    echo "$alloc $launch $dropped $gpu_dropped $kernels $gemm $nvtx $largs $h2d" >>"$out/$mode.txt"
}

# median FILE COLUMN
median() {
    awk -v c="$2" '{ print $c }' "$1" | sort -g |
        awk '{ v[NR] = $1 } END { printf "%.1f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

for ((r = 1; r <= rounds; r++)); do
    echo "round $r/$rounds" >&2
    for mode in $modes; do run "$mode"; done
done

cpu=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)
declare -A med
for mode in $modes; do
    for i in 1 2 6 7 8 9; do med[$mode,$i]=$(median "$out/$mode.txt" $i); done
done
added() { awk -v x="$1" -v y="$2" 'BEGIN { printf "%+.1f", x - y }'; }

echo "Hook overhead, median of $rounds rounds (each: best of the bench's repetitions), ns per operation"
echo
echo "| operation | baseline | stacks off, CUPTI off | stacks off, CUPTI on | stacks on, CUPTI on (default) | added: b | added: c | added: d |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
declare -A names=([1]="cudaMalloc+cudaFree pair (64 KiB)" [2]="kernel launch (empty kernel)"
                  [6]="cublasSgemm_v2 call (8x8x8)" [7]="nvtxRangePushA + nvtxRangePop")
for i in 1 2 6 7; do
    name=${names[$i]}
    echo "| $name | ${med[a,$i]} | ${med[b,$i]} | ${med[c,$i]} | ${med[d,$i]} | $(added "${med[b,$i]}" "${med[a,$i]}") | $(added "${med[c,$i]}" "${med[a,$i]}") | $(added "${med[d,$i]}" "${med[a,$i]}") |"
done
echo
maxcol() { sort -g -k"$2" "$out/$1.txt" | tail -1 | awk -v c="$2" '{ print $c }'; }
echo "Kernel parameter words: a launch with 3 pointer parameters costs ${med[a,8]} ns without the preload, ${med[e,8]} ns with ANATOMIST_KERNEL_ARGS=0 and ${med[b,8]} ns with ANATOMIST_KERNEL_ARGS=1 (stacks and CUPTI off): $(added "${med[b,8]}" "${med[e,8]}") ns for the words."
echo "Pointer tables: a 256-byte host-to-device cudaMemcpy holding 16 device addresses costs ${med[a,9]} ns without the preload, ${med[e,9]} ns with ANATOMIST_KERNEL_ARGS=0 and ${med[b,9]} ns with ANATOMIST_KERNEL_ARGS=1 (stacks and CUPTI off): $(added "${med[b,9]}" "${med[e,9]}") ns for reading the table."
echo "Records dropped (max over rounds): b $(maxcol b 3), c $(maxcol c 3), d $(maxcol d 3), f (b without the live file) $(maxcol f 3)."
echo "GPU activity records dropped (max): c $(maxcol c 4), d $(maxcol d 4); GPU kernel records per run (min..max): c $(sort -g -k5 "$out/c.txt" | head -1 | awk '{print $5}')..$(maxcol c 5), d $(sort -g -k5 "$out/d.txt" | head -1 | awk '{print $5}')..$(maxcol d 5)."
echo "Machine: $(nproc) CPUs, ${cpu:-unknown CPU}; $(uname -sr); $(date -u '+%Y-%m-%d %H:%M UTC')."
echo "Device: simulated (LD_LIBRARY_PATH=$sim); calls made ~30 frames deep; bench args: ${BENCH_ARGS:-defaults}."
echo
echo "Live file: with the rings in anonymous memory (ANATOMIST_LIVE=0) a cudaMalloc+cudaFree pair costs ${med[f,1]} ns and a launch ${med[f,2]} ns; in the live file (the default) ${med[b,1]} ns and ${med[b,2]} ns (stacks and CUPTI off): $(added "${med[b,1]}" "${med[f,1]}") and $(added "${med[b,2]}" "${med[f,2]}") ns."
if [[ -n ${BASE_PRELOAD:-} ]]; then
    echo
    echo "Against BASE_PRELOAD=$BASE_PRELOAD (stacks and CUPTI off, same rounds): a cudaMalloc+cudaFree pair ${med[g,1]} -> ${med[b,1]} ns, a launch ${med[g,2]} -> ${med[b,2]} ns, a launch with 3 pointer parameters ${med[g,8]} -> ${med[b,8]} ns, a 256-byte pointer-table copy ${med[g,9]} -> ${med[b,9]} ns, a cuBLAS GEMM ${med[g,6]} -> ${med[b,6]} ns, an NVTX push+pop ${med[g,7]} -> ${med[b,7]} ns."
fi
