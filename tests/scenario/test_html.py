"""Scenario: the self-contained HTML pages (`anatomist html`, `anatomist diff --format html`;
docs/html.md) on the sample trainers run on the simulated device.

A page draws itself in the browser from the JSON it embeds; what the drawn DOM shows is
checked in a browser by tests/browser/. Here, with the standard library only, the page is
parsed and its embedded data checked against figures computed elsewhere:

* the embedded report equals `anatomist report --json` of the same trace, member for
  member (with the same --top), so every figure the page draws from it is the report's;
* the memory timeline reaches the peak the sample's own ledger states (train_mlp), at
  which point its categories are the report's `memory.at_peak`; every point's categories
  add up to its total; it ends at what was still live at the end (the ledger's leak);
  the OOM marker sits at the report's failure time;
* each flame graph's total is the ledger's or the report's figure: GPU time is the sum of
  the report's time by class, the peak and leaked memory and the bytes allocated are the
  ledger's; a node's total is its self plus its children's (what the viewer lays out);
* the page is self-contained: no address of any kind, no src or href, no external
  stylesheet, a Content-Security-Policy that forbids fetching, exactly the data script
  and one inline script, and the viewer is under 64 KiB;
* the command line: the default output next to the trace, `-o -`, errors with status 2;
* the diff page embeds `anatomist diff --format json` and flames merged from both runs;
* a PyTorch profiler trace (the fixtures folder, when present) makes a page too.
"""
import glob
import json
import os
import shutil
import sys
import unittest
from html.parser import HTMLParser

sys.path.insert(0, os.path.dirname(__file__))
from common import anatomist, clean_env, ledger, report_json, sample, tmpdir  # noqa: E402

CATS = ["weights", "optimizer", "gradients", "activations", "temporary", "functionality",
        "unattributed"]
# Device allocation apis of the memory replay (docs/report-schema.md, `memory`).
DEVICE_APIS = {"cudaMalloc", "cudaMallocAsync", "cudaMallocManaged", "cudaMallocPitch",
               "cudaMallocFromPoolAsync", "cuMemAlloc_v2", "cuMemAllocAsync",
               "cuMemAllocManaged", "cuMemAllocPitch_v2", "cuMemAllocFromPoolAsync"}
VIEWER_MAX = 64 << 10


class Page(HTMLParser):
    """Every element with its attributes; the text of each script and style element."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.elements, self.scripts, self.styles = [], [], []
        self._open = None
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.elements.append((tag, a))
        if tag in ("script", "style"):
            self._open = (tag, a, [])

    def handle_data(self, data):
        if self._open:
            self._open[2].append(data)

    def handle_endtag(self, tag):
        if self._open and tag == self._open[0]:
            kind, a, parts = self._open
            (self.scripts if kind == "script" else self.styles).append((a, "".join(parts)))
            self._open = None

    def data_text(self):
        found = [t for a, t in self.scripts if a.get("id") == "anatomist-data"]
        assert len(found) == 1, "expected one script#anatomist-data"
        return found[0]

    def data(self):
        return json.loads(self.data_text())


def run_sample(trace, name, *args, env=None, run_opts=(), ok=(0,)):
    r = anatomist("run", "--sim", "-q", *run_opts, "-o", trace, "--", sample(name), *args,
                  env=env, timeout=300)
    assert r.returncode in ok, r.stderr
    return r


def html(trace, *args):
    out = trace[: -len(".anat")] + ".html" if trace.endswith(".anat") else trace + ".html"
    r = anatomist("html", trace, "-o", out, *args)
    assert r.returncode == 0, r.stderr
    with open(out, encoding="utf-8") as f:
        return f.read()


class HtmlPages(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        d = cls.dir = tmpdir()
        cls.traces, cls.ledgers = {}, {}

        def make(key, name, *args, **kw):
            t = os.path.join(d, key + ".anat")
            r = run_sample(t, name, *args, **kw)
            cls.traces[key] = t
            if "ledger " in r.stdout:
                cls.ledgers[key] = ledger(r.stdout)

        make("mlp", "train_mlp")
        make("mlp_bf16", "train_mlp", "--precision", "bf16")
        make("gpt", "train_gpt", "--precision", "bf16", "--steps", "3",
             env=clean_env(ANATOMIST_SIM_BLAS_COMPUTE="0"))
        # doubles its batch each step until cudaMalloc fails, then SIGKILLs itself
        make("oom", "train_mlp", "--grow-batch", "--kill-on-oom",
             run_opts=("--sim-memory", "34MiB"), ok=(128 + 9,))
        make("no_gpu", "train_mlp", "--steps", "2", run_opts=("--no-cupti",))
        make("copies", "copies")  # no kernels, no steps
        cls.pages = {k: html(t) for k, t in cls.traces.items()}
        cls.reports = {k: report_json(t) for k, t in cls.traces.items()}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def data(self, key):
        return Page(self.pages[key]).data()

    # ---- the embedded report is `report --json` ----

    def test_report_is_report_json(self):
        for key in self.traces:
            with self.subTest(run=key):
                d = self.data(key)
                self.assertEqual(d["kind"], "report")
                self.assertEqual(d["report"], self.reports[key])

    def test_options_reach_the_report(self):
        t = self.traces["gpt"]
        d = Page(html(t, "--top", "3", "--no-symbols")).data()
        r = anatomist("report", t, "--json", "--top", "3", "--no-symbols")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(d["report"], json.loads(r.stdout))
        self.assertLessEqual(len(d["report"]["gemms"]), 3)
        self.assertNotEqual(d["report"], self.reports["gpt"])

    # ---- the memory timeline ----

    def check_timeline(self, key):
        rep, tl = self.reports[key], self.data(key)["timeline"]
        mem, pts = rep["memory"], tl["points"]
        self.assertEqual(tl["categories"], CATS)
        self.assertGreater(len(pts), 1)
        self.assertLessEqual(len(pts), 2001)
        times = [p[0] for p in pts]
        self.assertEqual(times, sorted(times))
        self.assertLessEqual(times[-1], rep["trace"]["duration_ns"])
        for p in pts:
            self.assertEqual(len(p), 2 + len(CATS))
            self.assertEqual(sum(p[2:]), p[1], p)
        top = max(p[1] for p in pts)
        at_top = next(p for p in pts if p[1] == top)
        self.assertEqual(top, mem["peak_bytes"])
        self.assertEqual(dict(zip(CATS, at_top[2:])), mem["at_peak"])
        self.assertEqual(tl["peak_bytes"], mem["peak_bytes"])
        self.assertEqual(tl["peak_ns"], mem["peak_at_ns"])
        self.assertEqual(pts[-1][1], mem["live_at_end_bytes"])
        self.assertEqual(tl["oom_ns"], rep["oom"]["time_ns"] if rep["oom"] else None)
        return tl

    def test_timeline(self):
        for key in ("mlp", "gpt", "oom", "no_gpu", "copies"):
            with self.subTest(run=key):
                self.check_timeline(key)

    def test_timeline_against_ledgers(self):
        for key in ("mlp", "oom"):
            with self.subTest(run=key):
                led, pts = self.ledgers[key], self.data(key)["timeline"]["points"]
                self.assertEqual(max(p[1] for p in pts), led["peak_bytes"])
        # train_mlp leaks its evaluation scratch on purpose: the timeline ends there
        self.assertEqual(self.data("mlp")["timeline"]["points"][-1][1],
                         self.ledgers["mlp"]["live_at_exit_bytes"])
        # the OOM marker: the failed request's time, after the last point that fit
        oom = self.data("oom")["timeline"]
        self.assertIsNotNone(oom["oom_ns"])
        self.assertLessEqual(oom["points"][-1][0], oom["oom_ns"])
        self.assertIsNone(self.data("mlp")["timeline"]["oom_ns"])

    # ---- the flame graphs ----

    def check_flame(self, f, metric, unit):
        self.assertEqual(f["metric"], metric)
        self.assertEqual(f["unit"], unit)
        nodes, names = f["nodes"], f["names"]
        self.assertEqual(nodes[0][2], f["total"])
        child_sum = [0] * len(nodes)
        for i, n in enumerate(nodes[1:], 1):
            self.assertLess(n[1], i)  # preorder: the parent comes first
            self.assertLess(n[0], len(names))
            child_sum[n[1]] += n[2]
        for i, n in enumerate(nodes):
            self.assertEqual(n[2], n[3] + child_sum[i], (names[n[0]], n))

    def test_flames(self):
        for key in ("mlp", "gpt", "oom", "no_gpu"):
            with self.subTest(run=key):
                rep, fl = self.reports[key], self.data(key)["flames"]
                want = {"gpu-time", "peak-memory", "alloc-bytes"}
                if rep["memory"]["live_at_end_bytes"] > 0:
                    want.add("leaked-memory")
                self.assertEqual(set(fl), want)
                self.check_flame(fl["gpu-time"], "gpu-time", "ns")
                for m in want - {"gpu-time"}:
                    self.check_flame(fl[m], m, "bytes")
                self.assertEqual(fl["gpu-time"]["total"], sum(rep["time"]["by_class"].values()))
                self.assertEqual(fl["peak-memory"]["total"], rep["memory"]["peak_bytes"])
                if "leaked-memory" in fl:
                    self.assertEqual(fl["leaked-memory"]["total"],
                                     rep["memory"]["live_at_end_bytes"])
                device = sum(v["bytes"] for a, v in rep["allocations"]["by_api"].items()
                             if a in DEVICE_APIS)
                self.assertEqual(fl["alloc-bytes"]["total"], device)
        self.assertEqual(self.data("no_gpu")["flames"]["gpu-time"]["total"], 0)

    def test_flames_against_ledgers(self):
        for key in ("mlp", "oom"):
            with self.subTest(run=key):
                led, fl = self.ledgers[key], self.data(key)["flames"]
                self.assertEqual(fl["peak-memory"]["total"], led["peak_bytes"])
                self.assertEqual(fl["alloc-bytes"]["total"], led["alloc_bytes"])
        self.assertEqual(self.data("mlp")["flames"]["leaked-memory"]["total"],
                         self.ledgers["mlp"]["live_at_exit_bytes"])

    # ---- self-contained and small ----

    def check_self_contained(self, text):
        low = text.lower()
        for bad in ("http://", "https://", "ftp://", "url(", "@import", "//cdn"):
            self.assertNotIn(bad, low)
        page = Page(text)
        for tag, a in page.elements:
            self.assertNotIn("src", a, tag)
            self.assertTrue(a.get("href", "#").startswith("#"), (tag, a))
            self.assertNotIn(tag, ("link", "iframe", "img", "object", "embed", "base"))
        csp = [a.get("content", "") for t, a in page.elements
               if t == "meta" and a.get("http-equiv", "").lower() == "content-security-policy"]
        self.assertEqual(len(csp), 1)
        self.assertIn("default-src 'none'", csp[0])
        kinds = sorted(a.get("type", "") for a, _ in page.scripts)
        self.assertEqual(kinds, ["", "application/json"])
        data = page.data_text()
        self.assertNotIn("</", data)
        self.assertNotIn("<!--", data)
        viewer = len(text.encode()) - len(data.encode())
        self.assertLess(viewer, VIEWER_MAX)
        return viewer

    def test_self_contained_and_small(self):
        for key, text in self.pages.items():
            with self.subTest(run=key):
                self.check_self_contained(text)
                self.assertLess(len(text.encode()), 1 << 20)

    # ---- the command line ----

    def test_default_output_and_stdout(self):
        # the trace's path is in the data: a folder named so that, unescaped, it would end
        # the data's <script> element ("</") or open a comment in it ("<!--")
        top = tmpdir()
        d = os.path.join(top, "odd<!--<")
        os.mkdir(d)
        t = os.path.join(d, "run.1.anat")
        shutil.copy(self.traces["copies"], t)
        r = anatomist("html", t)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = os.path.join(d, "run.1.html")
        self.assertIn(out, r.stderr)
        self.assertEqual(sorted(os.listdir(d)), ["run.1.anat", "run.1.html"])  # no .tmp left
        with open(out, encoding="utf-8") as f:
            text = f.read()
        self.check_self_contained(text)
        self.assertEqual(Page(text).data()["report"]["trace"]["path"], t)
        s = anatomist("html", t, "-o", "-")
        self.assertEqual(s.returncode, 0, s.stderr)
        self.assertEqual(s.stdout, text)
        self.assertEqual(Page(s.stdout).data()["report"], report_json(t))
        shutil.rmtree(top)

    def test_errors(self):
        d = tmpdir()
        t = self.traces["copies"]
        cases = {
            "missing trace": ["html", os.path.join(d, "nope.anat")],
            "no trace": ["html"],
            "two traces": ["html", t, t],
            "bad option": ["html", "--frobnicate", t],
            "bad --top": ["html", "--top", "many", t],
            "no directory": ["html", t, "-o", os.path.join(d, "no", "such", "dir.html")],
        }
        for what, args in cases.items():
            with self.subTest(case=what):
                r = anatomist(*args)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertTrue(r.stderr.startswith("anatomist: "), r.stderr)
        # a trace named .html is not replaced by its own page
        h = os.path.join(d, "trace.html")
        shutil.copy(t, h)
        r = anatomist("html", h)
        self.assertEqual(r.returncode, 2)
        self.assertIn("-o", r.stderr)
        with open(h, "rb") as a, open(t, "rb") as b:
            self.assertEqual(a.read(), b.read())
        self.assertEqual(os.listdir(os.path.dirname(h)), ["trace.html"])
        r = anatomist("html", "--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("Usage: anatomist html TRACE", r.stdout)
        shutil.rmtree(d)

    # ---- the diff page ----

    def test_diff_page(self):
        base, head = self.traces["mlp"], self.traces["mlp_bf16"]
        out = os.path.join(self.dir, "diff.html")
        r = anatomist("diff", base, head, "--format", "html", "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        j = anatomist("diff", base, head, "--format", "json")
        self.assertEqual(j.returncode, 0, j.stderr)
        with open(out, encoding="utf-8") as f:
            text = f.read()
        self.check_self_contained(text)
        d = Page(text).data()
        self.assertEqual(d["kind"], "diff")
        self.assertEqual(d["diff"], json.loads(j.stdout))
        self.assertEqual(set(d["flames"]), {"gpu-time", "peak-memory"})
        pages = {"base": self.data("mlp")["flames"], "head": self.data("mlp_bf16")["flames"]}
        for m, f in d["flames"].items():
            with self.subTest(metric=m):
                self.assertEqual(f["total"], pages["head"][m]["total"])
                self.assertEqual(f["base_total"], pages["base"][m]["total"])
                self.assertEqual(f["nodes"][0][4], f["base_total"])
                self.assertTrue(all(len(n) == 6 for n in f["nodes"]))
                # every stack of either side: the base totals add up as the head's do
                child = [0] * len(f["nodes"])
                for n in f["nodes"][1:]:
                    child[n[1]] += n[4]
                for i, n in enumerate(f["nodes"]):
                    self.assertEqual(n[4], n[5] + child[i])

    # ---- a PyTorch profiler trace ----

    def test_kineto_trace(self):
        folder = os.environ.get("ANATOMIST_FIXTURES") or os.path.join(
            os.environ.get("ANA_SOURCE", os.path.join(os.path.dirname(__file__), "../..")),
            "../shared/fixtures")
        found = sorted(glob.glob(os.path.join(folder, "*.json.gz")), key=os.path.getsize)
        if not found:
            self.skipTest("no PyTorch profiler traces in " + folder)
        out = os.path.join(self.dir, "kineto.html")
        r = anatomist("html", found[0], "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out, encoding="utf-8") as f:
            text = f.read()
        self.check_self_contained(text)
        d = Page(text).data()
        rep = report_json(found[0])
        self.assertEqual(rep["trace"]["source"], "kineto")
        self.assertEqual(d["report"], rep)
        self.assertEqual(d["flames"]["gpu-time"]["total"], sum(rep["time"]["by_class"].values()))


if __name__ == "__main__":
    unittest.main()
