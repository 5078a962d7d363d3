"""The extractor's confidence against the judge's verdicts: how well the confidence a prediction
carries (``confidence``, ``score`` or ``probability``, or the config's ``confidence_field``) tells
correct predictions (TP) from wrong ones (FP). Pure: data in, data out.

The figures, over the in-scope predictions judged TP or FP that carry a confidence (an ERROR has no
verdict and is left out; a prediction without a confidence, or with one that is not a number in
[0, 1], is counted in ``without_confidence`` and is in none of the figures):

- ``auroc``: the probability that a correct prediction has a higher confidence than a wrong one,
  by counting pairs (a tie counts 1/2); None without both a correct and a wrong prediction.
- ``ece``: expected calibration error over :data:`ECE_BINS` equal-width bins of confidence
  (``[0, 0.1), [0.1, 0.2), ..., [0.9, 1.0]``, the last closed): the share of predictions in each bin
  times the gap between the bin's mean confidence and its share of correct predictions, summed.
- ``brier``: the mean of ``(confidence - correct)^2``, ``correct`` 1 for a TP and 0 for an FP.
- ``thresholds``: auto-accepting the predictions whose confidence is at least each of
  :data:`THRESHOLDS`: the precision of those kept, the recall that remains (gold facts linked to a
  kept prediction, over the gold facts judged TP or FN: a prediction without a confidence is never
  kept) and the share of predictions kept.
- ``review``: reviewing the lowest-confidence predictions first, for each share of
  :data:`REVIEW_SHARES`: the share of the wrong predictions caught (predictions of equal confidence
  are taken in random order: the expected figure).

Memory: 8 bytes per prediction with a confidence and per gold fact linked to one (two ``array('d')``
of confidences, correct and wrong, and one of the gold facts' best linked confidence): 1M
predictions hold 16 MB at most, sorted once when the summary is built (a transient list of 32 MB
per 1M).
"""
from __future__ import annotations

import bisect
import heapq
import itertools
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field

from ..models import status_of, verdict_of
from ..models.base import Model
from .metrics import ratio

#: The names a prediction's confidence is looked for under, in this order, when the config names
#: none (``confidence_field``). A name gold facts also carry is a fact field, not a confidence.
CONFIDENCE_NAMES = ("confidence", "score", "probability")
#: Equal-width bins of the reliability diagram and the ECE.
ECE_BINS = 10
#: The auto-accept cut points of the thresholds table.
THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95)
#: The review budgets of the review curve (share of the predictions reviewed).
REVIEW_SHARES = (0.05, 0.1, 0.2, 0.3, 0.5)


def read_confidence(value: object) -> float | None:
    """``value`` as a confidence: a number in [0, 1], or a string of one (a CSV cell); None for
    anything else (``"high"``, -1, 2, NaN, true)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if 0.0 <= number <= 1.0 else None  # NaN fails both comparisons


def detect_field(predicted: Iterable[Mapping[str, Any]], gold: Iterable[Mapping[str, Any]],
                 named: str | None = None) -> str | None:
    """The field holding the predictions' confidence: ``named`` (the config's ``confidence_field``)
    when given, else the first of :data:`CONFIDENCE_NAMES` some prediction carries and no gold fact
    does (a gold fact's ``score`` is something the fact states); None when there is none."""
    if named is not None:
        return named
    # the three names looked up in each fact, not each of its fields matched against them (a
    # 20-fact document: 5.6 -> 2.8 us)
    carried = {k for fact in predicted for k in CONFIDENCE_NAMES if k in fact}
    if not carried:
        return None
    carried -= {k for fact in gold for k in CONFIDENCE_NAMES if k in fact}
    return next((name for name in CONFIDENCE_NAMES if name in carried), None)


@dataclass
class DocConfidence:
    """One document's confidences by verdict (what :class:`ConfidenceAccumulator` sums);
    ``name`` None: its predictions carry none (they count as without one if others do)."""

    #: The field the confidence was read from.
    name: str | None
    correct: list[float] = field(default_factory=list)
    wrong: list[float] = field(default_factory=list)
    #: Per gold fact judged TP, the highest confidence among the predictions it is linked to.
    recalled: list[float] = field(default_factory=list)
    #: Gold facts judged TP or FN (the recall's denominator).
    gold: int = 0
    #: TP or FP predictions without a confidence, and those whose value was not one (first shown).
    missing: int = 0
    invalid: int = 0
    first_invalid: str | None = None


def doc_confidence(line: Mapping[str, Any], named: str | None = None) -> DocConfidence:
    """The confidences of one result line (``gold_facts`` and ``predicted_facts`` with their
    ``status`` and ``matched_ids``)."""
    predicted = line.get("predicted_facts") or ()
    gold = line.get("gold_facts") or ()
    name = detect_field(predicted, gold, named)
    if name is None:  # most runs: every prediction is without one, and no gold fact recalled with one
        return _without_confidence(predicted, gold)
    doc = DocConfidence(name)
    by_id: dict[str, float] = {}
    for fact in predicted:
        status = status_of(fact)
        if status not in ("TP", "FP"):
            continue
        raw = None if name is None else fact.get(name)
        value = read_confidence(raw)
        if value is None:
            doc.missing += 1
            if raw is not None:
                doc.invalid += 1
                if doc.first_invalid is None:
                    doc.first_invalid = repr(raw)[:40]
            continue
        (doc.correct if status == "TP" else doc.wrong).append(value)
        by_id[str(fact.get("id"))] = value
    for fact in gold:
        status = status_of(fact)
        if status in ("TP", "FN"):
            doc.gold += 1
        if status == "TP":
            linked = [by_id[str(i)] for i in verdict_of(fact).get("matched_ids") or () if str(i) in by_id]
            if linked:
                doc.recalled.append(max(linked))
    return doc


def _without_confidence(predicted: Iterable[Mapping[str, Any]], gold: Iterable[Mapping[str, Any]]) -> DocConfidence:
    """:func:`doc_confidence` of a document whose predictions carry no confidence: its TP and FP
    predictions counted missing and its TP and FN gold facts counted, without reading a
    prediction's value nor a gold fact's links (which can find none): a 20-fact document's
    :func:`doc_confidence` 18.9 -> 14.1 us."""
    return DocConfidence(None, missing=sum(status_of(f) in ("TP", "FP") for f in predicted),
                         gold=sum(status_of(f) in ("TP", "FN") for f in gold))


class ReliabilityBin(Model):
    """One bin of the reliability diagram: ``[low, high)`` (the last bin includes 1)."""

    low: float
    high: float
    predictions: int
    #: The bin's mean confidence and its share of correct predictions (None: an empty bin).
    confidence: float | None = None
    accuracy: float | None = None


class ThresholdRow(Model):
    """Auto-accepting the predictions of confidence >= ``threshold``."""

    threshold: float
    precision: float | None = None
    recall: float | None = None
    #: The share of the predictions with a confidence that are kept, and their number.
    kept: float
    kept_predictions: int


class ReviewRow(Model):
    """Reviewing the ``share_reviewed`` of the predictions of lowest confidence first."""

    share_reviewed: float
    reviewed: int
    #: The share of the wrong predictions among those reviewed (None: no wrong prediction).
    errors_caught: float | None = None


class ConfidenceSummary(Model):
    """``summary.json``'s ``confidence`` (see the module's docstring for each figure)."""

    #: The field the confidence was read from (several names: documents differed).
    field: str
    #: TP or FP predictions with a confidence (the figures' population), and without one.
    predictions: int
    without_confidence: int = 0
    #: Of ``without_confidence``: those whose value was not a number in [0, 1].
    invalid: int = 0
    auroc: float | None = None
    ece: float | None = None
    ece_bins: int = ECE_BINS
    brier: float | None = None
    bins: list[ReliabilityBin] = Field(default_factory=list)
    thresholds: list[ThresholdRow] = Field(default_factory=list)
    review: list[ReviewRow] = Field(default_factory=list)
    #: ``eval --judge-calibration``: ECE and the thresholds' precision and recall corrected for
    #: the judge's link errors as ``judge_corrected`` corrects P/R (:func:`corrected`).
    judge_corrected: dict[str, Any] | None = None


def _count_at_least(sorted_values: Sequence[float], cut: float) -> int:
    return len(sorted_values) - bisect.bisect_left(sorted_values, cut)


def auroc(correct: Sequence[float], wrong: Sequence[float]) -> float | None:
    """P(a correct prediction's confidence > a wrong one's), a tie counting 1/2, by counting the
    pairs (through sorting: O(n log n)); None without both kinds."""
    if not correct or not wrong:
        return None
    ranked = sorted(wrong)
    wins = 0.0
    for c in correct:
        below = bisect.bisect_left(ranked, c)
        wins += below + (bisect.bisect_right(ranked, c) - below) / 2
    return wins / (len(correct) * len(wrong))


def reliability_bins(correct: Sequence[float], wrong: Sequence[float], bins: int = ECE_BINS
                     ) -> list[ReliabilityBin]:
    """The :data:`ECE_BINS` equal-width bins with their mean confidence and accuracy."""
    counts, sums, right = [0] * bins, [0.0] * bins, [0] * bins
    edges = [b / bins for b in range(1, bins)]  # as floats: 0.7 is in [0.7, 0.8) (int(0.7 * 10) says so only by luck)
    for values, is_correct in ((correct, 1), (wrong, 0)):
        for v in values:
            b = bisect.bisect_right(edges, v)  # 1.0 goes in the last bin
            counts[b] += 1
            sums[b] += v
            right[b] += is_correct
    return [ReliabilityBin(low=b / bins, high=(b + 1) / bins, predictions=n,
                           confidence=sums[b] / n if n else None, accuracy=right[b] / n if n else None)
            for b, n in enumerate(counts)]


def ece(bins: Sequence[ReliabilityBin], factor: float = 1.0) -> float | None:
    """Expected calibration error of ``bins``; ``factor`` scales each bin's accuracy (capped at 1),
    for the judge-corrected figure."""
    total = sum(b.predictions for b in bins)
    if not total:
        return None
    return sum(b.predictions / total * abs(min(1.0, b.accuracy * factor) - b.confidence)
               for b in bins if b.predictions and b.accuracy is not None and b.confidence is not None)


def brier(correct: Sequence[float], wrong: Sequence[float]) -> float | None:
    n = len(correct) + len(wrong)
    return (sum((1 - c) ** 2 for c in correct) + sum(w * w for w in wrong)) / n if n else None


def threshold_rows(correct: Sequence[float], wrong: Sequence[float], recalled: Sequence[float],
                   gold: int, cuts: Sequence[float] = THRESHOLDS) -> list[ThresholdRow]:
    """Per cut: precision, recall and the share kept of the predictions of confidence >= cut;
    every sequence sorted ascending."""
    total = len(correct) + len(wrong)
    rows = []
    for cut in cuts:
        right, kept = _count_at_least(correct, cut), _count_at_least(correct, cut) + _count_at_least(wrong, cut)
        rows.append(ThresholdRow(threshold=cut, precision=ratio(right, kept),
                                 recall=ratio(_count_at_least(recalled, cut), gold),
                                 kept=kept / total if total else 0.0, kept_predictions=kept))
    return rows


def review_rows(correct: Sequence[float], wrong: Sequence[float],
                shares: Sequence[float] = REVIEW_SHARES) -> list[ReviewRow]:
    """Per share: the expected share of wrong predictions among the ``share`` of lowest confidence
    (rounded to whole predictions; equal confidences in random order); both sorted ascending."""
    total = len(correct) + len(wrong)
    rows = []
    for share in shares:
        budget = round(share * total)
        # the confidence of the budget-th lowest prediction: all below it are reviewed, and of
        # those equal to it, a random part (budget - below) of the tie group
        caught = 0.0
        if budget and wrong:
            cut = _kth(correct, wrong, budget)
            below_c, below_w = bisect.bisect_left(correct, cut), bisect.bisect_left(wrong, cut)
            tie_c = bisect.bisect_right(correct, cut) - below_c
            tie_w = bisect.bisect_right(wrong, cut) - below_w
            taken = budget - below_c - below_w
            caught = below_w + taken * tie_w / (tie_c + tie_w)
        rows.append(ReviewRow(share_reviewed=share, reviewed=budget,
                              errors_caught=caught / len(wrong) if wrong else None))
    return rows


def _kth(a: Sequence[float], b: Sequence[float], k: int) -> float:
    """The ``k``-th smallest value (1-based) of two sorted sequences together, without copying."""
    return next(itertools.islice(heapq.merge(a, b), k - 1, None))


def corrected(summary: ConfidenceSummary, link_precision: float, link_recall: float) -> dict[str, Any]:
    """ECE and the thresholds' precision and recall corrected for the judge's link errors, as
    :func:`factjudge.core.correction.corrected_prf` corrects P/R: each observed share of correct
    predictions (a bin's accuracy, a threshold's precision and recall) times ``p_j / r_j``, capped
    at 1. AUROC and the review curve are left as they are: they rank predictions, and the
    correction (a factor on counts) does not say which predictions the judge got wrong; judge
    errors independent of the confidence pull the observed AUROC towards 0.5."""
    factor = link_precision / link_recall

    def fix(value: float | None) -> float | None:
        return None if value is None else min(1.0, value * factor)

    return {"factor": factor, "ece": ece(summary.bins, factor),
            "thresholds": [{"threshold": r.threshold, "precision": fix(r.precision), "recall": fix(r.recall)}
                           for r in summary.thresholds]}


class ConfidenceAccumulator:
    """:class:`DocConfidence` of many documents summed (memory: see the module's docstring)."""

    def __init__(self) -> None:
        self.correct, self.wrong, self.recalled = array("d"), array("d"), array("d")
        self.gold = self.missing = self.invalid = 0
        self.fields: dict[str, None] = {}
        self.first_invalid: tuple[str, str] | None = None

    def add(self, doc: DocConfidence | None, doc_id: str = "") -> None:
        if doc is None:
            return
        if doc.name is not None:
            self.fields[doc.name] = None
        self.correct.extend(doc.correct)
        self.wrong.extend(doc.wrong)
        self.recalled.extend(doc.recalled)
        self.gold += doc.gold
        self.missing += doc.missing
        self.invalid += doc.invalid
        if self.first_invalid is None and doc.first_invalid is not None:
            self.first_invalid = (doc.first_invalid, doc_id)

    def warnings(self) -> list[str]:
        """One warning naming the values that were not a confidence (the first of them)."""
        if not self.invalid or self.first_invalid is None:
            return []
        value, doc_id = self.first_invalid
        name = " / ".join(self.fields)
        n = self.invalid
        return [f"{name}: {n} predicted fact{'' if n == 1 else 's'} carr{'ies' if n == 1 else 'y'} a "
                f"confidence that is not a number in [0, 1] (first: {value} in document {doc_id!r}): "
                "counted as without a confidence"]

    def summary(self) -> ConfidenceSummary | None:
        """The figures; None when no prediction carried the field."""
        if not self.fields:
            return None
        correct, wrong, recalled = sorted(self.correct), sorted(self.wrong), sorted(self.recalled)
        bins = reliability_bins(correct, wrong) if correct or wrong else []
        return ConfidenceSummary(
            field=" / ".join(self.fields), predictions=len(correct) + len(wrong),
            without_confidence=self.missing, invalid=self.invalid, auroc=auroc(correct, wrong),
            ece=ece(bins), brier=brier(correct, wrong), bins=bins,
            thresholds=threshold_rows(correct, wrong, recalled, self.gold) if bins else [],
            review=review_rows(correct, wrong) if bins else [])
