"""Evaluate a whole dataset: many documents, one shared pool of judge calls, aggregate metrics.

The flow of :func:`evaluate_async`:

1. ``dataset.scan()`` (called by the caller, before any judge call) validates every line and
   keeps per document only its id, an input hash and its number of judge questions.
   ``open_run`` then claims the output folder: one written by factjudge (or new), and held by
   this run alone (a lock the OS drops with the process).
2. Documents are read again lazily (each checked against its scan) and judged with at most
   ``2 * concurrency`` documents in flight, all sharing one semaphore of ``concurrency`` calls.
   Each finished document is appended to ``results.jsonl`` at once, so a killed run loses
   nothing that had finished.
3. A run started again reuses every line of ``results.jsonl`` whose ``doc_id`` and
   ``input_sha256`` still match (and that has no ERROR fact, so failures are retried).
4. When every document is done, ``results.jsonl`` is rewritten in dataset order and streamed once
   more to build ``summary.json`` and the reports: the final files depend only on the finished
   lines, never on the order documents happened to finish in.

Aggregation and the bootstrap are pure functions (data in, data out).
"""
from __future__ import annotations

import asyncio
import contextlib
import functools
import heapq
import importlib
import json
import sys
import tempfile
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol

from .._version import __version__
from ..core.aggregate import (
    NUMPY_FROM,
    REPORT_ROWS,
    Aggregator,
    Macro,
    MicroCounts,
    Summary,
    ZeroDivision,
    doc_stats,
    prepare_bootstrap,
)
from ..core.alerts import InputShape, ProofLinks, input_warnings, run_alerts
from ..core.confidence import corrected as confidence_corrected
from ..core.grounding import Finder, SourceCounts
from ..core.scope import merge_warnings, scope_check
from ..errors import InputError
from ..io.config import load_config, parse_config
from ..io.datasets import Dataset, DocInfo, Document, Problem, open_dataset
from ..io.documents import DocumentTexts
from ..io.files import write_atomic
from ..io.run_models import RUN_KEYS, RunManifest
from ..io.runfolder import (
    FACTS_CSV,
    REPORT_HTML,
    REPORT_MD,
    REPORTS,
    RESULTS,
    REVIEW_HTML,
    RUN,
    SUMMARY,
    FolderLock,
    LineRef,
    ResultStore,
    RunFolder,
    result_line,
)
from ..io.scan import HeldDocument, doc_hash
from ..judges.base import PROMPT_FORMAT_VERSION, Judge, run_info_of
from ..models import CategoryCounts, FieldScore, JudgeConfig, JudgeResult, Prices, line_analysis
from ..reports.review import ReviewQueue, render_review
from ..reports.rows import (
    ClosestIds,
    ClosestMap,
    ClosestMemo,
    closest_detail,
    closest_of_ids,
    read_config_as,
    select_rows,
    worst_order_key,
)
from ..util.aio import in_window, run_sync, when_idle
from ..util.exiting import keep
from ..util.forked import beside, second_core
from ..util.jsonutil import canonical_json, parse_written
from .pipeline import (
    PREVIEW_STATS,
    ProgressObserver,
    judge_checked,
    judge_config_warnings,
    preview,
    warn_user,
)

if TYPE_CHECKING:
    from ..core.correction import JudgeCalibration


class RunProgress(ProgressObserver, Protocol):
    """What a dataset run reports as it goes: the questions and verdicts of every document
    (:class:`~factjudge.evaluation.pipeline.ProgressObserver`), plus the run's start and each
    finished document (the CLI's progress bar is one)."""

    def on_start(self, to_judge: int, reused: int, questions: int) -> None:
        """Before judging: documents to judge, documents reused from the folder, questions to ask."""

    def on_document(self, doc_id: str) -> None:
        """A document was judged and its result line written."""

    def on_answers(self, answered: int, cache_hits: int = 0, errors: int = 0) -> None:
        """A document's questions answered where no verdict reaches this process (``workers``
        above 1: each worker's own), before its :meth:`on_document`."""


async def judge_documents(
    documents: Iterable[Document],
    config: JudgeConfig,
    judge: Judge,
    on_result: Callable[[Document, JudgeResult], None],
    *,
    concurrency: int = 8,
    progress: ProgressObserver | None = None,
) -> None:
    """Judge documents with one pool of ``concurrency`` calls shared by all of them. Their facts
    have passed :func:`~factjudge.io.facts.validate_facts` (every input format, calibrate's labels
    and Ray's rows check them so): they are not checked again.

    Only ``2 * concurrency`` documents are in flight, so memory does not grow with the dataset,
    while the pool stays busy even when documents are small."""
    limiter = asyncio.Semaphore(concurrency)

    async def one(doc: Document) -> tuple[Document, JudgeResult]:
        # a Document's facts were checked when it was read
        result = await judge_checked(doc.gold, doc.predicted, config, judge, limiter=limiter,
                                     concurrency=concurrency, progress=progress, doc_id=doc.doc_id)
        return doc, result

    await in_window(documents, one, max(2, 2 * concurrency), lambda done: on_result(*done))


def _remove_stale(out_dir: Path) -> None:
    """Outputs of an earlier run must not pass for this run's until it has finished, and the
    temporary files of a rewrite killed half-way are garbage."""
    for name in REPORTS:
        (out_dir / name).unlink(missing_ok=True)
    for tmp in out_dir.glob(".*.tmp"):
        if tmp.name.startswith(tuple(f".{n}." for n in (RESULTS, *REPORTS))):
            tmp.unlink(missing_ok=True)


def preview_dataset(dataset: Dataset, config: JudgeConfig, judge: Judge, out_dir: Path) -> dict[str, Any]:
    """The dry run of ``factjudge eval``: :func:`~factjudge.evaluation.pipeline.preview` summed over the
    documents a run would judge (those already finished in ``out_dir`` would be reused)."""
    store = ResultStore(out_dir / RESULTS, repair=False)  # a dry run changes no file
    reused = frozenset(i.doc_id for i in dataset.infos if store.reusable(i))
    plan: dict[str, Any] = {"documents": len(dataset.infos) - len(reused),
                            "reused_documents": len(reused),
                            "token_counter": run_info_of(judge).get("token_counter")}
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

    summary: Summary
    judged: int
    reused: int
    #: The result lines (as in results.jsonl), when :func:`evaluate_dataset` wrote no folder.
    results: list[dict[str, Any]] | None = None

    def __repr__(self) -> str:
        # one line: the dataclass repr printed the whole summary (and every result line)
        from ..reports.notebook import summary_line  # Jinja2 and the pages only when shown

        line = summary_line(self.summary)
        return f"EvalRun({line}; judged {self.judged}, reused {self.reused})"

    def _repr_html_(self) -> str:
        """The headline table in a notebook (Jupyter calls this)."""
        from ..reports.notebook import summary_html

        return summary_html(self.summary)


@dataclass(frozen=True)
class ReportSettings:
    """How the final files are built from the finished results."""

    resamples: int = 1000
    seed: int = 0
    report_rows: int = REPORT_ROWS
    zero_division: ZeroDivision = "skip"
    #: Also write ``facts.csv``: one row per fact of every document.
    csv: bool = False
    #: Prices per million tokens: summary.json's usage then gives the run's ``cost``.
    prices: Prices | None = None
    #: A judge calibration (``eval --judge-calibration``): summary.json then gives the figures
    #: corrected for the judge's measured link errors (``judge_corrected``).
    judge_calibration: JudgeCalibration | None = None
    #: The documents' texts (``eval --documents``), in place of those the inputs carry: facts
    #: are then checked against their source (summary.json's ``source``, the document view).
    documents: DocumentTexts | None = None


def run_manifest(dataset: Dataset, config: JudgeConfig, judge: Judge) -> RunManifest:
    """What produced a folder's results: ``run.json``, written before the first result."""
    return RunManifest(factjudge=__version__, inputs=[str(Path(p).resolve()) for p in dataset.sources],
                       config=config.model_dump(mode="json"), judge=judge.identity())


def check_folder(out_dir: Path, manifest: RunManifest) -> None:
    """Refuse a folder whose results came from other inputs, config or judge: resuming there would
    mix two runs' results, and rewriting it would drop the other run's documents. A folder
    factjudge did not write is refused first (:meth:`~factjudge.io.runfolder.RunFolder.claim`)."""
    folder = RunFolder(out_dir)
    folder.claim(manifest.inputs)
    before = folder.manifest()
    if before is None:  # a new folder, or an older version's (documents are matched by their
        return  # hashes), or not a folder (mkdir says so next)
    what = {"inputs": "input files", "config": "config", "judge": "judge"}
    detail = []
    for key in RUN_KEYS:
        old, new = getattr(before, key), getattr(manifest, key)
        if old == new:
            continue
        if isinstance(old, dict) and isinstance(new, dict):
            keys = sorted(k for k in {*old, *new} if old.get(k) != new.get(k))
            detail.append(f"{what[key]} ({', '.join(keys)})")
        else:
            detail.append(f"{what[key]} ({old} -> {new})" if key == "inputs" else what[key])
    if detail:
        raise InputError(f"{out_dir}: holds the results of another run (different {'; '.join(detail)}); "
                         "use --overwrite to replace them, or another output folder")


def open_run(dataset: Dataset, out_dir: Path, *, manifest: RunManifest | None = None,
             overwrite: bool = False) -> tuple[ResultStore, list[DocInfo], frozenset[str]]:
    """Prepare ``out_dir`` for a run: the results store, the documents still to judge and the ids
    of those finished already (reused). A folder factjudge did not write is refused untouched
    (:meth:`~factjudge.io.runfolder.RunFolder.claim`), and so is one another run is writing: the
    folder is locked until ``store.close()`` or the end of the process. With a ``manifest``
    (:func:`run_manifest`) a folder of another run is refused, or emptied with ``overwrite``."""
    if not dataset.infos:
        raise InputError("no documents: call dataset.scan(config, salt) first (or it is empty)")
    RunFolder(out_dir).claim(dataset.sources)
    lock = FolderLock(out_dir).acquire()
    try:  # under the lock: what another run wrote before it is seen
        if manifest is not None and not overwrite:
            check_folder(out_dir, manifest)
        if overwrite:
            (out_dir / RESULTS).unlink(missing_ok=True)
        store = ResultStore(out_dir / RESULTS)
        _remove_stale(out_dir)
        if manifest is not None:
            write_atomic(out_dir / RUN, manifest.to_json())
    except BaseException:
        lock.release()
        raise
    store.lock = lock
    reused = frozenset(i.doc_id for i in dataset.infos if store.reusable(i))
    return store, [i for i in dataset.infos if i.doc_id not in reused], reused


#: Documents embedded in report.html's document view (worst first).
VIEW_DOCUMENTS = 50
#: TP rows listed in the reports for spot checks, at most.
TP_ROWS = 1000
#: Facts of the result lines the pass over the results keeps parsed for the reports (a fact is
#: about 2 KB parsed: some 50 MB at most); the reports read the other lines they show again.
#: Parsing the shown lines a second time was 0.15 s of a 1,000-document run's 1.8 s.
KEEP_FACTS = 25_000


def finish_run(dataset: Dataset, store: ResultStore, config: JudgeConfig, judge: Judge,
               out_dir: Path, settings: ReportSettings, skipped: Sequence[Problem] = (),
               created: str | None = None, run_info: Mapping[str, Any] | None = None,
               passed: FinishPass | None = None, fork: bool = False) -> Summary:
    """Rewrite ``results.jsonl`` in dataset order and build summary.json and the reports from it:
    the final files depend only on the finished lines, never on how they were judged.
    ``passed``: the pass over the lines made already, as the workers' lines were written in
    dataset order (:func:`evaluate_async`, never with ``settings.csv``): the file is not
    rewritten nor read again. ``fork``: report.html is rendered in a child process while this
    one writes the other files (the run may use a second core: ``workers`` > 1).
    ``created`` (ISO time, default now) is the provenance time of the results; ``run_info`` how the
    questions were asked (default: the judge's :class:`~factjudge.judges.base.RunInfo`; a Ray run
    gives what its workers' judges reported)."""
    if passed is None:
        run = FinishPass(dataset, config, judge, settings)
        with contextlib.ExitStack() as stack:
            facts_csv = None
            if settings.csv:
                from ..reports.facts_csv import FactsCsvWriter  # only with --csv
                facts_csv = stack.enter_context(FactsCsvWriter(out_dir / FACTS_CSV))
            for index, line in enumerate(store.rewrite(dataset.infos)):
                run.take(line, index)
                if facts_csv is not None:
                    facts_csv.add(line)
    else:
        run = passed
    agg, source, find, shape, links, warnings = run.agg, run.source, run.find, run.shape, run.links, run.warnings
    summary = agg.summary(settings.resamples, settings.seed)
    info = run_info_of(judge) if run_info is None else run_info
    summary.usage.update({k: v for k, v in info.items() if v is not None})
    if settings.prices is not None:  # from the summed tokens the server reported, reused documents too
        u = summary.usage
        summary.usage.update(settings.prices.usage_fields(
            int(u.get("prompt_tokens", 0)), int(u.get("cached_prompt_tokens", 0)),
            int(u.get("completion_tokens", 0))))
    summary.bootstrap = {"resamples": settings.resamples, "seed": settings.seed, "level": 0.95}
    summary.skipped = [p.to_dict() for p in skipped]
    summary.judge = judge.identity()
    summary.config = config.model_dump(mode="json")
    _flag(summary, config, shape, links.found, [*dataset.warnings, *warnings, *judge_config_warnings(config, judge),
                                   *agg.confidence.warnings()], dataset.fact_types)
    summary.provenance = {"factjudge": __version__, "created": created or _now(),
                          "inputs": dataset.sources}
    if source.summary.documents:
        summary.source = source.summary
    if settings.judge_calibration is not None:
        add_judge_corrected(summary, list(zip(*agg.keys, strict=True)), settings.judge_calibration, settings)
    summary.report_rows = settings.report_rows
    folder = RunFolder(out_dir)  # rewritten above: every line streamed in dataset order
    write_reports(folder, summary, run.order, agg.worst(), omissions=source.omissions, find=find,
                  texts=functools.partial(_view_texts, dataset, settings.documents) if summary.source else None,
                  closest=run.memo, refs=store.index, kept=run.kept.lines,
                  meanwhile=lambda: write_atomic(out_dir / REVIEW_HTML, render_review(summary, run.queue)),
                  fork=fork)
    # last, so its presence means the whole run finished
    write_atomic(out_dir / SUMMARY, json.dumps(summary.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n")
    # the CLI leaves by os._exit: freeing the pass's lines, rows and queue first cost 45 ms of
    # 1,000 documents x 20 facts
    keep(run)
    return summary


class FinishPass:
    """What :func:`finish_run` gathers in its one pass over the finished lines, in dataset order:
    each line is read once, and the review queue and the reports' closest facts come from it."""

    def __init__(self, dataset: Dataset, config: JudgeConfig, judge: Judge, settings: ReportSettings) -> None:
        self.config = config
        self.agg = Aggregator(zero_division=settings.zero_division)
        self.order: list[OrderEntry] = []
        self.texts, self.source, self.find = _source_check(dataset, config, settings.documents)
        unmatched = settings.documents.unmatched(i.doc_id for i in dataset.infos) if settings.documents else None
        self._unmatched = [unmatched] if unmatched else []
        #: Each document's warnings, by the number of documents that gave them (merged once, at the end).
        self._warned: dict[str, int] = {}
        self.shape = InputShape()
        self.links = _LinkCheck(config, judge)
        self.queue = ReviewQueue(found=self.source.omission_keys)
        self.memo = ClosestMemo(keep=settings.report_rows + VIEW_DOCUMENTS)
        self.kept = _KeptLines(KEEP_FACTS)

    @property
    def warnings(self) -> list[str]:
        """The run's warnings from its documents' (:func:`~factjudge.core.scope.merge_warnings`)."""
        return [*self._unmatched, *merge_warnings(self._warned)]

    def take(self, line: dict[str, Any], index: int, near: ClosestMap | None = None) -> None:
        """The line ``index`` of the run, as read from ``results.jsonl``; ``near`` its
        :func:`~factjudge.reports.rows.closest_detail` when it was worked out already."""
        # validated once: the categories, the field tally, the near misses and facts.csv
        # each validated it again (line_analysis takes an Analysis as it is)
        line["analysis"] = line_analysis(line)
        self.add(line, index, near)

    def add(self, line: dict[str, Any], index: int, near: ClosestMap | None = None) -> None:
        self.agg.add(doc_stats(line, self.config.confidence_field))
        doc_id, text = next(self.texts)
        assert doc_id == line["doc_id"], doc_id  # both in dataset order
        self.source.add(doc_id, line.get("predicted_facts", ()), text, self.find,
                        (m.predicted for m in line_analysis(line).near_misses))
        self.shape.add(line.get("gold_facts", ()), line.get("predicted_facts", ()))
        self.links.add(line)
        for warning in line.get("warnings") or ():  # bounded: a message of many documents counts them
            self._warned[warning] = self._warned.get(warning, 0) + 1
        entry = _order_entry(line, index)
        self.order.append(entry)
        if near is None:
            near = closest_detail(line)
        self.queue.add(line, near)
        self.memo.add(line, entry[0], near)
        self.kept.add(line, entry)


class _KeptLines:
    """The worst result lines of the pass (by :func:`worst_order_key`, those with a row to show),
    kept parsed for the reports within ``facts`` facts in all: the reports show the worst
    documents first, and reading them again parsed each a second time."""

    def __init__(self, facts: int) -> None:
        self.facts, self.held = facts, 0
        self.lines: dict[str, dict[str, Any]] = {}
        self._heap: list[tuple[tuple[float, int, int], str, int]] = []  # the best kept first

    def add(self, line: dict[str, Any], entry: OrderEntry) -> None:
        (f1, wrong, index), doc_id, failing, right = entry
        n = len(line.get("gold_facts") or ()) + len(line.get("predicted_facts") or ())
        if not failing + right or n > self.facts:  # no row of it is shown, or too big alone
            return
        heapq.heappush(self._heap, ((-f1, -wrong, -index), doc_id, n))
        self.lines[doc_id] = line
        self.held += n
        while self.held > self.facts:
            _, dropped, size = heapq.heappop(self._heap)
            del self.lines[dropped]
            self.held -= size


def _source_check(dataset: Dataset, config: JudgeConfig, documents: DocumentTexts | None
                  ) -> tuple[Iterator[tuple[str, str | None]], SourceCounts, Callable[[str], Finder]]:
    """The documents' texts in dataset order, the counts of the predictions against them, and
    the value search (the rules judge's normaliser)."""
    from ..judges.rules.locate import finder  # the normaliser (the rules judge's package): at the end only

    source = SourceCounts("documents file" if documents is not None else "inputs")
    return _texts(dataset, documents), source, finder(config.ignore_company_suffixes, config.decimal_separator)


def _view_texts(dataset: Dataset, documents: DocumentTexts | None, doc_ids: set[str]) -> dict[str, str]:
    """The texts of the documents the document view shows (at most 50 held at once)."""
    return {d: t for d, t in _texts(dataset, documents, doc_ids) if t is not None}


def _texts(dataset: Dataset, documents: DocumentTexts | None,
           only: Container[str] | None = None) -> Iterator[tuple[str, str | None]]:
    """(doc_id, text) of the documents (those in ``only``) in dataset order: from the documents
    file when one is given, else as the inputs carry them."""
    if documents is None:
        return dataset.texts(only)
    return ((i.doc_id, documents.text(i.doc_id)) for i in dataset.infos if only is None or i.doc_id in only)


def add_judge_corrected(summary: Summary, keys: Sequence[Sequence[int]], calibration: JudgeCalibration,
                        settings: ReportSettings) -> None:
    """Put the judge-corrected figures in ``summary``, and warn when the calibration was made with
    another judge or config, or does not fit the data (a figure capped at 1)."""
    from ..core.correction import calibration_mismatch, judge_corrected  # only with --judge-calibration

    corrected = judge_corrected(keys, calibration.errors, settings.resamples, settings.seed)
    corrected.calibration = calibration.describe()
    summary.judge_corrected = corrected.model_dump(mode="json")
    if summary.confidence is not None:  # its figures follow the same verdicts: the same correction
        summary.confidence.judge_corrected = confidence_corrected(summary.confidence, corrected.link_precision,
                                                                  corrected.link_recall)
    summary.warnings += calibration_mismatch(calibration, summary.judge, summary.config)
    if corrected.capped:
        summary.warnings.append(
            f"judge-corrected {' and '.join(corrected.capped)} capped at 1: the raw figure times the judge's "
            f"link precision / recall ({corrected.link_precision:.3f} / {corrected.link_recall:.3f}) is above 1, "
            f"so the calibration {calibration.source} does not describe this run's judge errors well "
            "(are its labelled pairs like this run's?)")


class _LinkCheck:
    """After an LLM's run, every final link checked by the rules' comparators: a pair they prove
    different on a hard field is counted (the ``linked_against_proof`` alert, issue #36). The rules
    judge's own links are not checked (it links nothing it proves different)."""

    def __init__(self, config: JudgeConfig, judge: Judge) -> None:
        self.config, self.found = config, ProofLinks()
        self.on = asks_server(judge)

    def add(self, line: Mapping[str, Any]) -> None:
        if not self.on:
            return
        from ..judges.rules.proof import count_link_proofs  # the normaliser: with an LLM's run only

        count_link_proofs(self.found, list(line.get("gold_facts", ())), list(line.get("predicted_facts", ())),
                          self.config)


def asks_server(judge: Judge) -> bool:
    """Whether ``judge`` asks a server (an LLM, a jury of them, the hybrid judge): every judge but
    the rules judge."""
    return judge.identity().get("name") != "rules"


def _flag(summary: Summary, config: JudgeConfig, shape: InputShape, proof_links: ProofLinks,
          warnings: list[str], fact_types: set[str]) -> None:
    """The run's warnings and alerts (the banners of the reports): scope first, then the inputs'
    likely mistakes, then the dataset's and the documents' own."""
    micro = summary.micro
    summary.alerts = run_alerts(config, shape, micro, micro.out_of_scope_gold + micro.out_of_scope_predicted,
                                proof_links)
    summary.warnings = [*scope_check(config, fact_types, "the dataset"), *input_warnings(shape), *warnings]


def _now() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


#: A document's place in the reports: its worst-first sort key, its doc_id, its FN+FP+ERROR and
#: TP facts.
OrderEntry = tuple[tuple[float, int, int], str, int, int]


def _order_entry(line: Mapping[str, Any], index: int) -> OrderEntry:
    m = line["metrics"]
    return (worst_order_key(m, index), line["doc_id"], m["fn"] + m["fp"] + m["errors"],
            m["tp_gold"] + m["tp_predicted"])


def write_reports(folder: RunFolder, summary: Summary, order: Sequence[OrderEntry],
                  worst: Sequence[Mapping[str, Any]], *,
                  omissions: Sequence[tuple[str, Mapping[str, Any]]] = (),
                  texts: Callable[[set[str]], Mapping[str, str]] | None = None,
                  find: Callable[[str], Finder] | None = None,
                  closest: Callable[[Mapping[str, Any]], ClosestMap] = closest_detail,
                  refs: Mapping[str, LineRef] | None = None,
                  kept: Mapping[str, dict[str, Any]] | None = None,
                  meanwhile: Callable[[], None] = lambda: None, fork: bool = False) -> None:
    """report.md and report.html of the finished run in ``folder`` (its ``results.jsonl`` in
    dataset order), ``order`` one :data:`OrderEntry` per line, ``worst`` the worst documents
    (:meth:`~factjudge.core.aggregate.Aggregator.worst`), ``summary.report_rows`` rows listed.
    ``omissions``: the possible gold omissions listed; ``texts(doc_ids)`` the texts of the
    documents the document view shows, ``find`` the value search (None: no text shown);
    ``closest``: the closest-fact search, or a :class:`~factjudge.reports.rows.ClosestMemo` of it;
    ``refs``: where each document's line is in ``results.jsonl`` (the store's index after its
    rewrite), so only the lines shown are read again; ``kept``: lines parsed already, by doc_id,
    not read again. ``meanwhile``: more to write while report.html is, which ``fork`` renders in
    a child process (:func:`~factjudge.util.forked.beside`)."""
    # the pages' modules (~5 ms to import): at the end only, or in _ready_to_finish while it waits
    from ..reports import html as html_page
    from ..reports import markdown as markdown_page

    report_rows = summary.report_rows
    lines = _report_lines(folder, sorted(order), report_rows, refs, kept or {})
    rows = select_rows(lines, report_rows, tp_limit=min(report_rows, TP_ROWS), closest=closest)
    wrong = [line for line in lines if line["metrics"]["fn"] + line["metrics"]["fp"]
             + line["metrics"]["errors"]][:VIEW_DOCUMENTS]
    rows_total = summary.micro.fn + summary.micro.fp + summary.micro.errors
    shown = texts({line["doc_id"] for line in wrong}) if texts is not None else None

    def html() -> None:
        write_atomic(folder.path / REPORT_HTML,
                     html_page.render_html(summary, worst, rows, rows_total, rows_order="worst", documents=wrong,
                                           texts=shown, find=find, omissions=omissions, closest=closest))

    with beside(html, fork):  # report.html, the costliest page (0.2 s of 1,000 documents), on a core of its own
        write_atomic(folder.path / REPORT_MD, markdown_page.render_markdown(summary, worst, rows, rows_total,
                                                                           rows_order="worst", omissions=omissions))
        meanwhile()


def rewrite_reports(folder: RunFolder, summary: Summary) -> None:
    """report.md and report.html of a finished run written again from its folder (``review
    apply``: the summary gained the reviewed figures), as :func:`finish_run` wrote them."""
    agg = Aggregator()
    order: list[OrderEntry] = []
    for index, line in enumerate(folder.lines(finished=True)):
        agg.add(doc_stats(line))
        order.append(_order_entry(line, index))
    write_reports(folder, summary, order, agg.worst())


def _report_lines(folder: RunFolder, order: list[OrderEntry], rows: int,
                  refs: Mapping[str, LineRef] | None = None,
                  kept: Mapping[str, dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The result lines the reports show, worst document first: enough for ``rows`` failing
    rows and the TP spot checks, and the documents of the document view. With ``refs`` only
    those lines are read (parsing every line again was 7% of a 1,000-document run)."""
    wanted: set[str] = set()
    failing = tp = view = 0
    for _, doc_id, wrong, right in order:
        take = (failing < rows and wrong) or (tp < min(rows, TP_ROWS) and right) or (
            view < VIEW_DOCUMENTS and wrong)
        if take:
            wanted.add(doc_id)
            failing, tp, view = failing + wrong, tp + right, view + bool(wrong)
        elif failing >= rows and tp >= min(rows, TP_ROWS) and view >= VIEW_DOCUMENTS:
            break
    if refs is not None:
        kept = kept or {}
        with folder.results.open("rb") as fh:
            return [kept[doc_id] if doc_id in kept else folder.line_at(fh, refs[doc_id])
                    for _, doc_id, _, _ in order if doc_id in wanted]
    found = {line["doc_id"]: line for line in folder.lines(finished=True) if line["doc_id"] in wanted}
    return [found[doc_id] for _, doc_id, _, _ in order if doc_id in found]


async def evaluate_async(
    dataset: Dataset,
    config: JudgeConfig,
    judge: Judge,
    out_dir: Path,
    *,
    concurrency: int = 8,
    settings: ReportSettings = ReportSettings(),
    skipped: Sequence[Problem] = (),
    progress: RunProgress | None = None,
    overwrite: bool = False,
    workers: int | None = 1,
) -> EvalRun:
    """Judge a ``dataset`` scanned with ``input_salt(config, judge)`` into ``out_dir``
    (results.jsonl, summary.json, reports); ``workers`` > 1 judges the documents in that many
    processes (the rules judge only: :func:`~factjudge.evaluation.workers.check_workers`), None
    as many as it pays (:func:`~factjudge.evaluation.workers.auto_workers`).

    ``progress`` hears of the run's start, every question and every finished document. A folder
    holding another run's results (other inputs, config or judge) is refused unless
    ``overwrite``; one that another run is writing is refused."""
    if workers is not None and workers != 1:
        from .workers import check_workers

        check_workers(workers, judge)
    store, todo, reused = open_run(dataset, out_dir, manifest=run_manifest(dataset, config, judge),
                                   overwrite=overwrite)
    try:
        if progress:
            progress.on_start(len(todo), len(reused), sum(i.questions for i in todo))
        if workers is None:
            from .workers import auto_workers

            workers = auto_workers(judge, len(todo))
        # a new file, every document judged: the finishing pass reads each line as it comes, in
        # dataset order, while the next are judged (instead of reading the file again at the end)
        fresh = not reused and not store.index and not settings.csv
        passing = _Passing(dataset, config, judge, settings, store) if fresh else None
        with store.path.open("ab") as fh:
            if workers > 1 and todo:
                await _judge_in_processes(dataset, todo, reused, config, judge, workers, store, fh, progress,
                                          passing)
            else:
                # a judge asking a server leaves this process idle while it waits for answers: the
                # end is made ready then (an LLM run's 200 documents: ~0.1 s of its ~0.35 s end)
                await _judge_here(dataset, todo, reused, config, judge, concurrency, store, fh, progress, passing,
                                  _ready_to_finish(len(dataset.infos), numpy_from=1) if asks_server(judge) else None)
        passed = passing.done(todo) if passing is not None and todo else None
        created = store.created if not todo else None  # nothing new: the results keep their time
        # report.html beside the other files: on the workers' cores, or on the one an LLM run's
        # server left idle
        summary = finish_run(dataset, store, config, judge, out_dir, settings, skipped, created, passed=passed,
                             fork=workers > 1 or (asks_server(judge) and second_core()))
    finally:
        store.close()
    return EvalRun(summary, judged=len(todo), reused=len(reused))


class _Passing:
    """The finishing pass (:class:`FinishPass`, made at the first line: an LLM run's first questions
    need not wait for the normaliser it loads) fed the lines of a new file as they are judged, in
    dataset order: a line that comes early waits for those before it (one process judges a window
    of documents at once, whichever finishes first)."""

    def __init__(self, dataset: Dataset, config: JudgeConfig, judge: Judge, settings: ReportSettings,
                 store: ResultStore) -> None:
        self.make = functools.partial(FinishPass, dataset, config, judge, settings)
        self.store = store
        # the lines' closest facts searched with the judge's config, as a worker's are: the rules
        # judge keeps a long list's alignment by the config's identity (10 invoices of 400 items,
        # every price wrong: each list aligned twice, not three times)
        read_config_as(store.folder.run_config(), config)
        self.run: FinishPass | None = None
        self.waiting: dict[int, tuple[bytes, ClosestIds | None]] = {}
        self.next = 0
        self.in_order = True

    def add(self, index: int, data: bytes, closest: ClosestIds | None = None) -> None:
        """The line of the ``index``-th document judged (in dataset order), with the closest facts
        its worker found."""
        if self.run is None:
            self.run = self.make()
        self.in_order = self.in_order and index == self.next
        self.waiting[index] = (data, closest)
        while self.next in self.waiting:
            data, closest = self.waiting.pop(self.next)
            line = self.store.folder.with_config(parse_written(data))
            self.run.take(line, self.next, None if closest is None else closest_of_ids(line, closest))
            self.next += 1

    def done(self, todo: Sequence[DocInfo]) -> FinishPass:
        """The pass over every line, the file put in dataset order (without reading its lines
        again) when they were written in another."""
        assert self.run is not None and self.next == len(todo) and not self.waiting
        if not self.in_order:
            self.store.put_in_order(todo)
        return self.run


async def _judge_here(dataset: Dataset, todo: Sequence[DocInfo], reused: frozenset[str], config: JudgeConfig,
                      judge: Judge, concurrency: int, store: ResultStore, fh: IO[bytes],
                      progress: RunProgress | None, passing: _Passing | None,
                      meanwhile: Iterator[object] | None = None) -> None:
    """The documents still to judge, judged in this process, ``concurrency`` questions at a time,
    their lines appended to ``store`` as they finish (and read by ``passing``, when given).
    ``meanwhile``: steps taken one at a time whenever the loop is idle (:func:`when_idle`),
    those left when the last document is done dropped."""
    hashes = {i.doc_id: i.input_sha256 for i in todo}
    drawn: dict[str, int] = {}  # the documents being judged: their place in the dataset

    def finished(doc: Document, result: JudgeResult) -> None:
        data = result_line(doc.doc_id, hashes[doc.doc_id], result)
        store.append_line(fh, doc.doc_id, hashes[doc.doc_id], data, result.metrics.errors)
        if passing is not None:
            passing.add(drawn.pop(doc.doc_id), data)
        if progress:
            progress.on_document(doc.doc_id)

    def placed(documents: Iterator[Document]) -> Iterator[Document]:
        for index, doc in enumerate(documents):
            drawn[doc.doc_id] = index
            yield doc

    documents = as_scanned(dataset.documents(skip=reused), todo, input_salt(config, judge), dataset.sources)
    idle = asyncio.ensure_future(when_idle(meanwhile)) if meanwhile is not None and todo else None
    try:
        await judge_documents(placed(documents), config, judge, finished, concurrency=concurrency, progress=progress)
    finally:
        if idle is not None:  # a step that failed fails again at the end, where it belongs
            idle.cancel()
            await asyncio.gather(idle, return_exceptions=True)


async def _judge_in_processes(dataset: Dataset, todo: Sequence[DocInfo], reused: frozenset[str],
                              config: JudgeConfig, judge: Judge, workers: int, store: ResultStore,
                              fh: IO[bytes], progress: RunProgress | None, passing: _Passing | None) -> None:
    """The documents still to judge, judged in ``workers`` processes (:mod:`.workers`), their
    lines appended to ``store`` in dataset order (and read by ``passing``, when given)."""
    from .workers import Line, judge_in_processes  # multiprocessing: only for --workers

    questions = {i.doc_id: i.questions for i in todo}
    written = iter(range(len(todo)))

    def finished(line: Line) -> None:
        store.append_line(fh, line.doc_id, line.input_sha256, line.data, line.errors)
        if passing is not None:
            passing.add(next(written), line.data, line.closest)
        if progress:  # no verdict crosses from a worker: its answers are counted a document at a time
            progress.on_answers(questions[line.doc_id], 0, line.errors)
            progress.on_document(line.doc_id)

    # each document's place in the dataset: the workers have those the scan held (forked after
    # it) and read the others themselves
    pairs = ((position, info.input_sha256) for position, info in enumerate(dataset.infos)
             if info.doc_id not in reused)
    await judge_in_processes(pairs, dataset, config, judge, input_salt(config, judge), workers, finished,
                             closest=passing is not None,
                             meanwhile=_ready_to_finish(len(dataset.infos)))


def _ready_to_finish(documents: int, numpy_from: int = NUMPY_FROM) -> Iterator[object]:
    """What the end of a run would load or build first (numpy and numpy.random for the bootstrap,
    from ``numpy_from`` documents, the pages' modules, the summary's validators and the pages'
    templates), a step at a time while this process waits for the workers or for an LLM's
    answers: the end is this process's alone (~0.1 s of 1,000 documents' ~0.45 s after the last
    one)."""
    prepare_bootstrap(documents, numpy_from)
    yield "numpy"
    if "numpy" in sys.modules:  # the bootstrap draws with numpy.random, which numpy loads on first use (~15 ms)
        importlib.import_module("numpy.random")
    yield "numpy.random"
    from ..reports.html import compile_templates  # the pages' modules: loaded here, not at the run's start

    yield "reports.html"
    from ..reports import markdown  # noqa: F401  (write_reports's)

    yield "reports.markdown"
    # the summary's models, whose validators are built on first use (models/base.py): at the end
    # (~10 ms) unless here
    for model in (Summary, Macro, MicroCounts, CategoryCounts, FieldScore):
        model.model_rebuild()
        yield model.__name__
    yield from compile_templates()


def as_scanned(documents: Iterable[Document], todo: Sequence[DocInfo], salt: str,
               sources: Sequence[str]) -> Iterator[Document]:
    """``documents`` (read again for judging) as the scan saw them, or a one-line InputError: an
    input rewritten during the run was judged on its new content under the scan's hash (same
    byte lengths), or gave a doc_id the run never scanned (a KeyError traceback). The lines of
    the documents judged before stay in results.jsonl, each with its own content's hash; no
    summary is written, so nothing passes for a finished run. Hashing a document again costs
    0.27 ms at 20 facts a side (measured over 2,000 such documents), some 3% of the rules
    judge's 8 ms a document and nothing beside an LLM call."""
    for doc, info in in_scan_order(documents, todo, sources):
        if not isinstance(doc, HeldDocument) and doc_hash(salt, doc) != info.input_sha256:
            raise _changed(sources, f"document {info.doc_id!r} is not what the scan read")
        yield doc


def in_scan_order(documents: Iterable[Document], todo: Sequence[DocInfo],
                  sources: Sequence[str]) -> Iterator[tuple[Document, DocInfo]]:
    """``documents`` each with its scan (``todo``, in the same order), or a one-line InputError
    when they are not the documents the scan read (their ids; :func:`as_scanned` checks their
    hashes too)."""
    read = iter(documents)
    for info in todo:
        try:
            doc = next(read, None)
        except InputError as exc:  # the scan found every line valid: the file changed
            raise _changed(sources, f"{exc}") from None
        if doc is None or doc.doc_id != info.doc_id:
            raise _changed(sources, f"document {info.doc_id!r} is not what the scan read")
        yield doc, info


def _changed(sources: Sequence[str], detail: str) -> InputError:
    return InputError(f"{' / '.join(sources)}: changed while eval ran ({detail}); the documents "
                      "judged before are kept: run the same command again")


def evaluate_dataset(
    dataset: str | Path | tuple[str | Path, str | Path],
    config: JudgeConfig | Mapping[str, Any] | str | Path | None = None,
    judge: Judge | None = None,
    out_dir: str | Path | None = None,
    *,
    concurrency: int = 8,
    skip_invalid: bool = False,
    overwrite: bool = False,
    settings: ReportSettings = ReportSettings(),
    input_format: str | None = None,
    workers: int | None = 1,
) -> EvalRun:
    """Evaluate a dataset in one call, as ``factjudge eval`` does: ``dataset`` is a ``.jsonl`` of
    documents or a ``(gold, predicted)`` pair of fact files with ``doc_id`` (read in the format
    named by ``input_format``, a name of :data:`factjudge.io.formats.FORMATS`, else by suffix); ``config`` a
    :class:`JudgeConfig`, a mapping or a config file; ``judge`` defaults to the rules judge and is
    closed at the end. With ``out_dir`` the folder is written (and resumed) like the CLI's;
    without, the result lines come back in ``EvalRun.results``. ``workers``: processes judging
    the documents (the rules judge only; None: one per core from 100 documents, as the CLI's
    default ``--workers auto``). Bad lines raise
    :class:`InputError` (the first one named) unless ``skip_invalid``."""
    from ..judges.rules.judge import RulesJudge  # the default judge, loaded only when it is used

    cfg = load_config(config) if isinstance(config, (str, Path)) else parse_config(config)
    the_judge: Judge = judge if judge is not None else RulesJudge()
    data = open_dataset(dataset, input_format=input_format)
    problems = data.scan(cfg, input_salt(cfg, the_judge))
    if problems and not skip_invalid:
        raise InputError(f"{problems[0].message} ({len(problems)} bad line(s); skip_invalid=True "
                         "scores the rest)")
    if not data.infos:
        raise InputError(f"{dataset}: no documents to judge")

    async def run(folder: Path) -> EvalRun:
        async with the_judge:
            return await evaluate_async(data, cfg, the_judge, folder, concurrency=concurrency,
                                        settings=settings, skipped=problems, overwrite=overwrite,
                                        workers=workers)

    if out_dir is not None:
        outcome = run_sync(lambda: run(Path(out_dir)))
    else:
        with tempfile.TemporaryDirectory(prefix="factjudge-eval-") as tmp:
            outcome = run_sync(lambda: run(Path(tmp)))
            outcome.results = list(RunFolder(tmp).lines(finished=True))
    warn_user([*outcome.summary.warnings, *(a.message for a in outcome.summary.alerts)])
    return outcome


def input_salt(config: JudgeConfig, judge: Judge) -> str:
    """Everything besides the facts that decides a document's result, for its input hash."""
    return canonical_json({"factjudge": __version__, "prompt_format": PROMPT_FORMAT_VERSION,
                           "config": config.model_dump(mode="json"), "judge": judge.identity()})
