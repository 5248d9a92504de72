/* report.js — draws the report page (`anatomist html`, docs/html.md) from the embedded
 * {"kind":"report","report":<report --json>,"flames":{...},"timeline":{...}}. Every
 * number is a figure of the report document (A.fig); a part the trace lacks (no steps,
 * no GPU records, no GEMMs, no OOM, an imported PyTorch trace) is drawn as a dash or a
 * note, never an error. */
(function () {
  var R; /* the report document */
  function F(ptr, kind, cls) { return A.fig(R, ptr, kind, cls); }
  function G(ptr) { return A.get(R, ptr); }

  function header(data) {
    var t = G("/trace") || {}, p = t.process || {}, cmd = A.arr(p.argv).join(" ") || p.exe || "";
    var dev = A.arr(t.devices).map(function (d) { return d.name; }).filter(function (d, i, all) {
      return d && all.indexOf(d) === i;
    }).join(", ");
    document.title = "Anatomist \u2014 " + (cmd || t.path || "report");
    var sub = document.getElementById("subtitle");
    A.add(sub, [cmd ? A.el("div", null, A.el("code", null, cmd)) : null,
      A.el("div", null, "trace ", A.el("code", null, String(t.path || "")),
        t.source === "kineto" ? " (PyTorch profiler trace)" : null,
        dev ? " \u00b7 " + dev : null, " \u00b7 ", F("/trace/duration_ns", "ns"), " traced")]);
    if (t.ended && t.ended !== "exit" && t.source !== "kineto")
      A.add(sub, A.el("div", { "class": "warn" }, "The trace ended " + t.ended +
        ": it holds what was written before the process stopped."));
    if (G("/trace/dropped") > 0)
      A.add(sub, A.el("div", { "class": "warn" }, F("/trace/dropped", "int"),
        " records were dropped: the figures below are lower bounds."));
  }

  function card(label, big, sub, bad) {
    return A.el("div", { "class": "card" + (bad ? " bad" : "") }, A.el("div", { "class": "label" }, label),
      A.el("div", { "class": "big" }, big), sub ? A.el("div", { "class": "sub" }, sub) : null);
  }
  function cards() {
    var s = A.section("summary", "Summary"), c = A.el("div", { id: "cards" });
    s.appendChild(c);
    if (G("/steps/count") > 0)
      c.appendChild(card("Step time", F("/steps/median_ns", "ns"),
        ["median of ", F("/steps/count", "int"), " steps (", G("/steps/method"), ")"]));
    else
      c.appendChild(card("Step time", A.el("span", { "class": "none" }, A.DASH),
        ["no steps found; ", F("/trace/duration_ns", "ns"), " traced"]));
    var gpu = G("/gpu/activities") > 0;
    c.appendChild(card("GPU busy", gpu ? F("/gpu/busy_ns", "ns") : A.DASH,
      gpu ? [F("/gpu/busy_share", "pct"), " of the GPU span ", F("/gpu/span_ns", "ns")] : "no GPU activity recorded"));
    c.appendChild(card("GPU idle", gpu ? F("/gpu/idle_ns", "ns") : A.DASH,
      gpu ? [F("/gpu/idle_gaps_count", "int"), " gaps of at least ", F("/gpu/idle_gap_min_ns", "ns")] : null));
    c.appendChild(card("Peak memory", F("/memory/peak_bytes", "bytes"),
      ["at ", F("/memory/peak_at_ns", "ns"), ", ", F("/memory/peak_count", "int"), " allocations"]));
    if (A.num(G("/time/contraction/mfu")))
      c.appendChild(card("MFU", F("/time/contraction/mfu", "pct"),
        [F("/time/contraction/achieved_tflops", "num"), " TFLOP/s achieved in GEMMs (",
          G("/time/contraction/precision") || "?", ")"]));
    if (G("/memory/live_at_end_bytes") > 0)
      c.appendChild(card("Live at the end", F("/memory/live_at_end_bytes", "bytes"),
        [F("/memory/live_at_end_count", "int"), " allocations"]));
    if (G("/oom"))
      c.appendChild(card("Out of memory", F("/oom/requested_bytes", "bytes"),
        [G("/oom/api") + " failed ", G("/oom/where") || "", "; short by ", F("/oom/shortfall_bytes", "bytes")], true));
  }

  function steps() {
    var s = A.section("steps", "GPU time by class in each step");
    var list = A.arr(G("/steps/list"));
    if (!list.length) {
      s.appendChild(A.el("p", { "class": "note" }, "No steps were found" +
        (G("/steps/why") ? ": " + G("/steps/why") : "") + ". The whole trace's GPU time by class is below."));
    } else {
      s.appendChild(A.el("p", { "class": "note" }, ["Steps found by ", G("/steps/method"), "; GPU time of the ",
        "activities each step issued. Outside any step: ", F("/steps/outside_ns", "ns"), "."]));
      s.appendChild(stepBars(list));
    }
    s.appendChild(A.legend(A.CLASSES));
    var rows = A.CLASSES.map(function (c) {
      return [A.el("span", null, A.el("span", { "class": "swatch", style: "background:" + A.COLORS[c] }), c),
        F(A.ptr("time", "by_class", c), "ns"), F(A.ptr("time", "by_class_share", c), "pct"),
        F(A.ptr("time", "by_class_count", c), "int")];
    });
    s.appendChild(A.el("h3", null, "Whole trace"));
    s.appendChild(A.table([{ h: "class" }, { h: "GPU time", num: 1 }, { h: "share of busy", num: 1 },
      { h: "activities", num: 1 }], rows));
    var ph = G("/time/phases");
    if (ph && ph.method !== "none")
      s.appendChild(A.el("p", { "class": "note" }, ["Phases (", ph.method, "): forward ",
        F("/time/phases/forward_ns", "ns"), ", backward ", F("/time/phases/backward_ns", "ns"), ", optimizer ",
        F("/time/phases/optimizer_ns", "ns"), ", undecided ", F("/time/phases/undecided_ns", "ns"),
        "; backward/forward ", F("/time/phases/backward_to_forward", "num"), "."]));
  }
  function stepBars(list) {
    var W = 1000, H = 260, box = { l: 70, r: W - 10, t: 10, b: H - 26 }, max = 0;
    list.forEach(function (st) {
      var sum = 0;
      A.CLASSES.forEach(function (c) { sum += Number(st.by_class && st.by_class[c]) || 0; });
      max = Math.max(max, sum);
    });
    var yt = A.ticks(max, 5, 1), top = Math.max(max, yt[yt.length - 1]) || 1;
    var ys = function (v) { return box.b - (box.b - box.t) * v / top; };
    var slot = (box.r - box.l) / list.length, bw = Math.max(1, slot * 0.8);
    var svg = A.svg("svg", { viewBox: "0 0 " + W + " " + H, width: "100%", role: "img" }), g = A.svg("g");
    svg.appendChild(g);
    var every = Math.ceil(list.length / 25);
    var xt = list.map(function (st, i) { return i; }).filter(function (i) { return i % every === 0; });
    A.axes(g, box, yt, ys, A.fmtNs, xt, function (i) { return box.l + slot * (i + 0.5); },
      function (i) { return String(list[i].index); });
    list.forEach(function (st, i) {
      var y = box.b, total = 0;
      A.CLASSES.forEach(function (c) { total += Number(st.by_class && st.by_class[c]) || 0; });
      A.CLASSES.forEach(function (c) {
        var v = Number(st.by_class && st.by_class[c]) || 0;
        if (!(v > 0)) return;
        var h = (box.b - box.t) * v / top, ptr = A.ptr("steps", "list", i, "by_class", c);
        var r = A.svg("rect", { "class": "bar cls-" + c, x: (box.l + slot * i + (slot - bw) / 2).toFixed(2),
          y: (y - h).toFixed(2), width: bw.toFixed(2), height: h.toFixed(2), fill: A.COLORS[c],
          "data-figure": ptr, "data-value": String(st.by_class[c]) });
        A.hover(r, function () {
          return [A.el("b", null, "step " + st.index + ": " + c), A.el("br"), A.fmtNs(v) + " \u2014 " +
            A.fmtPct(v / total) + " of the step's GPU time; step duration " + A.fmtNs(st.duration_ns)];
        });
        g.appendChild(r);
        y -= h;
      });
    });
    return svg;
  }

  /* Stacked, step-shaped areas (a point's bytes hold until the next point; the last to the
   * end), the steps as bands, the peak and the OOM marked. Drag across the chart to zoom
   * into a stretch of time; double-click or the button to see it all again. */
  function timeline(tl) {
    var s = A.section("memory-timeline", "Device memory over time, by category");
    tl = tl || {};
    var pts = A.arr(tl.points), cats = A.arr(tl.categories).length ? tl.categories : A.CATS;
    var W = 1000, H = 320, box = { l: 78, r: W - 12, t: 22, b: H - 26 };
    var tend = Math.max(Number(G("/trace/duration_ns")) || 0, pts.length ? pts[pts.length - 1][0] : 0) || 1;
    var peak = Number(tl.peak_bytes) || 0, ymax = 0;
    pts.forEach(function (p) { ymax = Math.max(ymax, p[1]); });
    var yt = A.byteTicks(Math.max(ymax, peak) * 1.08 || 1, 5), top = Math.max(ymax * 1.08, yt[yt.length - 1]) || 1;
    var ys = function (v) { return box.b - (box.b - box.t) * v / top; };
    var svg = A.svg("svg", { viewBox: "0 0 " + W + " " + H, width: "100%", role: "img" }), g = A.svg("g");
    var view = [0, tend], cur, brush, from = null;
    svg.appendChild(g);
    function xs(t) {
      return box.l + (box.r - box.l) * (Math.min(Math.max(t, view[0]), view[1]) - view[0]) / (view[1] - view[0]);
    }
    function tAt(x) {
      return view[0] + (view[1] - view[0]) * Math.min(Math.max((x - box.l) / (box.r - box.l), 0), 1);
    }
    function draw() {
      g.textContent = "";
      var st = A.ticks(view[1] - view[0], 8, 1)[1] || 1, xt = [];
      for (var v = Math.ceil(view[0] / st); v * st <= view[1]; v++) xt.push(v * st);
      A.axes(g, box, yt, ys, A.fmtBytes, xt, xs, A.fmtNs);
      A.arr(G("/steps/list")).forEach(function (st, i) {
        var x0 = xs(st.start_ns), x1 = xs(st.start_ns + st.duration_ns);
        if (x1 - x0 < 0.5) return;
        g.appendChild(A.svg("rect", { "class": "step-band", x: x0, y: box.t, width: x1 - x0, height: box.b - box.t,
          fill: i % 2 ? "#eef1f5" : "#f6f8fa" }));
        if (x1 - x0 > 16) g.appendChild(A.svg("text", { "class": "step-label", x: (x0 + x1) / 2, y: box.t - 4,
          "text-anchor": "middle" }, (x1 - x0 > 60 ? "step " : "") + st.index));
      });
      var base = pts.map(function () { return 0; });
      cats.forEach(function (c, k) {
        var up = "", down = "";
        pts.forEach(function (p, i) {
          var x0 = xs(p[0]).toFixed(2), x1 = xs(i + 1 < pts.length ? pts[i + 1][0] : tend).toFixed(2);
          var lo = ys(base[i]).toFixed(2), hi = ys(base[i] + (Number(p[2 + k]) || 0)).toFixed(2);
          up += (i ? "L" : "M") + x0 + "," + hi + "L" + x1 + "," + hi;
          down = "L" + x1 + "," + lo + "L" + x0 + "," + lo + down;
          base[i] += Number(p[2 + k]) || 0;
        });
        g.appendChild(A.svg("path", { "class": "cat-" + c, d: pts.length ? up + down + "Z" : "M0,0",
          fill: A.nameColor(c), "data-category": c }));
      });
      marker("peak-marker", "/memory/peak_bytes", Number(tl.peak_ns) || 0, ys(peak), "peak " + A.fmtBytes(peak));
      if (A.num(tl.oom_ns) && G("/oom"))
        marker("oom-marker", "/oom/time_ns", tl.oom_ns, box.t, "out of memory at " + A.fmtNs(G("/oom/time_ns")));
      cur = A.svg("line", { "class": "cursor", y1: box.t, y2: box.b, x1: -10, x2: -10 });
      brush = A.svg("rect", { "class": "brush", y: box.t, height: box.b - box.t, x: 0, width: 0, fill: "rgba(47,109,181,.15)" });
      g.appendChild(cur);
      g.appendChild(brush);
    }
    /* A marker at time t: a line from the axis to y, a dot, a label; kept but hidden when
     * the zoomed view leaves it out. */
    function marker(cls, ptr, t, y, label) {
      var x = xs(t), right = x > W - 200, oom = cls === "oom-marker";
      g.appendChild(A.svg("g", { "class": cls, "data-figure": ptr, "data-value": String(G(ptr)),
        visibility: t < view[0] || t > view[1] ? "hidden" : null },
        A.svg("line", { x1: x, x2: x, y1: box.b, y2: oom ? box.t - 12 : y }), oom ? null : A.svg("circle", { cx: x, cy: y, r: 3.5 }),
        A.svg("text", { x: x + (right ? -6 : 6), y: oom ? box.b - 8 : y - 6, "text-anchor": right ? "end" : "start" }, label)));
    }
    function svgX(ev) { var r = svg.getBoundingClientRect(); return (ev.clientX - r.left) * W / r.width; }
    svg.addEventListener("mousedown", function (ev) { from = svgX(ev); ev.preventDefault(); });
    window.addEventListener("mouseup", function (ev) {
      if (from === null) return;
      var a = Math.min(from, svgX(ev)), b = Math.max(from, svgX(ev));
      from = null;
      if (b - a > 4 && tAt(b) > tAt(a)) { view = [tAt(a), tAt(b)]; draw(); }
      else A.attrs(brush, { width: 0 });
    });
    function resetView() { view = [0, tend]; draw(); }
    svg.addEventListener("dblclick", resetView);
    svg.addEventListener("mousemove", function (ev) {
      var x = svgX(ev), t = tAt(x), lo = 0, hi = pts.length - 1;
      if (from !== null) A.attrs(brush, { x: Math.min(from, x), width: Math.abs(x - from) });
      if (x < box.l || x > box.r || !pts.length || t < pts[0][0]) { A.attrs(cur, { x1: -10, x2: -10 }); A.tip.hide(); return; }
      while (lo < hi) { var m = (lo + hi + 1) >> 1; if (pts[m][0] <= t) lo = m; else hi = m - 1; }
      var p = pts[lo];
      A.attrs(cur, { x1: x, x2: x });
      A.tip.show(ev, [A.el("b", null, A.fmtNs(t) + ": " + A.fmtBytes(p[1])), cats.map(function (c, k) {
        return p[2 + k] ? [A.el("br"), c + " " + A.fmtBytes(p[2 + k])] : null;
      })]);
    });
    svg.addEventListener("mouseleave", function () { A.attrs(cur, { x1: -10, x2: -10 }); A.tip.hide(); });
    draw();
    var reset = A.el("button", { type: "button", "class": "timeline-reset" }, "Show all");
    reset.addEventListener("click", resetView);
    s.appendChild(A.el("p", { "class": "note" }, "Drag across the chart to zoom into a stretch of time; ",
      "double-click or ", reset, " to see it all. Shaded bands are the steps."));
    s.appendChild(svg);
    if (!pts.length) s.appendChild(A.el("p", { "class": "note" }, "No device allocation in the trace."));
    s.appendChild(A.legend(cats, function (c) { return F(A.ptr("memory", "at_peak", c), "bytes"); }));
    s.appendChild(A.el("p", { "class": "note" }, "Legend: bytes of each category at the peak. Hover the chart for the split at any moment."));
  }

  function memoryTables() {
    var s = A.section("memory-categories", "Memory by category at the peak",
      G("/memory/per_param/params") ? null : "The parameter count is not known: no bytes per parameter.");
    var oom = !!G("/oom"), cols = [{ h: "category" }, { h: "at the peak", num: 1 }, { h: "share", num: 1 },
      { h: "allocations", num: 1 }, { h: "bytes/param", num: 1 }];
    if (oom) cols.push({ h: "live at the OOM", num: 1 });
    s.appendChild(A.table(cols, A.CATS.map(function (c) {
      var row = [A.el("span", null, A.el("span", { "class": "swatch", style: "background:" + A.COLORS[c] }), c),
        F(A.ptr("memory", "at_peak", c), "bytes"), A.derived(R, A.ptr("memory", "at_peak", c), "/memory/peak_bytes"),
        F(A.ptr("memory", "at_peak_count", c), "int"), F(A.ptr("memory", "per_param", c), "fixed2")];
      if (oom) row.push(F(A.ptr("oom", "live", c), "bytes"));
      return row;
    })));
    var pp = G("/memory/per_param") || {};
    if (pp.params)
      s.appendChild(A.el("p", { "class": "note" }, [F("/memory/per_param/params", "int"), " parameters; weights: ",
        pp.weights_kind || A.DASH, "; optimizer: ", pp.optimizer_kind || A.DASH, "; gradients: ", pp.gradients_kind || A.DASH]));
    var sites = A.arr(G("/memory/top_sites"));
    A.section("memory-sites", "Allocation sites at the peak").appendChild(A.table([{ h: "bytes", num: 1 }, { h: "share", num: 1 }, { h: "allocations", num: 1 }, { h: "call stack", name: 1 }],
      sites.map(function (x, i) {
        return [F(A.ptr("memory", "top_sites", i, "bytes"), "bytes"), F(A.ptr("memory", "top_sites", i, "share"), "pct"),
          F(A.ptr("memory", "top_sites", i, "count"), "int"), stackText(x)];
      })));
  }
  function stackText(x) {
    if (x.driver_only) return "(made by the driver: no call stack)";
    return A.arr(x.stack).slice(0, 4).map(function (f) {
      return f.function || (f.module ? String(f.module).replace(/.*\//, "") + "+0x" + Number(f.offset).toString(16) : "?");
    }).join(" \u2190 ");
  }

  function oomSection() {
    var o = G("/oom");
    if (!o) return;
    var s = A.section("oom", "Out of memory");
    s.appendChild(A.el("p", null, [o.api + " of ", F("/oom/requested_bytes", "bytes"), " failed (" + o.error + ") ",
      o.where || "", ", at ", F("/oom/time_ns", "ns"), ": the device had ", F("/oom/free_bytes", "bytes"), " free of ",
      F("/oom/total_bytes", "bytes"), " (" + o.kind + "); ", F("/oom/live_bytes", "bytes"),
      " were live. A technique must save ", F("/oom/needed_bytes", "bytes"), "."]));
    s.appendChild(A.el("p", { "class": "note" }, "Asked from: " + stackText(o)));
    s.appendChild(A.el("h3", null, "What would fit"));
    s.appendChild(A.table([{ h: "technique" }, { h: "saves", num: 1 }, { h: "enough" }, { h: "how", name: 1 }],
      A.arr(o.fits).map(function (f, i) {
        return [f.name, F(A.ptr("oom", "fits", i, "bytes_saved"), "bytes"), f.covers ? "yes" : "no", f.detail];
      }), "no technique applies"));
  }

  function kernels() {
    var s = A.section("kernels", "Top kernels by GPU time");
    var k = A.arr(G("/gpu/kernels_by_time"));
    if (k.length || G("/gpu/activities") > 0) {
      s.appendChild(A.table([{ h: "kernel", name: 1 }, { h: "class" }, { h: "count", num: 1 }, { h: "GPU time", num: 1 },
        { h: "mean", num: 1 }, { h: "share of busy", num: 1 }], k.map(function (x, i) {
          var p = function (f) { return A.ptr("gpu", "kernels_by_time", i, f); };
          return [x.name || x.mangled || "?", x["class"] || A.DASH, F(p("count"), "int"), F(p("total_ns"), "ns"),
            F(p("mean_ns"), "ns"), F(p("share"), "pct")];
        })));
      return;
    }
    s.appendChild(A.el("p", { "class": "note" }, "No GPU activity was recorded: kernels by launches."));
    s.appendChild(A.table([{ h: "kernel", name: 1 }, { h: "class" }, { h: "launches", num: 1 }, { h: "share", num: 1 }],
      A.arr(G("/kernels")).map(function (x, i) {
        return [x.name || x.mangled || "?", x["class"] || A.DASH, F(A.ptr("kernels", i, "count"), "int"),
          F(A.ptr("kernels", i, "share"), "pct")];
      })));
  }

  function gemms() {
    var s = A.section("gemms", "GEMMs (cuBLAS, cuBLASLt) by shape");
    var g = A.arr(G("/gemms"));
    if (g.length)
      s.appendChild(A.el("p", { "class": "note" }, [F("/libraries/gemm_calls", "int"), " calls, ",
        F("/libraries/gemm_shapes", "int"), " shapes, ", F("/libraries/gemm_gpu_ns", "ns"), " of GPU time (",
        F("/libraries/gemm_share", "pct"), " of kernel time), ", F("/libraries/gemm_tflops", "num"), " TFLOP/s."]));
    s.appendChild(A.table([{ h: "api" }, { h: "m", num: 1 }, { h: "n", num: 1 }, { h: "k", num: 1 }, { h: "batch", num: 1 },
      { h: "op" }, { h: "types (A B C / compute)" }, { h: "precision" }, { h: "count", num: 1 }, { h: "GPU time", num: 1 },
      { h: "TFLOP/s", num: 1 }, { h: "% of peak", num: 1 }], g.map(function (x, i) {
        var p = function (f) { return A.ptr("gemms", i, f); };
        return [x.api, F(p("m"), "int"), F(p("n"), "int"), F(p("k"), "int"), F(p("batch"), "int"), x.trans || "",
          [x.a_type, x.b_type, x.c_type].map(function (t) { return t || "?"; }).join(" ") + " / " + (x.compute_type || "?"),
          x.precision || "", F(p("count"), "int"), F(p("gpu_ns"), "ns"), F(p("tflops"), "num"), F(p("peak_pct"), "pct100")];
      }), "no GEMM calls recorded"));
  }

  function collectives() {
    var s = A.section("collectives", "NCCL collectives");
    s.appendChild(A.table([{ h: "operation" }, { h: "type" }, { h: "bytes/call", num: 1 }, { h: "ranks", num: 1 },
      { h: "calls", num: 1 }, { h: "GPU time", num: 1 }, { h: "algorithm" }, { h: "algbw GB/s", num: 1 },
      { h: "busbw GB/s", num: 1 }], A.arr(G("/collectives")).map(function (x, i) {
        var p = function (f) { return A.ptr("collectives", i, f); };
        return [x.op, x.dtype || A.DASH, F(p("bytes"), "bytes"), F(p("ranks"), "int"), F(p("count"), "int"),
          F(p("gpu_ns"), "ns"), [x.algorithm, x.protocol].filter(Boolean).join(" ") || A.DASH,
          F(p("algbw_gbps"), "num"), F(p("busbw_gbps"), "num")];
      }), "no NCCL collectives recorded"));
  }

  function advice() {
    var s = A.section("advice-section", "Advice");
    var list = A.el("ul", { id: "advice", "class": "advice" });
    A.arr(G("/advice")).forEach(function (a, i) {
      list.appendChild(A.el("li", null, A.el("b", null, String(a.technique || a.topic || "").replace(/_/g, " ")),
        ": ", a.text || "", A.num(a.bytes_saved) ? [" (saves ", F(A.ptr("advice", i, "bytes_saved"), "bytes"), ")"] : null));
    });
    A.arr(G("/findings")).forEach(function (f, i) {
      list.appendChild(A.el("li", { "class": "finding" }, A.el("b", null, String(f.id || "").replace(/_/g, " ")), ": ",
        A.num(f.count) ? [F(A.ptr("findings", i, "count"), "int"), " calls, "] : null,
        A.num(f.gpu_ns) ? [F(A.ptr("findings", i, "gpu_ns"), "ns"), " of GPU time. "] : null, f.advice || ""));
    });
    if (!list.children.length) list.appendChild(A.el("li", { "class": "note" }, "Nothing to advise from this trace."));
    s.appendChild(list);
  }

  A.start(function (data) {
    if (data.kind !== "report") throw new Error("this page holds no report data");
    R = data.report || {};
    header(data);
    cards();
    steps();
    timeline(data.timeline);
    memoryTables();
    oomSection();
    A.flameSection(data.flames, "Click a frame to zoom, click the bottom frame to zoom out; type to search.");
    kernels();
    gemms();
    collectives();
    advice();
  });
})();
