/* flame.js — interactive flame graphs (docs/html.md) from the flame documents of flame.h:
 * {"metric","unit","total",("base_total"),"names":[...],"nodes":[[name,parent,total,self
 * (,base_total,base_self)],...]}, nodes in preorder, node 0 the root.
 *
 * One SVG per metric, the root at the bottom, one rect per drawn frame (data-name,
 * data-value = the frame's total, data-base on diff flames). Click a frame to zoom: the
 * container's data-zoom becomes its name and it spans the full width; click the root or
 * the reset button to unzoom. The search box marks matching frames (class match) and says
 * what share of the whole they hold. Diff flames (class diff) are coloured by head - base:
 * red grew, blue shrank; widths follow head, or base with the selector. Frames narrower
 * than half a pixel (and what is above them) are not drawn, so a large trace stays fast. */
A.FLAME_ROW = 17;
A.FLAME_MIN_PX = 0.5;
A.FLAME_MAX_RECTS = 6000;
A.FLAME_TITLES = {
  "gpu-time": "GPU time by host call stack",
  "peak-memory": "Device memory live at the peak, by allocation stack",
  "leaked-memory": "Device memory still allocated at the end, by allocation stack",
  "alloc-bytes": "Bytes allocated, by allocation stack",
  "alloc-count": "Allocations, by allocation stack"
};
A.flames = [];

A.flameDiffColor = function (head, base) {
  var d = head - base, m = Math.max(head, base);
  if (!m || !d) return "rgb(226,226,226)";
  var v = Math.round(226 - 176 * Math.sqrt(Math.min(1, Math.abs(d) / m)));
  return d > 0 ? "rgb(255," + v + "," + v + ")" : "rgb(" + v + "," + v + ",255)";
};

A.flame = function (parent, metric, fj) {
  fj = fj || {};
  var nodes = A.arr(fj.nodes), names = A.arr(fj.names), n = nodes.length;
  var diff = fj.base_total !== undefined || (n > 0 && nodes[0].length > 4);
  var kind = fj.unit === "ns" ? "ns" : fj.unit === "bytes" ? "bytes" : "int";
  var kids = [], depth = new Int32Array(n), maxDepth = 0, basis = 2;
  for (var i = 0; i < n; i++) {
    kids.push([]);
    if (i > 0) {
      var p = nodes[i][1];
      kids[p].push(i);
      depth[i] = depth[p] + 1;
      if (depth[i] > maxDepth) maxDepth = depth[i];
    }
  }
  function name(i) { return String(names[nodes[i][0]]); }
  function val(i) { return Number(nodes[i][basis]) || 0; }
  var zoom = 0, matched = null;

  var search = A.el("input", { type: "search", "class": "flame-search", placeholder: "Search frames",
    "aria-label": "search frames" });
  var match = A.el("span", { "class": "flame-match" });
  var reset = A.el("button", { type: "button", "class": "flame-reset" }, "Reset zoom");
  var sel = diff ? A.el("select", { "class": "flame-basis", "aria-label": "widths from" },
    A.el("option", { value: "2" }, "widths: head"), A.el("option", { value: "4" }, "widths: base")) : null;
  var svg = A.svg("svg", { role: "img" });
  var total = n ? A.el("span", { "class": "flame-total", "data-value": String(nodes[0][2]) },
    "total " + A.fmt(nodes[0][2], kind), diff ? " (base " + A.fmt(nodes[0][4], kind) + ")" : null) : null;
  var box = A.el("div", { "class": "flame" + (diff ? " diff" : ""), "data-metric": metric, "data-zoom": "" },
    A.el("div", { "class": "bar-tools" }, A.el("h3", null, A.FLAME_TITLES[metric] || metric), total,
      search, match, reset, sel),
    n ? svg : A.el("p", { "class": "note" }, "Nothing to draw: the trace has no " + metric + " data."));
  parent.appendChild(box);
  if (!n) return box;

  function frame(g, i, x, w, H) {
    var nm = name(i), h = Number(nodes[i][2]) || 0;
    var r = A.svg("rect", { x: x.toFixed(2), y: H - (depth[i] + 1) * A.FLAME_ROW, width: w.toFixed(2),
      height: A.FLAME_ROW - 1, fill: diff ? A.flameDiffColor(h, Number(nodes[i][4]) || 0) : A.nameColor(nm),
      "data-name": nm, "data-value": String(nodes[i][2]), "data-i": i,
      "data-base": diff ? String(nodes[i][4]) : null, "class": matched && matched[i] ? "match" : null });
    g.appendChild(r);
    var chars = Math.floor((w - 6) / 6.3);
    if (chars >= 3)
      g.appendChild(A.svg("text", { x: (x + 3).toFixed(2), y: H - depth[i] * A.FLAME_ROW - 5 },
        nm.length > chars ? nm.slice(0, chars - 1) + "\u2026" : nm));
  }
  function draw() {
    var W = Math.max(320, Math.floor(box.clientWidth - 22) || 1000), H = (maxDepth + 1) * A.FLAME_ROW;
    A.attrs(svg, { width: W, height: H, viewBox: "0 0 " + W + " " + H });
    svg.textContent = "";
    var g = A.svg("g"), count = 0, t = val(zoom), scale = t > 0 ? W / t : 0;
    for (var a = zoom; ; a = nodes[a][1]) {
      frame(g, a, 0, W, H);
      if (a === 0) break;
    }
    (function walk(i, x) {
      kids[i].forEach(function (c) {
        var w = val(c) * scale;
        if (w >= A.FLAME_MIN_PX && count < A.FLAME_MAX_RECTS) {
          count++;
          frame(g, c, x, w, H);
          walk(c, x);
        }
        x += w;
      });
    })(zoom, 0);
    svg.appendChild(g);
  }
  function tip(i) {
    var h = Number(nodes[i][2]) || 0, all = Number(nodes[0][2]) || 0, out = [A.el("b", null, name(i)), A.el("br")];
    out.push(A.fmt(h, kind) + (all ? " \u2014 " + A.fmtPct(h / all) + " of all" : ""));
    if (zoom && i !== zoom && val(zoom)) out.push(", " + A.fmtPct(val(i) / val(zoom)) + " of " + name(zoom));
    if (Number(nodes[i][3]) && nodes[i][3] !== h) out.push([A.el("br"), "self " + A.fmt(nodes[i][3], kind)]);
    if (diff) {
      var b = Number(nodes[i][4]) || 0;
      out.push([A.el("br"), "base " + A.fmt(b, kind) + ", head " + A.fmt(h, kind) + ", change " +
        A.fmt(h - b, "d-" + (kind === "int" ? "num" : kind)) + (b ? " (" + A.fmt((h - b) / b, "ratio") + ")" : "")]);
    }
    return out;
  }
  function setZoom(i) {
    zoom = i;
    box.dataset.zoom = i === 0 ? "" : name(i);
    draw();
  }
  function doSearch() {
    var q = search.value.trim().toLowerCase();
    matched = null;
    match.textContent = "";
    delete match.dataset.value;
    if (q) {
      matched = new Uint8Array(n);
      var covered = new Uint8Array(n), sum = 0, hits = 0;
      for (var i = 0; i < n; i++) {
        matched[i] = name(i).toLowerCase().indexOf(q) >= 0 ? 1 : 0;
        hits += matched[i];
        if (matched[i] && !(i > 0 && covered[nodes[i][1]])) sum += val(i);
        covered[i] = matched[i] || (i > 0 && covered[nodes[i][1]]) ? 1 : 0;
      }
      match.dataset.value = String(val(0) ? sum / val(0) : 0);
      match.textContent = hits + " frame" + (hits === 1 ? "" : "s") + " match: " + A.fmt(sum, kind) +
        (val(0) ? ", " + A.fmtPct(sum / val(0)) + " of all" : "");
    }
    draw();
  }
  svg.addEventListener("click", function (ev) {
    var r = ev.target.closest && ev.target.closest("rect");
    if (r) setZoom(Number(r.getAttribute("data-i")));
  });
  svg.addEventListener("mouseover", function (ev) {
    var r = ev.target.closest && ev.target.closest("rect");
    if (r) A.tip.show(ev, tip(Number(r.getAttribute("data-i"))));
  });
  svg.addEventListener("mousemove", A.tip.move);
  svg.addEventListener("mouseleave", A.tip.hide);
  reset.addEventListener("click", function () { setZoom(0); });
  search.addEventListener("input", doSearch);
  if (sel) sel.addEventListener("change", function () { basis = Number(sel.value); draw(); });
  draw();
  A.flames.push(draw);
  return box;
};

/* One flame per metric present in flames, in the order of A.FLAME_TITLES. */
A.flameSection = function (flames, note) {
  var s = A.section("flames", "Flame graphs", note);
  Object.keys(A.FLAME_TITLES).concat(Object.keys(flames || {})).forEach(function (m, i, all) {
    if (flames && flames[m] && all.indexOf(m) === i) A.flame(s, m, flames[m]);
  });
  return s;
};

(function () {
  var pending = 0;
  window.addEventListener("resize", function () {
    clearTimeout(pending);
    pending = setTimeout(function () { A.flames.forEach(function (d) { d(); }); }, 150);
  });
})();
