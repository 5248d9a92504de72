"""Scenario: `anatomist diff BASE HEAD` (docs/diff.md) on pairs of sample runs.

Every base and head figure of `diff --format json` must be the very number `anatomist
report --json` prints for that trace (read here from the report, never from the diff),
delta = head - base and ratio = delta / base; the kernels and allocation sites are
rebuilt here from the report's `gpu.kernels_by_time` and `memory.top_sites` with the
rule docs/diff.md states. The fp32 -> bf16 story of train_gpt is checked against the
samples' own ledgers (bf16 keeps an fp32 master and a 16-bit copy: weights 4 -> 6 B a
parameter, gradients 4 -> 2, activations halve) and the contraction time must drop.
train_mlp with SGD instead of AdamW loses half its optimizer states (8 -> 4 B a
parameter), one kernel vanishes and one appears; gradient checkpointing shrinks the
activations by what the ledger says.

The markdown must show the same numbers (its table cells are parsed back, to the
precision they are printed with), carry the verdict on one line and stay under 60 KB
even with --top 0 on two synthetic traces of 1200 long kernel names each. --fail-on
limits are derived from the report's numbers: ones that must be crossed (exit 1, the
output still written) and ones that must not (exit 0); bad specs exit 2 naming the part.

`--format folded` (the merged flame, "stack base head" a line): each column is, stack for
stack, what `anatomist flame` gives for that side, and sums to the report's figure (GPU
time, peak memory, allocations); a stack only in head has base 0 and the reverse; --metric
with any other format exits 2.
"""
import json
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from common import anatomist, clean_env, ledger, sample, tmpdir  # noqa: E402

GPT = ["--steps", "3"]
MLP = ["--steps", "3", "--hidden", "512"]
RUNS = {
    "gpt_fp32": ("train_gpt", GPT),
    "gpt_bf16": ("train_gpt", GPT + ["--precision", "bf16"]),
    "mlp_adamw": ("train_mlp", MLP),
    "mlp_sgd": ("train_mlp", MLP + ["--optimizer", "sgd"]),
    "mlp_plain": ("train_mlp", ["--steps", "3"]),
    "mlp_ckpt": ("train_mlp", ["--steps", "3", "--checkpoint"]),
}
CLASSES = ("contraction", "normalization", "elementwise", "communication", "memory", "other")
CATS = ("weights", "optimizer", "gradients", "activations", "temporary", "functionality",
        "unattributed")
MD_MAX = 60 * 1024
SITE_FRAMES = 4  # docs/diff.md: the innermost frames that name a site

_dir = tmpdir()
_cache = {}


def profile(name):
    """(trace path, ledger, report --json --top 0) of one run, made once."""
    if name not in _cache:
        prog, args = RUNS[name]
        trace = os.path.join(_dir, name + ".anat")
        env = clean_env(ANATOMIST_SIM_BLAS_COMPUTE="0")
        r = anatomist("run", "--sim", "-q", "-o", trace, "--", sample(prog), *args, env=env,
                      timeout=300)
        assert r.returncode == 0, r.stderr
        _cache[name] = (trace, ledger(r.stdout), report(trace))
    return _cache[name]


def report(trace):
    r = anatomist("report", trace, "--json", "--top", "0")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def diff(base, head, *args):
    return anatomist("diff", base, head, *args)


def diff_json(base, head, *args):
    r = diff(base, head, "--format", "json", *args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def expected_metrics(rep):
    """The headline figures of docs/diff.md, from a report document."""
    g, steps = rep["gpu"], rep["steps"]
    return {
        "step-time": steps["median_ns"] if steps["count"] else None,
        "peak-memory": rep["memory"]["peak_bytes"],
        "gpu-busy": rep["time"]["busy_ns"],
        "gpu-idle": rep["time"]["idle_ns"],
        "gpu-time": g["kernels"]["total_ns"] + g["memcpy"]["total_ns"] + g["memset"]["total_ns"],
        "memory-at-end": rep["memory"]["live_at_end_bytes"],
        "kernel-launches": rep["launches"],
        "mfu": rep["time"]["contraction"]["mfu"],
    }


def expected_classes(rep, per_step):
    """Time by class: the mean per step, rounded to the ns, or the whole run."""
    if not per_step:
        return dict(rep["time"]["by_class"])
    steps = rep["steps"]["list"]
    n = len(steps)
    return {c: (sum(s["by_class"][c] for s in steps) + n // 2) // n for c in CLASSES}


def expected_kernels(rep):
    """display name -> [GPU ns, executions, class]."""
    out = {}
    for k in rep["gpu"]["kernels_by_time"]:
        assert k["name"], k
        e = out.setdefault(k["name"], [0, 0, k["class"]])
        e[0] += k["total_ns"]
        e[1] += k["count"]
    return out


def site_key(site):
    if site["driver_only"]:
        return "[driver]"
    picked = []
    for f in site["stack"]:  # innermost first
        if len(picked) == SITE_FRAMES:
            break
        mod = os.path.basename(f["module"]) if f["module"] else None
        if not (mod and mod.startswith("libanatomist")):
            picked.append(f["function"] or (f"{mod}+0x{f['offset']:x}" if mod
                                            else f"0x{f['address']:x}"))
        if f["function"] == "main":
            break
    return " > ".join(reversed(picked)) if picked else "[no stack]"


def expected_sites(rep):
    """site -> [bytes live at the peak, allocations]."""
    out = {}
    for s in rep["memory"]["top_sites"]:
        e = out.setdefault(site_key(s), [0, 0])
        e[0] += s["bytes"]
        e[1] += s["count"]
    return out


class Figures(unittest.TestCase):
    """Every figure of the JSON against the two reports."""

    def check_row(self, row, base, head, what):
        self.assertEqual(row["base"], base, what)
        self.assertEqual(row["head"], head, what)
        if base is None or head is None:
            self.assertIsNone(row["delta"], what)
            self.assertIsNone(row["ratio"], what)
            return
        self.assertEqual(row["delta"], head - base, what)
        if base == 0:
            self.assertIsNone(row["ratio"], what)
        else:
            self.assertAlmostEqual(row["ratio"], (head - base) / base, delta=1e-5, msg=what)

    def check_pair(self, b, h):
        tb, _, rb = profile(b)
        th, _, rh = profile(h)
        d = self.check_traces(tb, rb, th, rh)
        self.assertIn(RUNS[b][0], d["base"]["command"])
        self.assertIn(RUNS[h][0], d["head"]["command"])
        return d

    def check_traces(self, tb, rb, th, rh):
        d = diff_json(tb, th, "--top", "0")
        self.assertEqual(d["schema"], "anatomist.diff/1")
        for side, t, rep in (("base", tb, rb), ("head", th, rh)):
            self.assertEqual(d[side]["path"], t)
            self.assertEqual(d[side]["steps"], rep["steps"]["count"])
            self.assertEqual(d[side]["duration_ns"], rep["trace"]["duration_ns"])
        per_step = rb["steps"]["count"] > 0 and rh["steps"]["count"] > 0
        self.assertEqual(d["per_step"], per_step)
        eb, eh = expected_metrics(rb), expected_metrics(rh)
        self.assertEqual([m["key"] for m in d["metrics"]], list(eb))
        for m in d["metrics"]:
            if m["unit"] == "ratio":  # a double printed to 6 digits by both
                for side, e in (("base", eb), ("head", eh)):
                    if e[m["key"]] is None:
                        self.assertIsNone(m[side], m)
                    else:
                        self.assertAlmostEqual(m[side], e[m["key"]],
                                               delta=1e-5 * abs(e[m["key"]]))
            else:
                self.check_row(m, eb[m["key"]], eh[m["key"]], m["key"])
        cb, ch = expected_classes(rb, per_step), expected_classes(rh, per_step)
        self.assertEqual([r["class"] for r in d["time_by_class"]], list(CLASSES))
        for r in d["time_by_class"]:
            self.check_row(r, cb[r["class"]], ch[r["class"]], r["class"])
        self.assertEqual([r["category"] for r in d["memory_at_peak"]], list(CATS))
        for r in d["memory_at_peak"]:
            self.check_row(r, rb["memory"]["at_peak"][r["category"]],
                           rh["memory"]["at_peak"][r["category"]], r["category"])
        self.check_kernels(d, expected_kernels(rb), expected_kernels(rh))
        self.check_sites(d, expected_sites(rb), expected_sites(rh))
        return d

    def check_kernels(self, d, kb, kh):
        names = set(kb) | set(kh)
        self.assertEqual(d["kernels_total"], len(names))
        self.assertEqual({k["name"] for k in d["kernels"]}, names)
        for k in d["kernels"]:
            b, h = kb.get(k["name"], [0, 0, None]), kh.get(k["name"], [0, 0, None])
            self.check_row(k, b[0], h[0], k["name"])
            self.assertEqual((k["base_count"], k["head_count"]), (b[1], h[1]), k["name"])
            self.assertEqual(k["class"], h[2] or b[2], k["name"])
            want = ("new" if k["name"] not in kb else "vanished" if k["name"] not in kh
                    else "same" if b[:2] == h[:2] else "changed")
            self.assertEqual(k["status"], want, k["name"])
        moves = [abs(k["delta"]) for k in d["kernels"]]
        self.assertEqual(moves, sorted(moves, reverse=True))
        self.assertEqual(set(d["new_kernels"]), set(kh) - set(kb))
        self.assertEqual(set(d["vanished_kernels"]), set(kb) - set(kh))

    def check_sites(self, d, sb, sh):
        self.assertEqual(d["alloc_sites_total"], len(set(sb) | set(sh)))
        self.assertEqual({s["site"] for s in d["alloc_sites"]}, set(sb) | set(sh))
        for s in d["alloc_sites"]:
            b, h = sb.get(s["site"], [0, 0]), sh.get(s["site"], [0, 0])
            self.check_row(s, b[0], h[0], s["site"])
            self.assertEqual((s["base_count"], s["head_count"]), (b[1], h[1]), s["site"])
        # every byte live at each peak is in some site
        self.assertEqual(sum(s["base"] for s in d["alloc_sites"]),
                         d["metrics"][1]["base"])
        self.assertEqual(sum(s["head"] for s in d["alloc_sites"]),
                         d["metrics"][1]["head"])

    def test_gpt_fp32_to_bf16(self):
        self.check_pair("gpt_fp32", "gpt_bf16")

    def test_mlp_adamw_to_sgd(self):
        self.check_pair("mlp_adamw", "mlp_sgd")

    def test_mean_per_step_rounds_to_the_ns(self):
        # steps of 3002, 3000 and 3000 ns of `other`: the mean is 3000.67 -> 3001 ns
        tb = steps_trace("sb", [[1.002, 2.0], [1.0, 2.0], [1.0, 2.0]])
        th = steps_trace("sh", [[1.0, 3.0], [1.0, 2.0], [1.001, 2.5]])
        rb, rh = report(tb), report(th)
        self.assertEqual(rb["steps"]["count"], 3)
        d = self.check_traces(tb, rb, th, rh)
        self.assertTrue(d["per_step"])
        self.assertEqual(row(d, "time_by_class", "other", "class")["base"], 3001)

    def test_top_limits_the_ranked_lists(self):
        tb, th = profile("gpt_fp32")[0], profile("gpt_bf16")[0]
        full, top3 = diff_json(tb, th, "--top", "0"), diff_json(tb, th, "--top", "3")
        self.assertEqual(top3["kernels"], full["kernels"][:3])
        self.assertEqual(top3["kernels_total"], full["kernels_total"])
        self.assertEqual(top3["new_kernels"], full["new_kernels"])

    def test_identical_traces(self):
        t = profile("gpt_fp32")[0]
        d = diff_json(t, t, "--top", "0")
        self.assertEqual(d["verdict"], "no change")
        for row in d["metrics"] + d["time_by_class"] + d["memory_at_peak"] + d["kernels"] + \
                d["alloc_sites"]:
            self.assertEqual(row["base"], row["head"], row)
            self.assertIn(row["delta"], (0, None), row)
        self.assertEqual(d["new_kernels"], [])
        self.assertEqual(d["vanished_kernels"], [])
        self.assertEqual({k["status"] for k in d["kernels"]}, {"same"})
        md = diff(t, t)
        self.assertEqual(md.returncode, 0, md.stderr)
        self.assertIn("**no change**", md.stdout)


def row(d, section, key, name="key"):
    return next(r for r in d[section] if r[name] == key)


class Story(unittest.TestCase):
    """What the samples' ledgers and the anatomy predict a change does."""

    def ledger_ratio(self, lb, lh, cat):
        b, h = lb["peak_by_purpose"][cat], lh["peak_by_purpose"][cat]
        return (h - b) / b

    def test_fp32_to_bf16(self):
        tb, lb, _ = profile("gpt_fp32")
        th, lh, _ = profile("gpt_bf16")
        d = diff_json(tb, th)
        # the ledger: fp32 master + 16-bit copy (4 -> 6 B/param), 16-bit gradients (4 -> 2),
        # the same AdamW states, 16-bit activations
        self.assertEqual((lb["bytes_per_param"]["weights"], lh["bytes_per_param"]["weights"]), (4, 6))
        for cat in ("weights", "gradients", "activations", "optimizer"):
            with self.subTest(category=cat):
                got = row(d, "memory_at_peak", cat, "category")
                want = self.ledger_ratio(lb, lh, cat)
                self.assertAlmostEqual(got["ratio"], want, delta=0.02,
                                       msg=f"{cat}: {got} ledger {want:+.3f}")
        self.assertGreater(row(d, "memory_at_peak", "weights", "category")["delta"], 0)
        self.assertLess(row(d, "memory_at_peak", "activations", "category")["delta"], 0)
        self.assertLess(row(d, "metrics", "peak-memory")["delta"], 0)
        contraction = row(d, "time_by_class", "contraction", "class")
        self.assertLess(contraction["delta"], 0, contraction)
        self.assertTrue(d["per_step"])
        self.assertIn("peak memory -", d["verdict"])
        self.assertIn("contraction time -", d["verdict"])
        # the fp32 GEMM kernels are gone, bf16 ones came
        self.assertTrue(any("bf16" in k for k in d["new_kernels"]), d["new_kernels"])
        self.assertTrue(any("f32f32" in k for k in d["vanished_kernels"]), d["vanished_kernels"])

    def test_adamw_to_sgd(self):
        tb, lb, _ = profile("mlp_adamw")
        th, lh, _ = profile("mlp_sgd")
        d = diff_json(tb, th)
        opt = row(d, "memory_at_peak", "optimizer", "category")
        self.assertAlmostEqual(opt["ratio"], self.ledger_ratio(lb, lh, "optimizer"), delta=0.02)
        self.assertAlmostEqual(opt["ratio"], -0.5, delta=0.02)  # m and v -> one momentum
        self.assertEqual(row(d, "memory_at_peak", "weights", "category")["delta"], 0)
        self.assertEqual([k for k in d["vanished_kernels"] if "adamw" in k], ["adamw_update"])
        self.assertEqual([k for k in d["new_kernels"] if "sgd" in k], ["sgd_momentum_update"])
        self.assertIn("optimizer -50.0%", d["verdict"])
        self.assertIn("1 new kernel, 1 vanished", d["verdict"])

    def test_checkpointing(self):
        tb, lb, _ = profile("mlp_plain")
        th, lh, _ = profile("mlp_ckpt")
        d = diff_json(tb, th)
        act = row(d, "memory_at_peak", "activations", "category")
        want = lh["peak_by_purpose"]["activations"] - lb["peak_by_purpose"]["activations"]
        self.assertLess(want, 0)
        self.assertLessEqual(abs(act["delta"] - want), 0.05 * abs(want), (act, want))


UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
         "ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}


def parse_human(cell):
    """'-4.56 MiB' / '+12.700 us' / '294' / '0.84%' -> (value, resolution); None for n/a."""
    cell = cell.strip()
    if cell == "n/a":
        return None
    m = re.fullmatch(r"([+-]?)(\d+(?:\.(\d+))?)\s*(%|[A-Za-z]+)?", cell)
    assert m, cell
    sign = -1 if m.group(1) == "-" else 1
    digits = len(m.group(3) or "")
    unit = m.group(4) or ""
    if unit == "%":
        return sign * float(m.group(2)) / 100, 0.5 * 10 ** -digits / 100
    scale = UNITS.get(unit, 1)
    return sign * float(m.group(2)) * scale, 0.5 * 10 ** -digits * scale


def md_table(md, title):
    """The rows (lists of cells) of the table under '#### title'."""
    lines = md.splitlines()
    i = next(n for n, l in enumerate(lines) if l.startswith("#### ") and title in l)
    rows = []
    for l in lines[i + 1:]:
        if l.startswith("#### "):
            break
        if l.startswith("| ") and not l.startswith("|---"):
            rows.append([c.strip() for c in re.split(r"(?<!\\)\|", l)[1:-1]])
    return rows[1:]  # without the header


class Markdown(unittest.TestCase):
    def setUp(self):
        self.tb, self.th = profile("gpt_fp32")[0], profile("gpt_bf16")[0]
        self.d = diff_json(self.tb, self.th)
        r = diff(self.tb, self.th)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.md = r.stdout

    def check_cells(self, cells, rowj):
        for cell, key in zip(cells, ("base", "head", "delta")):
            got = parse_human(cell)
            want = rowj[key]
            if want is None:
                self.assertIsNone(got, (cells, rowj))
                continue
            if rowj["unit"] == "ratio" and key == "delta":
                continue  # percentage points
            value, res = got
            self.assertLessEqual(abs(value - want), max(res, 0.005 * abs(want)) + 1e-9,
                                 (cell, key, rowj))
        if rowj["ratio"] is not None and cells[3] not in ("new",):
            value, res = parse_human(cells[3])
            self.assertLessEqual(abs(value - rowj["ratio"]), res + 1e-9, (cells, rowj))

    def test_tables_show_the_json_figures(self):
        for title, section, name in (("Headline", "metrics", "label"),
                                     ("GPU time by class", "time_by_class", "class"),
                                     ("Memory by category", "memory_at_peak", "category")):
            rows = md_table(self.md, title)
            self.assertEqual([r[0] for r in rows], [r[name] for r in self.d[section]])
            for cells, rowj in zip(rows, self.d[section]):
                self.check_cells(cells[1:5], rowj)
        rows = md_table(self.md, "Kernels")
        self.assertEqual(len(rows), 10)
        for cells, k in zip(rows, self.d["kernels"]):
            shown = cells[0].strip("`").replace("\\|", "|")
            self.assertTrue(k["name"].startswith(shown.rstrip(".")), (shown, k["name"]))
            self.assertEqual(cells[1], k["class"])
            self.check_cells(cells[2:6], k)
            self.assertEqual(cells[6], f"{k['base_count']} -> {k['head_count']}")
        for cells, s in zip(md_table(self.md, "Allocation sites"), self.d["alloc_sites"]):
            self.check_cells(cells[1:5], s)

    def test_verdict_is_one_line(self):
        self.assertNotIn("\n", self.d["verdict"])
        self.assertIn(f"**{self.d['verdict']}**", self.md.splitlines())
        self.assertLess(len(self.md.encode()), MD_MAX)

    def test_under_60_kb_with_many_kernels(self):
        base, head = synthetic(1200, "base"), synthetic(1200, "head")
        r = diff(base, head, "--top", "0", "--fail-on", ",".join(["gpu-time>+1%"] * 20))
        self.assertEqual(r.returncode, 1, r.stderr)
        size = len(r.stdout.encode())
        self.assertLess(size, MD_MAX)
        self.assertGreater(size, 40 * 1024)  # the budget is used, not wasted
        m = re.search(r"_\.\.\. and (\d+) more", r.stdout)
        self.assertIsNotNone(m, r.stdout[-500:])
        d = diff_json(base, head, "--top", "0")
        kernel_rows = len(md_table(r.stdout, "Kernels"))
        self.assertEqual(kernel_rows + int(m.group(1)), d["kernels_total"])
        self.assertFalse(d["per_step"])
        self.assertIn("whole run", r.stdout)


def synthetic(n, tag):
    """A Kineto trace of n kernels with long names (docs/kineto-import.md): half of them
    shared by base and head (slower in head), the rest the side's own."""
    path = os.path.join(_dir, f"{tag}-{n}.json")
    ev, ts = [], 1000.0
    for i in range(n):
        own = i % 2
        name = (f"void {'k_' + tag if own else 'shared'}_{i:05d}|pipe<" + "float, " * 30 +
                "int>(float*, float const*)")
        ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts,
                   "dur": 3 + (tag == "head") + i % 5,
                   "args": {"device": 0, "stream": 7, "correlation": i + 1}})
        ts += 20
    doc = {"schemaVersion": 1, "traceEvents": ev,
           "deviceProperties": [{"id": 0, "name": "Test GPU", "totalGlobalMem": 1 << 30,
                                 "computeMajor": 9, "computeMinor": 0, "numSms": 10}]}
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def steps_trace(tag, steps):
    """A Kineto trace of ProfilerStep ranges, each launching kernels kern_0, kern_1... that
    run for the given µs."""
    path = os.path.join(_dir, f"{tag}.json")
    ev, ts, corr = [], 1000.0, 1
    for s, durs in enumerate(steps):
        start = ts
        for i, dur in enumerate(durs):
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7,
                       "tid": 7, "ts": ts, "dur": 2, "args": {"correlation": corr}})
            ev.append({"ph": "X", "cat": "kernel", "name": f"kern_{i}", "pid": 0, "tid": 7,
                       "ts": ts + 3, "dur": dur,
                       "args": {"device": 0, "stream": 7, "correlation": corr}})
            corr += 1
            ts += dur + 10
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{s + 1}",
                   "pid": 7, "tid": 7, "ts": start - 1, "dur": ts - start + 1, "args": {}})
        ts += 50
    with open(path, "w") as f:
        json.dump({"schemaVersion": 1, "traceEvents": ev}, f)
    return path


class FailOn(unittest.TestCase):
    def setUp(self):
        self.tb, _, self.rb = profile("gpt_fp32")
        self.th, _, self.rh = profile("gpt_bf16")

    def run_spec(self, spec, fmt="json"):
        r = diff(self.tb, self.th, "--format", fmt, "--fail-on", spec)
        self.assertIn(r.returncode, (0, 1), r.stderr)
        return r

    def test_thresholds_from_the_reports(self):
        pb, ph = self.rb["memory"]["peak_bytes"], self.rh["memory"]["peak_bytes"]
        pct = 100.0 * (ph - pb) / pb  # negative: bf16 needs less
        wb = self.rb["memory"]["at_peak"]["weights"]
        wh = self.rh["memory"]["at_peak"]["weights"]
        cases = [  # (spec, crossed)
            (f"peak-memory<{pct + 0.5:+.2f}%", True),
            (f"peak-memory<{pct - 0.5:+.2f}%", False),
            (f"peak-memory>{ph - 1}", True),            # head's own value
            (f"peak-memory>{ph}", False),
            (f"peak-memory>={ph}", True),
            (f"memory:weights>+{wh - wb - 1}B", True),  # a change in bytes
            (f"memory:weights>+{wh - wb}B", False),
            ("memory:weights>=+0B", True),
            ("memory:optimizer>+1KiB", False),
            ("time:contraction<-1ns", True),
            ("kernel-launches>+1000000", False),
        ]
        for spec, crossed in cases:
            with self.subTest(spec=spec):
                r = self.run_spec(spec)
                self.assertEqual(r.returncode, 1 if crossed else 0, r.stderr)
                d = json.loads(r.stdout)  # written even when crossed
                self.assertEqual(len(d["thresholds"]), 1)
                t = d["thresholds"][0]
                self.assertEqual((t["spec"], t["crossed"]), (spec, crossed))
                self.assertEqual("threshold crossed: " + spec in r.stderr, crossed, r.stderr)
        both = self.run_spec(f"peak-memory<{pct + 0.5:+.2f}%, peak-memory<{pct - 0.5:+.2f}%")
        self.assertEqual(both.returncode, 1)
        self.assertEqual([t["crossed"] for t in json.loads(both.stdout)["thresholds"]],
                         [True, False])
        t = json.loads(both.stdout)["thresholds"][0]
        self.assertTrue(t["relative"])
        self.assertAlmostEqual(t["value"], (ph - pb) / pb, delta=1e-6)

    def test_markdown_lists_thresholds(self):
        r = self.run_spec("peak-memory<+0%,step-time>+1000%", fmt="markdown")
        self.assertEqual(r.returncode, 1)
        rows = md_table(r.stdout, "Thresholds")
        self.assertEqual([c[0] for c in rows], ["`peak-memory<+0%`", "`step-time>+1000%`"])
        self.assertEqual([c[2] for c in rows], ["**crossed**", "ok"])
        self.assertIn("1 of 2 thresholds crossed", r.stdout)

    def test_metric_unknown_on_one_side(self):
        nosteps = synthetic(10, "nosteps")
        r = diff(nosteps, self.th, "--format", "json", "--fail-on", "step-time>+0%")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("not evaluated: step-time>+0%", r.stderr)
        self.assertIn("no steps", r.stderr)
        t = json.loads(r.stdout)["thresholds"][0]
        self.assertEqual((t["value"], t["crossed"]), (None, False))

    def test_bad_specs(self):
        for spec, part in (("peak-memory>>5%", "peak-memory>>5%"),
                           ("peak-mem>+5%", "unknown metric 'peak-mem'"),
                           ("peak-memory>+5ms", "'ms' is not a unit of peak-memory"),
                           ("step-time>+5MiB", "'MiB' is not a unit of step-time"),
                           ("peak-memory+5%", "no comparison"),
                           ("peak-memory>+5%,", "empty threshold"),
                           ("", "empty threshold"),
                           ("time:gemm>+5%", "unknown metric 'time:gemm'"),
                           ("memory:weights>five", "must be a number")):
            with self.subTest(spec=spec):
                r = diff(self.tb, self.th, "--fail-on", spec)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(part, r.stderr)
                self.assertEqual(r.stdout, "")


def folded_rows(text, columns):
    """{stack: (value, ...)} of folded lines "frame;...;frame v1 [v2]"; each stack once."""
    out = {}
    for line in text.splitlines():
        parts = line.rsplit(" ", columns)
        stack, values = parts[0], tuple(int(v) for v in parts[1:])
        assert stack not in out, "stack twice: " + stack
        out[stack] = values
    return out


class Folded(unittest.TestCase):
    """`--format folded`: the merged flame as "stack base head" lines (difffolded.pl). Each
    column is that side's own `anatomist flame` output, stack for stack, and adds up to
    the side's report figure."""

    def flame(self, trace, metric):
        r = anatomist("flame", trace, "--metric", metric)
        self.assertEqual(r.returncode, 0, r.stderr)
        return {k: v[0] for k, v in folded_rows(r.stdout, 1).items()}

    def check(self, b, h, metric, figure):
        (tb, _, rb), (th, _, rh) = profile(b), profile(h)
        r = diff(tb, th, "--format", "folded", "--metric", metric)
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = folded_rows(r.stdout, 2)
        fb, fh = self.flame(tb, metric), self.flame(th, metric)
        self.assertEqual(sum(v[0] for v in rows.values()), sum(fb.values()))
        self.assertEqual(sum(v[1] for v in rows.values()), sum(fh.values()))
        self.assertEqual(sum(v[0] for v in rows.values()), figure(rb))
        self.assertEqual(sum(v[1] for v in rows.values()), figure(rh))
        self.assertEqual(set(rows), set(fb) | set(fh))  # every stack of either, no other
        for stack, (vb, vh) in rows.items():
            self.assertEqual((vb, vh), (fb.get(stack, 0), fh.get(stack, 0)), stack)
        return rows, fb, fh

    def test_gpu_time_fp32_to_bf16(self):
        rows, fb, fh = self.check("gpt_fp32", "gpt_bf16", "gpu-time",
                                  lambda rep: expected_metrics(rep)["gpu-time"])
        only_head = [s for s in rows if s not in fb]
        only_base = [s for s in rows if s not in fh]
        # the bf16 GEMMs are new, the fp32 ones vanished
        self.assertTrue(any("bf16" in s for s in only_head), only_head)
        self.assertTrue(any("f32f32" in s for s in only_base), only_base)
        for s in only_head:
            self.assertEqual(rows[s][0], 0, s)
        for s in only_base:
            self.assertEqual(rows[s][1], 0, s)
        plain = diff(profile("gpt_fp32")[0], profile("gpt_bf16")[0], "--format", "folded")
        self.assertEqual(plain.returncode, 0, plain.stderr)
        self.assertEqual(folded_rows(plain.stdout, 2), rows)  # gpu-time is the default

    def test_peak_memory_fp32_to_bf16(self):
        self.check("gpt_fp32", "gpt_bf16", "peak-memory", lambda rep: rep["memory"]["peak_bytes"])

    def test_alloc_count_adamw_to_sgd(self):
        rows, _, _ = self.check("mlp_adamw", "mlp_sgd", "alloc-count",
                                lambda rep: sum(v["ok"] for v in rep["allocations"]["by_api"]
                                                .values()))
        # SGD keeps one momentum buffer per parameter instead of AdamW's two states
        opt = [v for s, v in rows.items() if s.endswith("[optimizer]")]
        self.assertGreater(sum(v[0] for v in opt), sum(v[1] for v in opt))

    def test_usage(self):
        tb, th = profile("mlp_adamw")[0], profile("mlp_sgd")[0]
        for args, says in ((["--metric", "peak-memory"], "--format folded"),
                           (["--format", "json", "--metric", "gpu-time"], "--format folded"),
                           (["--format", "folded", "--metric", "gpu"], "unknown metric 'gpu'"),
                           (["--format", "folded", "--metric"], "--metric")):
            with self.subTest(args=args):
                r = diff(tb, th, *args)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(says, r.stderr)
                self.assertEqual(r.stdout, "")
        out = os.path.join(_dir, "d.folded")
        r = diff(tb, th, "--format", "folded", "-o", out, "--fail-on", "kernel-launches>=0")
        self.assertEqual(r.returncode, 1, r.stderr)  # crossed, and written all the same
        with open(out) as f:
            self.assertEqual(f.read(), diff(tb, th, "--format", "folded").stdout)


class Cli(unittest.TestCase):
    def test_usage(self):
        t = profile("mlp_adamw")[0]
        self.assertEqual(anatomist("diff", "--help").returncode, 0)
        for args in ([t], [t, t, t], [t, t, "--format", "pdf"], [t, t, "--top", "x"],
                     [t, "/nonexistent.anat"], [t, t, "-o", t]):
            with self.subTest(args=args):
                r = anatomist("diff", *args)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertTrue(r.stderr.startswith("anatomist"), r.stderr)

    def test_output_file_and_html(self):
        tb, th = profile("mlp_adamw")[0], profile("mlp_sgd")[0]
        out = os.path.join(_dir, "d.json")
        r = anatomist("diff", tb, th, "--format", "json", "-o", out)
        self.assertEqual((r.returncode, r.stdout), (0, ""), r.stderr)
        with open(out) as f:
            want = json.load(f)
        page = os.path.join(_dir, "d.html")
        r = anatomist("diff", tb, th, "--format", "html", "-o", page)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(page) as f:
            html = f.read()
        m = re.search(r'<script type="application/json" id="anatomist-data">(.*?)</script>',
                      html, re.S)
        self.assertIsNotNone(m)
        data = json.loads(m.group(1).replace("<\\/", "</"))
        self.assertEqual(data["kind"], "diff")
        self.assertEqual(data["diff"], want)


if __name__ == "__main__":
    unittest.main()
