"""Checks of a flame graph on a loaded page (the `.flame[data-metric=...]` containers of the
DOM contract): it draws, its geometry matches its values, a real click zooms, the reset
unzooms, hover shows the tooltip, and search marks the matching frames."""
import json
import re
import sys

import pages

_RECTS = """((sel) => {
  const c = document.querySelector(sel);
  if (!c) return null;
  return [...c.querySelectorAll('svg rect[data-name]')].map((r, i) => {
    const b = r.getBoundingClientRect(), st = getComputedStyle(r);
    return {i, name: r.getAttribute('data-name'), value: Number(r.getAttribute('data-value')),
            base: r.hasAttribute('data-base') ? Number(r.getAttribute('data-base')) : null,
            x: b.left, y: b.top, w: b.width, h: b.height, fill: st.fill,
            shown: st.display !== 'none' && st.visibility !== 'hidden' && b.width > 0};
  });
})(%s)"""


def sel(metric, diff=False):
    return '.flame%s[data-metric="%s"]' % (".diff" if diff else "", metric)


def rects(page, selector):
    return page.eval(_RECTS % json.dumps(selector))


def rows(rs):
    """The drawn rects by row: {rounded y: [rect]}."""
    out = {}
    for r in rs:
        if r["shown"]:
            out.setdefault(round(r["y"]), []).append(r)
    return out


def root_and_children(tc, rs, what):
    """The root (the largest value, the widest on ties) and the rects of the row next to it."""
    drawn = [r for r in rs if r["shown"]]
    tc.assertTrue(drawn, what + ": no frame drawn")
    root = max(drawn, key=lambda r: (r["value"], r["w"]))
    by_row = rows(drawn)
    ys = sorted(by_row, key=lambda y: abs(y - round(root["y"])))
    tc.assertGreater(len(ys), 1, what + ": only one row of frames")
    return root, by_row[ys[1]], by_row, ys


def _parent(r, row):
    """The rect of row whose x-range holds r (half a pixel of slack), or None."""
    for p in row:
        if p["x"] - 0.5 <= r["x"] and r["x"] + r["w"] <= p["x"] + p["w"] + 0.5:
            return p
    return None


def check_geometry(tc, page, selector, what):
    """Every drawn frame sits on its parent and is as wide as its share of the parent's
    value; the root's children together span the root. Returns the root."""
    rs = rects(page, selector)
    tc.assertIsNotNone(rs, what + ": no " + selector)
    root, kids, by_row, ys = root_and_children(tc, rs, what)
    rw, rv = root["w"], root["value"]
    tc.assertGreater(rw, 100, what + ": the root is not drawn across the graph")
    widths = sum(k["w"] for k in kids)
    values = sum(k["value"] for k in kids)
    tc.assertLessEqual(values, rv, what)
    # Frames too narrow to draw may be left out: they can only be a sliver of the root.
    tc.assertGreaterEqual(values, 0.98 * rv, what + ": the root's children do not add up")
    tc.assertLessEqual(abs(widths - rw), 0.02 * rw + len(kids), "%s: children %.1f px, root %.1f px"
                       % (what, widths, rw))
    ys = sorted(by_row, key=lambda y: abs(y - round(root["y"])))
    under = {}
    for near, far in zip(ys, ys[1:]):
        for r in by_row[far]:
            p = _parent(r, by_row[near])
            tc.assertIsNotNone(p, "%s: frame %r stands on no frame" % (what, r["name"]))
            tc.assertLessEqual(abs(r["w"] - p["w"] * r["value"] / p["value"]), 1.5 + 0.01 * rw,
                               "%s: frame %r is %.1f px for %d of its parent's %.1f px for %d"
                               % (what, r["name"], r["w"], r["value"], p["w"], p["value"]))
            under[p["i"]] = under.get(p["i"], 0) + r["value"]
    over = [(p["name"], p["value"], under[p["i"]]) for row in by_row.values() for p in row
            if under.get(p["i"], 0) > p["value"]]
    tc.assertEqual(over, [], what + ": children worth more than their parent")
    print("%s: %d frames on %d rows, root %d" % (what, len([r for r in rs if r["shown"]]),
                                                 len(ys), rv), file=sys.stderr)
    return root


def _deep_frame(tc, rs, root, what):
    """A frame at least two rows from the root, wide enough to hit, narrower than the
    graph, whose name is drawn once (so it can be found again after a redraw)."""
    root_row = round(root["y"])
    by_row = rows(rs)
    count = {}
    for r in rs:
        if r["shown"]:
            count[r["name"]] = count.get(r["name"], 0) + 1
    cands = [r for y, row in by_row.items() for r in row
             if abs(y - root_row) >= 2 * root["h"] - 1 and 12 <= r["w"] <= 0.9 * root["w"]
             and r["h"] >= 4 and count[r["name"]] == 1]
    tc.assertTrue(cands, what + ": no frame two levels down wide enough to click")
    return max(cands, key=lambda r: (abs(round(r["y"]) - root_row), r["w"]))


def _inner_frame(tc, rs, root, what):
    """The widest frame other than the root with frames on it, ideally one whose children
    do not cover it (its own value then differs from each child's)."""
    by_row = rows(rs)
    ys = sorted(by_row, key=lambda y: abs(y - round(root["y"])))
    cands = []
    for near, far in zip(ys[1:], ys[2:]):
        for p in by_row[near]:
            kids = [r for r in by_row[far] if _parent(r, [p])]
            if kids and 12 <= p["w"] <= 0.9 * root["w"]:
                cands.append((len(kids) > 1 or kids[0]["value"] < p["value"], p["w"], p["i"], p))
    tc.assertTrue(cands, what + ": no frame with frames on it to hover")
    return max(cands)[3]


def _scroll_to(page, selector):
    page.eval("document.querySelector(%r).scrollIntoView({block: 'center'})" % selector)


def _zoom(page, selector):
    return page.eval("document.querySelector(%r).getAttribute('data-zoom')" % selector)


def check_zoom(tc, page, selector, what):
    """A real click on a deep frame zooms to it; .flame-reset unzooms."""
    _scroll_to(page, selector)
    rs = rects(page, selector)
    root, kids, _, _ = root_and_children(tc, rs, what)
    full = root["w"]
    f = _deep_frame(tc, rs, root, what)
    tc.assertIn(_zoom(page, selector) or "", ("",), what + ": zoomed before any click")
    page.click(f["x"] + f["w"] / 2, f["y"] + f["h"] / 2)
    page.wait_for("document.querySelector(%r).getAttribute('data-zoom') === %s"
                  % (selector, _js(f["name"])), 5, "data-zoom after a click on " + f["name"])
    after = [r for r in rects(page, selector) if r["name"] == f["name"] and r["shown"]]
    tc.assertTrue(after, what + ": the clicked frame is gone after zooming")
    widest = max(r["w"] for r in after)
    tc.assertLessEqual(abs(widest - full), 0.01 * full + 1.5,
                       "%s: zoomed %r is %.1f px, the graph %.1f" % (what, f["name"], widest, full))
    reset = page.eval("""(() => { const c = document.querySelector(%r);
        const b = c.querySelector('.flame-reset') || c.parentElement.querySelector('.flame-reset');
        if (!b) return null; b.scrollIntoView({block: 'center'});
        const r = b.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()"""
                      % selector)
    tc.assertIsNotNone(reset, what + ": no .flame-reset")
    page.click(*reset)
    page.wait_for("document.querySelector(%r).getAttribute('data-zoom') === ''" % selector, 5,
                  "data-zoom='' after reset")
    again = [r for r in rects(page, selector) if r["name"] == f["name"] and r["shown"]]
    tc.assertTrue(again and max(r["w"] for r in again) < 0.95 * widest,
                  what + ": still zoomed after reset")
    print("%s: zoomed to %r (%.0f px -> %.0f px)" % (what, f["name"], f["w"], widest),
          file=sys.stderr)
    return f


def _js(s):
    return json.dumps(s)


def check_tooltip(tc, page, selector, what):
    """Hovering a frame shows #tooltip with its name, its value and its share of the root."""
    _scroll_to(page, selector)
    rs = rects(page, selector)
    root, _, _, _ = root_and_children(tc, rs, what)
    f = _inner_frame(tc, rs, root, what)
    page.hover(f["x"] + f["w"] / 2, f["y"] + f["h"] / 2)
    text = page.wait_for("""(() => { const t = document.getElementById('tooltip');
        if (!t) return ''; const s = getComputedStyle(t);
        if (s.display === 'none' || s.visibility === 'hidden' || Number(s.opacity) === 0) return '';
        return t.innerText.includes(%s) ? t.innerText : ''; })()""" % _js(f["name"]), 5,
                         "#tooltip naming " + f["name"])
    rest = text.replace(f["name"], " ")
    tc.assertTrue(pages.formats(rest, f["value"]), "%s: tooltip %r lacks %d" % (what, text, f["value"]))
    share = f["value"] / root["value"]
    tc.assertTrue(pages.shows_percent(rest, share),
                  "%s: tooltip %r lacks its share of the root, %.4f" % (what, text, share))
    page.hover(2, 2)


def _term(rs):
    """A search term: a word of frames' names found in some frames but not all, in the
    most frames, preferably inside a name as well as at its start."""
    names = [r["name"] for r in rs if r["shown"]]
    best = None
    for w in {w for n in names for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]{3,}", n)}:
        hits = sum(w in m for m in names)
        if 0 < hits < len(names) and hits == sum(w.lower() in m.lower() for m in names):
            inside = any(w in m and not m.startswith(w) for m in names)
            key = (inside, hits, len(w), w)
            best = max(best or key, key)
    return (best[3], best[1]) if best else (None, 0)


def check_search(tc, page, selector, what):
    """Typing a word into .flame-search marks exactly the frames whose names contain it."""
    _scroll_to(page, selector)
    rs = rects(page, selector)
    term, want = _term(rs)
    tc.assertIsNotNone(term, what + ": no word to search for")
    found = page.eval("""(() => { const c = document.querySelector(%r);
        const s = c.querySelector('.flame-search') || c.parentElement.querySelector('.flame-search');
        if (!s) return false; s.scrollIntoView({block: 'center'}); s.focus(); return true; })()"""
                      % selector)
    tc.assertTrue(found, what + ": no .flame-search")
    page.type_text(term)
    count = ("""(() => { const c = document.querySelector(%r); const seen = new Set();
        c.querySelectorAll('.match').forEach(e => { const r = e.matches('rect[data-name]') ? e :
            e.querySelector('rect[data-name]'); if (r) seen.add(r); }); return seen.size; })()"""
             % selector)
    try:
        page.wait_for(count, 3, ".match after typing")
    except pages.cdp.CdpError:
        page.press_enter()  # a search box that acts on Enter
        page.wait_for(count, 3, ".match after typing %r and Enter" % term)
    got = page.eval(count)
    tc.assertEqual(got, want, "%s: %r should mark %d frames" % (what, term, want))
    print("%s: search %r marks %d frames" % (what, term, got), file=sys.stderr)
