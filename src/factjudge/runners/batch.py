"""Provider batch APIs (OpenAI's Batch API, vLLM's ``run_batch``): half the price of live calls,
answers within 24 hours.

Three parts, each usable on its own:

- :func:`export_batch` writes the questions an ``eval`` would send and whose answer is not in the
  response cache as OpenAI batch input lines. ``custom_id`` is the question's response-cache key
  (:meth:`~factjudge.judges.base.Judge.batch_request`), ``body`` exactly the live request.
  What validating an answer needs (direction, judged fact, the candidates as asked) is recorded
  per ``custom_id`` in two tables of the response cache's SQLite file, so that
- :func:`import_outputs` needs only the batch output files: each answer is validated exactly as a
  live one (:func:`~factjudge.judges.prompts.parse_answer`) and the valid ones are stored in the response
  cache under ``custom_id``. The next ``eval`` finds them there and makes no call for them.
- :class:`BatchRunner` does both through a server's Files and Batches endpoints, keeping the
  batch ids and their state in ``OUT_DIR/batch.json`` so that an interrupted run resumes polling
  and never submits a batch twice.

An invalid answer is remembered with its reason: the next export asks that question again with
the same feedback a live re-ask sends (the invalid answer, then "Your answer was invalid: ...").
"""
from __future__ import annotations

import asyncio
import codecs
import contextlib
import functools
import hashlib
import json
import re
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from .._version import __version__
from ..errors import FactJudgeError, InputError, InvalidAnswer
from ..evaluation.pipeline import has_candidates, questions
from ..evaluation.runner import check_folder, run_manifest
from ..io.datasets import Dataset
from ..io.files import AtomicFile, write_atomic
from ..io.run_models import BatchState
from ..io.runfolder import RESULTS, FolderLock, ResultStore
from ..judges.base import BatchRequest, BatchTarget, Judge
from ..judges.llm.backends import (
    MAX_BODY_BYTES,
    BackendError,
    ChatReply,
    Endpoint,
    error_message,
    one_line,
    parse_completion,
    retry_after_seconds,
)
from ..judges.llm.cache import ResponseCache
from ..judges.llm.retry import RetryPolicy
from ..judges.prompts import JudgeTask, parse_answer, reask_messages
from ..models import JudgeConfig
from ..util.jsonutil import canonical_json

#: OpenAI's limits per batch input file (vLLM's run_batch has none).
MAX_LINES = 50_000
MAX_BYTES = 200_000_000
#: The endpoint every line asks.
ENDPOINT = "/v1/chat/completions"
#: What a live re-ask tells the model after an invalid answer (as :class:`LLMJudge` does).
#: Batch statuses after which nothing changes any more.
TERMINAL = ("completed", "failed", "expired", "cancelled")
#: ``--batch``'s state and files, inside the eval output folder.
STATE_FILE, BATCH_DIR = "batch.json", "batch"
#: A group of lines (one document and direction) is spooled in memory up to this size.
_SPOOL_BYTES = 32 << 20


class BatchError(FactJudgeError):
    """A batch cannot go on (the server refused it, it failed, it was cancelled): one line."""


class UnsafeId(BatchError):
    """A server's batch or file id that factjudge does not put in a URL or a file name."""


#: What a batch or file id from a server may look like before it goes into a URL or a file name
#: (OpenAI's ``batch_abc123`` and ``file-abc123``, Azure's and vLLM's UUIDs after a prefix): ASCII
#: letters, digits, ``_``, ``-`` and ``.``, not starting with ``.``, at most 256 characters. A
#: server's ``/tmp/x/evil`` or ``../x`` is refused, never joined to a path.
_SAFE_ID = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,255}")
#: The server's ids a ``batch.json`` job keeps.
_SAVED_IDS = {"input_file_id": "file id", "batch_id": "batch id", "output_file_id": "file id",
              "error_file_id": "file id"}


def _cut(text: str, limit: int = 80) -> str:
    """``text`` quoted (repr: control characters and lone surrogates escaped), cut at ``limit``."""
    return repr(text[:limit]) + ("..." if len(text) > limit else "")


def safe_id(value: object, kind: str, where: str) -> str:
    """``value`` when it is a safe ``kind`` ("batch id", "file id", see :data:`_SAFE_ID`); a
    one-line :class:`UnsafeId` naming it after ``where`` (repr, cut at 80 characters) otherwise."""
    if isinstance(value, str) and _SAFE_ID.fullmatch(value):
        return value
    shown = _cut(value) if isinstance(value, str) else repr(value)
    raise UnsafeId(f"{where} {shown}: not a {kind} (1-256 ASCII letters, digits, '_', '-' or '.', "
                   "not starting with '.'), so factjudge puts it in no URL and no file name")


def llm_of(judge: Judge, what: str = "batch") -> BatchTarget:
    """The LLM of ``judge`` its batch requests go to (:meth:`~factjudge.judges.base.Judge.batch_target`:
    an LLM judge itself, a hybrid's); a one-line InputError for a judge without one."""
    llm = judge.batch_target()
    if llm is None:
        raise InputError(f"{what} needs an LLM judge: add --model NAME (with --judge llm or hybrid)")
    if llm.cache is None:
        raise InputError(f"{what} needs the response cache (answers are imported into it): "
                         "drop --no-cache")
    return llm


# --------------------------------------------------------------------------- stored context


@dataclass(frozen=True)
class Question:
    """What an import needs of one exported question."""

    task: JudgeTask
    #: the last invalid answer and why it was invalid (re-asked with this feedback), or None
    invalid_answer: str | None = None
    problem: str | None = None

    @property
    def label(self) -> str:
        return f"{self.task.direction} fact {self.task.subject_id!r}"


class QuestionStore:
    """Per ``custom_id``: the direction, the judged fact and the candidates as asked, in the
    response cache's SQLite file (tables ``batch_questions`` and ``batch_candidates``: a candidate
    list is stored once per document direction, not once per question). Safe for several
    processes, like the cache itself (WAL, busy timeout)."""

    def __init__(self, cache: ResponseCache) -> None:
        self.path = cache.path
        self.conn = sqlite3.connect(cache.path, timeout=60, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA busy_timeout=60000")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute("CREATE TABLE IF NOT EXISTS batch_candidates ("
                          "digest TEXT PRIMARY KEY, candidates TEXT NOT NULL)")
        self.conn.execute("CREATE TABLE IF NOT EXISTS batch_questions ("
                          "custom_id TEXT PRIMARY KEY, direction TEXT NOT NULL, subject TEXT NOT NULL, "
                          "candidates TEXT NOT NULL, invalid_answer TEXT, problem TEXT)")
        self._candidates = functools.lru_cache(maxsize=64)(self._load_candidates)

    def add(self, requests: Iterable[BatchRequest]) -> None:
        """Record the context of exported questions (one transaction; existing rows are kept, with
        any invalid answer they remember)."""
        digests: dict[int, tuple[list[dict[str, Any]], str]] = {}
        lists: dict[str, str] = {}
        rows = []
        for req in requests:
            task = req.task
            known = digests.get(id(task.candidates))
            if known is None or known[0] is not task.candidates:
                text = canonical_json(task.candidates)
                digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
                known = digests[id(task.candidates)] = (task.candidates, digest)
                lists[digest] = text
            rows.append((req.custom_id, task.direction, canonical_json(task.subject), known[1]))
        if not rows:
            return
        with self._transaction():
            self.conn.executemany("INSERT OR IGNORE INTO batch_candidates (digest, candidates) "
                                  "VALUES (?, ?)", lists.items())
            self.conn.executemany("INSERT OR IGNORE INTO batch_questions (custom_id, direction, "
                                  "subject, candidates) VALUES (?, ?, ?, ?)", rows)

    def feedback(self, custom_id: str) -> tuple[str, str] | None:
        row = self.conn.execute("SELECT invalid_answer, problem FROM batch_questions WHERE custom_id = ?",
                                (custom_id,)).fetchone()
        return (row[0], row[1]) if row and row[1] is not None else None

    def get(self, custom_id: str) -> Question | None:
        row = self.conn.execute("SELECT direction, subject, candidates, invalid_answer, problem "
                                "FROM batch_questions WHERE custom_id = ?", (custom_id,)).fetchone()
        if row is None:
            return None
        candidates = self._candidates(row[2])
        if candidates is None:
            return None
        task = JudgeTask(row[0], json.loads(row[1]), candidates, JudgeConfig(), [], "")
        return Question(task, row[3], row[4])

    def _load_candidates(self, digest: str) -> list[dict[str, Any]] | None:
        row = self.conn.execute("SELECT candidates FROM batch_candidates WHERE digest = ?",
                                (digest,)).fetchone()
        return json.loads(row[0]) if row else None

    def mark_invalid(self, custom_id: str, answer: str, problem: str) -> None:
        self.conn.execute("UPDATE batch_questions SET invalid_answer = ?, problem = ? WHERE custom_id = ?",
                          (answer, problem, custom_id))

    def forget(self, custom_ids: Iterable[str]) -> None:
        """Answered questions need no context any more; neither do candidate lists left unused."""
        ids = [(c,) for c in custom_ids]
        if not ids:
            return
        with self._transaction():
            self.conn.executemany("DELETE FROM batch_questions WHERE custom_id = ?", ids)
            self.conn.execute("DELETE FROM batch_candidates WHERE digest NOT IN "
                              "(SELECT candidates FROM batch_questions)")
        self._candidates.cache_clear()

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def close(self) -> None:
        self.conn.close()


# --------------------------------------------------------------------------- export


class PieceWriter:
    """Batch input files within the providers' limits: ``path``, ``path.2``, ``path.3``...

    Lines come in groups (one document and direction: they share a prompt prefix, which a
    provider caches only inside one file); a group that fits in one file is never split. Each
    file is written under a temporary name and renamed when the export is complete."""

    def __init__(self, path: Path, max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES) -> None:
        if max_lines < 1 or max_bytes < 1:
            raise ValueError("max_lines and max_bytes must be positive")
        self.path, self.max_lines, self.max_bytes = path, max_lines, max_bytes
        self.pieces: list[tuple[AtomicFile, Path]] = []
        self.fh: IO[bytes] | None = None
        self.lines = self.bytes = 0
        self.group: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=_SPOOL_BYTES)
        self.group_lines = self.group_bytes = 0
        self.total = 0

    def name(self, k: int) -> Path:
        return self.path if k == 1 else self.path.with_name(f"{self.path.name}.{k}")

    def add(self, line: bytes) -> None:
        self.group.write(line)
        self.group_lines += 1
        self.group_bytes += len(line)

    def end_group(self) -> None:
        if not self.group_lines:
            return
        fits_one = self.group_lines <= self.max_lines and self.group_bytes <= self.max_bytes
        if self.fh is None or (fits_one and self.lines and (
                self.lines + self.group_lines > self.max_lines
                or self.bytes + self.group_bytes > self.max_bytes)):
            self._next()
        self.group.seek(0)
        for line in self.group:
            if self.lines and (self.lines >= self.max_lines or self.bytes + len(line) > self.max_bytes):
                self._next()
            assert self.fh is not None
            self.fh.write(line)
            self.lines += 1
            self.bytes += len(line)
            self.total += 1
        self.group.seek(0)
        self.group.truncate()
        self.group_lines = self.group_bytes = 0

    def _next(self) -> None:
        if self.fh is not None:
            self.fh.close()  # a finished piece: committed (renamed) at the end
        final = self.name(len(self.pieces) + 1)
        piece = AtomicFile(final, binary=True)
        self.fh = piece.handle
        self.pieces.append((piece, final))
        self.lines = self.bytes = 0

    def finish(self) -> list[Path]:
        """Rename the pieces into place (an empty ``path`` when there is nothing to ask) and remove
        the extra pieces an earlier, larger export left, so no stale file is run by mistake."""
        self.end_group()
        if self.fh is None:
            self._next()
        for piece, _ in self.pieces:
            piece.commit()
        k = len(self.pieces) + 1
        while self.name(k).is_file():
            self.name(k).unlink()
            k += 1
        self.group.close()
        return [final for _, final in self.pieces]

    def abort(self) -> None:
        for piece, _ in self.pieces:
            piece.abort()
        self.group.close()


@dataclass
class Exported:
    files: list[Path]
    lines: int = 0
    #: questions of the exported documents (those in the files, those answered in the response
    #: cache, those decided without the LLM and the duplicates)
    questions: int = 0
    duplicates: int = 0
    reasked: int = 0
    documents: int = 0
    reused_documents: int = 0


def finished_documents(dataset: Dataset, config: JudgeConfig, judge: Judge, out_dir: Path,
                       overwrite: bool = False) -> frozenset[str]:
    """Documents an ``eval`` into ``out_dir`` would reuse (none with ``overwrite``); a folder
    holding another run's results is refused as ``eval`` refuses it. Changes nothing on disk."""
    if overwrite:
        return frozenset()
    check_folder(out_dir, run_manifest(dataset, config, judge))
    store = ResultStore(out_dir / RESULTS, repair=False)
    return frozenset(i.doc_id for i in dataset.infos if store.reusable(i))


def _tasks(doc_gold: list[dict[str, Any]], doc_pred: list[dict[str, Any]], config: JudgeConfig,
           doc_id: str) -> Iterator[Iterator[JudgeTask]]:
    """The questions of one document as the pipeline builds them (as :func:`~factjudge.evaluation.pipeline.
    run_judge_async` and :func:`~factjudge.evaluation.pipeline.preview` do), one iterator per direction."""
    for _, subjects, make in questions(doc_gold, doc_pred, config, doc_id):
        if make is not None:  # no candidates: the pipeline decides without a call
            # a fact of a type the other side lacks is decided without a call too
            yield (task for task in map(make, subjects) if has_candidates(task))


def export_batch(dataset: Dataset, config: JudgeConfig, judge: Judge, out_dir: Path, path: Path, *,
                 overwrite: bool = False, max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES) -> Exported:
    """Write the questions of the documents not finished in ``out_dir`` whose answer is not in the
    response cache to ``path`` (``path.2``... beyond the limits), one OpenAI batch input line each,
    and record what importing their answers needs. ``dataset`` must be scanned. Changes nothing
    in ``out_dir``."""
    llm = llm_of(judge)
    assert llm.cache is not None
    store = QuestionStore(llm.cache)
    reused = finished_documents(dataset, config, judge, out_dir, overwrite)
    result = Exported([], reused_documents=len(reused),
                      questions=sum(i.questions for i in dataset.infos if i.doc_id not in reused),
                      documents=len(dataset.infos) - len(reused))
    writer = PieceWriter(path, max_lines, max_bytes)
    seen: set[str] = set()
    rows: list[BatchRequest] = []
    try:
        for doc in dataset.documents(skip=reused):
            for direction in _tasks(doc.gold, doc.predicted, config, doc.doc_id):
                for task in direction:
                    req = judge.batch_request(task)
                    if req is None:
                        continue
                    if req.custom_id in seen:  # the same question in another document
                        result.duplicates += 1
                        continue
                    seen.add(req.custom_id)
                    body = req.body
                    feedback = store.feedback(req.custom_id)
                    if feedback is not None:
                        body["messages"] = [*body["messages"], *reask_messages(*feedback)]
                        result.reasked += 1
                    line = {"custom_id": req.custom_id, "method": "POST", "url": ENDPOINT, "body": body}
                    writer.add((json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8"))
                    rows.append(BatchRequest(req.custom_id, {}, req.task))
                    if len(rows) >= 1000:
                        store.add(rows)
                        rows = []
                writer.end_group()
        store.add(rows)
        result.files = writer.finish()
    except BaseException:
        writer.abort()
        raise
    finally:
        store.close()
    result.lines = writer.total
    return result


# --------------------------------------------------------------------------- import


@dataclass
class Imported:
    lines: int = 0
    stored: int = 0
    already_present: int = 0
    unknown: int = 0
    #: (question, reason) of answers that failed validation: exported again by the next export
    invalid: list[tuple[str, str]] = field(default_factory=list)
    #: (question, reason) of requests the batch could not answer (HTTP errors, expiry)
    errors: list[tuple[str, str]] = field(default_factory=list)
    #: custom_ids answered again with another answer than the one in the response cache (kept)
    conflicts: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """The counts; ``conflicts`` only when there are some (the output of an import without
        any stays as it was)."""
        counts = {"lines": self.lines, "stored": self.stored, "already_present": self.already_present}
        if self.conflicts:
            counts["conflicts"] = len(self.conflicts)
        return {**counts, "invalid": len(self.invalid), "errors": len(self.errors), "unknown": self.unknown}

    def add(self, other: Imported) -> None:
        self.lines += other.lines
        self.stored += other.stored
        self.already_present += other.already_present
        self.unknown += other.unknown
        self.invalid += other.invalid
        self.errors += other.errors
        self.conflicts += other.conflicts


def conflict_warning(custom_ids: list[str], shown: int = 5) -> str:
    """One line naming the first ``shown`` custom_ids answered twice with different answers, and
    which answer was kept."""
    more = f" and {len(custom_ids) - shown} more" if len(custom_ids) > shown else ""
    return (f"{len(custom_ids)} custom_id(s) answered again with a different answer; the first answer "
            "(the one already in the response cache) is kept, the later one ignored: "
            f"{', '.join(c if c.isprintable() and len(c) <= 80 else _cut(c) for c in custom_ids[:shown])}"
            f"{more}")


@dataclass(frozen=True)
class _Outcome:
    custom_id: str
    reply: ChatReply | None = None   # the answer, or
    error: str = ""                  # why the batch could not answer


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        code, message = error.get("code"), error.get("message")
        text = f"{code}: {message}" if code and message else str(message or code or json.dumps(error))
    else:
        text = str(error)
    return one_line(text) or "(no message)"


def read_output_lines(path: Path) -> Iterator[_Outcome]:
    """The lines of an OpenAI (or vLLM run_batch) batch output or error file. A line that is not
    a batch output line at all raises InputError naming the file and line, and so does a line
    longer than the live reply cap, read no further than that (a 50 MB line took 1.4 GB whole)."""
    with path.open("rb") as fh:
        for lineno, raw in enumerate(iter(lambda: fh.readline(MAX_BODY_BYTES + 1), b""), start=1):
            where = f"{path}: line {lineno}"
            if len(raw) > MAX_BODY_BYTES:  # the line, newline included, is at most the live cap
                raise InputError(f"{where}: longer than {MAX_BODY_BYTES >> 20} MiB, the largest reply "
                                 "factjudge reads (is this a batch output file?)")
            if not raw.strip():
                continue
            try:
                rec = json.loads(raw.removeprefix(codecs.BOM_UTF8))
            except (ValueError, RecursionError):
                raise InputError(f"{where}: not JSON (is this a batch output file?)") from None
            if not isinstance(rec, dict):
                raise InputError(f"{where}: not a batch output line (expected a JSON object)")
            custom_id = rec.get("custom_id")
            if not isinstance(custom_id, str) or not custom_id:
                raise InputError(f"{where}: no custom_id (is this a batch output file?)")
            if "response" not in rec and "error" not in rec:
                what = ("a batch input line, not an output line: import the file the batch produced"
                        if "body" in rec else "not a batch output line (no response and no error)")
                raise InputError(f"{where}: {what}")
            response = rec.get("response")
            if rec.get("error"):
                yield _Outcome(custom_id, error=_error_text(rec["error"]))
                continue
            if response is None:
                yield _Outcome(custom_id, error="no response")
                continue
            if not isinstance(response, dict):
                raise InputError(f"{where}: 'response' must be an object")
            status, body = response.get("status_code"), response.get("body")
            if isinstance(body, str):
                try:
                    body = json.loads(body)
                except (ValueError, RecursionError):
                    pass
            if status != 200:
                text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
                yield _Outcome(custom_id, error=error_message(status, text) if isinstance(status, int)
                               else f"no status_code: {one_line(text)}")
                continue
            yield _Outcome(custom_id, reply=parse_completion(body))


def import_outputs(paths: Iterable[Path], cache: ResponseCache) -> Imported:
    """Validate each answer of the batch output files against its question, exactly as a live
    answer is validated, and store the valid ones in ``cache`` under their ``custom_id``.

    Every line of every file is checked first: a line that is not a batch output line stops the
    import (InputError naming file and line) before anything is stored. Importing the same file
    twice changes nothing (the second time every answer is already present). A custom_id answered
    again with a different answer is a conflict: the answer already in ``cache`` stays."""
    paths = list(paths)
    for path in paths:  # first pass: the files' shape
        for _ in read_output_lines(path):
            pass
    store = QuestionStore(cache)
    result = Imported()
    try:
        for path in paths:
            answered: list[str] = []
            for outcome in read_output_lines(path):
                result.lines += 1
                cid = outcome.custom_id
                cached = cache.get(cid)
                if cached is not None:  # the first answer stays: eval may have used it already
                    if outcome.reply is not None and cached.get("content") != outcome.reply.content:
                        result.conflicts.append(cid)
                    else:
                        result.already_present += 1
                    continue
                question = store.get(cid)
                if question is None:
                    result.unknown += 1
                    continue
                if outcome.reply is None:
                    result.errors.append((question.label, outcome.error))
                    continue
                reply = outcome.reply
                try:
                    if reply.problem:
                        raise InvalidAnswer(reply.problem)
                    parse_answer(question.task, reply.content)
                except InvalidAnswer as exc:
                    result.invalid.append((question.label, str(exc)))
                    store.mark_invalid(cid, reply.content or "", str(exc))
                    continue
                cache.put(cid, {"content": reply.content})
                answered.append(cid)
                result.stored += 1
            cache.flush()  # the answers are on disk before their questions' context is dropped
            store.forget(answered)
    finally:
        store.close()
    return result


# --------------------------------------------------------------------------- the server's API


#: The Files and Batches calls: 5 tries after the first, 1, 2, 4... s apart (at most 60 s, a
#: Retry-After included), no jitter (one client, a few calls).
BATCH_RETRY = RetryPolicy(retries=5, backoff=1.0, max_backoff=60.0, jitter=False)


class _Ambiguous(Exception):
    """A request that may or may not have reached the server (a timeout, a dropped connection)."""


class BatchClient:
    """OpenAI's Files and Batches endpoints over aiohttp, with the judge's base URL and auth."""

    def __init__(self, endpoint: Endpoint, *, timeout: float = 600.0, retry: RetryPolicy = BATCH_RETRY) -> None:
        self.endpoint = endpoint
        self.timeout, self.retry = timeout, retry
        self.headers = {k: v for k, v in endpoint.headers.items() if k.lower() != "content-type"}
        self.headers["User-Agent"] = f"factjudge/{__version__}"
        self._session: Any = None

    async def __aenter__(self) -> BatchClient:
        import aiohttp

        self._session = aiohttp.ClientSession(headers=self.headers)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._session.close()

    async def _call(self, what: str, method: str, path: str, *,
                    make: Callable[[contextlib.ExitStack], dict[str, Any]] = lambda _: {},
                    dest: Path | None = None, idempotent: bool = True) -> Any:
        """One API call with retries (429, 5xx, timeouts, dropped connections); the parsed JSON
        answer, or the body streamed into ``dest``. A call that is not idempotent is retried only
        when it certainly did not reach the server; otherwise :class:`_Ambiguous` is raised."""
        import aiohttp

        url = self.endpoint.url(path)
        redact = self.endpoint.redact
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=min(self.timeout, 60), sock_read=self.timeout)
        attempt = 0
        while True:
            try:
                with contextlib.ExitStack() as stack:
                    async with self._session.request(method, url, timeout=timeout, **make(stack)) as resp:
                        if resp.status >= 300:
                            raw = await resp.content.read(64 * 1024)
                            text = redact(raw.decode("utf-8", "replace"))
                            raise BackendError("status", redact(error_message(resp.status, text)),
                                               status=resp.status, body=text,
                                               retry_after=retry_after_seconds(resp.headers))
                        if dest is not None:
                            await _stream_to(resp, dest)
                            return None
                        raw = await resp.read()
            except BackendError as exc:
                error = exc
            except asyncio.TimeoutError:
                error = BackendError("timeout", f"no answer within {self.timeout:g} s")
            except aiohttp.ClientConnectorError as exc:
                error = BackendError("connect", redact(f"cannot connect: {exc.os_error or exc}"))
            except (aiohttp.ClientError, OSError) as exc:
                error = BackendError("disconnect", redact(f"{type(exc).__name__}: {exc}"))
            else:
                try:
                    return json.loads(raw)
                except (ValueError, RecursionError):
                    raise BatchError(f"{what}: the server at {self.endpoint.host} did not answer "
                                     f"JSON ({one_line(raw[:80].decode('utf-8', 'replace'))!r})") from None
            unsent = error.kind == "connect" or (error.kind == "status" and error.status in (429, 503))
            delay = self.retry.wait(attempt, error)
            if delay is None or not (idempotent or unsent):
                if not idempotent and error.kind in ("timeout", "disconnect"):
                    raise _Ambiguous(error.message)
                hint = ""
                if error.kind == "status" and error.status in (404, 405) and attempt == 0:
                    hint = (f"; does the server at {self.endpoint.host} offer OpenAI's Batch API? "
                            "(for vLLM: --batch-export, then run_batch and factjudge batch-import)")
                raise BatchError(f"{what}: {error.message}{hint}")
            await asyncio.sleep(delay)
            attempt += 1

    async def upload(self, path: Path) -> str:
        import aiohttp

        def make(stack: contextlib.ExitStack) -> dict[str, Any]:
            form = aiohttp.FormData()
            form.add_field("purpose", "batch")
            form.add_field("file", stack.enter_context(path.open("rb")), filename=path.name,
                           content_type="application/jsonl")
            return {"data": form}

        what = f"uploading {path.name}"
        obj = await self._call(what, "POST", "/files", make=make)
        file_id = obj.get("id") if isinstance(obj, dict) else None
        if not isinstance(file_id, str):
            raise BatchError(f"{what}: the server's answer has no file id")
        return safe_id(file_id, "file id", self._answered(what))

    async def create(self, input_file_id: str) -> dict[str, Any]:
        body = {"input_file_id": input_file_id, "endpoint": ENDPOINT, "completion_window": "24h"}
        obj = await self._call("creating the batch", "POST", "/batches",
                               make=lambda _: {"json": body}, idempotent=False)
        return self._batch_object(obj, "creating the batch")

    async def retrieve(self, batch_id: str) -> dict[str, Any]:
        what = f"checking batch {batch_id}"
        return self._batch_object(await self._call(what, "GET", f"/batches/{batch_id}"), what)

    async def find(self, input_file_id: str, pages: int = 10) -> dict[str, Any] | None:
        """The batch created from ``input_file_id``, looked up in the server's list of batches."""
        after = None
        for _ in range(pages):
            query = "?limit=100" + (f"&after={after}" if after else "")
            obj = await self._call("listing batches", "GET", f"/batches{query}")
            data = obj.get("data") if isinstance(obj, dict) else None
            if not isinstance(data, list) or not data:
                return None
            for batch in data:
                if isinstance(batch, dict) and batch.get("input_file_id") == input_file_id:
                    return self._batch_object(batch, "listing batches")
            if not obj.get("has_more"):
                return None
            last = data[-1].get("id") if isinstance(data[-1], dict) else None
            after = safe_id(last, "batch id", self._answered("listing batches")) if last else None
        return None

    async def download(self, file_id: str, dest: Path) -> None:
        await self._call(f"downloading file {file_id}", "GET", f"/files/{file_id}/content", dest=dest)

    def _answered(self, what: str) -> str:
        return f"{what}: the server at {self.endpoint.host} answered"

    def _batch_object(self, obj: Any, what: str) -> dict[str, Any]:
        """``obj`` when it is a batch object whose ids are safe (:func:`safe_id`)."""
        if not isinstance(obj, dict) or not isinstance(obj.get("id"), str) or not isinstance(obj.get("status"), str):
            raise BatchError(f"{what}: the server's answer is not a batch object")
        where = self._answered(what)
        try:
            safe_id(obj["id"], "batch id", where)
            for key in ("output_file_id", "error_file_id"):
                if obj.get(key) is not None:
                    safe_id(obj[key], "file id", f"{where} {key}")
        except UnsafeId as exc:  # running again would meet the same id
            raise UnsafeId(f"{exc}; the batch may exist on the server (and be billed): check the "
                           "provider's dashboard") from None
        return obj


async def _stream_to(resp: Any, dest: Path) -> None:
    with AtomicFile(dest, binary=True) as out:
        async for chunk in resp.content.iter_chunked(1 << 20):
            out.handle.write(chunk)


# --------------------------------------------------------------------------- --batch


def _elapsed(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class BatchRunner:
    """``eval --batch``: export, upload, create the batch, poll, download, import; again for the
    questions still unanswered (invalid answers, failed or expired requests), up to
    ``answer_retries + 1`` rounds. The live path then finishes the run from the cache.

    ``OUT_DIR/batch.json`` holds the state: per batch input file a job whose ``step`` goes
    ``exported`` -> ``uploaded`` (``input_file_id``) -> ``creating`` -> ``submitted``
    (``batch_id``) -> ``done`` (output and error files imported), saved after every step. A run
    started again carries on from the saved step: it never uploads a file twice once its id is
    saved, and a batch whose creation was cut off is looked up by its input file before anything
    is created, so no batch is submitted twice."""

    def __init__(self, dataset: Dataset, config: JudgeConfig, judge: Judge, out_dir: Path, *,
                 poll_interval: float = 30.0, overwrite: bool = False,
                 notify: Callable[[str], None] = lambda _: None,
                 client: BatchClient | None = None, max_lines: int = MAX_LINES,
                 max_bytes: int = MAX_BYTES) -> None:
        self.dataset, self.config, self.judge, self.out_dir = dataset, config, judge, out_dir
        self.llm = llm_of(judge, "--batch")
        self.poll_interval, self.notify, self.overwrite = poll_interval, notify, overwrite
        self.client = client or BatchClient(self.llm.endpoint)
        self.max_lines, self.max_bytes = max_lines, max_bytes
        self.state_path = out_dir / STATE_FILE
        self.max_rounds = self.llm.answer_retries + 1
        self.state: dict[str, Any] = {}

    # ---- state

    def _load(self) -> dict[str, Any]:
        identity = self.judge.identity()
        fresh = {"version": 1, "judge": identity, "round": 0, "finished": False, "jobs": []}
        if not self.state_path.exists():
            return fresh
        try:
            state: dict[str, Any] = json.loads(self.state_path.read_text(encoding="utf-8"))
            BatchState.model_validate(state)  # the runner goes on with the dict: its bytes stay
        except (ValueError, OSError):  # a ValidationError is a ValueError
            raise InputError(f"{self.state_path}: not a factjudge batch state file; remove it "
                             "(check the provider's dashboard for batches it may list)") from None
        for job in state["jobs"]:  # ids a hand-edited file holds are checked as a server's are
            for key, kind in _SAVED_IDS.items():
                if job.get(key) is not None:
                    safe_id(job[key], kind, f"{self.state_path}: {key}")
        open_jobs = [j for j in state["jobs"] if j.get("step") != "done"]
        if open_jobs and state.get("judge") != identity:
            ids = ", ".join(j.get("batch_id") or j["file"] for j in open_jobs)
            raise InputError(f"{self.state_path}: unfinished batches ({ids}) of another judge "
                             f"({canonical_json(state.get('judge'))}): run that command again to "
                             "finish them, or remove the file (they may still run and be billed)")
        if state.get("finished") or state.get("judge") != identity:
            # an earlier run is complete: this one starts its own rounds (history kept)
            state.update(judge=identity, round=0, finished=False)
        return state

    def _save(self) -> None:
        write_atomic(self.state_path, json.dumps(self.state, indent=1, ensure_ascii=False) + "\n")

    # ---- the rounds

    async def run(self) -> Imported:
        """Every round's import counts summed; raises BatchError when a batch failed or was
        cancelled, or when every request of a round failed."""
        # a folder holding another run's results is refused before anything is written there
        finished_documents(self.dataset, self.config, self.judge, self.out_dir, self.overwrite)
        # held for the batch phase only: the live run that finishes it takes the lock itself
        with FolderLock(self.out_dir):
            return await self._rounds()

    async def _rounds(self) -> Imported:
        self.state = self._load()
        total = Imported()
        async with self.client:
            while True:
                total.add(await self._finish_open_jobs())
                if self.state["round"] >= self.max_rounds:
                    self.notify(f"factjudge: {self.state['round']} batch round(s) done (the most "
                                "--batch makes); any question still unanswered is asked live")
                    break
                r = self.state["round"] + 1
                (self.out_dir / BATCH_DIR).mkdir(exist_ok=True)
                # numbered by job, so no file of an earlier round or run is overwritten
                base = self.out_dir / BATCH_DIR / f"input-{len(self.state['jobs']) + 1:03d}-round{r}.jsonl"
                exported = export_batch(self.dataset, self.config, self.judge, self.out_dir, base,
                                        overwrite=self.overwrite, max_lines=self.max_lines,
                                        max_bytes=self.max_bytes)
                if not exported.lines:
                    for path in exported.files:
                        path.unlink(missing_ok=True)
                    break
                self.state["round"] = r
                for path in exported.files:
                    with path.open("rb") as fh:
                        lines = sum(1 for _ in fh)
                    self.state["jobs"].append({
                        "round": r, "file": str(path.relative_to(self.out_dir)), "lines": lines,
                        "step": "exported", "input_file_id": None, "batch_id": None, "status": None,
                        "request_counts": None, "output_file_id": None, "error_file_id": None,
                        "imported": None})
                self._save()
                self.notify(f"factjudge: batch round {r}: {exported.lines} question(s) in "
                            f"{len(exported.files)} file(s)"
                            + (f" ({exported.reasked} asked again after an invalid answer)"
                               if exported.reasked else "")
                            + f"; submitting to {self.llm.endpoint.host}")
        self.state["finished"] = True
        self._save()
        return total

    async def _finish_open_jobs(self) -> Imported:
        jobs = [j for j in self.state["jobs"] if j["step"] != "done"]
        for job in jobs:
            await self._submit(job)
        result = Imported()
        if jobs:
            result = await self._poll(jobs)
            self._check_round(jobs, result)
        return result

    async def _submit(self, job: dict[str, Any]) -> None:
        path = self.out_dir / job["file"]
        if job["step"] == "exported":
            if not path.is_file():  # removed by hand before upload: its questions go to the next round
                job.update(step="done", status="not submitted (input file missing)")
                self._save()
                return
            job["input_file_id"] = await self.client.upload(path)
            job["step"] = "uploaded"
            self._save()
        if job["step"] == "creating":  # cut off while creating: did the server get it?
            found = await self.client.find(job["input_file_id"])
            if found is not None:
                self._submitted(job, found)
                return
            job["step"] = "uploaded"
        if job["step"] == "uploaded":
            job["step"] = "creating"
            self._save()
            try:
                batch = await self.client.create(job["input_file_id"])
            except _Ambiguous as exc:
                found = await self.client.find(job["input_file_id"])
                if found is None:
                    raise BatchError(f"creating the batch for {job['file']}: {exc}; run the same "
                                     "command again (it checks whether the batch exists first)") from None
                batch = found
            self._submitted(job, batch)

    def _submitted(self, job: dict[str, Any], batch: dict[str, Any]) -> None:
        job.update(step="submitted", batch_id=batch["id"], status=batch["status"])
        self._save()
        self.notify(f"factjudge: submitted batch {batch['id']} ({job['lines']} request(s), "
                    f"{job['file']})")

    async def _poll(self, jobs: list[dict[str, Any]]) -> Imported:
        result = Imported()
        waiting = [j for j in jobs if j["step"] == "submitted"]
        started = time.monotonic()
        shown, shown_at = "", 0.0
        while waiting:
            for job in list(waiting):
                try:
                    batch = await self.client.retrieve(job["batch_id"])
                except UnsafeId:
                    raise
                except BatchError as exc:
                    raise BatchError(f"{exc}; the batch goes on: run the same command again to "
                                     "resume polling") from None
                job.update(status=batch["status"], request_counts=batch.get("request_counts"))
                if batch["status"] in TERMINAL:
                    job.update(output_file_id=batch.get("output_file_id"),
                               error_file_id=batch.get("error_file_id"),
                               errors=_batch_errors(batch))
                    result.add(await self._collect(job))
                    waiting.remove(job)
            self._save()
            if waiting:
                text = "; ".join(_job_progress(j) for j in jobs)
                now = time.monotonic()
                if text != shown or now - shown_at >= 300:
                    self.notify(f"factjudge: batch round {self.state['round']}: {text} | "
                                f"{_elapsed(now - started)}")
                    shown, shown_at = text, now
                await asyncio.sleep(self.poll_interval)
        return result

    async def _collect(self, job: dict[str, Any]) -> Imported:
        """Download the finished batch's output and error files and import them."""
        files = []
        for key, suffix in (("output_file_id", "output"), ("error_file_id", "errors")):
            if job.get(key):
                dest = self.out_dir / BATCH_DIR / f"{job['batch_id']}.{suffix}.jsonl"
                await self.client.download(job[key], dest)
                files.append(dest)
        assert self.llm.cache is not None
        result = import_outputs(files, self.llm.cache)
        job.update(step="done", imported=result.counts(),
                   outputs=[str(f.relative_to(self.out_dir)) for f in files])
        self._save()
        c = result.counts()
        self.notify(f"factjudge: batch {job['batch_id']} {job['status']}: {c['stored']} answer(s) "
                    f"stored, {c['already_present']} already present, "
                    + (f"{c['conflicts']} conflicting, " if result.conflicts else "")
                    + f"{c['invalid']} invalid, {c['errors']} failed request(s)"
                    + (f", {c['unknown']} unknown custom_id(s)" if c["unknown"] else ""))
        if result.conflicts:
            self.notify(f"factjudge: warning: {conflict_warning(result.conflicts)}")
        for label, reason in (result.invalid[:3] + result.errors[:3]):
            self.notify(f"factjudge:   {label}: {reason}")
        return result

    def _check_round(self, jobs: list[dict[str, Any]], result: Imported) -> None:
        """A failed or cancelled batch, or a round where every request failed, stops the batch
        phase: asking the same again would fail the same way."""
        stop = ""
        for job in jobs:
            if job.get("status") == "failed":
                stop = (f"batch {job['batch_id']} failed: {job.get('errors') or 'no reason given'}; "
                        "run the same command again to submit a new batch, or drop --batch to ask live")
            elif job.get("status") == "cancelled":
                stop = (f"batch {job['batch_id']} was cancelled (its answers were imported); run the "
                        "same command again to carry on")
        if not stop and result.errors and not (result.stored or result.invalid or result.already_present
                                               or result.conflicts) \
                and all(j.get("status") == "completed" for j in jobs):
            stop = (f"every request of batch round {self.state['round']} failed (first: "
                    f"{result.errors[0][1]}); fix the cause and run the same command again, or drop "
                    "--batch to ask live")
        if stop:
            self.state["finished"] = True
            self._save()
            raise BatchError(stop)


def _batch_errors(batch: dict[str, Any]) -> str:
    errors = batch.get("errors")
    data = errors.get("data") if isinstance(errors, dict) else None
    if not isinstance(data, list) or not data:
        return ""
    first = data[0] if isinstance(data[0], dict) else {}
    line = f" (line {first['line']})" if first.get("line") else ""
    more = f" and {len(data) - 1} more" if len(data) > 1 else ""
    return one_line(f"{first.get('code') or 'error'}: {first.get('message') or ''}{line}{more}")


def _job_progress(job: dict[str, Any]) -> str:
    counts = job.get("request_counts") or {}
    done = (counts.get("completed") or 0) + (counts.get("failed") or 0)
    total = counts.get("total") or job["lines"]
    failed = f", {counts['failed']} failed" if counts.get("failed") else ""
    return f"{job['batch_id']} {job['status']} {done}/{total}{failed}"
