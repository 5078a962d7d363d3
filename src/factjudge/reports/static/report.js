(function () {
  "use strict";
  var byId = factjudgeDom.byId, el = factjudgeDom.el, valueText = factjudgeDom.valueText;
  function hashParams() { return new URLSearchParams(location.hash.slice(1)); }

  // ------------------------------------------------------------ failing (and TP) facts table
  var type = byId("filter-type"), status = byId("filter-status"), rowDoc = byId("filter-doc");
  var rows = document.querySelectorAll("#facts tbody tr");
  var shown = byId("shown");
  function statusOk(s) {
    if (status.value === "all") { return true; }
    if (status.value === "") { return s === "FN" || s === "FP" || s === "ERROR"; }
    return s === status.value;
  }
  function apply() {
    var n = 0;
    rows.forEach(function (row) {
      var ok = statusOk(row.dataset.status) && (!type.value || row.dataset.type === type.value) &&
               (!rowDoc.value || row.dataset.doc === rowDoc.value);
      row.hidden = !ok;
      if (ok) { n += 1; }
    });
    shown.textContent = String(n);
  }
  // report.html#status=FN&type=revenue&rowdoc=D opens with those filters
  function filtersFromHash(params) {
    var touched = false;
    [["type", type], ["status", status], ["rowdoc", rowDoc]].forEach(function (p) {
      if (params.has(p[0])) { p[1].value = params.get(p[0]); touched = true; }
    });
    return touched;
  }
  [type, status, rowDoc].forEach(function (s) { s.addEventListener("change", apply); });
  filtersFromHash(hashParams());
  apply();

  // ------------------------------------------------------------ document view
  var dataEl = byId("doc-data");
  var docs = dataEl ? JSON.parse(dataEl.textContent) : [];
  var NS = "http://www.w3.org/2000/svg";
  var view = byId("docview"), svg = byId("doc-links"), goldCol = byId("doc-gold-facts"),
      predCol = byId("doc-pred-facts"), docSelect = byId("doc-select"), docType = byId("doc-type"),
      showNear = byId("doc-near"), align = byId("doc-align"), docInfo = byId("doc-info"),
      textBox = byId("doc-text");
  if (!view || !docs.length) { return; }
  var index = new Map();
  docs.forEach(function (d, i) {
    index.set(d.doc_id, i);
    var o = document.createElement("option");
    o.value = String(i);
    o.textContent = d.label;
    docSelect.appendChild(o);
  });
  var current = null, cards = {gold: [], predicted: []}, hover = new Map(), marks = new Map();

  // the document's text, in pieces (reports/docview.py): a piece some facts' evidence covers is a
  // <mark> naming them; hovering a fact lights its marks
  function showText(d) {
    while (textBox.firstChild) { textBox.removeChild(textBox.firstChild); }
    marks = new Map();
    textBox.hidden = !d.text;
    if (!d.text) { return; }
    var ids = function (k) { return (k[0] === "g" ? d.gold : d.predicted)[Number(k.slice(1))].id; };
    d.text.forEach(function (piece) {
      if (!piece[1].length) { textBox.appendChild(document.createTextNode(piece[0])); return; }
      var m = el("mark", piece[1].some(function (k) { return k[0] === "p"; }) ? "ev ev-p" : "ev ev-g", piece[0]);
      m.dataset.keys = piece[1].join(" ");
      m.title = piece[1].map(function (k) { return (k[0] === "g" ? "gold " : "predicted ") + ids(k); }).join(", ");
      piece[1].forEach(function (k) { if (!marks.has(k)) { marks.set(k, []); } marks.get(k).push(m); });
      textBox.appendChild(m);
    });
    if (d.text_cut) { textBox.appendChild(el("p", "muted", "\u2026 " + d.text_cut + " more characters not shown")); }
  }


  function makeCard(f, side, i) {
    var c = el("div", "fact st-" + f.status);
    c.dataset.key = (side === "gold" ? "g" : "p") + i;
    c.dataset.type = f.fact_type;
    var head = el("div", "fact-head");
    head.appendChild(el("span", "fact-id", f.id));
    head.appendChild(el("span", "fact-type", f.fact_type));
    head.appendChild(el("span", "badge st-" + f.status, f.status));
    if (f.closest) {
      head.appendChild(el("span", "fact-near", "closest " + f.closest.id + " (" + f.closest.score + ")"));
    }
    if (f.source) {
      head.appendChild(el("span", "fact-src " + (f.source === "found in the source" ? "src-found" : "src-missing"),
                          f.source + (f.ungrounded ? " (no span)" : "")));
    }
    c.appendChild(head);
    var body = el("div", "fact-fields");
    Object.keys(f.fields).forEach(function (k) {
      var s = el("span", "fv");
      s.appendChild(el("b", null, k + ": "));
      s.appendChild(document.createTextNode(valueText(f.fields[k])));
      body.appendChild(s);
    });
    c.appendChild(body);
    var why = [];
    if (f.note) { why.push("note: " + f.note); }
    if (f.reasoning) { why.push("reasoning: " + f.reasoning); }
    if (why.length) {
      c.title = why.join("\n");
      var det = el("details");
      det.appendChild(el("summary", null, f.note ? "reasoning and note" : "reasoning"));
      why.forEach(function (w) { det.appendChild(el("p", null, w)); });
      c.appendChild(det);
    }
    c.addEventListener("mouseenter", function () { highlight(c.dataset.key, true); });
    c.addEventListener("mouseleave", function () { highlight(c.dataset.key, false); });
    return c;
  }

  function highlight(key, on) {
    (hover.get(key) || []).forEach(function (x) { x.classList.toggle("hl", on); });
    (marks.get(key) || []).forEach(function (x) { x.classList.toggle("hl", on); });
    var self = view.querySelector('[data-key="' + key + '"]');
    if (self) { self.classList.toggle("hl", on); }
  }

  function predictedOrder(d) {
    // aligned: each predicted fact next to the first gold fact it is linked to, else to the
    // gold fact it is closest to, else after them all (input order breaks ties)
    var anchor = d.predicted.map(function () { return Infinity; });
    var nearAnchor = anchor.slice();
    d.pairs.forEach(function (p) { anchor[p[1]] = Math.min(anchor[p[1]], p[0]); });
    d.near.forEach(function (n) { nearAnchor[n[1]] = Math.min(nearAnchor[n[1]], n[0] + 0.5); });
    anchor = anchor.map(function (a, j) { return a === Infinity ? nearAnchor[j] : a; });
    var order = d.predicted.map(function (_, j) { return j; });
    if (align.checked) {
      order.sort(function (a, b) { return (anchor[a] - anchor[b]) || (a - b); });
    }
    return order;
  }

  function show(i) {
    current = docs[i];
    docSelect.value = String(i);
    var types = new Set();
    current.gold.concat(current.predicted).forEach(function (f) { types.add(f.fact_type); });
    var keep = docType.value;
    while (docType.options.length > 1) { docType.remove(1); }
    Array.from(types).sort().forEach(function (t) {
      var o = el("option", null, t); o.value = t; docType.appendChild(o);
    });
    docType.value = types.has(keep) ? keep : "";
    docInfo.textContent = current.info;
    showText(current);
    [goldCol, predCol].forEach(function (col) { while (col.firstChild) { col.removeChild(col.firstChild); } });
    cards = {gold: [], predicted: []};
    current.gold.forEach(function (f, gi) {
      var c = makeCard(f, "gold", gi); cards.gold.push(c); goldCol.appendChild(c);
    });
    current.predicted.forEach(function (f, pj) { cards.predicted.push(makeCard(f, "predicted", pj)); });
    predictedOrder(current).forEach(function (pj) { predCol.appendChild(cards.predicted[pj]); });
    filterCards();
  }

  function filterCards() {
    var t = docType.value;
    cards.gold.concat(cards.predicted).forEach(function (c) { c.hidden = !!t && c.dataset.type !== t; });
    draw();
  }

  function head(c) { return c.querySelector(".fact-head").getBoundingClientRect(); }
  function point(c, right, box) {
    var r = c.getBoundingClientRect(), h = head(c);
    return {x: (right ? r.right : r.left) - box.left, y: h.top + h.height / 2 - box.top};
  }
  function curve(a, b, cls, title, keys) {
    var p = document.createElementNS(NS, "path");
    var dx = Math.max(30, (b.x - a.x) / 2);
    p.setAttribute("d", "M" + a.x.toFixed(1) + "," + a.y.toFixed(1) + " C" + (a.x + dx).toFixed(1) +
                   "," + a.y.toFixed(1) + " " + (b.x - dx).toFixed(1) + "," + b.y.toFixed(1) + " " +
                   b.x.toFixed(1) + "," + b.y.toFixed(1));
    p.setAttribute("class", cls);
    var t = document.createElementNS(NS, "title");
    t.textContent = title;
    p.appendChild(t);
    svg.appendChild(p);
    keys.forEach(function (k, n) {
      var other = view.querySelector('[data-key="' + keys[1 - n] + '"]');
      if (!hover.has(k)) { hover.set(k, []); }
      hover.get(k).push(p, other);
    });
  }

  function draw() {
    while (svg.firstChild) { svg.removeChild(svg.firstChild); }
    hover = new Map();
    var box = view.getBoundingClientRect();
    svg.setAttribute("width", String(Math.round(box.width)));
    svg.setAttribute("height", String(Math.round(box.height)));
    var links = 0, near = 0;
    if (!current) { return; }
    current.pairs.forEach(function (p) {
      var g = cards.gold[p[0]], q = cards.predicted[p[1]];
      if (!g || !q || g.hidden || q.hidden) { return; }
      curve(point(g, true, box), point(q, false, box), "link",
            current.gold[p[0]].id + " \u2194 " + current.predicted[p[1]].id + " (matched)",
            [g.dataset.key, q.dataset.key]);
      links += 1;
    });
    if (showNear.checked) {
      current.near.forEach(function (n) {
        var g = cards.gold[n[0]], q = cards.predicted[n[1]];
        if (!g || !q || g.hidden || q.hidden) { return; }
        var who = n[2] === "g" ? current.gold[n[0]].id : current.predicted[n[1]].id;
        curve(point(g, true, box), point(q, false, box), "near",
              current.gold[n[0]].id + " \u2026 " + current.predicted[n[1]].id + ": closest to " + who +
              " (similarity " + n[3] + ", not matched)", [g.dataset.key, q.dataset.key]);
        near += 1;
      });
    }
    svg.setAttribute("data-links-drawn", String(links));
    svg.setAttribute("data-near-drawn", String(near));
  }

  function fromHash(scroll) {
    var params = hashParams();
    if (filtersFromHash(params)) { apply(); }
    if (params.has("doc")) {
      var id = params.get("doc");
      if (index.has(id)) {
        show(index.get(id));
        var top = byId("document-view").getBoundingClientRect().top;
        if (scroll && (top < 0 || top > window.innerHeight - 200)) { byId("document-view").scrollIntoView(); }
      } else {
        docInfo.textContent = "Document " + id + " is not embedded in this report (see results.jsonl).";
      }
    }
  }

  docSelect.addEventListener("change", function () { show(Number(docSelect.value)); });
  docType.addEventListener("change", filterCards);
  showNear.addEventListener("change", draw);
  align.addEventListener("change", function () { show(Number(docSelect.value)); });
  view.addEventListener("toggle", draw, true);
  var pending = false;
  window.addEventListener("resize", function () {
    if (!pending) { pending = true; requestAnimationFrame(function () { pending = false; draw(); }); }
  });
  window.addEventListener("hashchange", function () { fromHash(true); });
  // the worst document with facts on both sides (reports/docview.py first_with_both_sides)
  show(Number(view.dataset.start) || 0);
  fromHash(true);
})();
