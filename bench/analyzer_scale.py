#!/usr/bin/env python3
"""Speed and memory of the analyzer on large .anat traces: writes synthetic training-loop
traces with bench/gen_trace (proportions in its header comment), then times `anatomist
info`, `anatomist report` and `anatomist report --json` on each with GNU time, and prints
a markdown table: median wall, user and system seconds, records per second (records / wall)
and per CPU-second (records / (user + system), the median of the runs), and peak resident
memory. Run by hand to fill docs/overhead.md; not a test.

    bench/analyzer_scale.py BUILD_DIR [--records 1e7,1e8] [--rounds 3] [--base ANATOMIST]
                            [--keep DIR]

--base: another anatomist binary (an earlier build) timed in the same rounds, interleaved
with this one, for a before/after comparison on a busy machine. --keep: write the traces
there and keep them (default: a temporary directory, removed at the end). The analyzer
reads with its default threads (-j: one per CPU)."""
import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

COMMANDS = [["info"], ["report"], ["report", "--json"]]


def timed(cmd):
    """(wall s, user s, peak RSS KiB, system s) of cmd, from GNU time."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        r = subprocess.run(["/usr/bin/time", "-o", tf.name, "-f", "%e %U %M %S", *cmd],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            sys.exit("failed (%d): %s\n%s" % (r.returncode, " ".join(cmd), r.stderr[-2000:]))
        wall, user, rss, sys_s = tf.read().split()[-4:]
    return float(wall), float(user), int(rss), float(sys_s)


def generate(gen, n, path):
    t0 = time.monotonic()
    r = subprocess.run([gen, "--records", str(int(n)), "--out", path], capture_output=True,
                       text=True, check=True)
    facts = dict(line.split("=", 1) for line in r.stdout.splitlines())
    return int(facts["records"]), int(facts["bytes"]), time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--records", default="1e7,1e8")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--base")
    ap.add_argument("--keep")
    a = ap.parse_args()
    gen = os.path.join(a.build, "bench", "gen_trace")
    bins = [("new", os.path.join(a.build, "bin", "anatomist"))]
    if a.base:
        bins.insert(0, ("base", a.base))
    tmp = a.keep or tempfile.mkdtemp(prefix="ana-scale-")
    print("machine: %s, %d CPUs, %s" % (platform.node(), os.cpu_count(), platform.platform()))
    print()
    print("| records | trace MB | command | binary | wall s | user s | sys s | M records/s (wall) "
          "| M records/CPU s | peak RSS MB |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    try:
        for spec in a.records.split(","):
            path = os.path.join(tmp, "scale-%s.anat" % spec)
            n, size, gen_s = generate(gen, float(spec), path)
            print("| %d | %.1f | (gen_trace: %.1f s) | | | | | | | |" % (n, size / 1e6, gen_s),
                  flush=True)
            for cmd in COMMANDS:
                runs = {name: [] for name, _ in bins}
                for _ in range(a.rounds):
                    for name, exe in bins:
                        runs[name].append(timed([exe, *cmd, path]))
                for name, _ in bins:
                    wall = statistics.median(x[0] for x in runs[name])
                    user = statistics.median(x[1] for x in runs[name])
                    sys_s = statistics.median(x[3] for x in runs[name])
                    cpu = statistics.median(x[1] + x[3] for x in runs[name])
                    rss = max(x[2] for x in runs[name])
                    print("| %d | %.1f | %s | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.0f |"
                          % (n, size / 1e6, " ".join(cmd), name, wall, user, sys_s,
                             n / wall / 1e6 if wall else 0, n / cpu / 1e6 if cpu else 0,
                             rss / 1024), flush=True)
            if not a.keep:
                os.unlink(path)
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
