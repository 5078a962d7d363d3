"""Datasets for ``eval``: a ``.jsonl`` of documents, or gold and predicted files of facts that
carry their ``doc_id``. Read lazily: ``scan()`` validates every line and keeps per document only
its id, an input hash and its number of questions; ``documents()`` reads them again when judged.
The scan itself is one, for every format: :mod:`.scan`."""
from __future__ import annotations

import contextlib
import json
import tempfile
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from ..errors import InputError
from .facts import validate_fact_list, validate_facts
from .inputs import check_input_kind, empty_file_error, is_empty, rename_fields
from .jsonl import json_type, jsonl_lines, parse_json_line
from .scan import (
    Dataset,
    DocInfo,
    Document,
    FactEntry,
    FactLoader,
    Located,
    PairedFacts,
    Problem,
    ScannedDataset,
    doc_id_of,
    not_json_lines,
)
from .tables import DATASET_REQUIRED, is_table, iter_table_rows


def _parse_line(raw: bytes, path: Path, lineno: int, unit: str = "line") -> dict[str, Any]:
    """One JSON object per line; ``unit`` names what the line stands for in ``path`` (``row``:
    the JSON-lines copy of a table, line N = row N)."""
    rec = parse_json_line(raw, path, lineno, unit=unit)
    if not isinstance(rec, dict):
        raise InputError(f"{path}: {unit} {lineno}: expected a JSON object, got {json_type(rec)}")
    return rec


def _is_object(raw: bytes) -> bool:
    """Whether a line looks like a JSON object (what a JSON-lines file of facts or documents
    holds), before it is parsed."""
    return raw.lstrip(b"\xef\xbb\xbf \t\r").startswith(b"{")


def _read_at(fh: IO[bytes], offset: int) -> bytes:
    fh.seek(offset)
    return fh.readline()


class DatasetLines:
    """``DATASET.jsonl``: one document per line, ``{"doc_id", "gold_facts", "predicted_facts"}``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sources = [str(path)]
        #: The config key ``columns`` (set by ``read``).
        self.columns: dict[str, str] = {}
        self._offsets, self._lines = array("q"), array("q")

    def _document(self, raw: bytes, lineno: int) -> Document:
        prefix = f"{self.path}: line {lineno}"
        rec = rename_fields(_parse_line(raw, self.path, lineno), self.columns, prefix)
        if "gold_facts" not in rec and "predicted_facts" not in rec and "fact_type" in rec:
            raise InputError(f"{prefix}: this is a fact, not a document {{doc_id, gold_facts, "
                             "predicted_facts}: give fact files as --gold G --predicted P (each fact "
                             "with its doc_id), or one document's facts to factjudge judge GOLD PREDICTED")
        doc_id = doc_id_of(rec, prefix)
        sides = []
        for key in ("gold_facts", "predicted_facts"):
            facts = rec.get(key)
            if not isinstance(facts, list):
                raise InputError(f"{prefix} (doc_id {doc_id!r}): {key!r} must be a list of facts")
            sides.append(validate_fact_list(facts, f"{prefix}: {key}", self.columns, checked=True))
        return Document(doc_id, *sides)

    def read(self, columns: Mapping[str, str]) -> Iterator[Located | Problem]:
        self._offsets, self._lines, self.columns = array("q"), array("q"), dict(columns)
        check_input_kind(self.path)
        if is_empty(self.path):
            raise empty_file_error(self.path, "one document per line, {\"doc_id\", \"gold_facts\", "
                                   "\"predicted_facts\"}")
        bad, first, objects = 0, None, 0
        for lineno, offset, raw in jsonl_lines(self.path):
            objects += _is_object(raw)
            try:
                doc = self._document(raw, lineno)
            except InputError as exc:
                bad, first = bad + 1, first or str(exc)
                yield Problem(str(self.path), lineno, str(exc))
                continue
            self._offsets.append(offset)
            self._lines.append(lineno)
            yield Located(str(self.path), lineno, f"line {lineno}", len(self._offsets) - 1, doc)
        not_json_lines(str(self.path), bad, first, objects)

    def read_again(self, keys: Iterable[int]) -> Iterator[Document]:
        with self.path.open("rb") as fh:
            for key in keys:
                yield self._document(_read_at(fh, self._offsets[key]), self._lines[key])

    def warnings(self) -> list[str]:
        return []


class FactLines:
    """A ``.jsonl`` file of one side's facts, one per line, each with its ``doc_id``. ``file`` is
    what is read (another file for a table's JSON-lines copy, line N = row N, named ``row``)."""

    def __init__(self, path: Path, file: Path | None = None, unit: str = "line") -> None:
        self.path, self.file, self.unit = path, file or path, unit
        self.name = str(path)
        #: The config key ``columns`` (set by ``read``).
        self.columns: dict[str, str] = {}

    def check(self) -> None:
        check_input_kind(self.path)

    def _record(self, raw: bytes, lineno: int) -> dict[str, Any]:
        """One line parsed, with the config key ``columns`` applied (a table's copy has its
        header renamed already)."""
        rec = _parse_line(raw, self.path, lineno, self.unit)
        return rec if self.unit == "row" else rename_fields(rec, self.columns, f"{self.path}: {self.unit} {lineno}")

    def _fact(self, lineno: int, rec: dict[str, Any]) -> dict[str, Any]:
        fact = {k: v for k, v in rec.items() if k != "doc_id"}  # doc_id belongs to the document
        return validate_facts([(f"{self.unit} {lineno}", fact)], self.name, checked=True)[0]

    def read(self, columns: Mapping[str, str]) -> Iterator[FactEntry | Problem]:
        self.columns = dict(columns)
        bad, first, objects = 0, None, 0
        for lineno, offset, raw in jsonl_lines(self.file):
            objects += _is_object(raw)
            try:
                rec = self._record(raw, lineno)
                doc_id = doc_id_of(rec, f"{self.path}: {self.unit} {lineno}")
                self._fact(lineno, rec)
            except InputError as exc:
                bad, first = bad + 1, first or str(exc)
                yield Problem(self.name, lineno, str(exc))
                continue
            yield FactEntry(lineno, offset, doc_id)
        not_json_lines(self.name, bad, first, objects)

    @contextlib.contextmanager
    def opened(self) -> Iterator[FactLoader]:
        with self.file.open("rb") as fh:
            def load(keys: Sequence[int], lines: Sequence[int]) -> list[dict[str, Any]]:
                return [self._fact(n, self._record(_read_at(fh, off), n))
                        for off, n in zip(keys, lines, strict=True)]

            yield load


class TableFacts(FactLines):
    """A CSV, TSV or Parquet file of one side's facts, one per row: copied once into JSON lines
    (row N on line N) when read, so it is read again by offset like JSON lines; the copy lives as
    long as the source."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, unit="row")
        self._spool: tempfile.TemporaryDirectory[str] | None = None

    def read(self, columns: Mapping[str, str]) -> Iterator[FactEntry | Problem]:
        if self._spool is None:
            self._spool = tempfile.TemporaryDirectory(prefix="factjudge-")
        self.file = Path(self._spool.name) / "facts.jsonl"
        with self.file.open("w", encoding="utf-8") as out:
            line = 1
            for row, rec in iter_table_rows(self.path, DATASET_REQUIRED, columns):
                out.write("\n" * (row - line))  # blank lines for rows the table skipped
                out.write(json.dumps(rec, ensure_ascii=False) + "\n")
                line = row + 1
        return super().read(columns)


def fact_source(path: Path) -> FactLines:
    """One side's fact file, read as its suffix says."""
    return TableFacts(path) if is_table(path) else FactLines(path)


class JsonlDataset(ScannedDataset):
    """``DATASET.jsonl``: one document per line, ``{"doc_id", "gold_facts", "predicted_facts"}``."""

    def __init__(self, path: Path) -> None:
        super().__init__(DatasetLines(Path(path)))
        self.path = Path(path)


class SplitDataset(ScannedDataset):
    """``--gold G.jsonl --predicted P.jsonl``: one fact per line (or table row), grouped by its
    ``doc_id``."""

    def __init__(self, gold: Path, predicted: Path) -> None:
        super().__init__(PairedFacts(fact_source(Path(gold)), fact_source(Path(predicted))))


__all__ = ["Dataset", "DatasetLines", "DocInfo", "Document", "FactLines", "JsonlDataset", "Problem",
           "SplitDataset", "TableFacts", "fact_source"]
