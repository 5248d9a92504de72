"""The flame page (`anatomist flame TRACE --format html`) in headless Chromium, for the GPU
time of train_mlp (3 steps, hidden 512) and the peak memory of train_gpt (bf16, 3 steps):
it loads offline with no console error and no network request, its header names the
trace and the traced command, it holds the one flame graph of its metric across the
whole width of the window, whose root is the figure of `anatomist report --json` of the
same trace and whose frames are laid out as their values say, a real click zooms and the
reset unzooms, hover shows the tooltip, search marks the matching frames, and a
screenshot is kept in tests/browser-screenshots/ of the build."""
import atexit
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import cdp  # noqa: E402
import flamecheck  # noqa: E402
import pages  # noqa: E402

WIDTH = 1800  # wider than the report page's column (1500 px): the flame page has none
_browser = None


def browser():
    global _browser
    if _browser is None:
        _browser = cdp.Browser(width=WIDTH, height=900)
        atexit.register(_browser.close)
    return _browser


class FlamePage:
    RUN = METRIC = None

    @classmethod
    def setUpClass(cls):
        cls.url, cls.trace, cls.rep = pages.flame_page(cls.RUN, cls.METRIC)
        cls.page = pages.load(browser(), cls.url)
        cls.sel = flamecheck.sel(cls.METRIC)

    def figure(self):
        if self.METRIC == "gpu-time":
            return pages.gpu_activity_ns(self.rep)
        return self.rep["memory"]["peak_bytes"]

    def test_a_loads_offline_without_errors(self):
        pages.check_clean(self, self.page, self.url)

    def test_b_header(self):
        sub = self.page.eval("document.getElementById('subtitle').innerText")
        self.assertIn(self.trace, sub)
        self.assertIn(pages.RUNS[self.RUN][0], sub)  # the traced command
        self.assertIn(self.METRIC, self.page.eval("document.title"))

    def test_c_one_flame_across_the_window(self):
        metrics = self.page.eval("[...document.querySelectorAll('.flame')]"
                                 ".map(e => e.getAttribute('data-metric'))")
        self.assertEqual(metrics, [self.METRIC])
        root = flamecheck.check_geometry(self, self.page, self.sel, self.METRIC)
        self.assertEqual(root["value"], self.figure())
        self.assertGreaterEqual(root["w"], 0.9 * WIDTH, "the flame graph is not full width")

    def test_d_click_zooms(self):
        flamecheck.check_zoom(self, self.page, self.sel, self.METRIC)

    def test_e_hover_tooltip(self):
        flamecheck.check_tooltip(self, self.page, self.sel, self.METRIC)

    def test_f_search(self):
        flamecheck.check_search(self, self.page, self.sel, self.METRIC)

    def test_g_screenshot(self):
        pages.check_screenshot(self, self.page, "flame-%s-%s" % (self.RUN, self.METRIC))

    def test_z_no_errors_after_interaction(self):
        pages.check_clean(self, self.page, self.url)


class TrainMlpGpuTime(FlamePage, unittest.TestCase):
    RUN, METRIC = "mlp", "gpu-time"


class TrainGptPeakMemory(FlamePage, unittest.TestCase):
    RUN, METRIC = "gpt_bf16", "peak-memory"


if __name__ == "__main__":
    cdp.require_chromium()
    unittest.main(verbosity=2)
