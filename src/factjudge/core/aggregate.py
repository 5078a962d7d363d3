"""Aggregates over documents (micro, macro, per fact type, conflicts, usage, field-level scores)
and bootstrap intervals. Pure: data in, data out; memory per document is four integers, and four
more per field path the document has a value at (for the fields' intervals)."""
from __future__ import annotations

import random
import sys
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from operator import mul
from typing import Any, Literal, TypedDict

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from ..models import CategoryCounts, Counts, FieldScore, line_analysis, verdict_of
from ..models.base import Model
from .alerts import Alert
from .analysis import CategoryTally, category_tallies, sorted_counts, total_categories
from .confidence import ConfidenceAccumulator, ConfidenceSummary, DocConfidence, doc_confidence
from .fields import Tally, field_score, tally_of
from .grounding import SourceSummary
from .metrics import f1_score, prf, with_ratios
from .review import ReviewedSummary

#: How a document's undefined precision or recall counts in the macro average, as scikit-learn's
#: ``zero_division``: ``skip`` leaves it out (``macro.defined`` says for how many documents each
#: was defined), ``0`` or ``1`` counts it as that value.
ZeroDivision = Literal["skip", "0", "1"]

#: Per-document counts that are summed into ``micro`` (the ``metrics`` keys of ``judge``).
COUNT_KEYS = ("tp_gold", "fn", "tp_predicted", "fp", "errors", "out_of_scope_gold",
              "out_of_scope_predicted")
TYPE_KEYS = ("tp_gold", "fn", "tp_predicted", "fp", "errors")
RATIOS = ("precision", "recall", "f1")
#: The FN/FP/ERROR rows the reports list by default (``eval --report-rows``).
REPORT_ROWS = 5000

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
    #: The categories per fact type (:func:`factjudge.core.analysis.category_tallies`).
    categories: Mapping[str, CategoryTally] = field(default_factory=dict)
    #: The predictions' confidences by verdict (None: they carry none), see :mod:`.confidence`.
    confidence: DocConfidence | None = None
    #: The field-level counts per fact type and path (:mod:`factjudge.core.fields`).
    fields: Mapping[str, Mapping[str, Sequence[int]]] = field(default_factory=dict)

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
    votes = [v for side in ("gold_facts", "predicted_facts") for f in line.get(side, ())
             if isinstance(v := verdict_of(f).get("votes"), dict)]
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
        categories=category_tallies(line),
        confidence=doc_confidence(line, confidence_field),
        fields=tally_of(line_analysis(line).fields),
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


class _FieldColumns:
    """One field path's per-document counts, for its bootstrap: the documents that have a value
    there, and per document its correct, gold and predicted values."""

    __slots__ = ("docs", "correct", "gold", "predicted")

    def __init__(self) -> None:
        self.docs, self.correct, self.gold, self.predicted = array("q"), array("q"), array("q"), array("q")

    def add(self, doc: int, c: Sequence[int]) -> None:
        correct, wrong, missing, spurious = c[:4]
        self.docs.append(doc)
        self.correct.append(correct)
        self.gold.append(correct + wrong + missing)
        self.predicted.append(correct + wrong + spurious)


#: Field paths whose counts share one packed integer per document in :func:`field_intervals`.
_PACK = 32


def _packed(part: Sequence[_FieldColumns], documents: int) -> tuple[int, list[int]]:
    """Per document, one integer holding every count of ``part`` (correct, gold, predicted per
    path) in fields of ``bits`` bits: wide enough for any resample's sum, so one sum of weighted
    integers gives every path's sums at once (a path at a time took 4.5 s for 20 paths over
    1,200 documents, this 0.3 s)."""
    top = max((max(v, default=0) for c in part for v in (c.gold, c.predicted)), default=0)
    bits = (documents * top).bit_length() + 1
    packed = [0] * documents
    for k, col in enumerate(part):
        for slot, values in enumerate((col.correct, col.gold, col.predicted)):
            shift = (3 * k + slot) * bits
            for doc, v in zip(col.docs, values, strict=True):
                if v:
                    packed[doc] += v << shift
    return bits, packed


def field_intervals(columns: Mapping[str, Mapping[str, _FieldColumns]], documents: int, resamples: int = 1000,
                    seed: int = 0, level: float = 0.95) -> dict[str, dict[str, dict[str, list[float] | None]]]:
    """Per fact type and path, percentile intervals of the field's precision, recall and F1,
    resampling documents with replacement: the same resamples as :func:`bootstrap_ci` with the
    same seed (one draw of documents serves every path)."""
    return run_intervals(None, columns, documents, resamples, seed, level)[1]


def _packed_keys(keys: Sequence[Sequence[int]]) -> tuple[int, list[int]]:
    """Per document, its four :attr:`DocStats.key` counts in one integer (fields of ``bits``
    bits, wide enough for any resample's sum): one sum per resample instead of four."""
    top = max((max(k, default=0) for k in keys), default=0)
    bits = (len(keys) * top).bit_length() + 1
    return bits, [sum(v << (j * bits) for j, v in enumerate(k)) for k in keys]


#: From this many documents the bootstrap draws with numpy when it is installed (the same draws:
#: its Mersenne Twister continues Python's state, and a double is made alike): 0.3 s against
#: 0.1 s at 1,000 documents, 5 s against 0.4 s at 10,000; below, importing numpy costs more.
#: Imported already (an LLM run imports it while it waits for answers), numpy draws faster from
#: one document: 20 field paths x 1,000 resamples, 3 ms against 35 ms at 1 document, 11 ms
#: against 78 ms at 200.
NUMPY_FROM = 500

#: Per resample: the summed keys (None when not asked), and per field path its summed
#: (correct, gold, predicted).
_Sums = tuple[Sequence[int] | None, list[tuple[int, int, int]]]


def run_intervals(keys: Sequence[Sequence[int]] | None, columns: Mapping[str, Mapping[str, _FieldColumns]],
                  documents: int, resamples: int = 1000, seed: int = 0, level: float = 0.95,
                  use_numpy: bool | None = None) -> tuple[dict[str, list[float] | None],
                                                         dict[str, dict[str, dict[str, list[float] | None]]]]:
    """:func:`bootstrap_ci` of ``keys`` (one per document; None: not asked) and
    :func:`field_intervals` of ``columns`` from one draw of the resamples: both draw the same
    documents for the same seed, and drawing them was half of their time. ``use_numpy`` (default:
    when imported already, else from :data:`NUMPY_FROM` documents, when installed) changes the
    time, never a figure."""
    flat = [(t, path, col) for t, paths in columns.items() for path, col in paths.items()]
    samples: list[dict[str, list[float]]] = [{k: [] for k in RATIOS} for _ in flat]
    micro: dict[str, list[float]] = {k: [] for k in RATIOS}
    if keys is not None and len(keys) != documents:
        raise ValueError("one key per document")
    if documents and (flat or keys):
        cols = [c for _, _, c in flat]
        np = _numpy() if use_numpy or (use_numpy is None and (documents >= NUMPY_FROM or "numpy" in sys.modules)
                                       ) else None
        draws = (_numpy_sums(np, keys, cols, documents, resamples, seed, micro, samples) if np is not None
                 else _python_sums(keys, cols, documents, resamples, seed))
        for key_sums, totals in draws:
            if key_sums is not None:
                for k, v in key_prf(key_sums).items():
                    if v is not None:
                        micro[k].append(v)
            for ratios, (correct, gold, predicted) in zip(samples, totals, strict=True):
                for name, v in zip(RATIOS, prf(correct, predicted - correct, gold - correct), strict=True):
                    if v is not None:
                        ratios[name].append(v)
    out: dict[str, dict[str, dict[str, list[float] | None]]] = {}
    for (t, path, _), ratios in zip(flat, samples, strict=True):
        out.setdefault(t, {})[path] = {k: _interval(v, level) for k, v in ratios.items()}
    return {k: _interval(v, level) for k, v in micro.items()}, out


def prepare_bootstrap(documents: int, numpy_from: int = NUMPY_FROM) -> None:
    """Import numpy now when the bootstrap of ``documents`` will draw with it (a run with workers:
    while they judge its first documents, instead of at its end: 0.06 s CPU). ``numpy_from``: the
    documents from which the import pays (1 where this process would only wait: an LLM run's)."""
    if documents >= numpy_from:
        _numpy()


def _numpy() -> Any:
    try:
        import numpy  # optional (the pandas extra brings it): only for a large run's bootstrap
    except ImportError:
        return None
    return numpy


def _python_sums(keys: Sequence[Sequence[int]] | None, cols: Sequence[_FieldColumns], documents: int,
                 resamples: int, seed: int) -> Iterator[_Sums]:
    """The resamples' sums, drawn as ``random.Random(seed).choices`` draws them."""
    chunks = [(start, *_packed(cols[start:start + _PACK], documents)) for start in range(0, len(cols), _PACK)]
    key_bits, key_packed = _packed_keys(keys) if keys else (0, [])
    key_mask = (1 << key_bits) - 1
    rng = random.Random(seed)
    population = range(documents)
    for _ in range(resamples):
        idx = rng.choices(population, k=documents)
        key_sums = None
        if keys:
            total = sum(map(key_packed.__getitem__, idx))
            key_sums = [(total >> (j * key_bits)) & key_mask for j in range(4)]
        totals: list[tuple[int, int, int]] = []
        if chunks:
            weights = [0] * documents
            for i in idx:
                weights[i] += 1
            for start, bits, packed in chunks:
                total, mask = sum(map(mul, weights, packed)), (1 << bits) - 1
                for k in range(min(_PACK, len(cols) - start)):
                    base = 3 * k * bits
                    totals.append(((total >> base) & mask, (total >> (base + bits)) & mask,
                                   (total >> (base + 2 * bits)) & mask))
        yield key_sums, totals


#: Resampled documents drawn and weighed at once by :func:`_numpy_sums`: resamples x documents
#: at most this (8 MB of int64 a matrix).
NUMPY_BLOCK = 1 << 20


def _numpy_sums(np: Any, keys: Sequence[Sequence[int]] | None, cols: Sequence[_FieldColumns], documents: int,
                resamples: int, seed: int, micro: dict[str, list[float]],
                samples: Sequence[dict[str, list[float]]]) -> Iterable[_Sums]:
    """:func:`_python_sums` with numpy, a block of resamples at a time, and each resample's ratios
    appended to ``micro`` and, per path, ``samples`` here (one resample at a time, the loop's numpy
    calls and the ratios in Python were 60 ms of 1,000 documents' summary); nothing is left to
    yield then. Only when a sum may reach 2**53 (no double holds it) are the sums yielded for
    :func:`run_intervals`' exact ratios of integers instead.

    The draws are the same: the generator takes over the state of ``random.Random(seed)``,
    ``floor(random() * n)`` is what ``choices`` draws (a double made of two 32-bit outputs alike)
    and a block's doubles are the draws' doubles in turn. The ratios are the same: exact integer
    sums, then the divisions of :func:`~factjudge.core.metrics.prf` in its order (of doubles
    holding those integers exactly, IEEE either way)."""
    state = random.Random(seed).getstate()[1]
    rng = np.random.RandomState()
    rng.set_state(("MT19937", np.array(state[:624], dtype=np.uint32), state[624]))
    matrix, first = _count_matrix(np, keys, cols, documents)
    # in floats (14 ms against 26 ms of int64 on 1,000 x 1,000 x 37) when every sum, a partial
    # one too, is an integer the float holds exactly, in any order of adding: then by BLAS (`@`),
    # whose order of adding cannot change them (100,000 documents x 40 sums x 1,000 resamples:
    # 0.71 s against einsum's 1.89 s, one thread: the CLI runs OpenBLAS on one, whose threads
    # otherwise spin on the other cores); the int64 sums by einsum (numpy's integer `@` is no BLAS)
    dtype = _exact_float(np, documents * int(matrix.max(initial=0)))
    exact = dtype is not None
    if exact:
        matrix = matrix.astype(dtype)
    block = max(1, NUMPY_BLOCK // documents)
    parts = []
    for start in range(0, resamples, block):
        rows = min(block, resamples - start)
        # the draws are >= 0: truncating is flooring (0.1 s less of 100,000 documents' 100M draws)
        idx = (rng.random_sample(rows * documents) * float(documents)).astype(np.int64)
        idx.reshape(rows, documents)[...] += (np.arange(rows, dtype=np.int64) * documents)[:, None]
        weights = np.bincount(idx, minlength=rows * documents).reshape(rows, documents)
        weights = weights.astype(matrix.dtype)
        parts.append((weights @ matrix if exact else np.einsum("rd,dc->rc", weights, matrix)).astype(np.int64))
    sums = np.concatenate(parts) if parts else np.zeros((0, matrix.shape[1]), dtype=np.int64)
    if not exact:
        return [(row[:4] if keys else None, [tuple(row[i:i + 3]) for i in range(first, len(row), 3)])
                for row in sums.tolist()]

    def ratios(out: dict[str, list[float]], tp: Any, predicted: Any, tp_recall: Any, gold: Any) -> None:
        with np.errstate(divide="ignore", invalid="ignore"):
            precision, recall = tp / predicted, tp_recall / gold
            total = precision + recall
            f1 = np.where(total == 0, 0.0, 2 * precision * recall / total)
        has_p, has_r = predicted != 0, gold != 0
        out["precision"] += precision[has_p].tolist()
        out["recall"] += recall[has_r].tolist()
        out["f1"] += f1[has_p & has_r].tolist()

    if keys:  # (TP predicted, FP, TP gold, FN)
        ratios(micro, sums[:, 0], sums[:, 0] + sums[:, 1], sums[:, 2], sums[:, 2] + sums[:, 3])
    for k, out in enumerate(samples):
        correct, gold, predicted = (sums[:, first + 3 * k + slot] for slot in range(3))
        ratios(out, correct, predicted, correct, gold)
    return []


def _exact_float(np: Any, bound: int) -> Any:
    """The float type that holds every integer from 0 to ``bound`` (a sum's largest) exactly, the
    narrower first: float32's product is twice float64's speed (100,000 documents x 40 sums x
    1,000 resamples: 0.30 s against 0.57 s); None past float64's 2**53."""
    if bound < 2 ** 24:
        return np.float32
    return np.float64 if bound < 2 ** 53 else None


def _count_matrix(np: Any, keys: Sequence[Sequence[int]] | None, cols: Sequence[_FieldColumns],
                  documents: int) -> tuple[Any, int]:
    """A row of counts per document: the four keys (when given), then (correct, gold, predicted)
    per path; and the column of the first path."""
    first = 4 if keys else 0
    matrix = np.zeros((documents, first + 3 * len(cols)), dtype=np.int64)
    if keys:
        matrix[:, :4] = np.array(keys, dtype=np.int64).reshape(documents, 4)
    for k, col in enumerate(cols):
        if col.docs:
            docs = np.frombuffer(col.docs, dtype=np.int64)
            for slot, values in enumerate((col.correct, col.gold, col.predicted)):
                matrix[docs, first + 3 * k + slot] = np.frombuffer(values, dtype=np.int64)
    return matrix, first


class PairedDiff(TypedDict):
    """One ratio of two runs over the same documents: A's, B's, B - A, its interval, and whether
    the interval leaves out 0 (``CompareResult``'s ``MetricDiff`` reads it)."""

    a: float | None
    b: float | None
    diff: float | None
    ci95: list[float] | None
    excludes_zero: bool


def paired_bootstrap(a: Sequence[tuple[int, int, int, int]], b: Sequence[tuple[int, int, int, int]],
                     resamples: int = 1000, seed: int = 0, level: float = 0.95) -> dict[str, PairedDiff]:
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
    out: dict[str, PairedDiff] = {}
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


class Macro(Model):
    precision: float | None = None
    recall: float | None = None
    f1: float | None = None
    #: For how many documents each figure was defined (before ``zero_division`` filled the rest).
    defined: dict[str, int] = Field(default_factory=dict)
    zero_division: ZeroDivision = "skip"


class Summary(Model):
    """``summary.json`` of an eval run."""

    documents: int
    micro: MicroCounts
    macro: Macro
    by_fact_type: dict[str, Counts]
    #: 95% percentile-bootstrap intervals of the micro figures, ``[low, high]`` or None.
    ci95: dict[str, list[float] | None]
    conflicts: dict[str, int]
    usage: dict[str, Any]
    #: ``resamples``, ``seed`` and ``level`` of the intervals.
    bootstrap: dict[str, int | float] = Field(default_factory=dict)
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
    #: Field-level scores per fact type and field path, worst-first ordering left to the reports
    #: (:mod:`factjudge.core.fields`), each with its document-bootstrap ``ci95``.
    fields: dict[str, dict[str, FieldScore]] = Field(default_factory=dict)
    #: ``eval --judge-calibration``: the figures corrected for the judge's measured link errors
    #: (:class:`~factjudge.core.correction.JudgeCorrected`); absent from summary.json without it.
    judge_corrected: dict[str, Any] | None = None
    #: ``factjudge review apply``: the figures with a person's verdicts in place of the judge's
    #: where given; absent until a review is applied.
    reviewed: ReviewedSummary | None = None
    #: ``eval --report-rows``: the FN/FP/ERROR rows the reports list, so ``review apply`` renders
    #: them again alike; in summary.json only when not the default (summaries stay as they were).
    report_rows: int = Field(default=REPORT_ROWS, ge=0)

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
            if self.report_rows == REPORT_ROWS:
                data.pop("report_rows", None)
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
        self.categories: dict[str, CategoryTally] = {}
        self.fields: Tally = {}
        self.field_columns: dict[str, dict[str, _FieldColumns]] = {}
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
            mine = self.by_type.get(t)
            if mine is None:
                mine = self.by_type[t] = dict.fromkeys(TYPE_KEYS, 0)
            _add(mine, c)
        _add(self.conflicts, s.conflicts)
        _add(self.usage, s.usage)
        self.jury_questions += s.jury_questions
        self.jury_unanimous += s.jury_unanimous
        for name, used in s.jurors.items():
            _add(self.jurors.setdefault(name, {}), used)
        for t, cats in s.categories.items():
            tally = self.categories.get(t)
            if tally is None:
                tally = self.categories[t] = CategoryTally()
            tally.add(cats)
        self.confidence.add(s.confidence, s.doc_id)
        for t, paths in s.fields.items():  # one walk: the run's field counts and the columns
            columns = self.field_columns.get(t)
            if columns is None:
                columns = self.field_columns[t] = {}
            sums = self.fields.get(t)
            if sums is None:
                sums = self.fields[t] = {}
            for path, values in paths.items():
                found = columns.get(path)
                if found is None:
                    found = columns[path] = _FieldColumns()
                found.add(self.documents, values)
                total = sums.get(path)
                if total is None:
                    sums[path] = list(values[:4])
                else:  # unrolled: a 20-path document's sums 3.4 -> 1.5 us
                    total[0] += values[0]
                    total[1] += values[1]
                    total[2] += values[2]
                    total[3] += values[3]
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
        categories = sorted_counts({t: c.counts() for t, c in self.categories.items()})
        ci95, intervals = run_intervals(list(zip(*self.keys, strict=False)), self.field_columns,
                                        self.documents, resamples, seed)
        fields = {t: {path: field_score(c, intervals[t][path]) for path, c in sorted(paths.items())}
                  for t, paths in sorted(self.fields.items())}
        return Summary(documents=self.documents, micro=micro, macro=macro, by_fact_type=by_type,
                       ci95=ci95,
                       conflicts=dict(sorted(self.conflicts.items())), usage=usage,
                       jury_agreement=agreement,
                       categories=sorted_counts({"": total_categories(categories)})[""],
                       categories_by_fact_type=categories, confidence=self.confidence.summary(),
                       fields=fields)


def aggregate(stats: Iterable[DocStats], resamples: int = 1000, seed: int = 0,
              zero_division: ZeroDivision = "skip") -> Summary:
    agg = Aggregator(zero_division=zero_division)
    for s in stats:
        agg.add(s)
    return agg.summary(resamples, seed)
