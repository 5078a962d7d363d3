"""Reading a provider batch's output files into the response cache: each answer is validated
exactly as a live one (:func:`~factjudge.judges.llm.prompts.parse_answer`) against the question
recorded when it was exported (:class:`~factjudge.judges.llm.batch_lines.QuestionStore`), and the
valid ones are stored under their ``custom_id``, the response-cache key. The next ``eval`` finds
them there and makes no call for them. An invalid answer is remembered with its reason: the next
export asks that question again with the same feedback a live re-ask sends.
"""
from __future__ import annotations

import codecs
import dataclasses
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import InputError, InvalidAnswer
from .backends import MAX_BODY_BYTES, ChatReply, error_message, one_line, parse_completion
from .backends.openai_format import as_is
from .batch_api import cut
from .batch_lines import QuestionStore
from .cache import ResponseCache
from .prompts import parse_answer


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
            f"{', '.join(c if c.isprintable() and len(c) <= 80 else cut(c) for c in custom_ids[:shown])}"
            f"{more}")


@dataclass(frozen=True)
class _Outcome:
    custom_id: str
    reply: ChatReply | None = None   # the answer, or
    error: str = ""                  # why the batch could not answer


def _error_text(error: object, redact: Callable[[str], str]) -> str:
    if isinstance(error, dict):
        code, message = error.get("code"), error.get("message")
        text = f"{code}: {message}" if code and message else str(message or code or json.dumps(error))
    else:
        text = str(error)
    return one_line(redact(text)) or "(no message)"


def read_output_lines(path: Path, redact: Callable[[str], str] = as_is) -> Iterator[_Outcome]:
    """The lines of an OpenAI (or vLLM run_batch) batch output or error file. A line that is not
    a batch output line at all raises InputError naming the file and line, and so does a line
    longer than the live reply cap, read no further than that (a 50 MB line took 1.4 GB whole).
    Every answer and error comes through ``redact`` (the credentials in use hidden, before any
    cut), as a live reply does: it goes to the response cache, the next export and the terminal."""
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
                yield _Outcome(custom_id, error=_error_text(rec["error"], redact))
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
                text = redact(body if isinstance(body, str) else json.dumps(body, ensure_ascii=False))
                yield _Outcome(custom_id, error=error_message(status, text) if isinstance(status, int)
                               else f"no status_code: {one_line(text)}")
                continue
            reply = parse_completion(body, redact=redact)
            if reply.content:
                reply = dataclasses.replace(reply, content=redact(reply.content))
            yield _Outcome(custom_id, reply=reply)


def import_outputs(paths: Iterable[Path], cache: ResponseCache, *,
                   redact: Callable[[str], str] = as_is) -> Imported:
    """Validate each answer of the batch output files against its question, exactly as a live
    answer is validated, and store the valid ones in ``cache`` under their ``custom_id``.

    Every line of every file is checked first: a line that is not a batch output line stops the
    import (InputError naming file and line) before anything is stored. Importing the same file
    twice changes nothing (the second time every answer is already present). A custom_id answered
    again with a different answer is a conflict: the answer already in ``cache`` stays. ``redact``
    hides the credentials in use (``eval --batch`` knows them; ``batch-import`` does not) in every
    answer and error read (:func:`read_output_lines`), so the cache holds none, as with live answers."""
    paths = list(paths)
    for path in paths:  # first pass: the files' shape
        for _ in read_output_lines(path):
            pass
    store = QuestionStore(cache)
    result = Imported()
    try:
        for path in paths:
            answered: list[str] = []
            for outcome in read_output_lines(path, redact):
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

