"""The pages escape every string that comes from a trace (docs/reliability.md): the hostile
probe (tests/scenario/hostile/, hostile_run.py) names its kernels, functions, NVTX ranges,
thread, arguments, executable and library with markup — `<script>alert(1)</script>`,
`</script><img src=x onerror=alert(2)>`, `"'><svg onload=alert(3)>` — and every page made
from its traces is loaded in headless Chromium: `anatomist html`, `anatomist flame --format
html` (GPU time, peak memory), `anatomist flame --format svg` and `anatomist diff --format
html`. On each:

* no JavaScript dialog opens (Page.javascriptDialogOpening never fires; one that did
  would be dismissed and reported);
* nothing of the strings became an element: no <img> (nor iframe, object, embed), no
  attribute on*, no element of the thread name's `<b id=x1>`, no <script> but the page's
  own; the page loads as it should (data-ready, no error);
* the strings are text, whole: the kernel names are the text of table cells, the traced
  command is the header's, a flame's frames are named (data-name) exactly as `anatomist
  flame --format folded` of the same trace names them, hovering the frame of a hostile
  function shows its name in the tooltip.

A page that does write such a string as HTML is caught (test_z_the_checks_catch_...).
About 5 s."""
import atexit
import json
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import cdp  # noqa: E402
import pages  # noqa: E402
from common import anatomist  # noqa: E402  (pages put tests/scenario on the path)
import hostile_run  # noqa: E402
from hostile_run import H1, H2, H3, HOSTILE  # noqa: E402

_DOM = """(() => {
  const all = [...document.querySelectorAll('*')];
  const text = (e) => (e.textContent || '');
  return {
    embedded: all.filter(e => /^(img|iframe|object|embed|frame|video|audio)$/i.test(e.localName))
                 .map(e => e.outerHTML.slice(0, 200)),
    handlers: all.flatMap(e => [...e.attributes].filter(a => /^on/i.test(a.name))
                 .map(a => e.localName + ' ' + a.name + '=' + a.value)),
    thread_marker: document.querySelectorAll('[id="x1"]').length,
    scripts: document.querySelectorAll('script').length,
    exact: [...new Set(all.filter(e => e.children.length === 0).map(text))],
    names: [...new Set([...document.querySelectorAll('[data-name]')].map(e => e.getAttribute('data-name')))],
    all_text: document.documentElement.textContent
  };
})()"""

_browser = None


def browser():
    global _browser
    if _browser is None:
        _browser = cdp.Browser(width=1400, height=900)
        atexit.register(_browser.close)
    return _browser


def ok(r, what):
    assert r.returncode == 0, "%s failed (exit %d):\n%s" % (what, r.returncode, r.stderr)


def folded_names(trace, metric):
    r = anatomist("flame", trace, "--metric", metric, "--format", "folded")
    ok(r, "anatomist flame --format folded")
    return {f for line in r.stdout.splitlines() for f in line.rsplit(" ", 1)[0].split(";")}


class Loaded:
    """A page loaded with every JavaScript dialog it opened recorded and dismissed."""

    def __init__(self, url, ready=True):
        self.page = browser().new_page()
        self.dialogs = []
        b = self.page.b
        since = len(b.events)
        self.page.send("Page.navigate", {"url": url})
        self.seen = since
        deadline = time.monotonic() + 30
        while not self._scan("Page.loadEventFired"):
            if not b._pump(deadline):
                raise cdp.CdpError("no load event for %s within 30 s" % url)
        if ready:
            self.page.wait_for("document.body && (document.body.dataset.ready === '1' || "
                               "document.body.dataset.error !== undefined)", 20, "data-ready")
        b.drain()
        self._scan(None)

    def _scan(self, until):
        """Dismisses the dialogs among the new events; True when one is `until`."""
        found = False
        events = self.page.b.events
        while self.seen < len(events):
            e = events[self.seen]
            self.seen += 1
            if e.get("sessionId") != self.page.session:
                continue
            if e.get("method") == "Page.javascriptDialogOpening":
                self.dialogs.append(e["params"].get("message"))
                self.page.send("Page.handleJavaScriptDialog", {"accept": False})
            found = found or e.get("method") == until
        return found

    def dom(self):
        d = self.page.eval(_DOM)
        self.page.b.drain()
        self._scan(None)
        return d


class HostilePages(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        browser()  # first: without Chromium the test exits 77 (skipped), as the others do
        d = pages.tmp("hostile")
        os.makedirs(d, exist_ok=True)
        cls.h = hostile_run.make(d)
        cls.urls = {}

        def make(name, *args):
            out = pages.tmp(name)
            ok(anatomist(*args, "-o", out), "anatomist " + " ".join(args[:1]))
            cls.urls[name] = "file://" + out
        make("report.html", "html", cls.h.head)
        make("flame-gpu.html", "flame", cls.h.head, "--metric", "gpu-time", "--format", "html")
        make("flame-mem.html", "flame", cls.h.head, "--metric", "peak-memory", "--format", "html")
        make("flame-gpu.svg", "flame", cls.h.head, "--metric", "gpu-time", "--format", "svg")
        make("diff.html", "diff", cls.h.base, cls.h.head, "--format", "html")

    def check_inert(self, loaded, scripts, what):
        d = loaded.dom()
        self.assertEqual(loaded.dialogs, [], what + ": a dialog opened")
        self.assertEqual(d["embedded"], [], what)
        self.assertEqual(d["handlers"], [], what)
        self.assertEqual(d["thread_marker"], 0, what)
        self.assertEqual(d["scripts"], scripts, what)
        return d

    def html_page(self, name):
        url = self.urls[name]
        loaded = Loaded(url)
        pages.check_clean(self, loaded.page, url)
        self.assertIsNone(loaded.page.eval("document.body.dataset.error ?? null"))
        return loaded, self.check_inert(loaded, 2, name)

    def test_report_page(self):
        loaded, d = self.html_page("report.html")
        for s in HOSTILE:  # the kernel tables
            self.assertIn(s, d["exact"], "%r is not the text of an element" % s)
        self.assertIn(" ".join([self.h.exe, self.h.lib, "--extra", *HOSTILE]), d["exact"])
        self.assertIn(self.h.head, d["all_text"])
        for metric in ("gpu-time", "peak-memory"):  # the flame graphs' frames, by name
            self.assertLessEqual(folded_names(self.h.head, metric), set(d["names"]), metric)
        self.hover_frame(loaded, H1)

    def test_flame_pages(self):
        for name, metric in (("flame-gpu.html", "gpu-time"), ("flame-mem.html", "peak-memory")):
            loaded, d = self.html_page(name)
            want = folded_names(self.h.head, metric)
            self.assertTrue(any("<img" in n for n in want) and H1 in want, want)
            self.assertLessEqual(want, set(d["names"]), name)
            self.assertIn(self.h.head, d["all_text"])
            self.hover_frame(loaded, H1)

    def test_diff_page(self):
        _, d = self.html_page("diff.html")
        for s in HOSTILE:  # kernels by change; H3 is a new kernel of head
            self.assertIn(s, d["exact"], "%r is not the text of an element" % s)
        for metric in ("gpu-time", "peak-memory"):
            self.assertLessEqual(folded_names(self.h.head, metric), set(d["names"]), metric)

    def test_svg_flame_graph(self):
        loaded = Loaded(self.urls["flame-gpu.svg"], ready=False)
        d = self.check_inert(loaded, 1, "flame-gpu.svg")
        titles = loaded.page.eval("[...document.querySelectorAll('title')].map(t => t.textContent)")
        named = {t.rsplit(" (", 1)[0] for t in titles}
        self.assertLessEqual(folded_names(self.h.head, "gpu-time"), named)
        self.assertIn(H1, d["all_text"])

    def hover_frame(self, loaded, name):
        """Hovers the first drawn frame named name; the tooltip shows the name as text."""
        box = loaded.page.eval("""((n) => {
          const r = [...document.querySelectorAll('rect[data-name]')].find(e =>
            e.getAttribute('data-name') === n && e.getBoundingClientRect().width > 2);
          if (!r) return null;
          r.scrollIntoView({block: 'center'});
          const b = r.getBoundingClientRect();
          return {x: b.left + b.width / 2, y: b.top + b.height / 2};
        })(%s)""" % json.dumps(name))
        self.assertIsNotNone(box, "no frame named %r" % name)
        loaded.page.hover(box["x"], box["y"])
        tip = loaded.page.wait_for("(() => { const t = document.getElementById('tooltip');"
                                   " return !t.hidden && t.textContent; })()", 10, "the tooltip")
        self.assertIn(name, tip)
        self.check_inert(loaded, 2, "after hovering %r" % name)

    def test_z_the_checks_catch_a_page_that_writes_a_string_as_html(self):
        path = pages.tmp("vulnerable.html")
        with open(path, "w") as f:
            f.write("<!DOCTYPE html><body><p id=k></p><script>document.getElementById('k')"
                    ".innerHTML = %s; document.body.dataset.ready = '1';</script></body>"
                    % json.dumps(H2 + H3).replace("</", "<\\/"))
        loaded = Loaded("file://" + path)
        d = loaded.dom()
        self.assertEqual(sorted(loaded.dialogs), ["2", "3"])  # img onerror, svg onload
        self.assertEqual(len(d["embedded"]), 1, d["embedded"])
        self.assertEqual(len(d["handlers"]), 2, d["handlers"])
        self.assertNotIn(H2, d["exact"])


if __name__ == "__main__":
    unittest.main()
