"""Shared checks of the browser tests: traces of the samples, the JSON the pages must agree
with, and what is asserted on a loaded page (docs of the DOM contract: docs/html.md).

Every expected number comes from the analyzer's JSON of the same trace (`anatomist report
--json`, `anatomist diff --format json`), read in a separate process — never from the
page's own embedded data — and every figure's visible text is parsed back into a number
with the units of the page's formatters and compared within the rounding of the digits it
shows."""
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "scenario"))
from common import BUILD, anatomist, clean_env, report_json, sample  # noqa: E402

import cdp  # noqa: E402

CATEGORIES = ("weights", "optimizer", "gradients", "activations", "temporary",
              "functionality", "unattributed")
SCREENSHOTS = os.path.join(BUILD, "tests", "browser-screenshots")

# Traces of the samples the pages are made from (RUNS[name] = program, args, run options,
# environment, expected exit status of `anatomist run`).
_GPT_ENV = {"ANATOMIST_SIM_BLAS_COMPUTE": "0"}
RUNS = {
    "mlp": ("train_mlp", ["--steps", "3", "--hidden", "512"], [], {}, 0),
    "gpt_bf16": ("train_gpt", ["--precision", "bf16", "--steps", "3"], [], _GPT_ENV, 0),
    "gpt_fp32": ("train_gpt", ["--precision", "fp32", "--steps", "3"], [], _GPT_ENV, 0),
    "oom": ("train_mlp", ["--grow-batch", "--kill-on-oom"], ["--sim-memory", "34MiB"], {},
            128 + 9),
}

_tmp = tempfile.TemporaryDirectory(prefix="ana-browser-")


def tmp(name):
    return os.path.join(_tmp.name, name)


def trace(name):
    """The trace of RUNS[name], made once per test process."""
    path = tmp(name + ".anat")
    if not os.path.exists(path):
        prog, args, opts, env, status = RUNS[name]
        r = anatomist("run", "--sim", "-q", "-o", path, *opts, "--", sample(prog), *args,
                      env=clean_env(**env), timeout=300)
        assert r.returncode == status, "%s: exit %d\n%s" % (name, r.returncode, r.stderr)
    return path


def ok(r, what):
    assert r.returncode == 0, "%s failed (exit %d):\n%s" % (what, r.returncode, r.stderr)
    return r


def report_page(name):
    """(file:// URL of `anatomist html` of the trace, its `report --json`)."""
    t = trace(name)
    out = tmp(name + ".html")
    ok(anatomist("html", t, "-o", out), "anatomist html")
    return "file://" + out, report_json(t)


def diff_page(base, head):
    """(URL of `anatomist diff --format html`, the diff JSON, base report, head report)."""
    b, h = trace(base), trace(head)
    out = tmp("diff-%s-%s.html" % (base, head))
    ok(anatomist("diff", b, h, "--format", "html", "-o", out), "anatomist diff --format html")
    d = json.loads(ok(anatomist("diff", b, h, "--format", "json"), "anatomist diff").stdout)
    return "file://" + out, d, report_json(b), report_json(h)


def flame_page(name, metric):
    """(URL of `anatomist flame --format html` of the trace, the trace's path, its
    `report --json`)."""
    t = trace(name)
    out = tmp("flame-%s-%s.html" % (name, metric))
    ok(anatomist("flame", t, "--metric", metric, "--format", "html", "-o", out),
       "anatomist flame --format html")
    return "file://" + out, t, report_json(t)


def gpu_activity_ns(rep):
    """Every kernel, copy and set the GPU ran: what the gpu-time flame's root must hold."""
    g = rep["gpu"]
    return g["kernels"]["total_ns"] + g["memcpy"]["total_ns"] + g["memset"]["total_ns"]


# --- JSON pointers and formatted numbers ------------------------------------------------

def resolve(doc, pointer):
    """The value at an RFC 6901 JSON pointer; KeyError naming the pointer when it does not
    resolve."""
    if pointer == "":
        return doc
    if not pointer.startswith("/"):
        raise KeyError("%r is not a JSON pointer" % pointer)
    cur = doc
    for tok in pointer[1:].split("/"):
        tok = tok.replace("~1", "/").replace("~0", "~")
        if isinstance(cur, list):
            if not re.fullmatch(r"0|[1-9][0-9]*", tok) or int(tok) >= len(cur):
                raise KeyError("%s: no element %r" % (pointer, tok))
            cur = cur[int(tok)]
        elif isinstance(cur, dict):
            if tok not in cur:
                raise KeyError("%s: no member %r" % (pointer, tok))
            cur = cur[tok]
        else:
            raise KeyError("%s: %r is inside a %s" % (pointer, tok, type(cur).__name__))
    return cur


_BYTES = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
          "PiB": 1 << 50, "kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}
_TIME = {"ns": 1, "us": 1e3, "\u00b5s": 1e3, "\u03bcs": 1e3, "ms": 1e6, "s": 1e9,
         "min": 60e9, "h": 3600e9}
_SI = {"k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_NUM = re.compile(r"([+\-\u2212]?)\s*(\d[\d,\u2009\u202f]*(?:\.\d+)?|\.\d+)(?:[eE]([+-]?\d+))?"
                  r"\s*(%|\u00d7|[A-Za-z\u00b5\u03bc]+(?:/s)?)?")


def _tokens(text):
    """(value shown, half a unit of its last digit, unit) for each number in text."""
    for m in _NUM.finditer(text):
        sign, digits, exp, unit = m.groups()
        digits = re.sub(r"[,\u2009\u202f]", "", digits)
        dec = len(digits.split(".")[1]) if "." in digits else 0
        v = float(digits) * (10 ** int(exp) if exp else 1)
        half = 0.5 * 10 ** -dec * (10 ** int(exp) if exp else 1)
        yield (-v if sign in ("-", "\u2212") else v), half, unit or ""


def _readings(shown, unit):
    """The raw values a number shown with unit may stand for, with their multiplier."""
    if unit in _BYTES:
        return [_BYTES[unit]]
    if unit in _TIME:
        return [_TIME[unit]]
    if unit == "%":
        return [0.01, 1]          # a ratio shown as a percentage, or a percentage
    if unit in _SI:
        return [_SI[unit]]        # "12.3k" launches
    if unit[:1] in _SI and len(unit) > 1:
        return [_SI[unit[:1]], 1]  # "1.2 GFLOP" — or a value already in TFLOP/s
    return [1]                    # a count, "×", or a unit the value is already in


def formats(text, value):
    """True when some number in text is a rounding of value in the unit it is shown in."""
    for shown, half, unit in _tokens(text):
        for mult in _readings(shown, unit):
            if abs(value / mult - shown) <= half * (1 + 1e-9) + 1e-12 * abs(shown):
                return True
    return False


def shows_percent(text, fraction):
    """True when some percentage in text is a rounding of fraction."""
    return any(u == "%" and abs(100 * fraction - v) <= half * (1 + 1e-9)
               for v, half, u in _tokens(text))


def number(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return None


def check_figures(tc, page, doc, name):
    """Every [data-figure] of the page against doc: the pointer resolves, data-value is the
    value there, and the element's visible text (when it has one) is a formatting of it.
    Returns the list of pointers."""
    figs = page.eval("""[...document.querySelectorAll('[data-figure]')].map(e => ({
        p: e.getAttribute('data-figure'), v: e.getAttribute('data-value'),
        t: (e instanceof SVGElement ? e.textContent : e.innerText || '').trim(), tag: e.tagName}))""")
    bad = []
    texts = 0
    for f in figs:
        try:
            want = resolve(doc, f["p"])
        except KeyError as e:
            bad.append("%s: %s" % (f["p"], e))
            continue
        if want is None or isinstance(want, bool) or isinstance(want, str):
            if f["v"] not in (json.dumps(want), "" if want is None else str(want).lower()):
                bad.append("%s: data-value %r, json %r" % (f["p"], f["v"], want))
            continue
        if isinstance(want, (dict, list)):
            bad.append("%s: points at a %s, not a number" % (f["p"], type(want).__name__))
            continue
        got = number(f["v"])
        if got is None or got != want:
            bad.append("%s: data-value %r, json %r" % (f["p"], f["v"], want))
            continue
        if f["t"]:
            texts += 1
            if not formats(f["t"], want):
                bad.append("%s: text %r does not show %r" % (f["p"], f["t"], want))
    tc.assertEqual(bad, [], "%s: %d of %d figures wrong" % (name, len(bad), len(figs)))
    tc.assertGreater(texts, 0, name + ": no figure with visible text")
    derived = check_derived(tc, page, doc, name)
    print("%s: %d figures checked (%d with text), %d shares of two figures"
          % (name, len(figs), texts, derived), file=sys.stderr)
    return [f["p"] for f in figs]


def check_derived(tc, page, doc, name):
    """Every [data-derived="ratio"] element (a share the page computes from two figures,
    data-num / data-den): both pointers resolve, data-value is their quotient and the
    text shows it. Returns how many there are."""
    ds = page.eval("""[...document.querySelectorAll('[data-derived]')].map(e => ({
        k: e.getAttribute('data-derived'), n: e.getAttribute('data-num'),
        d: e.getAttribute('data-den'), v: e.getAttribute('data-value'),
        t: (e.innerText || '').trim()}))""")
    bad = []
    for f in ds:
        try:
            a, b = resolve(doc, f["n"]), resolve(doc, f["d"])
        except KeyError as e:
            bad.append(str(e))
            continue
        if f["k"] != "ratio" or not b or number(f["v"]) != a / b:
            bad.append("%s / %s: %s %r, json %r / %r" % (f["n"], f["d"], f["k"], f["v"], a, b))
        elif f["t"] and not formats(f["t"], a / b):
            bad.append("%s / %s: text %r does not show %r" % (f["n"], f["d"], f["t"], a / b))
    tc.assertEqual(bad, [], "%s: derived figures wrong" % name)
    return len(ds)


def check_clean(tc, page, url):
    """No console error or exception; no request but the page's own file (and data:/blob:
    URLs it made itself)."""
    tc.assertEqual(page.errors(), [], url)
    reqs = page.requests()
    tc.assertIn(url, reqs)
    foreign = [u for u in reqs if u != url and not u.startswith(("data:", "blob:"))]
    tc.assertEqual(foreign, [], "requests other than the page itself")


def load(browser, url, timeout=30):
    """A new tab showing url once the page says it is drawn (data-ready); AssertionError
    when it says it failed (data-error) instead."""
    page = browser.new_page()
    page.goto(url)
    page.wait_for("document.body && (document.body.dataset.ready === '1' || "
                  "document.body.dataset.error !== undefined)", timeout, "data-ready")
    err = page.eval("document.body.dataset.error ?? null")
    if err is not None:
        raise AssertionError("%s says it failed: %s\n%s" % (url, err, "\n".join(page.errors())))
    return page


def check_screenshot(tc, page, name):
    path = os.path.join(SCREENSHOTS, name + ".png")
    data = page.screenshot(path)
    w, h = cdp.png_size(data)
    tc.assertGreaterEqual(w, page.b.width, path)
    tc.assertGreaterEqual(h, page.b.height, path)
    tc.assertGreater(len(data), 20000, path + ": a nearly empty picture")
    print("%s: %dx%d, %d bytes" % (path, w, h, len(data)), file=sys.stderr)
    return path

