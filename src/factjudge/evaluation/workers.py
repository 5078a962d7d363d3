"""A dataset's documents judged in several processes (``eval --workers N``).

The rules judge is bound by the CPU: one process judges a 20-fact document in ~3 ms and leaves
every other core idle. With ``workers`` > 1, the documents still to judge go in chunks to that many
processes forked from this one: they inherit the judge, its knowledge and the imported modules, so
nothing is built twice, and each judges its chunks with
:func:`~factjudge.evaluation.pipeline.judge_checked` exactly as one process would, checks each
document against its scan, and sends back the document's line of ``results.jsonl``. This process
sends a document's place in the dataset, not the document: a worker has those the scan held
(forked after it) and reads the others from the input itself (this process read, parsed and
pickled them only to send them: ~83 us of its CPU a 20-fact document, on the cores the workers
judge on). This process appends the lines in dataset order as they come (a killed run keeps every
finished chunk), then :func:`~factjudge.evaluation.runner.finish_run` builds the summary and the reports as ever: the
files are the same whichever way the documents were judged (``usage`` seconds aside).

Only the rules judge runs so (:func:`check_workers`): an LLM judge waits on its server, and its
questions are concurrent in one process already (``--concurrency``); its sockets cannot cross a
fork. Forking needs a POSIX system (Linux, macOS); elsewhere ``--workers`` above 1 is refused.
"""
from __future__ import annotations

import asyncio
import functools
import gc
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from ..io.datasets import Dataset, Document
from ..io.runfolder import result_line
from ..judges.base import FactForms, Judge
from ..models import JudgeConfig, JudgeResult
from ..reports.rows import ClosestIds, CompareFields, closest_detail, closest_ids, read_config_as
from ..util.forked import cpu_count
from .pipeline import judge_checked
from .runner import as_scanned

if TYPE_CHECKING:
    import multiprocessing.pool

#: Documents per task sent to a worker: large enough that sending them and their lines back is
#: small beside judging them (~3 ms a 20-fact document), small enough that the last chunks of a
#: run finish together.
CHUNK = 25
#: Chunks waiting per worker: one being judged, one queued, so no worker waits on this process.
AHEAD = 2
#: Below this many documents to judge, ``workers="auto"`` keeps to one process: starting the
#: workers (a fork each) and sending the documents cost about what they save. Measured on 2 cores
#: (documents of 10 + 10 facts, whole process, best of 3 alternately, 1 -> 2 processes): 50
#: documents 0.65 -> 0.62 s, 100 0.88 -> 0.78 s, 200 1.27 -> 1.06 s, 600 2.83 -> 1.99 s.
AUTO_MIN_DOCUMENTS = 100


def can_fork() -> bool:
    # multiprocessing (~7 ms to import) only for a run that may fork: auto_workers decides an LLM
    # run's one process without it
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods()


def _is_rules(judge: Judge) -> bool:
    """Whether ``judge`` is the rules judge, without importing it for an LLM run (whose start
    would then load the normaliser and its knowledge): an instance implies its module is loaded."""
    rules = sys.modules.get("factjudge.judges.rules.judge")
    return rules is not None and isinstance(judge, rules.RulesJudge)


def check_workers(workers: int, judge: Judge) -> None:
    """Refuse ``workers`` (> 1) where processes cannot help or cannot be started."""
    if workers < 1:
        raise InputError("--workers must be at least 1 (or auto)")
    if workers == 1:
        return
    if not _is_rules(judge):
        raise InputError(f"--workers {workers}: only the rules judge is judged in several processes; "
                         f"the {judge.name!r} judge's questions are asked concurrently in one "
                         "(--concurrency)")
    if not can_fork():
        raise InputError(f"--workers {workers}: needs a system that can fork processes (Linux, macOS)")


def auto_workers(judge: Judge, documents: int) -> int:
    """What ``--workers auto`` (the default) means for this run: a process per core for the
    rules judge on a dataset large enough to gain from them, else one."""
    if not _is_rules(judge) or documents < AUTO_MIN_DOCUMENTS or not can_fork():
        return 1
    return max(1, min(cpu_count(), documents // CHUNK))


@dataclass(frozen=True)
class Line:
    """What a worker sends back for a document: its results line and what the run counts of it."""

    doc_id: str
    input_sha256: str
    data: bytes
    errors: int
    #: The line's closest facts (:func:`~factjudge.reports.rows.closest_detail`), when asked: the
    #: worker's normal forms are warm, this process would work them out again (1,000 x 20 facts:
    #: 5,484 facts normalised a second time, ~1 s of the finishing pass).
    closest: ClosestIds | None = None


#: Net new objects a worker holds before the collector's youngest generation is collected: so
#: many that it is a guard against a leak of cycles, not a routine pass. What outlives a worker's
#: young collection is the judge's bounded caches (normal forms, alignments, reasonings), and its
#: documents make almost no cycles (169 objects collected in 10,000 documents x 20 facts): each
#: collection only walked those survivors once, 0.37 s of each worker's ~12 s of CPU there, and
#: at 50,000 or 200,000 as much (0.36-0.48 s). A run never reached this count; peak memory the same.
WORKER_GC_YOUNG = 10_000_000


# What a forked worker judges with: set once in each worker by _start (inherited through the
# fork, never pickled: a judge need not be picklable).
_WORKER: dict[str, Any] = {}


def _start(dataset: Dataset, config: JudgeConfig, judge: Judge, salt: str, closest: bool) -> None:
    # Ctrl-C goes to the whole process group: this process's parent stops the run and says so;
    # a worker hit by it would print its own traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # forked from inside the parent's running event loop: that loop is not this process's
    asyncio.events._set_running_loop(None)
    # one dict for every document's result, and for every line as results.jsonl's reader gives
    # them the run's config
    as_json = config.model_dump(mode="json")
    _WORKER.update(dataset=dataset, config=config, judge=judge, salt=salt, loop=asyncio.new_event_loop(),
                   config_json=as_json, closest=as_json if closest else None)
    read_config_as(as_json, config)  # the closest-fact search compares with the judge's config
    threading.Thread(target=_exit_when_orphaned, args=(os.getppid(),), daemon=True).start()
    gc.set_threshold(WORKER_GC_YOUNG, *gc.get_threshold()[1:])


def _exit_when_orphaned(parent: int) -> None:
    """A worker whose parent was killed (SIGKILL: no chance to stop its pool) waits on a queue
    that never ends: it leaves on its own within a second."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(1)


#: What a worker sends back for a chunk: the documents' lines, and the one-line error of the
#: document after them that is not what the scan read (the input changed during the run: the
#: chunk stops there), if one is not.
Chunk = tuple[list[Line], str | None]
#: A document to judge: its position among the dataset's scanned documents, and its input hash.
#: The worker has the documents the scan held (forked after it), and reads the others again.
Sent = tuple[int, str]


def _judge_chunk(docs: list[Sent]) -> Chunk:
    """Judge a chunk in a worker: each document's line, up to the first document that is not what
    the scan read (the input changed during the run), whose error comes second."""
    config, judge, salt, loop = _WORKER["config"], _WORKER["judge"], _WORKER["salt"], _WORKER["loop"]
    config_json, dataset = _WORKER["config_json"], _WORKER["dataset"]
    held = dataset.held
    again = [position for position, _ in docs if position >= len(held)]
    # read again and checked against the scan as one process checks them
    read = as_scanned(dataset.read_again(again), [dataset.infos[p] for p in again], salt, dataset.sources)
    out: list[Line] = []
    for position, sha in docs:
        try:
            doc: Document = held[position] if position < len(held) else next(read)
        except InputError as exc:
            return out, str(exc)
        # the document's facts as the judge prepared them, and the fields it compared: the
        # closest search's too
        forms: FactForms = {}
        fields: list[CompareFields] = []
        result = loop.run_until_complete(judge_checked(doc.gold, doc.predicted, config, judge,
                                                       concurrency=1, doc_id=doc.doc_id, forms=forms,
                                                       config_json=config_json, fields_out=fields))
        data = result_line(doc.doc_id, sha, result)
        out.append(Line(doc.doc_id, sha, data, result.metrics.errors, _closest(doc.doc_id, result, forms, fields)))
    return out, None


def _closest(doc_id: str, result: JudgeResult, forms: FactForms, fields: list[CompareFields]) -> ClosestIds | None:
    """The closest facts of a document's line as the finishing pass reads it (its facts, the
    run's config added), when the parent asked for them: searched in the result's own facts,
    which hold what the line does (checked JSON values, written as they are), with the normal
    forms the judge gave them (``forms``) over the fields it compared (``fields``), not in the
    line parsed again and normalised anew (~40 us and ~14 facts a document)."""
    config = _WORKER["closest"]
    if config is None:
        return None
    line = {"doc_id": doc_id, "gold_facts": result.gold_facts, "predicted_facts": result.predicted_facts,
            "config": config}
    return closest_ids(closest_detail(line, forms=forms, fields=fields))


@functools.cache
def _pool_type() -> type[multiprocessing.pool.Pool]:
    """A pool whose worker-maintaining thread wakes when a worker exits or the pool changes, not
    whenever a result waits to be read: the standard pool's also waits on the results' pipe, and
    so spun while the results thread read each chunk's lines (19 KB a 20-fact document), 1.0 s of
    this process's CPU for 10,000 such documents, on the cores the workers judge on. (The standard
    thread pool waits so already.) Nothing else of the pool changes: closing and terminating it
    notify that thread themselves. Made on first use: multiprocessing only for a run that forks."""
    import multiprocessing.pool

    class _Pool(multiprocessing.pool.Pool):
        def _get_sentinels(self) -> list[Any]:
            return [self._change_notifier._reader]  # type: ignore[attr-defined]

    return _Pool


def _stop(pool: multiprocessing.pool.Pool) -> None:
    """Terminate the pool, and kill its workers when that has not ended within :data:`STOP_WAIT`
    seconds.

    ``terminate`` tells each worker to stop and waits for the pool's threads, in milliseconds,
    but it can wait for ever (CPython's ``Pool._terminate_pool``): it puts a sentinel on the
    results pipe under the lock a worker holds while it sends a chunk's lines, and a worker
    halfway through a chunk larger than the pipe, whose reader has left, holds that lock for good
    (Ctrl-C hung ``eval --workers 2`` in 1 run of ~30 under load; faulthandler: the main thread
    in ``outqueue.put(None)``, a worker in ``put``, no results thread). So it runs in a daemon
    thread, and a pool not terminated in time has its workers killed: none is left running, and
    the stuck thread does not keep the process from exiting. Killing them first, always, cost
    every stopped run the whole wait: an idle worker waits for its next chunk holding the lock of
    the tasks' pipe, which ``terminate`` takes, so once killed it never gave it back (a run
    stopped by a changed input took 2.0 s longer; Ctrl-C too)."""
    def terminate() -> None:
        pool.terminate()
        pool.join()

    done = threading.Thread(target=terminate, daemon=True)
    done.start()
    done.join(STOP_WAIT)
    if done.is_alive():
        for worker in pool._pool:  # type: ignore[attr-defined]
            worker.kill()
        for worker in pool._pool:  # type: ignore[attr-defined]
            worker.join(STOP_WAIT)  # (dead within milliseconds of SIGKILL: reaped, no zombie left)


#: Seconds :func:`_stop` waits for a pool to terminate before it kills its workers (a pool
#: terminates within milliseconds unless a worker holds one of its locks; then never).
STOP_WAIT = 2.0


async def judge_in_processes(documents: Iterable[Sent], dataset: Dataset, config: JudgeConfig,
                             judge: Judge, salt: str, workers: int, on_line: Callable[[Line], None], *,
                             closest: bool = False, meanwhile: Iterable[object] = ()) -> None:
    """Judge ``documents`` (each a position in the scanned ``dataset`` with its input hash from the
    scan) in ``workers`` forked processes; ``on_line`` gets each document's line in dataset
    order (with its closest facts when ``closest``); a document that is not what the scan read
    stops the run with :func:`~.runner.as_scanned`'s one-line InputError. However the run ends,
    no worker is left running: stopped (Ctrl-C, an error), the workers are stopped (:func:`_stop`),
    their chunks unfinished. ``meanwhile``: steps taken one at a time whenever this process would
    wait for the workers (:func:`_next`)."""
    loop = asyncio.get_running_loop()
    import multiprocessing

    pool = _pool_type()(workers, initializer=_start, initargs=(dataset, config, judge, salt, closest),
                        context=multiprocessing.get_context("fork"))
    pending: deque[asyncio.Future[Chunk]] = deque()

    def submit(chunk: list[Sent]) -> asyncio.Future[Chunk]:
        done: asyncio.Future[Chunk] = loop.create_future()
        pool.apply_async(_judge_chunk, (chunk,),
                         callback=lambda r: loop.call_soon_threadsafe(_settle, done, r, None),
                         error_callback=lambda e: loop.call_soon_threadsafe(_settle, done, None, e))
        return done

    finished = False
    steps = iter(meanwhile)
    try:
        for chunk in _chunks(iter(documents), CHUNK):
            pending.append(submit(chunk))
            if len(pending) >= AHEAD * workers:
                _take(await _next(pending, steps), on_line)
        while pending:
            _take(await _next(pending, steps), on_line)
        finished = True
    finally:
        if finished:
            pool.close()
            pool.join()
        else:
            _stop(pool)


async def _next(pending: deque[asyncio.Future[Chunk]], steps: Iterator[object]) -> Chunk:
    """The oldest chunk's result; until it has come, the next of ``steps`` is taken, one at a
    time (this process would only wait: the workers have their next chunk queued)."""
    while not pending[0].done() and next(steps, _DONE) is not _DONE:
        await asyncio.sleep(0)  # the chunks' results come through the loop
    return await pending.popleft()


_DONE = object()


def _settle(done: asyncio.Future[Chunk], result: Chunk | None, error: BaseException | None) -> None:
    if done.cancelled():
        return
    if error is not None:
        done.set_exception(error)
    else:
        assert result is not None
        done.set_result(result)


def _take(done: Chunk, on_line: Callable[[Line], None]) -> None:
    lines, not_scanned = done
    for line in lines:  # the documents judged before a changed one are kept, as in one process
        on_line(line)
    if not_scanned is not None:
        raise InputError(not_scanned)


def _chunks(items: Iterator[Sent], size: int) -> Iterator[list[Sent]]:
    while chunk := list(islice(items, size)):
        yield chunk
