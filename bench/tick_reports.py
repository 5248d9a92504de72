#!/usr/bin/env python3
"""Which of the analyzer's figures a coarser tick changes. Each sample program is profiled
once on the simulated device in nanoseconds; bench/tick_study then writes the same records
again at each tick (what ANATOMIST_TIME_RESOLUTION would have written, without the
run-to-run jitter of a second recording), and `anatomist report` (text and --json) of each
is compared with the report of the same records rewritten at 1 ns. Prints, per sample and
tick, the trace's bytes and every JSON figure (list indices folded) and text line that
differs.
Not a test; docs/overhead.md, "Trace size".

    bench/tick_reports.py BUILD_DIR [OUT_DIR]
    (REUSE=1: the recordings already in OUT_DIR are used again; FIRST=N: from sample N on;
    TEXT_LINES=N: the differing text lines shown per tick.)"""
import difflib
import json
import os
import re
import subprocess
import sys
import tempfile

SIM = {"ANATOMIST_SIM_BLAS_COMPUTE": "0"}
SAMPLES = [  # name, argv after the program, extra environment
    ("train_mlp", [], {}),
    ("train_mlp", ["--steps", "20"], {}),
    ("train_gpt", ["--precision", "bf16", "--steps", "3"], SIM),
    ("train_gpt", ["--precision", "fp32", "--steps", "3"], SIM),
    ("train_gpt", ["--steps", "20"], {}),
    ("alloc_loop", ["0", "200", "return"], {}),
    ("api_tour", [], {}),
    ("copies", [], {}),
    ("two_streams", [], {}),
    ("graph_replay", [], {}),
    ("vmm_alloc", [], {}),
    ("threads_alloc", [], {}),
    ("threads_phases", [], {}),
    ("driver_launch", [], {}),
    ("capture_range", ["nvtx", "20", "5", "10"], {}),
    ("cupti_user", [], {}),
]
SHIFTS = [0, 4, 6, 8, 10]
VERBOSE = int(os.environ.get("TEXT_LINES", "6"))  # text lines shown per tick


def flat(v, path=""):
    """Every leaf of a JSON document as (path, value)."""
    if isinstance(v, dict):
        for k, x in v.items():
            yield from flat(x, path + "." + k)
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from flat(x, "%s[%d]" % (path, i))
    else:
        yield path, v


def report(ana, trace):
    text = subprocess.run([ana, "report", trace], capture_output=True, text=True).stdout
    js = subprocess.run([ana, "report", trace, "--json"], capture_output=True, text=True).stdout
    return text, dict(flat(json.loads(js)))


def main():
    build = os.path.abspath(sys.argv[1])
    out = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp(prefix="tick_reports.")
    os.makedirs(out, exist_ok=True)
    ana = os.path.join(build, "bin", "anatomist")
    study = os.path.join(build, "bench", "tick_study")
    for n, (name, args, extra) in enumerate(SAMPLES):
        if n < int(os.environ.get("FIRST", "0")):
            continue
        label = " ".join([name] + args)
        src = os.path.join(out, "%02d-%s.anat" % (n, name))
        env = dict(os.environ, **extra)
        p = subprocess.CompletedProcess([], 0)
        if not (os.environ.get("REUSE") and os.path.exists(src)):  # REUSE=1: the same records
            p = subprocess.run([ana, "run", "--sim", "-q", "-o", src, "--",
                                os.path.join(build, "samples", name)] + args,
                               env=env, capture_output=True, text=True)
        if p.returncode != 0 or not os.path.exists(src):
            print("## %s: not recorded (exit %d)" % (label, p.returncode))
            continue
        base = None
        for s in SHIFTS:
            t = os.path.join(out, "%02d-%s.s%d.anat" % (n, name, s))
            subprocess.run([study, str(s), src, t], check=True)
            text, js = report(ana, t)
            size = os.path.getsize(t)
            if base is None:
                base = (text, js)
                print("## %s (%d bytes at 1 ns)" % (label, size))
                continue
            old, new = base[0].splitlines()[1:], text.splitlines()[1:]  # past the trace's name
            tl = [d for d in difflib.ndiff(old, new) if d[:1] in "-+"]
            diff = [k for k in sorted(set(base[1]) | set(js)) if base[1].get(k) != js.get(k)]
            # the figures that differ, list indices folded: what changes, not where
            kinds = {}
            for k in diff:
                kinds.setdefault(re.sub(r"\[\d+\]", "[]", k), []).append(k)
            gone = sum(1 for d in tl if d[0] == "-")
            print("### tick %d ns: %d bytes; %d JSON figures (%d distinct) and %d text lines "
                  "differ (%d at 1 ns not found, %d new)" %
                  (1 << s, size, len(diff), len(kinds), max(gone, len(tl) - gone), gone,
                   len(tl) - gone))
            for k, ks in sorted(kinds.items()):
                print("    json %s (%d): e.g. %r -> %r" %
                      (k, len(ks), base[1].get(ks[0]), js.get(ks[0])))
            for line in tl[:VERBOSE]:
                print("    text " + line)
        sys.stdout.flush()


if __name__ == "__main__":
    main()
