(function () {
  "use strict";
  // review.html (factjudge.reports.review): the queue, the person's verdicts kept in localStorage
  // under the run's identity, and the review.jsonl export (factjudge.io.review reads it back).
  // Every value is set with textContent: a fact can only ever be text.
  var byId = factjudgeDom.byId, el = factjudgeDom.el, valueText = factjudgeDom.valueText;
  var data = JSON.parse(byId("review-data").textContent);
  var items = data.items, run = data.run;
  var storeKey = "factjudge-review:" + JSON.stringify([run.judge, run.judge_hash, run.config_hash, run.input_hash]);
  var queue = byId("queue"), progress = byId("progress"), hideDone = byId("hide-done");
  var state = load(), current = 0, nodes = [];

  function load() {
    try {
      var saved = JSON.parse(window.localStorage.getItem(storeKey) || "{}");
      return saved && typeof saved === "object" ? saved : {};
    } catch (e) { return {}; }
  }
  function save() {
    try { window.localStorage.setItem(storeKey, JSON.stringify(state)); } catch (e) { /* private mode: kept until the page closes */ }
  }
  function entry(item) { return state[item.key] || (state[item.key] = {}); }

  function factBox(fact, side, item, editing) {
    var box = el("div", "fact");
    if (!fact) { box.appendChild(el("span", "muted", side === "gold" ? "no gold fact close" : "no predicted fact close")); return box; }
    var head = el("div", "fact-head");
    head.appendChild(el("span", "fact-id", side + " " + fact.id));
    head.appendChild(el("span", "fact-type", fact.fact_type));
    box.appendChild(head);
    var fixes = (state[item.key] || {}).correction || {};
    Object.keys(fact).forEach(function (k) {
      if (k === "id" || k === "fact_type" || k === "doc_id") { return; }
      var row = el("div", "fv");
      row.appendChild(el("b", null, k + ": "));
      var fixed = side === "gold" && Object.prototype.hasOwnProperty.call(fixes, k);
      if (editing && side === "gold") {
        var input = el("input");
        input.value = valueText(fixed ? fixes[k] : fact[k]);
        input.dataset.field = k;
        row.appendChild(input);
      } else {
        row.appendChild(document.createTextNode(valueText(fixed ? fixes[k] : fact[k])));
        if (fixed) { row.appendChild(el("span", "fixed", " (corrected; was " + valueText(fact[k]) + ")")); }
      }
      box.appendChild(row);
    });
    return box;
  }

  function render(i, editing) {
    var item = items[i], li = nodes[i], e = state[item.key] || {};
    while (li.firstChild) { li.removeChild(li.firstChild); }
    li.className = "item" + (e.verdict ? " v-" + e.verdict : "") + (i === current ? " current" : "");
    li.hidden = hideDone.checked && !!e.verdict && i !== current;
    var head = el("div", "fact-head");
    head.appendChild(el("span", "fact-id", item.doc_id));
    head.appendChild(el("span", "badge st-" + item.status, item.kind + " (" + item.status + ")"));
    head.appendChild(el("span", "muted", item.reason));
    li.appendChild(head);
    var pair = el("div", "pair");
    pair.appendChild(factBox(item.gold, "gold", item, editing));
    pair.appendChild(factBox(item.predicted, "predicted", item, false));
    li.appendChild(pair);
    var why = [item.reasoning && "reasoning: " + item.reasoning, item.note && "note: " + item.note].filter(Boolean);
    if (why.length) { li.appendChild(el("div", "why", why.join("\n"))); }
    var actions = el("div", "actions");
    function button(label, act, cls) {
      var b = el("button", cls, label);
      b.type = "button";
      b.dataset.act = act;
      b.addEventListener("click", function () { current = i; act === "save" ? saveEdit(i) : decide(act); });
      actions.appendChild(b);
    }
    button("right", "right", "right");
    button("wrong", "wrong", "wrong");
    if (item.kind === "extra") { button("omission: missing from gold", "omission", "omission"); }
    if (item.gold) { editing ? button("save gold", "save", "save") : button("edit gold", "edit", "edit"); }
    button("undo", "undo", "undo");
    actions.appendChild(el("span", "verdict", e.verdict ? "verdict: " + e.verdict : ""));
    li.appendChild(actions);
  }

  function saveEdit(i) {
    var item = items[i], fixes = {};
    nodes[i].querySelectorAll("input[data-field]").forEach(function (input) {
      var k = input.dataset.field, was = item.gold[k], value = input.value;
      if (typeof was !== "string") { try { value = JSON.parse(value); } catch (err) { /* kept as text */ } }
      if (valueText(value) !== valueText(was)) { fixes[k] = value; }
    });
    var e = entry(item);
    if (Object.keys(fixes).length) { e.correction = fixes; } else { delete e.correction; }
    save();
    refresh();
  }

  function decide(act) {
    var item = items[current];
    if (!item) { return; }
    if (act === "edit") { render(current, true); var f = nodes[current].querySelector("input"); if (f) { f.focus(); } return; }
    if (act === "omission" && item.kind !== "extra") { return; }
    if (act === "undo") { delete state[item.key]; }
    else { entry(item).verdict = act; }
    save();
    if (act !== "undo" && current < items.length - 1) { current += 1; }
    refresh();
  }

  function counts() {
    var c = {reviewed: 0, right: 0, wrong: 0, omission: 0, corrections: 0};
    items.forEach(function (item) {
      var e = state[item.key];
      if (!e) { return; }
      if (e.verdict) { c.reviewed += 1; c[e.verdict] += 1; }
      if (e.correction) { c.corrections += 1; }
    });
    return c;
  }

  function refresh() {
    items.forEach(function (_, i) { render(i, false); });
    var c = counts();
    progress.textContent = "reviewed " + c.reviewed + " of " + items.length + ": right " + c.right +
      ", wrong " + c.wrong + ", omission " + c.omission + "; gold corrections " + c.corrections;
    progress.dataset.reviewed = String(c.reviewed);
    if (nodes[current]) { nodes[current].scrollIntoView({block: "nearest"}); }
  }

  function move(step) { current = Math.max(0, Math.min(items.length - 1, current + step)); refresh(); }

  function exportLines() {
    var lines = [], done = items.filter(function (item) { return (state[item.key] || {}).verdict; });
    lines.push(JSON.stringify({_header: {kind: data.kind, version: 1, run: run, items: done.length}}));
    done.forEach(function (item) {
      var e = state[item.key], pair = item.gold && item.predicted;
      var match = pair ? (item.kind === "link" ? e.verdict === "right" : e.verdict === "wrong") : null;
      lines.push(JSON.stringify({id: item.key, doc_id: item.doc_id, kind: item.kind, verdict: e.verdict,
        match: match, judge_match: item.kind === "link", category: item.kind, gold_fact: item.gold,
        predicted_fact: item.predicted, gold_correction: e.correction || null, note: null}));
    });
    return lines.join("\n") + "\n";
  }

  items.forEach(function (_, i) {
    var li = el("li");
    li.addEventListener("click", function (ev) {
      if (ev.target.tagName !== "BUTTON" && ev.target.tagName !== "INPUT" && current !== i) { current = i; refresh(); }
    });
    nodes.push(li);
    queue.appendChild(li);
  });
  var keys = {j: function () { move(1); }, ArrowDown: function () { move(1); },
              k: function () { move(-1); }, ArrowUp: function () { move(-1); },
              r: function () { decide("right"); }, w: function () { decide("wrong"); },
              o: function () { decide("omission"); }, u: function () { decide("undo"); },
              e: function () { decide("edit"); }};
  document.addEventListener("keydown", function (ev) {
    if (ev.target && ev.target.tagName === "INPUT" && ev.target.type !== "checkbox") {
      if (ev.key === "Enter") { saveEdit(current); }
      return;
    }
    if (ev.ctrlKey || ev.metaKey || ev.altKey || !keys[ev.key]) { return; }
    ev.preventDefault();
    keys[ev.key]();
  });
  hideDone.addEventListener("change", refresh);
  byId("export").addEventListener("click", function () {
    var a = el("a");
    a.href = URL.createObjectURL(new Blob([exportLines()], {type: "application/x-ndjson"}));
    a.download = "review.jsonl";
    a.click();
    setTimeout(function () { URL.revokeObjectURL(a.href); }, 1000);
  });
  window.factjudgeReviewExport = exportLines;  // what the Export button saves (tests read it too)
  refresh();
})();
