/* flamepage.js — draws the flame page (`anatomist flame --format html`, docs/html.md) from
 * the embedded {"kind":"flame","flame":<flame json>,"title":...,"trace":...}: a header and
 * the one flame graph across the whole width, drawn by flame.js as on the report page (a
 * merged flame is coloured as on the diff page). */
(function () {
  A.start(function (data) {
    if (data.kind !== "flame") throw new Error("this page holds no flame graph data");
    var f = data.flame || {}, metric = String(f.metric || "flame");
    document.body.classList.add("page-flame");
    document.title = "Anatomist flame \u2014 " + metric + (data.title || data.trace ?
      " \u2014 " + (data.title || data.trace) : "");
    var sub = document.getElementById("subtitle");
    A.add(sub, [data.title ? A.el("div", null, A.el("code", null, String(data.title))) : null,
      data.trace ? A.el("div", null, "trace ", A.el("code", null, String(data.trace))) : null]);
    var s = A.section("flame", "Flame graph: " + metric + (f.unit ? " (" + f.unit + ")" : ""),
      (f.base_total !== undefined ? "Widths are head's; red frames grew from base to head, blue ones shrank. " : "") +
      "Click a frame to zoom, click the bottom frame or \u201cReset zoom\u201d to zoom out; type to search; " +
      "hover a frame for its value and share.");
    A.flame(s, metric, f);
  });
})();
