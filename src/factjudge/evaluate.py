"""Evaluate a whole dataset: many documents, one shared pool of judge calls, aggregate metrics.

The flow of :func:`evaluate_async`:

1. ``dataset.scan()`` (called by the caller, before any judge call) validates every line and
   keeps per document only its id, an input hash and its number of judge questions.
2. Documents are read again lazily and judged with at most ``2 * concurrency`` documents in
   flight, all sharing one semaphore of ``concurrency`` calls. Each finished document is appended
   to ``results.jsonl`` at once, so a killed run loses nothing that had finished.
3. A run started again reuses every line of ``results.jsonl`` whose ``doc_id`` and
   ``input_sha256`` still match (and that has no ERROR fact, so failures are retried).
4. When every document is done, ``results.jsonl`` is rewritten in dataset order and streamed once
   more to build ``summary.json`` and the reports: the final files depend only on the finished
   lines, never on the order documents happened to finish in.

Aggregation and the bootstrap are pure functions (data in, data out).
"""
from __future__ import annotations

import asyncio
import codecs
import hashlib
import json
import os
import random
import tempfile
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Protocol, Sequence

from .judges.base import Judge
from .loading import InputError, json_type, validate_facts, write_atomic
from .metrics import f1_score, ratio
from .models import OUTPUT_FIELDS, JudgeConfig, JudgeResult
from .pipeline import PREVIEW_STATS, Progress, preview, run_judge_async
from .prompts import PROMPT_FORMAT_VERSION, canonical_json
from .report import collect_rows, render_html, render_markdown
from .scope import in_scope_facts

RESULTS, SUMMARY, REPORT_MD, REPORT_HTML = "results.jsonl", "summary.json", "report.md", "report.html"
#: Per-document counts that are summed into ``micro`` (the ``metrics`` keys of ``judge``).
COUNT_KEYS = ("tp_gold", "fn", "tp_predicted", "fp", "errors", "out_of_scope_gold",
              "out_of_scope_predicted")
TYPE_KEYS = ("tp_gold", "fn", "tp_predicted", "fp", "errors")
RATIOS = ("precision", "recall", "f1")


# --------------------------------------------------------------------------- datasets


@dataclass(frozen=True)
class Problem:
    """A bad input line: reported, and skipped with ``--skip-invalid``."""

    file: str
    line: int
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "error": self.message}


@dataclass(frozen=True)
class DocInfo:
    """What is kept in memory per document: no facts, no prompts."""

    doc_id: str
    input_sha256: str
    questions: int


@dataclass
class Document:
    doc_id: str
    gold: list[dict[str, Any]]
    predicted: list[dict[str, Any]]


class Dataset(Protocol):
    infos: list[DocInfo]

    def scan(self, config: JudgeConfig, salt: str) -> list[Problem]: ...

    def documents(self, skip: set[str] | frozenset[str] = frozenset()) -> Iterator[Document]: ...


def input_salt(config: JudgeConfig, judge: Judge) -> str:
    """Everything besides the facts that decides a document's result, for its input hash."""
    from . import __version__

    return canonical_json({"factjudge": __version__, "prompt_format": PROMPT_FORMAT_VERSION,
                           "config": config.model_dump(mode="json"), "judge": judge.identity()})


def _doc_hash(salt: str, doc: Document) -> str:
    material = canonical_json({"salt": salt, "doc_id": doc.doc_id, "gold_facts": doc.gold,
                               "predicted_facts": doc.predicted})
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


def _questions(doc: Document, config: JudgeConfig) -> int:
    """Judge questions of one document (as the pipeline counts them), for an exact progress total."""
    g, p = len(in_scope_facts(doc.gold, config)), len(in_scope_facts(doc.predicted, config))
    return (g if p else 0) + (p if g else 0)


def _doc_id(rec: dict[str, Any], prefix: str) -> str:
    value = rec.get("doc_id")
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{prefix}: missing or empty 'doc_id' (a non-empty string or an integer)")
    return value


def _parse_line(raw: bytes, prefix: str) -> dict[str, Any]:
    try:
        rec = json.loads(raw.removeprefix(codecs.BOM_UTF8))
    except UnicodeDecodeError:
        raise InputError(f"{prefix}: not valid UTF-8") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{prefix}: invalid JSON: {exc.msg}") from None
    if not isinstance(rec, dict):
        raise InputError(f"{prefix}: expected a JSON object, got {json_type(rec)}")
    return rec


def _lines(path: Path) -> Iterator[tuple[int, int, bytes]]:
    """(line number, byte offset, raw line) of every non-blank line, read lazily."""
    try:
        with path.open("rb") as fh:
            offset = 0
            for lineno, raw in enumerate(fh, start=1):
                if raw.strip():
                    yield lineno, offset, raw
                offset += len(raw)
    except OSError as exc:
        raise InputError(f"{path}: cannot read file: {exc.strerror or exc}") from None


def _read_at(fh: Any, offset: int) -> bytes:
    fh.seek(offset)
    return fh.readline()


class JsonlDataset:
    """``DATASET.jsonl``: one document per line, ``{"doc_id", "gold_facts", "predicted_facts"}``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.infos: list[DocInfo] = []
        self._offsets, self._lines = array("q"), array("q")

    def _document(self, raw: bytes, lineno: int) -> Document:
        prefix = f"{self.path}: line {lineno}"
        rec = _parse_line(raw, prefix)
        doc_id = _doc_id(rec, prefix)
        sides = []
        for key in ("gold_facts", "predicted_facts"):
            facts = rec.get(key)
            if not isinstance(facts, list):
                raise InputError(f"{prefix} (doc_id {doc_id!r}): {key!r} must be a list of facts")
            sides.append(validate_facts(((f"record {i}", f) for i, f in enumerate(facts)),
                                        f"{prefix}: {key}"))
        return Document(doc_id, *sides)

    def scan(self, config: JudgeConfig, salt: str) -> list[Problem]:
        self.infos, self._offsets, self._lines = [], array("q"), array("q")  # a re-scan starts over
        problems: list[Problem] = []
        seen: dict[str, int] = {}
        for lineno, offset, raw in _lines(self.path):
            try:
                doc = self._document(raw, lineno)
                if doc.doc_id in seen:
                    raise InputError(f"{self.path}: line {lineno}: duplicate doc_id {doc.doc_id!r}, "
                                     f"first seen at line {seen[doc.doc_id]}")
            except InputError as exc:
                problems.append(Problem(str(self.path), lineno, str(exc)))
                continue
            seen[doc.doc_id] = lineno
            self.infos.append(DocInfo(doc.doc_id, _doc_hash(salt, doc), _questions(doc, config)))
            self._offsets.append(offset)
            self._lines.append(lineno)
        return problems

    def documents(self, skip: set[str] | frozenset[str] = frozenset()) -> Iterator[Document]:
        with self.path.open("rb") as fh:
            for info, offset, lineno in zip(self.infos, self._offsets, self._lines):
                if info.doc_id not in skip:
                    yield self._document(_read_at(fh, offset), lineno)


@dataclass
class _Side:
    """Where one document's facts sit in one file: byte offsets and line numbers."""

    offsets: array = field(default_factory=lambda: array("q"))
    lines: array = field(default_factory=lambda: array("q"))


class SplitDataset:
    """``--gold G.jsonl --predicted P.jsonl``: one fact per line, grouped by its ``doc_id``.

    The files are indexed (two integers per fact line: byte offset and line number) rather than
    loaded, so facts and prompts are read only when their document is judged. A document on one
    side only is still scored."""

    def __init__(self, gold: Path, predicted: Path) -> None:
        self.paths = {"gold": gold, "predicted": predicted}
        self.infos: list[DocInfo] = []
        self._index: dict[str, dict[str, _Side]] = {}

    @staticmethod
    def _fact(path: Path, lineno: int, rec: dict[str, Any]) -> dict[str, Any]:
        fact = {k: v for k, v in rec.items() if k != "doc_id"}  # doc_id belongs to the document
        return validate_facts([(f"line {lineno}", fact)], str(path))[0]

    def _load(self, side: str, where: _Side, fh: Any) -> list[tuple[int, dict[str, Any]]]:
        path = self.paths[side]
        return [(n, _parse_line(_read_at(fh, off), f"{path}: line {n}"))
                for off, n in zip(where.offsets, where.lines)]

    def scan(self, config: JudgeConfig, salt: str) -> list[Problem]:
        self.infos, self._index = [], {}  # a re-scan starts over
        problems: list[Problem] = []
        # pass 1: each line on its own, and where each document's lines are
        for side, path in self.paths.items():
            for lineno, offset, raw in _lines(path):
                prefix = f"{path}: line {lineno}"
                try:
                    rec = _parse_line(raw, prefix)
                    doc_id = _doc_id(rec, prefix)
                    self._fact(path, lineno, rec)
                except InputError as exc:
                    problems.append(Problem(str(path), lineno, str(exc)))
                    continue
                sides = self._index.setdefault(doc_id, {"gold": _Side(), "predicted": _Side()})
                sides[side].offsets.append(offset)
                sides[side].lines.append(lineno)
        # pass 2: one document at a time, for duplicate ids and the input hash
        handles = {side: path.open("rb") for side, path in self.paths.items()}
        try:
            for doc_id, sides in self._index.items():
                facts: dict[str, list[dict[str, Any]]] = {}
                for side, where in sides.items():
                    path, seen, kept = self.paths[side], {}, _Side()
                    facts[side] = []
                    for (lineno, rec), offset in zip(self._load(side, where, handles[side]),
                                                     where.offsets):
                        fact = self._fact(path, lineno, rec)
                        if fact["id"] in seen:
                            problems.append(Problem(str(path), lineno, (
                                f"{path}: line {lineno} (id {fact['id']!r}): duplicate id in "
                                f"document {doc_id!r}, first seen at line {seen[fact['id']]}")))
                            continue
                        seen[fact["id"]] = lineno
                        facts[side].append(fact)
                        kept.offsets.append(offset)
                        kept.lines.append(lineno)
                    sides[side] = kept
                doc = Document(doc_id, facts["gold"], facts["predicted"])
                self.infos.append(DocInfo(doc_id, _doc_hash(salt, doc), _questions(doc, config)))
        finally:
            for fh in handles.values():
                fh.close()
        problems.sort(key=lambda p: (p.file != str(self.paths["gold"]), p.line))
        return problems

    def documents(self, skip: set[str] | frozenset[str] = frozenset()) -> Iterator[Document]:
        handles = {side: path.open("rb") for side, path in self.paths.items()}
        try:
            for info in self.infos:
                if info.doc_id in skip:
                    continue
                sides = self._index[info.doc_id]
                gold, pred = ([self._fact(self.paths[s], n, rec)
                               for n, rec in self._load(s, sides[s], handles[s])]
                              for s in ("gold", "predicted"))
                yield Document(info.doc_id, gold, pred)
        finally:
            for fh in handles.values():
                fh.close()


# --------------------------------------------------------------------------- results file


class ResultStore:
    """``results.jsonl``, append-only while running; indexed by doc_id for resuming."""

    def __init__(self, path: Path, repair: bool = True) -> None:
        self.path = path
        #: doc_id -> (input hash, byte offset, ERROR facts) of its latest complete line
        self.index: dict[str, tuple[str, int, int]] = {}
        if path.exists():
            self._load(repair)

    def _load(self, repair: bool) -> None:
        end = 0
        with self.path.open("rb") as fh:
            offset = 0
            for lineno, raw in enumerate(fh, start=1):
                if not raw.endswith(b"\n"):
                    break  # cut off by a kill: dropped below
                try:
                    rec = json.loads(raw.removeprefix(codecs.BOM_UTF8))
                    self.index[rec["doc_id"]] = (rec["input_sha256"], offset,
                                                 int(rec["metrics"]["errors"]))
                except (ValueError, KeyError, TypeError):
                    # not written by factjudge: never overwrite someone else's file
                    raise InputError(f"{self.path}: line {lineno} is not a factjudge "
                                     "result line; choose another output folder") from None
                offset += len(raw)
                end = offset
        if repair and end != self.path.stat().st_size:
            os.truncate(self.path, end)

    def reusable(self, info: DocInfo) -> bool:
        hit = self.index.get(info.doc_id)
        return hit is not None and hit[0] == info.input_sha256 and hit[2] == 0

    def append(self, fh: Any, doc_id: str, input_sha256: str, result: JudgeResult) -> None:
        line = {"doc_id": doc_id, "input_sha256": input_sha256, **result.to_dict()}
        data = (json.dumps(line, ensure_ascii=False) + "\n").encode("utf-8")
        offset = fh.tell()
        fh.write(data)
        fh.flush()  # a killed process keeps every finished line
        self.index[doc_id] = (input_sha256, offset, result.metrics.errors)

    def rewrite(self, order: Sequence[DocInfo]) -> Iterator[dict[str, Any]]:
        """Rewrite the file atomically in dataset order, yielding each line parsed."""
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
        try:
            os.chmod(tmp, self.path.stat().st_mode)  # mkstemp's 0600 would surprise readers
            with os.fdopen(fd, "wb") as out, self.path.open("rb") as src:
                for info in order:
                    sha, offset, _ = self.index[info.doc_id]
                    assert sha == info.input_sha256, info.doc_id
                    raw = _read_at(src, offset)
                    out.write(raw)
                    yield json.loads(raw)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


# --------------------------------------------------------------------------- aggregation (pure)


@dataclass(frozen=True)
class DocStats:
    """The numbers of one document that aggregates need."""

    doc_id: str
    counts: Mapping[str, int]
    by_type: Mapping[str, Mapping[str, int]]
    conflicts: Mapping[str, int]
    usage: Mapping[str, float]

    @property
    def key(self) -> tuple[int, int, int, int]:
        """(TP predicted, FP, TP gold, FN): all the bootstrap needs."""
        c = self.counts
        return c["tp_predicted"], c["fp"], c["tp_gold"], c["fn"]


def doc_stats(line: Mapping[str, Any]) -> DocStats:
    m = line["metrics"]
    usage = {k: v for k, v in line.get("usage", {}).items()
             if isinstance(v, (int, float)) and not isinstance(v, bool)}
    return DocStats(
        doc_id=line["doc_id"],
        counts={k: int(m.get(k, 0)) for k in COUNT_KEYS},
        by_type={t: {k: int(c.get(k, 0)) for k in TYPE_KEYS} for t, c in m.get("by_fact_type", {}).items()},
        conflicts=dict(line.get("conflicts", {})),
        usage=usage,
    )


def prf(tp_predicted: int, fp: int, tp_gold: int, fn: int) -> dict[str, float | None]:
    precision, recall = ratio(tp_predicted, tp_predicted + fp), ratio(tp_gold, tp_gold + fn)
    return {"precision": precision, "recall": recall, "f1": f1_score(precision, recall)}


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
    n = len(keys)
    if n:
        rng = random.Random(seed)
        columns = [list(c) for c in zip(*keys)]
        population = range(n)
        for _ in range(resamples):
            idx = rng.choices(population, k=n)
            sums = [sum(map(col.__getitem__, idx)) for col in columns]
            for k, v in prf(*sums).items():
                if v is not None:
                    samples[k].append(v)
    return {k: _interval(v, level) for k, v in samples.items()}


def paired_bootstrap(a: Sequence[tuple[int, int, int, int]], b: Sequence[tuple[int, int, int, int]],
                     resamples: int = 1000, seed: int = 0, level: float = 0.95) -> dict[str, Any]:
    """B minus A in micro P/R/F1 over the same documents (``a[i]`` and ``b[i]`` are one
    document), with a percentile interval from resampling documents, the pairs kept together."""
    if len(a) != len(b):
        raise ValueError("paired samples must have the same length")
    sums = lambda keys: [sum(c) for c in zip(*keys)] if keys else [0, 0, 0, 0]  # noqa: E731
    pa, pb = prf(*sums(a)), prf(*sums(b))
    diffs: dict[str, list[float]] = {k: [] for k in RATIOS}
    n = len(a)
    if n:
        rng = random.Random(seed)
        ca, cb = [list(c) for c in zip(*a)], [list(c) for c in zip(*b)]
        for _ in range(resamples):
            idx = rng.choices(range(n), k=n)
            ra = prf(*(sum(map(col.__getitem__, idx)) for col in ca))
            rb = prf(*(sum(map(col.__getitem__, idx)) for col in cb))
            for k in RATIOS:
                if ra[k] is not None and rb[k] is not None:
                    diffs[k].append(rb[k] - ra[k])  # type: ignore[operator]
    out: dict[str, Any] = {}
    for k in RATIOS:
        ci = _interval(diffs[k], level)
        diff = None if pa[k] is None or pb[k] is None else pb[k] - pa[k]  # type: ignore[operator]
        out[k] = {"a": pa[k], "b": pb[k], "diff": diff, "ci95": ci,
                  "excludes_zero": ci is not None and (ci[0] > 0 or ci[1] < 0)}
    return out


class Aggregator:
    """Aggregates built one document at a time: what it keeps per document is four integers
    (for the bootstrap), so memory does not grow with the size of the documents."""

    def __init__(self, worst: int = 10) -> None:
        self.documents = 0
        self.micro: dict[str, Any] = {k: 0 for k in COUNT_KEYS}
        self.by_type: dict[str, dict[str, Any]] = {}
        self.conflicts: dict[str, int] = {}
        self.usage: dict[str, float] = {}
        self.macro_sum = {k: 0.0 for k in RATIOS}
        self.macro_defined = {k: 0 for k in RATIOS}
        self.keys: list[array] = [array("q") for _ in range(4)]
        self._worst_n = worst
        self._worst: list[tuple[tuple[float, int, int], dict[str, Any]]] = []

    def add(self, s: DocStats) -> None:
        _add(self.micro, s.counts)
        for t, c in s.by_type.items():
            _add(self.by_type.setdefault(t, {k: 0 for k in TYPE_KEYS}), c)
        _add(self.conflicts, s.conflicts)
        _add(self.usage, s.usage)
        for column, value in zip(self.keys, s.key):
            column.append(value)
        r = prf(*s.key)
        for k, v in r.items():
            if v is not None:
                self.macro_sum[k] += v
                self.macro_defined[k] += 1
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

    def summary(self, resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
        """``documents``, ``micro``, ``macro``, ``by_fact_type``, ``ci95``, ``conflicts``, ``usage``."""
        micro = dict(self.micro)
        micro.update(prf(micro["tp_predicted"], micro["fp"], micro["tp_gold"], micro["fn"]))
        by_type = {t: {**c, **prf(c["tp_predicted"], c["fp"], c["tp_gold"], c["fn"])}
                   for t, c in sorted(self.by_type.items())}
        usage = dict(sorted(self.usage.items()))
        if "seconds" in usage:  # summed float noise would make files differ for no reason
            usage["seconds"] = round(usage["seconds"], 3)
        macro: dict[str, Any] = {k: self.macro_sum[k] / n if (n := self.macro_defined[k]) else None
                                 for k in RATIOS}
        macro["defined"] = dict(self.macro_defined)
        return {
            "documents": self.documents,
            "micro": micro,
            "macro": macro,
            "by_fact_type": by_type,
            "ci95": bootstrap_ci(list(zip(*self.keys)), resamples, seed),
            "conflicts": dict(sorted(self.conflicts.items())),
            "usage": usage,
        }


def aggregate(stats: Iterable[DocStats], resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    agg = Aggregator()
    for s in stats:
        agg.add(s)
    return agg.summary(resamples, seed)


# --------------------------------------------------------------------------- running


async def judge_documents(
    documents: Iterable[Document],
    config: JudgeConfig,
    judge: Judge,
    on_result: Callable[[Document, JudgeResult], None],
    *,
    concurrency: int = 8,
    progress: Progress | None = None,
) -> None:
    """Judge documents with one pool of ``concurrency`` calls shared by all of them.

    Only ``2 * concurrency`` documents are in flight, so memory does not grow with the dataset,
    while the pool stays busy even when documents are small."""
    limiter = asyncio.Semaphore(concurrency)
    in_flight = max(2, 2 * concurrency)
    pending: set[asyncio.Task[tuple[Document, JudgeResult]]] = set()

    async def one(doc: Document) -> tuple[Document, JudgeResult]:
        result = await run_judge_async(doc.gold, doc.predicted, config, judge, limiter=limiter,
                                       progress=progress, doc_id=doc.doc_id)
        return doc, result

    async def drain(until: int) -> None:
        nonlocal pending
        while len(pending) > until:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                on_result(*task.result())

    docs = iter(documents)
    try:
        while True:
            await drain(in_flight - 1)  # before reading the next document, not after
            doc = next(docs, None)
            if doc is None:
                break
            pending.add(asyncio.create_task(one(doc)))
        await drain(0)
    finally:
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)


def _remove_stale(out_dir: Path) -> None:
    """Outputs of an earlier run must not pass for this run's until it has finished."""
    for name in (SUMMARY, REPORT_MD, REPORT_HTML):
        (out_dir / name).unlink(missing_ok=True)


def preview_dataset(dataset: Dataset, config: JudgeConfig, judge: Judge, out_dir: Path) -> dict[str, Any]:
    """The dry run of ``factjudge eval``: :func:`~factjudge.pipeline.preview` summed over the
    documents a run would judge (those already finished in ``out_dir`` would be reused)."""
    store = ResultStore(out_dir / RESULTS, repair=False)  # a dry run changes no file
    reused = frozenset(i.doc_id for i in dataset.infos if store.reusable(i))
    plan: dict[str, Any] = {"documents": len(dataset.infos) - len(reused),
                            "reused_documents": len(reused),
                            "token_counter": judge.run_info().get("token_counter")}
    totals = {d: dict.fromkeys(PREVIEW_STATS, 0) for d in ("gold", "predicted")}
    for doc in dataset.documents(skip=reused):
        one = preview(doc.gold, doc.predicted, config, judge, doc_id=doc.doc_id)
        for direction, stats in totals.items():
            for key in stats:
                stats[key] += one[direction][key]
    return {**plan, **totals}


@dataclass
class EvalRun:
    """What :func:`evaluate_async` returns: the summary and what the run did."""

    summary: dict[str, Any]
    judged: int
    reused: int


async def evaluate_async(
    dataset: Dataset,
    config: JudgeConfig,
    judge: Judge,
    out_dir: Path,
    *,
    concurrency: int = 8,
    resamples: int = 1000,
    seed: int = 0,
    report_rows: int = 5000,
    skipped: Sequence[Problem] = (),
    progress: Progress | None = None,
    on_start: Callable[[int, int, int], None] | None = None,
    on_document: Callable[[], None] | None = None,
) -> EvalRun:
    """Judge a scanned ``dataset`` into ``out_dir`` (results.jsonl, summary.json, reports).

    ``on_start(documents to judge, reused, questions to ask)`` is called once before judging,
    ``on_document()`` as each document finishes."""

    if not dataset.infos:
        raise ValueError("no documents: call dataset.scan(config, salt) first (or it is empty)")
    out_dir.mkdir(parents=True, exist_ok=True)
    store = ResultStore(out_dir / RESULTS)
    _remove_stale(out_dir)
    reused = frozenset(i.doc_id for i in dataset.infos if store.reusable(i))
    todo = [i for i in dataset.infos if i.doc_id not in reused]
    if on_start:
        on_start(len(todo), len(reused), sum(i.questions for i in todo))
    hashes = {i.doc_id: i.input_sha256 for i in todo}

    with store.path.open("ab") as fh:
        def finished(doc: Document, result: JudgeResult) -> None:
            store.append(fh, doc.doc_id, hashes[doc.doc_id], result)
            if on_document:
                on_document()

        await judge_documents(dataset.documents(skip=reused), config, judge, finished,
                              concurrency=concurrency, progress=progress)

    agg = Aggregator()
    rows: list[dict[str, Any]] = []
    rows_total = 0
    for line in store.rewrite(dataset.infos):
        agg.add(doc_stats(line))
        doc_rows = collect_rows(line)
        rows_total += len(doc_rows)
        rows.extend(doc_rows[:max(0, report_rows - len(rows))])

    summary = agg.summary(resamples, seed)
    summary["bootstrap"] = {"resamples": resamples, "seed": seed, "level": 0.95}
    summary["skipped"] = [p.to_dict() for p in skipped]
    summary["judge"] = judge.identity()
    summary["config"] = config.model_dump(mode="json")
    worst = agg.worst()
    write_atomic(out_dir / REPORT_MD, render_markdown(summary, worst, rows, rows_total))
    write_atomic(out_dir / REPORT_HTML, render_html(summary, worst, rows, rows_total))
    # last, so its presence means the whole run finished
    write_atomic(out_dir / SUMMARY, json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    return EvalRun(summary, judged=len(todo), reused=len(reused))


# --------------------------------------------------------------------------- compare


def read_eval_dir(out_dir: Path) -> dict[str, tuple[tuple[int, int, int, int], str]]:
    """doc_id -> (bootstrap key, hash of its gold facts) from a finished eval folder."""
    if not (out_dir / SUMMARY).is_file():
        raise InputError(f"{out_dir}: not a finished eval output folder (no {SUMMARY})")
    docs: dict[str, tuple[tuple[int, int, int, int], str]] = {}
    path = out_dir / RESULTS
    for lineno, _, raw in _lines(path):
        try:
            line = json.loads(raw)
            gold = [{k: v for k, v in f.items() if k not in OUTPUT_FIELDS} for f in line["gold_facts"]]
            digest = hashlib.sha256(canonical_json(gold).encode("utf-8")).hexdigest()
            docs[line["doc_id"]] = (doc_stats(line).key, digest)
        except (ValueError, KeyError, TypeError, AttributeError):
            raise InputError(f"{path}: line {lineno}: not a factjudge result line") from None
    return docs
