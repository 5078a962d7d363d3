"""A person's review of a run's verdicts (review.html's export, ``review.jsonl``): the run's
identity an export must match, the run's figures with the person's verdicts in place of the
judge's, and how many reviews the judge-corrected interval needs. Pure: data in, data out.

A reviewed item is one judge decision about a pair of facts of one document:

- ``link``: the judge linked gold fact ``g`` and predicted fact ``p`` (both TP);
- ``miss``: gold fact ``g`` is FN; ``p`` is its closest predicted fact, if any;
- ``extra``: predicted fact ``p`` is FP; ``g`` is its closest gold fact, if any.

The person's verdict is ``right`` (the judge's decision stands), ``wrong`` (a link is no match; a
miss or an extra is a match of the pair shown) or, for an extra, ``omission``: the predicted fact
is true and the gold set lacks it (the corrected gold gains it, and it counts as a TP on both
sides). ``match`` is the person's decision about the pair, what ``calibrate`` compares the judge
with: None when there is no pair (a miss or an extra with no closest fact).
"""
from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field

from ..models import status_of, verdict_of
from ..models.base import Model
from ..util.jsonutil import canonical_json
from .metrics import f1_score, ratio

Kind = Literal["link", "miss", "extra"]
Verdict = Literal["right", "wrong", "omission"]
KINDS: tuple[Kind, ...] = ("link", "miss", "extra")
VERDICTS: tuple[Verdict, ...] = ("right", "wrong", "omission")
#: ``kind`` in the header of a review export (``{"_header": {"kind": ..., "run": {...}}}``).
EXPORT_KIND = "factjudge review"
#: The z of a two-sided 95% interval.
Z95 = 1.959964


def _short_hash(value: object) -> str:
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()[:16]


def run_identity(judge: Mapping[str, Any], config: Mapping[str, Any],
                 inputs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """What names a run for its reviews: the judge's name, a hash of its identity, a hash of the
    config and of the documents' ``(doc_id, input_sha256)`` (the inputs as judged, not their
    paths: the same data moved keeps its reviews)."""
    return {"judge": str(judge.get("name", "?")), "judge_hash": _short_hash(dict(judge)),
            "config_hash": _short_hash(dict(config)), "input_hash": _short_hash(sorted(inputs))}


def identity_mismatch(export: Mapping[str, Any], run: Mapping[str, Any]) -> str | None:
    """Why an export's run identity is not this run's (None: it is)."""
    names = {"judge": "judge", "judge_hash": "judge settings", "config_hash": "config",
             "input_hash": "inputs"}
    differ = [names[k] for k in names if export.get(k) != run.get(k)]
    if not differ:
        return None
    return (f"it was exported from another run (different {', '.join(differ)}: "
            f"judge {export.get('judge')!r} there, {run.get('judge')!r} here)")


def person_match(kind: Kind, verdict: Verdict) -> bool:
    """Whether the person says the pair shown matches: a right link or a wrong miss/extra."""
    return (verdict == "right") if kind == "link" else (verdict == "wrong")


@dataclass(frozen=True)
class Review:
    """One reviewed item (one line of review.jsonl, as far as the figures need it)."""

    doc_id: str
    kind: Kind
    verdict: Verdict
    gold_id: str | None = None
    predicted_id: str | None = None
    #: Gold fields the person corrected, ``{field: value}``.
    gold_correction: Mapping[str, Any] = field(default_factory=dict)

    @property
    def judge_match(self) -> bool:
        return self.kind == "link"

    @property
    def match(self) -> bool | None:
        if self.gold_id is None or self.predicted_id is None:
            return None
        return person_match(self.kind, self.verdict)


@dataclass
class ReviewedFigures:
    """The run's micro figures with the person's verdicts in place of the judge's where given."""

    reviewed: int
    by_verdict: dict[str, int]
    by_kind: dict[str, int]
    tp_predicted: int
    fp: int
    tp_gold: int
    fn: int
    #: The judge's links against the person's on the reviewed pairs (tp, fp, fn, tn as calibrate).
    agreement: dict[str, int]
    gold_corrections: int
    omissions: int

    @property
    def precision(self) -> float | None:
        return ratio(self.tp_predicted, self.tp_predicted + self.fp)

    @property
    def recall(self) -> float | None:
        return ratio(self.tp_gold, self.tp_gold + self.fn)

    def to_dict(self) -> dict[str, Any]:
        p, r = self.precision, self.recall
        return {"reviewed": self.reviewed, "precision": p, "recall": r, "f1": f1_score(p, r),
                "tp_predicted": self.tp_predicted, "fp": self.fp, "tp_gold": self.tp_gold, "fn": self.fn,
                "by_verdict": self.by_verdict, "by_kind": self.by_kind, "agreement": self.agreement,
                "gold_corrections": self.gold_corrections, "omissions": self.omissions}


class ReviewedSummary(Model):
    """``summary.json``'s ``reviewed`` (``factjudge review apply``): :meth:`ReviewedFigures.to_dict`,
    the export it came from and the reviews the judge-corrected intervals need."""

    reviewed: int = 0
    precision: float | None = None
    recall: float | None = None
    f1: float | None = None
    tp_predicted: int = 0
    fp: int = 0
    tp_gold: int = 0
    fn: int = 0
    by_verdict: dict[str, int] = Field(default_factory=dict)
    by_kind: dict[str, int] = Field(default_factory=dict)
    agreement: dict[str, int] = Field(default_factory=dict)
    gold_corrections: int = 0
    omissions: int = 0
    #: The review export applied, as given.
    source: str = ""
    #: Per figure (``precision``, ``recall``), per interval width: the reviews needed.
    needed: dict[str, dict[str, int]] = Field(default_factory=dict)


def reviewed_figures(lines: Iterable[Mapping[str, Any]], reviews: Sequence[Review]) -> ReviewedFigures:
    """The micro counts of result ``lines`` with the person's ``reviews`` applied: a wrong link is
    taken away (each side stays TP only if linked elsewhere), a wrong miss or extra adds the link of
    its pair, an omission makes the predicted fact a TP and adds a gold fact matched by it. ERROR and
    out-of-scope facts stay out, as in the judge's figures."""
    by_doc: dict[str, list[Review]] = {}
    for r in reviews:
        by_doc.setdefault(r.doc_id, []).append(r)
    tp_p = fp = tp_g = fn = 0
    agreement = {"tp": 0, "fp": 0, "fn": 0, "tn": 0}
    for line in lines:
        doc_id = str(line.get("doc_id"))
        gold = {str(f.get("id")): f for f in line.get("gold_facts") or []}
        pred = {str(f.get("id")): f for f in line.get("predicted_facts") or []}
        links = {(str(g), str(p)) for g, f in gold.items() if status_of(f) == "TP"
                 for p in verdict_of(f).get("matched_ids") or []}
        links |= {(str(g), str(p)) for p, f in pred.items() if status_of(f) == "TP"
                  for g in verdict_of(f).get("matched_ids") or []}
        added_gold, true_pred = 0, set()
        for r in by_doc.get(doc_id, ()):
            pair = (str(r.gold_id), str(r.predicted_id))
            if r.kind == "link" and r.verdict == "wrong":
                links.discard(pair)
            elif r.kind != "link" and r.verdict == "wrong" and r.match is not None:
                links.add(pair)
            elif r.kind == "extra" and r.verdict == "omission" and r.predicted_id in pred:
                added_gold += 1
                true_pred.add(str(r.predicted_id))
            if r.match is not None:
                cell = ("tp" if r.match else "fp") if r.judge_match else ("fn" if r.match else "tn")
                agreement[cell] += 1
        linked_g = {g for g, _ in links}
        linked_p = {p for _, p in links} | true_pred
        for g, f in gold.items():
            if status_of(f) in ("TP", "FN"):
                tp_g, fn = (tp_g + 1, fn) if g in linked_g else (tp_g, fn + 1)
        for p, f in pred.items():
            if status_of(f) in ("TP", "FP"):
                tp_p, fp = (tp_p + 1, fp) if p in linked_p else (tp_p, fp + 1)
        tp_g += added_gold
    return ReviewedFigures(
        reviewed=len(reviews), by_verdict=dict(Counter(r.verdict for r in reviews)),
        by_kind=dict(Counter(r.kind for r in reviews)),
        tp_predicted=tp_p, fp=fp, tp_gold=tp_g, fn=fn, agreement=agreement,
        gold_corrections=sum(1 for r in reviews if r.gold_correction),
        omissions=sum(1 for r in reviews if r.verdict == "omission"))


def reviews_needed(raw: float, link_precision: float, link_recall: float, width: float) -> int:
    """About how many reviewed pairs (half links, half misses and extras) put the judge-corrected
    figure ``raw * p_j / r_j`` (:mod:`.correction`) within a 95% interval ``width`` wide, from the
    calibration's share alone (the delta method: the relative variances of ``p_j`` and ``r_j``,
    each a proportion over ``n / 2`` pairs, add up). A rate of 1 (no error seen yet) is taken as
    0.97, so the answer is never "none needed"."""
    p = min(max(link_precision, 0.01), 0.97)
    r = min(max(link_recall, 0.01), 0.97)
    half = width / 2
    value = raw * p / r
    # Var(value)/value^2 = (1-p)/(p n/2) + (1-r)/(r n/2); half = Z95 * value * sqrt(that)
    n = 2 * ((1 - p) / p + (1 - r) / r) * (Z95 * value / half) ** 2
    return max(1, math.ceil(n))
