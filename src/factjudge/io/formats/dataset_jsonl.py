"""Format ``dataset``: a ``.jsonl`` of documents, one per line, ``{"doc_id", "gold_facts",
"predicted_facts"}`` (both sides in one input). The file to copy for a format of whole documents."""
from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import cast

from ...errors import InputError
from ...models import JudgeConfig
from ..facts import validate_fact_list
from ..inputs import check_input_kind, empty_file_error, is_empty, rename_fields
from ..jsonl import lines_before, middle_line_start, parse_json_line, parse_object_line, read_line_at
from ..scan import Document, LinePart, Located, Problem, doc_id_of, json_lines

#: The size from which a dataset file is scanned in two halves, the second on another core
#: (:meth:`DatasetLines.halves`). The scan costs ~0.035 s a MB (2.6 KB a document of 20 facts:
#: 100,000 in 8.4 s, 4.5 s in two halves); the split ~0.01 s and 0.5 ms a MB (the fork, the child's
#: count of the first half's lines, the second half's keys sent back and merged), so from 16 MB
#: (0.55 s) some 0.25 s is won.
SPLIT_BYTES = 16 << 20


class DatasetLines:
    """A :class:`~factjudge.io.scan.DocumentSource`: each line is checked when read, and indexed
    (its byte offset and line number) to be read again when its document is judged."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sources = [str(path)]
        #: The config key ``columns`` (set by ``read``).
        self.columns: dict[str, str] = {}
        self._offsets, self._lines = array("q"), array("q")
        #: Whether a line's record has a ``text`` (set by ``read``): else :meth:`texts` reads none.
        self._text = False
        #: From what size :meth:`halves` splits the file (tests split small ones).
        self.split_bytes = SPLIT_BYTES
        self._parts: list[LinePart] = []

    def _document(self, raw: bytes, lineno: int) -> Document:
        prefix = f"{self.path}: line {lineno}"
        rec = parse_object_line(raw, self.path, lineno)
        if "text" in rec:  # what texts() reads (a look at the bytes: 1.5 us a 2.6-KB line, this 0.03)
            self._text = True
        rec = rename_fields(rec, self.columns, prefix)
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

    def _start(self, config: JudgeConfig) -> None:
        self._offsets, self._lines, self.columns = array("q"), array("q"), dict(config.columns)
        self._text = False
        check_input_kind(self.path)
        if is_empty(self.path):
            raise empty_file_error(self.path, "one document per line, {\"doc_id\", \"gold_facts\", "
                                   "\"predicted_facts\"}")

    def read(self, config: JudgeConfig) -> Iterator[Located | Problem]:
        self._start(config)
        yield from self._read(None)

    def _read(self, part: LinePart | None) -> Iterator[Located | Problem]:
        for item in json_lines(self.path, str(self.path), self._document, part=part):
            if isinstance(item, Problem):
                yield item
                continue
            lineno, offset, doc = item
            self._offsets.append(offset)
            self._lines.append(lineno)
            yield Located(str(self.path), lineno, f"line {lineno}", len(self._offsets) - 1, doc)

    def halves(self, config: JudgeConfig) -> tuple[Iterator[Located | Problem],
                                                   Iterator[Located | Problem]] | None:
        """The lines before and from the first line that starts after the middle byte, when the
        file holds :attr:`split_bytes` or more (a :class:`~factjudge.io.scan.SplitSource`)."""
        middle = middle_line_start(self.path)
        if middle is None or middle[1] < self.split_bytes or middle[0] >= middle[1]:
            return None  # read() then says what is wrong with the file, if anything
        self._start(config)
        cut = middle[0]
        self._parts = [LinePart(0, cut), LinePart(cut)]

        def second() -> Iterator[Located | Problem]:  # in the child: its keys from 0
            self._offsets, self._lines = array("q"), array("q")
            self._parts[1].first_line = lines_before(self.path, cut) + 1
            yield from self._read(self._parts[1])

        return self._read(self._parts[0]), second()

    def kept(self) -> object:
        return self._offsets, self._lines, self._text, self._parts[1]

    def join(self, kept: object) -> int:
        offsets, lines, text, part = cast("tuple[array[int], array[int], bool, LinePart]", kept)
        shift = len(self._offsets)
        self._offsets.extend(offsets)
        self._lines.extend(lines)
        self._text = self._text or text
        LinePart.check(str(self.path), [self._parts[0], part])
        return shift

    def read_again(self, keys: Iterable[int]) -> Iterator[Document]:
        with self.path.open("rb") as fh:
            for key in keys:
                yield self._document(read_line_at(fh, self._offsets[key]), self._lines[key])

    def texts(self, keys: Iterable[int]) -> Iterator[str | None]:
        """A line's ``text`` (a string), when it has one: the document the facts were taken from."""
        if not self._text:  # no line has one (most datasets): none read again (4 us a 2.6-KB line)
            for _ in keys:
                yield None
            return
        with self.path.open("rb") as fh:
            for key in keys:
                raw = read_line_at(fh, self._offsets[key])
                if b'"text"' not in raw:  # most datasets carry none: no second parse of every line
                    yield None
                    continue
                rec = parse_json_line(raw, self.path, self._lines[key])
                text = rec.get("text") if isinstance(rec, dict) else None
                yield text if isinstance(text, str) else None

    def warnings(self) -> list[str]:
        return []
