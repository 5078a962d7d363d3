"""Format ``facts``: a ``.jsonl`` of one side's facts, one per line, each with its ``doc_id``. The
file to copy for a format of facts (one side; documents are formed by their doc_ids)."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ...models import JudgeConfig
from ..facts import validate_numbered
from ..inputs import check_input_kind, rename_fields
from ..jsonl import named_doc_id, parse_object_line, read_line_at
from ..scan import FactEntry, FactLoader, Problem, doc_id_of, json_lines


class FactLines:
    """A :class:`~factjudge.io.scan.FactSource`. ``file`` is what is read: another file for a
    table's JSON-lines copy (line N = row N, ``unit`` ``row``, its header renamed already)."""

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
        rec = parse_object_line(raw, self.path, lineno, self.unit)
        if self.unit == "row" or not self.columns:  # nothing to rename: no name of the line made
            return rec
        renamed: dict[str, Any] = rename_fields(rec, self.columns, f"{self.path}: {self.unit} {lineno}")
        return renamed

    def _fact(self, lineno: int, rec: dict[str, Any]) -> dict[str, Any]:
        fact = {k: v for k, v in rec.items() if k != "doc_id"}  # doc_id belongs to the document
        return validate_numbered([(lineno, fact)], self.name, self.unit, checked=True)[0]

    def read(self, config: JudgeConfig) -> Iterator[FactEntry | Problem]:
        self.columns = dict(config.columns)
        for item in json_lines(self.file, self.name, self._checked_doc_id, doc_of=self._doc_of):
            yield item if isinstance(item, Problem) else FactEntry(*item)

    def _doc_of(self, raw: bytes) -> str | None:
        """The document a refused line belongs to, if it can be told: ``--skip-invalid`` leaves
        that document out rather than score it short of a fact (a table's copy is renamed already)."""
        return named_doc_id(raw, "doc_id" if self.unit == "row" else self.columns.get("doc_id", "doc_id"))

    def _checked_doc_id(self, raw: bytes, lineno: int) -> str:
        """The doc_id of a line whose fact is valid (else the line's one-line error)."""
        rec = self._record(raw, lineno)
        doc_id = rec.get("doc_id")
        if type(doc_id) is not str or not doc_id.strip():  # what doc_id_of returns as it is; else its message
            doc_id = doc_id_of(rec, f"{self.path}: {self.unit} {lineno}")
        self._fact(lineno, rec)
        return doc_id

    def source_text(self, key: int, lineno: int) -> str | None:
        return None  # a fact per line: no document's text

    @contextlib.contextmanager
    def opened(self) -> Iterator[FactLoader]:
        with self.file.open("rb") as fh:
            def load(keys: Sequence[int], lines: Sequence[int]) -> list[list[dict[str, Any]]]:
                return [[self._fact(n, self._record(read_line_at(fh, off), n))]  # one fact a line
                        for off, n in zip(keys, lines, strict=True)]

            yield load
