"""An eval output folder: ``results.jsonl`` (one line per finished document), ``run.json``,
``summary.json`` and the reports. :class:`RunFolder` is the one reader of such a folder (eval
resume, compare, agree, tables and Ray read through it); :class:`ResultStore` appends the lines
while a run goes on and rewrites them in dataset order at the end.

How ``results.jsonl`` is read, one way for every reader (errors are ``<path>: line N: <problem>``):

- a UTF-8 BOM on the first line is accepted, blank lines are skipped;
- a line that is no result line (:func:`~factjudge.io.run_models.result_line_problem`) is an
  error: a file factjudge did not write is never overwritten nor read as results;
- a **finished** run (``summary.json`` is written last) has one line per document: a doc_id on
  two lines is an error naming both lines;
- a run **still going or killed** appends: a document judged again after an ERROR has a later
  line that replaces its earlier one, and a last line without its newline was cut off by a kill:
  resuming drops it (and cuts it from the file), the other readers leave it out.

Whose folder it is (:meth:`RunFolder.claim`): eval writes only into a new or empty folder, one
holding its ``run.json``, or one holding only names factjudge writes (an older run's
``results.jsonl``, ``--batch``'s files); it removes and replaces only those names, only files it
wrote, and never an input. One run at a time holds a folder (:class:`FolderLock`).
"""
from __future__ import annotations

import codecs
import hashlib
import json
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

from pydantic import ValidationError
from pydantic_core import to_json

from ..core.aggregate import doc_stats
from ..errors import InputError
from ..models import JudgeResult, own_fields
from ..util.jsonutil import canonical_json, parse_written
from .files import AtomicFile, own_page, same_file
from .jsonl import read_error
from .run_models import RUN_KEYS, ResultLine, RunManifest, result_line_problem

RESULTS, RUN, SUMMARY = "results.jsonl", "run.json", "summary.json"
REPORT_MD, REPORT_HTML, FACTS_CSV = "report.md", "report.html", "facts.csv"
#: The page a person reviews the run's verdicts in (reports/review.py).
REVIEW_HTML = "review.html"
#: The lock file of a run folder (:class:`FolderLock`); it stays, empty but for the holder's pid.
LOCK = ".factjudge.lock"
#: The outputs an earlier run leaves that must not pass for this run's (removed when a run starts).
REPORTS = (SUMMARY, REPORT_MD, REPORT_HTML, REVIEW_HTML, FACTS_CSV)
#: Every name eval writes in a run folder, besides its temporary ``.NAME.*.tmp`` files: the
#: outputs, the lock, and ``--batch``'s state file and folder (runners/batch.py's STATE_FILE and
#: BATCH_DIR, a layer above; a test keeps them equal).
OWN_NAMES = frozenset({RESULTS, RUN, LOCK, *REPORTS, "batch.json", "batch"})
__all__ = ["FACTS_CSV", "LOCK", "OWN_NAMES", "REPORTS", "REPORT_HTML", "REPORT_MD", "RESULTS", "REVIEW_HTML", "RUN",
           "RUN_KEYS", "SUMMARY", "FolderLock", "LineRef", "ResultStore", "RunFolder", "read_eval_dir"]


class DocInfo(Protocol):
    """What the store needs of a scanned document (a :class:`~factjudge.io.datasets.DocInfo`)."""

    @property
    def doc_id(self) -> str: ...
    @property
    def input_sha256(self) -> str: ...


def _read_at(fh: IO[bytes], offset: int) -> bytes:
    fh.seek(offset)
    return fh.readline()


@dataclass(frozen=True)
class LineRef:
    """Where a document's line sits in ``results.jsonl``, and what resuming needs of it."""

    offset: int
    lineno: int
    input_sha256: str
    errors: int


class RunFolder:
    """The reader of an eval output folder (see the module docstring for the rules)."""

    def __init__(self, path: str | Path, results: str | Path | None = None) -> None:
        self.path = Path(path)
        #: ``results.jsonl`` (another file of the folder when ``results`` names one)
        self.results = self.path / RESULTS if results is None else Path(results)
        self._config: dict[str, Any] | None = None

    def run_config(self) -> dict[str, Any]:
        """The run's config, read once: ``run.json``'s, else ``summary.json``'s, else empty. A
        result line holds none (it is the same for every document, and with large alias groups
        copying it made results.jsonl 30x larger); a line of an older version holds its own."""
        if self._config is None:
            try:
                manifest = self.manifest()
            except InputError:
                manifest = None
            found = manifest.config if manifest is not None and manifest.config else self.summary_part("config")
            self._config = found if isinstance(found, dict) else {}
        return self._config

    def with_config(self, line: dict[str, Any]) -> dict[str, Any]:
        """``line`` with the run's config when it holds none (one dict shared by every line)."""
        if "config" not in line:
            line["config"] = self.run_config()
        return line

    @property
    def finished(self) -> bool:
        """Whether the run finished: ``summary.json`` is written last."""
        return (self.path / SUMMARY).is_file()

    def require(self, *, finished: bool = True) -> RunFolder:
        """This folder, or a one-line InputError when it is not an eval output folder (or not a
        finished one)."""
        if not self.path.is_dir():
            raise InputError(f"{self.path}: not an eval output folder (no such folder)")
        if not self.results.is_file():
            raise InputError(f"{self.path}: not an eval output folder (no {RESULTS})")
        if finished and not self.finished:
            raise InputError(f"{self.path}: not a finished eval output folder (no {SUMMARY})")
        return self

    def claim(self, inputs: Sequence[str | Path] = ()) -> None:
        """A one-line InputError, with nothing touched, unless eval may write here: a new or empty
        folder, one holding its ``run.json``, or one holding nothing but :data:`OWN_NAMES` (an
        older run's ``results.jsonl``, whose lines the store checks; ``--batch``'s files). Reports
        without results are a user's files, and so is an input under a name eval writes (it would
        be replaced)."""
        try:
            names = sorted(p.name for p in self.path.iterdir())
        except (FileNotFoundError, NotADirectoryError):
            names = []  # a new folder; mkdir names what is in the way
        except OSError as exc:
            raise InputError(f"{self.path}: cannot read or write: {exc.strerror or exc}") from None
        if RUN in names:
            try:
                manifest = self.manifest()
            except InputError:
                manifest = None
            if manifest is None or not manifest.factjudge:  # every run.json names its version
                raise InputError(f"{self.path / RUN}: not a factjudge run manifest; eval writes only "
                                 "into a new or empty folder or one of its runs: give another -o")
        else:
            files = [n for n in names if n != LOCK and not _temporary(n)]
            if any(n not in OWN_NAMES for n in files) or (
                    RESULTS not in files and any(n in REPORTS for n in files)):
                shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
                raise InputError(f"{self.path}: not an eval output folder (it holds files factjudge did "
                                 f"not write: {shown}); give a new or empty folder")
        for name in sorted(OWN_NAMES):
            for source in inputs:
                if same_file(source, self.path / name):
                    raise InputError(f"{source}: an input of this run is the output folder's {name}, "
                                     "which eval replaces; move it or give another folder")
        for name in (RESULTS, *REPORTS):
            if name in names:
                self._refuse_foreign(name)

    def _refuse_foreign(self, name: str) -> None:
        """A one-line InputError when this folder's ``name`` (one eval replaces) is not factjudge's
        output: a user's file under such a name (their own ``facts.csv`` or ``report.md`` beside a
        run, a ``results.jsonl`` of their extractor) is never removed nor replaced.
        ``results.jsonl`` by its first line, read as every reader reads it; ``summary.json`` by its
        keys; a page by its title (:func:`~.files.own_page`); facts.csv by its first columns. An
        empty file is no one's."""
        path, why = self.path / name, None
        try:
            if not path.is_file():  # a folder, a FIFO (reading one would wait for a writer)
                why = f"{path}: not a regular file"
            elif name == RESULTS:
                first = next(self._raw_lines(finished=True), None)
                if first is not None:
                    self.parse(first[0], first[2])
            elif name == SUMMARY:
                if not {"documents", "micro"} <= self.summary().keys():
                    why = f"{path}: not a factjudge summary"
            elif path.stat().st_size and not (_facts_csv(path) if name == FACTS_CSV
                                               else own_page(path, _PAGE_TITLES[name])):
                why = f"{path}: not the {name} factjudge writes"
        except InputError as exc:  # the readers' own line: not a result line, not a summary
            why = str(exc)
        except OSError as exc:
            why = f"{path}: unreadable ({exc})"
        if why is not None:
            raise InputError(f"{why}; eval replaces its {name} (--overwrite or not): move this one or "
                             "choose another output folder")

    # ---- run.json and summary.json

    def manifest(self) -> RunManifest | None:
        """``run.json``; None when there is none (a new folder, or one of an older version)."""
        path = self.path / RUN
        try:
            data = json.loads(path.read_text(encoding="utf-8-sig"))
        except (FileNotFoundError, NotADirectoryError):
            return None
        except (OSError, ValueError) as exc:
            raise InputError(f"{path}: unreadable ({exc}); use --overwrite or another -o") from None
        try:
            return RunManifest.model_validate(data)
        except ValidationError:
            raise InputError(f"{path}: not a factjudge run manifest; use --overwrite or another "
                             "-o") from None

    def summary(self) -> dict[str, Any]:
        """``summary.json``, parsed; a one-line InputError when it is not a summary."""
        path = self.path / SUMMARY
        try:
            data = json.loads(path.read_text(encoding="utf-8-sig"))
        except (OSError, ValueError):
            raise InputError(f"{path}: not a factjudge summary") from None
        if not isinstance(data, dict):
            raise InputError(f"{path}: not a factjudge summary")
        return data

    def summary_part(self, key: str) -> Any:
        """One key of ``summary.json``, or None when it cannot be read."""
        try:
            return self.summary().get(key)
        except InputError:
            return None

    def created(self) -> str | None:
        """When the finished run in this folder made its results (its summary's provenance)."""
        provenance = self.summary_part("provenance")
        value = provenance.get("created") if isinstance(provenance, dict) else None
        return value if isinstance(value, str) else None

    # ---- results.jsonl

    def _raw_lines(self, *, finished: bool) -> Iterator[tuple[int, int, bytes]]:
        """(line number, byte offset of the JSON, raw JSON) of every line: a BOM is skipped,
        blank lines too, and a cut-off last line is left out unless the run ``finished``."""
        try:
            fh = self.results.open("rb")
        except OSError as exc:
            raise read_error(self.results, exc) from None
        with fh:
            offset = 0
            for lineno, raw in enumerate(fh, start=1):
                start = offset
                offset += len(raw)
                if lineno == 1 and raw.startswith(codecs.BOM_UTF8):
                    raw, start = raw[len(codecs.BOM_UTF8):], start + len(codecs.BOM_UTF8)
                if not raw.strip():
                    continue
                if not raw.endswith(b"\n") and not finished:
                    return  # cut off by a kill
                yield lineno, start, raw

    def parse(self, lineno: int, raw: bytes) -> dict[str, Any]:
        """One raw line of ``results.jsonl``, parsed and checked."""
        try:
            line: dict[str, Any] = parse_written(raw)  # checked below
        except (ValueError, RecursionError):
            raise InputError(f"{self.results}: line {lineno}: not a factjudge result line "
                             "(not JSON)") from None
        problem = result_line_problem(line)
        if problem is not None:
            raise InputError(f"{self.results}: line {lineno}: not a factjudge result line ({problem})")
        return self.with_config(line)

    def index(self, *, finished: bool | None = None) -> dict[str, LineRef]:
        """doc_id -> where its line is, one line in memory at a time. ``finished`` (default:
        whether the run finished) makes a doc_id on two lines an error; otherwise its later
        line counts."""
        finished = self.finished if finished is None else finished
        index: dict[str, LineRef] = {}
        for lineno, offset, raw in self._raw_lines(finished=finished):
            line = self.parse(lineno, raw)
            doc_id = line["doc_id"]
            if finished and doc_id in index:
                raise self._again(lineno, doc_id, index[doc_id].lineno)
            index[doc_id] = LineRef(offset, lineno, line["input_sha256"], line["metrics"]["errors"])
        return index

    def lines(self, *, finished: bool | None = None) -> Iterator[dict[str, Any]]:
        """Every result line, parsed, in file order. A finished run's (``finished``: default
        whether it is) are streamed and a doc_id on two lines is an error; for a run still going
        or killed, a document's last line counts, at the place of its first (those lines are
        kept in memory until the end)."""
        finished = self.finished if finished is None else finished
        if not finished:
            latest: dict[str, dict[str, Any]] = {}
            for lineno, _, raw in self._raw_lines(finished=False):
                line = self.parse(lineno, raw)
                latest[line["doc_id"]] = line
            yield from latest.values()
            return
        seen: dict[str, int] = {}
        for lineno, _, raw in self._raw_lines(finished=True):
            line = self.parse(lineno, raw)
            first = seen.setdefault(line["doc_id"], lineno)
            if first != lineno:
                raise self._again(lineno, line["doc_id"], first)
            yield line

    def _again(self, lineno: int, doc_id: str, first: int) -> InputError:
        """A finished run's doc_id on a second line."""
        return InputError(f"{self.results}: line {lineno}: doc_id {doc_id!r} again (first on line {first})")

    def line_at(self, fh: IO[bytes], ref: LineRef) -> dict[str, Any]:
        """The line at ``ref`` of ``results.jsonl`` opened as ``fh`` (binary), parsed."""
        return self.parse(ref.lineno, _read_at(fh, ref.offset))

    def result(self, doc_id: str) -> ResultLine:
        """One document's line, validated whole; InputError when the folder has none."""
        ref = self.index().get(doc_id)
        if ref is None:
            raise InputError(f"{self.results}: no line for doc_id {doc_id!r}")
        with self.results.open("rb") as fh:
            return ResultLine.model_validate(self.line_at(fh, ref))


#: The pages eval replaces, by the title factjudge gives them (:func:`~.files.own_page`).
_PAGE_TITLES = {REPORT_MD: "factjudge evaluation report", REPORT_HTML: "factjudge evaluation report",
                REVIEW_HTML: "factjudge review"}
#: How facts.csv begins when factjudge wrote it: its first columns.
_FACTS_CSV_START = b"doc_id,side,id,fact_type,status,"


def _facts_csv(path: Path) -> bool:
    """Whether ``path`` begins as the facts.csv factjudge writes."""
    with path.open("rb") as f:
        return f.read(len(_FACTS_CSV_START)) == _FACTS_CSV_START


def _temporary(name: str) -> bool:
    """Whether ``name`` is a temporary file of an output being written (:class:`AtomicFile`)."""
    return name.endswith(".tmp") and any(name.startswith(f".{n}.") for n in OWN_NAMES)


class FolderLock:
    """Holds a run folder for one run: a second run into it stops with one line before touching
    anything, instead of interleaving its lines with the first one's (issue #20: two runs into one
    folder left 3,767 distinct doc_ids on 4,000 lines, and exit 0).

    An OS lock on :data:`LOCK`, not a file whose presence is the lock: the OS drops it when the
    process ends however it ends (Ctrl-C, an error, kill -9), so a killed run never blocks the
    next. The standard library's ``fcntl.flock`` on POSIX, ``msvcrt.locking`` on Windows: no
    dependency for it (``filelock`` does the same, and is not one of factjudge's). ``flock`` is
    advisory and may not hold across NFS clients (the same as ``filelock``'s); the file is never
    removed, so two runs can never lock two different files of one name."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / LOCK
        self._fd: int | None = None

    def acquire(self) -> FolderLock:
        """Take the lock (making the folder), or raise a one-line InputError when another process
        holds it."""
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
        try:
            _lock(fd)
        except OSError:
            holder = _read_pid(fd)
            os.close(fd)
            raise InputError(f"{self.folder}: in use by another factjudge run{holder}; wait for it to "
                             "end, or give another output folder") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return self

    def release(self) -> None:
        """Let the folder go (closing the file drops the lock)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> FolderLock:
        return self.acquire()

    def __exit__(self, *_: object) -> None:
        self.release()

    def __del__(self) -> None:
        # a run that drops its store without closing it (runners/ray_data.py) lets the folder go
        # when the store goes, not when the process ends: a notebook can run into it again
        self.release()


def _read_pid(fd: int) -> str:
    """`` (process N)`` from the lock file of the run holding it, or nothing."""
    try:
        pid = os.pread(fd, 32, 0).decode("ascii").strip()
    except (OSError, UnicodeDecodeError, AttributeError):  # no os.pread on Windows
        return ""
    return f" (process {pid})" if pid.isdigit() else ""


if sys.platform == "win32":
    import msvcrt

    def _lock(fd: int) -> None:
        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # the first byte; raises OSError when held
else:
    import fcntl

    def _lock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises BlockingIOError when held


def _cut_off_at(path: Path) -> int | None:
    """Where the last line of ``path`` starts when a kill cut it off (no newline), else None."""
    with path.open("rb") as fh:
        pos = size = fh.seek(0, os.SEEK_END)
        while pos > 0:
            step = min(1 << 16, pos)
            pos -= step
            fh.seek(pos)
            block = fh.read(step)
            if pos + step == size and block.endswith(b"\n"):
                return None
            newline = block.rfind(b"\n")
            if newline >= 0:
                return pos + newline + 1
    return 0 if size else None


class ResultStore:
    """``results.jsonl``, append-only while running; indexed by doc_id for resuming. ``repair``
    cuts a last line cut off by a kill from the file (a dry run or a look-up changes nothing)."""

    def __init__(self, path: Path, repair: bool = True) -> None:
        self.path = path
        self.folder = RunFolder(path.parent)
        #: doc_id -> where its latest complete line is
        self.index: dict[str, LineRef] = {}
        #: When the finished run in this folder made its results (its summary's provenance), if any.
        self.created: str | None = self.folder.created()
        #: The folder's lock while a run writes it (set by the runner; :meth:`close` lets it go).
        self.lock: FolderLock | None = None
        if path.exists():
            try:
                self.index = self.folder.index(finished=False)
            except InputError as exc:  # not written by factjudge: never overwrite it
                raise InputError(f"{exc}; choose another output folder") from None
            end = _cut_off_at(path) if repair else None
            if end is not None:
                os.truncate(path, end)

    def close(self) -> None:
        """Let the folder go, once the run is over (however it ended)."""
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    def lines(self) -> Iterator[dict[str, Any]]:
        """Every line of the file once :meth:`rewrite` made it one line per document, parsed
        and checked, streamed in file order."""
        return self.folder.lines(finished=True)

    def reusable(self, info: DocInfo) -> bool:
        hit = self.index.get(info.doc_id)
        return hit is not None and hit.input_sha256 == info.input_sha256 and hit.errors == 0

    def append(self, fh: IO[bytes], doc_id: str, input_sha256: str, result: JudgeResult) -> None:
        self.append_line(fh, doc_id, input_sha256, result_line(doc_id, input_sha256, result),
                         result.metrics.errors)

    def append_line(self, fh: IO[bytes], doc_id: str, input_sha256: str, data: bytes, errors: int) -> None:
        """Append a document's line as :func:`result_line` wrote it (in this process or another),
        ``errors`` its ERROR facts."""
        offset = fh.tell()
        fh.write(data)
        fh.flush()  # a killed process keeps every finished line
        # line number 0: not known without counting the lines (only error messages use it)
        self.index[doc_id] = LineRef(offset, 0, input_sha256, errors)

    def rewrite(self, order: Sequence[DocInfo]) -> Iterator[dict[str, Any]]:
        """Rewrite the file atomically in dataset order, yielding each line parsed. Once done,
        :attr:`index` points into the rewritten file (a report reads a line again by it)."""
        return (self.folder.with_config(parse_written(raw)) for raw in self._rewritten(order))

    def put_in_order(self, order: Sequence[DocInfo]) -> None:
        """:meth:`rewrite` without parsing a line (they were read as they were written)."""
        for _ in self._rewritten(order):
            pass

    def _rewritten(self, order: Sequence[DocInfo]) -> Iterator[bytes]:
        out = AtomicFile(self.path, binary=True)
        moved: dict[str, LineRef] = {}  # the new places, once the file is in place (the old until then)
        offset = 0
        try:
            with self.path.open("rb") as src:
                for lineno, info in enumerate(order, 1):
                    ref = self.index[info.doc_id]
                    assert ref.input_sha256 == info.input_sha256, info.doc_id
                    raw = _read_at(src, ref.offset)
                    out.handle.write(raw)
                    moved[info.doc_id] = LineRef(offset, lineno, ref.input_sha256, ref.errors)
                    offset += len(raw)
                    yield raw
        except BaseException:
            out.abort()
            raise
        out.commit()
        self.index = moved


def result_line(doc_id: str, input_sha256: str, result: JudgeResult) -> bytes:
    """A document's line of ``results.jsonl``: compact JSON (no space after a separator), the
    newline included. Written by pydantic's serializer: 65 us a 19 KB line of a 20-fact document
    against json's 149 us (its dump of the models, then json.dumps with spaces), the same values
    read back (a value JSON has no form for as json's fallback wrote it: NaN and infinities null,
    a date in ISO form, a key None as "None")."""
    head = to_json({"doc_id": doc_id, "input_sha256": input_sha256})
    # the config is the run's (run.json, summary.json): the readers put it back on a line
    return b"%s,%s\n" % (head[:-1], result.model_dump_json(exclude={"config"}).encode()[1:])


def read_eval_dir(out_dir: Path) -> dict[str, tuple[tuple[int, int, int, int], str]]:
    """doc_id -> (bootstrap key, hash of its gold facts) from a finished eval folder."""
    folder = RunFolder(out_dir)
    if not folder.finished:
        raise InputError(f"{out_dir}: not a finished eval output folder (no {SUMMARY})")
    docs: dict[str, tuple[tuple[int, int, int, int], str]] = {}
    for line in folder.lines(finished=True):
        gold = [own_fields(f) for f in line["gold_facts"]]  # either layout: the same hash
        digest = hashlib.sha256(canonical_json(gold).encode("utf-8")).hexdigest()
        try:
            docs[line["doc_id"]] = (doc_stats(line).key, digest)
        except (ValueError, KeyError, TypeError, AttributeError):
            raise InputError(f"{folder.results}: doc_id {line['doc_id']!r}: not a factjudge "
                             "result line (bad metrics)") from None
    return docs
