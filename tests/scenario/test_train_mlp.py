"""train_mlp under `anatomist run --sim`: the report must find what the program's own
ledger says it did (allocation calls, bytes, peak, leaks, kernels, launches)."""
import os
import unittest

from common import anatomist, info_json, ledger, report_json, sample, tmpdir


def profile(*args, sim_memory=None):
    out = os.path.join(tmpdir(), "mlp.anat")
    opts = ["run", "--sim", "-q", "-o", out]
    if sim_memory:
        opts += ["--sim-memory", sim_memory]
    r = anatomist(*opts, "--", sample("train_mlp"), *args)
    return r, out


class TrainMlpMatchesLedger(unittest.TestCase):
    def check_run(self, *args):
        r, trace = profile(*args)
        self.assertEqual(r.returncode, 0, r.stderr)
        led = ledger(r.stdout)
        rep = report_json(trace)
        info = info_json(trace)

        self.assertEqual(rep["schema"], "anatomist.report/1")
        m = rep["allocations"]["by_api"]["cudaMalloc"]
        self.assertEqual(m["calls"], led["alloc_calls"])
        self.assertEqual(m["ok"], led["alloc_calls"])
        self.assertEqual(m["bytes"], led["alloc_bytes"])
        self.assertEqual(rep["allocations"]["frees_by_api"]["cudaFree"]["calls"], led["free_calls"])
        self.assertEqual(rep["memory"]["peak_bytes"], led["peak_bytes"])
        self.assertEqual(rep["memory"]["live_at_end_bytes"], led["live_at_exit_bytes"])
        self.assertEqual(sorted(l["bytes"] for l in rep["memory"]["leaks"]),
                         sorted(l["bytes"] for l in led["leaked"]))
        # Every leak has a symbolized stack that starts in the program's allocation
        # wrapper, in its own source file (the preload's frames are not shown).
        for leak in rep["memory"]["leaks"]:
            top = leak["stack"][0]
            self.assertIn("dev_alloc", top.get("function") or "", leak["stack"])
            self.assertTrue((top.get("file") or "").endswith("train_mlp.cu"), top)

        cp, lc = rep["copies"], led["copies"]
        self.assertEqual(cp["memcpy"]["by_direction"]["H2D"]["calls"], lc["h2d_calls"])
        self.assertEqual(cp["memcpy"]["by_direction"]["H2D"]["bytes"], lc["h2d_bytes"])
        self.assertEqual(cp["memcpy"]["by_direction"]["D2H"]["calls"], lc["d2h_calls"])
        self.assertEqual(cp["memcpy"]["by_direction"]["D2H"]["bytes"], lc["d2h_bytes"])
        self.assertEqual(cp["memset"]["calls"], lc["memset_calls"])
        self.assertEqual(cp["memset"]["bytes"], lc["memset_bytes"])

        kernels = {k["name"]: k["count"] for k in rep["kernels"]}
        self.assertEqual(kernels, led["kernels"])
        self.assertEqual(rep["launches"], led["launches"])

        self.assertEqual(info["records"]["alloc"], led["alloc_calls"])
        self.assertEqual(info["records"]["free"], led["free_calls"])
        self.assertEqual(info["records"]["launch"], led["launches"])
        self.assertEqual(info["dropped"], 0)
        self.assertEqual(info["ended"], "exit")
        return rep, led

    def test_default_run(self):
        self.check_run()

    def test_text_report_stops_stacks_at_main(self):
        r, trace = profile("--steps", "1")
        self.assertEqual(r.returncode, 0, r.stderr)
        text = anatomist("report", trace)
        self.assertEqual(text.returncode, 0, text.stderr)
        self.assertIn("dev_alloc(unsigned long, purpose) at", text.stdout)
        self.assertIn(" main at ", text.stdout)
        self.assertNotIn("__libc_start_main", text.stdout)
        # The JSON keeps every frame, the C runtime's included.
        rep = report_json(trace)
        funcs = [f.get("function") or "" for f in rep["memory"]["top_sites"][0]["stack"]]
        self.assertIn("main", funcs)
        self.assertTrue(any("__libc_start" in f for f in funcs), funcs)

    def test_other_shape(self):
        rep, led = self.check_run("--steps", "3", "--batch", "32", "--hidden", "200", "--layers", "4")
        # The peak of this shape differs from the default's: nothing here is a constant.
        self.assertNotEqual(led["peak_bytes"], 30808736)

    def test_peak_time_lies_within_the_run(self):
        rep, _ = self.check_run("--steps", "2")
        self.assertGreater(rep["memory"]["peak_at_ns"], 0)

    def test_out_of_memory(self):
        r, trace = profile("--batch", "4096", sim_memory="64MiB")
        self.assertEqual(r.returncode, 1, "the program's own exit code passes through")
        led = ledger(r.stdout)
        fail = led["failed_alloc"]
        rep = report_json(trace)
        fails = rep["failed_allocations"]
        self.assertEqual(len(fails), 1)
        f = fails[0]
        self.assertEqual(f["size"], fail["bytes"])
        self.assertEqual(f["error"], "cudaErrorMemoryAllocation")
        self.assertEqual(f["total_bytes"], 64 << 20)
        # What was live when it failed is what the program still held at its exit.
        self.assertEqual(f["live_bytes"], led["live_at_exit_bytes"])
        self.assertTrue(any("dev_alloc" in (fr.get("function") or "") for fr in f["stack"]))
        self.assertEqual(rep["memory"]["peak_bytes"], led["peak_bytes"])


if __name__ == "__main__":
    unittest.main()
