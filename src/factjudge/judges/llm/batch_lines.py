"""The LLM judge's questions as lines of a provider batch input file (OpenAI's Batch API, vLLM's
``run_batch``): ``custom_id`` is the question's response-cache key, ``body`` exactly the live
request. What validating an answer needs (direction, judged fact, the candidates as asked) is
recorded per ``custom_id`` in two tables of the response cache's SQLite file
(:class:`QuestionStore`), so that importing the outputs needs only the output files
(:mod:`~factjudge.judges.llm.batch_import`).

Which judges can be asked in a batch is the judges' to say: a judge that can is
:class:`Batchable` (the LLM judge, a hybrid's LLM), and each direction it opens writes its
questions' lines (:class:`BatchLines`).
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import sqlite3
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol, runtime_checkable

from ...errors import InputError
from ...io.files import AtomicFile
from ...models import JudgeConfig
from ...util.jsonutil import canonical_json
from ..base import JudgeTask
from .backends import provider_of
from .batch_api import ENDPOINT
from .cache import ResponseCache
from .prompts import reask_messages

if TYPE_CHECKING:
    from .judge import LLMJudge

#: OpenAI's limits per batch input file (vLLM's run_batch has none).
MAX_LINES = 50_000
MAX_BYTES = 200_000_000
#: A group of lines (one document and direction) is spooled in memory up to this size.
_SPOOL_BYTES = 32 << 20


@dataclass(frozen=True)
class BatchRequest:
    """A question as one line of an OpenAI batch file: ``custom_id`` is its response-cache key,
    ``body`` exactly the live request, ``task`` the question as asked (after any shortlist)."""

    custom_id: str
    body: dict[str, Any]
    task: JudgeTask


@runtime_checkable
class BatchLines(Protocol):
    """A direction opened by a :class:`Batchable` judge: its questions as batch lines."""

    def batch_request(self, subject: dict[str, Any]) -> BatchRequest | None:
        """The live request about ``subject`` an LLM would be asked and whose answer is not in the
        response cache yet; None when nothing would be sent."""
        ...


@runtime_checkable
class Batchable(Protocol):
    """A judge whose questions can go to a provider batch: it names the LLM they are asked of
    (its server, its response cache, how often it asks again), and the directions it opens are
    :class:`BatchLines`."""

    def batch_llm(self) -> LLMJudge: ...


def batch_llm(judge: object, what: str = "batch") -> LLMJudge:
    """The LLM ``judge``'s batch requests go to; a one-line InputError for a judge that cannot be
    asked in a batch (no LLM, several, or a backend that does not speak OpenAI's Batch API), or
    without the response cache the answers are imported into."""
    if not isinstance(judge, Batchable):
        raise InputError(f"{what} needs an LLM judge: add --model NAME (with --judge llm or hybrid)")
    llm = judge.batch_llm()
    if llm.cache is None:
        raise InputError(f"{what} needs the response cache (batch answers are imported into it): "
                         "drop --no-cache")
    backend = llm.transport.backend
    if not provider_of(backend).openai_batch:  # its lines are chat completions for OpenAI's Files and Batches
        name = backend if isinstance(backend, str) else type(backend).__name__
        raise InputError(f"{what} speaks OpenAI's Batch API; --backend {name} asks live only "
                         f"({name}'s own batch API is not supported): drop one of them")
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
        task = JudgeTask(row[0], json.loads(row[1]), candidates, JudgeConfig())
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


# --------------------------------------------------------------------------- lines


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


class LineWriter:
    """The batch lines of the questions of an export, in files within the providers' limits
    (:class:`PieceWriter`); a question asked twice (the same in another document) is written once,
    one whose last batch answer was invalid goes again with the feedback a live re-ask sends, and
    what importing the answers needs is recorded in the :class:`QuestionStore`."""

    def __init__(self, cache: ResponseCache, path: Path, max_lines: int = MAX_LINES,
                 max_bytes: int = MAX_BYTES) -> None:
        self.store = QuestionStore(cache)
        self.writer = PieceWriter(path, max_lines, max_bytes)
        self.seen: set[str] = set()
        self.rows: list[BatchRequest] = []
        self.duplicates = self.reasked = 0

    @property
    def lines(self) -> int:
        return self.writer.total

    def add(self, direction: BatchLines, subjects: Iterable[dict[str, Any]]) -> None:
        """The lines of one direction of a document (kept together in one file where they fit:
        they share a prompt prefix, which a provider caches only inside one file)."""
        for subject in subjects:
            req = direction.batch_request(subject)
            if req is None:
                continue
            if req.custom_id in self.seen:  # the same question in another document
                self.duplicates += 1
                continue
            self.seen.add(req.custom_id)
            body = req.body
            feedback = self.store.feedback(req.custom_id)
            if feedback is not None:
                body["messages"] = [*body["messages"], *reask_messages(*feedback)]
                self.reasked += 1
            line = {"custom_id": req.custom_id, "method": "POST", "url": ENDPOINT, "body": body}
            self.writer.add((json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8"))
            self.rows.append(BatchRequest(req.custom_id, {}, req.task))
            if len(self.rows) >= 1000:
                self.store.add(self.rows)
                self.rows = []
        self.writer.end_group()

    def finish(self) -> list[Path]:
        """Record the questions' context and put the files in place."""
        try:
            self.store.add(self.rows)
            return self.writer.finish()
        finally:
            self.store.close()

    def abort(self) -> None:
        self.writer.abort()
        self.store.close()
