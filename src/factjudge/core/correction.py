"""Judge-aware metrics: the extractor's precision, recall and F1 corrected for the judge's own link
errors as a calibration against human labels measured them (``factjudge calibrate -o``), with
intervals that combine the document bootstrap and the calibration's uncertainty. Pure: data in,
data out.

The estimator. Of the links the judge makes, a share ``p_j`` are true (its link precision); of the
true links, it makes a share ``r_j`` (its link recall). So the links it makes number
``E[TP_obs] = r_j * TP_true / p_j``: ``r_j * TP_true`` true links found, which are ``p_j`` of all
it makes. Hence ``TP_true = TP_obs * p_j / r_j``, on each side (predicted facts for precision, gold
facts for recall), while the denominators (predictions, gold facts) do not depend on the judge:

    precision_true = precision_raw * p_j / r_j        recall_true = recall_raw * p_j / r_j

each capped at 1, and F1 from the two. Assumptions: the labelled pairs are representative of the
pairs the judge decides in this run (``p_j`` depends on how many near misses there are to link
wrongly), and the judge's errors do not depend on the extractor.

The interval: for each bootstrap resample of documents (the very resamples of the raw interval),
``p_j`` and ``r_j`` are drawn from their posterior given the calibration's counts (a uniform
Dirichlet prior over the four cells: ``p_j ~ Beta(tp + 1, fp + 1)``, ``r_j ~ Beta(tp + 1, fn + 1)``,
drawn together, as they share ``tp``), the corrected figures computed, and their 2.5th and 97.5th
percentiles taken.
"""
from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from ..models.base import Model
from .aggregate import RATIOS, _interval, resampled_sums
from .metrics import f1_score, ratio


@dataclass(frozen=True)
class JudgeErrors:
    """A calibration's counts of links: labelled match and linked (``tp``), labelled no match and
    linked (``fp``), labelled match and not linked (``fn``), neither (``tn``)."""

    tp: int
    fp: int
    fn: int
    tn: int = 0

    @property
    def link_precision(self) -> float | None:
        return ratio(self.tp, self.tp + self.fp)

    @property
    def link_recall(self) -> float | None:
        return ratio(self.tp, self.tp + self.fn)

    def draw(self, rng: random.Random) -> tuple[float, float]:
        """``(p_j, r_j)`` drawn from their posterior: the Dirichlet(counts + 1) of the cells, by
        independent gamma variates (the usual construction)."""
        tp, fp, fn = (rng.gammavariate(n + 1, 1.0) for n in (self.tp, self.fp, self.fn))
        return tp / (tp + fp), tp / (tp + fn)


class JudgeCorrected(Model):
    """``summary.json``'s ``judge_corrected``: the extractor's figures corrected for the judge."""

    precision: float | None = None
    recall: float | None = None
    f1: float | None = None
    #: 95% intervals (bootstrap over documents x the calibration's posterior), ``[low, high]``.
    ci95: dict[str, list[float] | None] = Field(default_factory=dict)
    #: The judge's link precision and recall the point estimates used (from the counts).
    link_precision: float
    link_recall: float
    #: The figures the correction pushed above 1 and that were capped there (the calibration then
    #: does not fit this run's data well: see the assumptions).
    capped: list[str] = Field(default_factory=list)
    #: Where the counts came from: the file, its judge and its counts (tp, fp, fn, tn).
    calibration: dict[str, Any] = Field(default_factory=dict)


def corrected_prf(key: Sequence[int], link_precision: float,
                  link_recall: float) -> tuple[dict[str, float | None], list[str]]:
    """The corrected precision, recall and F1 of summed ``(TP predicted, FP, TP gold, FN)``
    counts, and the names of those capped at 1."""
    tp_predicted, fp, tp_gold, fn = key
    factor = link_precision / link_recall
    out: dict[str, float | None] = {}
    capped = []
    for name, raw in (("precision", ratio(tp_predicted, tp_predicted + fp)),
                      ("recall", ratio(tp_gold, tp_gold + fn))):
        value = None if raw is None else raw * factor
        if value is not None and value > 1:
            value = 1.0
            capped.append(name)
        out[name] = value
    out["f1"] = f1_score(out["precision"], out["recall"])
    return out, capped


def judge_corrected(keys: Sequence[Sequence[int]], errors: JudgeErrors, resamples: int = 1000,
                    seed: int = 0, level: float = 0.95) -> JudgeCorrected:
    """Corrected micro figures of per-document ``(TP predicted, FP, TP gold, FN)`` ``keys``, with
    their intervals. ``errors`` must have ``tp > 0`` (else the judge's precision or recall is 0 or
    undefined and nothing can be corrected): :class:`ValueError` otherwise."""
    p_j, r_j = errors.link_precision, errors.link_recall
    if not p_j or not r_j:
        raise ValueError("the calibration has no link both labelled and made by the judge (tp 0)")
    totals = [sum(column) for column in zip(*keys, strict=True)] if keys else [0, 0, 0, 0]
    point, capped = corrected_prf(totals, p_j, r_j)
    rng = random.Random(f"judge-calibration:{seed}")  # apart from the resampling's own generator
    samples: dict[str, list[float]] = {k: [] for k in RATIOS}
    for sums in resampled_sums(keys, resamples, seed):
        figures, _ = corrected_prf(sums, *errors.draw(rng))
        for name, value in figures.items():
            if value is not None:
                samples[name].append(value)
    return JudgeCorrected(**point, ci95={k: _interval(v, level) for k, v in samples.items()},
                          link_precision=p_j, link_recall=r_j, capped=capped,
                          calibration={"tp": errors.tp, "fp": errors.fp, "fn": errors.fn, "tn": errors.tn})


@dataclass(frozen=True)
class JudgeCalibration:
    """What eval takes from a calibration file (``eval --judge-calibration``): its counts, where
    it came from, and what it was made with (None: an older file that does not say)."""

    errors: JudgeErrors
    source: str
    judge_name: str | None = None
    judge: dict[str, Any] | None = None
    config: dict[str, Any] | None = None

    def describe(self) -> dict[str, Any]:
        """The ``calibration`` of :class:`JudgeCorrected`."""
        e = self.errors
        return {"source": self.source, "judge": self.judge_name, "tp": e.tp, "fp": e.fp, "fn": e.fn,
                "tn": e.tn}


def _differences(there: dict[str, Any], here: dict[str, Any]) -> str:
    """``model 'a' there, 'b' here; temperature`` : the keys that differ, with short scalar values."""
    parts = []
    for key in sorted(k for k in {*there, *here} if there.get(k) != here.get(k)):
        a, b = there.get(key), here.get(key)
        scalars = all(v is None or isinstance(v, (str, int, float, bool)) and len(repr(v)) <= 60 for v in (a, b))
        parts.append(f"{key} {a!r} there, {b!r} here" if scalars else key)
    return "; ".join(parts)


def calibration_mismatch(calibration: JudgeCalibration, judge: dict[str, Any],
                         config: dict[str, Any]) -> list[str]:
    """Warnings when ``calibration`` was made with another judge or config than this run's
    (``judge``: the judge's identity, ``config``: the config as summary.json holds it)."""
    source = calibration.source
    tail = "its error rates may not hold for this run, nor the judge-corrected figures"
    if calibration.judge is None or calibration.config is None:
        named = calibration.judge_name
        if named is not None and named != judge.get("name"):
            return [f"judge calibration {source} was made with another judge ({named!r} there, "
                    f"{judge.get('name')!r} here): {tail}"]
        return [f"judge calibration {source} does not record its judge's settings and config (an older "
                "factjudge wrote it): check it was made with this run's judge and config"]
    out = []
    for what, there, here in (("judge", calibration.judge, judge), ("config", calibration.config, config)):
        if there != here:
            out.append(f"judge calibration {source} was made with another {what} "
                       f"({_differences(there, here)}): {tail}")
    return out
