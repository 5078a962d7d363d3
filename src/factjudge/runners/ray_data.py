"""Evaluate a dataset on Ray (the ``ray`` extra): documents are judged by Ray workers with Ray Data
``map_batches``, while the driver keeps everything that makes a run a factjudge run.

The flow of :func:`evaluate_ray`:

1. The driver scans the documents (a :class:`RayDataset` over a ``ray.data.Dataset`` scans its
   rows in dataset order, with the same checks as a ``.jsonl`` dataset) and opens the output
   folder with :func:`~factjudge.evaluation.runner.open_run`: documents already finished in
   ``results.jsonl`` are reused exactly as in a live run.
2. The documents still to judge go through ``map_batches`` over a fixed pool of Ray actors. Each
   worker builds its own judge inside its process from ``judge_factory(config)`` (a judge holds
   sockets and cannot be pickled; the factory, e.g. a bound ``JudgeOptions.build``, can), checks
   that it is the driver's judge (same ``identity()``) and judges its batches with
   :func:`~factjudge.evaluation.runner.judge_documents`: its own pool of ``concurrency`` calls, so at most
   ``workers * concurrency`` questions are in flight in all. After each batch the judge is closed
   (``aclose``: its answers are committed to the response cache before the batch's documents
   count as finished; it reconnects for the next one).
3. Each returned per-document result is appended to ``results.jsonl`` by the driver, through the
   same :class:`~factjudge.io.runfolder.ResultStore`, as soon as its batch comes back (a killed run
   keeps every finished batch), after checking its input hash against the scan. An error that
   stops a run (a server refusing the judge...) comes back as a row and is raised again here.
4. :func:`~factjudge.evaluation.runner.finish_run` rewrites ``results.jsonl`` in dataset order and builds
   ``summary.json`` and the reports from the per-document lines, as in a single-process run: the
   files are the same whichever way the documents were judged (but for the ``usage`` seconds).

**Response cache.** Every worker opens the judge's response cache itself (the SQLite file of
``--cache-dir`` or the default cache directory). SQLite in WAL mode is safe for several processes
on one machine, so the workers of one machine share their answers. Across machines the cache
directory must be shared storage, or each node has its own: WAL needs file locks and shared memory
that network file systems (NFS, SMB...) do not give reliably, so in practice each node keeps a
cache of its own at the same local path (``--cache-dir``), and a question answered on one node is
asked again on another (the driver's results are the same either way).

**Documents of a ``ray.data.Dataset``** (read by the input format ``ray``,
:mod:`factjudge.io.formats.ray_rows`). Rows ``{"doc_id", "gold_facts", "predicted_facts"}``; a
facts column holds a list of facts or the JSON text of one. Ray Data stores lists of objects as
Arrow structs when it can, which gives every fact the fields of all facts near it (missing ones as
null) in one field order: factjudge drops null fields of such columns, so a field that is null on
purpose is lost and fields may change order. Keep facts as JSON text (``json.dumps``) to judge
them exactly as written.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import errors
from ..core.scope import scope_check
from ..errors import FactJudgeError, InputError, JudgeSetupError, missing_dependency
from ..evaluation.runner import EvalRun, ReportSettings, finish_run, input_salt, judge_documents, open_run, run_manifest
from ..io.config import parse_config
from ..io.datasets import Dataset, DocInfo, Document, Problem
from ..io.formats.ray_rows import RayDataset, row_doc_id, row_document, table_rows
from ..io.scan import doc_hash
from ..judges.base import Judge, run_info_of
from ..judges.factory import JudgeSpec, build_judge
from ..models import JudgeConfig, JudgeResult

if TYPE_CHECKING:  # pragma: no cover
    import ray.data

#: Builds a judge from the config, inside each Ray worker (and once on the driver).
JudgeFactory = Callable[[JudgeConfig], Judge]
#: What a worker builds its judge from: a spec (built with :func:`build_judge`) or a factory.
JudgeSource = JudgeSpec | JudgeFactory

#: Documents per batch sent to a worker, per call of its pool: enough to keep the pool busy.
DOCS_PER_CALL = 4
#: Documents of the local dataset put into the object store at a time (bounded driver memory).
CHUNK_BYTES = 32 * 2**20

__all__ = ["RayDataset", "RayHooks", "RayInput", "RayPool", "WorkerEnv", "evaluate_ray", "import_ray",
           "init_ray", "quiet_ray"]


@dataclass(frozen=True)
class RayPool:
    """How the documents are spread: ``workers`` actors (default: the cluster's CPUs divided by
    ``num_cpus``, the CPUs each reserves) each run ``concurrency`` calls at once over batches of
    ``batch_size`` documents (default ``4 * concurrency``)."""

    concurrency: int = 8
    workers: int | None = None
    num_cpus: float = 1.0
    batch_size: int | None = None


@dataclass(frozen=True)
class RayInput:
    """How the documents are taken: ``name`` names a ``ray.data.Dataset`` in problems and
    provenance; its bad rows raise :class:`InputError`, or are left out and listed in the
    summary with ``skip_invalid``. ``skipped``: the problems a factjudge dataset's scan found."""

    name: str = "ray dataset"
    skip_invalid: bool = False
    skipped: Sequence[Problem] = ()


@dataclass(frozen=True)
class RayHooks:
    """``on_start(documents to judge, reused, questions)`` is called once, ``on_result(info,
    result)`` as each document is written."""

    on_start: Callable[[int, int, int], None] | None = None
    on_result: Callable[[DocInfo, JudgeResult], None] | None = None


# --------------------------------------------------------------------------- Ray itself


class WorkerEnv:
    """Environment variables for the workers of a cluster started elsewhere (the API key, a base
    URL that may hold a password), set in each worker's process before it builds its judge.

    They travel pickled with the workers' constructor arguments (Ray's own messages and object
    store), never as the job's ``runtime_env``: Ray writes a runtime_env onto the command line of
    every worker it starts (``ps`` shows it to every local user) and into the session's
    ``runtime_env_agent.log``, which every local user can read. The repr names the variables only,
    for Ray's plans, errors and logs that show the arguments."""

    def __init__(self, values: Mapping[str, str]) -> None:
        self._values = dict(values)

    def __repr__(self) -> str:
        return f"WorkerEnv({', '.join(sorted(self._values))}: values hidden)"

    def __bool__(self) -> bool:
        return bool(self._values)

    def apply(self) -> None:
        """Set the variables in this process (a worker's own memory: not on its command line)."""
        os.environ.update(self._values)



def import_ray() -> Any:
    """``ray`` with Ray Data, or an :class:`~factjudge.errors.OptionalDependencyError` (an
    ImportError, and a one-line InputError for the CLI) naming the extra to install."""
    try:
        import ray
        import ray.data
    except ImportError as exc:
        raise missing_dependency("Ray is needed to judge on Ray: pip install 'factjudge[ray]'", exc, "ray") from None
    return ray


def quiet_ray() -> None:
    """Keep Ray's own messages off the console: Ray Data logs execution plans and progress at
    INFO on stderr; its log files in the Ray session folder keep everything."""
    import ray.data  # configures the "ray.data" logger

    ray.data.DataContext.get_current().enable_progress_bars = False
    for handler in logging.getLogger("ray.data").handlers:
        if not isinstance(handler, logging.FileHandler) and "File" not in type(handler).__name__:
            handler.setLevel(logging.ERROR)


def init_ray(address: str | None = None, *, num_cpus: int | None = None, quiet: bool = True) -> Any:
    """Start or join Ray: no ``address``, a local Ray of this machine (or the cluster named by
    ``RAY_ADDRESS``, as ``ray.init`` does); ``"auto"`` the cluster running on this machine;
    ``"ray://host:10001"`` a remote cluster through Ray Client; ``"host:6379"`` a cluster's
    GCS (the workers' environment is :func:`evaluate_ray`'s ``worker_env``). ``quiet``: worker
    output stays in the Ray session's log files (``log_to_driver=False``) and Ray's Python loggers
    print only errors here (its C++ core still writes a few lines to file descriptor 2: the CLI
    sends those to a log file). Does nothing when Ray is up already."""
    ray = import_ray()
    if ray.is_initialized():
        return ray
    kwargs: dict[str, Any] = {"address": address}
    if num_cpus is not None:
        kwargs["num_cpus"] = num_cpus
    if address is None and not os.environ.get("RAY_ADDRESS"):
        kwargs["include_dashboard"] = False  # a local Ray for one run needs no dashboard
    if quiet:
        kwargs.update(log_to_driver=False, logging_level=logging.ERROR, configure_logging=True)
    try:
        ray.init(**kwargs)
    except ConnectionError as exc:
        where = address or os.environ.get("RAY_ADDRESS")
        raise InputError(f"cannot reach the Ray cluster at {where}: {' '.join(str(exc).split())} (is "
                         "it running? a cluster with token authentication also needs "
                         "RAY_AUTH_MODE=token and its token)") from None
    if quiet:
        quiet_ray()
    return ray


# --------------------------------------------------------------------------- rows and documents


def _chunks(documents: Iterator[Document]) -> Iterator[list[dict[str, str]]]:
    """Rows of documents as JSON text (facts exactly as validated, never through Arrow structs),
    about :data:`CHUNK_BYTES` at a time."""
    chunk: list[dict[str, str]] = []
    size = 0
    for doc in documents:
        row = {"doc_id": doc.doc_id,
               "gold_facts": json.dumps(doc.gold, ensure_ascii=False),
               "predicted_facts": json.dumps(doc.predicted, ensure_ascii=False)}
        chunk.append(row)
        size += len(row["gold_facts"]) + len(row["predicted_facts"])
        if size >= CHUNK_BYTES:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


def _to_ray(ray: Any, dataset: Dataset, skip: frozenset[str]) -> Any:
    """The documents of a local dataset that are still to judge, put into Ray's object store (so
    workers of any node can read them)."""
    parts = [ray.data.from_items(chunk) for chunk in _chunks(dataset.documents(skip=skip))]
    return parts[0].union(*parts[1:]) if len(parts) > 1 else parts[0]


# --------------------------------------------------------------------------- the workers


#: The columns a worker returns per document; ``error`` is set on a row that stands for a failure.
RESULT_COLUMNS = ("doc_id", "input_sha256", "result", "error")


def _as_factjudge_error(exc: BaseException) -> FactJudgeError:
    """What a worker sends back for an error that stops the run (as the CLI would word it)."""
    if isinstance(exc, FactJudgeError):
        return exc
    if isinstance(exc, sqlite3.Error):
        return JudgeSetupError(f"response cache on a Ray worker: {exc} (try --cache-dir DIR on shared "
                               "storage, or --no-cache)")
    filename = getattr(exc, "filename", None)
    where = f"{filename}: " if filename else ""
    return JudgeSetupError(f"on a Ray worker: {where}cannot read or write: "
                           f"{getattr(exc, 'strerror', None) or exc}")


def _error_from_row(text: str) -> FactJudgeError:
    name, *args = json.loads(text)
    cls = getattr(errors, name, None)
    if not (isinstance(cls, type) and issubclass(cls, FactJudgeError)):
        cls = FactJudgeError
    return cls(*args)


def _build_on_worker(source: JudgeSource, config: JudgeConfig) -> Judge:
    if not isinstance(source, JudgeSpec):
        return source(config)
    try:
        return build_judge(source, config)
    except FactJudgeError as exc:  # the driver built it: what differs is the worker's environment
        raise JudgeSetupError(f"a Ray worker cannot build the judge: {exc}") from None


class _JudgeWorker:
    """One Ray actor: its own judge, event loop and pool of ``concurrency`` calls."""

    def __init__(self, judge_factory: JudgeSource, config: JudgeConfig, salt: str,
                 identity: dict[str, Any], wanted: dict[str, str] | None, concurrency: int,
                 env: WorkerEnv | None = None) -> None:
        #: doc_id -> input hash of the rows to judge; None: every row (the driver checks hashes)
        self.wanted = wanted
        self.salt, self.concurrency = salt, concurrency
        self.loop = asyncio.new_event_loop()
        self.judge: Judge | None = None
        #: A factjudge error is sent back as a row, not raised: Ray would wrap it in exceptions of
        #: its own that lose it (the driver raises it again, for the CLI's one line).
        self.error: FactJudgeError | None = None
        if env is not None:
            env.apply()  # before the judge reads its key and base URL
        try:
            self.config = config  # parsed once, by the driver (a pydantic model pickles as itself)
            self.judge = _build_on_worker(judge_factory, self.config)
            mine = self.judge.identity()
            if mine != identity:
                raise JudgeSetupError(
                    f"the judge built on a Ray worker is not the driver's: {json.dumps(mine)} on "
                    f"the worker, {json.dumps(identity)} on the driver (give the workers the same "
                    "environment, e.g. OPENAI_BASE_URL)")
        except (FactJudgeError, sqlite3.Error, OSError) as exc:
            self.error = _as_factjudge_error(exc)

    def __call__(self, batch: Any) -> Any:
        import pyarrow as pa

        out: dict[str, list[str]] = {k: [] for k in RESULT_COLUMNS}
        try:
            if self.error is not None:
                raise self.error
            self._judge(table_rows(batch), out)
        except (FactJudgeError, sqlite3.Error, OSError) as exc:
            exc = _as_factjudge_error(exc)
            out = {k: [""] for k in RESULT_COLUMNS}
            out["error"] = [json.dumps([type(exc).__name__, *map(str, exc.args)])]
        return pa.table({k: pa.array(v, pa.string()) for k, v in out.items()})

    def _judge(self, rows: list[dict[str, Any]], out: dict[str, list[str]]) -> None:
        assert self.judge is not None
        docs: list[Document] = []
        hashes: dict[str, str] = {}
        for row in rows:
            try:
                doc_id = row_doc_id(row, "row", self.config.columns)
                want = self.wanted.get(doc_id) if self.wanted is not None else ""
                if want is None:
                    continue  # reused, or invalid and skipped
                doc = row_document(row, "row", self.config.columns)
            except InputError:
                if self.wanted is None:
                    raise  # rows made by the driver from checked documents: cannot happen
                continue  # reported by the driver's scan, and not wanted
            sha = doc_hash(self.salt, doc)
            if (want and sha != want) or doc.doc_id in hashes:
                continue  # a second row of the same doc_id (the scan skipped it)
            hashes[doc.doc_id] = sha
            docs.append(doc)

        def finished(doc: Document, result: JudgeResult) -> None:
            out["doc_id"].append(doc.doc_id)
            out["input_sha256"].append(hashes[doc.doc_id])
            out["result"].append(result.model_dump_json())
            out["error"].append("")

        try:
            self.loop.run_until_complete(judge_documents(docs, self.config, self.judge, finished,
                                                         concurrency=self.concurrency))
        finally:
            # Answers are on disk before their documents count as finished (the response cache
            # commits in batches, and Ray ends an actor without running its exit handlers); the
            # judge opens new connections for the next batch.
            self.loop.run_until_complete(self.judge.aclose())

    def __del__(self) -> None:
        try:
            self.loop.close()  # the judge was closed after each batch
        except Exception:  # noqa: BLE001  (an actor being torn down: nothing left to tell)
            pass


# --------------------------------------------------------------------------- the run


def evaluate_ray(
    documents: ray.data.Dataset | Dataset,
    config: JudgeConfig | Mapping[str, Any] | None,
    judge_factory: JudgeSource,
    out_dir: str | Path,
    *,
    judge: Judge | None = None,
    pool: RayPool = RayPool(),
    settings: ReportSettings = ReportSettings(),
    source: RayInput = RayInput(),
    overwrite: bool = False,
    hooks: RayHooks = RayHooks(),
    worker_env: Mapping[str, str] | WorkerEnv | None = None,
) -> EvalRun:
    """Judge ``documents`` on Ray workers into ``out_dir`` (results.jsonl, summary.json, reports):
    the same files as :func:`~factjudge.evaluation.runner.evaluate_async` (``usage`` seconds aside).

    ``documents``: a ``ray.data.Dataset`` of rows ``{"doc_id", "gold_facts", "predicted_facts"}``
    (scanned here, so read twice; see :class:`RayInput`), or a factjudge dataset scanned already
    (``JsonlDataset``...; pass its problems as ``source.skipped``), whose documents still to judge
    are put into Ray's object store. ``judge_factory`` is what each worker builds its judge from,
    in its own process: a :class:`~factjudge.judges.factory.JudgeSpec` (built with
    :func:`~factjudge.judges.factory.build_judge`; the API key is read from the worker's
    environment) or a picklable ``factory(config)``; it must build the same judge everywhere.
    ``judge`` is the driver's (built from ``judge_factory`` when not given; it makes no call).
    ``pool`` says how the work is spread (:class:`RayPool`), ``hooks`` what is told as it goes.
    ``worker_env``: environment variables set in each worker's process before it builds its judge
    (the API key of a cluster started elsewhere, whose workers do not have this environment): they
    reach the workers on no command line and in no Ray log (see :class:`WorkerEnv`).
    Ray must be initialised (see :func:`init_ray`), or Ray Data starts a local Ray. A folder
    holding another run's results is refused unless ``overwrite``, as by ``evaluate_async``."""
    ray = import_ray()
    if pool.concurrency < 1:
        raise InputError("concurrency must be at least 1")
    cfg = parse_config(config)
    out_dir = Path(out_dir)
    if isinstance(judge_factory, JudgeSpec):  # a relative cache folder means this process's
        judge_factory = judge_factory.for_another_process()
    driver = judge if judge is not None else _build_on_driver(judge_factory, cfg)
    try:
        salt = input_salt(cfg, driver)
        data, skipped = _scanned(ray, documents, cfg, salt, source)
        # a folder of another run's results is refused (or emptied with overwrite), as live
        store, todo, reused = open_run(data, out_dir, manifest=run_manifest(data, cfg, driver),
                                       overwrite=overwrite)
        with contextlib.closing(store):  # the folder's lock goes with the run, failed or not, as live
            if hooks.on_start:
                hooks.on_start(len(todo), len(reused), sum(i.questions for i in todo))
            # how the workers' judges asked (the structured-output mode they settled on), as they reported it
            reported = run_info_of(driver)
            if todo:
                job = _RayJob(cfg, salt, driver, reported, judge_factory, pool, hooks.on_result,
                              worker_env if isinstance(worker_env, WorkerEnv) else WorkerEnv(worker_env or {}))
                _judge_todo(ray, data, reused, todo, store, job)
            created = store.created if not todo else None  # nothing new: the results keep their time
            summary = finish_run(data, store, cfg, driver, out_dir, settings, skipped, created, run_info=reported)
    finally:
        if judge is None:  # the driver's own judge
            asyncio.run(driver.aclose())
    return EvalRun(summary, judged=len(todo), reused=len(reused))


def _judge_todo(ray: Any, data: Dataset, reused: frozenset[str], todo: list[DocInfo], store: Any, job: _RayJob) -> None:
    """Judge the documents still to judge on the workers: the rows of a Ray source as they are
    (filtered there), or the other datasets' documents put into Ray's object store."""
    if isinstance(data, RayDataset):
        _judge_on_ray(ray, data.ds, True, todo, store, job)
    else:  # rows of exactly the documents to judge
        _judge_on_ray(ray, _to_ray(ray, data, reused), False, todo, store, job)


def _build_on_driver(source: JudgeSource, config: JudgeConfig) -> Judge:
    return build_judge(source, config) if isinstance(source, JudgeSpec) else source(config)


def _scanned(ray: Any, documents: ray.data.Dataset | Dataset, cfg: JudgeConfig, salt: str,
             source: RayInput) -> tuple[Any, list[Problem]]:
    """The documents as a scanned factjudge dataset, and the problems of the rows left out."""
    if not isinstance(documents, ray.data.Dataset):
        return documents, list(source.skipped)
    name = source.name
    data = RayDataset(documents, name)
    problems = data.scan(cfg, salt)
    if problems and not source.skip_invalid:
        shown = "; ".join(p.message for p in problems[:3])
        more = f"; and {len(problems) - 3} more" if len(problems) > 3 else ""
        raise InputError(f"{len(problems)} bad row(s); nothing was judged (skip_invalid=True "
                         f"judges the rest): {shown}{more}")
    if not data.infos:
        raise InputError(f"{name}: no documents to judge")
    scope_check(cfg, data.fact_types, name)  # nothing in scope at all: stop before any call
    return data, [*source.skipped, *problems]


@dataclass(frozen=True)
class _RayJob:
    """What every batch of a run shares: the config and input salt, the driver's judge and the
    judge's source for the workers, how the work is spread, whom to tell of each result."""

    cfg: JudgeConfig
    salt: str
    driver: Judge
    reported: dict[str, Any]  # the driver's run info, updated with what the workers reported
    source: JudgeSource
    pool: RayPool
    on_result: Callable[[DocInfo, JudgeResult], None] | None
    env: WorkerEnv


def _judge_on_ray(ray: Any, rows: ray.data.Dataset, pick: bool, todo: list[DocInfo], store: Any,
                  job: _RayJob) -> None:
    """Judge ``rows`` (``pick``: only those of ``todo``, by doc_id and input hash) and append the
    results to ``store`` as they come back."""
    wanted = {i.doc_id: i.input_sha256 for i in todo}
    infos = {i.doc_id: i for i in todo}
    pool, driver, reported, on_result = job.pool, job.driver, job.reported, job.on_result
    workers = pool.workers
    if workers is None:
        cpus = float(ray.cluster_resources().get("CPU", 1))
        workers = max(1, int(cpus // pool.num_cpus) if pool.num_cpus > 0 else int(cpus))
    workers = max(1, min(workers, len(todo)))
    results = rows.map_batches(
        _JudgeWorker,
        compute=ray.data.ActorPoolStrategy(size=workers),
        batch_size=pool.batch_size or DOCS_PER_CALL * pool.concurrency,
        batch_format="pyarrow",
        num_cpus=pool.num_cpus,
        fn_constructor_kwargs={"judge_factory": job.source, "config": job.cfg,
                               "salt": job.salt, "identity": driver.identity(),
                               "wanted": wanted if pick else None,
                               "concurrency": pool.concurrency, "env": job.env or None},
    )
    info_keys = list(reported)
    stream: Any = iter(results.iter_batches(batch_format="pyarrow", batch_size=None))
    with store.path.open("ab") as fh, contextlib.closing(stream):
        for batch in stream:
            columns = [batch.column(k).to_pylist() for k in RESULT_COLUMNS]
            for doc_id, sha, text, error in zip(*columns, strict=True):
                if error:
                    raise _error_from_row(error)
                want = wanted.pop(doc_id, None)
                if want is None:
                    continue  # a duplicate row judged twice: the first one is kept
                if sha != want:
                    raise InputError(f"document {doc_id!r} changed between the scan and its judging")
                result = JudgeResult.model_validate_json(text)
                store.append(fh, doc_id, sha, result)
                usage = result.usage.model_dump()
                reported.update({k: usage[k] for k in info_keys if usage.get(k) is not None})
                if on_result:
                    on_result(infos[doc_id], result)
    if wanted:
        raise InputError(f"{len(wanted)} document(s) did not come back from the Ray workers (first: "
                         f"{next(iter(wanted))!r}); did the dataset change while it was judged?")
