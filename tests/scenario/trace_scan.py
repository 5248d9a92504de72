"""One pass over a trace, streamed from tests/anatrace_dump, checking that it is whole:
the reader gets through it with no error and it ends as expected, every stack and kernel
id a record uses was defined before it, every thread with records has its THREAD record
first, no API call's correlation id and no GPU record's appears twice, and exactly one
PROCESS record opens it. Used by the concurrency and process tests, whose traces are too
large to hold as a list of dicts (a 16 x 100 000-call run has millions of records).

What a test needs of the records themselves it gets through `keep`: a function of a
record returning a small value (or None) kept per thread, in file order."""
import json
import subprocess

from common import DUMP

API_KINDS = ("ALLOC", "FREE", "LAUNCH", "MEMCPY", "MEMSET", "VMM")
GPU_KINDS = ("GPU_KERNEL", "GPU_MEMCPY", "GPU_MEMSET", "GPU_MEMORY")


class Scan:
    def __init__(self):
        self.errors = []        # what is wrong with the trace, as sentences
        self.counts = {}        # records by kind
        self.kept = {}          # tid -> [keep(record), ...] in file order
        self.dropped = {}       # tid -> records counted in DROPPED
        self.gpu_dropped = 0    # records counted in GPU_DROPPED
        self.threads = set()    # tids named by THREAD records
        self.process = None     # the PROCESS record
        self.ended = None
        self.first_time = None  # the earliest time of any record

    def error(self, msg):
        if len(self.errors) < 20:
            self.errors.append(msg)


def _check(s, r, stacks, kernels, corrs):
    k = r["kind"]
    if k == "STACK":
        stacks.add(r["id"])
    elif k == "KERNEL":
        kernels.add(r["id"])
    elif k == "THREAD":
        s.threads.add(r["thread"])
    elif k == "DROPPED":
        s.dropped[r["thread"]] = s.dropped.get(r["thread"], 0) + r["records"]
    elif k == "GPU_DROPPED":
        s.gpu_dropped += r["records"]
    elif k == "PROCESS":
        if s.process is not None:
            s.error("a second PROCESS record")
        s.process = r
    if k in API_KINDS:
        if r["tid"] not in s.threads:
            s.error("%s of thread %d before its THREAD record" % (k, r["tid"]))
        if r["stack"] and r["stack"] not in stacks:
            s.error("%s uses stack %d, not defined before it" % (k, r["stack"]))
        if r["corr"]:
            if ("api", r["corr"]) in corrs:
                s.error("two API records with correlation id %d" % r["corr"])
            corrs.add(("api", r["corr"]))
    if k in GPU_KINDS:
        key = (k, r["corr"], r.get("op"))
        if key in corrs:
            s.error("two %s records with correlation id %d" % (k, r["corr"]))
        corrs.add(key)
    if k in ("LAUNCH", "GPU_KERNEL") and r["kernel"] and r["kernel"] not in kernels:
        s.error("%s uses kernel %d, not defined before it" % (k, r["kernel"]))


def scan(trace, keep=None, ended="exit", timeout=300):
    """Reads the whole trace; returns a Scan. Fails (AssertionError) when the reader stops
    with an error; the caller asserts on scan.errors and the rest."""
    s = Scan()
    stacks, kernels, corrs = set(), set(), set()
    p = subprocess.Popen([DUMP, trace], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in p.stdout:
            r = json.loads(line)
            if "end" in r:
                s.ended = r["end"]
                continue
            if s.process is None and r["kind"] != "PROCESS":
                s.error("the first record is %s, not PROCESS" % r["kind"])
            s.counts[r["kind"]] = s.counts.get(r["kind"], 0) + 1
            if s.first_time is None or r["time"] < s.first_time:
                s.first_time = r["time"]
            _check(s, r, stacks, kernels, corrs)
            if keep:
                v = keep(r)
                if v is not None:
                    s.kept.setdefault(r["tid"], []).append(v)
        err = p.stderr.read()
        rc = p.wait(timeout=timeout)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        p.stdout.close()
        p.stderr.close()
    assert rc == 0, "anatrace_dump %s: %s" % (trace, err)
    if s.ended != ended:
        s.error("the trace ends %r, not %r" % (s.ended, ended))
    return s


def api_key(r):
    """keep= for scan: an API record as (kind, size or ptr, grid x, grid y)."""
    k = r["kind"]
    if k == "ALLOC":
        return ("A", r["size"], r["ptr"], r["ret"])
    if k == "FREE":
        return ("F", r["ptr"], 0, r["ret"])
    if k == "LAUNCH":
        return ("L", r["grid_x"], r["grid_y"], r["ret"])
    if k in ("MEMSET", "MEMCPY"):
        return (k[3], r["bytes"], r.get("ptr", r.get("dst")), r["ret"])
    return None
