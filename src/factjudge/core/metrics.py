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
from typing import NamedTuple, TypeVar

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


_FIELD: dict[tuple[Direction, Status], str] = {
    ("gold", "TP"): "tp_gold", ("gold", "FN"): "fn", ("predicted", "TP"): "tp_predicted",
    ("predicted", "FP"): "fp", ("gold", "ERROR"): "errors", ("predicted", "ERROR"): "errors"}


def compute_metrics(gold: Iterable[tuple[str, Status]], predicted: Iterable[tuple[str, Status]]) -> Metrics:
    """Metrics from ``(fact_type, status)`` pairs of each side."""
    metrics = Metrics()
    sides: tuple[tuple[Direction, Iterable[tuple[str, Status]]], ...] = (("gold", gold), ("predicted", predicted))
    for side, pairs in sides:
        for fact_type, status in pairs:
            if status == "OUT_OF_SCOPE":
                if side == "gold":
                    metrics.out_of_scope_gold += 1
                else:
                    metrics.out_of_scope_predicted += 1
                continue
            name = _FIELD[(side, status)]
            setattr(metrics, name, getattr(metrics, name) + 1)
            per_type = metrics.by_fact_type.setdefault(fact_type, Counts())
            setattr(per_type, name, getattr(per_type, name) + 1)
    with_ratios(metrics)
    for counts in metrics.by_fact_type.values():
        with_ratios(counts)
    metrics.by_fact_type = dict(sorted(metrics.by_fact_type.items()))
    return metrics

