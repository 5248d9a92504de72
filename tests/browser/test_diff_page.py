"""The diff page (`anatomist diff BASE HEAD --format html`) of train_gpt fp32 → bf16 (3 steps
each) in headless Chromium: it loads offline with no console error and no network request,
shows the verdict, every figure equals `anatomist diff --format json` of the same traces,
the differential flame graphs hold the whole run of each side (their roots against
`report --json` of base and head) and are coloured red where a frame grew and blue where
it shrank, a click zooms, and a screenshot is kept in tests/browser-screenshots/."""
import atexit
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import cdp  # noqa: E402
import flamecheck  # noqa: E402
import pages  # noqa: E402

METRICS = ("gpu-time", "peak-memory")


def rgb(fill):
    m = re.match(r"rgba?\((\d+),\s*(\d+),\s*(\d+)", fill or "")
    return tuple(int(v) for v in m.groups()) if m else None


class DiffPage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.url, cls.diff, cls.base, cls.head = pages.diff_page("gpt_fp32", "gpt_bf16")
        cls.browser = cdp.Browser()
        atexit.register(cls.browser.close)
        cls.page = pages.load(cls.browser, cls.url)

    def test_a_loads_offline_without_errors(self):
        pages.check_clean(self, self.page, self.url)

    def test_b_verdict(self):
        text = self.page.eval("document.getElementById('verdict')?.innerText ?? null")
        self.assertIsNotNone(text, "no #verdict")
        self.assertTrue(text.strip())
        self.assertIn(self.diff["verdict"], " ".join(text.split()))

    def test_c_figures_equal_diff_json(self):
        got = set(pages.check_figures(self, self.page, self.diff, "diff"))
        missing = ["/%s/%d/%s" % (table, i, side)
                   for table in ("metrics", "time_by_class", "memory_at_peak")
                   for i, row in enumerate(self.diff[table]) for side in ("base", "head")
                   if row[side] is not None and "/%s/%d/%s" % (table, i, side) not in got]
        self.assertEqual(missing, [], "rows whose base or head the page does not show")

    def test_d_screenshot(self):
        pages.check_screenshot(self, self.page, "diff-gpt-fp32-bf16")

    def test_e_flame_roots(self):
        want = {"gpu-time": (pages.gpu_activity_ns(self.base), pages.gpu_activity_ns(self.head)),
                "peak-memory": (self.base["memory"]["peak_bytes"],
                                self.head["memory"]["peak_bytes"])}
        for metric in METRICS:
            root = flamecheck.check_geometry(self, self.page, flamecheck.sel(metric, True), metric)
            self.assertEqual((root["base"], root["value"]), want[metric], metric)

    def test_f_red_grew_blue_shrank(self):
        colours = {"red": 0, "blue": 0}
        for metric in METRICS:
            for r in flamecheck.rects(self.page, flamecheck.sel(metric, True)):
                self.assertIsNotNone(r["base"], "%s: %r has no data-base" % (metric, r["name"]))
                c = rgb(r["fill"])
                self.assertIsNotNone(c, "%s: fill %r" % (r["name"], r["fill"]))
                red, blue = c[0] > c[2], c[2] > c[0]
                colours["red"] += red
                colours["blue"] += blue
                if r["value"] > r["base"]:
                    self.assertFalse(blue, "%s grew %d -> %d but is %s"
                                     % (r["name"], r["base"], r["value"], r["fill"]))
                elif r["value"] < r["base"]:
                    self.assertFalse(red, "%s shrank %d -> %d but is %s"
                                     % (r["name"], r["base"], r["value"], r["fill"]))
        self.assertGreater(colours["red"], 0, "no frame grew between fp32 and bf16")
        self.assertGreater(colours["blue"], 0, "no frame shrank between fp32 and bf16")
        print("diff flames: %(red)d red, %(blue)d blue" % colours, file=sys.stderr)

    def test_g_click_zooms(self):
        flamecheck.check_zoom(self, self.page, flamecheck.sel("gpu-time", True), "diff gpu-time")

    def test_z_no_errors_after_interaction(self):
        pages.check_clean(self, self.page, self.url)


if __name__ == "__main__":
    cdp.require_chromium()
    unittest.main(verbosity=2)
