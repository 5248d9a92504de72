#!/usr/bin/env bash
# Anatomist beside heaptrack, per allocation event of each tool's own domain. Run by hand to
# fill docs/overhead.md; not a test.
#
#   bench/peers.sh BUILD_DIR [ROUNDS]        (ROUNDS defaults to 5)
#   PAIRS=200000 REPS=5 bench/peers.sh build  (pairs per timed run, timed runs per process)
#   SIZES=64 bench/peers.sh build            (64 distinct sizes instead of one: peer_alloc --sizes)
#
# The program (bench/peer_alloc.c) is the same for both tools: N allocate+free pairs of 64
# KiB made ~30 frames deep, best of REPS timed runs. heaptrack records malloc/free, so it
# watches peer_malloc; Anatomist records cudaMalloc/cudaFree, so it watches peer_cudamalloc
# on the simulated device (LD_LIBRARY_PATH=BUILD_DIR/sim). Each round runs, interleaved:
#   malloc:  m0 no tool | mh heaptrack (its launcher script, heaptrack_interpret, zstd)
#            ma Anatomist's preload (it does not hook malloc: it must add ~nothing, record
#               no allocation, and shows what merely loading it costs such a program)
#   cuda:    c0 no tool | cs Anatomist, stacks on, CUPTI off (the counterpart of heaptrack)
#            cn Anatomist, stacks off, CUPTI off | cd Anatomist's defaults (stacks and CUPTI)
#            ct as cs with ANATOMIST_TIME_RESOLUTION=1024 (1.024 us ticks: heaptrack keeps no
#               per-event time at all, so this is the closer match for trace size)
# each twice: a short process (1 timed run) and a long one (REPS timed runs). Reported, as
# medians over the rounds:
#   ns/pair     in-process time per allocate+free pair (long run, best of REPS), and what
#               the tool adds against the baseline of the same program
#   CPU/pair    user+system CPU of every process of the run (wait4: the program,
#               its writer thread, heaptrack's interpreter and compressor), long minus short
#               run divided by the extra pairs (start-up and exit cancel), minus the same for
#               the baseline: the tool's whole CPU cost per pair, wherever it is spent
#   B/event     trace bytes, long minus short run, per extra event (2 per pair: the
#               allocation and the free); heaptrack's file is its zstd-compressed output
#   RSS         peak resident set of the program (getrusage in the program, long run) and
#               of the largest process of the run (GNU time's %M: heaptrack_interpret)
# What is equal: the program, the call depth, the sizes, the event count, the machine and
# the moment. What is not: the allocator (glibc malloc ~20 ns, the simulated cudaMalloc
# ~150 ns, so compare "added", never totals); heaptrack stores no per-event timestamp (one
# every 10 ms), Anatomist one per record; heaptrack unwinds at malloc only, Anatomist at
# both cudaMalloc and cudaFree when stacks are on; heaptrack compresses in another process.
set -euo pipefail

die() { echo "bench/peers.sh: $*" >&2; exit 1; }

[[ $# -ge 1 && $# -le 2 ]] || die "usage: bench/peers.sh BUILD_DIR [ROUNDS]"
build=$(cd "$1" 2>/dev/null && pwd) || die "no such build directory: $1"
rounds=${2:-5}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive integer, not '$rounds'"
pairs=${PAIRS:-200000} reps=${REPS:-5} sizes=${SIZES:-1}
[[ $pairs =~ ^[1-9][0-9]*$ && $sizes =~ ^[1-9][0-9]*$ && $reps =~ ^([2-9]|[1-9][0-9]+)$ ]] ||
    die "PAIRS and SIZES must be positive integers and REPS at least 2"
pm=$build/bench/peer_malloc pc=$build/bench/peer_cudamalloc
sim=$build/sim preload=$build/lib/libanatomist.so
[[ -x $pm && -x $pc ]] || die "$pm or $pc not found: build the bench directory"
[[ -e $sim/libcudart.so.13 ]] || die "$sim/libcudart.so.13 not found: build with -DANA_BUILD_SIM=ON"
[[ -e $preload ]] || die "$preload not found: build the preload first"
command -v heaptrack >/dev/null || die "heaptrack not found (Debian package heaptrack)"
[[ -x /usr/bin/time ]] || die "/usr/bin/time not found (Debian package time)"

out=$(mktemp -d "${TMPDIR:-/tmp}/anatomist-peers.XXXXXX")
trap 'rm -rf "$out"' EXIT
modes="m0 mh ma c0 cs cn cd ct"

# run MODE LEN: one process; appends "pair_ns self_rss cpu_ns max_rss trace_bytes pairs missing"
# to $out/MODE.LEN
run() {
    local mode=$1 len=$2 log=$out/run.log tm=$out/time.txt
    local -a cmd args=(--pairs "$pairs" --sizes "$sizes" --reps "$([[ $len == long ]] && echo "$reps" || echo 1)")
    local trace=$out/t/t.anat
    local -a ana=(env LD_PRELOAD="$preload" ANATOMIST_OUTPUT="$trace")
    rm -rf "$out/t" && mkdir "$out/t"
    case $mode in
        m0) cmd=("$pm") ;;
        mh) cmd=(heaptrack -o "$out/t/ht" "$pm"); trace=$out/t/ht.zst ;;  # .gz without zstd
        ma) cmd=("${ana[@]}" "$pm") ;;
        c0) cmd=(env LD_LIBRARY_PATH="$sim" "$pc") ;;
        cs) cmd=("${ana[@]}" LD_LIBRARY_PATH="$sim" ANATOMIST_CUPTI=0 "$pc") ;;
        cn) cmd=("${ana[@]}" LD_LIBRARY_PATH="$sim" ANATOMIST_CUPTI=0 ANATOMIST_STACKS=0 "$pc") ;;
        cd) cmd=("${ana[@]}" LD_LIBRARY_PATH="$sim" "$pc") ;;
        ct) cmd=("${ana[@]}" LD_LIBRARY_PATH="$sim" ANATOMIST_CUPTI=0 ANATOMIST_TIME_RESOLUTION=1024 "$pc") ;;
    esac
    rusage "$tm" "${cmd[@]}" "${args[@]}" >"$log" 2>&1 ||
        { cat "$log" >&2; die "mode $mode failed (output above)"; }
    local ns rss np cpu maxrss bytes=0 missing=0
    ns=$(awk '$1 == "pair_ns" { print $2 }' "$log")
    rss=$(awk '$1 == "self_maxrss_kib" { print $2 }' "$log")
    np=$(awk '$1 == "pairs" { print $2 }' "$log")
    [[ -n $ns && -n $rss && -n $np ]] || { cat "$log" >&2; die "no results from mode $mode"; }
    if [[ $mode == m0 || $mode == c0 ]]; then :
    elif [[ $mode == ma ]]; then
        [[ ! -e $trace ]] || allocs_in "$trace" | grep -qx 0 ||
            die "the preload recorded allocations in the malloc program: it hooks no malloc"
    else
        [[ $mode != mh || -e $trace ]] || trace=$out/t/ht.gz
        [[ -s $trace ]] || die "mode $mode wrote no trace"
        bytes=$(stat -c %s "$trace")
        # A full per-thread buffer drops records (counted in the trace): such a run would
        # flatter the hooks, so the table shows the most records missing in any run.
        [[ $mode == mh ]] || missing=$((np - $(allocs_in "$trace")))
    fi
    read -r cpu maxrss <"$tm"
    echo "$ns $rss $cpu $maxrss $bytes $np $missing" >>"$out/$mode.$len"
}

# rusage FILE CMD...: runs CMD; writes "cpu_ns maxrss_kib" of it and every descendant it
# waited for to FILE; returns CMD's status. The CPU comes from wait4 (microseconds; GNU
# time prints 10 ms), the peak RSS from /usr/bin/time as CMD's parent: Linux carries a
# parent's peak RSS over fork+exec into the child's, and Python's would mask small ones.
rusage() {
    python3 -c 'import os, sys
pid = os.fork()
if pid == 0:
    os.execv("/usr/bin/time", ["time", "-f", "%M", "-o", sys.argv[1] + ".rss"] + sys.argv[2:])
_, status, ru = os.wait4(pid, 0)
rss = open(sys.argv[1] + ".rss").read().split()[-1]
open(sys.argv[1], "w").write("%d %s\n" % (round((ru.ru_utime + ru.ru_stime) * 1e9), rss))
sys.exit(os.waitstatus_to_exitcode(status) != 0)' "$@"
}

# allocs_in TRACE: the ALLOC records of an Anatomist trace
allocs_in() {
    "$build/bin/anatomist" info --json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["records"]["alloc"])'
}

for ((r = 1; r <= rounds; r++)); do
    for m in $modes; do run "$m" short; run "$m" long; done
    echo "bench/peers.sh: round $r of $rounds done" >&2
done

echo "Machine: $(nproc) CPUs, $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo), $(uname -sr), $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d" " -f1-3 /proc/loadavg) at the end (the runs compete with whatever else runs), heaptrack $(heaptrack --version | awk '{ print $2 }')"
echo "Program: $pairs pairs of $sizes size(s) x $reps timed runs (+1000 warm-up) per long process, 1 timed run per short one; $rounds rounds, medians"
echo
# shellcheck disable=SC2086  # one argument per mode on purpose
python3 - "$out" $modes <<'EOF'
import statistics as st, sys
out, modes = sys.argv[1], sys.argv[2:]
def rows(m, n):
    return [list(map(float, l.split())) for l in open(f"{out}/{m}.{n}")]
med = lambda xs: st.median(xs)
def stats(m):
    lo, sh = rows(m, "long"), rows(m, "short")
    # per round: marginal CPU per pair and bytes per event between the long and short run
    cpu = [(l[2] - s[2]) / (l[5] - s[5]) for l, s in zip(lo, sh)]
    bpe = [(l[4] - s[4]) / (2 * (l[5] - s[5])) for l, s in zip(lo, sh)]
    return dict(ns=med([l[0] for l in lo]), rss=med([l[1] for l in lo]) / 1024, cpu=med(cpu),
                bpe=med(bpe), top=med([l[3] for l in lo]) / 1024,
                miss=int(max(x[6] for x in lo + sh)))
S = {m: stats(m) for m in modes}
names = {"m0": "no tool", "mh": "heaptrack", "ma": "Anatomist preload (hooks no malloc)",
         "c0": "no tool", "cs": "Anatomist, stacks on, CUPTI off", "cn": "Anatomist, stacks off, CUPTI off",
         "cd": "Anatomist defaults (stacks, CUPTI)", "ct": "Anatomist, stacks on, CUPTI off, 1.024 us ticks"}
print("| program | tool | ns/pair | added | CPU ns/pair, all processes | added | trace B/event | program peak RSS | added | largest process | allocations missing |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for m in modes:
    b = S["m0" if m[0] == "m" else "c0"]; s = S[m]
    base = m in ("m0", "c0")
    add = lambda k, f: "" if base else f % (s[k] - b[k])
    print(f"| {'peer_malloc' if m[0] == 'm' else 'peer_cudamalloc'} | {names[m]} | {s['ns']:.1f} | {add('ns', '%+.0f')} "
          f"| {s['cpu']:.1f} | {add('cpu', '%+.0f')} | {'' if base or m == 'ma' else '%.3f' % s['bpe']} "
          f"| {s['rss']:.1f} MiB | {add('rss', '%+.1f MiB')} | {s['top']:.1f} MiB "
          f"| {'' if base or m in ('mh', 'ma') else s['miss']} |")
EOF
