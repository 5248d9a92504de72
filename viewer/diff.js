/* diff.js — draws the diff page (`anatomist diff --format html`, docs/html.md) from the
 * embedded {"kind":"diff","diff":<diff --format json>,"flames":{<metric>:<merged flame>}}.
 * Every number is a figure of the diff document (A.fig); rows whose side is missing show
 * a dash. Differential flames: red grew, blue shrank. */
(function () {
  var D; /* the diff document */
  function F(ptr, kind) { return A.fig(D, ptr, kind); }
  function G(ptr) { return A.get(D, ptr); }

  /* base, head, delta, change of a row: figures in its unit. */
  function rowCells(ptr) {
    var k = A.unitKind(G(ptr + "/unit"));
    var delta = F(ptr + "/delta", k === "pct" ? "d-num" : "d-" + k), d = G(ptr + "/delta");
    if (A.num(d) && d !== 0) delta.classList.add(d > 0 ? "grew" : "shrank");
    return [F(ptr + "/base", k), F(ptr + "/head", k), delta, F(ptr + "/ratio", "ratio")];
  }
  var ROW_COLS = [{ h: "base", num: 1 }, { h: "head", num: 1 }, { h: "change", num: 1 }, { h: "change %", num: 1 }];

  function header() {
    var sub = document.getElementById("subtitle");
    document.title = "Anatomist diff \u2014 " + (G("/head/command") || G("/head/path") || "");
    ["base", "head"].forEach(function (side) {
      A.add(sub, A.el("div", null, side + ": ", A.el("code", null, String(G("/" + side + "/path") || "")),
        G("/" + side + "/command") ? [" (", A.el("code", null, G("/" + side + "/command")), ")"] : null,
        " \u00b7 ", F("/" + side + "/steps", "int"), " steps \u00b7 ", F("/" + side + "/duration_ns", "ns"), " traced"));
    });
  }

  function verdict() {
    var s = A.section("verdict", "Verdict");
    s.appendChild(A.el("p", null, String(G("/verdict") || A.DASH)));
    s.appendChild(A.el("p", { "class": "note" }, G("/per_step") ?
      "Time figures are the mean per step." : "Time figures are for the whole run (a side has no steps)."));
    var crossed = A.arr(G("/thresholds")).filter(function (t) { return t.crossed; });
    if (crossed.length)
      s.appendChild(A.el("p", { "class": "warn" }, "Thresholds crossed: " + crossed.map(function (t) { return t.spec; }).join(", ")));
  }

  function rows(id, title, key, nameOf) {
    var s = A.section(id, title);
    s.appendChild(A.table([{ h: "" }].concat(ROW_COLS), A.arr(G("/" + key)).map(function (r, i) {
      return [nameOf(r)].concat(rowCells(A.ptr(key, i)));
    })));
  }
  function swatch(name) {
    return A.el("span", null, A.el("span", { "class": "swatch", style: "background:" + A.COLORS[name] }), name);
  }

  function kernels() {
    var s = A.section("kernel-deltas", "Kernels that changed most (GPU time)");
    s.appendChild(A.table([{ h: "kernel", name: 1 }, { h: "class" }, { h: "status" }].concat(ROW_COLS,
      [{ h: "base count", num: 1 }, { h: "head count", num: 1 }]), A.arr(G("/kernels")).map(function (k, i) {
        var p = A.ptr("kernels", i);
        return [k.name, k["class"] || A.DASH, k.status].concat(rowCells(p),
          [F(p + "/base_count", "int"), F(p + "/head_count", "int")]);
      }), "no kernel time in either run"));
    [["new_kernels", "New kernels (only in head)"], ["vanished_kernels", "Vanished kernels (only in base)"]].forEach(function (x) {
      var l = A.arr(G("/" + x[0]));
      if (!l.length) return;
      s.appendChild(A.el("h3", null, x[1]));
      s.appendChild(A.el("ul", { id: x[0].replace("_", "-") }, l.map(function (n) { return A.el("li", null, A.el("code", null, n)); })));
    });
  }

  function sites() {
    var s = A.section("alloc-sites", "Allocation sites that changed most (bytes live at each peak)");
    s.appendChild(A.table([{ h: "call stack (outermost first)", name: 1 }].concat(ROW_COLS),
      A.arr(G("/alloc_sites")).map(function (x, i) { return [x.site].concat(rowCells(A.ptr("alloc_sites", i))); }),
      "no device allocation in either run"));
  }

  function thresholds() {
    var t = A.arr(G("/thresholds"));
    if (!t.length) return;
    var s = A.section("thresholds", "Thresholds (--fail-on)");
    s.appendChild(A.table([{ h: "threshold" }, { h: "value", num: 1 }, { h: "limit", num: 1 }, { h: "crossed" }],
      t.map(function (x, i) {
        var k = x.relative ? "ratio" : A.unitKind((A.arr(G("/metrics")).filter(function (m) { return m.key === x.key; })[0] || {}).unit);
        return [x.spec, F(A.ptr("thresholds", i, "value"), k), F(A.ptr("thresholds", i, "limit"), k),
          A.el("span", { "class": x.crossed ? "warn" : null }, x.crossed ? "yes" : "no")];
      })));
  }

  A.start(function (data) {
    if (data.kind !== "diff") throw new Error("this page holds no diff data");
    D = data.diff || {};
    header();
    verdict();
    rows("metrics", "Figures", "metrics", function (r) { return r.label || r.key; });
    rows("time-by-class", "GPU time by class" + (G("/per_step") ? " (per step)" : ""), "time_by_class",
      function (r) { return swatch(r["class"]); });
    rows("memory-at-peak", "Memory at the peak by category", "memory_at_peak", function (r) { return swatch(r.category); });
    kernels();
    sites();
    thresholds();
    A.flameSection(data.flames, "Widths are head's; red frames grew from base to head, blue ones shrank. " +
      "Click to zoom, type to search.");
  });
})();
