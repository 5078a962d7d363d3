"""Aggregates over documents (micro, macro, per fact type, conflicts, usage) and bootstrap
intervals. Pure: data in, data out; memory per document is four integers."""
from __future__ import annotations

import random
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, model_serializer

from ..models import CategoryCounts, Counts
from .alerts import Alert
from .analysis import count_categories, sorted_counts, total_categories
from .confidence import ConfidenceAccumulator, ConfidenceSummary, DocConfidence, doc_confidence
from .grounding import SourceSummary
from .metrics import f1_score, prf, with_ratios

#: How a document's undefined precision or recall counts in the macro average, as scikit-learn's
#: ``zero_division``: ``skip`` leaves it out (``macro.defined`` says for how many documents each
#: was defined), ``0`` or ``1`` counts it as that value.
ZeroDivision = Literal["skip", "0", "1"]

#: Per-document counts that are summed into ``micro`` (the ``metrics`` keys of ``judge``).
COUNT_KEYS = ("tp_gold", "fn", "tp_predicted", "fp", "errors", "out_of_scope_gold",
              "out_of_scope_predicted")
TYPE_KEYS = ("tp_gold", "fn", "tp_predicted", "fp", "errors")
RATIOS = ("precision", "recall", "f1")

@dataclass(frozen=True)
class DocStats:
    """The numbers of one document that aggregates need."""

    doc_id: str
    counts: Mapping[str, int]
    by_type: Mapping[str, Mapping[str, int]]
    conflicts: Mapping[str, int]
    usage: Mapping[str, float]
    #: A jury's questions in this document, and those all jurors answered alike.
    jury_questions: int = 0
    jury_unanimous: int = 0
    #: A jury's usage per juror.
    jurors: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    #: The categories per fact type (:func:`factjudge.core.analysis.count_categories`).
    categories: Mapping[str, CategoryCounts] = field(default_factory=dict)
    #: The predictions' confidences by verdict (None: they carry none), see :mod:`.confidence`.
    confidence: DocConfidence | None = None

    @property
    def key(self) -> tuple[int, int, int, int]:
        """(TP predicted, FP, TP gold, FN): all the bootstrap needs."""
        c = self.counts
        return c["tp_predicted"], c["fp"], c["tp_gold"], c["fn"]


def key_prf(key: Sequence[int]) -> dict[str, float | None]:
    """:func:`~factjudge.core.metrics.prf` of a :attr:`DocStats.key` (or a sum of keys), by name."""
    tp_predicted, fp, tp_gold, fn = key
    precision, recall, f1 = prf(tp_predicted, fp, fn, tp_gold=tp_gold)
    return {"precision": precision, "recall": recall, "f1": f1}


def doc_stats(line: Mapping[str, Any], confidence_field: str | None = None) -> DocStats:
    """The numbers of one result line; ``confidence_field``: the config's (None: found by name)."""
    m = line["metrics"]
    usage = {k: v for k, v in line.get("usage", {}).items()
             if isinstance(v, (int, float)) and not isinstance(v, bool)}
    votes = [f["votes"] for side in ("gold_facts", "predicted_facts") for f in line.get(side, ())
             if isinstance(f.get("votes"), dict)]
    jurors = line.get("usage", {}).get("jurors") or {}
    return DocStats(
        doc_id=line["doc_id"],
        counts={k: int(m.get(k, 0)) for k in COUNT_KEYS},
        by_type={t: {k: int(c.get(k, 0)) for k in TYPE_KEYS} for t, c in m.get("by_fact_type", {}).items()},
        conflicts=dict(line.get("conflicts", {})),
        usage=usage,
        jury_questions=len(votes),
        jury_unanimous=sum(len(set(v.values())) == 1 and "ERROR" not in v.values() for v in votes),
        jurors={name: {k: v for k, v in u.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
                for name, u in jurors.items() if isinstance(u, dict)},
        categories=count_categories(line),
        confidence=doc_confidence(line, confidence_field),
    )


def _add(into: dict[str, Any], values: Mapping[str, Any]) -> None:
    for k, v in values.items():
        into[k] = into.get(k, 0) + v


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    pos = (len(sorted_values) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def _interval(values: list[float], level: float) -> list[float] | None:
    if not values:
        return None
    values.sort()
    tail = (1 - level) / 2
    return [percentile(values, tail), percentile(values, 1 - tail)]


def bootstrap_ci(keys: Sequence[tuple[int, int, int, int]], resamples: int = 1000, seed: int = 0,
                 level: float = 0.95) -> dict[str, list[float] | None]:
    """Percentile intervals of micro P/R/F1, resampling documents with replacement.

    ``keys`` are per-document (TP predicted, FP, TP gold, FN). A resample where a metric is
    undefined (zero denominator) does not count for that metric."""
    samples: dict[str, list[float]] = {k: [] for k in RATIOS}
    for sums in resampled_sums(keys, resamples, seed):
        for k, v in key_prf(sums).items():
            if v is not None:
                samples[k].append(v)
    return {k: _interval(v, level) for k, v in samples.items()}


def resampled_sums(keys: Sequence[Sequence[int]], resamples: int, seed: int) -> Iterator[list[int]]:
    """The summed ``keys`` of each bootstrap resample of documents (drawn with replacement), the
    same resamples for the same seed: what :func:`bootstrap_ci` and the judge-corrected interval
    (:mod:`.correction`) are computed over."""
    n = len(keys)
    if not n:
        return
    rng = random.Random(seed)
    columns = [list(c) for c in zip(*keys, strict=False)]
    population = range(n)
    for _ in range(resamples):
        idx = rng.choices(population, k=n)
        yield [sum(map(col.__getitem__, idx)) for col in columns]


def paired_bootstrap(a: Sequence[tuple[int, int, int, int]], b: Sequence[tuple[int, int, int, int]],
                     resamples: int = 1000, seed: int = 0, level: float = 0.95) -> dict[str, Any]:
    """B minus A in micro P/R/F1 over the same documents (``a[i]`` and ``b[i]`` are one
    document), with a percentile interval from resampling documents, the pairs kept together."""
    if len(a) != len(b):
        raise ValueError("paired samples must have the same length")
    def sums(keys: Sequence[tuple[int, int, int, int]]) -> list[int]:
        return [sum(c) for c in zip(*keys, strict=False)] if keys else [0, 0, 0, 0]

    pa, pb = key_prf(sums(a)), key_prf(sums(b))
    diffs: dict[str, list[float]] = {k: [] for k in RATIOS}
    n = len(a)
    if n:
        rng = random.Random(seed)
        ca, cb = [list(c) for c in zip(*a, strict=False)], [list(c) for c in zip(*b, strict=False)]
        for _ in range(resamples):
            idx = rng.choices(range(n), k=n)
            ra = key_prf([sum(map(col.__getitem__, idx)) for col in ca])
            rb = key_prf([sum(map(col.__getitem__, idx)) for col in cb])
            for k in RATIOS:
                va, vb = ra[k], rb[k]
                if va is not None and vb is not None:
                    diffs[k].append(vb - va)
    out: dict[str, Any] = {}
    for k in RATIOS:
        ci = _interval(diffs[k], level)
        fa, fb = pa[k], pb[k]
        diff = None if fa is None or fb is None else fb - fa
        out[k] = {"a": pa[k], "b": pb[k], "diff": diff, "ci95": ci,
                  "excludes_zero": ci is not None and (ci[0] > 0 or ci[1] < 0)}
    return out


class MicroCounts(Counts):
    out_of_scope_gold: int = 0
    out_of_scope_predicted: int = 0


class Macro(BaseModel):
    precision: float | None = None
    recall: float | None = None
    f1: float | None = None
    #: For how many documents each figure was defined (before ``zero_division`` filled the rest).
    defined: dict[str, int] = Field(default_factory=dict)
    zero_division: ZeroDivision = "skip"


class Summary(BaseModel):
    """``summary.json`` of an eval run."""

    documents: int
    micro: MicroCounts
    macro: Macro
    by_fact_type: dict[str, Counts]
    #: 95% percentile-bootstrap intervals of the micro figures, ``[low, high]`` or None.
    ci95: dict[str, list[float] | None]
    conflicts: dict[str, int]
    usage: dict[str, Any]
    bootstrap: dict[str, Any] = Field(default_factory=dict)
    skipped: list[dict[str, Any]] = Field(default_factory=list)
    judge: dict[str, Any] = Field(default_factory=dict)
    config: dict[str, Any] = Field(default_factory=dict)
    #: ``factjudge`` version, ``created`` (UTC ISO time of the results), ``inputs`` (paths).
    provenance: dict[str, Any] = Field(default_factory=dict)
    #: The documents' warnings, each once, and the dataset's (scope).
    warnings: list[str] = Field(default_factory=list)
    #: A jury's share of questions all jurors answered alike, over the dataset (None: no jury).
    jury_agreement: float | None = None
    #: Correct, near miss, missing, spurious, duplicate, merges, splits and the fields near misses
    #: differ in, over the dataset (:mod:`factjudge.core.analysis`) ...
    categories: CategoryCounts = Field(default_factory=CategoryCounts)
    #: ... and per fact type.
    categories_by_fact_type: dict[str, CategoryCounts] = Field(default_factory=dict)
    #: ``eval --judge-calibration``: the figures corrected for the judge's measured link errors
    #: (:class:`~factjudge.core.correction.JudgeCorrected`); absent from summary.json without it.
    judge_corrected: dict[str, Any] | None = None
    #: ``factjudge review apply``: the figures with a person's verdicts in place of the judge's
    #: where given (:class:`~factjudge.core.review.ReviewedFigures`); absent until a review is applied.
    reviewed: dict[str, Any] | None = None

    #: Likely mistakes behind the figures, each shown as a banner above them in the reports
    #: (:mod:`factjudge.core.alerts`: kind ``errors``, ``entity_types``, ``empty_side``,
    #: ``fact_type_case``); each is also in ``warnings``.
    alerts: list[Alert] = Field(default_factory=list)
    #: The extractor's confidence against the verdicts (:mod:`factjudge.core.confidence`); absent
    #: from summary.json when no prediction carries one.
    confidence: ConfidenceSummary | None = None
    #: The predictions checked against their documents' text (:mod:`factjudge.core.grounding`):
    #: found or not, possible gold omissions, ungrounded; absent when no document has a text.
    source: SourceSummary | None = None

    @model_serializer(mode="wrap")
    def _absent_when_not_asked(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):  # summaries without them stay as they were
            for key in ("judge_corrected", "reviewed", "confidence", "source"):
                if getattr(self, key) is None:
                    data.pop(key, None)
        return data


class Aggregator:
    """Aggregates built one document at a time: what it keeps per document is four integers
    (for the bootstrap), so memory does not grow with the size of the documents; and, when the
    predictions carry a confidence, 8 bytes per prediction and per gold fact linked to one
    (:class:`~.confidence.ConfidenceAccumulator`)."""

    def __init__(self, worst: int = 10, zero_division: ZeroDivision = "skip") -> None:
        self.zero_division = zero_division
        self.confidence = ConfidenceAccumulator()
        self.documents = 0
        self.micro: dict[str, int] = {k: 0 for k in COUNT_KEYS}
        self.by_type: dict[str, dict[str, int]] = {}
        self.conflicts: dict[str, int] = {}
        self.jury_questions = self.jury_unanimous = 0
        self.jurors: dict[str, dict[str, float]] = {}
        self.categories: dict[str, CategoryCounts] = {}
        self.usage: dict[str, float] = {}
        self.macro_sum = {k: 0.0 for k in RATIOS}
        self.macro_defined = {k: 0 for k in RATIOS}
        self.macro_counted = {k: 0 for k in RATIOS}
        self.keys: list[array[int]] = [array("q") for _ in range(4)]
        self._worst_n = worst
        self._worst: list[tuple[tuple[float, int, int], dict[str, Any]]] = []

    def add(self, s: DocStats) -> None:
        _add(self.micro, s.counts)
        for t, c in s.by_type.items():
            _add(self.by_type.setdefault(t, {k: 0 for k in TYPE_KEYS}), c)
        _add(self.conflicts, s.conflicts)
        _add(self.usage, s.usage)
        self.jury_questions += s.jury_questions
        self.jury_unanimous += s.jury_unanimous
        for name, used in s.jurors.items():
            _add(self.jurors.setdefault(name, {}), used)
        for t, cats in s.categories.items():
            self.categories.setdefault(t, CategoryCounts()).add(cats)
        self.confidence.add(s.confidence, s.doc_id)
        for column, value in zip(self.keys, s.key, strict=False):
            column.append(value)
        r = key_prf(s.key)
        for k, v in r.items():
            if v is not None:
                self.macro_defined[k] += 1
        for k, v in self._macro_values(r).items():
            if v is not None:
                self.macro_sum[k] += v
                self.macro_counted[k] += 1
        c = s.counts
        wrong = c["fn"] + c["fp"] + c["errors"]
        if wrong:  # lowest F1 first (undefined counts as 0), then most wrong, then dataset order
            self._worst.append(((r["f1"] or 0.0, -wrong, self.documents),
                                {"doc_id": s.doc_id, **r, "fn": c["fn"], "fp": c["fp"],
                                 "errors": c["errors"]}))
            if len(self._worst) > 4 * self._worst_n:
                self._worst.sort(key=lambda kv: kv[0])
                del self._worst[self._worst_n:]
        self.documents += 1

    def worst(self) -> list[dict[str, Any]]:
        """Documents with something wrong, worst first."""
        return [row for _, row in sorted(self._worst, key=lambda kv: kv[0])[:self._worst_n]]

    def _macro_values(self, r: Mapping[str, float | None]) -> dict[str, float | None]:
        if self.zero_division == "skip":
            return dict(r)
        fill = float(self.zero_division)
        p, rec = r["precision"], r["recall"]
        if p is None and rec is None:  # nothing to find and nothing found
            return {"precision": fill, "recall": fill, "f1": fill}
        p, rec = fill if p is None else p, fill if rec is None else rec
        return {"precision": p, "recall": rec, "f1": f1_score(p, rec)}

    def summary(self, resamples: int = 1000, seed: int = 0) -> Summary:
        micro = with_ratios(MicroCounts(**self.micro))
        by_type = {t: with_ratios(Counts(**c)) for t, c in sorted(self.by_type.items())}
        usage: dict[str, Any] = dict(sorted(self.usage.items()))
        if "seconds" in usage:  # summed float noise would make files differ for no reason
            usage["seconds"] = round(usage["seconds"], 3)
        macro = Macro(**{k: self.macro_sum[k] / n if (n := self.macro_counted[k]) else None
                         for k in RATIOS}, defined=dict(self.macro_defined),
                      zero_division=self.zero_division)
        if self.jurors:
            usage["jurors"] = {name: dict(sorted(u.items())) for name, u in sorted(self.jurors.items())}
        agreement = self.jury_unanimous / self.jury_questions if self.jury_questions else None
        categories = sorted_counts(self.categories)
        return Summary(documents=self.documents, micro=micro, macro=macro, by_fact_type=by_type,
                       ci95=bootstrap_ci(list(zip(*self.keys, strict=False)), resamples, seed),
                       conflicts=dict(sorted(self.conflicts.items())), usage=usage,
                       jury_agreement=agreement,
                       categories=sorted_counts({"": total_categories(categories)})[""],
                       categories_by_fact_type=categories, confidence=self.confidence.summary())


def aggregate(stats: Iterable[DocStats], resamples: int = 1000, seed: int = 0,
              zero_division: ZeroDivision = "skip") -> Summary:
    agg = Aggregator(zero_division=zero_division)
    for s in stats:
        agg.add(s)
    return agg.summary(resamples, seed)
