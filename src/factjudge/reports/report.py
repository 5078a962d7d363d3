"""Readable reports of an evaluation: ``report.md``, a self-contained ``report.html`` and the
pages of ``factjudge compare``.

Pure functions (data in, string out). Every untrusted value (fact text, ids, model names, paths)
goes through :func:`md_escape` in Markdown and ``html.escape`` in HTML; data the page's script
needs is embedded as JSON in ``<script type="application/json">`` with ``<``, ``>`` and ``&``
written as ``\\u003c`` etc., and the script only ever sets ``textContent``. Charts are inline SVG,
so the HTML opens offline, from a mail attachment or a CI artifact, and references no resource.

What ``evaluate`` passes:

- rows: :func:`select_rows` over the result lines ordered worst document first
  (:func:`worst_order_key`), each row made by :func:`collect_rows`;
- documents: the result lines of the worst documents, worst first (the HTML embeds up to
  ``max_documents`` of them, within ``max_document_bytes`` of JSON, for the document view);
- summary: ``summary.json``, whose ``provenance``, ``judge`` and ``config`` are shown.
"""
from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import quote

from ..models import DIRECTIONS, OUTPUT_FIELDS, Direction, Status
from .format import fmt, fmt_ci, fmt_ci_diff, fmt_diff

#: Statuses listed in the failing-facts table; TP rows are added on request (spot checks).
ROW_STATUSES: tuple[Status, ...] = ("FN", "FP", "ERROR")
_NOT_SHOWN = frozenset({"id", "fact_type", *OUTPUT_FIELDS})
COLORS = {"precision": "#4e79a7", "recall": "#f28e2b", "f1": "#59a14f"}
#: "Closest fact" search is skipped for a (document, side, fact_type) group with more pairs.
CLOSEST_MAX_PAIRS = 1_000_000
#: Defaults of the document view: how many documents and how much JSON report.html embeds.
MAX_DOCUMENTS = 50
MAX_DOCUMENT_BYTES = 5_000_000
RATIO_KEYS = ("precision", "recall", "f1")
#: Each side with the other one.
_SIDE_PAIRS: tuple[tuple[Direction, Direction], ...] = (("gold", "predicted"), ("predicted", "gold"))


# --------------------------------------------------------------------------- rows


def _value_text(fact: Mapping[str, Any]) -> str:
    """The text of a fact's own fields (not id, fact_type or output fields), for similarity."""
    return " ".join(v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, sort_keys=True)
                    for k, v in fact.items() if k not in _NOT_SHOWN)


def _similarity_text(fact: Mapping[str, Any]) -> str:
    """Case-folded field values; punctuation is a separator except inside numbers, so "9.8%" and
    "9.9%" stay different tokens ("Inc." and "Inc" the same)."""
    text = _value_text(fact).casefold()
    text = re.sub(r"(?<!\d)[.,]|[.,](?!\d)", " ", text)
    return " ".join(re.sub(r"[^\w.,%$\u20ac\u00a3\u00a5-]+", " ", text).split())


def _shown(fact: Mapping[str, Any]) -> dict[str, Any]:
    # id and fact_type have their own columns, output fields their own places
    return {k: v for k, v in fact.items() if k not in _NOT_SHOWN}


def closest_facts(line: Mapping[str, Any], statuses: Sequence[Status] = ROW_STATUSES
                  ) -> dict[tuple[Direction, str], tuple[Mapping[str, Any], float]]:
    """(side, id) -> (closest fact of the other side, score) for the facts of ``line`` with one of
    ``statuses``: the fact of the same document and ``fact_type`` on the other side with the
    highest rapidfuzz ``token_set_ratio`` of the field values (see :func:`_similarity_text`;
    earliest on ties; none when every
    score is 0, or the group has more than :data:`CLOSEST_MAX_PAIRS` pairs)."""
    out: dict[tuple[Direction, str], tuple[Mapping[str, Any], float]] = {}
    for side, other in _SIDE_PAIRS:
        subjects: dict[Any, list[Mapping[str, Any]]] = {}
        for f in line.get(f"{side}_facts") or []:
            if f.get("status") in statuses:
                subjects.setdefault(f.get("fact_type"), []).append(f)
        if not subjects:
            continue
        candidates: dict[Any, list[Mapping[str, Any]]] = {}
        for f in line.get(f"{other}_facts") or []:
            if f.get("fact_type") in subjects and f.get("status") != "OUT_OF_SCOPE":
                candidates.setdefault(f.get("fact_type"), []).append(f)
        for fact_type, subs in subjects.items():
            cands = candidates.get(fact_type, [])
            if not cands or len(subs) * len(cands) > CLOSEST_MAX_PAIRS:
                continue
            from rapidfuzz import fuzz, process  # when first needed: the run starts faster

            choices = [_similarity_text(c) for c in cands]
            for f in subs:
                best = process.extractOne(_similarity_text(f), choices,
                                          scorer=fuzz.token_set_ratio, processor=None)
                if best is not None and best[1] > 0:
                    out[(side, str(f["id"]))] = (cands[best[2]], round(float(best[1]), 1))
    return out


def collect_rows(line: Mapping[str, Any], include_tp: bool = False) -> list[dict[str, Any]]:
    """One row per FN/FP/ERROR fact of a result line (and per TP fact with ``include_tp``), gold
    facts first, in input order, with what a reader needs to check it:

    ``doc_id, side, id, fact_type, status, fact`` (its own fields), ``reasoning``, ``note``
    (the reconciliation description), ``matched_ids``, ``linked`` (the matched facts of the other
    side: ``[{"id", "status", "fact"}]``, what a TP row is checked against) and ``closest``
    (for a fact that is not TP: ``{"id", "status", "fact", "score"}`` of the most similar fact of
    the other side with the same fact_type, see :func:`closest_facts`, else ``None``)."""
    statuses: tuple[Status, ...] = ROW_STATUSES + (("TP",) if include_tp else ())
    facts = {side: line.get(f"{side}_facts") or [] for side in ("gold", "predicted")}
    by_id = {side: {str(f.get("id")): f for f in fs} for side, fs in facts.items()}
    closest = closest_facts(line)
    rows = []
    for side, other in _SIDE_PAIRS:
        for fact in facts[side]:
            status = fact.get("status")
            if status not in statuses:
                continue
            matched = [str(i) for i in fact.get("matched_ids") or []]
            linked = [{"id": i, "status": by_id[other][i].get("status"), "fact": _shown(by_id[other][i])}
                      for i in matched if i in by_id[other]]
            near = closest.get((side, str(fact["id"]))) if status != "TP" else None
            rows.append({
                "doc_id": line["doc_id"], "side": side, "id": fact["id"],
                "fact_type": fact["fact_type"], "status": status, "fact": _shown(fact),
                "matched_ids": matched, "linked": linked,
                "closest": None if near is None else {
                    "id": near[0]["id"], "status": near[0].get("status"),
                    "fact": _shown(near[0]), "score": near[1]},
                "reasoning": fact.get("reasoning") or "", "note": fact.get("description") or "",
            })
    return rows


def worst_order_key(metrics: Mapping[str, Any], index: int) -> tuple[float, int, int]:
    """Sort key of a document, worst first: lowest F1 (undefined counts as 0), then most
    FN+FP+ERROR facts, then dataset order (``index``); the same order as ``Aggregator.worst``.
    ``metrics`` is a result line's ``metrics``."""
    wrong = metrics.get("fn", 0) + metrics.get("fp", 0) + metrics.get("errors", 0)
    return (metrics.get("f1") or 0.0, -wrong, index)


def select_rows(lines_by_worst: Iterable[Mapping[str, Any]], limit: int, *, tp_limit: int = 0
                ) -> list[dict[str, Any]]:
    """The report's rows: :func:`collect_rows` of each line of ``lines_by_worst`` (result lines,
    worst document first) until ``limit`` FN/FP/ERROR rows and ``tp_limit`` TP rows are taken.
    It stops reading the iterable once both are full, so a generator is read only as far as needed.
    Rows keep their document order (worst first; gold then predicted within a document)."""
    rows: list[dict[str, Any]] = []
    failing = tp = 0
    if limit <= 0 and tp_limit <= 0:
        return rows
    for line in lines_by_worst:
        for row in collect_rows(line, include_tp=tp_limit > 0):
            if row["status"] == "TP":
                if tp < tp_limit:
                    rows.append(row)
                    tp += 1
            elif failing < limit:
                rows.append(row)
                failing += 1
        if failing >= limit and tp >= tp_limit:
            break
    return rows


# --------------------------------------------------------------------------- compare data


def _badness(status: Status | None) -> int:
    return {"TP": 1, None: 0, "OUT_OF_SCOPE": 0}.get(status, -1)


def changed_facts(line_a: Mapping[str, Any], line_b: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The facts whose status differs between two result lines of the same document (A and B),
    matched by side and id; gold facts first, each side in A's order then B's new ids.

    Each: ``doc_id, side, id, fact_type, status_a, status_b`` (``None``: the fact is not in
    that run), ``change``, ``fact`` (B's fields, else A's), ``same_fact`` (False when both runs
    have the id with different fields: two extractors may reuse a predicted id for different
    facts), ``reasoning_a``, ``reasoning_b``, ``note_b``.

    ``change``: ``"fixed"`` when B is better (FN/FP/ERROR -> TP, an FP gone, a new TP),
    ``"broke"`` when worse (TP -> FN/FP/ERROR, a TP gone, a new FP/FN/ERROR), ``"other"``
    otherwise (FN -> ERROR, scope changes). A status ranks TP > absent = OUT_OF_SCOPE >
    FN = FP = ERROR."""
    out: list[dict[str, Any]] = []
    for side in DIRECTIONS:
        a = {str(f.get("id")): f for f in line_a.get(f"{side}_facts") or []}
        b = {str(f.get("id")): f for f in line_b.get(f"{side}_facts") or []}
        for fid in [*a, *(i for i in b if i not in a)]:
            fa, fb = a.get(fid), b.get(fid)
            sa = fa.get("status") if fa else None
            sb = fb.get("status") if fb else None
            if sa == sb:
                continue
            ra, rb = _badness(sa), _badness(sb)
            change = "fixed" if rb > ra else "broke" if rb < ra else "other"
            base = fb if fb is not None else fa
            assert base is not None
            out.append({
                "doc_id": line_b.get("doc_id", line_a.get("doc_id")), "side": side, "id": base["id"],
                "fact_type": base.get("fact_type"), "status_a": sa, "status_b": sb, "change": change,
                "fact": _shown(base),
                "same_fact": fa is None or fb is None or _shown(fa) == _shown(fb),
                "reasoning_a": (fa or {}).get("reasoning") or "",
                "reasoning_b": (fb or {}).get("reasoning") or "",
                "note_b": (fb or {}).get("description") or "",
            })
    return out


def fact_type_keys(line: Mapping[str, Any]) -> dict[str, tuple[int, int, int, int]]:
    """fact_type -> (TP predicted, FP, TP gold, FN) of one result line: the per-document keys
    ``evaluate.paired_bootstrap`` takes, for per-fact-type intervals in a compare."""
    by_type = (line.get("metrics") or {}).get("by_fact_type") or {}
    return {t: (c["tp_predicted"], c["fp"], c["tp_gold"], c["fn"]) for t, c in by_type.items()}


# --------------------------------------------------------------------------- formatting


def _yes_no(x: bool | None) -> str:
    return "n/a" if x is None else "yes" if x else "no"


def _fact_json(fact: Mapping[str, Any]) -> str:
    return json.dumps(fact, ensure_ascii=False, separators=(", ", ": "))


def _other_text(row: Mapping[str, Any]) -> str:
    """The linked facts of a row, or its closest fact: "linked p01 {...}", "closest p05 (FP, 92.3) {...}"."""
    if row.get("linked"):
        return "; ".join(f"linked {x['id']} {_fact_json(x['fact'])}" for x in row["linked"])
    near = row.get("closest")
    if near:
        return f"closest {near['id']} ({near['status']}, {near['score']:g}) {_fact_json(near['fact'])}"
    return ""


def _setting_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _usage_text(usage: Mapping[str, Any]) -> list[tuple[str, str]]:
    label = {"seconds": "seconds (per document, summed: overlaps under concurrency)"}
    return [(label.get(k, k), f"{v:,.3f}" if isinstance(v, float) else f"{v:,}" if isinstance(v, int) else str(v))
            for k, v in usage.items()]


def _rows_note(shown: int, total: int, rows_order: str) -> str:
    """What the failing-facts table holds, when it does not hold every failing fact."""
    if shown >= total:
        return ""
    if rows_order == "worst":
        return (f"Showing the {shown:,} rows of the worst documents first, of {total:,} "
                "FN/FP/ERROR facts; all of them are in results.jsonl.")
    return (f"Showing the first {shown:,} of {total:,} FN/FP/ERROR facts (in dataset order); "
            "all of them are in results.jsonl.")


def _judge_label(summary: Mapping[str, Any]) -> str:
    judge = summary.get("judge") or {}
    return " ".join(str(judge[k]) for k in ("name", "model") if judge.get(k)) or "?"


def _provenance_rows(summary: Mapping[str, Any]) -> list[tuple[str, str]]:
    prov = summary.get("provenance") or {}
    rows = [("factjudge", str(prov.get("factjudge", "not recorded"))),
            ("created", str(prov.get("created", "not recorded")))]
    inputs = prov.get("inputs") or []
    rows += [("input", str(p)) for p in inputs] or [("input", "not recorded")]
    return rows


# --------------------------------------------------------------------------- markdown

_MD_INERT = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "\0": "\ufffd", "\r": " ", "\n": " ",
                           **{ch: "\\" + ch for ch in "\\`*[]()|~$"}})
#: ``_`` not between two letters or digits (the replacements above neither start nor end with one)
_MD_UNDERSCORE = re.compile(r"(?<![^\W_])_|_(?![^\W_])")
_MD_PLAIN = re.compile(r"[^&<>\0\r\n\\`*\[\]()|~$_]*")


def md_escape(value: Any) -> str:
    """``value`` as inert inline Markdown text (CommonMark / GitHub): HTML special characters as
    entities (``<img>`` stays text, ``<javascript:...>`` is no autolink), ``\\ ` * [ ] ( ) | ~ $``
    backslash-escaped (no link, image, code, emphasis, strikethrough, math, table cell break),
    ``_`` escaped unless inside a word (CommonMark never reads ``gold_promoted_by_predicted`` as
    emphasis), line breaks turned into spaces. For inline use: within a line, as in a table cell
    (a value alone on a line could still start a list or heading). Bare ``https://`` URLs may
    still be autolinked by GitHub; no other scheme is."""
    text = value if isinstance(value, str) else str(value)
    if _MD_PLAIN.fullmatch(text):  # most cells (ids, statuses, numbers) need nothing
        return text
    return _MD_UNDERSCORE.sub(r"\\_", text.replace("\r\n", " ").translate(_MD_INERT))


def _md_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    out = ["| " + " | ".join(md_escape(h) for h in header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(md_escape(c) for c in row) + " |" for row in rows]
    return out + [""]


def _md_settings(summary: Mapping[str, Any]) -> list[str]:
    out = ["## Provenance", ""]
    out += _md_table(["", "value"], _provenance_rows(summary))
    out += ["### Judge", ""]
    judge = summary.get("judge") or {}
    out += (_md_table(["setting", "value"], [(k, _setting_text(v)) for k, v in judge.items()])
            if judge else ["Not recorded.", ""])
    out += ["### Config", ""]
    config = summary.get("config") or {}
    out += (_md_table(["key", "value"], [(k, _setting_text(v)) for k, v in config.items()])
            if config else ["Not recorded.", ""])
    return out


def _md_rows(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    return _md_table(["doc_id", "side", "id", "fact_type", "status", "fact", "linked / closest",
                      "reasoning", "note"],
                     [[r["doc_id"], r["side"], r["id"], r["fact_type"], r["status"],
                       _fact_json(r["fact"]), _other_text(r), r["reasoning"], r["note"]]
                      for r in rows])


def render_markdown(summary: Mapping[str, Any], worst: Sequence[Mapping[str, Any]],
                    rows: Sequence[Mapping[str, Any]], rows_total: int, *,
                    rows_order: str = "dataset") -> str:
    """``report.md``. ``rows``: from :func:`collect_rows` / :func:`select_rows`; the FN/FP/ERROR
    ones are listed, TP ones (if any) in a section of their own. ``rows_total``: the number of
    FN/FP/ERROR facts of the whole run. ``rows_order``: ``"worst"`` when the rows were selected
    worst documents first (:func:`select_rows`), ``"dataset"`` when in dataset order."""
    micro, macro, ci = summary["micro"], summary["macro"], summary["ci95"]
    boot = summary.get("bootstrap", {})
    failing = [r for r in rows if r["status"] != "TP"]
    tp_rows = [r for r in rows if r["status"] == "TP"]
    out = ["# factjudge evaluation report", "",
           (f"{summary['documents']:,} documents, judge {md_escape(_judge_label(summary))}. "
            f"95% intervals: bootstrap over documents ({md_escape(boot.get('resamples', '?'))} "
            f"resamples, seed {md_escape(boot.get('seed', '?'))}). Provenance, judge settings and "
            "config are at the end."), ""]
    out += _md_table(["", "precision", "recall", "F1"], [
        ["micro", *(fmt(micro[k]) for k in RATIO_KEYS)],
        ["micro 95% CI", *(fmt_ci(ci[k]) for k in RATIO_KEYS)],
        ["macro", *(fmt(macro[k]) for k in RATIO_KEYS)],
        ["macro: documents defined", *(str(macro["defined"][k]) for k in RATIO_KEYS)],
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
    note = _rows_note(len(failing), rows_total, rows_order)
    if note:
        out += [note, ""]
    out += _md_rows(failing) if failing else ["None.", ""]
    if tp_rows:
        tp_total = micro.get("tp_gold", 0) + micro.get("tp_predicted", 0)
        out += ["## TP facts (spot check)", "",
                (f"{len(tp_rows):,} of the {tp_total:,} TP facts, "
                 f"{'the worst documents first' if rows_order == 'worst' else 'in dataset order'}, "
                 "each with the fact it is linked to."), ""]
        out += _md_rows(tp_rows)
    out += ["## Usage", ""]
    out += _md_table(["", "value"], _usage_text(summary["usage"]))
    out += _md_settings(summary)
    return "\n".join(out).rstrip("\n") + "\n"


# --------------------------------------------------------------------------- HTML helpers


def e(value: Any) -> str:
    return html.escape(value if isinstance(value, str) else str(value), quote=True)


def json_for_script(data: Any) -> str:
    """JSON safe inside ``<script type="application/json">``: no ``</script>``, no ``<!--``."""
    return (json.dumps(data, ensure_ascii=False, separators=(",", ":"))
            .replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]], numeric_from: int = 1,
           attrs: str = "") -> str:
    head = "".join(f"<th>{e(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f'<td class="num">{e(c)}</td>' if i >= numeric_from else f"<td>{e(c)}</td>"
                         for i, c in enumerate(row)) + "</tr>"
        for row in rows)
    return f"<table{attrs}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _kv_table(rows: Sequence[tuple[str, Any]], attrs: str = "") -> str:
    """A key/value table; list values as lists, other non-strings as JSON."""
    body = []
    for k, v in rows:
        if isinstance(v, list) and v and all(isinstance(x, str) for x in v):
            cell = "<ul>" + "".join(f"<li>{e(x)}</li>" for x in v) + "</ul>"
        else:
            cell = f"<code>{e(_setting_text(v))}</code>" if not isinstance(v, str) else e(v)
        body.append(f"<tr><th>{e(k)}</th><td>{cell}</td></tr>")
    return f'<table class="kv"{attrs}><tbody>{"".join(body)}</tbody></table>'


def bar_chart(by_type: Mapping[str, Mapping[str, Any]]) -> str:
    """Horizontal grouped bars of P/R/F1 per fact type, as inline SVG."""
    label_w, bar_w, bar_h, gap = 170, 360, 11, 10
    group_h = 3 * bar_h + gap
    legend_h = 24
    height = legend_h + max(1, len(by_type)) * group_h + 20
    width = label_w + bar_w + 60
    parts = [(f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
              f'role="img" aria-label="precision, recall and F1 by fact type" '
              f'font-family="system-ui,sans-serif" font-size="12">')]
    for i, (name, color) in enumerate(COLORS.items()):
        x = label_w + i * 110
        parts.append(f'<rect x="{x}" y="4" width="12" height="12" fill="{color}"/>'
                     f'<text x="{x + 16}" y="14">{e(name)}</text>')
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        tx = label_w + tick * bar_w
        parts.append(f'<line x1="{tx:.1f}" y1="{legend_h}" x2="{tx:.1f}" y2="{height - 16}" '
                     f'stroke="#e3e3e3"/><text x="{tx:.1f}" y="{height - 4}" text-anchor="middle" '
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


def _card(label: str, value: str, sub: str = "", ident: str = "", cls: str = "") -> str:
    id_attr = f' id="{e(ident)}"' if ident else ""
    sub_html = f'<div class="ci">{e(sub)}</div>' if sub else ""
    return (f'<div class="card{" " + cls if cls else ""}"><div class="label">{e(label)}</div>'
            f'<div class="value"{id_attr}>{e(value)}</div>{sub_html}</div>')


def _options(values: Iterable[str], all_label: str = "all") -> str:
    return f'<option value="">{e(all_label)}</option>' + "".join(
        f'<option value="{e(v)}">{e(v)}</option>' for v in values)


def _doc_anchor(doc_id: Any, embedded: frozenset[str]) -> str:
    """A doc_id cell: a link to the document view when the document is embedded."""
    text = str(doc_id)
    if text in embedded:
        return f'<a href="#doc={e(quote(text, safe=""))}" class="doclink">{e(text)}</a>'
    return e(text)


BASE_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2em auto;
max-width:1200px;padding:0 1em;color:#222}
h1{font-size:1.6em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
h3{font-size:1em;margin:.3em 0}
table{border-collapse:collapse;margin:.5em 0}th,td{border:1px solid #ddd;padding:3px 8px;
text-align:left;vertical-align:top}th{background:#f4f4f4}td.num{text-align:right;
font-variant-numeric:tabular-nums}table.kv th{font-weight:600;white-space:nowrap}
table.kv ul{margin:0;padding-left:1.2em}
.cards{display:flex;flex-wrap:wrap;gap:12px}.card{border:1px solid #ddd;border-radius:6px;
padding:10px 16px;min-width:150px}.card .label{color:#666;font-size:.85em}
.card .value{font-size:1.8em;font-weight:600}.card .ci{color:#666;font-size:.85em}
code{font-size:.9em;word-break:break-word}.status-FN,.status-FP{color:#b3261e}
.status-ERROR{color:#8a5300;font-weight:600}.status-TP{color:#1b6e20}.muted{color:#666}
.filters{margin:.5em 0}.filters label{margin-right:1em}
.fixed{color:#1b6e20;font-weight:600}.broke{color:#b3261e;font-weight:600}
.card.good .value{color:#1b6e20}.card.bad .value{color:#b3261e}
"""

REPORT_CSS = BASE_CSS + """
#facts td{max-width:300px}#facts td.other{color:#444;font-size:.92em}
.docview{position:relative;display:grid;grid-template-columns:minmax(0,1fr) 120px minmax(0,1fr);
margin-top:.5em}
.doccol{display:flex;flex-direction:column;gap:6px;min-width:0}
.doccol h3{position:sticky;top:0;background:#fff;z-index:1;padding:2px 0}
#doc-links{position:absolute;left:0;top:0;pointer-events:none;overflow:visible}
#doc-links path{fill:none;stroke-width:2;pointer-events:stroke}
#doc-links path.link{stroke:#2e7d32}#doc-links path.near{stroke:#e08a00;stroke-dasharray:5 4;
stroke-width:1.5}#doc-links path.hl{stroke-width:4}
.fact{border:1px solid #d6d6d6;border-left:5px solid #999;border-radius:4px;padding:4px 8px;
background:#fff;font-size:12.5px;line-height:1.35;overflow-wrap:anywhere}
.fact.hl{box-shadow:0 0 0 2px #4e79a7}
.fact.st-TP{border-left-color:#2e7d32}.fact.st-FN{border-left-color:#c62828;background:#fff6f6}
.fact.st-FP{border-left-color:#d84315;background:#fff8f3}
.fact.st-ERROR{border-left-color:#8a5300;background:#fffbe6}
.fact.st-OUT_OF_SCOPE{border-left-color:#bbb;color:#777;background:#fafafa}
.fact-head{display:flex;gap:8px;align-items:baseline;flex-wrap:wrap}
.fact-id{font-weight:600}.fact-type{color:#555}
.badge{font-size:11px;padding:0 5px;border-radius:8px;color:#fff;background:#888}
.badge.st-TP{background:#2e7d32}.badge.st-FN{background:#c62828}.badge.st-FP{background:#d84315}
.badge.st-ERROR{background:#8a5300}.fact-near{color:#a05a00;font-size:11px}
.fact-fields .fv{margin-right:10px}.fact-fields b{font-weight:500;color:#666}
.fact details{margin-top:2px}.fact summary{cursor:pointer;color:#4e79a7;font-size:11px}
.fact details p{margin:2px 0;white-space:pre-wrap}
.legend span{margin-right:1.2em}.legend .sw{display:inline-block;width:22px;height:0;
vertical-align:middle;margin-right:4px;border-top:2px solid #2e7d32}
.legend .sw.near{border-top:2px dashed #e08a00}
"""

REPORT_SCRIPT = r"""
(function () {
  "use strict";
  function byId(id) { return document.getElementById(id); }
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
      showNear = byId("doc-near"), align = byId("doc-align"), docInfo = byId("doc-info");
  if (!view || !docs.length) { return; }
  var index = new Map();
  docs.forEach(function (d, i) {
    index.set(d.doc_id, i);
    var o = document.createElement("option");
    o.value = String(i);
    o.textContent = d.label;
    docSelect.appendChild(o);
  });
  var current = null, cards = {gold: [], predicted: []}, hover = new Map();

  function el(tag, cls, text) {
    var x = document.createElement(tag);
    if (cls) { x.className = cls; }
    if (text !== undefined && text !== null) { x.textContent = text; }
    return x;
  }
  function valueText(v) { return typeof v === "string" ? v : JSON.stringify(v); }

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
  show(0);
  fromHash(true);
})();
"""


# --------------------------------------------------------------------------- report.html


def _doc_payload(line: Mapping[str, Any]) -> dict[str, Any]:
    """What the document view needs of one result line (indices instead of ids for the links)."""
    near_of = closest_facts(line)
    gold, pred = line.get("gold_facts") or [], line.get("predicted_facts") or []
    g_index = {str(f.get("id")): i for i, f in enumerate(gold)}
    p_index = {str(f.get("id")): j for j, f in enumerate(pred)}
    pairs: dict[tuple[int, int], None] = {}
    for i, f in enumerate(gold):
        for m in f.get("matched_ids") or []:
            if str(m) in p_index:
                pairs[(i, p_index[str(m)])] = None
    for j, f in enumerate(pred):
        for m in f.get("matched_ids") or []:
            if str(m) in g_index:
                pairs[(g_index[str(m)], j)] = None
    near: list[list[Any]] = []
    seen: set[tuple[int, int]] = set()

    def fact(f: Mapping[str, Any], side: Direction) -> dict[str, Any]:
        hit = near_of.get((side, str(f.get("id"))))
        return {"id": str(f.get("id")), "fact_type": str(f.get("fact_type")),
                "status": str(f.get("status")), "fields": _shown(f),
                "note": f.get("description") or "", "reasoning": f.get("reasoning") or "",
                "closest": None if hit is None else {"id": str(hit[0].get("id")), "score": hit[1]}}

    sides: tuple[tuple[Direction, list[Any], dict[str, int]], ...] = (
        ("gold", gold, p_index), ("predicted", pred, g_index))
    for side, facts, index in sides:
        for k, f in enumerate(facts):
            hit = near_of.get((side, str(f.get("id"))))
            if hit is None:
                continue
            other = index[str(hit[0].get("id"))]
            pair = (k, other) if side == "gold" else (other, k)
            if pair not in seen and pair not in pairs:
                seen.add(pair)
                near.append([pair[0], pair[1], "g" if side == "gold" else "p", hit[1]])
    m = line.get("metrics") or {}
    info = (f"{len(gold)} gold, {len(pred)} predicted facts; P {fmt(m.get('precision'))} "
            f"R {fmt(m.get('recall'))} F1 {fmt(m.get('f1'))}; FN {m.get('fn', 0)}, "
            f"FP {m.get('fp', 0)}, ERROR {m.get('errors', 0)}; {len(pairs)} matched pairs")
    return {"doc_id": str(line.get("doc_id")),
            "label": f"{line.get('doc_id')} \u2014 F1 {fmt(m.get('f1'))}, FN {m.get('fn', 0)}, "
                     f"FP {m.get('fp', 0)}, ERROR {m.get('errors', 0)}",
            "info": info,
            "gold": [fact(f, "gold") for f in gold], "predicted": [fact(f, "predicted") for f in pred],
            "pairs": [list(p) for p in pairs], "near": near}


def embed_documents(documents: Iterable[Mapping[str, Any]], max_documents: int = MAX_DOCUMENTS,
                    max_bytes: int = MAX_DOCUMENT_BYTES) -> tuple[list[dict[str, Any]], int]:
    """The document-view payloads of ``documents`` (in order) that fit: at most ``max_documents``,
    at most ``max_bytes`` of JSON in all (a document that would pass the cap is left out and the
    next ones are tried). Returns (payloads, documents left out for size)."""
    out: list[dict[str, Any]] = []
    size = left_out = 0
    for line in documents:
        if len(out) >= max_documents:
            break
        payload = _doc_payload(line)
        n = len(json_for_script(payload).encode("utf-8")) + 1
        if size + n > max_bytes:
            left_out += 1
            continue
        out.append(payload)
        size += n
    return out, left_out


def _fact_rows(rows: Sequence[Mapping[str, Any]], embedded: frozenset[str]) -> str:
    out = []
    for r in rows:
        near = r.get("closest")
        other = ""
        if r.get("linked"):
            other = "".join(f'<div>linked <b>{e(x["id"])}</b> <span class="status-{e(x["status"])}">'
                            f'{e(x["status"])}</span> <code>{e(_fact_json(x["fact"]))}</code></div>'
                            for x in r["linked"])
        elif near:
            other = (f'<div>closest <b>{e(near["id"])}</b> <span class="status-{e(near["status"])}">'
                     f'{e(near["status"])}</span> <span class="muted">(similarity {near["score"]:g})'
                     f'</span> <code>{e(_fact_json(near["fact"]))}</code></div>')
        out.append(
            f'<tr data-type="{e(r["fact_type"])}" data-status="{e(r["status"])}" '
            f'data-doc="{e(r["doc_id"])}"{" hidden" if r["status"] == "TP" else ""}>'
            f'<td>{_doc_anchor(r["doc_id"], embedded)}</td><td>{e(r["side"])}</td><td>{e(r["id"])}</td>'
            f'<td>{e(r["fact_type"])}</td><td class="status-{e(r["status"])}">{e(r["status"])}</td>'
            f'<td><code>{e(_fact_json(r["fact"]))}</code></td><td class="other">{other}</td>'
            f'<td>{e(r["reasoning"])}</td><td>{e(r["note"])}</td></tr>')
    return "".join(out)


def _unique(values: Iterable[Any]) -> list[str]:
    return list(dict.fromkeys(str(v) for v in values))


def _html_settings(summary: Mapping[str, Any]) -> str:
    judge = summary.get("judge") or {}
    config = summary.get("config") or {}
    return ('<h2 id="provenance">Provenance and settings</h2>'
            + _kv_table(_provenance_rows(summary), ' id="provenance-table"')
            + "<h3>Judge</h3>"
            + (_kv_table(list(judge.items()), ' id="judge-table"') if judge
               else '<p class="muted">Not recorded.</p>')
            + "<h3>Config</h3>"
            + (_kv_table(list(config.items()), ' id="config-table"') if config
               else '<p class="muted">Not recorded.</p>'))


def render_html(summary: Mapping[str, Any], worst: Sequence[Mapping[str, Any]],
                rows: Sequence[Mapping[str, Any]], rows_total: int, *,
                rows_order: str = "dataset", documents: Iterable[Mapping[str, Any]] = (),
                max_documents: int = MAX_DOCUMENTS,
                max_document_bytes: int = MAX_DOCUMENT_BYTES) -> str:
    """``report.html``, one self-contained file. ``rows``, ``rows_total``, ``rows_order`` as for
    :func:`render_markdown` (TP rows are in the table, hidden until the status filter shows them).
    ``documents``: result lines, worst first, for the document view (see :func:`embed_documents`);
    the worst-documents table and the rows link to the embedded ones (``#doc=ID``)."""
    micro, macro, ci = summary["micro"], summary["macro"], summary["ci95"]
    boot = summary.get("bootstrap", {})
    payloads, left_out = embed_documents(documents, max_documents, max_document_bytes)
    embedded = frozenset(p["doc_id"] for p in payloads)
    cards = [_card("documents", f"{summary['documents']:,}", ident="documents")]
    for k in RATIO_KEYS:
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
    if worst:
        worst_body = "".join(
            f'<tr><td>{_doc_anchor(w["doc_id"], embedded)}</td>'
            + "".join(f'<td class="num">{e(v)}</td>' for v in (
                fmt(w["precision"]), fmt(w["recall"]), fmt(w["f1"]), w["fn"], w["fp"], w["errors"]))
            + "</tr>" for w in worst)
        worst_html = ('<table id="worst"><thead><tr><th>doc_id</th><th>precision</th><th>recall</th>'
                      '<th>F1</th><th>FN</th><th>FP</th><th>ERROR</th></tr></thead>'
                      f'<tbody>{worst_body}</tbody></table>')
        if embedded:
            worst_html += ('<p class="muted">A linked doc_id opens the document in the '
                           '<a href="#document-view">document view</a>.</p>')
    else:
        worst_html = '<p class="muted">Every document is fully correct.</p>'
    skipped = ""
    if summary.get("skipped"):
        skipped = ("<h2>Skipped input lines</h2>" + _table(
            ["file", "line", "error"], [[s["file"], s["line"], s["error"]] for s in summary["skipped"]], 3))

    failing = sum(r["status"] != "TP" for r in rows)
    tp_shown = len(rows) - failing
    statuses = [*ROW_STATUSES, *(["TP"] if tp_shown else [])]
    status_opts = ('<option value="">FN, FP and ERROR</option>'
                   + "".join(f'<option value="{s}">{s}</option>' for s in statuses)
                   + '<option value="all">all</option>')
    note = _rows_note(failing, rows_total, rows_order)
    order = "the worst documents first" if rows_order == "worst" else "in dataset order"
    tp_total = micro.get("tp_gold", 0) + micro.get("tp_predicted", 0)
    held = (f"The table holds {failing:,} of the {rows_total:,} FN/FP/ERROR facts"
            + (f" and {tp_shown:,} of the {tp_total:,} TP facts (hidden until the status filter "
               "shows TP or all; each with the fact it is linked to)" if tp_shown else "")
            + f", {order}.")
    facts_html = (
        f'<div class="filters"><label>fact type <select id="filter-type">'
        f'{_options(sorted({str(r["fact_type"]) for r in rows}))}</select></label>'
        f'<label>status <select id="filter-status">{status_opts}</select></label>'
        f'<label>document <select id="filter-doc">{_options(_unique(r["doc_id"] for r in rows))}'
        f'</select></label>'
        f'<span class="muted">showing <span id="shown">{failing}</span> of '
        f'<span id="rows-in-table">{len(rows)}</span> rows</span></div>'
        f'<p class="muted" id="rows-held">{e(held)}</p>'
        + (f'<p class="muted" id="rows-note">{e(note)}</p>' if note else "")
        + '<table id="facts"><thead><tr><th>doc_id</th><th>side</th><th>id</th><th>fact_type</th>'
          '<th>status</th><th>fact</th><th>linked / closest</th><th>reasoning</th><th>note</th>'
          f'</tr></thead><tbody>{_fact_rows(rows, embedded)}</tbody></table>')
    if payloads:
        extra = (f" {left_out} more did not fit in the size cap." if left_out else "")
        docview = (
            f'<p class="muted">The {len(payloads)} worst documents are embedded (see results.jsonl '
            f'for the others).{e(extra)} Gold facts on the left, predicted on the right; a solid '
            'line links matched facts, a dashed one an FN or FP fact to its closest fact of the '
            'other side. Hover a fact for the reasoning and the reconciliation note.</p>'
            '<div class="filters"><label>document <select id="doc-select"></select></label>'
            '<label>fact type <select id="doc-type"><option value="">all</option></select></label>'
            '<label><input type="checkbox" id="doc-near" checked> closest of FN/FP</label>'
            '<label><input type="checkbox" id="doc-align" checked> align predicted to gold</label>'
            '</div><p class="legend muted"><span><i class="sw"></i>matched</span>'
            '<span><i class="sw near"></i>closest, not matched</span><span id="doc-info"></span></p>'
            '<div id="docview" class="docview"><div class="doccol" id="doc-gold"><h3>gold</h3>'
            '<div class="doccol" id="doc-gold-facts"></div></div><div></div>'
            '<div class="doccol" id="doc-pred"><h3>predicted</h3><div class="doccol" '
            'id="doc-pred-facts"></div></div>'
            '<svg id="doc-links" xmlns="http://www.w3.org/2000/svg" aria-label="links between '
            'matched facts" data-links-drawn="0"></svg></div>'
            f'<script type="application/json" id="doc-data">{json_for_script(payloads)}</script>')
    else:
        docview = '<p class="muted">No document is embedded in this report.</p>'
    prov = summary.get("provenance") or {}
    prov_line = ""
    if prov:
        inputs = ", ".join(str(p) for p in prov.get("inputs") or []) or "?"
        prov_line = (f'<p class="muted" id="provenance-line">factjudge {e(prov.get("factjudge", "?"))}, '
                     f'created {e(prov.get("created", "?"))}, input {e(inputs)}. '
                     '<a href="#provenance">Settings</a>.</p>')
    usage = _table(["", "value"], _usage_text(summary["usage"]))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>factjudge evaluation report</title><style>{REPORT_CSS}</style></head>
<body>
<h1>factjudge evaluation report</h1>
<p class="muted">{summary['documents']:,} documents, judge <code>{e(_judge_label(summary))}</code>.
95% intervals: bootstrap over documents ({e(boot.get('resamples', '?'))} resamples,
seed {e(boot.get('seed', '?'))}).</p>
{prov_line}
<div class="cards">{''.join(cards)}</div>
<h2>Totals</h2>{totals}
<h2>By fact type</h2>{_table(["fact_type", "TP gold", "FN", "TP predicted", "FP", "ERROR",
                               "precision", "recall", "F1"], type_rows)}
{bar_chart(by_type)}
<h2>Reconciliation conflicts</h2>{conflicts}
<h2>Worst documents</h2>{worst_html}
<h2 id="document-view">Document view</h2>{docview}
{skipped}
<h2>FN, FP and ERROR facts</h2>{facts_html}
<h2>Usage</h2>{usage}
{_html_settings(summary)}
<script>{REPORT_SCRIPT}</script>
</body></html>
"""


# --------------------------------------------------------------------------- compare pages

COMPARE_DOC = """The ``cmp`` dict of :func:`render_compare_markdown` / :func:`render_compare_html`:

- ``a``, ``b`` (str): the two eval output folders (A the baseline, B the candidate);
- ``documents`` (int): documents both runs scored (the comparison is over these);
  ``only_a``, ``only_b`` (int, optional): documents left out because one run lacks them;
- ``metrics``: ``{"precision"|"recall"|"f1": {"a", "b", "diff", "ci95", "excludes_zero"}}``,
  micro figures over the shared documents, ``diff`` = B - A, ``ci95`` the paired bootstrap
  ``[low, high]`` of B - A or ``None``, ``excludes_zero`` bool or ``None`` (exactly what
  ``evaluate.paired_bootstrap`` returns);
- ``by_fact_type``: ``{fact_type: same shape as metrics}`` (``ci95`` / ``excludes_zero`` may
  be ``None``; per-document keys from :func:`fact_type_keys` give them);
- ``changed``: rows of :func:`changed_facts` (over the shared documents);
  ``changed_total`` (int, optional): how many there were when ``changed`` was cut short;
- optional: ``bootstrap`` ``{"resamples", "seed"}``, ``warnings`` (list of str),
  ``provenance`` ``{"factjudge", "created"}``.
"""


def _metric_rows(metrics: Mapping[str, Mapping[str, Any]]) -> list[list[str]]:
    return [[k, fmt(m.get("a")), fmt(m.get("b")), fmt_diff(m.get("diff")), fmt_ci_diff(m.get("ci95")),
             _yes_no(m.get("excludes_zero"))] for k, m in metrics.items()]


def _type_rows(by_type: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> list[list[str]]:
    rows = []
    for t, ms in by_type.items():
        row = [t]
        for k in RATIO_KEYS:
            m = ms.get(k) or {}
            row += [fmt(m.get("a")), fmt(m.get("b")), fmt_diff(m.get("diff")),
                    fmt_ci_diff(m.get("ci95")) if m.get("ci95") else ""]
        rows.append(row)
    return rows


_TYPE_HEADER = ["fact_type", *(f"{k} {c}" for k in ("P", "R", "F1") for c in ("A", "B", "B-A", "95% CI"))]


def _status_text(s: str | None) -> str:
    return "absent" if s is None else s


def _changed_counts(changed: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    counts = {"fixed": 0, "broke": 0, "other": 0}
    for c in changed:
        counts[c["change"]] = counts.get(c["change"], 0) + 1
    return counts


def render_compare_markdown(cmp: Mapping[str, Any]) -> str:
    """``compare.md`` of two eval runs; ``cmp`` as in :data:`COMPARE_DOC`."""
    boot = cmp.get("bootstrap") or {}
    out = ["# factjudge comparison", "",
           f"A: {md_escape(cmp['a'])}  ", f"B: {md_escape(cmp['b'])}", "",
           f"{cmp['documents']:,} documents scored by both"
           + (f" ({cmp.get('only_a', 0):,} only in A and {cmp.get('only_b', 0):,} only in B left out)"
              if cmp.get("only_a") or cmp.get("only_b") else "")
           + ". Micro figures over them; B-A with a paired bootstrap 95% interval over documents"
           + (f" ({md_escape(boot.get('resamples'))} resamples, seed {md_escape(boot.get('seed'))})"
              if boot else "") + ".", ""]
    for w in cmp.get("warnings") or []:
        out += [f"Warning: {md_escape(w)}", ""]
    out += _md_table(["metric", "A", "B", "B-A", "95% CI of B-A", "excludes 0"],
                     _metric_rows(cmp["metrics"]))
    out += ["## By fact type", ""]
    out += (_md_table(_TYPE_HEADER, _type_rows(cmp["by_fact_type"]))
            if cmp.get("by_fact_type") else ["None.", ""])
    changed = cmp.get("changed") or []
    counts = _changed_counts(changed)
    total = cmp.get("changed_total", len(changed))
    out += ["## Facts whose status changed", "",
            f"{counts['fixed']:,} fixed, {counts['broke']:,} broke, {counts['other']:,} other"
            + (f" (showing {len(changed):,} of {total:,})" if total > len(changed) else "") + ".", ""]
    out += (_md_table(["doc_id", "side", "id", "fact_type", "A", "B", "change", "fact", "B reasoning"],
                      [[c["doc_id"], c["side"], c["id"], c["fact_type"], _status_text(c["status_a"]),
                        _status_text(c["status_b"]),
                        c["change"] + ("" if c.get("same_fact", True) else " (different fact, same id)"),
                        _fact_json(c["fact"]), c.get("reasoning_b") or ""] for c in changed])
            if changed else ["None.", ""])
    prov = cmp.get("provenance") or {}
    if prov:
        out += ["## Provenance", ""]
        out += _md_table(["", "value"], [(k, _setting_text(v)) for k, v in prov.items()])
    return "\n".join(out).rstrip("\n") + "\n"


COMPARE_SCRIPT = r"""
(function () {
  "use strict";
  var type = document.getElementById("filter-type");
  var change = document.getElementById("filter-change");
  var doc = document.getElementById("filter-doc");
  var rows = document.querySelectorAll("#changed tbody tr");
  var shown = document.getElementById("shown");
  function apply() {
    var n = 0;
    rows.forEach(function (row) {
      var ok = (!type.value || row.dataset.type === type.value) &&
               (!change.value || row.dataset.change === change.value) &&
               (!doc.value || row.dataset.doc === doc.value);
      row.hidden = !ok;
      if (ok) { n += 1; }
    });
    shown.textContent = String(n);
  }
  // compare.html#change=broke&type=revenue&doc=D opens with those filters
  var params = new URLSearchParams(location.hash.slice(1));
  [["type", type], ["change", change], ["doc", doc]].forEach(function (p) {
    if (params.has(p[0])) { p[1].value = params.get(p[0]); }
  });
  [type, change, doc].forEach(function (s) { s.addEventListener("change", apply); });
  apply();
})();
"""


def render_compare_html(cmp: Mapping[str, Any]) -> str:
    """``compare.html`` of two eval runs, self-contained; ``cmp`` as in :data:`COMPARE_DOC`.
    The changed facts are filterable by fact type, change kind and document."""
    boot = cmp.get("bootstrap") or {}
    cards = []
    for k, m in cmp["metrics"].items():
        diff, excl = m.get("diff"), m.get("excludes_zero")
        cls = "good" if excl and (diff or 0) > 0 else "bad" if excl and (diff or 0) < 0 else ""
        cards.append(_card(f"{'F1' if k == 'f1' else k} B-A", fmt_diff(diff),
                           f"95% CI {fmt_ci_diff(m.get('ci95'))}; A {fmt(m.get('a'))}, B {fmt(m.get('b'))}",
                           ident=f"diff-{k}", cls=cls))
    warnings = "".join(f'<p class="broke">Warning: {e(w)}</p>' for w in cmp.get("warnings") or [])
    changed = cmp.get("changed") or []
    counts = _changed_counts(changed)
    total = cmp.get("changed_total", len(changed))
    body = []
    for c in changed:
        kind = c["change"]
        body.append(
            f'<tr data-type="{e(c["fact_type"])}" data-change="{e(kind)}" data-doc="{e(c["doc_id"])}">'
            f'<td>{e(c["doc_id"])}</td><td>{e(c["side"])}</td><td>{e(c["id"])}</td>'
            f'<td>{e(c["fact_type"])}</td><td class="status-{e(c["status_a"])}">{e(_status_text(c["status_a"]))}</td>'
            f'<td class="status-{e(c["status_b"])}">{e(_status_text(c["status_b"]))}</td>'
            f'<td class="{e(kind)}">{e(kind)}'
            + ("" if c.get("same_fact", True) else ' <span class="muted">(different fact, same id)</span>')
            + f'</td><td><code>{e(_fact_json(c["fact"]))}</code></td>'
            f'<td>{e(c.get("reasoning_a") or "")}</td><td>{e(c.get("reasoning_b") or "")}</td></tr>')
    only = (f" ({cmp.get('only_a', 0):,} only in A and {cmp.get('only_b', 0):,} only in B left out)"
            if cmp.get("only_a") or cmp.get("only_b") else "")
    boot_text = (f" ({e(boot.get('resamples'))} resamples, seed {e(boot.get('seed'))})" if boot else "")
    prov = cmp.get("provenance") or {}
    prov_html = ("<h2>Provenance</h2>" + _kv_table(list(prov.items()))) if prov else ""
    by_type = (_table(_TYPE_HEADER, _type_rows(cmp["by_fact_type"]), attrs=' id="by-type"')
               if cmp.get("by_fact_type") else '<p class="muted">None.</p>')
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>factjudge comparison</title><style>{BASE_CSS}#changed td{{max-width:320px}}</style></head>
<body>
<h1>factjudge comparison</h1>
<table class="kv"><tbody><tr><th>A</th><td><code id="path-a">{e(cmp['a'])}</code></td></tr>
<tr><th>B</th><td><code id="path-b">{e(cmp['b'])}</code></td></tr></tbody></table>
<p class="muted">{cmp['documents']:,} documents scored by both{e(only)}. Micro figures over them;
B-A with a paired bootstrap 95% interval over documents{boot_text}.</p>
{warnings}
<div class="cards">{''.join(cards)}</div>
{_table(["metric", "A", "B", "B-A", "95% CI of B-A", "excludes 0"], _metric_rows(cmp["metrics"]),
        attrs=' id="metrics"')}
<h2>By fact type</h2>{by_type}
<h2>Facts whose status changed</h2>
<p><span class="fixed" id="n-fixed">{counts['fixed']:,}</span> fixed,
<span class="broke" id="n-broke">{counts['broke']:,}</span> broke, {counts['other']:,} other{
    e(f" (the table holds {len(changed):,} of {total:,})") if total > len(changed) else ""}.</p>
<div class="filters"><label>fact type <select id="filter-type">{
    _options(sorted({str(c["fact_type"]) for c in changed}))}</select></label>
<label>change <select id="filter-change">{_options(["fixed", "broke", "other"])}</select></label>
<label>document <select id="filter-doc">{_options(_unique(c["doc_id"] for c in changed))}</select></label>
<span class="muted">showing <span id="shown">{len(changed)}</span> of {len(changed)}</span></div>
<table id="changed"><thead><tr><th>doc_id</th><th>side</th><th>id</th><th>fact_type</th><th>A</th>
<th>B</th><th>change</th><th>fact</th><th>A reasoning</th><th>B reasoning</th></tr></thead>
<tbody>{''.join(body)}</tbody></table>
{prov_html}
<script>{COMPARE_SCRIPT}</script>
</body></html>
"""


render_compare_markdown.__doc__ = (render_compare_markdown.__doc__ or "") + "\n\n" + COMPARE_DOC
render_compare_html.__doc__ = (render_compare_html.__doc__ or "") + "\n\n" + COMPARE_DOC
