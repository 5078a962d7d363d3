"""What a report says, in the same words in Markdown and HTML: a fact as JSON, the notes above the
facts table, the usage, provenance and settings rows, and the rows of the compare tables.
Plain strings; each format escapes them its own way (``md_escape``, Jinja2's autoescape)."""
from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.aggregate import MicroCounts, Summary
from ..core.alerts import ERROR_SHARE_ALERT, in_scope_facts_count
from ..core.analysis import sorted_counts, total_categories
from ..core.confidence import ConfidenceSummary
from ..core.fields import worst_first
from ..io.run_models import CompareResult, MetricDiff
from ..models import CategoryCounts, Counts, Prices, money
from ..util.jsonutil import canonical_json
from .format import fmt, fmt_ci, fmt_ci_diff, fmt_diff

RATIO_KEYS = ("precision", "recall", "f1")

COMPARE_DOC = """The ``cmp`` of :func:`render_compare_markdown` / :func:`render_compare_html`, a
:class:`~factjudge.io.run_models.CompareResult`:

- ``a``, ``b`` (str): the two eval output folders (A the baseline, B the candidate);
- ``documents`` (int): documents both runs scored (the comparison is over these);
  ``only_a``, ``only_b`` (int, optional): documents left out because one run lacks them;
- ``metrics``: ``{"precision"|"recall"|"f1": {"a", "b", "diff", "ci95", "excludes_zero"}}``,
  micro figures over the shared documents, ``diff`` = B - A, ``ci95`` the paired bootstrap
  ``[low, high]`` of B - A or ``None``, ``excludes_zero`` bool or ``None`` (exactly what
  ``core.aggregate.paired_bootstrap`` returns);
- ``by_fact_type``: ``{fact_type: same shape as metrics}`` (``ci95`` / ``excludes_zero`` may
  be ``None``; per-document keys from :func:`fact_type_keys` give them);
- ``changed``: rows of :func:`changed_facts` (over the shared documents);
  ``changed_total`` (int, optional): how many there were when ``changed`` was cut short;
- optional: ``bootstrap`` ``{"resamples", "seed"}``, ``warnings`` (list of str),
  ``provenance`` ``{"factjudge", "created"}``, ``categories`` ``{"a"|"b": {fact_type:
  CategoryCounts as a dict}}`` (:mod:`factjudge.core.analysis`).
"""

#: Header of the per-fact-type table of a compare.
TYPE_HEADER = ["fact_type", *(f"{k} {c}" for k in ("P", "R", "F1") for c in ("A", "B", "B-A", "95% CI"))]
#: Header of the metrics table of a compare.
METRIC_HEADER = ["metric", "A", "B", "B-A", "95% CI of B-A", "excludes 0"]
#: Header of the totals table of a report.
TOTALS_HEADER = ["TP gold", "FN", "TP predicted", "FP", "ERROR", "out of scope (gold)",
                 "out of scope (predicted)"]
TOTALS_KEYS = ("tp_gold", "fn", "tp_predicted", "fp", "errors", "out_of_scope_gold", "out_of_scope_predicted")
#: Header of the by-fact-type table of a report.
BY_TYPE_HEADER = ["fact_type", "TP gold", "FN", "TP predicted", "FP", "ERROR", "precision", "recall", "F1"]


def metric_label(key: str) -> str:
    return "F1" if key == "f1" else key


def yes_no(x: bool | None) -> str:
    return "n/a" if x is None else "yes" if x else "no"


#: One encoder for every fact: ``json.dumps`` with options builds an encoder a call (report.md
#: writes about 10,000 facts).
_FACT_JSON = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": ")).encode


def fact_json(fact: Mapping[str, Any]) -> str:
    return _FACT_JSON(fact)


def other_text(row: Mapping[str, Any]) -> str:
    """The linked facts of a row, or its closest fact: "linked p01 {...}", "closest p05 (FP, 92.3;
    differs in: role) {...}"."""
    if row.get("linked"):
        return "; ".join(f"linked {x['id']} {fact_json(x['fact'])}" for x in row["linked"])
    near = row.get("closest")
    if near:
        return (f"closest {near['id']} ({near['status']}, {near['score']:g}{differ_text(near)}) "
                f"{fact_json(near['fact'])}")
    return ""


def differ_text(near: Mapping[str, Any]) -> str:
    """``; differs in: role, city`` for a closest fact (empty when it names no field)."""
    differ = near.get("differ") or []
    return f"; differs in: {', '.join(map(str, differ))}" if differ else ""


def setting_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def usage_text(usage: Mapping[str, Any]) -> list[tuple[str, str]]:
    label = {"seconds": "seconds (per document, summed: overlaps under concurrency)",
             "cost": "cost, from the tokens the server reported"}
    return [(label.get(k, k), _usage_value(k, v)) for k, v in usage.items()]


def _usage_value(key: str, value: Any) -> str:
    if key == "cost" and isinstance(value, (int, float)):
        return money(value)  # 3 decimals would show a small run's cost as 0.000
    if key == "prices" and isinstance(value, dict):
        return Prices.model_validate(value).describe()
    return f"{value:,.3f}" if isinstance(value, float) else f"{value:,}" if isinstance(value, int) else str(value)


def rows_note(shown: int, total: int, rows_order: str) -> str:
    """What the failing-facts table holds, when it does not hold every failing fact."""
    if shown >= total:
        return ""
    if rows_order == "worst":
        return (f"Showing the {shown:,} rows of the worst documents first, of {total:,} "
                "FN/FP/ERROR facts; all of them are in results.jsonl.")
    return (f"Showing the first {shown:,} of {total:,} FN/FP/ERROR facts (in dataset order); "
            "all of them are in results.jsonl.")


def order_text(rows_order: str) -> str:
    return "the worst documents first" if rows_order == "worst" else "in dataset order"


def judge_label(judge: Mapping[str, Any]) -> str:
    """The judge as a report's headline names it (its ``name`` and ``model``), from its identity."""
    return " ".join(str(judge[k]) for k in ("name", "model") if judge.get(k)) or "?"


def provenance_rows(summary: Summary) -> list[tuple[str, str]]:
    prov = summary.provenance
    rows = [("factjudge", str(prov.get("factjudge", "not recorded"))),
            ("created", str(prov.get("created", "not recorded")))]
    inputs = prov.get("inputs") or []
    rows += [("input", str(p)) for p in inputs] or [("input", "not recorded")]
    return rows


def totals_row(micro: MicroCounts) -> list[int]:
    return [getattr(micro, k) for k in TOTALS_KEYS]


def by_type_rows(by_type: Mapping[str, Counts]) -> list[list[str | int]]:
    return [[t, c.tp_gold, c.fn, c.tp_predicted, c.fp, c.errors, fmt(c.precision), fmt(c.recall), fmt(c.f1)]
            for t, c in by_type.items()]


#: Header of the categories table (:mod:`factjudge.core.analysis`).
CATEGORY_HEADER = ["fact_type", "correct", "near miss", "missing", "spurious", "duplicate", "merges", "splits",
                   "near misses differ in"]
#: What the categories mean, under their table (the README has them in full, with sources).
CATEGORY_NOTE = ("correct: TP links; near miss: an FN gold fact and an FP prediction of the same type "
                 "that agree on at least half of the compared fields, counted once; missing: other FN; "
                 "duplicate: an FP prediction dropped because another one kept its gold fact (a split); "
                 "spurious: other FP; merge: a prediction linked to several gold facts. A near miss "
                 "differing in two fields counts under both.")


def differ_cell(c: CategoryCounts) -> str:
    """``role 6 of 16, city 2 of 16`` (one field only: 5): the fields near misses differ in."""
    if not c.near_miss_fields:
        return ""
    text = ", ".join(f"{name} {k} of {c.near_miss}" for name, k in c.near_miss_fields.items())
    one = sum(c.one_field.values())
    return text + (f" ({one} in one field only)" if one else "")


#: The counted columns of a categories table, in order.
CATEGORY_KEYS = ("correct", "near_miss", "missing", "spurious", "duplicate", "merges", "splits")


def category_rows(summary: Summary) -> list[list[str | int]]:
    """One row per fact type and one for all, from the summary's categories (none without)."""
    by_type, total = summary.categories_by_fact_type, summary.categories
    if not by_type:
        return []
    rows = [[t, *(getattr(c, k) for k in CATEGORY_KEYS), differ_cell(c)] for t, c in by_type.items()]
    return rows + [["all", *(getattr(total, k) for k in CATEGORY_KEYS), differ_cell(total)]]


#: Header of a compare's categories table.
COMPARE_CATEGORY_HEADER = ["fact_type", "run", *CATEGORY_HEADER[1:]]


def compare_category_rows(cmp: CompareResult) -> list[list[str | int]]:
    """Rows A and B per fact type, then for all, of a compare's ``categories`` (none without)."""
    if not any(cmp.categories.values()):
        return []
    by_run = {run: cmp.categories.get(run, {}) for run in ("a", "b")}
    types = sorted({t for counts in by_run.values() for t in counts})
    rows: list[list[str | int]] = []
    for t in [*types, None]:
        for run, counts in by_run.items():
            c = sorted_counts({"": total_categories(counts)})[""] if t is None else counts.get(t, CategoryCounts())
            rows.append(["all" if t is None else t, run.upper(), *(getattr(c, k) for k in CATEGORY_KEYS),
                         differ_cell(c)])
    return rows


#: Header of the field-level table.
FIELD_HEADER = ["fact_type", "field", "correct", "wrong", "missing", "spurious", "precision", "recall", "F1",
                "F1 95% CI"]
#: What the field-level counts mean, under their table (docs/concepts/metrics.md has them in full).
FIELD_NOTE = ("Each gold fact is aligned with its linked prediction, else with its near-miss partner; list "
              "items (field[]) are aligned one-to-one. correct: aligned and equal (a linked pair's values "
              "all count as equal); wrong: aligned, both present, different; missing: a gold value with "
              "no counterpart; spurious: a predicted value with no counterpart. Precision = correct / "
              "(correct + wrong + spurious), recall = correct / (correct + wrong + missing). Worst F1 first.")


def field_rows(summary: Summary) -> list[list[str | int]]:
    """One row per fact type and field path of the summary's field-level scores, worst F1 first."""
    rows = worst_first((t, path, c) for t, paths in summary.fields.items() for path, c in paths.items())
    return [[t, path, c.correct, c.wrong, c.missing, c.spurious, fmt(c.precision), fmt(c.recall), fmt(c.f1),
             fmt_ci((c.ci95 or {}).get("f1"))] for t, path, c in rows]


def worst_cells(w: Mapping[str, Any]) -> list[Any]:
    """The figures of a worst-documents row (after its doc_id)."""
    return [fmt(w["precision"]), fmt(w["recall"]), fmt(w["f1"]), w["fn"], w["fp"], w["errors"]]


# --------------------------------------------------------------------------- compare


def compare_only_text(cmp: CompareResult) -> str:
    """" (2 only in A and 1 only in B left out)" when the runs do not share every document."""
    if not (cmp.only_a or cmp.only_b):
        return ""
    return f" ({cmp.only_a:,} only in A and {cmp.only_b:,} only in B left out)"


def metric_rows(metrics: Mapping[str, MetricDiff]) -> list[list[str]]:
    return [[k, fmt(m.a), fmt(m.b), fmt_diff(m.diff), fmt_ci_diff(m.ci95), yes_no(m.excludes_zero)]
            for k, m in metrics.items()]


def type_rows(by_type: Mapping[str, Mapping[str, MetricDiff]]) -> list[list[str]]:
    rows = []
    for t, ms in by_type.items():
        row = [t]
        for k in RATIO_KEYS:
            m = ms.get(k) or MetricDiff()
            row += [fmt(m.a), fmt(m.b), fmt_diff(m.diff), fmt_ci_diff(m.ci95) if m.ci95 else ""]
        rows.append(row)
    return rows


#: Header of a compare's field-level table.
COMPARE_FIELD_HEADER = ["fact_type", "field", *TYPE_HEADER[1:]]


def compare_field_rows(cmp: CompareResult) -> list[list[str]]:
    """A compare's field-level figures: per fact type and field path, A, B, B-A and its interval."""
    return [[t, *row] for t, paths in cmp.fields.items() for row in type_rows(paths)]


def status_text(s: str | None) -> str:
    return "absent" if s is None else s


#: A change kind as the compare pages name it (``"new"``: a fact run A did not have).
CHANGE_LABELS = {"fixed": "fixed", "broke": "broke", "new": "new in B", "other": "other"}


def change_text(change: str) -> str:
    return CHANGE_LABELS.get(change, change)


def changed_counts(changed: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    counts = dict.fromkeys(CHANGE_LABELS, 0)
    for c in changed:
        counts[c["change"]] = counts.get(c["change"], 0) + 1
    return counts


# --------------------------------------------------------------------------- judge-corrected figures

#: Header of the judge-corrected table of a report.
JUDGE_CORRECTED_HEADER = ["", "precision", "recall", "F1"]


def judge_corrected_rows(summary: Summary) -> list[list[str]]:
    """The raw micro figures and the judge-corrected ones, each with its 95% interval."""
    jc, micro, ci = summary.judge_corrected or {}, summary.micro, summary.ci95
    return [["raw (as judged)", *(fmt(getattr(micro, k)) for k in RATIO_KEYS)],
            ["raw 95% CI", *(fmt_ci(ci[k]) for k in RATIO_KEYS)],
            ["judge-corrected", *(fmt(jc[k]) for k in RATIO_KEYS)],
            ["judge-corrected 95% CI", *(fmt_ci(jc["ci95"][k]) for k in RATIO_KEYS)]]


def reviewed_line(summary: Summary) -> str | None:
    """``reviewed: P .. R .. F1 .. on N reviewed facts`` (``review apply``), None without a review."""
    r = summary.reviewed
    if r is None:
        return None
    return f"reviewed: P {fmt(r.precision)} R {fmt(r.recall)} F1 {fmt(r.f1)} on {r.reviewed:,} reviewed facts"


#: The columns of the reviewed figures' table (report.md).
REVIEWED_HEADER = ["", "precision", "recall", "F1"]


def reviewed_rows(summary: Summary) -> list[list[str]]:
    """The judge's micro figures and the reviewed ones (:func:`reviewed_line`), side by side."""
    r, micro = summary.reviewed, summary.micro
    rows = [["judge", *(fmt(getattr(micro, k)) for k in RATIO_KEYS)]]
    if r is not None:
        rows.append([f"reviewed ({r.reviewed:,} facts)", *(fmt(getattr(r, k)) for k in RATIO_KEYS)])
    return rows


def reviewed_note(summary: Summary) -> str:
    """Where the reviewed figures come from, in one paragraph."""
    r = summary.reviewed
    if r is None:
        return ""
    verdicts = ", ".join(f"{k} {v:,}" for k, v in sorted(r.by_verdict.items()))
    return (f"The run's figures with a person's verdicts in place of the judge's where given "
            f"(factjudge review apply of {r.source or '?'}: {r.reviewed:,} reviewed facts, {verdicts}; "
            f"gold values corrected: {r.gold_corrections:,}, gold omissions found: {r.omissions:,}). The facts "
            "not reviewed keep the judge's verdicts.")


def judge_corrected_note(jc: Mapping[str, Any]) -> str:
    """How the judge-corrected figures were made, in one paragraph."""
    cal = jc.get("calibration") or {}
    counts = ", ".join(f"{k} {cal[k]}" for k in ("tp", "fp", "fn", "tn") if k in cal)
    capped = (f" Capped at 1: {' and '.join(jc['capped'])} (the calibration does not fit this run well)."
              if jc.get("capped") else "")
    return (f"Corrected for the judge's link errors measured in {cal.get('source', '?')} (judge "
            f"{cal.get('judge') or '?'}: link precision {fmt(jc['link_precision'])}, recall "
            f"{fmt(jc['link_recall'])}; {counts}): each figure is the raw one times precision / recall "
            "of the judge, capped at 1. 95% intervals: the document bootstrap, with the judge's "
            "precision and recall drawn from their posterior given the counts in each resample. "
            "Assumes the labelled pairs are like this run's and the judge's errors do not depend on "
            f"the extractor.{capped}")


def counts_text(counts: Mapping[str, int]) -> str:
    """"3 fixed, 1 broke, 2 new in B, 0 other"."""
    return ", ".join(f"{n:,} {change_text(k)}" for k, n in counts.items())


def versions_text(change: Mapping[str, Any]) -> str:
    """A changed fact's fields; both versions when the two runs have another fact under its id."""
    if change.get("same_fact", True) or change.get("fact_a") is None:
        return fact_json(change["fact"])
    return f"A: {fact_json(change['fact_a'])}; B: {fact_json(change['fact'])}"


# --------------------------------------------------------------------------- banners and labels

def in_scope_facts(micro: Mapping[str, Any]) -> int:
    """Facts judged or failed on both sides (:func:`~factjudge.core.alerts.in_scope_facts_count`
    of a summary's counts)."""
    return in_scope_facts_count(Counts(**{k: int(micro.get(k) or 0) for k in _COUNT_KEYS}))


_COUNT_KEYS = ("tp_gold", "fn", "tp_predicted", "fp", "errors")


def banners(summary: Summary) -> list[str]:
    """What a reader must see before the figures: the summary's ``alerts`` (likely mistakes,
    :mod:`factjudge.core.alerts`), then the ERROR share when it is over the alerts' threshold
    (:data:`~factjudge.core.alerts.ERROR_SHARE_ALERT`) and no alert says so already (a summary
    written before alerts existed)."""
    out = [a.message for a in summary.alerts]
    errors, total = summary.micro.errors, in_scope_facts_count(summary.micro)
    if total and errors / total > ERROR_SHARE_ALERT and not any(a.kind == "errors" for a in summary.alerts):
        out.append(f"{errors:,} of {total:,} in-scope facts ({100 * errors / total:.0f}%) are ERROR: the judge "
                   "gave no verdict on them and P, R and F1 leave them out. Check usage and the ERROR rows "
                   "before reading the figures.")
    return out


def config_hash(config: Any) -> str:
    """8 hex digits naming a config: the same keys and values give the same hash, in any order."""
    return hashlib.sha256(canonical_json(config).encode("utf-8")).hexdigest()[:8]


# --------------------------------------------------------------------------- extractor confidence

#: Header of a report's thresholds table and of its review table.
THRESHOLD_HEADER = ["auto-accept", "precision", "recall", "predictions kept"]
REVIEW_HEADER = ["reviewed (lowest confidence first)", "predictions", "errors caught"]


def _share(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.0f}%"


def confidence_note(c: ConfidenceSummary) -> str:
    """The confidence figures in one paragraph: what they are over and what was left out."""
    without = (f" {c.without_confidence:,} judged prediction{'' if c.without_confidence == 1 else 's'} "
               f"without one{f' ({c.invalid:,} not a number in [0, 1])' if c.invalid else ''} "
               f"{'is' if c.without_confidence == 1 else 'are'} in none of the figures."
               ) if c.without_confidence else ""
    return (f"The extractor's confidence (field {c.field}) against the judge's verdicts (TP correct, FP "
            f"wrong) over {c.predictions:,} predictions: AUROC {fmt(c.auroc)} (a correct prediction "
            f"ranked above a wrong one; 0.5 is chance), ECE {fmt(c.ece)} ({c.ece_bins} equal-width "
            f"bins), Brier {fmt(c.brier)}.{without}")


#: The cut point the reports put in words above the thresholds table.
HEADLINE_THRESHOLD = 0.9


def confidence_headline(c: ConfidenceSummary) -> str:
    """"auto-accept at >= 0.90: precision 1.000, 53% of predictions kept" ("" without that row)."""
    row = next((r for r in c.thresholds if r.threshold == HEADLINE_THRESHOLD), None)
    if row is None:
        return ""
    return (f"auto-accept at >= {row.threshold:.2f}: precision {fmt(row.precision)}, recall "
            f"{fmt(row.recall)}, {_share(row.kept)} of predictions kept")


def threshold_table(c: ConfidenceSummary) -> tuple[list[str], list[list[str]]]:
    """The thresholds table, with the judge-corrected precision and recall when there are some."""
    jc = {r["threshold"]: r for r in (c.judge_corrected or {}).get("thresholds", ())}
    header = THRESHOLD_HEADER + (["precision (judge-corrected)", "recall (judge-corrected)"] if jc else [])
    rows = []
    for r in c.thresholds:
        row = [f">= {r.threshold:.2f}", fmt(r.precision), fmt(r.recall),
               f"{_share(r.kept)} ({r.kept_predictions:,})"]
        if jc:
            row += [fmt(jc.get(r.threshold, {}).get("precision")), fmt(jc.get(r.threshold, {}).get("recall"))]
        rows.append(row)
    return header, rows


def review_table(c: ConfidenceSummary) -> list[list[str]]:
    return [[_share(r.share_reviewed), f"{r.reviewed:,}", _share(r.errors_caught)] for r in c.review]


def confidence_corrected_note(c: ConfidenceSummary) -> str:
    """What the judge calibration changes here ("" without one)."""
    jc = c.judge_corrected
    if not jc:
        return ""
    return (f"Judge-corrected (--judge-calibration): ECE {fmt(jc.get('ece'))}; each share of correct "
            "predictions (a bin's, a threshold's precision and recall) times the judge's link precision / "
            f"recall ({jc.get('factor', 0):.3f}), capped at 1. AUROC and the review curve rank predictions "
            "and are not corrected: judge errors that do not depend on the confidence pull AUROC towards 0.5.")


def reliability_rows(c: ConfidenceSummary) -> list[list[str]]:
    """The reliability diagram as a table (report.md): the non-empty bins."""
    return [[f"{b.low:.1f}-{b.high:.1f}", f"{b.predictions:,}", fmt(b.confidence), fmt(b.accuracy)]
            for b in c.bins if b.predictions]


RELIABILITY_HEADER = ["confidence bin", "predictions", "mean confidence", "share correct"]


def compare_auroc_text(cmp: CompareResult) -> str:
    """``extractor confidence AUROC ...: A 0.783, B 0.812`` ("" when neither run has a confidence)."""
    if not cmp.auroc:
        return ""
    return ("extractor confidence AUROC (a correct prediction ranked above a wrong one, over the shared "
            f"documents): A {fmt(cmp.auroc.get('a'))}, B {fmt(cmp.auroc.get('b'))}")
