#!/usr/bin/env python3
"""Cost and size of the outputs people look at: `anatomist html`, `flame` (folded, svg,
html), `export` (chrome, sqlite, folded) and `diff` (markdown, json, html), each against
`anatomist report --json` on the same trace in the same run (the baseline: every output
builds the same report first). Traces: train_gpt (bf16, 3 steps) profiled on the simulated
device, and the synthetic PyTorch profiler trace of bench/analyzer_speed.py (STEPS steps).
Prints a markdown table for docs/overhead.md; not a test.

    bench/outputs.py BUILD_DIR [STEPS] [ROUNDS]      (defaults: 200 steps, 3 rounds)

The median of ROUNDS runs is reported, with the peak resident memory (GNU time)."""
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analyzer_speed import synth, timed  # noqa: E402

OUTPUTS = [  # label, argv after the trace(s), output file name ('' = none), two traces
    ("report --json (baseline)", ["report", "--json"], "", False),
    ("html", ["html", "-o"], "page.html", False),
    ("flame gpu-time folded", ["flame", "-o"], "gpu.folded", False),
    ("flame gpu-time svg", ["flame", "-o"], "gpu.svg", False),
    ("flame gpu-time html", ["flame", "-o"], "gpu.html", False),
    ("flame peak-memory svg", ["flame", "--metric", "peak-memory", "-o"], "peak.svg", False),
    ("export chrome", ["export", "-q", "-o"], "trace.json", False),
    ("export sqlite", ["export", "-q", "-o"], "trace.sqlite", False),
    ("diff markdown", ["diff", "-o"], "diff.md", True),
    ("diff json", ["diff", "--format", "json", "-o"], "diff.json", True),
    ("diff html", ["diff", "--format", "html", "-o"], "diff.html", True),
]


def argv_of(ana, cmd, trace, d, out, two):
    head = cmd[0]
    traces = [trace, trace] if two else [trace]
    rest = cmd[1:] + ([os.path.join(d, out)] if out else [])
    return [ana, head, *traces, *rest]


def measure(ana, trace, d, rounds, label):
    base = None
    rows = []
    for name, cmd, out, two in OUTPUTS:
        argv = argv_of(ana, cmd, trace, d, out, two)
        runs = [timed(argv) for _ in range(rounds)]
        dt = statistics.median(r[0] for r in runs)
        rss = max(r[1] for r in runs) / 1024
        size = os.path.getsize(os.path.join(d, out)) if out else None
        base = base or dt
        rows.append((label, name, dt, dt / base, rss, size))
        if out:
            os.unlink(os.path.join(d, out))
    return rows


def sim_trace(build, d):
    out = os.path.join(d, "gpt.anat")
    env = dict(os.environ, ANATOMIST_SIM_BLAS_COMPUTE="0")
    subprocess.run([os.path.join(build, "bin", "anatomist"), "run", "--sim", "-q", "-o", out, "--",
                    os.path.join(build, "samples", "train_gpt"), "--precision", "bf16", "--steps", "3"],
                   env=env, check=True, stdout=subprocess.DEVNULL)
    return out


def fmt_size(n):
    if n is None:
        return "—"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return ("%d %s" % (n, unit)) if unit == "B" else ("%.1f %s" % (n, unit))
        n /= 1024.0


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(sys.argv) > 1 else 2
    build = sys.argv[1]
    ana = os.path.join(build, "bin", "anatomist")
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    d = tempfile.mkdtemp(prefix="anatomist-bench-")
    gpt = sim_trace(build, d)
    doc, n = synth(steps)
    kin = os.path.join(d, "synthetic.pt.trace.json")
    with open(kin, "w") as f:
        json.dump(doc, f)
    del doc
    print("traces: train_gpt bf16 3 steps (%s); synthetic Kineto %d steps, %d events (%.1f MB)\n" %
          (fmt_size(os.path.getsize(gpt)), steps, n, os.path.getsize(kin) / 1e6))
    print("| trace | output | median s | × report --json | peak RSS MiB | file |")
    print("|---|---|---:|---:|---:|---:|")
    for trace, label in ((gpt, "train_gpt"), (kin, "Kineto %d steps" % steps)):
        for row in measure(ana, trace, d, rounds, label):
            print("| %s | %s | %.3f | %.2f | %.0f | %s |" % (row[0], row[1], row[2], row[3], row[4],
                                                            fmt_size(row[5])))
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    os.rmdir(d)
    return 0


if __name__ == "__main__":
    sys.exit(main())
