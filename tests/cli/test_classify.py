"""`anatomist classify`: the kernel classifier against hand-labeled names, and its CLI.

* tests/data/kernel-names/fixtures.tsv (every distinct kernel of the five real PyTorch
  traces, labeled by hand) must classify exactly as labeled;
* tests/data/kernel-names/public.tsv (names from public traces, profiler outputs and
  issue reports) at 97 % or better;
* tests/data/kernel-names/public-b.tsv (the held-out set of round 1: 152/180 = 84.4 %
  out-of-sample when first measured, 2026-11-22; used from round 2 on to tune the rules,
  177/180 = 98.3 % in-sample after round 2) at 98 % or better;
* tests/data/kernel-names/public-c.tsv (the held-out set of round 2: 188/201 = 93.5 %
  out-of-sample when first measured, 2026-11-22; used from round 3 on to tune the rules,
  201/201 = 100 % in-sample after round 3) at 100 %;
* tests/data/kernel-names/public-d.tsv (the held-out set of round 3: 171/203 = 84.2 %
  out-of-sample when first measured, 2026-11-22; used from round 4 on to tune the rules,
  198/203 = 97.5 % in-sample after round 4) at 97 % or better;
* tests/data/kernel-names/heldout.tsv, only when present (the held-out set of the next
  round, never used to tune the rules): at least HELDOUT_FLOOR of HELDOUT_SIZE names;
* no two labeled sets share a name;
* when the trace fixtures are on this machine ($ANATOMIST_FIXTURES, else
  $ANA_SOURCE/../shared/fixtures), fixtures.tsv names every distinct kernel they hold;
* the CLI: --explain, --context, mangled names, empty lines, bad options.
"""
import collections
import glob
import gzip
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from anacli import ANATOMIST, CliTest, anatomist  # noqa: E402

SOURCE = os.environ.get("ANA_SOURCE") or os.path.join(os.path.dirname(__file__), "../..")
DATA = os.path.join(SOURCE, "tests", "data", "kernel-names")
sys.path.insert(0, os.path.join(SOURCE, "bench"))
from classify_accuracy import classify, read_labeled, score  # noqa: E402

CLASSES = ("contraction", "normalization", "elementwise", "communication", "memory", "other")
LABELED = ("fixtures.tsv", "public.tsv", "public-b.tsv", "public-c.tsv", "public-d.tsv")

# The held-out set of the next round (heldout.tsv), checked only where the file exists:
# its floor is the out-of-sample accuracy measured once, rounded down to a whole percent,
# and its size the number of names measured. Set when measured.
HELDOUT_FLOOR = 0.85  # round 5: 196/228 = 86.0 % when measured once (2026-11-29), rounded down
HELDOUT_SIZE = 228


def fixtures_dir():
    d = os.environ.get("ANATOMIST_FIXTURES") or os.path.join(SOURCE, "..", "shared", "fixtures")
    return d if glob.glob(os.path.join(d, "*.json.gz")) else None


def trace_kernel_names(path):
    """Distinct names of the kernel events (cat kernel, or legacy Kernel) of one trace."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    return {e["name"] for e in events if e.get("cat") in ("kernel", "Kernel")}


def classify_lines(text, *args):
    p = anatomist("classify", *args, input=text)
    if p.returncode != 0:
        raise AssertionError(f"anatomist classify {args}: {p.stderr}")
    return [line.split("\t") for line in p.stdout.splitlines()]


class Labeled(unittest.TestCase):
    def check_file(self, name, minimum):
        rows = read_labeled(os.path.join(DATA, name))
        self.assertEqual(len({r[2] for r in rows}), len(rows), f"{name}: duplicate names")
        for label, _, _ in rows:
            self.assertIn(label, CLASSES)
        ok, total, per, wrong = score(rows, classify(ANATOMIST, [r[2] for r in rows]))
        report = "\n".join(f"{label} -> {cls} [{rule}] {n[:140]}" for label, cls, rule, n in wrong)
        self.assertGreaterEqual(ok / total, minimum, f"{name}: {ok}/{total}\n{report}")
        return rows

    def test_fixture_names_all_as_labeled(self):
        rows = self.check_file("fixtures.tsv", 1.0)
        # Every class the traces can show by name is represented (no memory: copies are
        # records, not kernels).
        self.assertEqual({r[0] for r in rows}, set(CLASSES) - {"memory"})

    def test_public_names_at_least_97_percent(self):
        rows = self.check_file("public.tsv", 0.97)
        self.assertGreaterEqual(len(rows), 319)
        fixture_names = {r[2] for r in read_labeled(os.path.join(DATA, "fixtures.tsv"))}
        self.assertFalse(fixture_names & {r[2] for r in rows}, "public.tsv repeats fixture names")

    def test_public_b_names_at_least_98_percent(self):
        # public-b.tsv was round 1's held-out set (84.4 % out-of-sample when first
        # measured); round 2 tuned the rules on it, so its figure is in-sample now. The
        # floor is the measured 177/180 rounded down to a whole percent: a rule change
        # that loses its names fails here.
        rows = self.check_file("public-b.tsv", 0.98)
        self.assertGreaterEqual(len(rows), 180)
        self.assert_disjoint("public-b.tsv", rows, ("fixtures.tsv", "public.tsv"))

    def test_public_c_names_all_as_labeled(self):
        # public-c.tsv was round 2's held-out set (188/201 = 93.5 % out-of-sample when
        # first measured); round 3 tuned the rules on it, so its figure is in-sample now.
        # The floor is the measured 201/201 rounded down to a whole percent.
        rows = self.check_file("public-c.tsv", 1.0)
        self.assertGreaterEqual(len(rows), 201)
        self.assert_disjoint("public-c.tsv", rows, ("fixtures.tsv", "public.tsv", "public-b.tsv"))

    def test_public_d_names_at_least_97_percent(self):
        # public-d.tsv was round 3's held-out set (171/203 = 84.2 % out-of-sample when
        # first measured); round 4 tuned the rules on it, so its figure is in-sample now.
        # The floor is the measured 198/203 rounded down to a whole percent.
        rows = self.check_file("public-d.tsv", 0.97)
        self.assertGreaterEqual(len(rows), 203)
        self.assert_disjoint("public-d.tsv", rows,
                             ("fixtures.tsv", "public.tsv", "public-b.tsv", "public-c.tsv"))

    def test_heldout_names_at_least_the_measured_floor(self):
        path = os.path.join(DATA, "heldout.tsv")
        if not os.path.exists(path):
            self.skipTest("no heldout.tsv (the next round's held-out set) in this checkout")
        rows = self.check_file("heldout.tsv", HELDOUT_FLOOR)
        self.assertGreaterEqual(len(rows), HELDOUT_SIZE)
        self.assert_disjoint("heldout.tsv", rows, LABELED)

    def assert_disjoint(self, name, rows, others):
        names = {r[2] for r in rows}
        for other in others:
            seen = {r[2] for r in read_labeled(os.path.join(DATA, other))}
            self.assertFalse(seen & names, f"{name} repeats names of {other}")

    def test_fixtures_cover_every_trace_kernel(self):
        d = fixtures_dir()
        if not d:
            print("note: trace fixtures not found (set ANATOMIST_FIXTURES); coverage not checked")
            self.skipTest("no trace fixtures on this machine")
        names = set()
        for path in sorted(glob.glob(os.path.join(d, "*.json.gz"))):
            found = trace_kernel_names(path)
            self.assertTrue(found, path)
            names |= found
        labeled = {r[2] for r in read_labeled(os.path.join(DATA, "fixtures.tsv"))}
        self.assertEqual(sorted(names - labeled), [], "trace kernels missing from fixtures.tsv")
        self.assertEqual(sorted(labeled - names), [], "fixtures.tsv names no trace has")


class Cli(CliTest):
    def test_tab_separated_in_input_order(self):
        out = classify_lines("ampere_sgemm_128x64_tn\nncclDevKernel_AllReduce_Sum_f32_RING_LL\n"
                             "void at::native::vectorized_elementwise_kernel<4, at::native::"
                             "FillFunctor<float>, std::array<char*, 1ul> >(int, at::native::"
                             "FillFunctor<float>, std::array<char*, 1ul>)\n")
        self.assertEqual([r[1] for r in out], ["contraction", "communication", "elementwise"])
        self.assertTrue(all(len(r) == 2 for r in out))
        self.assertEqual(out[0][0], "ampere_sgemm_128x64_tn")

    def test_explain_adds_the_rule(self):
        out = classify_lines("volta_sgemm_128x64_nn\nfrobnicate_kernel\n", "--explain")
        self.assertEqual([len(r) for r in out], [3, 3])
        self.assertTrue(out[0][2].startswith("name: "), out[0])
        self.assertEqual(out[1][1], "other")
        self.assertTrue(out[1][2].startswith("default"), out[1])

    def test_context_overrides_the_name(self):
        name = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, " \
               "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)"
        self.assertEqual(classify_lines(name + "\n")[0][1], "elementwise")
        out = classify_lines(name + "\n", "--context", "gemm", "--explain")
        self.assertEqual(out[0][1:], ["contraction", "context: GEMM call"])
        expected = {"conv": "contraction", "attention": "contraction", "comm": "communication",
                    "memory": "memory", "library": "elementwise", "none": "elementwise"}
        for ctx, cls in expected.items():
            self.assertEqual(classify_lines(name + "\n", "--context", ctx)[0][1], cls, ctx)

    def test_mangled_names_classify_like_demangled_and_print_as_given(self):
        # The mangled names of samples/train_gpt.cu's kernels (nm on the nvcc object),
        # each next to its demangled form (c++filt) and the class its name means.
        pairs = [
            ("_Z17layernorm_forwardIfEvPT_PfS2_PKS0_S4_S4_ii",
             "void layernorm_forward<float>(float*, float*, float*, float const*, float const*, "
             "float const*, int, int)", "normalization"),
            ("_Z23softmax_causal_backwardIfEvPT_PKS0_S3_ii",
             "void softmax_causal_backward<float>(float*, float const*, float const*, int, int)",
             "normalization"),
            ("_Z20encoder_backward_wteIfEvPT_PKS0_PKiS5_ii",
             "void encoder_backward_wte<float>(float*, float const*, int const*, int const*, int, "
             "int)", "other"),
            ("_Z12gelu_forwardIfEvPT_PKS0_m",
             "void gelu_forward<float>(float*, float const*, unsigned long)", "elementwise"),
            ("_Z5adamwIfEvPfPKT_S0_S0_mfffffff",
             "void adamw<float>(float*, float const*, float*, float*, unsigned long, float, float, "
             "float, float, float, float, float)", "elementwise"),
            ("_Z15encoder_forwardI13__nv_bfloat16EvPT_PKiPKS1_S6_iii",
             "void encoder_forward<__nv_bfloat16>(__nv_bfloat16*, int const*, __nv_bfloat16 "
             "const*, __nv_bfloat16 const*, int, int, int)", "elementwise"),
            ("_Z17layernorm_forwardPfS_S_PKfS1_S1_ii",
             "layernorm_forward(float*, float*, float*, float const*, float const*, float const*, "
             "int, int)", "normalization"),
        ]
        text = "".join(m + "\n" + d + "\n" for m, d, _ in pairs)
        out = classify_lines(text, "--explain")
        self.assertEqual(len(out), 2 * len(pairs))
        for i, (mangled, demangled, cls) in enumerate(pairs):
            self.assertEqual(out[2 * i][0], mangled)
            self.assertEqual(out[2 * i + 1][0], demangled)
            self.assertEqual(out[2 * i][1:], out[2 * i + 1][1:], mangled)
            self.assertEqual(out[2 * i][1], cls, mangled)

    def test_empty_lines_and_crlf(self):
        out = classify_lines("\n\nvolta_sgemm_64x64_nn\r\n\r\n\nrelu_fwd\n")
        self.assertEqual(out, [["volta_sgemm_64x64_nn", "contraction"], ["relu_fwd", "elementwise"]])
        self.assertEqual(classify_lines(""), [])

    def test_long_names_stream(self):
        long_name = "void at::native::reduce_kernel<512, 1, " + "x" * 200000 + ">(int)"
        names = [long_name] + [f"volta_sgemm_{i}x64_nn" for i in range(2000)]
        out = classify_lines("\n".join(names) + "\n")
        self.assertEqual(len(out), len(names))
        self.assertEqual(out[0], [long_name, "normalization"])
        self.assertEqual(collections.Counter(r[1] for r in out[1:]), {"contraction": 2000})

    def test_help(self):
        p = self.ok("classify", "--help")
        for word in ("--explain", "--context", "Example", "Exit status"):
            self.assertIn(word, p.stdout)

    def test_bad_options_exit_2(self):
        p = self.fails(2, "classify", "--frobnicate")
        self.assertIn("--frobnicate", p.stderr)
        p = self.fails(2, "classify", "--context", "gpu")
        self.assertIn("gpu", p.stderr)
        self.fails(2, "classify", "--context")
        self.fails(2, "classify", "names.txt")


if __name__ == "__main__":
    if not os.access(ANATOMIST, os.X_OK):
        raise SystemExit(f"{ANATOMIST} is not built")
    unittest.main(verbosity=2)
