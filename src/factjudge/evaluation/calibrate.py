"""Calibrate a judge against human labels: how often does it link what a person would link?

A labels file (``.jsonl``) holds one labelled decision per line::

    {"id": "cal-001", "gold_fact": {...}, "predicted_fact": {...}, "match": true,
     "category": "numbers_and_scales", "note": "why (optional)"}

Each line is judged as a document of one gold and one predicted fact, both directions and
reconciled as in ``factjudge judge``; the judge *links* the two facts when the gold fact ends
``TP`` with the predicted id among its ``matched_ids``. The links are compared with the labels:
accuracy, precision and recall of links, Cohen's kappa and the confusion counts, overall, per
``category`` and per ``fact_type`` of the gold fact, plus every disagreement with the judge's
reasoning. An optional first line ``{"_header": {...}}`` describes the file and is skipped.

``factjudge`` ships a labelled set of its own: :func:`builtin_labels_path`.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import Field, StrictInt, StrictStr, ValidationError

from ..core.correction import JudgeCalibration, JudgeErrors
from ..core.metrics import cohen_kappa, prf, ratio
from ..errors import InputError
from ..io.config import parse_config
from ..io.datasets import Document
from ..io.facts import validate_facts
from ..io.inputs import check_input_kind
from ..io.jsonl import coerce_id, json_type, jsonl_lines, parse_json, parse_json_line, read_settings
from ..io.review import load_review, review_header
from ..judges.base import Judge
from ..judges.rules.judge import RulesJudge
from ..models import CallUsage, JudgeConfig, JudgeResult, verdict_of
from ..models.base import Model
from ..util.aio import run_sync
from ..util.bounds import COUNT_MAX
from .runner import judge_documents

__all__ = [
    "CalibrationReport",
    "Confusion",
    "Decision",
    "Disagreement",
    "Label",
    "LineError",
    "builtin_labels_path",
    "calibrate",
    "calibrate_async",
    "decision_from_result",
    "format_report",
    "load_judge_calibration",
    "load_labels",
    "score",
]

#: Keys a label line may carry; anything else is a typo and an error.
LABEL_KEYS = ("id", "gold_fact", "predicted_fact", "match", "category", "note")
#: The ``by_category`` key of lines without a category.
NO_CATEGORY = "(none)"

#: Called after each judged line with (lines done, lines in total).
CalibrationProgress = Callable[[int, int], None]


# --------------------------------------------------------------------------- labels


@dataclass(frozen=True)
class Label:
    """One labelled decision: should ``predicted_fact`` be linked to ``gold_fact``?"""

    id: str
    gold_fact: dict[str, Any]
    predicted_fact: dict[str, Any]
    match: bool
    category: str | None = None
    note: str | None = None
    #: Line number in the labels file (0 when built in Python).
    line: int = 0


def builtin_labels_path() -> Path:
    """The labelled calibration set bundled with factjudge (``data/calibration.jsonl``)."""
    ref = resources.files("factjudge").joinpath("data/calibration.jsonl")
    with resources.as_file(ref) as path:  # a real file for a normal (non-zip) install
        return Path(path)


def _label(path: Path, lineno: int, rec: object) -> Label:
    prefix = f"{path}: line {lineno}"
    if not isinstance(rec, dict):
        raise InputError(f"{prefix}: a label must be a JSON object, got {json_type(rec)}")
    label_id = coerce_id(rec.get("id"), "id", prefix)
    prefix = f"{prefix} (id {label_id!r})"
    unknown = [k for k in rec if k not in LABEL_KEYS]
    if unknown:
        raise InputError(f"{prefix}: unknown key {unknown[0]!r} "
                         f"(a label has {', '.join(LABEL_KEYS)})")
    if "match" not in rec:
        raise InputError(f"{prefix}: missing 'match' (true or false)")
    if not isinstance(rec["match"], bool):
        raise InputError(f"{prefix}: 'match' must be true or false, "
                         f"got {json_type(rec['match'])} {json.dumps(rec['match'])}")
    facts = []
    for key in ("gold_fact", "predicted_fact"):
        if key not in rec:
            raise InputError(f"{prefix}: missing '{key}' (a fact object)")
        facts.extend(validate_facts([(f"line {lineno}: {key}", rec[key])], str(path)))
    optional: dict[str, str | None] = {}
    for key in ("category", "note"):
        value = rec.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise InputError(f"{prefix}: '{key}' must be a non-empty string or null, "
                             f"got {json_type(value)} {json.dumps(value)}")
        optional[key] = value
    return Label(id=label_id, gold_fact=facts[0], predicted_fact=facts[1], match=rec["match"],
                 category=optional["category"], note=optional["note"], line=lineno)


def load_labels(path: str | Path) -> list[Label]:
    """Load and check a labels file; every problem is an :class:`InputError` naming the line.

    Read as ``load_facts`` reads a ``.jsonl`` file, with the same answers: only ``\\n`` ends a
    line (a raw U+2028 may sit in a string), and nesting, huge integers and lone surrogates are
    refused with one line."""
    path = Path(path)
    # a spreadsheet is named as one; /dev/zero would be one endless line, read until memory is gone
    check_input_kind(path, "JSON lines", 'write one label per line as JSON: {"id", "gold_fact", '
                     '"predicted_fact", "match"}')
    if _is_review_export(path):
        return _review_labels(path)
    labels: list[Label] = []
    seen: dict[str, int] = {}
    for lineno, rec in _records(path):
        label = _label(path, lineno, rec)
        if label.id in seen:
            raise InputError(f"{path}: line {lineno} (id {label.id!r}): duplicate id, "
                             f"first seen at line {seen[label.id]}")
        seen[label.id] = lineno
        labels.append(label)
    if not labels:
        raise InputError(f"{path}: no labels (expected one JSON object per line)")
    return labels


def _is_review_export(path: Path) -> bool:
    for lineno, _, raw in jsonl_lines(path):
        return review_header(parse_json_line(raw.removesuffix(b"\n"), path, lineno)) is not None
    return False


def _review_labels(path: Path) -> list[Label]:
    """The labels of a review export (review.html's ``review.jsonl``): each reviewed pair, the
    person's match decision its label and the kind of decision (link, miss, extra) its category.
    An item without a pair (a miss or an extra with no fact close) labels nothing."""
    export = load_review(path)
    labels = [_label(path, x.line, {"id": x.id, "gold_fact": dict(x.gold_fact), "predicted_fact":
                                    dict(x.predicted_fact), "match": x.review.match, "category": x.review.kind})
              for x in export.lines
              if x.review.match is not None and x.gold_fact is not None and x.predicted_fact is not None]
    if not labels:
        raise InputError(f"{path}: no reviewed pair to calibrate with (review links, or misses and "
                         "extras shown beside a close fact)")
    return labels


def _records(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, parsed value) of each label line; the optional header line is checked and
    skipped."""
    first = True
    for lineno, _, raw in jsonl_lines(path):
        rec = parse_json_line(raw.removesuffix(b"\n"), path, lineno)
        if isinstance(rec, dict) and "_header" in rec:
            if not first:
                raise InputError(f"{path}: line {lineno}: a '_header' record may only be the "
                                 "first line")
            if set(rec) != {"_header"}:
                raise InputError(f"{path}: line {lineno}: a header line holds only '_header'")
        else:
            yield lineno, rec
        first = False


# --------------------------------------------------------------------------- scoring


@dataclass(frozen=True)
class Decision:
    """A label next to the judge's answer, the input of :func:`score`.

    ``predicted`` is whether the judge linked the two facts; ``None`` with an ``error`` when
    judging failed (or the facts were out of scope), and such a line is not scored."""

    id: str
    label: bool
    predicted: bool | None
    category: str | None = None
    fact_type: str = ""
    gold_fact: Mapping[str, Any] | None = None
    predicted_fact: Mapping[str, Any] | None = None
    gold_reasoning: str | None = None
    predicted_reasoning: str | None = None
    description: str = ""
    error: str | None = None


class Confusion(Model):
    """Counts of (label, judge) pairs and the figures derived from them; a ratio whose
    denominator is 0 is ``None``."""

    n: int = 0
    tp: int = 0  # labelled match, judge linked
    fp: int = 0  # labelled no match, judge linked
    fn: int = 0  # labelled match, judge did not link
    tn: int = 0  # labelled no match, judge did not link
    accuracy: float | None = None
    precision: float | None = None
    recall: float | None = None
    f1: float | None = None
    kappa: float | None = None


class Disagreement(Model):
    id: str
    category: str | None = None
    fact_type: str = ""
    label: bool
    predicted: bool
    gold_fact: dict[str, Any] | None = None
    predicted_fact: dict[str, Any] | None = None
    gold_reasoning: str | None = None
    predicted_reasoning: str | None = None
    description: str = ""


class LineError(Model):
    id: str
    category: str | None = None
    fact_type: str = ""
    error: str


class CalibrationReport(Model):
    """What :func:`score` returns; ``to_dict()`` is the JSON form."""

    labels: int = 0  # lines given, errors included
    errors: int = 0  # lines not scored (listed in error_lines)
    overall: Confusion = Field(default_factory=Confusion)
    by_category: dict[str, Confusion] = Field(default_factory=dict)
    by_fact_type: dict[str, Confusion] = Field(default_factory=dict)
    disagreements: list[Disagreement] = Field(default_factory=list)
    error_lines: list[LineError] = Field(default_factory=list)
    judge: str | None = None
    #: The LLM calls and tokens the calibration took (absent when no LLM was asked).
    usage: CallUsage | None = None
    #: What those calls cost at the prices given (``--price-in``...), and the prices, as eval's usage has them.
    cost: float | None = None
    prices: dict[str, Any] | None = None
    #: What the judge and the config were (the judge's identity, the config as eval's summary.json
    #: holds them): eval --judge-calibration warns when its run's differ.
    judge_identity: dict[str, Any] | None = None
    config: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def to_json(self, indent: int | None = 1) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)


def confusion(tp: int, fp: int, fn: int, tn: int) -> Confusion:
    """The figures of one confusion matrix (rows: the label, columns: the judge's link)."""
    n = tp + fp + fn + tn
    scores = prf(tp, fp, fn)
    # An F1 of 0 (precision and recall both 0) has always been reported as null here: kept, so
    # calibration reports read as they did.
    return Confusion(n=n, tp=tp, fp=fp, fn=fn, tn=tn, accuracy=ratio(tp + tn, n),
                     precision=scores.precision, recall=scores.recall, f1=scores.f1 or None,
                     kappa=cohen_kappa([[tp, fn], [fp, tn]]))


def _counts(pairs: Iterable[tuple[bool, bool]]) -> Confusion:
    tp = fp = fn = tn = 0
    for label, predicted in pairs:
        if predicted:
            tp, fp = (tp + 1, fp) if label else (tp, fp + 1)
        else:
            fn, tn = (fn + 1, tn) if label else (fn, tn + 1)
    return confusion(tp, fp, fn, tn)


def score(decisions: Iterable[Decision], judge: str | None = None) -> CalibrationReport:
    """Compare the judge's links with the labels (pure: no judging happens here)."""
    decisions = list(decisions)
    scored = [d for d in decisions if d.error is None and d.predicted is not None]
    by_category: dict[str, list[tuple[bool, bool]]] = {}
    by_type: dict[str, list[tuple[bool, bool]]] = {}
    for d in scored:
        pair = (d.label, bool(d.predicted))
        by_category.setdefault(d.category or NO_CATEGORY, []).append(pair)
        by_type.setdefault(d.fact_type, []).append(pair)
    return CalibrationReport(
        labels=len(decisions),
        errors=len(decisions) - len(scored),
        overall=_counts((d.label, bool(d.predicted)) for d in scored),
        by_category={k: _counts(v) for k, v in sorted(by_category.items())},
        by_fact_type={k: _counts(v) for k, v in sorted(by_type.items())},
        disagreements=[
            Disagreement(id=d.id, category=d.category, fact_type=d.fact_type, label=d.label,
                         predicted=bool(d.predicted),
                         gold_fact=dict(d.gold_fact) if d.gold_fact is not None else None,
                         predicted_fact=(dict(d.predicted_fact)
                                         if d.predicted_fact is not None else None),
                         gold_reasoning=d.gold_reasoning, predicted_reasoning=d.predicted_reasoning,
                         description=d.description)
            for d in scored if d.label != d.predicted],
        error_lines=[LineError(id=d.id, category=d.category, fact_type=d.fact_type,
                               error=d.error or "not judged")
                     for d in decisions if d.error is not None or d.predicted is None],
        judge=judge,
    )


# --------------------------------------------------------------------------- judging


def decision_from_result(label: Label, gold_out: Mapping[str, Any],
                         predicted_out: Mapping[str, Any]) -> Decision:
    """The decision of one judged line, from the two output facts of ``run_judge``."""
    gold_v, pred_v = verdict_of(gold_out), verdict_of(predicted_out)
    gold_note, pred_note = gold_v.get("description") or "", pred_v.get("description") or ""
    if gold_note == pred_note:  # reconciliation notes are written on both facts
        descriptions = [gold_note] if gold_note else []
    else:
        descriptions = [f"{side}: {note}" for side, note in (("gold", gold_note),
                                                             ("predicted", pred_note)) if note]
    base: dict[str, Any] = {
        "id": label.id, "label": label.match, "category": label.category,
        "fact_type": label.gold_fact["fact_type"], "gold_fact": label.gold_fact,
        "predicted_fact": label.predicted_fact, "gold_reasoning": gold_v.get("reasoning"),
        "predicted_reasoning": pred_v.get("reasoning"),
        "description": "; ".join(descriptions)}
    statuses = (gold_v["status"], pred_v["status"])
    if "ERROR" in statuses:
        reasons = "; ".join(descriptions) or "the judge failed"
        return Decision(predicted=None, error=f"ERROR: {reasons}", **base)
    if "OUT_OF_SCOPE" in statuses:
        return Decision(predicted=None, error="out of scope: fact_type not in entity_types; "
                                              "not judged", **base)
    linked = gold_v["status"] == "TP" and label.predicted_fact["id"] in gold_v["matched_ids"]
    return Decision(predicted=linked, **base)


async def calibrate_async(
    labels: Sequence[Label],
    config: JudgeConfig | Mapping[str, Any] | None = None,
    judge: Judge | None = None,
    concurrency: int = 8,
    *,
    progress: CalibrationProgress | None = None,
) -> CalibrationReport:
    """Judge every label's pair of facts and :func:`score` the links. Each label is a document
    of one gold and one predicted fact, run by eval's document runner
    (:func:`~factjudge.evaluation.runner.judge_documents`: one pool of ``concurrency`` judge calls
    shared by all lines, at most ``2 * concurrency`` lines in flight)."""
    if concurrency < 1:
        raise InputError("concurrency must be at least 1")
    config = parse_config(config)
    the_judge: Judge = judge if judge is not None else RulesJudge()
    documents = [Document(label.id, [label.gold_fact], [label.predicted_fact]) for label in labels]
    index = {id(doc): i for i, doc in enumerate(documents)}  # ids may repeat in Python's labels
    decisions: list[Decision | None] = [None] * len(labels)
    done = 0
    usage = CallUsage()

    def finished(doc: Document, result: JudgeResult) -> None:
        nonlocal done
        i = index[id(doc)]
        decisions[i] = decision_from_result(labels[i], result.gold_facts[0], result.predicted_facts[0])
        usage.add(result.usage)
        done += 1
        if progress:
            progress(done, len(labels))

    # a failure (not an ERROR verdict) stops the run
    await judge_documents(documents, config, the_judge, finished, concurrency=concurrency)
    report = score([d for d in decisions if d is not None], judge=the_judge.name)
    if usage.llm_calls or usage.cache_hits or usage.llm_calls_saved:
        # what a calibration costs, and its answers' length (benchmarks/real_judge.py)
        report.usage = usage
    report.judge_identity, report.config = the_judge.identity(), config.model_dump(mode="json")
    return report


def calibrate(
    labels: Sequence[Label],
    config: JudgeConfig | Mapping[str, Any] | None = None,
    judge: Judge | None = None,
    concurrency: int = 8,
    *,
    progress: CalibrationProgress | None = None,
) -> CalibrationReport:
    """Synchronous :func:`calibrate_async`: runs its own event loop (in a worker thread when one
    is already running, as in a notebook) and closes the judge's connections before returning."""

    async def once() -> CalibrationReport:
        try:
            return await calibrate_async(labels, config, judge, concurrency, progress=progress)
        finally:
            if judge is not None:
                await judge.aclose()

    return run_sync(once)


# --------------------------------------------------------------------------- text report


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _table(title: str, rows: Mapping[str, Confusion]) -> list[str]:
    if not rows:
        return []
    width = max(len(title), *(len(k) for k in rows))
    head = (f"{title:<{width}}  {'n':>5}  {'acc':>5}  {'P':>5}  {'R':>5}  {'kappa':>6}  "
            f"{'tp':>4} {'fp':>4} {'fn':>4} {'tn':>4}")
    lines = [head, "-" * len(head)]
    for key, c in rows.items():
        lines.append(f"{key:<{width}}  {c.n:>5}  {_fmt(c.accuracy):>5}  {_fmt(c.precision):>5}  "
                     f"{_fmt(c.recall):>5}  {_fmt(c.kappa):>6}  "
                     f"{c.tp:>4} {c.fp:>4} {c.fn:>4} {c.tn:>4}")
    return lines


def _compact(fact: Mapping[str, Any] | None) -> str:
    if fact is None:
        return "(not given)"
    return json.dumps(dict(fact), ensure_ascii=False)


def format_report(report: CalibrationReport) -> str:
    """A readable multi-line text: headline, confusion matrix, tables per category and per
    fact_type, disagreements with the judge's reasoning, and the lines not scored."""
    o = report.overall
    judge = f" | judge {report.judge}" if report.judge else ""
    headline = (
        f"calibration: {report.labels} labels, {o.n} scored, {report.errors} errors | "
        f"accuracy {_fmt(o.accuracy)} precision {_fmt(o.precision)} recall {_fmt(o.recall)} "
        f"F1 {_fmt(o.f1)} kappa {_fmt(o.kappa)} | {len(report.disagreements)} disagreements"
        f"{judge}")
    lines = [
        headline,
        "",
        "confusion (rows: label, columns: judge)",
        f"{'':<16}{'linked':>8}{'not linked':>12}",
        f"{'match':<16}{o.tp:>8}{o.fn:>12}",
        f"{'no match':<16}{o.fp:>8}{o.tn:>12}",
    ]
    for title, rows in (("category", report.by_category), ("fact_type", report.by_fact_type)):
        table = _table(title, rows)
        if table:
            lines += ["", f"by {title}", *table]
    if report.disagreements:
        lines += ["", f"disagreements ({len(report.disagreements)})"]
        for d in report.disagreements:
            verdict = ("label match, judge did not link" if d.label
                       else "label no match, judge linked")
            lines.append(f"- {d.id} [{d.category or NO_CATEGORY}, {d.fact_type}]: {verdict}")
            lines.append(f"    gold:      {_compact(d.gold_fact)}")
            lines.append(f"    predicted: {_compact(d.predicted_fact)}")
            if d.gold_reasoning:
                lines.append(f"    gold pass:      {d.gold_reasoning}")
            if d.predicted_reasoning:
                lines.append(f"    predicted pass: {d.predicted_reasoning}")
            if d.description:
                lines.append(f"    notes: {d.description}")
    if report.error_lines:
        lines += ["", f"not scored ({len(report.error_lines)})"]
        for e in report.error_lines:
            lines.append(f"- {e.id} [{e.category or NO_CATEGORY}, {e.fact_type}]: {e.error}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- eval --judge-calibration


class _Counts(Model):
    # bounded where read: the correction's math is in floats
    tp: StrictInt = Field(ge=0, le=COUNT_MAX)
    fp: StrictInt = Field(ge=0, le=COUNT_MAX)
    fn: StrictInt = Field(ge=0, le=COUNT_MAX)
    tn: StrictInt = Field(ge=0, le=COUNT_MAX)


class _CalibrationFile(Model):
    """What eval reads of a ``calibrate -o`` file (other keys are the report's, left unread)."""

    overall: _Counts
    judge: StrictStr | None = None
    judge_identity: dict[str, Any] | None = None
    config: dict[str, Any] | None = None


def load_judge_calibration(path: str | Path) -> JudgeCalibration:
    """The counts and provenance of a ``factjudge calibrate -o`` file, for the judge-corrected
    figures; every problem is a one-line :class:`InputError` naming the file."""
    path = Path(path)
    data = parse_json(read_settings(path, "a JSON calibration report"), path)
    what = "not a calibration report written by 'factjudge calibrate -o'"
    if not isinstance(data, dict):
        raise InputError(f"{path}: {what} (a JSON object), got {json_type(data)}")
    try:
        report = _CalibrationFile.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(part) for part in err["loc"])
        raise InputError(f"{path}: {what}: '{where}': {err['msg']}") from None
    c = report.overall
    if c.tp == 0:
        raise InputError(f"{path}: the judge made no link the labels confirm (tp 0 of {c.tp + c.fp + c.fn + c.tn} "
                         "scored): its link precision and recall are 0 or undefined, so nothing can be "
                         "corrected with it")
    return JudgeCalibration(JudgeErrors(c.tp, c.fp, c.fn, c.tn), str(path), report.judge,
                            report.judge_identity, report.config)
