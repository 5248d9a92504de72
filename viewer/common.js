/* common.js — what every Anatomist page shares (docs/html.md): the embedded data, JSON
 * pointers, formatting of figures, DOM and SVG helpers, deterministic colours, the
 * tooltip, sortable tables and start-up. Vanilla JavaScript, no dependencies.
 *
 * Every number drawn from the document is an element made by A.fig: it carries
 * data-figure (an RFC 6901 pointer into the report or diff document) and data-value (the
 * raw number), so tests compare each with `anatomist report --json`. A number the page
 * computes from two figures (a share) is made by A.derived and names both instead. */
"use strict";
var A = {};

A.CLASSES = ["contraction", "normalization", "elementwise", "communication", "memory", "other"];
A.CATS = ["weights", "optimizer", "gradients", "activations", "temporary", "functionality",
  "unattributed"];
A.COLORS = {
  contraction: "#4e79a7", normalization: "#f28e2b", elementwise: "#59a14f",
  communication: "#b07aa1", memory: "#76b7b2", other: "#bab0ac",
  weights: "#4e79a7", optimizer: "#e15759", gradients: "#f28e2b", activations: "#59a14f",
  temporary: "#edc948", functionality: "#b07aa1", unattributed: "#9d9d9d"
};
/* The SVG namespace, as the HTML parser assigns it (the page holds no address at all). */
A.SVGNS = (function () {
  var d = document.createElement("div");
  d.innerHTML = "<svg></svg>";
  return d.firstChild.namespaceURI;
})();

/* ---- JSON pointers ---- */
A.ptr = function () {
  var s = "";
  for (var i = 0; i < arguments.length; i++)
    s += "/" + String(arguments[i]).replace(/~/g, "~0").replace(/\//g, "~1");
  return s;
};
A.get = function (doc, ptr) {
  if (ptr === "") return doc;
  var parts = ptr.split("/").slice(1), v = doc;
  for (var i = 0; i < parts.length; i++) {
    if (v === null || typeof v !== "object") return undefined;
    v = v[parts[i].replace(/~1/g, "/").replace(/~0/g, "~")];
  }
  return v;
};
A.arr = function (v) { return Array.isArray(v) ? v : []; };
A.num = function (v) { return typeof v === "number" && isFinite(v); };

/* ---- formatting ---- */
A.DASH = "\u2014";
A.fmtBytes = function (b) {
  if (!A.num(b)) return A.DASH;
  var neg = b < 0, v = Math.abs(b), u = 0, units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  if (v < 1024) return (neg ? "-" : "") + v + " B";
  while (v >= 1024 && u < units.length - 1) { v /= 1024; u++; }
  return (neg ? "-" : "") + v.toFixed(v >= 100 ? 0 : v >= 10 ? 1 : 2) + " " + units[u];
};
A.fmtNs = function (ns) {
  if (!A.num(ns)) return A.DASH;
  var neg = ns < 0, v = Math.abs(ns), s;
  if (v >= 1e9) s = A.sig(v / 1e9) + " s";
  else if (v >= 1e6) s = A.sig(v / 1e6) + " ms";
  else if (v >= 1e3) s = A.sig(v / 1e3) + " \u00b5s";
  else s = Math.round(v) + " ns";
  return (neg ? "-" : "") + s;
};
A.sig = function (v) { return v.toFixed(v >= 100 ? 0 : v >= 10 ? 1 : 2); };
A.fmtPct = function (f) {            /* a fraction: 0.215 -> "21.5%" */
  if (!A.num(f)) return A.DASH;
  var p = f * 100, a = Math.abs(p);
  return (a >= 10 || a === 0 ? p.toFixed(1) : a >= 0.1 ? p.toFixed(2) : p.toPrecision(2)) + "%";
};
A.fmtInt = function (v) {
  return A.num(v) ? v.toLocaleString("en-US", { maximumFractionDigits: 0 }) : A.DASH;
};
A.fmtNum = function (v) {
  if (!A.num(v)) return A.DASH;
  var a = Math.abs(v);
  return a >= 1000 || Number.isInteger(v) ? A.fmtInt(v) : v.toPrecision(3);
};
/* kind: bytes, ns, pct (fraction), pct100 (already in percent), int, num, fixed2, ratio (signed
 * fraction: "+5.1%"), and d-bytes, d-ns, d-num for signed deltas. */
A.fmt = function (v, kind) {
  if (!A.num(v)) return A.DASH;
  var sign = v > 0 ? "+" : "";
  switch (kind) {
    case "bytes": return A.fmtBytes(v);
    case "ns": return A.fmtNs(v);
    case "pct": return A.fmtPct(v);
    case "pct100": return A.fmtPct(v / 100);
    case "int": return A.fmtInt(v);
    case "fixed2": return v.toFixed(2);
    case "ratio": return sign + A.fmtPct(v);
    case "d-bytes": return sign + A.fmtBytes(v);
    case "d-ns": return sign + A.fmtNs(v);
    case "d-num": return sign + A.fmtNum(v);
    default: return A.fmtNum(v);
  }
};
/* The kind of a diff row's unit ("ns", "bytes", ...). */
A.unitKind = function (unit) {
  return unit === "ns" || unit === "bytes" ? unit : unit === "ratio" || unit === "share" ? "pct" : "num";
};

/* ---- DOM ---- */
A.el = function (tag, attrs) {
  var e = document.createElement(tag);
  A.attrs(e, attrs);
  for (var i = 2; i < arguments.length; i++) A.add(e, arguments[i]);
  return e;
};
A.svg = function (tag, attrs) {
  var e = document.createElementNS(A.SVGNS, tag);
  A.attrs(e, attrs);
  for (var i = 2; i < arguments.length; i++) A.add(e, arguments[i]);
  return e;
};
A.attrs = function (e, attrs) {
  for (var k in attrs || {})
    if (attrs[k] !== null && attrs[k] !== undefined) e.setAttribute(k, attrs[k]);
};
A.add = function (e, c) {
  if (c === null || c === undefined || c === false) return;
  if (Array.isArray(c)) c.forEach(function (x) { A.add(e, x); });
  else e.appendChild(typeof c === "object" ? c : document.createTextNode(String(c)));
};

/* A figure of the document: a span with data-figure and data-value, or a dash when the
 * document has no number there. */
A.fig = function (doc, ptr, kind, cls) {
  var v = A.get(doc, ptr);
  if (!A.num(v)) return A.el("span", { "class": "none" }, A.DASH);
  return A.el("span", { "class": "fig" + (cls ? " " + cls : ""), "data-figure": ptr,
    "data-value": String(v) }, A.fmt(v, kind));
};
/* A figure the page computes: num / den of two figures of the document (a share). */
A.derived = function (doc, num, den, kind) {
  var a = A.get(doc, num), b = A.get(doc, den);
  if (!A.num(a) || !A.num(b) || b === 0) return A.el("span", { "class": "none" }, A.DASH);
  return A.el("span", { "class": "derived", "data-derived": "ratio", "data-num": num,
    "data-den": den, "data-value": String(a / b) }, A.fmt(a / b, kind || "pct"));
};

/* A section of #app: <section id=id><h2>title</h2><p class=note>note</p>...</section>. */
A.section = function (id, title, note) {
  var s = A.el("section", { id: id }, A.el("h2", null, title), note ? A.el("p", { "class": "note" }, note) : null);
  document.getElementById("app").appendChild(s);
  return s;
};

/* A table: cols = [{h: "GPU time", num: 1}], rows = [[cell, ...]] (cells: nodes, strings,
 * arrays). Click a header to sort by it (numbers by data-value). Without rows, one row
 * says `empty`. */
A.table = function (cols, rows, empty) {
  var tb = A.el("tbody");
  var t = A.el("table", null, A.el("thead", null, A.el("tr", null, cols.map(function (c, i) {
    var th = A.el("th", { "class": c.num ? "num" : null, title: c.title || null }, c.h);
    th.addEventListener("click", function () { A.sortTable(t, i, c.num); });
    return th;
  }))), tb);
  rows.forEach(function (r) {
    tb.appendChild(A.el("tr", null, r.map(function (cell, i) {
      return A.el("td", { "class": cols[i].num ? "num" : cols[i].name ? "name" : null }, cell);
    })));
  });
  if (!rows.length)
    tb.appendChild(A.el("tr", { "class": "empty" }, A.el("td", { colspan: cols.length, "class": "note" }, empty || "none")));
  return t;
};
A.sortTable = function (t, col, num) {
  var tb = t.tBodies[0], rows = Array.prototype.slice.call(tb.rows);
  if (rows.length < 2) return;
  var dir = t.dataset.sortCol === String(col) && t.dataset.sortDir === "desc" ? 1 : -1;
  function key(r) {
    var c = r.cells[col], f = c && c.querySelector("[data-value]");
    if (num) return f ? Number(f.getAttribute("data-value")) : -Infinity;
    return c ? c.textContent : "";
  }
  rows.sort(function (a, b) { var x = key(a), y = key(b); return (x < y ? -1 : x > y ? 1 : 0) * dir; });
  rows.forEach(function (r) { tb.appendChild(r); });
  t.dataset.sortCol = String(col);
  t.dataset.sortDir = dir < 0 ? "desc" : "asc";
};
A.legend = function (names, extra) {
  return A.el("div", { "class": "legend" }, names.map(function (n) {
    return A.el("span", null, A.el("span", { "class": "swatch", style: "background:" + A.COLORS[n] }), n,
      extra ? [" ", extra(n)] : null);
  }));
};

/* ---- colours: fixed for classes and categories, else from the name's hash ---- */
A.hash = function (s) {
  var h = 0x811c9dc5;
  for (var i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 0x01000193) >>> 0; }
  return h;
};
A.ownColor = function (k) {
  return Object.prototype.hasOwnProperty.call(A.COLORS, k) ? A.COLORS[k] : undefined;
};
A.nameColor = function (name) {
  /* own properties only: a frame named "constructor" or "__proto__" is a name like any */
  var c = A.ownColor(name) || A.ownColor(name.replace(/^\[(.*)\]$/, "$1"));
  if (c) return c;
  var h = A.hash(name);
  /* Python frames, "qualname (file.py:line)", in blues; native frames in warm hues */
  if (/\.py:\d+\)$/.test(name))
    return "hsl(" + (200 + h % 25) + "," + (45 + (h >>> 8) % 25) + "%," + (60 + (h >>> 16) % 14) + "%)";
  return "hsl(" + (h % 50) + "," + (55 + (h >>> 8) % 30) + "%," + (58 + (h >>> 16) % 16) + "%)";
};

/* ---- the tooltip (#tooltip) ---- */
A.tip = {
  show: function (ev, content) {
    var t = document.getElementById("tooltip");
    t.textContent = "";
    A.add(t, content);
    t.hidden = false;
    A.tip.move(ev);
  },
  move: function (ev) {
    var t = document.getElementById("tooltip");
    if (t.hidden) return;
    var x = ev.clientX + 14, y = ev.clientY + 14, w = t.offsetWidth, h = t.offsetHeight;
    if (x + w > window.innerWidth - 4) x = Math.max(4, ev.clientX - w - 14);
    if (y + h > window.innerHeight - 4) y = Math.max(4, ev.clientY - h - 14);
    t.style.left = x + "px";
    t.style.top = y + "px";
  },
  hide: function () { document.getElementById("tooltip").hidden = true; }
};
A.hover = function (node, content) {
  node.addEventListener("mouseenter", function (ev) { A.tip.show(ev, content()); });
  node.addEventListener("mousemove", A.tip.move);
  node.addEventListener("mouseleave", A.tip.hide);
};

/* ---- chart axes: nice ticks ---- */
A.ticks = function (max, n, base) {
  if (!(max > 0)) return [0];
  var raw = max / n, mag = Math.pow(10, Math.floor(Math.log10(raw / base))) * base, r = raw / mag;
  var step = (r <= 1 ? 1 : r <= 2 ? 2 : r <= 5 ? 5 : 10) * mag, out = [];
  for (var i = 0; i * step <= max * 1.0001; i++) out.push(i * step);
  return out;
};
/* Byte ticks in whole KiB/MiB/GiB multiples. */
A.byteTicks = function (max, n) {
  var unit = max >= 1 << 30 ? 1 << 30 : max >= 1 << 20 ? 1 << 20 : max >= 1024 ? 1024 : 1;
  return A.ticks(max / unit, n, 1).map(function (v) { return v * unit; }).filter(function (v) {
    return unit > 1 || v === Math.round(v);
  });
};
/* Left axis (y) and bottom axis (x) into g; scales map values to pixels. */
A.axes = function (g, box, yt, ys, yfmt, xt, xs, xfmt) {
  var ax = A.svg("g", { "class": "axis" });
  yt.forEach(function (v) {
    var y = ys(v);
    ax.appendChild(A.svg("line", { "class": "grid", x1: box.l, x2: box.r, y1: y, y2: y }));
    ax.appendChild(A.svg("text", { x: box.l - 6, y: y + 4, "text-anchor": "end" }, yfmt(v)));
  });
  ax.appendChild(A.svg("line", { x1: box.l, x2: box.r, y1: box.b, y2: box.b }));
  ax.appendChild(A.svg("line", { x1: box.l, x2: box.l, y1: box.t, y2: box.b }));
  xt.forEach(function (v) {
    var x = xs(v);
    ax.appendChild(A.svg("line", { x1: x, x2: x, y1: box.b, y2: box.b + 4 }));
    ax.appendChild(A.svg("text", { x: x, y: box.b + 16, "text-anchor": "middle" }, xfmt(v)));
  });
  g.insertBefore(ax, g.firstChild);
};

/* ---- start-up ---- */
A.data = function () {
  var s = document.getElementById("anatomist-data");
  return JSON.parse(s ? s.textContent : "{}");
};
/* Parses the data, draws the page with render(data), then sets body[data-ready]; an
 * exception sets body[data-error] and is shown at the top of the page. */
A.start = function (render) {
  function go() {
    try {
      render(A.data());
    } catch (e) {
      document.body.dataset.error = String(e && e.message || e);
      var app = document.getElementById("app");
      app.insertBefore(A.el("p", { "class": "warn" }, "This page could not be drawn completely: " +
        document.body.dataset.error), app.firstChild);
      if (window.console) console.error(e);
    }
    document.body.dataset.ready = "1";
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", go);
  else go();
};
