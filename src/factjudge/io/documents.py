"""``eval --documents FILE``: the documents' texts, given beside the facts, one per line:
``{"doc_id": "a1", "text": "..."}``. For showing each fact's evidence in its source and telling
a fact the text states from one it does not (reports, summary.json's ``source``); never judged.

The file is checked and indexed once (a byte offset per document), and a text is read only when
asked for, so a large corpus is never held in memory."""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ..errors import InputError
from .inputs import check_input_kind, empty_file_error, is_empty
from .jsonl import coerce_id, json_type, jsonl_lines, parse_object_line, read_line_at

EXPECTED = 'one document per line, {"doc_id", "text"}'


class DocumentTexts:
    """The texts of a documents file, by doc_id."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._at: dict[str, tuple[int, int]] = {}
        check_input_kind(path, "JSON lines")
        if is_empty(path):
            raise empty_file_error(path, EXPECTED)
        for lineno, offset, raw in jsonl_lines(path):
            doc_id = self._check(raw, lineno)[0]
            if doc_id in self._at:
                raise InputError(f"{path}: line {lineno}: duplicate doc_id {doc_id!r}, first seen at line "
                                 f"{self._at[doc_id][1]}")
            self._at[doc_id] = (offset, lineno)

    def _check(self, raw: bytes, lineno: int) -> tuple[str, str]:
        prefix = f"{self.path}: line {lineno}"
        rec = parse_object_line(raw, self.path, lineno)
        if "doc_id" not in rec or "text" not in rec:
            raise InputError(f"{prefix}: expected {EXPECTED}; keys found: {', '.join(list(rec)[:12]) or 'none'}")
        doc_id = coerce_id(rec["doc_id"], "doc_id", prefix)
        if not isinstance(rec["text"], str):
            raise InputError(f"{prefix} (doc_id {doc_id!r}): 'text' must be a string, got {json_type(rec['text'])}")
        return doc_id, rec["text"]

    def __len__(self) -> int:
        return len(self._at)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._at

    def unmatched(self, doc_ids: Iterable[str]) -> str | None:
        """A warning when none of ``doc_ids`` (a run's) has a text here: the check asked for
        would find nothing, and did so without a word (a case or prefix apart: ``D1`` vs ``d1``)."""
        ids = list(doc_ids)
        if not ids or not self._at or any(d in self._at for d in ids):
            return None
        return (f"{self.path}: none of the run's {len(ids)} doc_ids has a text in it (the run's first "
                f"{ids[0]!r}, the file's first {next(iter(self._at))!r}): the source check found nothing")

    def text(self, doc_id: str) -> str | None:
        """The text of ``doc_id``, None when the file has none for it."""
        at = self._at.get(doc_id)
        if at is None:
            return None
        with self.path.open("rb") as fh:
            return self._check(read_line_at(fh, at[0]), at[1])[1]
