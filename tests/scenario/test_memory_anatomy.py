"""Scenario: the memory anatomy (docs/memory-anatomy.md) against the samples' own ledgers.

Each sample knows what it allocated and for what (samples/train_mlp.cu, train_gpt.cu,
docs/samples.md): its ledger's `peak_by_purpose` gives the bytes of each category at the
first moment its own live device bytes reached their maximum. The analyzer, from the trace
alone, must find every category at the peak within 5% of the ledger (a category the
ledger says is empty must be empty), `unattributed` at most 5% of the peak, the peak
itself, and the parameter count and bytes per parameter the ledger states.

Memory the program did not allocate itself is added to the ledger from the simulated
device's documentation, not from the analyzer: cublasCreate_v2 allocates the handle's
default workspace, 32 MiB (docs/sim.md, "Handles and the workspace"); it is
`functionality`.

The runs: train_mlp (per-tensor allocations, kernel-name phases, no NVTX) with fp32
AdamW, SGD with momentum, mixed precision, inference only, and gradient checkpointing on
and off; train_gpt (arenas, cuBLAS/cuBLASLt) with NVTX regions and ranges, and without
NVTX (pointer evidence alone) in fp32 and bf16.
"""
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from common import BUILD, anatomist, clean_env, dump, ledger, of, report_json, sample, tmpdir  # noqa: E402

CATS = ("weights", "optimizer", "gradients", "activations", "temporary", "functionality")
CUBLAS_DEFAULT_WORKSPACE = 32 << 20  # docs/sim.md

MLP_SMALL = ["--steps", "3", "--hidden", "512"]
RUNS = {
    "mlp_adamw": ("train_mlp", MLP_SMALL, [], 0),
    "mlp_sgd": ("train_mlp", MLP_SMALL + ["--optimizer", "sgd"], [], 0),
    "mlp_bf16": ("train_mlp", MLP_SMALL + ["--precision", "bf16"], [], 0),
    "mlp_inference": ("train_mlp", MLP_SMALL + ["--inference"], [], 0),
    "mlp_checkpoint": ("train_mlp", ["--steps", "3", "--checkpoint"], [], 0),
    "mlp_no_checkpoint": ("train_mlp", ["--steps", "3"], [], 0),
    "mlp_bf16_batch4": ("train_mlp", MLP_SMALL + ["--precision", "bf16", "--batch", "4"], [], 0),
    "gpt_nvtx": ("train_gpt", [], [], CUBLAS_DEFAULT_WORKSPACE),
    "gpt_fp32": ("train_gpt", [], ["--no-nvtx"], CUBLAS_DEFAULT_WORKSPACE),
    "gpt_bf16": ("train_gpt", ["--precision", "bf16"], ["--no-nvtx"], CUBLAS_DEFAULT_WORKSPACE),
}

_cache = {}


def profile(name):
    """(ledger, report JSON) of one run, made once per test process."""
    if name not in _cache:
        prog, args, opts, _ = RUNS[name]
        trace = os.path.join(tmpdir(), name + ".anat")
        r = anatomist("run", "--sim", "-q", "-o", trace, *opts, "--", sample(prog), *args,
                      timeout=300)
        assert r.returncode == 0, r.stderr
        _cache[name] = (ledger(r.stdout), report_json(trace))
    return _cache[name]


class Categories(unittest.TestCase):
    def check(self, name):
        led, rep = profile(name)
        mem = rep["memory"]
        want = {c: led["peak_by_purpose"][c] for c in CATS}
        want["functionality"] += RUNS[name][3]
        self.assertEqual(mem["peak_bytes"], led["peak_bytes"] + RUNS[name][3], name)
        got = mem["at_peak"]
        self.assertEqual(sum(got.values()), mem["peak_bytes"])
        table = "  ".join(f"{c} {got[c]}/{want[c]}" for c in CATS)
        for c in CATS:
            with self.subTest(run=name, category=c):
                if want[c] == 0:
                    self.assertEqual(got[c], 0, table)
                else:
                    self.assertLessEqual(abs(got[c] - want[c]), 0.05 * want[c], table)
        self.assertLessEqual(got["unattributed"], 0.05 * mem["peak_bytes"], table)
        print(f"{name:18s} peak {mem['peak_bytes']:>10d}  analyzer/ledger: {table}  "
              f"unattributed {got['unattributed']}", file=sys.stderr)
        return led, mem

    def check_per_param(self, name):
        led, mem = self.check(name)
        pp = mem["per_param"]
        self.assertIsNotNone(pp, name)
        self.assertLessEqual(abs(pp["params"] - led["params"]), 0.01 * led["params"], name)
        for k in ("weights", "optimizer", "gradients"):
            with self.subTest(run=name, per_param=k):
                self.assertAlmostEqual(pp[k], led["bytes_per_param"][k], delta=0.1)
        return led, mem

    def test_mlp_fp32_adamw(self):
        _, mem = self.check_per_param("mlp_adamw")
        self.assertIn("AdamW", mem["per_param"]["optimizer_kind"])
        self.assertEqual(mem["evidence"], "pointers")

    def test_mlp_sgd_momentum(self):
        _, mem = self.check_per_param("mlp_sgd")
        self.assertIn("SGD with momentum", mem["per_param"]["optimizer_kind"])

    def test_mlp_mixed_precision(self):
        _, mem = self.check_per_param("mlp_bf16")
        self.assertIn("mixed precision", mem["per_param"]["weights_kind"])

    def test_mixed_precision_at_a_small_batch_costs_memory(self):
        # the 16-bit weight copy costs 2 B/param; 16-bit activations save what they hold
        # (their fp32 form would be twice as large): at batch 4 the copy costs more
        led, mem = self.check("mlp_bf16_batch4")
        rep = profile("mlp_bf16_batch4")[1]
        cost = 2 * led["params"] - led["peak_by_purpose"]["activations"]
        self.assertGreater(cost, 0)
        items = [a for a in rep["advice"] if a["topic"] == "mixed_precision"]
        self.assertEqual(len(items), 1, rep["advice"])
        self.assertEqual(items[0]["technique"], "fp32_training")
        self.assertLessEqual(abs(items[0]["bytes_saved"] - cost), 0.01 * cost)
        self.assertIn("costs memory", items[0]["text"])
        # at the default batch the activations are larger, but 64 rows still do not pay
        # for the copy; the ledger says by how much, and so must the advice
        led64, _ = profile("mlp_bf16")
        cost64 = 2 * led64["params"] - led64["peak_by_purpose"]["activations"]
        items64 = [a for a in profile("mlp_bf16")[1]["advice"] if a["topic"] == "mixed_precision"]
        self.assertEqual(bool(items64), cost64 > 0)
        if items64:
            self.assertLessEqual(abs(items64[0]["bytes_saved"] - cost64), 0.01 * cost64)

    def test_mlp_inference(self):
        led, mem = self.check("mlp_inference")
        self.assertEqual(mem["at_peak"]["optimizer"] + mem["at_peak"]["gradients"], 0)

    def test_mlp_checkpointing(self):
        led_on, mem_on = self.check("mlp_checkpoint")
        led_off, mem_off = self.check("mlp_no_checkpoint")
        # the ledgers say checkpointing saves activations (both peaks are in training, so
        # some are live); the analyzer must see it too
        self.assertGreater(led_on["peak_by_purpose"]["activations"], 0)
        self.assertLess(led_on["peak_by_purpose"]["activations"],
                        led_off["peak_by_purpose"]["activations"])
        self.assertLess(mem_on["at_peak"]["activations"], mem_off["at_peak"]["activations"])

    def test_gpt_arenas_with_nvtx_regions(self):
        self.check_per_param("gpt_nvtx")

    def test_gpt_arenas_from_pointers_alone(self):
        _, mem = self.check_per_param("gpt_fp32")
        self.assertEqual(mem["evidence"], "pointers")
        whys = {a["why"] for a in mem["at_peak_allocations"]}
        self.assertFalse(any("NVTX" in w for w in whys), whys)

    def test_gpt_mixed_precision_arenas(self):
        _, mem = self.check_per_param("gpt_bf16")
        self.assertIn("mixed precision", mem["per_param"]["weights_kind"])


class OutOfMemory(unittest.TestCase):
    """train_mlp --grow-batch doubles its batch every step until a cudaMalloc fails, then
    prints its ledger (what it had live, by purpose; which of its functions asked; the step
    and phase) and SIGKILLs itself at once. The caps make it fail in forward, in the loss
    and in backward (docs/samples.md)."""

    PHASE = {"forward": "forward", "loss": "forward", "backward": "backward",
             "optimizer": "optimizer"}

    def postmortem(self, cap, *args):
        trace = os.path.join(tmpdir(), f"oom-{cap}.anat")
        r = anatomist("run", "--sim", "--sim-memory", cap, "-q", "-o", trace, "--",
                      sample("train_mlp"), "--grow-batch", "--kill-on-oom", *args, timeout=300)
        self.assertEqual(r.returncode, 128 + 9, r.stderr)  # killed by SIGKILL
        led = ledger(r.stdout)
        o = anatomist("oom", trace, "--json")
        self.assertEqual(o.returncode, 0, o.stderr)
        import json
        return trace, led, json.loads(o.stdout), anatomist("oom", trace).stdout

    def check(self, cap, *args):
        trace, led, oom, text = self.postmortem(cap, *args)
        fail = led["failed_alloc"]
        # the trace is complete although the process died the instant after the failure:
        # every allocation and free the program made, the failed one, and what the device
        # said was free right after it
        recs = dump(trace, ended="recovered")  # killed on OOM: the rest comes from the live file
        allocs = of(recs, "ALLOC")
        self.assertEqual(sum(a["ret"] == 0 for a in allocs), led["alloc_calls"])
        self.assertEqual(sum(f["ret"] == 0 for f in of(recs, "FREE")), led["free_calls"])
        failed = [a for a in allocs if a["ret"] != 0]
        self.assertEqual([a["size"] for a in failed], [fail["bytes"]])
        self.assertEqual(len([m for m in of(recs, "MEMINFO") if m["reason"] == 1]), 1)
        # the post-mortem: the request, where, and what was live by category
        self.assertEqual(oom["requested_bytes"], fail["bytes"])
        self.assertEqual(oom["api"], "cudaMalloc")
        self.assertEqual(oom["step"], fail["step"])
        self.assertEqual(oom["phase"], self.PHASE[fail["phase"]])
        funcs = [f.get("function") or "" for f in oom["stack"]]
        self.assertTrue(any(fail["site"] in fn for fn in funcs), (fail["site"], funcs))
        self.assertIn(fail["site"], text)
        live, want = oom["live"], fail["live_by_purpose"]
        total = sum(live.values())
        self.assertEqual(total, sum(want.values()))
        for c in CATS:
            with self.subTest(cap=cap, category=c):
                self.assertLessEqual(abs(live[c] - want[c]), 0.05 * want[c] if want[c] else 0,
                                     (live, want))
        self.assertLessEqual(live["unattributed"], 0.05 * total)
        dominant = max(CATS, key=lambda c: want[c])
        self.assertEqual(oom["dominant"], dominant)
        self.assertIn(f"most of it: {dominant} (", text)
        # at least one technique saves the shortfall, by the post-mortem's own figures
        self.assertEqual(oom["kind"], "exhaustion")
        self.assertEqual(oom["shortfall_bytes"], oom["requested_bytes"] - oom["free_bytes"])
        covering = [f for f in oom["fits"] if f["covers"]]
        self.assertTrue(covering, oom["fits"])
        for f in covering:
            self.assertGreaterEqual(f["bytes_saved"], oom["shortfall_bytes"])
        # and the peak of the whole run, as for every sample
        mem = report_json(trace)["memory"]
        self.assertEqual(mem["peak_bytes"], led["peak_bytes"])
        for c in CATS:
            want_c = led["peak_by_purpose"][c]
            with self.subTest(cap=cap, peak_category=c):
                self.assertLessEqual(abs(mem["at_peak"][c] - want_c), 0.05 * want_c)
        self.assertLessEqual(mem["at_peak"]["unattributed"], 0.05 * mem["peak_bytes"])
        return led, oom

    def test_fails_in_forward(self):
        self.check("33MiB")

    def test_fails_in_the_loss(self):
        self.check("34MiB")

    def test_fails_in_backward(self):
        self.check("32MiB")

    def test_a_library_allocation_fails(self):
        # cublasCreate_v2 asks for its 32 MiB default workspace (docs/sim.md) on a 16 MiB
        # device: the failure is cuBLAS's, recorded with its library and its stack
        trace = os.path.join(tmpdir(), "blas-oom.anat")
        r = anatomist("run", "--sim", "--sim-memory", "16MiB", "-q", "-o", trace, "--",
                      sample("train_gpt"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("cublasCreate", r.stderr)
        failed = [a for a in of(dump(trace), "ALLOC") if a["ret"] != 0]
        self.assertEqual([(a["size"], a["lib"]) for a in failed], [(CUBLAS_DEFAULT_WORKSPACE, 1)])
        o = anatomist("oom", trace, "--json")
        oom = json.loads(o.stdout)
        self.assertEqual(oom["requested_bytes"], CUBLAS_DEFAULT_WORKSPACE)
        self.assertEqual((oom["free_bytes"], oom["total_bytes"]), (16 << 20, 16 << 20))
        self.assertEqual(oom["shortfall_bytes"], 16 << 20)
        self.assertIn("cublasCreate_v2", [f.get("function") for f in oom["stack"]])

    def test_activations_dominate(self):
        # SGD's smaller states and a larger device: the batch grows until the saved
        # activations hold most of the memory; a smaller micro-batch must cover the gap
        led, oom = self.check("64MiB", "--optimizer", "sgd")
        self.assertEqual(oom["dominant"], "activations")
        fits = {f["technique"]: f for f in oom["fits"]}
        self.assertTrue(fits["micro_batch_accumulation"]["covers"], fits)


class SetUpOutOfMemory(unittest.TestCase):
    """tests/corpus/h11_oom_setup_load (written blind; docs/samples.md) builds a model,
    its gradients and AdamW states, then asks for an activation arena that does not fit:
    no step ever ran. Its ledger says what was live and what failed; the post-mortem must
    find the loaded weights, call nothing made in set-up activations or temporary, name
    no decided category as the largest unless it is, and scale the failing request
    itself into a smaller micro-batch that covers the shortfall."""

    CAP = 384 << 20  # its `// corpus-env: ANATOMIST_SIM_MEMORY=384MiB`

    def test_setup_oom_postmortem(self):
        exe = os.path.join(BUILD, "corpus", "h11_oom_setup_load")
        trace = os.path.join(tmpdir(), "setup-oom.anat")
        r = anatomist("run", "--sim", "--sim-memory", "384MiB", "-q", "-o", trace, "--", exe,
                      env=clean_env(ANATOMIST_SIM_BLAS_COMPUTE="0"), timeout=300)
        self.assertEqual(r.returncode, 3, r.stderr)
        fail = ledger(r.stdout)["oom"]
        oom = json.loads(anatomist("oom", trace, "--json").stdout)
        self.assertEqual(oom["requested_bytes"], fail["requested_bytes"])
        want = fail["live_by_purpose"]
        self.assertEqual(oom["live"]["weights"], want["weights"])
        self.assertEqual(oom["live"]["activations"] + oom["live"]["temporary"], 0, oom["live"])
        decided = max(v for c, v in oom["live"].items() if c != "unattributed")
        if oom["dominant"] == "unattributed":
            self.assertGreater(oom["live"]["unattributed"], decided, oom["live"])
        else:
            self.assertEqual(oom["dominant"], fail["dominant"], oom["live"])
        # the shortfall from the ledger: capacity - (its live bytes + cuBLAS's own workspace)
        need = fail["requested_bytes"] - (self.CAP - fail["live_bytes"] - CUBLAS_DEFAULT_WORKSPACE)
        self.assertEqual(oom["shortfall_bytes"], need)
        f = 2
        while fail["requested_bytes"] - -(-fail["requested_bytes"] // f) < need:
            f *= 2
        fits = {x["technique"]: x for x in oom["fits"]}
        mb = fits["micro_batch_accumulation"]
        self.assertEqual(mb["factor"], f, mb)
        self.assertTrue(mb["covers"], mb)
        self.assertGreaterEqual(mb["bytes_saved"], need)


class CachingAllocator(unittest.TestCase):
    """A segment obtained by code in libc10_cuda.so (a stand-in for PyTorch's allocator,
    tests/scenario/fake_c10.c) holds tensors the trace cannot see: unattributed, counted
    apart; the probe's own buffer is not a segment."""

    def test_segments_are_unattributed(self):
        from common import BUILD, clean_env, run
        probe = os.path.join(BUILD, "tests", "scenario_segment_probe")
        trace = os.path.join(tmpdir(), "seg.anat")
        env = clean_env(LD_LIBRARY_PATH=os.path.join(BUILD, "tests", "c10"))
        r = run([os.path.join(BUILD, "bin", "anatomist"), "run", "--sim", "-q", "-o", trace,
                 "--", probe], env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        own, seg = (int(w.split("=")[1]) for w in r.stdout.split()[1:3])
        mem = report_json(trace)["memory"]
        self.assertEqual(mem["peak_bytes"], own + seg)
        self.assertEqual(mem["caching_allocator"], {"segments_at_peak": 1, "bytes_at_peak": seg})
        self.assertGreaterEqual(mem["at_peak"]["unattributed"], seg)
        rows = {a["bytes"]: a for a in mem["at_peak_allocations"]}
        self.assertEqual(rows[seg]["category"], "unattributed")
        self.assertIn("caching-allocator segment", rows[seg]["why"])
        self.assertNotIn("caching-allocator", rows[own]["why"])


class At(unittest.TestCase):
    def test_at_step_and_time(self):
        trace = os.path.join(tmpdir(), "at.anat")
        r = anatomist("run", "--sim", "-q", "-o", trace, "--", sample("train_mlp"), *MLP_SMALL)
        self.assertEqual(r.returncode, 0, r.stderr)
        rep = report_json(trace)
        peaks = rep["memory"]["step_peaks"]
        self.assertEqual(len(peaks), 3)
        a = anatomist("report", trace, "--json", "--at", "step:2")
        self.assertEqual(a.returncode, 0, a.stderr)
        import json
        at = json.loads(a.stdout)["memory"]["at"]
        self.assertEqual(at["total_bytes"], peaks[1]["peak_bytes"])
        self.assertEqual(sum(at["by_category"].values()), at["total_bytes"])
        # before anything was allocated nothing is live; a bad spec is a usage error
        b = json.loads(anatomist("report", trace, "--json", "--at", "0ns").stdout)["memory"]["at"]
        self.assertEqual(b["total_bytes"], 0)
        for bad in ("step:0", "step:99", "later"):
            e = anatomist("report", trace, "--at", bad)
            self.assertEqual(e.returncode, 2, bad)
            self.assertIn("--at", e.stderr)


if __name__ == "__main__":
    unittest.main()
