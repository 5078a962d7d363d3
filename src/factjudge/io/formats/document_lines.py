"""What the formats of extractors' outputs share (``langextract``, ``records``, ``spacy``,
``gliner``): one document per JSON line, its facts without ids. A format says how one line becomes
a doc_id and its facts (:meth:`DocumentLines.convert`); this class reads the file, numbers the
facts, checks them as a fact file's are, and reads a document's facts again by its byte offset.

**Ids** are made per document, the same on every reading: ``<fact_type>-<n>``, ``n`` the fact's
position among the document's facts of its type (from 1), in the order the tool wrote them
(``medication-2``: the second medication LangExtract found). Reports show these ids.

**doc_ids**, where the format names none of its own (``records``, ``spacy``, ``gliner``): the
top-level key the config's ``columns`` maps ``doc_id`` to, else the first of ``doc_id``,
``document_id`` and ``id`` the line has, else the line number (``"3"``): pair such a file with
gold whose doc_ids are the line numbers, or give each line an id."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ...errors import InputError
from ...models import JudgeConfig
from ..facts import validate_facts
from ..inputs import check_input_kind, empty_file_error, is_empty
from ..jsonl import check_json_value, coerce_id, json_type, parse_json_line, read_line_at
from ..scan import FactEntry, FactLoader, Problem, json_lines

#: Where a line without a doc_id of its own finds one, in this order (after ``columns``' doc_id).
DOC_ID_KEYS = ("doc_id", "document_id", "id")


class DocumentLines:
    """A :class:`~factjudge.io.scan.FactSource` of one document per line. Subclasses set
    ``expected`` (what a line holds, for errors) and implement :meth:`convert`."""

    unit = "line"
    #: What a line should be, named in errors (``LangExtract's annotated document {...}``).
    expected = "one document per line"
    #: Whether a line may be a JSON array (GLiNER's list of entities) rather than an object.
    arrays = False

    def __init__(self, path: Path) -> None:
        self.path = path
        self.name = str(path)
        self.config = JudgeConfig()

    def check(self) -> None:
        check_input_kind(self.path, "JSON lines")
        if is_empty(self.path):
            raise empty_file_error(self.path, self.expected)

    def convert(self, rec: object, lineno: int, prefix: str) -> tuple[str, list[dict[str, Any]]]:
        """One parsed line as its doc_id and its facts, each ``{fact_type, ...}`` without ``id``
        (numbered by the caller); an :class:`InputError` starting with ``prefix`` when the line
        is not what the format writes."""
        raise NotImplementedError

    def _parse(self, raw: bytes, lineno: int) -> tuple[str, list[dict[str, Any]]]:
        prefix = f"{self.path}: line {lineno}"
        rec = parse_json_line(raw, self.path, lineno)
        if not isinstance(rec, dict) and not (self.arrays and isinstance(rec, list)):
            raise InputError(f"{prefix}: expected {self.expected}, got {json_type(rec)}")
        check_json_value(rec, prefix)
        doc_id, facts = self.convert(rec, lineno, prefix)
        counts: dict[str, int] = {}
        numbered = []
        for fact in facts:
            counts[fact["fact_type"]] = n = counts.get(fact["fact_type"], 0) + 1
            own = fact.get("id")  # a record's own id (an Optional left None is none)
            numbered.append({"id": f"{fact['fact_type']}-{n}" if own is None else own,
                             **{k: v for k, v in fact.items() if k != "id"}})
        # checked as a fact file's facts are: a reserved field name is the same one-line error
        return doc_id, validate_facts([(f"line {lineno}", f) for f in numbered], self.name, checked=True)

    def read(self, config: JudgeConfig) -> Iterator[FactEntry | Problem]:
        self.config = config
        for item in json_lines(self.path, self.name, lambda raw, lineno: self._parse(raw, lineno)[0],
                               self._looks_like_a_line):
            yield item if isinstance(item, Problem) else FactEntry(*item)

    def _looks_like_a_line(self, raw: bytes) -> bool:
        return raw.lstrip()[:1] in (b"{", b"[") if self.arrays else raw.lstrip()[:1] == b"{"

    @contextlib.contextmanager
    def opened(self) -> Iterator[FactLoader]:
        with self.path.open("rb") as fh:
            def load(keys: Sequence[int], lines: Sequence[int]) -> list[list[dict[str, Any]]]:
                return [self._parse(read_line_at(fh, off), n)[1] for off, n in zip(keys, lines, strict=True)]

            yield load

    def source_text(self, key: int, lineno: int) -> str | None:
        """The text of the document at ``key`` (a byte offset from :meth:`read`), when its line
        carries it (LangExtract's and spaCy's ``text``): for showing a fact's evidence in it."""
        with self.path.open("rb") as fh:
            rec = parse_json_line(read_line_at(fh, key), self.path, lineno)
        text = rec.get("text") if isinstance(rec, dict) else None
        return text if isinstance(text, str) else None


def line_doc_id(rec: Any, lineno: int, prefix: str, config: JudgeConfig) -> tuple[str, str | None]:
    """A line's doc_id and the key it came from (None: the line number), as the module docstring
    says: the key ``columns`` maps ``doc_id`` to, else ``doc_id``, ``document_id``, ``id``."""
    if isinstance(rec, dict):
        named = config.columns.get("doc_id")
        if named is not None:
            if named not in rec:
                raise InputError(f"{prefix}: no key {named!r} (the doc_id, as the config key columns "
                                 f"names it); keys found: {', '.join(list(rec)[:12]) or 'none'}")
            return coerce_id(rec[named], named, prefix), named
        for key in DOC_ID_KEYS:
            if key in rec:
                return coerce_id(rec[key], key, prefix), key
    return str(lineno), None


def check_span(start: Any, end: Any, prefix: str) -> None:
    """An :class:`InputError` unless ``start`` and ``end`` are character offsets, in order."""
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end)):
        raise InputError(f"{prefix}: 'start' and 'end' must be character offsets (integers), got "
                         f"{json_type(start)} and {json_type(end)}")
    if not 0 <= start <= end:
        raise InputError(f"{prefix}: span {start}-{end} is no span of characters (0 <= start <= end)")


def span_text(text: str, start: Any, end: Any, prefix: str) -> str:
    """``text[start:end]``, the characters a span names, or an :class:`InputError` saying why
    the span does not fit the text."""
    check_span(start, end, prefix)
    if end > len(text):
        raise InputError(f"{prefix}: span {start}-{end} lies outside the document's text "
                         f"({len(text)} characters)")
    return text[start:end]
