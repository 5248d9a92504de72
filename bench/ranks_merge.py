#!/usr/bin/env python3
"""The merge of a job's ranks at scale (docs/ranks.md, "Jobs that outgrow one machine"):
writes N synthetic rank traces with bench/gen_trace (--rank R --world N, seed R + 1, eight
ranks a host), makes each rank's summary with `anatomist report --json TRACE` (timed one by
one, as a cluster would run them, each on its own core), then times with GNU time, over
--rounds rounds, the three ways of getting the job report:

    anatomist report --json summaries/*.json     # the merge of the summaries
    anatomist report --json traces/               # every trace, read in this process
    anatomist html summaries/*.json -o job.html

and prints a markdown table: median wall and user seconds, peak resident memory (largest
of the rounds), output size. Checks what it can without trusting the analyzer's arithmetic:
the merged documents are valid JSON, say N ranks of world size N and none missing; the
merged busy time, launches and collective calls are the sums over the per-rank summaries;
the launches also what gen_trace says it wrote; every step's all-reduce is matched across
the ranks; the merge of the summaries equals the report of the traces. Run by hand to fill docs/overhead.md ("Many ranks"); not a test.

    bench/ranks_merge.py BUILD_DIR [--ranks 256] [--rounds 3] [--records 2e5] [--keep DIR]

--records: records per rank trace (gen_trace stops at the first step boundary past it;
621 records a step, one all-reduce a step)."""
import argparse
import glob
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def timed(cmd, stdout=None):
    """(wall s, user s, peak RSS KiB) of cmd, from GNU time; its stdout to the file stdout."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        out = open(stdout, "w") if stdout else subprocess.DEVNULL
        try:
            r = subprocess.run(["/usr/bin/time", "-o", tf.name, "-f", "%e %U %M", *cmd],
                               stdout=out, stderr=subprocess.PIPE, text=True)
        finally:
            if stdout:
                out.close()
        if r.returncode != 0:
            sys.exit("failed (%d): %s\n%s" % (r.returncode, " ".join(cmd[:4]), r.stderr[-2000:]))
        wall, user, rss = tf.read().split()[-3:]
    return float(wall), float(user), int(rss)


def generate(gen, n, rank, world, path):
    r = subprocess.run([gen, "--records", str(int(n)), "--out", path, "--seed", str(rank + 1),
                        "--rank", str(rank), "--world", str(world)],
                       capture_output=True, text=True, check=True)
    return {k: int(v) for k, v in (line.split("=", 1) for line in r.stdout.splitlines())}


def load(path):
    with open(path) as f:
        return json.load(f)  # raises on anything that is not JSON


def check(job, summaries, facts, world, what):
    j = job["job"]
    assert (j["ranks"], j["world_size"], j["missing_ranks"]) == (world, world, []), (what, j)
    assert [r["rank"] for r in job["ranks"]] == list(range(world)), what
    assert job["time"]["busy_ns"] == sum(s["time"]["busy_ns"] for s in summaries), what
    assert job["time"]["launches"] == sum(s["launches"] for s in summaries), what
    assert job["time"]["launches"] == sum(f["launches"] for f in facts), what
    assert job["collectives"]["calls"] == sum(f["count.collective"] for f in facts), what
    # one all-reduce a step on the one communicator: every step's call matched, none left
    sk = job["skew"]
    assert (sk["matched"], sk["unmatched_calls"]) == (max(f["count.collective"] for f in facts), 0), what


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--ranks", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--records", type=float, default=2e5)
    ap.add_argument("--keep")
    a = ap.parse_args()
    exe = os.path.join(a.build, "bin", "anatomist")
    gen = os.path.join(a.build, "bench", "gen_trace")
    tmp = a.keep or tempfile.mkdtemp(prefix="ana-ranks-")
    traces, sums = os.path.join(tmp, "traces"), os.path.join(tmp, "summaries")
    os.makedirs(traces, exist_ok=True)
    os.makedirs(sums, exist_ok=True)
    try:
        t0 = time.monotonic()
        facts = [generate(gen, a.records, r, a.ranks, os.path.join(traces, "r%03d.anat" % r))
                 for r in range(a.ranks)]
        gen_s = time.monotonic() - t0
        per = [timed([exe, "report", "--json", os.path.join(traces, "r%03d.anat" % r)],
                     stdout=os.path.join(sums, "r%03d.json" % r)) for r in range(a.ranks)]
        summaries = [load(p) for p in sorted(glob.glob(os.path.join(sums, "*.json")))]
        sum_files = sorted(glob.glob(os.path.join(sums, "*.json")))
        merged, direct, html = (os.path.join(tmp, n) for n in ("job.json", "job-traces.json", "job.html"))
        runs = {"merge": [], "traces": [], "html": []}
        for _ in range(a.rounds):
            runs["merge"].append(timed([exe, "report", "--json", *sum_files], stdout=merged))
            runs["traces"].append(timed([exe, "report", "--json", traces], stdout=direct))
            runs["html"].append(timed([exe, "html", *sum_files, "-o", html]))
        job, job_t = load(merged), load(direct)
        check(job, summaries, facts, a.ranks, "merge of the summaries")
        check(job_t, summaries, facts, a.ranks, "report of the traces")
        assert job == job_t, "the merge of the summaries differs from the report of the traces"
        assert os.path.getsize(html) > 0

        mb = lambda p: os.path.getsize(p) / 1e6
        print("machine: %s, %d CPUs, %s, Python %s" % (platform.node(), os.cpu_count(),
              platform.platform(), platform.python_version()))
        print("%d ranks x %d records (%d steps, %d collective calls a rank); traces %.1f MB in all, "
              "written in %.1f s; summaries %.1f MB in all"
              % (a.ranks, facts[0]["records"], facts[0]["steps"], facts[0]["count.collective"],
                 sum(f["bytes"] for f in facts) / 1e6, gen_s, sum(mb(p) for p in sum_files)))
        print()
        print("| step | runs | wall s | user s | peak RSS MB | output MB |")
        print("|---|---|---|---|---|---|")
        print("| `report --json TRACE`, one rank | %d | %.3f (median; max %.3f) | %.3f | %.0f (max) | %.2f (median) |"
              % (a.ranks, statistics.median(p[0] for p in per), max(p[0] for p in per),
                 statistics.median(p[1] for p in per), max(p[2] for p in per) / 1024,
                 statistics.median(mb(p) for p in sum_files)))
        print("| the %d summaries, one after another | 1 | %.2f | %.2f | | %.1f |"
              % (a.ranks, sum(p[0] for p in per), sum(p[1] for p in per), sum(mb(p) for p in sum_files)))
        for key, label, out in (("merge", "`report --json summaries/*.json` (the merge)", merged),
                                ("traces", "`report --json traces/` (all traces, one process)", direct),
                                ("html", "`html summaries/*.json -o job.html`", html)):
            r = runs[key]
            print("| %s | %d | %.2f | %.2f | %.0f | %.2f |"
                  % (label, len(r), statistics.median(x[0] for x in r),
                     statistics.median(x[1] for x in r), max(x[2] for x in r) / 1024, mb(out)))
        print()
        print("checked: valid JSON; job.ranks = job.world_size = %d, none missing; busy time, "
              "launches and collective calls = the sums over the summaries and gen_trace; "
              "every all-reduce matched; merge of the summaries == report of the traces" % a.ranks)
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
