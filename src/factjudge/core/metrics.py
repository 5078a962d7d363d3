"""Precision, recall and F1 from final statuses. Pure: data in, data out."""
from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from ..models import Counts, Direction, Metrics, Status

C = TypeVar("C", bound=Counts)


def ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def f1_score(precision: float | None, recall: float | None) -> float | None:
    if precision is None or recall is None:
        return None
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


def with_ratios(counts: C) -> C:
    """Fill precision/recall/f1 from the counts (ERROR facts are in neither denominator)."""
    counts.precision = ratio(counts.tp_predicted, counts.tp_predicted + counts.fp)
    counts.recall = ratio(counts.tp_gold, counts.tp_gold + counts.fn)
    counts.f1 = f1_score(counts.precision, counts.recall)
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


def prf(tp_predicted: int, fp: int, tp_gold: int, fn: int) -> dict[str, float | None]:
    precision, recall = ratio(tp_predicted, tp_predicted + fp), ratio(tp_gold, tp_gold + fn)
    return {"precision": precision, "recall": recall, "f1": f1_score(precision, recall)}
