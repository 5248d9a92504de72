"""The browser harness (cdp.py) on small pages of its own, so that a page test passing means
something: a page that requests the network, logs an error, asserts, throws, or logs a
failed resource load is caught; a clean page is not; a click lands where it was aimed;
typing reaches the focused input; a screenshot is a PNG of at least the viewport."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import cdp  # noqa: E402

CLEAN = """<!doctype html><html><head><meta charset="utf-8"><style>
body{margin:0} #box{position:absolute;left:100px;top:200px;width:300px;height:40px;background:#c33}
#tall{height:1500px}</style></head><body><div id="box"></div><input id="q"><div id="tall"></div>
<script>
window.clicks = [];
document.getElementById('box').addEventListener('click', e => clicks.push([e.clientX, e.clientY]));
document.getElementById('q').addEventListener('input', e => window.typed = e.target.value);
const blob = URL.createObjectURL(new Blob(['x']));
fetch(blob).then(() => { document.body.dataset.ready = '1'; });
</script></body></html>"""

DIRTY = """<!doctype html><html><head><meta charset="utf-8"></head><body>
<img src="http://203.0.113.9/pixel.png">
<script>
console.error('drawing failed');
console.assert(1 === 2, 'one is two');
fetch('https://example.invalid/data.json').catch(() => {});
setTimeout(() => { document.body.dataset.ready = '1'; throw new Error('late bug'); }, 10);
</script></body></html>"""

_browser = None
_tmp = tempfile.TemporaryDirectory(prefix="ana-browser-")


def browser():
    global _browser
    if _browser is None:
        _browser = cdp.Browser()
    return _browser


def load(html):
    path = os.path.join(_tmp.name, "page%d.html" % len(os.listdir(_tmp.name)))
    with open(path, "w") as f:
        f.write(html)
    page = browser().new_page()
    url = "file://" + path
    page.goto(url)
    page.wait_for("document.body.dataset.ready === '1'", timeout=10)
    return page, url


class Harness(unittest.TestCase):
    def test_clean_page(self):
        page, url = load(CLEAN)
        self.assertEqual(page.errors(), [])
        reqs = page.requests()
        self.assertIn(url, reqs)
        self.assertTrue(all(u == url or u.startswith("blob:") for u in reqs), reqs)

    def test_dirty_page(self):
        page, url = load(DIRTY)
        page.b.drain(0.3)  # the failed loads report asynchronously
        errs = "\n".join(page.errors())
        for want in ("drawing failed", "one is two", "late bug"):
            self.assertIn(want, errs)
        offsite = [u for u in page.requests() if u != url]
        self.assertIn("https://example.invalid/data.json", offsite)
        self.assertIn("http://203.0.113.9/pixel.png", offsite)

    def test_click_type_screenshot(self):
        page, _ = load(CLEAN)
        page.click(250, 220)
        page.click(50, 50)  # outside the box: not counted
        self.assertEqual(page.eval("clicks"), [[250, 220]])
        page.eval("document.getElementById('q').focus()")
        page.type_text("gemm")
        self.assertEqual(page.eval("window.typed"), "gemm")
        out = os.path.join(_tmp.name, "shot.png")
        data = page.screenshot(out)
        w, h = cdp.png_size(data)
        self.assertEqual(w, page.b.width)
        self.assertGreaterEqual(h, 1500)  # the whole page, beyond the 800 px viewport
        with open(out, "rb") as f:
            self.assertEqual(f.read(), data)


if __name__ == "__main__":
    cdp.require_chromium()
    try:
        unittest.main(verbosity=2)
    finally:
        if _browser:
            _browser.close()
