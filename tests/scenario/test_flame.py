"""Scenario: `anatomist flame` (docs/flame.md) on real samples run on the simulated device.

Every figure of a flame graph must be the same figure `anatomist report --json` gives, and
the samples' own ledgers where they have one (docs/samples.md):
  * gpu-time: the folded total is the sum of every GPU activity's duration (gpu.kernels +
    gpu.memcpy + gpu.memset total_ns); the frames under each class sum to time.by_class;
    the leaves of each kernel sum to its gpu.kernels_by_time total; the copy leaves to
    gpu.copies by direction and host memory kind; the memset leaf to gpu.memset;
  * peak-memory: the total is memory.peak_bytes (and train_mlp's ledger peak), the
    category leaves memory.at_peak;
  * leaked-memory: memory.live_at_end_bytes, the ledger's live_at_exit_bytes (train_mlp
    leaks evaluate()'s scratch on purpose), under the function that allocated it;
  * alloc-bytes / alloc-count: the successful device allocations of allocations.by_api,
    and the ledger's alloc_bytes / alloc_calls.
The stacks hold the samples' own functions (main, the template functions train_mlp.cu
defines, some only as inlined frames: `nm` does not list them); the SVG parses as XML with
one frame group per node of at least 1/10000 of the total; the output is byte-identical
across runs; bad options exit 2.

The HTML page (`--format html`) is a viewer page like `anatomist html`'s: it embeds
{"kind": "flame", "flame": F, ...} and viewer/flame.js, the report page's flame component.
F's total is the folded total and the report's figure, its tree holds exactly the folded
stacks with their values, and the page is self-contained by the checks of test_html.py
(no address, no src or href, the Content-Security-Policy, one inline script), also for a
trace whose path would end the data's <script> element if it were not escaped.
"""
import json
import os
import re
import subprocess
import sys
import unittest
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(__file__))
from common import anatomist, clean_env, ledger, sample, tmpdir  # noqa: E402
import test_html  # noqa: E402  (the page parser and the self-contained checks)

RUNS = {
    "mlp": ("train_mlp", ["--steps", "3", "--hidden", "512"], {}),
    "gpt": ("train_gpt", ["--precision", "bf16", "--steps", "3"], {"ANATOMIST_SIM_BLAS_COMPUTE": "0"}),
}
DEVICE_APIS = {"cudaMalloc", "cudaMallocAsync", "cudaMallocPitch", "cudaMalloc3D",
               "cudaMallocFromPoolAsync", "cuMemAlloc_v2", "cuMemAllocPitch_v2",
               "cuMemAllocAsync", "cuMemAllocFromPoolAsync", "cuMemCreate"}
HOST_APIS = {"cudaMallocHost", "cudaHostAlloc", "cuMemAllocHost_v2", "cuMemHostAlloc"}
CLASSES = ("contraction", "normalization", "elementwise", "communication", "memory", "other")
SVG = "{http://www.w3.org/2000/svg}"
SOURCE = os.environ.get("ANA_SOURCE") or os.path.join(os.path.dirname(__file__), "..", "..")
_cache = {}


def run(name):
    """(trace, ledger, report JSON with every row) of one sample run, made once."""
    if name not in _cache:
        prog, args, env = RUNS[name]
        trace = os.path.join(tmpdir(), name + ".anat")
        r = anatomist("run", "--sim", "-q", "-o", trace, "--", sample(prog), *args,
                      env=clean_env(**env), timeout=300)
        assert r.returncode == 0, r.stderr
        rep = anatomist("report", "--json", "--top", "0", trace)
        assert rep.returncode == 0, rep.stderr
        _cache[name] = (trace, ledger(r.stdout), json.loads(rep.stdout))
    return _cache[name]


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def flame(trace, *args):
    r = anatomist("flame", trace, *args)
    assert r.returncode == 0, r.stderr
    return r


def folded(trace, metric, *extra):
    """[(frames, value)] of the folded output."""
    out = []
    for line in flame(trace, "--metric", metric, *extra).stdout.splitlines():
        stack, value = line.rsplit(" ", 1)
        out.append((stack.split(";"), int(value)))
    return out


def sums(rows, key):
    s = {}
    for frames, v in rows:
        k = key(frames)
        s[k] = s.get(k, 0) + v
    return s


def short(name):
    """A frame name as docs/flame.md says the flame shows it: no symbol version, no
    parameter list (nor the qualifiers after it), no template function's return type."""
    name = name.split("@")[0] if not name.startswith("@") else name
    if name.endswith(")") or re.search(r"\)( const| volatile| &&?)*$", name):
        end = name.rfind(")")
        depth = 0
        for i in range(end, -1, -1):
            depth += {")": 1, "(": -1}.get(name[i], 0)
            if depth == 0:
                if i > 0:
                    name = name[:i]
                break
    if "operator" not in name:
        depth, start = 0, 0
        for i, c in enumerate(name):
            depth += 1 if c in "<({" else -1 if c in ">)}" else 0
            if c == " " and depth == 0:
                start = i + 1
        if start < len(name):
            name = name[start:]
    return name


class GpuTime(unittest.TestCase):
    def check(self, name):
        trace, _, rep = run(name)
        g = rep["gpu"]
        rows = folded(trace, "gpu-time")
        want = g["kernels"]["total_ns"] + g["memcpy"]["total_ns"] + g["memset"]["total_ns"]
        self.assertGreater(want, 0)
        self.assertEqual(sum(v for _, v in rows), want)
        by_class = sums(rows, lambda f: f[-2])
        self.assertEqual(by_class, {c: v for c, v in rep["time"]["by_class"].items() if v})
        kernels = {}
        for k in g["kernels_by_time"]:
            n = short(k["name"] or k["mangled"])
            kernels[n] = kernels.get(n, 0) + k["total_ns"]
        leaves = sums([r for r in rows if r[0][-2] != "memory"], lambda f: f[-1])
        self.assertEqual(leaves, kernels)
        mem = sums([r for r in rows if r[0][-2] == "memory"], lambda f: f[-1])
        copies = {}
        for d, c in g["copies"].items():
            for host, h in c["by_host_kind"].items():
                leaf = f"memcpy {d} ({host})" if d in ("HtoD", "DtoH") and host != "other" \
                    else f"memcpy {d}"
                if h["total_ns"]:
                    copies[leaf] = copies.get(leaf, 0) + h["total_ns"]
        if g["memset"]["total_ns"]:
            copies["memset"] = g["memset"]["total_ns"]
        self.assertEqual(mem, copies)
        for frames, _ in rows:
            self.assertEqual(frames[0], "_start", frames)
            self.assertIn("main", frames)
        return rows

    def test_train_mlp(self):
        rows = self.check("mlp")
        # layer_forward (train_mlp.cu) launches matmul_fwd, in forward, in a training step
        paths = [f for f, _ in rows if f[-1] == "matmul_fwd" and f[-2] == "contraction"]
        self.assertTrue(any(f[f.index("main"):f.index("main") + 4] ==
                            ["main", "train_step<float>", "forward<float>", "layer_forward<float>"]
                            for f in paths), paths)
        # nvcc's launch stubs are not frames: the host function named after the kernel
        # (the <<<>>> call site) is followed by the class, then the kernel
        self.assertIn(["layer_forward<float>", "matmul_fwd", "contraction", "matmul_fwd"],
                      [f[-4:] for f in paths])
        stubs = ("__device_stub__", "__wrapper__device_stub_", "__cudaLaunchKernel_helper",
                 "cudaLaunchKernel<")
        self.assertEqual([x for f, _ in rows for x in f if x.startswith(stubs)], [])

    def test_train_gpt(self):
        rows = self.check("gpt")
        gemm = [f for f, _ in rows if "cublasGemmEx" in f]
        self.assertTrue(gemm)
        for f in gemm:
            self.assertEqual(f[-2], "contraction", f)

    def test_inlined_frames(self):
        """train_step is a static template train_mlp.cu defines; at -O2 it exists only
        inlined into main, so only the debug info can name it."""
        trace, _, _ = run("mlp")
        nm = subprocess.run(["nm", "-C", sample("train_mlp")], capture_output=True, text=True)
        self.assertEqual(nm.returncode, 0, nm.stderr)
        symbols = {short(line.split(" ", 2)[2]) for line in nm.stdout.splitlines()
                   if len(line.split(" ", 2)) == 3}
        frames = {x for f, _ in folded(trace, "gpu-time") for x in f}
        self.assertIn("train_step<float>", frames)
        self.assertIn("layer_forward<float>", symbols)  # nm's names read like the flame's
        inlined = sorted(x for x in frames - symbols if not x.startswith(("memcpy", "["))
                         and x not in CLASSES and x != "memset")
        self.assertIn("train_step<float>", inlined)
        src = read(os.path.join(SOURCE, "samples", "train_mlp.cu"))
        for x in inlined:
            base = re.sub(r"<.*", "", x)
            if base.startswith("__"):
                continue  # glibc's and the CUDA headers' own
            self.assertRegex(src, r"\b" + re.escape(base) + r"\s*\(", x)

    def test_no_symbols(self):
        trace, _, rep = run("mlp")
        rows = folded(trace, "gpu-time", "--no-symbols")
        frames = {x for f, _ in rows for x in f[:-2]}
        self.assertNotIn("main", frames)
        self.assertTrue(any(x.startswith("train_mlp+0x") for x in frames), frames)
        g = rep["gpu"]
        self.assertEqual(sum(v for _, v in rows),
                         g["kernels"]["total_ns"] + g["memcpy"]["total_ns"] + g["memset"]["total_ns"])


class Memory(unittest.TestCase):
    def categories(self, rows):
        return sums(rows, lambda f: f[-1].strip("[]"))

    def device_allocs(self, rep):
        by_api = rep["allocations"]["by_api"]
        self.assertLessEqual(set(by_api), DEVICE_APIS | HOST_APIS)
        dev = [v for k, v in by_api.items() if k in DEVICE_APIS]
        return sum(v["bytes"] for v in dev), sum(v["ok"] for v in dev)

    def check(self, name):
        trace, led, rep = run(name)
        mem = rep["memory"]
        peak = folded(trace, "peak-memory")
        self.assertEqual(sum(v for _, v in peak), mem["peak_bytes"])
        self.assertEqual(self.categories(peak), {c: v for c, v in mem["at_peak"].items() if v})
        leaked = folded(trace, "leaked-memory")
        self.assertEqual(sum(v for _, v in leaked), mem["live_at_end_bytes"])
        nbytes, count = self.device_allocs(rep)
        self.assertEqual(sum(v for _, v in folded(trace, "alloc-bytes")), nbytes)
        self.assertEqual(sum(v for _, v in folded(trace, "alloc-count")), count)
        return trace, led, peak, leaked

    def test_train_mlp(self):
        trace, led, peak, leaked = self.check("mlp")
        self.assertEqual(sum(v for _, v in peak), led["peak_bytes"])
        self.assertEqual(sum(v for _, v in leaked), led["live_at_exit_bytes"])
        self.assertEqual(sum(v for _, v in leaked), sum(x["bytes"] for x in led["leaked"]))
        self.assertEqual(sum(v for _, v in folded(trace, "alloc-bytes")), led["alloc_bytes"])
        self.assertEqual(sum(v for _, v in folded(trace, "alloc-count")), led["alloc_calls"])
        for frames, _ in peak + leaked:
            self.assertEqual(frames[-2], "dev_alloc", frames)  # every buffer's allocator
        for frames, _ in leaked:  # evaluate()'s scratch, for the accuracy
            self.assertIn("evaluate<float>", frames)

    def test_train_gpt(self):
        self.check("gpt")

    def test_nothing_leaked(self):
        trace, _, rep = run("gpt")
        self.assertEqual(rep["memory"]["live_at_end_bytes"], 0)
        r = flame(trace, "--metric", "leaked-memory")
        self.assertEqual(r.stdout, "")
        self.assertIn("leaked-memory is 0 everywhere", r.stderr)
        svg = os.path.join(tmpdir(), "empty.svg")
        flame(trace, "--metric", "leaked-memory", "-o", svg)
        root = ET.parse(svg).getroot()
        self.assertEqual(root.get("data-total"), "0")
        self.assertEqual(root.findall(SVG + "g"), [])


def tree_stacks(f):
    """{folded stack: self} of a flame document's nodes with a value of their own, names
    sanitized as the folded output writes them."""
    names, nodes, path, out = f["names"], f["nodes"], {0: []}, {}
    for i, n in enumerate(nodes[1:], 1):
        path[i] = path[n[1]] + [re.sub(r"[\r\n]", " ", names[n[0]].replace(";", ":"))]
        if n[3]:
            out[";".join(path[i])] = n[3]
    return out


class HtmlPage(unittest.TestCase):
    """--format html: the viewer page of kind "flame" (docs/html.md)."""

    FIGURES = {  # the report's figure each metric's total must equal
        "gpu-time": lambda rep: sum(rep["gpu"][k]["total_ns"] for k in ("kernels", "memcpy", "memset")),
        "peak-memory": lambda rep: rep["memory"]["peak_bytes"],
        "leaked-memory": lambda rep: rep["memory"]["live_at_end_bytes"],
        "alloc-bytes": lambda rep: sum(v["bytes"] for k, v in rep["allocations"]["by_api"].items()
                                       if k in DEVICE_APIS),
        "alloc-count": lambda rep: sum(v["ok"] for k, v in rep["allocations"]["by_api"].items()
                                       if k in DEVICE_APIS),
    }

    def page(self, trace, *args):
        out = os.path.join(tmpdir(), "flame.html")
        flame(trace, *args, "-o", out)
        text = read(out)
        test_html.HtmlPages.check_self_contained(self, text)
        return text, test_html.Page(text).data()

    def test_data_is_the_flame(self):
        for name in RUNS:
            trace, _, rep = run(name)
            for metric, figure in self.FIGURES.items():
                with self.subTest(run=name, metric=metric):
                    _, d = self.page(trace, "--metric", metric)
                    self.assertEqual(d["kind"], "flame")
                    self.assertEqual(d["trace"], trace)
                    self.assertIn(RUNS[name][0], d["title"])  # the traced command
                    f = d["flame"]
                    self.assertEqual((f["metric"], f["unit"]),
                                     (metric, "ns" if metric == "gpu-time" else
                                      "allocations" if metric == "alloc-count" else "bytes"))
                    rows = {";".join(fr): v for fr, v in folded(trace, metric)}
                    self.assertEqual(f["total"], sum(rows.values()))
                    self.assertEqual(f["total"], figure(rep))
                    self.assertEqual(f["nodes"][0][2], f["total"])
                    self.assertEqual(tree_stacks(f), rows)
                    kids = [0] * len(f["nodes"])
                    for n in f["nodes"][1:]:
                        kids[n[1]] += n[2]
                    for i, n in enumerate(f["nodes"]):
                        self.assertEqual(n[2], n[3] + kids[i], f["names"][n[0]])

    def test_the_report_pages_flame_component(self):
        trace, _, _ = run("mlp")
        text, _ = self.page(trace)
        page = test_html.Page(text)
        script = [t for a, t in page.scripts if "id" not in a]
        self.assertEqual(len(script), 1)
        for js in ("common.js", "flame.js", "flamepage.js"):
            self.assertTrue(read(os.path.join(SOURCE, "viewer", js)) in script[0],
                            "viewer/%s is not the page's (rebuild after changing it)" % js)
        # drawn by the script, not the standalone SVG of --format svg
        self.assertNotIn("svg", [tag for tag, _ in page.elements])
        self.assertEqual(flame(trace, "--format", "html").stdout, text)
        _, rep_page = self.page(trace, "--metric", "peak-memory")
        out = os.path.join(tmpdir(), "report.html")
        r = anatomist("html", trace, "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        report = test_html.Page(read(out)).data()
        self.assertEqual(rep_page["flame"], report["flames"]["peak-memory"])

    def test_empty_and_odd_path(self):
        trace, _, _ = run("gpt")
        # unescaped, "<" and the path's "/" would end the data's <script> element, and
        # "<!--" would open a comment in it
        d = os.path.join(tmpdir(), "odd<!--<")
        os.makedirs(d)
        odd = os.path.join(d, "run.anat")
        with open(trace, "rb") as a, open(odd, "wb") as b:
            b.write(a.read())
        _, data = self.page(odd, "--metric", "leaked-memory")  # 0 everywhere
        self.assertEqual(data["trace"], odd)
        self.assertEqual(data["flame"]["total"], 0)


class Formats(unittest.TestCase):
    def nodes(self, rows):
        """Totals of every node (path prefix) of the folded rows."""
        tot = {}
        for frames, v in rows:
            for i in range(1, len(frames) + 1):
                tot[tuple(frames[:i])] = tot.get(tuple(frames[:i]), 0) + v
        return tot

    def test_svg(self):
        for name in RUNS:
            trace, _, _ = run(name)
            for metric in ("gpu-time", "peak-memory"):
                svg = os.path.join(tmpdir(), "f.svg")
                flame(trace, "--metric", metric, "-o", svg)
                rows = folded(trace, metric)
                total = sum(v for _, v in rows)
                root = ET.parse(svg).getroot()
                self.assertEqual(int(root.get("data-total")), total)
                self.assertEqual(root.get("data-metric"), metric)
                groups = root.findall(SVG + "g")
                drawn = [n for n, v in self.nodes(rows).items() if v * 10000 >= total]
                self.assertEqual(len(groups), len(drawn) + 1)  # and the root, "all"
                for g in groups:
                    self.assertEqual(len(g.findall(SVG + "rect")), 1)
                    self.assertIsNotNone(g.find(SVG + "title"))
                self.assertEqual(sorted(int(g.get("data-v")) for g in groups),
                                 sorted([total] + [self.nodes(rows)[n] for n in drawn]))
                self.assertIsNotNone(root.find(SVG + "script"))
                self.assertNotIn("http://", read(svg).replace(
                    'xmlns="http://www.w3.org/2000/svg"', ""))

    def test_deterministic(self):
        trace, _, _ = run("gpt")
        for args in (["--metric", "gpu-time"], ["--metric", "alloc-bytes"],
                     ["--format", "svg"]):
            a, b = flame(trace, *args).stdout, flame(trace, *args).stdout
            self.assertTrue(a)
            self.assertEqual(a, b)

    def test_format_choice(self):
        trace, _, _ = run("mlp")
        plain = flame(trace).stdout
        self.assertEqual(flame(trace, "-o", "-").stdout, plain)
        self.assertEqual(flame(trace, "--format", "folded").stdout, plain)
        self.assertTrue(flame(trace, "--format", "svg").stdout.startswith("<svg"))
        self.assertTrue(flame(trace, "--format", "html").stdout.startswith("<!DOCTYPE html>"))
        out = os.path.join(tmpdir(), "g.folded")
        flame(trace, "-o", out)
        self.assertEqual(read(out), plain)
        out = os.path.join(tmpdir(), "g.txt")
        flame(trace, "--format", "svg", "-o", out)
        self.assertTrue(read(out).startswith("<svg"))

    def test_usage_errors(self):
        trace, _, _ = run("mlp")
        r = anatomist("flame", trace, "--metric", "gpu")
        self.assertEqual(r.returncode, 2)
        self.assertIn("gpu-time, peak-memory, leaked-memory, alloc-bytes or alloc-count", r.stderr)
        r = anatomist("flame", trace, "--format", "png")
        self.assertEqual(r.returncode, 2)
        self.assertIn("folded, svg or html", r.stderr)
        r = anatomist("flame")
        self.assertEqual(r.returncode, 2)
        r = anatomist("flame", trace, "-o", os.path.join(tmpdir(), "no", "such", "dir.svg"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("anatomist: ", r.stderr)
        r = anatomist("flame", "--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("Usage: anatomist flame TRACE", r.stdout)


if __name__ == "__main__":
    unittest.main()
