"""The metrics kernel: precision, recall and F1 (:func:`prf`) and Cohen's kappa
(:func:`cohen_kappa`), used by eval, calibrate and agree alike, and the metrics of one judged
document from its final statuses. Pure: data in, data out.

Zero division: a ratio whose denominator is 0 is ``None`` (undefined), never 0 or an error; F1 is
``None`` when precision or recall is, and 0 when both are 0. Callers that want scikit-learn's
``zero_division=0|1`` fill the ``None`` themselves (:mod:`factjudge.core.aggregate`'s macro).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import Any, NamedTuple, TypeVar

from ..models import Counts, Direction, Metrics, Status

C = TypeVar("C", bound=Counts)


def ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def f1_score(precision: float | None, recall: float | None) -> float | None:
    if precision is None or recall is None:
        return None
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


class PRF(NamedTuple):
    """Precision, recall and F1; ``None`` where undefined."""

    precision: float | None
    recall: float | None
    f1: float | None


def prf(tp: int, fp: int, fn: int, *, tp_gold: int | None = None) -> PRF:
    """Precision ``tp / (tp + fp)``, recall ``tp / (tp + fn)`` and their harmonic mean.

    ``tp_gold``: the true positives counted on the gold side, when they differ from ``tp`` (those
    counted on the predicted side). factjudge counts a TP per fact on each side, and one gold fact
    may be matched by two predicted facts, so recall is ``tp_gold / (tp_gold + fn)``."""
    tp_recall = tp if tp_gold is None else tp_gold
    precision, recall = ratio(tp, tp + fp), ratio(tp_recall, tp_recall + fn)
    return PRF(precision, recall, f1_score(precision, recall))


def cohen_kappa(matrix: Sequence[Sequence[int]]) -> float | None:
    """Cohen's kappa of two raters from their square confusion matrix (``matrix[i][j]``: items
    rater A put in class ``i`` and rater B in class ``j``), as scikit-learn builds it.

    ``kappa = (p_o - p_e) / (1 - p_e)`` with ``p_o`` the observed agreement and ``p_e`` the
    agreement expected by chance from each rater's class shares. Computed exactly (integers,
    then one rounding), so it is symmetric in the raters to the last bit. ``None`` when undefined:
    no items, or ``p_e = 1`` (both raters put every item in one and the same class)."""
    n = sum(map(sum, matrix))
    rows = [sum(row) for row in matrix]
    columns = [sum(column) for column in zip(*matrix, strict=True)]
    observed = sum(matrix[i][i] for i in range(len(matrix)))
    # n * n * p_e: the chance agreement, scaled to stay an integer
    chance = sum(r * c for r, c in zip(rows, columns, strict=True))
    if n == 0 or chance == n * n:
        return None
    return float(Fraction(n * observed - chance, n * n - chance))


def with_ratios(counts: C) -> C:
    """Fill precision/recall/f1 from the counts (ERROR facts are in neither denominator)."""
    counts.precision, counts.recall, counts.f1 = prf(
        counts.tp_predicted, counts.fp, counts.fn, tp_gold=counts.tp_gold)
    return counts


#: The count a final status adds to, by side: its place in :data:`_COUNTS`.
_COUNTS = ("tp_gold", "fn", "tp_predicted", "fp", "errors")
_SLOT: dict[tuple[Direction, Status], int] = {
    ("gold", "TP"): 0, ("gold", "FN"): 1, ("predicted", "TP"): 2,
    ("predicted", "FP"): 3, ("gold", "ERROR"): 4, ("predicted", "ERROR"): 4}


def _made(counts: list[int], **more: Any) -> dict[str, Any]:
    """A :class:`Counts`' fields of ``counts`` (in :data:`_COUNTS` order) and their ratios; the
    counts that are 0 are left to their default, as adding to them one by one left them."""
    given: dict[str, Any] = {name: n for name, n in zip(_COUNTS, counts, strict=True) if n}
    precision, recall, f1 = prf(counts[2], counts[3], counts[1], tp_gold=counts[0])
    return {**given, **more, "precision": precision, "recall": recall, "f1": f1}


def compute_metrics(gold: Iterable[tuple[str, Status]], predicted: Iterable[tuple[str, Status]]) -> Metrics:
    """Metrics from ``(fact_type, status)`` pairs of each side. Counted in lists, the models built
    once from the counts: two pydantic attribute sets a fact (its side's count, its type's) made a
    10 + 10-fact document's metrics cost 44 us, then 22."""
    total = [0] * len(_COUNTS)
    out_of_scope = {"gold": 0, "predicted": 0}
    per_type: dict[str, list[int]] = {}
    sides: tuple[tuple[Direction, Iterable[tuple[str, Status]]], ...] = (("gold", gold), ("predicted", predicted))
    for side, pairs in sides:
        for fact_type, status in pairs:
            if status == "OUT_OF_SCOPE":
                out_of_scope[side] += 1
                continue
            slot = _SLOT[(side, status)]
            total[slot] += 1
            counts = per_type.get(fact_type)
            if counts is None:
                counts = per_type[fact_type] = [0] * len(_COUNTS)
            counts[slot] += 1
    more: dict[str, Any] = {f"out_of_scope_{side}": n for side, n in out_of_scope.items() if n}
    by_type = {fact_type: _made(per_type[fact_type]) for fact_type in sorted(per_type)}
    # the models validated at once, the fact types' with the document's: a model built each cost
    # ~30% more (a 10 + 10-fact document of five fact types: six models)
    return Metrics.model_validate(_made(total, **more, by_fact_type=by_type))
