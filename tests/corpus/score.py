#!/usr/bin/env python3
"""Scores the analyzer against the blind corpus (tests/corpus/*.cu, LEDGER.md).

Each program runs under `anatomist run --sim`; its ledger (last stdout line) is the truth;
`anatomist report --json` is what is scored. Printed per program: the step count (right
or not), each category's bytes at the peak (report / truth, and whether the error is
within 5% of the truth + 1% of the peak), the parameter count, and for a program that ran
out of memory the dominant category at the failure.

Truth as the report's categories: a `mixed` allocation (a pool holding many purposes) is
`unattributed` — one allocation cannot be split; memory a library allocated inside its own
calls (memory.by_library at the peak: cuBLAS's default workspace) is added to
`functionality` and to the peak, since the program cannot see it — and so to what was
live at an out-of-memory failure, whose dominant category is taken from those sums.

    score.py [--build DIR] [--json OUT] [--check] [--src DIR --bin DIR] [PROGRAM ...]

--src and --bin score programs kept elsewhere (tests/corpus/heldout, compiled by hand
with the nvcc line of LEDGER.md's writers) — the held-out batch of a round.

--check exits 1 when the recording is wrong (a program that does not run as its ledger
says, no ledger, a peak that differs from the ledger's), or when the report prints an
optimizer interpretation ("two fp32 states per parameter (AdamW)") that names another
optimizer than the ledger's: an interpretation is printed only where two sources agree on
the parameter count, and must then be right (docs/memory-anatomy.md). The category scores
are measured, never asserted. Exit 0 otherwise.
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scenario"))
from common import clean_env  # noqa: E402  (the scenario tests' environment: nothing of ours, sanitizer first)
CATS = ["weights", "optimizer", "gradients", "activations", "temporary", "functionality", "unattributed"]
LIB_KEYS = ["cuBLAS", "cuBLASLt", "NCCL", "cuDNN", "other"]


def header(src):
    """(env, args) from the program's `// corpus-env:` and `// corpus-args:` lines."""
    env, args = {}, []
    with open(src) as f:
        for line in f:
            m = re.match(r"\s*//\s*corpus-env:\s*([A-Za-z_][A-Za-z0-9_]*)=(\S*)", line)
            if m:
                env[m.group(1)] = m.group(2)
            m = re.match(r"\s*//\s*corpus-args:\s*(.*)$", line)
            if m:
                args = shlex.split(m.group(1))
    return env, args


def ledger_of(stdout):
    lines = [l for l in stdout.splitlines() if l.startswith("ledger ")]
    if not lines or stdout.rstrip("\n").splitlines()[-1] != lines[-1]:
        return None
    return json.loads(lines[-1][len("ledger "):])


# the words an optimizer_kind must contain to name each ledger optimizer
OPTIMIZER_WORDS = {"adamw": "(AdamW)", "adamw8bit": "8-bit AdamW", "sgd": "plain SGD",
                   "sgd_momentum": "SGD with momentum", "adafactor": "Adafactor", "none": "no training"}


def truth_categories(purposes, lib_bytes):
    t = {c: 0 for c in CATS}
    for k, v in purposes.items():
        t["unattributed" if k == "mixed" else k] += v
    t["functionality"] += lib_bytes
    return t


def within(rep, truth, peak):
    return abs(rep - truth) <= 0.05 * truth + 0.01 * peak


def score_one(name, build, tmp, src_dir=HERE, bin_dir=None):
    src = os.path.join(src_dir, name + ".cu")
    exe = os.path.join(bin_dir or os.path.join(build, "corpus"), name)
    anatomist = os.path.join(build, "bin", "anatomist")
    env, args = header(src)
    res = {"program": name, "problems": []}
    trace = os.path.join(tmp, name + ".anat")
    opts = ["run", "--sim", "-q", "-o", trace]
    mem = env.pop("ANATOMIST_SIM_MEMORY", None)
    if mem:
        opts += ["--sim-memory", mem]
    r = subprocess.run([anatomist, *opts, "--", exe, *args], env=clean_env(**env), capture_output=True,
                       text=True, timeout=300)
    led = ledger_of(r.stdout)
    if led is None:
        res["problems"].append("no ledger as the last stdout line (exit %d): %s" % (r.returncode, r.stderr[-400:]))
        return res
    want_rc = 3 if led.get("oom") else 0
    if r.returncode != want_rc:
        res["problems"].append("exit %d, ledger says %d: %s" % (r.returncode, want_rc, r.stderr[-400:]))
    rr = subprocess.run([anatomist, "report", trace, "--json"], env=clean_env(), capture_output=True,
                        text=True, timeout=300)
    if rr.returncode != 0:
        res["problems"].append("report failed (%d): %s" % (rr.returncode, rr.stderr[-400:]))
        return res
    rep = json.loads(rr.stdout)
    mem_ = rep["memory"]
    lib = sum(mem_.get("by_library", {}).get(k, 0) for k in LIB_KEYS)
    peak = led["peak_bytes"] + lib
    res["ledger"] = led
    res["peak_bytes"] = mem_["peak_bytes"]
    res["library_bytes"] = lib
    if mem_["peak_bytes"] != peak:
        res["problems"].append("recorded peak %d, ledger %d + library %d" % (mem_["peak_bytes"], led["peak_bytes"], lib))
    truth = truth_categories(led["peak_by_purpose"], lib)
    got = mem_["at_peak"]
    res["categories"] = {c: {"report": got.get(c, 0), "truth": truth[c],
                             "ok": within(got.get(c, 0), truth[c], peak)} for c in CATS}
    res["categories_ok"] = all(v["ok"] for v in res["categories"].values())
    # bytes the report put in a category that holds fewer in truth ("unattributed" is not
    # a claim): what it says with confidence and is wrong about, as a share of the peak
    res["confidently_wrong"] = sum(max(0, got.get(c, 0) - truth[c]) for c in CATS if c != "unattributed") / max(peak, 1)
    training = led.get("kind") == "training"
    steps = rep.get("steps", {}).get("count", 0)
    res["steps"] = {"report": steps, "truth": led["steps"], "ok": steps == led["steps"], "scored": training}
    pp = mem_.get("per_param") or {}
    res["params"] = {"report": pp.get("params"), "truth": led.get("params"),
                     "optimizer_kind": pp.get("optimizer_kind"), "optimizer_truth": led.get("optimizer")}
    kind = pp.get("optimizer_kind")
    # an interpretation the report prints is a claim: it must name the ledger's optimizer
    res["params"]["interpretation_ok"] = None if kind is None else OPTIMIZER_WORDS[led.get("optimizer")] in kind
    oom = led.get("oom")
    if oom:
        ro = rep.get("oom") or {}
        live_truth = truth_categories(oom["live_by_purpose"], lib)
        # the ledger's dominant leaves out the library's own memory (cuBLAS's workspace):
        # with it counted, the category holding the most bytes may be another one
        dom_truth = max(CATS, key=lambda c: live_truth[c])
        res["oom"] = {"dominant": ro.get("dominant"), "truth": dom_truth, "ok": ro.get("dominant") == dom_truth,
                      "requested": ro.get("requested_bytes"), "requested_truth": oom["requested_bytes"],
                      "live": ro.get("live"), "live_truth": live_truth,
                      "fits": [f.get("technique") for f in ro.get("fits", [])]}
        if ro.get("requested_bytes") != oom["requested_bytes"]:
            res["problems"].append("failed request %s, ledger %d" % (ro.get("requested_bytes"), oom["requested_bytes"]))
    return res


def mib(n):
    return "%.1f" % (n / 1048576.0)


def print_table(results, out):
    for res in results:
        print("== %s" % res["program"], file=out)
        for p in res["problems"]:
            print("   PROBLEM: %s" % p, file=out)
        if "categories" not in res:
            continue
        s = res["steps"]
        print("   steps %d / %d %s%s" % (s["report"], s["truth"], "ok" if s["ok"] else "WRONG",
                                        "" if s["scored"] else " (inference: not scored)"), file=out)
        cells = []
        for c in CATS:
            v = res["categories"][c]
            if v["report"] or v["truth"]:
                cells.append("%s %s/%s%s" % (c, mib(v["report"]), mib(v["truth"]), "" if v["ok"] else "*"))
        print("   MiB report/truth (* outside 5%%+1%% of the peak %s): %s" % (mib(res["peak_bytes"]), ", ".join(cells)),
              file=out)
        print("   confidently wrong: %.1f%% of the peak" % (100 * res["confidently_wrong"]), file=out)
        p = res["params"]
        print("   params %s / %s; optimizer %r / %s" % (p["report"], p["truth"], p["optimizer_kind"], p["optimizer_truth"]),
              file=out)
        if "oom" in res:
            o = res["oom"]
            print("   oom dominant %s / %s %s; fits %s" % (o["dominant"], o["truth"], "ok" if o["ok"] else "WRONG",
                                                         o["fits"]), file=out)
    scored = [r for r in results if "categories" in r]
    train = [r for r in scored if r["steps"]["scored"]]
    ooms = [r for r in scored if "oom" in r]
    print("\nprograms %d (ran and scored %d)" % (len(results), len(scored)), file=out)
    print("steps exact: %d of %d training programs" % (sum(r["steps"]["ok"] for r in train), len(train)), file=out)
    print("every category within 5%%+1%%: %d of %d" % (sum(r["categories_ok"] for r in scored), len(scored)), file=out)
    for c in CATS:
        n = [r for r in scored if r["categories"][c]["report"] or r["categories"][c]["truth"]]
        print("   %-13s right in %d of %d programs that have it in the truth or the report" %
              (c, sum(r["categories"][c]["ok"] for r in n), len(n)), file=out)
    print("oom dominant right: %d of %d" % (sum(r["oom"]["ok"] for r in ooms), len(ooms)), file=out)
    told = [r for r in scored if r["params"]["interpretation_ok"] is not None]
    print("optimizer interpretations printed: %d of %d programs, contradicting the ledger: %d%s" %
          (len(told), len(scored), sum(not r["params"]["interpretation_ok"] for r in told),
           "".join(" " + r["program"] for r in told if not r["params"]["interpretation_ok"])), file=out)
    cw = [r["confidently_wrong"] for r in scored]
    if cw:
        print("confidently wrong (bytes in a category that holds fewer in truth): mean %.1f%% of the peak, "
              "over 5%% in %d of %d programs" % (100 * sum(cw) / len(cw), sum(x > 0.05 for x in cw), len(cw)), file=out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.environ.get("ANA_BUILD") or os.path.join(HERE, "..", "..", "build"))
    ap.add_argument("--json", help="write the results as JSON here")
    ap.add_argument("--check", action="store_true", help="exit 1 when the recording is wrong")
    ap.add_argument("--src", default=HERE, help="the programs' folder (e.g. tests/corpus/heldout)")
    ap.add_argument("--bin", help="their executables' folder (default BUILD/corpus)")
    ap.add_argument("programs", nargs="*")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    src = os.path.abspath(a.src)
    names = a.programs or sorted(f[:-3] for f in os.listdir(src) if f.endswith(".cu"))
    with tempfile.TemporaryDirectory(prefix="ana-corpus-") as tmp:
        results = []
        for n in names:
            print("running %s" % n, file=sys.stderr)
            results.append(score_one(n, build, tmp, src, a.bin and os.path.abspath(a.bin)))
    print_table(results, sys.stdout)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    if a.check and any(r["problems"] for r in results):
        print("\nthe recording is wrong for: %s" % ", ".join(r["program"] for r in results if r["problems"]))
        return 1
    wrong = [r["program"] for r in results if r.get("params", {}).get("interpretation_ok") is False]
    if a.check and wrong:
        print("\nan optimizer interpretation contradicts the ledger (print none rather than a wrong "
              "one: docs/memory-anatomy.md, Bytes per parameter): %s" % ", ".join(wrong))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
