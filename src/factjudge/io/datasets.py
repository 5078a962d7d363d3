"""Datasets for ``eval``: a ``.jsonl`` of documents, or gold and predicted files of facts that
carry their ``doc_id``. Read lazily: ``scan()`` validates every line and keeps per document only
its id, an input hash and its number of questions; ``documents()`` reads them again when judged."""
from __future__ import annotations

import hashlib
import json
import tempfile
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

from ..core.scope import field_check, in_scope_facts
from ..errors import InputError
from ..models import DIRECTIONS, Direction, JudgeConfig
from ..util.jsonutil import canonical_json
from .facts import validate_fact_list, validate_facts
from .inputs import check_input_kind, empty_file_error, is_empty, rename_fields
from .jsonl import coerce_id, json_type, jsonl_lines, parse_json_line
from .tables import DATASET_REQUIRED, is_table, iter_table_rows

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
    #: The input files, for provenance.
    sources: list[str]
    fact_types: set[str]
    #: What ``scan`` noticed about the inputs as a whole (eval prints them and keeps them in
    #: summary.json): tolerances for fields no fact has, doc_ids on one side only.
    warnings: list[str]

    def scan(self, config: JudgeConfig, salt: str) -> list[Problem]: ...

    def documents(self, skip: set[str] | frozenset[str] = frozenset()) -> Iterator[Document]: ...


def _doc_hash(salt: str, doc: Document) -> str:
    material = canonical_json({"salt": salt, "doc_id": doc.doc_id, "gold_facts": doc.gold,
                               "predicted_facts": doc.predicted})
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


def _questions(doc: Document, config: JudgeConfig) -> int:
    """Judge questions of one document (as the pipeline counts them), for an exact progress total."""
    g, p = len(in_scope_facts(doc.gold, config)), len(in_scope_facts(doc.predicted, config))
    return (g if p else 0) + (p if g else 0)


def _doc_id(rec: dict[str, Any], prefix: str) -> str:
    return coerce_id(rec.get("doc_id"), "doc_id", prefix)


def _parse_line(raw: bytes, path: Path, lineno: int, unit: str = "line") -> dict[str, Any]:
    """One JSON object per line; ``unit`` names what the line stands for in ``path`` (``row``:
    the JSON-lines copy of a table, line N = row N)."""
    rec = parse_json_line(raw, path, lineno, unit=unit)
    if not isinstance(rec, dict):
        raise InputError(f"{path}: {unit} {lineno}: expected a JSON object, got {json_type(rec)}")
    return rec


def _not_json_lines(path: Path, problems: list[Problem], objects: int) -> None:
    """A file none of whose lines is a JSON object is not JSON lines at all (a spreadsheet or
    another file given by mistake): one error, no ``--skip-invalid`` hint, as skipping every line
    would score nothing on that side with exit 0."""
    mine = [p for p in problems if p.file == str(path)]
    if mine and not objects:
        first = mine[0].message.removeprefix(f"{path}: ")
        raise InputError(f"{path}: not a JSON-lines file: none of its {len(mine)} line(s) is a JSON "
                         f"object ({first})")


def _field_names(doc: Document, into: set[str]) -> None:
    for fact in (*doc.gold, *doc.predicted):
        into.update(fact)


def _is_object(raw: bytes) -> bool:
    """Whether a line looks like a JSON object (what a JSON-lines file of facts or documents
    holds), before it is parsed."""
    return raw.lstrip(b"\xef\xbb\xbf \t\r").startswith(b"{")


def _read_at(fh: IO[bytes], offset: int) -> bytes:
    fh.seek(offset)
    return fh.readline()


class JsonlDataset:
    """``DATASET.jsonl``: one document per line, ``{"doc_id", "gold_facts", "predicted_facts"}``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sources = [str(path)]
        self.infos: list[DocInfo] = []
        #: Every fact_type the valid documents hold (set by ``scan``).
        self.fact_types: set[str] = set()
        self.warnings: list[str] = []
        #: The config key ``columns`` (set by ``scan``).
        self.columns: dict[str, str] = {}
        self._offsets, self._lines = array("q"), array("q")

    def _document(self, raw: bytes, lineno: int) -> Document:
        prefix = f"{self.path}: line {lineno}"
        rec = rename_fields(_parse_line(raw, self.path, lineno), self.columns, prefix)
        if "gold_facts" not in rec and "predicted_facts" not in rec and "fact_type" in rec:
            raise InputError(f"{prefix}: this is a fact, not a document {{doc_id, gold_facts, "
                             "predicted_facts}: give fact files as --gold G --predicted P (each fact "
                             "with its doc_id), or one document's facts to factjudge judge GOLD PREDICTED")
        doc_id = _doc_id(rec, prefix)
        sides = []
        for key in ("gold_facts", "predicted_facts"):
            facts = rec.get(key)
            if not isinstance(facts, list):
                raise InputError(f"{prefix} (doc_id {doc_id!r}): {key!r} must be a list of facts")
            sides.append(validate_fact_list(facts, f"{prefix}: {key}", self.columns, checked=True))
        return Document(doc_id, *sides)

    def scan(self, config: JudgeConfig, salt: str) -> list[Problem]:
        self.infos, self._offsets, self._lines = [], array("q"), array("q")  # a re-scan starts over
        self.fact_types, self.columns = set(), dict(config.columns)
        check_input_kind(self.path)
        if is_empty(self.path):
            raise empty_file_error(self.path, "one document per line, {\"doc_id\", \"gold_facts\", "
                                   "\"predicted_facts\"}")
        problems: list[Problem] = []
        seen: dict[str, int] = {}
        names: set[str] = set()
        objects = 0
        for lineno, offset, raw in jsonl_lines(self.path):
            try:
                objects += _is_object(raw)
                doc = self._document(raw, lineno)
                if doc.doc_id in seen:
                    raise InputError(f"{self.path}: line {lineno}: duplicate doc_id {doc.doc_id!r}, "
                                     f"first seen at line {seen[doc.doc_id]}")
            except InputError as exc:
                problems.append(Problem(str(self.path), lineno, str(exc)))
                continue
            seen[doc.doc_id] = lineno
            self.infos.append(DocInfo(doc.doc_id, _doc_hash(salt, doc), _questions(doc, config)))
            self.fact_types.update(f["fact_type"] for f in (*doc.gold, *doc.predicted))
            _field_names(doc, names)
            self._offsets.append(offset)
            self._lines.append(lineno)
        _not_json_lines(self.path, problems, objects)
        self.warnings = field_check(config, names, str(self.path))
        return problems

    def documents(self, skip: set[str] | frozenset[str] = frozenset()) -> Iterator[Document]:
        with self.path.open("rb") as fh:
            for info, offset, lineno in zip(self.infos, self._offsets, self._lines, strict=False):
                if info.doc_id not in skip:
                    yield self._document(_read_at(fh, offset), lineno)


@dataclass
class _Side:
    """Where one document's facts sit in one file: byte offsets and line numbers."""

    offsets: array[int] = field(default_factory=lambda: array("q"))
    lines: array[int] = field(default_factory=lambda: array("q"))


class SplitDataset:
    """``--gold G.jsonl --predicted P.jsonl``: one fact per line, grouped by its ``doc_id``.

    The files are indexed (two integers per fact line: byte offset and line number) rather than
    loaded, so facts and prompts are read only when their document is judged. A document on one
    side only is still scored."""

    def __init__(self, gold: Path, predicted: Path) -> None:
        self.paths: dict[Direction, Path] = {"gold": gold, "predicted": predicted}
        self.sources = [str(gold), str(predicted)]
        self.infos: list[DocInfo] = []
        #: Every fact_type the valid documents hold (set by ``scan``).
        self.fact_types: set[str] = set()
        self.warnings: list[str] = []
        self._index: dict[str, dict[Direction, _Side]] = {}
        #: What is read per side: the file itself, or a JSON-lines copy of a table (line N = row N)
        self._files = dict(self.paths)
        self._unit: dict[Direction, str] = {"gold": "line", "predicted": "line"}
        self._spool: tempfile.TemporaryDirectory[str] | None = None
        #: The config key ``columns`` (set by ``scan``).
        self.columns: dict[str, str] = {}

    def _fact(self, side: Direction, lineno: int, rec: dict[str, Any]) -> dict[str, Any]:
        fact = {k: v for k, v in rec.items() if k != "doc_id"}  # doc_id belongs to the document
        where = f"{self._unit[side]} {lineno}"
        return validate_facts([(where, fact)], str(self.paths[side]), checked=True)[0]

    def _record(self, side: Direction, raw: bytes, lineno: int) -> dict[str, Any]:
        """One line parsed, with the config key ``columns`` applied (a table's copy has its
        header renamed already)."""
        path, unit = self.paths[side], self._unit[side]
        rec = _parse_line(raw, path, lineno, unit)
        return rec if unit == "row" else rename_fields(rec, self.columns, f"{path}: {unit} {lineno}")

    def _load(self, side: Direction, where: _Side, fh: IO[bytes]) -> list[tuple[int, dict[str, Any]]]:
        return [(n, self._record(side, _read_at(fh, off), n))
                for off, n in zip(where.offsets, where.lines, strict=False)]

    def _spool_tables(self) -> None:
        """A CSV, TSV or Parquet side is copied once into JSON lines (row N on line N), so tables
        are read by offset like JSON lines; the copy lives as long as the dataset."""

        for side, path in self.paths.items():
            if not is_table(path):
                continue
            if self._spool is None:
                self._spool = tempfile.TemporaryDirectory(prefix="factjudge-")
            copy = Path(self._spool.name) / f"{side}.jsonl"
            with copy.open("w", encoding="utf-8") as out:
                line = 1
                for row, rec in iter_table_rows(path, DATASET_REQUIRED, self.columns):
                    out.write("\n" * (row - line))  # blank lines for rows the table skipped
                    out.write(json.dumps(rec, ensure_ascii=False) + "\n")
                    line = row + 1
            self._files[side], self._unit[side] = copy, "row"

    def scan(self, config: JudgeConfig, salt: str) -> list[Problem]:
        self.infos, self._index = [], {}  # a re-scan starts over
        self.fact_types, self.columns = set(), dict(config.columns)
        self._files, self._unit = dict(self.paths), {"gold": "line", "predicted": "line"}
        for path in self.paths.values():
            check_input_kind(path)
        problems: list[Problem] = []
        names: set[str] = set()
        self._spool_tables()
        # pass 1: each line on its own, and where each document's lines are
        for side, path in self.paths.items():
            objects = 0
            for lineno, offset, raw in jsonl_lines(self._files[side]):
                prefix = f"{path}: {self._unit[side]} {lineno}"
                objects += _is_object(raw)
                try:
                    rec = self._record(side, raw, lineno)
                    doc_id = _doc_id(rec, prefix)
                    self._fact(side, lineno, rec)
                except InputError as exc:
                    problems.append(Problem(str(path), lineno, str(exc)))
                    continue
                sides = self._index.setdefault(doc_id, {"gold": _Side(), "predicted": _Side()})
                sides[side].offsets.append(offset)
                sides[side].lines.append(lineno)
            _not_json_lines(path, problems, objects)
        # pass 2: one document at a time, for duplicate ids and the input hash
        handles = {side: path.open("rb") for side, path in self._files.items()}
        try:
            for doc_id, sides in self._index.items():
                facts: dict[Direction, list[dict[str, Any]]] = {}
                for side, where in sides.items():
                    path, kept = self.paths[side], _Side()
                    seen: dict[str, int] = {}
                    facts[side] = []
                    for (lineno, rec), offset in zip(self._load(side, where, handles[side]),
                                                     where.offsets, strict=False):
                        fact = self._fact(side, lineno, rec)
                        unit = self._unit[side]
                        if fact["id"] in seen:
                            problems.append(Problem(str(path), lineno, (
                                f"{path}: {unit} {lineno} (id {fact['id']!r}): duplicate id in "
                                f"document {doc_id!r}, first seen at {unit} {seen[fact['id']]}")))
                            continue
                        seen[fact["id"]] = lineno
                        facts[side].append(fact)
                        kept.offsets.append(offset)
                        kept.lines.append(lineno)
                    sides[side] = kept
                doc = Document(doc_id, facts["gold"], facts["predicted"])
                self.infos.append(DocInfo(doc_id, _doc_hash(salt, doc), _questions(doc, config)))
                self.fact_types.update(f["fact_type"] for f in (*doc.gold, *doc.predicted))
                _field_names(doc, names)
        finally:
            for fh in handles.values():
                fh.close()
        problems.sort(key=lambda p: (p.file != str(self.paths["gold"]), p.line))
        self.warnings = field_check(config, names, " and ".join(self.sources))
        self.warnings += self._unpaired()
        return problems

    def _unpaired(self) -> list[str]:
        """A warning when documents have gold facts only AND others predicted facts only: doc_ids
        spelled differently on the two sides (``1`` vs ``01``) never pair, and every fact then
        counts as missed or spurious without a word. One side alone is normal (a system that
        found nothing in a document, a document without gold facts)."""
        only: dict[Direction, list[str]] = {"gold": [], "predicted": []}
        for doc_id, sides in self._index.items():
            has = [s for s in DIRECTIONS if sides[s].lines]
            if len(has) == 1:
                only[has[0]].append(doc_id)
        if not (only["gold"] and only["predicted"]):
            return []
        gold, pred = (f"({', '.join(repr(i if len(i) <= 40 else i[:37] + '...') for i in ids[:2])}"
                      f"{', ...' if len(ids) > 2 else ''})" for ids in only.values())
        return [f"{len(only['gold'])} document(s) have gold facts only {gold} and "
                f"{len(only['predicted'])} predicted facts only {pred} (of {len(self._index)}): "
                "doc_ids are compared exactly, so their facts count as missed and spurious; check "
                "that both files spell the doc_ids the same way"]

    def documents(self, skip: set[str] | frozenset[str] = frozenset()) -> Iterator[Document]:
        handles = {side: path.open("rb") for side, path in self._files.items()}
        try:
            for info in self.infos:
                if info.doc_id in skip:
                    continue
                sides = self._index[info.doc_id]
                gold, pred = ([self._fact(s, n, rec)
                               for n, rec in self._load(s, sides[s], handles[s])]
                              for s in DIRECTIONS)
                yield Document(info.doc_id, gold, pred)
        finally:
            for fh in handles.values():
                fh.close()


