"""Readable reports of an evaluation: ``report.md`` and a self-contained ``report.html``.

Pure string templates (every value through ``html.escape``), charts as inline SVG and a few lines
of inline script for filtering, so the HTML opens offline, from a mail attachment or a CI artifact.
"""
from __future__ import annotations

import html
import json
from typing import Any, Mapping, Sequence

from .models import OUTPUT_FIELDS

ROW_STATUSES = ("FN", "FP", "ERROR")
_NOT_SHOWN = frozenset({"id", "fact_type", *OUTPUT_FIELDS})
COLORS = {"precision": "#4e79a7", "recall": "#f28e2b", "f1": "#59a14f"}


def collect_rows(line: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per FN/FP/ERROR fact of a result line, with what a reader needs to check it."""
    rows = []
    for side in ("gold", "predicted"):
        for fact in line.get(f"{side}_facts", []):
            if fact.get("status") not in ROW_STATUSES:
                continue
            rows.append({
                "doc_id": line["doc_id"], "side": side, "id": fact["id"],
                "fact_type": fact["fact_type"], "status": fact["status"],
                # id and fact_type have their own columns
                "fact": {k: v for k, v in fact.items() if k not in _NOT_SHOWN},
                "matched_ids": fact.get("matched_ids") or [],
                "reasoning": fact.get("reasoning") or "", "note": fact.get("description") or "",
            })
    return rows


def fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def fmt_ci(ci: Sequence[float] | None) -> str:
    return "n/a" if not ci else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def _fact_text(fact: Mapping[str, Any]) -> str:
    return json.dumps(fact, ensure_ascii=False, separators=(", ", ": "))


def _usage_text(usage: Mapping[str, Any]) -> list[tuple[str, str]]:
    label = {"seconds": "seconds (per document, summed: overlaps under concurrency)"}
    return [(label.get(k, k), f"{v:,.3f}" if isinstance(v, float) else f"{v:,}")
            for k, v in usage.items()]


def _truncation_note(shown: int, total: int) -> str:
    if shown >= total:
        return ""
    return (f"Showing the first {shown:,} of {total:,} FN/FP/ERROR facts (in dataset order); "
            "all of them are in results.jsonl.")


# --------------------------------------------------------------------------- markdown


def _md_cell(value: Any) -> str:
    # escaped: Markdown renderers pass raw HTML through, and facts are untrusted text
    text = html.escape(value if isinstance(value, str) else str(value), quote=False)
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").replace("\r", " ")


def _md_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
    return out + [""]


def render_markdown(summary: Mapping[str, Any], worst: Sequence[Mapping[str, Any]],
                    rows: Sequence[Mapping[str, Any]], rows_total: int) -> str:
    micro, macro, ci = summary["micro"], summary["macro"], summary["ci95"]
    boot = summary.get("bootstrap", {})
    out = ["# factjudge evaluation report", "",
           f"{summary['documents']:,} documents, judge `{_judge_label(summary)}`. "
           f"95% intervals: bootstrap over documents ({boot.get('resamples', '?')} resamples, "
           f"seed {boot.get('seed', '?')}).", ""]
    out += _md_table(["", "precision", "recall", "F1"], [
        ["micro", *(fmt(micro[k]) for k in ("precision", "recall", "f1"))],
        ["micro 95% CI", *(fmt_ci(ci[k]) for k in ("precision", "recall", "f1"))],
        ["macro", *(fmt(macro[k]) for k in ("precision", "recall", "f1"))],
        ["macro: documents defined", *(str(macro["defined"][k]) for k in ("precision", "recall", "f1"))],
    ])
    out += ["## Totals", ""]
    out += _md_table(["TP gold", "FN", "TP predicted", "FP", "ERROR", "out of scope (gold)",
                      "out of scope (predicted)"],
                     [[micro[k] for k in ("tp_gold", "fn", "tp_predicted", "fp", "errors",
                                          "out_of_scope_gold", "out_of_scope_predicted")]])
    out += ["## By fact type", ""]
    out += _md_table(["fact_type", "TP gold", "FN", "TP predicted", "FP", "ERROR", "precision",
                      "recall", "F1"],
                     [[t, c["tp_gold"], c["fn"], c["tp_predicted"], c["fp"], c["errors"],
                       fmt(c["precision"]), fmt(c["recall"]), fmt(c["f1"])]
                      for t, c in summary["by_fact_type"].items()])
    out += ["## Reconciliation conflicts", ""]
    out += (_md_table(["rule", "count"], list(summary["conflicts"].items()))
            if summary["conflicts"] else ["None.", ""])
    out += ["## Worst documents", ""]
    out += (_md_table(["doc_id", "precision", "recall", "F1", "FN", "FP", "ERROR"],
                      [[w["doc_id"], fmt(w["precision"]), fmt(w["recall"]), fmt(w["f1"]), w["fn"],
                        w["fp"], w["errors"]] for w in worst])
            if worst else ["Every document is fully correct.", ""])
    if summary.get("skipped"):
        out += ["## Skipped input lines", ""]
        out += _md_table(["file", "line", "error"],
                         [[s["file"], s["line"], s["error"]] for s in summary["skipped"]])
    out += ["## FN, FP and ERROR facts", ""]
    note = _truncation_note(len(rows), rows_total)
    if note:
        out += [note, ""]
    out += (_md_table(["doc_id", "side", "id", "fact_type", "status", "fact", "matched_ids",
                       "reasoning", "note"],
                      [[r["doc_id"], r["side"], r["id"], r["fact_type"], r["status"],
                        _fact_text(r["fact"]), ", ".join(r["matched_ids"]), r["reasoning"],
                        r["note"]] for r in rows])
            if rows else ["None.", ""])
    out += ["## Usage", ""]
    out += _md_table(["", "value"], _usage_text(summary["usage"]))
    return "\n".join(out).rstrip("\n") + "\n"


def _judge_label(summary: Mapping[str, Any]) -> str:
    judge = summary.get("judge") or {}
    return " ".join(str(judge[k]) for k in ("name", "model") if judge.get(k)) or "?"


# --------------------------------------------------------------------------- HTML

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2em auto;
max-width:1200px;padding:0 1em;color:#222}
h1{font-size:1.6em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0}th,td{border:1px solid #ddd;padding:3px 8px;
text-align:left;vertical-align:top}th{background:#f4f4f4}td.num{text-align:right;
font-variant-numeric:tabular-nums}
.cards{display:flex;flex-wrap:wrap;gap:12px}.card{border:1px solid #ddd;border-radius:6px;
padding:10px 16px;min-width:150px}.card .label{color:#666;font-size:.85em}
.card .value{font-size:1.8em;font-weight:600}.card .ci{color:#666;font-size:.85em}
code{font-size:.9em;word-break:break-word}.status-FN,.status-FP{color:#b3261e}
.status-ERROR{color:#8a5300;font-weight:600}.muted{color:#666}
#facts td{max-width:380px}.filters{margin:.5em 0}.filters label{margin-right:1em}
"""

SCRIPT = """
(function () {
  var type = document.getElementById("filter-type");
  var status = document.getElementById("filter-status");
  var rows = document.querySelectorAll("#facts tbody tr");
  var shown = document.getElementById("shown");
  function apply() {
    var n = 0;
    rows.forEach(function (row) {
      var ok = (!type.value || row.dataset.type === type.value) &&
               (!status.value || row.dataset.status === status.value);
      row.hidden = !ok;
      if (ok) { n += 1; }
    });
    shown.textContent = String(n);
  }
  // A link like report.html#status=FN&type=revenue opens with that filter.
  var params = new URLSearchParams(location.hash.slice(1));
  if (params.has("type")) { type.value = params.get("type"); }
  if (params.has("status")) { status.value = params.get("status"); }
  type.addEventListener("change", apply);
  status.addEventListener("change", apply);
  apply();
})();
"""


def e(value: Any) -> str:
    return html.escape(value if isinstance(value, str) else str(value), quote=True)


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]], numeric_from: int = 1,
           attrs: str = "") -> str:
    head = "".join(f"<th>{e(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f'<td class="num">{e(c)}</td>' if i >= numeric_from else f"<td>{e(c)}</td>"
                         for i, c in enumerate(row)) + "</tr>"
        for row in rows)
    return f"<table{attrs}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def bar_chart(by_type: Mapping[str, Mapping[str, Any]]) -> str:
    """Horizontal grouped bars of P/R/F1 per fact type, as inline SVG."""
    label_w, bar_w, bar_h, gap = 170, 360, 11, 10
    group_h = 3 * bar_h + gap
    legend_h = 24
    height = legend_h + max(1, len(by_type)) * group_h + 20
    width = label_w + bar_w + 60
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'role="img" aria-label="precision, recall and F1 by fact type" '
             f'font-family="system-ui,sans-serif" font-size="12">']
    for i, (name, color) in enumerate(COLORS.items()):
        x = label_w + i * 110
        parts.append(f'<rect x="{x}" y="4" width="12" height="12" fill="{color}"/>'
                     f'<text x="{x + 16}" y="14">{e(name)}</text>')
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        x = label_w + tick * bar_w
        parts.append(f'<line x1="{x:.1f}" y1="{legend_h}" x2="{x:.1f}" y2="{height - 16}" '
                     f'stroke="#e3e3e3"/><text x="{x:.1f}" y="{height - 4}" text-anchor="middle" '
                     f'fill="#666">{tick:g}</text>')
    for g, (fact_type, c) in enumerate(by_type.items()):
        y0 = legend_h + g * group_h
        label = fact_type if len(fact_type) <= 24 else fact_type[:23] + "\u2026"
        parts.append(f'<text x="{label_w - 8}" y="{y0 + 1.5 * bar_h + 4}" text-anchor="end">'
                     f'<title>{e(fact_type)}</title>{e(label)}</text>')
        for j, (metric, color) in enumerate(COLORS.items()):
            y, v = y0 + j * bar_h, c.get(metric)
            if v is None:
                parts.append(f'<text x="{label_w + 4}" y="{y + bar_h - 2}" fill="#999" '
                             f'font-size="10">{metric} n/a</text>')
                continue
            parts.append(f'<rect x="{label_w}" y="{y}" width="{v * bar_w:.1f}" height="{bar_h - 1}" '
                         f'fill="{color}"><title>{e(fact_type)} {metric} {v:.3f}</title></rect>'
                         f'<text x="{label_w + v * bar_w + 4:.1f}" y="{y + bar_h - 2}" '
                         f'font-size="10">{v:.2f}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _card(label: str, value: str, sub: str = "", ident: str = "") -> str:
    id_attr = f' id="{e(ident)}"' if ident else ""
    sub_html = f'<div class="ci">{e(sub)}</div>' if sub else ""
    return (f'<div class="card"><div class="label">{e(label)}</div>'
            f'<div class="value"{id_attr}>{e(value)}</div>{sub_html}</div>')


def _fact_rows(rows: Sequence[Mapping[str, Any]]) -> str:
    out = []
    for r in rows:
        out.append(
            f'<tr data-type="{e(r["fact_type"])}" data-status="{e(r["status"])}">'
            f'<td>{e(r["doc_id"])}</td><td>{e(r["side"])}</td><td>{e(r["id"])}</td>'
            f'<td>{e(r["fact_type"])}</td><td class="status-{e(r["status"])}">{e(r["status"])}</td>'
            f'<td><code>{e(_fact_text(r["fact"]))}</code></td><td>{e(", ".join(r["matched_ids"]))}</td>'
            f'<td>{e(r["reasoning"])}</td><td>{e(r["note"])}</td></tr>')
    return "".join(out)


def render_html(summary: Mapping[str, Any], worst: Sequence[Mapping[str, Any]],
                rows: Sequence[Mapping[str, Any]], rows_total: int) -> str:
    micro, macro, ci = summary["micro"], summary["macro"], summary["ci95"]
    boot = summary.get("bootstrap", {})
    cards = [_card("documents", f"{summary['documents']:,}", ident="documents")]
    for k in ("precision", "recall", "f1"):
        cards.append(_card(f"micro {'F1' if k == 'f1' else k}", fmt(micro[k]),
                           f"95% CI {fmt_ci(ci[k])}", ident=f"micro-{k}"))
    cards.append(_card("macro F1", fmt(macro["f1"]),
                       f"P {fmt(macro['precision'])} R {fmt(macro['recall'])}; "
                       f"{macro['defined']['f1']} docs defined", ident="macro-f1"))
    cards.append(_card("ERROR facts", str(micro["errors"]), "left out of P and R", ident="errors"))
    by_type = summary["by_fact_type"]
    type_rows = [[t, c["tp_gold"], c["fn"], c["tp_predicted"], c["fp"], c["errors"],
                  fmt(c["precision"]), fmt(c["recall"]), fmt(c["f1"])] for t, c in by_type.items()]
    totals = _table(["TP gold", "FN", "TP predicted", "FP", "ERROR", "out of scope (gold)",
                     "out of scope (predicted)"],
                    [[micro[k] for k in ("tp_gold", "fn", "tp_predicted", "fp", "errors",
                                         "out_of_scope_gold", "out_of_scope_predicted")]], 0)
    conflicts = (_table(["rule", "count"], list(summary["conflicts"].items()))
                 if summary["conflicts"] else '<p class="muted">None.</p>')
    worst_html = (_table(["doc_id", "precision", "recall", "F1", "FN", "FP", "ERROR"],
                         [[w["doc_id"], fmt(w["precision"]), fmt(w["recall"]), fmt(w["f1"]),
                           w["fn"], w["fp"], w["errors"]] for w in worst])
                  if worst else '<p class="muted">Every document is fully correct.</p>')
    skipped = ""
    if summary.get("skipped"):
        skipped = ("<h2>Skipped input lines</h2>" + _table(
            ["file", "line", "error"], [[s["file"], s["line"], s["error"]] for s in summary["skipped"]], 3))
    types = sorted({r["fact_type"] for r in rows})
    type_opts = "".join(f'<option value="{e(t)}">{e(t)}</option>' for t in types)
    status_opts = "".join(f'<option value="{s}">{s}</option>' for s in ROW_STATUSES)
    note = _truncation_note(len(rows), rows_total)
    facts_html = (
        f'<div class="filters"><label>fact type <select id="filter-type"><option value="">all'
        f'</option>{type_opts}</select></label><label>status <select id="filter-status">'
        f'<option value="">all</option>{status_opts}</select></label>'
        f'<span class="muted">showing <span id="shown">{len(rows)}</span> of {len(rows)}</span></div>'
        + (f'<p class="muted">{e(note)}</p>' if note else "")
        + '<table id="facts"><thead><tr><th>doc_id</th><th>side</th><th>id</th><th>fact_type</th>'
          '<th>status</th><th>fact</th><th>matched_ids</th><th>reasoning</th><th>note</th></tr>'
          f'</thead><tbody>{_fact_rows(rows)}</tbody></table>')
    usage = _table(["", "value"], _usage_text(summary["usage"]))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>factjudge evaluation report</title><style>{CSS}</style></head>
<body>
<h1>factjudge evaluation report</h1>
<p class="muted">{summary['documents']:,} documents, judge <code>{e(_judge_label(summary))}</code>.
95% intervals: bootstrap over documents ({e(boot.get('resamples', '?'))} resamples,
seed {e(boot.get('seed', '?'))}).</p>
<div class="cards">{''.join(cards)}</div>
<h2>Totals</h2>{totals}
<h2>By fact type</h2>{_table(["fact_type", "TP gold", "FN", "TP predicted", "FP", "ERROR",
                               "precision", "recall", "F1"], type_rows)}
{bar_chart(by_type)}
<h2>Reconciliation conflicts</h2>{conflicts}
<h2>Worst documents</h2>{worst_html}
{skipped}
<h2>FN, FP and ERROR facts</h2>{facts_html}
<h2>Usage</h2>{usage}
<script>{SCRIPT}</script>
</body></html>
"""
