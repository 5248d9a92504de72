/* ranks.js — draws the job page (`anatomist html DIR`, docs/ranks.md) from the embedded
 * {"kind":"ranks","ranks":<the `report --json` job document, anatomist.ranks/1>}: the
 * merged time anatomy, memory, the per-rank table, the stragglers with why, and the
 * collective skew. Every number is a figure of the job document (A.fig). */
(function () {
  var J; /* the job document */
  function F(ptr, kind, cls) { return A.fig(J, ptr, kind, cls); }
  function G(ptr) { return A.get(J, ptr); }
  function rank(v) { return A.num(v) ? String(v) : "?"; }

  function header() {
    var sub = document.getElementById("subtitle"), hosts = A.arr(G("/job/hosts"));
    document.title = "Anatomist \u2014 job of " + G("/job/ranks") + " ranks";
    A.add(sub, A.el("div", null, F("/job/ranks", "int"), " ranks (world size ",
      A.num(G("/job/world_size")) ? F("/job/world_size", "int") : A.DASH, ") on ", hosts.length,
      " host" + (hosts.length === 1 ? "" : "s"), G("/job/exe") ? [" \u00b7 ", A.el("code", null, G("/job/exe"))] : null,
      " \u00b7 median step ", F("/job/step_median_ns", "ns")));
    var miss = A.arr(G("/job/missing_ranks"));
    if (miss.length)
      A.add(sub, A.el("div", { "class": "warn" }, "no trace of rank" + (miss.length > 1 ? "s " : " ") + miss.join(", ")));
  }

  function time() {
    var s = A.section("time", "Where GPU time goes (sums over the ranks)");
    s.appendChild(A.el("p", null, "busy ", F("/time/busy_ns", "ns"), ", idle ", F("/time/idle_ns", "ns"),
      "; collectives: ", F("/collectives/calls", "int"), " calls, ", F("/collectives/host_ns", "ns"),
      " in the calls (host), ", F("/collectives/gpu_ns", "ns"), " of their kernels (GPU)"));
    s.appendChild(A.table([{ h: "class" }, { h: "GPU time", num: 1 }, { h: "activities", num: 1 }],
      A.CLASSES.map(function (c) {
        return [A.el("span", null, A.el("span", { "class": "swatch", style: "background:" + A.COLORS[c] }), c),
          F("/time/by_class/" + c, "ns"), F("/time/by_class_count/" + c, "int")];
      })));
  }

  function memory() {
    var s = A.section("memory", "Device memory (each rank's own peak)");
    s.appendChild(A.el("p", null, "largest peak ", F("/memory/peak_max_bytes", "bytes"), " (rank ",
      rank(G("/memory/peak_max_rank")), "), sum of the peaks ", F("/memory/peak_sum_bytes", "bytes"),
      ", live at the end ", F("/memory/live_at_end_bytes", "bytes")));
  }

  function perRank() {
    var s = A.section("ranks", "Per rank", "Step times: mean and median; work (the step outside " +
      "collectives) and collective time: median per step. Stragglers are marked.");
    s.appendChild(A.table([{ h: "rank", num: 1 }, { h: "host" }, { h: "pid", num: 1 }, { h: "steps", num: 1 },
      { h: "mean step", num: 1 }, { h: "median step", num: 1 }, { h: "work", num: 1 },
      { h: "collective", num: 1 }, { h: "GPU busy", num: 1 }, { h: "peak", num: 1 },
      { h: "records", num: 1 }, { h: "last arrivals", num: 1 }],
      A.arr(G("/ranks")).map(function (r, i) {
        var p = A.ptr("ranks", i), mark = r.straggler ? "warn" : null;
        return [F(p + "/rank", "int", mark), r.host || A.DASH, F(p + "/pid", "int"), F(p + "/steps", "int"),
          F(p + "/step_mean_ns", "ns"), F(p + "/step_median_ns", "ns"), F(p + "/work_median_ns", "ns", mark),
          F(p + "/collective_median_ns", "ns", mark), F(p + "/gpu_busy_ns", "ns"), F(p + "/peak_bytes", "bytes"),
          F(p + "/records", "int"), F(p + "/last_arrivals", "int")];
      })));
  }

  function stragglers() {
    var s = A.section("stragglers", "Stragglers", "A rank whose value " + (G("/stragglers/rule") || "") +
      " (basis: " + (G("/stragglers/basis") || "") + ").");
    var what = { step: "median step time", work: "work per step", collective: "collective time per step" };
    var l = A.arr(G("/stragglers/list"));
    s.appendChild(A.table([{ h: "rank", num: 1 }, { h: "metric" }, { h: "value", num: 1 },
      { h: "others' median", num: 1 }, { h: "threshold", num: 1 }, { h: "why" }],
      l.map(function (x, i) {
        var p = A.ptr("stragglers", "list", i);
        return [F(p + "/rank", "int"), what[x.metric] || x.metric, F(p + "/value_ns", "ns", "warn"),
          F(p + "/others_median_ns", "ns"), F(p + "/threshold_ns", "ns"),
          x.direction === "low" ? "arrives last: the others wait for it" : "longer than the others"];
      }), "none"));
  }

  function skew() {
    var s = A.section("skew", "Collective skew", "Collectives matched across ranks by communicator " +
      "and sequence number; arrival is the call's start (clock: " + (G("/skew/clock") || "none") +
      "). Delay: the last arrival minus the second-latest.");
    if (A.num(G("/skew/late_rank")))
      s.appendChild(A.el("p", null, "rank ", F("/skew/late_rank", "int", "warn"),
        " delayed collectives most: the others wait for it. Matched: ", F("/skew/matched", "int"), "."));
    s.appendChild(A.table([{ h: "collective" }, { h: "seq", num: 1 }, { h: "bytes", num: 1 },
      { h: "spread", num: 1 }, { h: "delay", num: 1 }, { h: "last", num: 1 }, { h: "first", num: 1 },
      { h: "dur last", num: 1 }, { h: "dur median", num: 1 }],
      A.arr(G("/skew/collectives")).map(function (c, i) {
        var p = A.ptr("skew", "collectives", i);
        return [c.op || A.DASH, F(p + "/seq", "int"), F(p + "/bytes", "bytes"), F(p + "/arrival_spread_ns", "ns"),
          F(p + "/delay_ns", "ns"), F(p + "/last_rank", "int"), F(p + "/first_rank", "int"),
          F(p + "/dur_last_ns", "ns"), F(p + "/dur_median_ns", "ns")];
      }), "no collective matched"));
  }

  A.start(function (data) {
    if (data.kind !== "ranks") throw new Error("this page holds no job data");
    J = data.ranks || {};
    header();
    time();
    memory();
    perRank();
    stragglers();
    skew();
  });
})();
