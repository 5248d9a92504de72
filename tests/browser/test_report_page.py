"""The report page (`anatomist html TRACE`) in headless Chromium, for train_mlp, train_gpt
(bf16, 3 steps) and train_mlp killed by an out-of-memory error: it loads offline with no
console error and no network request, every figure equals `report --json` of the same
trace, the steps chart, the memory timeline and the flame graphs draw what the report
says, a click zooms a flame graph and its reset unzooms, hover and search work, and a
screenshot of the whole page is kept in tests/browser-screenshots/ of the build."""
import atexit
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import cdp  # noqa: E402
import flamecheck  # noqa: E402
import pages  # noqa: E402

_browser = None


def browser():
    global _browser
    if _browser is None:
        _browser = cdp.Browser()
        atexit.register(_browser.close)
    return _browser


def step_class_pointers(rep):
    """/steps/list/I/by_class/CLASS of every (step, class) with time."""
    return {"/steps/list/%d/by_class/%s" % (i, c)
            for i, s in enumerate(rep["steps"]["list"]) for c, ns in s["by_class"].items() if ns}


class ReportPage:
    RUN = None  # a key of pages.RUNS

    @classmethod
    def setUpClass(cls):
        cls.url, cls.rep = pages.report_page(cls.RUN)
        cls.page = pages.load(browser(), cls.url)

    def test_a_loads_offline_without_errors(self):
        pages.check_clean(self, self.page, self.url)

    def test_b_figures_equal_report_json(self):
        got = set(pages.check_figures(self, self.page, self.rep, self.RUN))
        want = step_class_pointers(self.rep) | {"/memory/peak_bytes"} | \
            {"/memory/at_peak/" + c for c in pages.CATEGORIES}
        self.assertEqual(sorted(want - got), [], "figures the page should show")
        cards = self.page.eval("[...document.querySelectorAll('#cards [data-figure]')]"
                               ".map(e => e.getAttribute('data-figure'))")
        self.assertGreaterEqual(len(cards), 3, cards)
        self.assertIn("/memory/peak_bytes", cards)
        if self.rep["oom"] is not None:
            self.assertTrue(any(p.startswith("/oom/") for p in cards), cards)

    def test_c_steps_chart(self):
        bars = self.page.eval("[...document.querySelectorAll('#steps svg rect.bar')].map(e => "
                              "[e.getAttribute('data-figure'), e.getBoundingClientRect().height])")
        want = step_class_pointers(self.rep)
        self.assertEqual(len(bars), len(want))
        self.assertEqual({p for p, _ in bars}, want)
        # one scale for every bar: its height is its time
        ns = [pages.resolve(self.rep, p) for p, _ in bars]
        px_per_ns = max(h for _, h in bars) / max(ns)
        off = [(p, h, v) for (p, h), v in zip(bars, ns) if abs(h - v * px_per_ns) > 1.0]
        self.assertEqual(off, [], "bars whose height is not their time")

    def test_d_memory_timeline(self):
        mem = self.rep["memory"]
        paths = self.page.eval("""[...document.querySelectorAll('#memory-timeline svg path')]
            .flatMap(p => [...p.classList].filter(c => c.startsWith('cat-')).map(c =>
                [c.slice(4), p.getBoundingClientRect().height]))""")
        self.assertEqual(sorted(c for c, _ in paths), sorted(pages.CATEGORIES))
        for c, h in paths:
            if mem["at_peak"][c]:
                self.assertGreater(h, 0, c + " has bytes at the peak but draws nothing")
        peak = self.page.eval("[...document.querySelectorAll('#memory-timeline .peak-marker')]"
                              ".map(e => e.getAttribute('data-value'))")
        self.assertEqual(len(peak), 1, peak)
        self.assertEqual(int(peak[0]), mem["peak_bytes"])
        ooms = self.page.eval("document.querySelectorAll('#memory-timeline .oom-marker').length")
        self.assertEqual(ooms, 0 if self.rep["oom"] is None else 1)

    def test_e_screenshot(self):
        pages.check_screenshot(self, self.page, "report-" + self.RUN)

    def test_f_flames_draw(self):
        gpu = flamecheck.check_geometry(self, self.page, flamecheck.sel("gpu-time"), "gpu-time")
        self.assertEqual(gpu["value"], pages.gpu_activity_ns(self.rep))
        mem = flamecheck.check_geometry(self, self.page, flamecheck.sel("peak-memory"),
                                        "peak-memory")
        self.assertEqual(mem["value"], self.rep["memory"]["peak_bytes"])

    def test_g_click_zooms(self):
        flamecheck.check_zoom(self, self.page, flamecheck.sel("gpu-time"), "gpu-time")

    def test_h_hover_tooltip(self):
        flamecheck.check_tooltip(self, self.page, flamecheck.sel("gpu-time"), "gpu-time")

    def test_i_search(self):
        flamecheck.check_search(self, self.page, flamecheck.sel("gpu-time"), "gpu-time")

    def test_z_no_errors_after_interaction(self):
        pages.check_clean(self, self.page, self.url)


class TrainMlp(ReportPage, unittest.TestCase):
    RUN = "mlp"


class TrainGptBf16(ReportPage, unittest.TestCase):
    RUN = "gpt_bf16"


class OutOfMemory(ReportPage, unittest.TestCase):
    RUN = "oom"


if __name__ == "__main__":
    cdp.require_chromium()
    unittest.main(verbosity=2)
