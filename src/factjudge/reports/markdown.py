"""``report.md`` and ``compare.md``: the evaluation report and a comparison of two runs as
CommonMark (GitHub) text. Every untrusted value (fact text, ids, model names, paths) goes through
:func:`md_escape`; the words are those of :mod:`.text`, which report.html shares."""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.aggregate import MicroCounts, Summary
from ..io.run_models import CompareResult
from .format import fmt, fmt_ci
from .source import OMISSION_HEADER, SOURCE_HEADER, omission_rows, source_note, source_rows
from .text import (
    BY_TYPE_HEADER,
    CATEGORY_HEADER,
    CATEGORY_NOTE,
    COMPARE_CATEGORY_HEADER,
    COMPARE_DOC,
    COMPARE_FIELD_HEADER,
    FIELD_HEADER,
    FIELD_NOTE,
    JUDGE_CORRECTED_HEADER,
    METRIC_HEADER,
    RATIO_KEYS,
    RELIABILITY_HEADER,
    REVIEW_HEADER,
    REVIEWED_HEADER,
    TOTALS_HEADER,
    TYPE_HEADER,
    banners,
    by_type_rows,
    category_rows,
    change_text,
    changed_counts,
    compare_auroc_text,
    compare_category_rows,
    compare_field_rows,
    compare_only_text,
    confidence_corrected_note,
    confidence_headline,
    confidence_note,
    counts_text,
    fact_json,
    field_rows,
    judge_corrected_note,
    judge_corrected_rows,
    judge_label,
    metric_rows,
    order_text,
    other_text,
    provenance_rows,
    reliability_rows,
    review_table,
    reviewed_line,
    reviewed_note,
    reviewed_rows,
    rows_note,
    setting_text,
    status_text,
    threshold_table,
    totals_row,
    type_rows,
    usage_text,
    versions_text,
    worst_cells,
)

#: Each character's replacement, the backslash first (the later ones add backslashes) and ``&``
#: before the characters written as entities: a ``str.replace`` each (only when the character is
#: there) is 7x faster than ``str.translate`` with a mapping over a report's 9,000 long cells.
_MD_INERT = (("\\", "\\\\"), ("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("\0", "\ufffd"), ("\r", " "),
             ("\n", " "), *((ch, "\\" + ch) for ch in "`*[]()|~$"))
#: ``_`` not between two letters or digits (the replacements above neither start nor end with
#: one); the pattern starts with the ``_`` itself, so the search skips to each one
_MD_UNDERSCORE = re.compile(r"_(?:(?<![^\W_]_)|(?![^\W_]))")
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
    text = text.replace("\r\n", " ")
    for ch, inert in _MD_INERT:
        if ch in text:
            text = text.replace(ch, inert)
    return _MD_UNDERSCORE.sub(r"\\_", text) if "_" in text else text


def _md_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    out = ["| " + " | ".join(md_escape(h) for h in header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(md_escape(c) for c in row) + " |" for row in rows]
    return out + [""]


def _md_settings(summary: Summary) -> list[str]:
    out = ["## Provenance", ""]
    out += _md_table(["", "value"], provenance_rows(summary))
    out += ["### Judge", ""]
    out += (_md_table(["setting", "value"], [(k, setting_text(v)) for k, v in summary.judge.items()])
            if summary.judge else ["Not recorded.", ""])
    out += ["### Config", ""]
    out += (_md_table(["key", "value"], [(k, setting_text(v)) for k, v in summary.config.items()])
            if summary.config else ["Not recorded.", ""])
    return out


def _md_rows(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """:func:`_md_table` of the rows, each text cell but the facts escaped once per distinct text:
    a document's rows repeat its doc_id, every row a side, status and fact type, and a judge's
    reasonings repeat (report.md's 46,000 cells on 1,000 documents x 20 facts)."""
    escaped: dict[str, str] = {}

    def cell(value: Any) -> str:
        if type(value) is not str:
            return md_escape(value)
        text = escaped.get(value)
        if text is None:
            text = escaped[value] = md_escape(value)
        return text

    header = ["doc_id", "side", "id", "fact_type", "status", "fact", "linked / closest", "reasoning", "note"]
    out = _md_table(header, [])[:-1]
    out += [f"| {cell(r['doc_id'])} | {cell(r['side'])} | {cell(r['id'])} | {cell(r['fact_type'])} | "
            f"{cell(r['status'])} | {md_escape(fact_json(r['fact']))} | {md_escape(other_text(r))} | "
            f"{cell(r['reasoning'])} | {cell(r['note'])} |" for r in rows]
    return out + [""]



def _md_headline(summary: Summary) -> list[str]:
    micro, macro, ci = summary.micro, summary.macro, summary.ci95
    boot = summary.bootstrap
    out = ["# factjudge evaluation report", ""]
    out += [line for b in banners(summary) for line in (f"> **Warning:** {md_escape(b)}", "")]
    out += [(f"{summary.documents:,} documents, judge {md_escape(judge_label(summary.judge))}. "
            f"95% intervals: bootstrap over documents ({md_escape(boot.get('resamples', '?'))} "
            f"resamples, seed {md_escape(boot.get('seed', '?'))}). Provenance, judge settings and "
            "config are at the end."), ""]
    return out + _md_table(["", "precision", "recall", "F1"], [
        ["micro", *(fmt(getattr(micro, k)) for k in RATIO_KEYS)],
        ["micro 95% CI", *(fmt_ci(ci[k]) for k in RATIO_KEYS)],
        ["macro", *(fmt(getattr(macro, k)) for k in RATIO_KEYS)],
        ["macro: documents defined", *(str(macro.defined[k]) for k in RATIO_KEYS)],
    ])


def _md_reviewed(summary: Summary) -> list[str]:
    """The figures with a person's verdicts (``review apply``), next to the judge's."""
    line = reviewed_line(summary)
    if line is None:
        return []
    return (["## Reviewed by a person", "", f"**{md_escape(line)}**", "", md_escape(reviewed_note(summary)), ""]
            + _md_table(REVIEWED_HEADER, reviewed_rows(summary)))


def _md_judge_corrected(summary: Summary) -> list[str]:
    """The figures corrected for the judge (``eval --judge-calibration``), next to the raw ones."""
    if not summary.judge_corrected:
        return []
    return (["## Judge-corrected estimates", "", md_escape(judge_corrected_note(summary.judge_corrected)), ""]
            + _md_table(JUDGE_CORRECTED_HEADER, judge_corrected_rows(summary)))


def _md_categories(summary: Summary) -> list[str]:
    """Where the errors are: the categories per fact type and the fields near misses differ in."""
    rows = category_rows(summary)
    if not rows:
        return []
    return ["## Where the errors are", "", md_escape(CATEGORY_NOTE), "", *_md_table(CATEGORY_HEADER, rows)]


def _md_confidence(summary: Summary) -> list[str]:
    """The extractor's confidence: the figures, the reliability bins, thresholds and review curve."""
    c = summary.confidence
    if c is None:
        return []
    out = ["## Extractor confidence", "", md_escape(confidence_note(c)), ""]
    if c.judge_corrected:
        out += [md_escape(confidence_corrected_note(c)), ""]
    if c.predictions:
        header, rows = threshold_table(c)
        out += _md_table(RELIABILITY_HEADER, reliability_rows(c))
        out += [md_escape(headline) + ".", ""] if (headline := confidence_headline(c)) else []
        out += _md_table(header, rows) + _md_table(REVIEW_HEADER, review_table(c))
    return out


def _md_fields(summary: Summary) -> list[str]:
    """The field-level scores, worst field first."""
    rows = field_rows(summary)
    if not rows:
        return []
    return ["## Fields", "", md_escape(FIELD_NOTE), "", *_md_table(FIELD_HEADER, rows)]


def _md_tables(summary: Summary, worst: Sequence[Mapping[str, Any]]) -> list[str]:
    """Totals, by fact type, conflicts, worst documents and skipped lines."""
    out = ["## Totals", ""]
    out += _md_table(TOTALS_HEADER, [totals_row(summary.micro)])
    out += ["## By fact type", ""]
    out += _md_table(BY_TYPE_HEADER, by_type_rows(summary.by_fact_type))
    out += _md_categories(summary)
    out += _md_confidence(summary)
    out += _md_fields(summary)
    out += ["## Reconciliation conflicts", ""]
    out += (_md_table(["rule", "count"], list(summary.conflicts.items()))
            if summary.conflicts else ["None.", ""])
    out += ["## Worst documents", ""]
    out += (_md_table(["doc_id", "precision", "recall", "F1", "FN", "FP", "ERROR"],
                      [[w["doc_id"], *worst_cells(w)] for w in worst])
            if worst else ["Every document is fully correct.", ""])
    if summary.skipped:
        out += ["## Skipped input lines", ""]
        out += _md_table(["file", "line", "error"],
                         [[s["file"], s["line"], s["error"]] for s in summary.skipped])
    return out


def _md_facts(micro: MicroCounts, rows: Sequence[Mapping[str, Any]], rows_total: int,
              rows_order: str) -> list[str]:
    """The FN/FP/ERROR facts, then the TP facts of a spot check (if any)."""
    failing = [r for r in rows if r["status"] != "TP"]
    tp_rows = [r for r in rows if r["status"] == "TP"]
    out = ["## FN, FP and ERROR facts", ""]
    note = rows_note(len(failing), rows_total, rows_order)
    if note:
        out += [note, ""]
    out += _md_rows(failing) if failing else ["None.", ""]
    if tp_rows:
        tp_total = micro.tp_gold + micro.tp_predicted
        out += ["## TP facts (spot check)", "",
                (f"{len(tp_rows):,} of the {tp_total:,} TP facts, {order_text(rows_order)}, "
                 "each with the fact it is linked to."), ""]
        out += _md_rows(tp_rows)
    return out


def _md_source(summary: Summary, omissions: Sequence[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """The predictions checked against their text, and the possible gold omissions listed."""
    s = summary.source
    if s is None:
        return []
    out = ["## Possible gold omissions", "", md_escape(source_note(s)), ""]
    out += _md_table(SOURCE_HEADER, source_rows(s))
    if omissions:
        out += _md_table(OMISSION_HEADER, omission_rows(omissions))
        more = s.possible_gold_omissions.total - len(omissions)
        out += [f"{more:,} more are not listed (summary.json counts them all).", ""] if more > 0 else []
    return out


def render_markdown(summary: Summary, worst: Sequence[Mapping[str, Any]],
                    rows: Sequence[Mapping[str, Any]], rows_total: int, *,
                    rows_order: str = "dataset", omissions: Sequence[tuple[str, Mapping[str, Any]]] = ()) -> str:
    """``report.md``. ``rows``: from :func:`~.rows.collect_rows` / :func:`~.rows.select_rows`; the
    FN/FP/ERROR ones are listed, TP ones (if any) in a section of their own. ``rows_total``: the
    number of FN/FP/ERROR facts of the whole run. ``rows_order``: ``"worst"`` when the rows were
    selected worst documents first (:func:`~.rows.select_rows`), ``"dataset"`` when in dataset order.
    ``omissions``: the first possible gold omissions (summary.json's ``source``), listed first."""
    out = _md_headline(summary)
    out += _md_reviewed(summary)
    out += _md_judge_corrected(summary)
    out += _md_source(summary, omissions)
    out += _md_tables(summary, worst)
    out += _md_facts(summary.micro, rows, rows_total, rows_order)
    out += ["## Usage", ""]
    out += _md_table(["", "value"], usage_text(summary.usage))
    out += _md_settings(summary)
    return "\n".join(out).rstrip("\n") + "\n"


# --------------------------------------------------------------------------- compare.md


def _md_changed(cmp: CompareResult) -> list[str]:
    changed = cmp.changed
    counts = changed_counts(changed)
    total = cmp.changed_total or len(changed)
    out = ["## Facts whose status changed", "",
           counts_text(counts)
           + (f" (showing {len(changed):,} of {total:,})" if total > len(changed) else "") + ".", ""]
    out += (_md_table(["doc_id", "side", "id", "fact_type", "A", "B", "change", "fact", "B reasoning"],
                      [[c["doc_id"], c["side"], c["id"], c["fact_type"], status_text(c["status_a"]),
                        status_text(c["status_b"]),
                        change_text(c["change"]) + ("" if c.get("same_fact", True) else " (different fact, same id)"),
                        versions_text(c), c.get("reasoning_b") or ""] for c in changed])
            if changed else ["None.", ""])
    return out


def render_compare_markdown(cmp: CompareResult) -> str:
    """``compare.md`` of two eval runs; ``cmp`` as in :data:`~.text.COMPARE_DOC`."""
    boot = cmp.bootstrap
    out = ["# factjudge comparison", "",
           f"A: {md_escape(cmp.a)}  ", f"B: {md_escape(cmp.b)}", "",
           f"{cmp.documents:,} documents scored by both" + compare_only_text(cmp)
           + ". Micro figures over them; B-A with a paired bootstrap 95% interval over documents"
           + (f" ({md_escape(boot.get('resamples'))} resamples, seed {md_escape(boot.get('seed'))})"
              if boot else "") + ".", ""]
    for w in cmp.warnings:
        out += [f"Warning: {md_escape(w)}", ""]
    out += _md_table(METRIC_HEADER, metric_rows(cmp.metrics))
    if cmp.auroc:
        out += [md_escape(compare_auroc_text(cmp)) + ".", ""]
    out += ["## By fact type", ""]
    out += (_md_table(TYPE_HEADER, type_rows(cmp.by_fact_type)) if cmp.by_fact_type else ["None.", ""])
    categories = compare_category_rows(cmp)
    if categories:
        out += ["## Where the errors are", "", md_escape(CATEGORY_NOTE), ""]
        out += _md_table(COMPARE_CATEGORY_HEADER, categories)
    if cmp.fields:
        out += ["## Fields", ""]
        out += _md_table(COMPARE_FIELD_HEADER, compare_field_rows(cmp))
    out += _md_changed(cmp)
    prov = cmp.provenance
    if prov:
        out += ["## Provenance", ""]
        out += _md_table(["", "value"], [(k, setting_text(v)) for k, v in prov.items()])
    return "\n".join(out).rstrip("\n") + "\n"


render_compare_markdown.__doc__ = (render_compare_markdown.__doc__ or "") + "\n\n" + COMPARE_DOC
