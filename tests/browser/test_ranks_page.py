"""The job page (`anatomist html DIR`, docs/ranks.md) of 4 ranks of ddp_allreduce, rank 2
made slow on purpose, in headless Chromium: it loads offline with no console error and no
network request, every figure equals `anatomist report --json DIR` (the job document),
the per-rank table has one row per rank with the pids the launcher printed, the
stragglers section names the slow rank, and a screenshot is kept."""
import atexit
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import cdp  # noqa: E402
import pages  # noqa: E402
from pages import anatomist, clean_env, ok, sample  # noqa: E402

RANKS, SLOW = 4, 2


class RanksPage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        d = pages.tmp("ranks")
        os.makedirs(d, exist_ok=True)
        r = ok(anatomist("run", "--sim", "-q", "-o", os.path.join(d, "%h-r%r-%p.anat"), "--",
                         sample("ddp_allreduce"), "--ranks", str(RANKS), "--steps", "3", "--elems", "4096",
                         "--slow-rank", str(SLOW), "--slow-us", "150000",
                         env=clean_env(ANATOMIST_SIM_NCCL_TIMEOUT_MS="30000"), timeout=300), "ddp_allreduce")
        launcher = [json.loads(l[len("launcher "):]) for l in r.stdout.splitlines() if l.startswith("launcher ")]
        cls.pids = [q["pid"] for q in launcher[0]["ranks"]]
        out = pages.tmp("ranks.html")
        ok(anatomist("html", d, "-o", out), "anatomist html DIR")
        cls.job = json.loads(ok(anatomist("report", "--json", d), "anatomist report --json DIR").stdout)
        cls.url = "file://" + out
        cls.browser = cdp.Browser()
        atexit.register(cls.browser.close)
        cls.page = pages.load(cls.browser, cls.url)

    def test_a_loads_offline_without_errors(self):
        pages.check_clean(self, self.page, self.url)

    def test_b_figures_equal_job_json(self):
        got = set(pages.check_figures(self, self.page, self.job, "ranks"))
        for i in range(RANKS):
            for key in ("pid", "step_median_ns", "work_median_ns", "collective_median_ns", "peak_bytes"):
                self.assertIn("/ranks/%d/%s" % (i, key), got)

    def test_c_per_rank_table(self):
        pids = self.page.eval("""[...document.querySelectorAll('#ranks tbody tr')].map(
            tr => tr.cells[2].innerText.replace(/,/g, '').trim())""")
        self.assertEqual([int(p) for p in pids], self.pids)

    def test_d_stragglers(self):
        ranks = self.page.eval("""[...document.querySelectorAll('#stragglers tbody tr')].map(
            tr => tr.cells[0].innerText.trim())""")
        self.assertTrue(ranks, "no straggler listed")
        self.assertEqual(set(ranks), {str(SLOW)})

    def test_e_screenshot(self):
        pages.check_screenshot(self, self.page, "ranks-ddp-4")


if __name__ == "__main__":
    unittest.main()
