"""Format ``records``: one JSON object per line in your own schema, as a Pydantic model's
``model_dump()`` (``model_dump_json()``) or an OpenAI structured output (the message's JSON
content) writes it (https://docs.pydantic.dev/latest/concepts/serialization/,
https://platform.openai.com/docs/guides/structured-outputs)::

    {"invoice_number": "INV-7", "vendor": "Acme", "total": 148.16, "po_number": null,
     "line_items": [{"sku": "A1", "qty": 2, "taxes": [{"kind": "VAT", "rate": 0.2}]}]}

- a key whose value is a list of objects is a fact type (named by the key); each object is a
  fact, its own lists kept nested (the rules judge compares a list of records inside a fact as an
  unordered list, item by item);
- the other top-level keys (scalars, ``null`` for an ``Optional`` left empty, objects, lists of
  values) form one record of the document's type: ``record_type`` in the config, default the
  file's stem (``invoices.jsonl``: ``invoices``); with ``--gold`` and ``--predicted`` both in this
  format, the gold file's stem names both sides' records (``gold.jsonl`` and ``pred.jsonl`` would
  otherwise give two types whose records never meet);
- the doc_id is the key ``columns`` maps ``doc_id`` to, else ``doc_id``, ``document_id`` or
  ``id``, else the line number (:mod:`.document_lines`); it is not a field of the record;
- an object of a list that has an ``id`` keeps it as its fact id, scoped by its list
  (``line_items:7``), so lists numbered each from 1 do not collide; the others are numbered per
  type (``line_items-2``). An ``id`` names the object and is not compared (as a fact file's ``id``);
  the record's own ``id`` (when the doc_id is another key) likewise (``invoices:INV-7``);
- refused, one line naming the file and the line: a top-level ``fact_type`` (the format names the
  record's type itself: honouring the field would make a line's type depend on a value the
  extractor wrote, a guess either way), and a list named as the record type on a line that has a
  record (its items and the record would be one fact type)."""
from __future__ import annotations

import json
from typing import Any

from ...errors import InputError
from ..jsonl import coerce_id, json_type
from .document_lines import DocumentLines, line_doc_id

EXPECTED = "one JSON object per document (a model_dump() or structured output)"


def claims(first: object) -> bool:
    """A record of a model: some list of objects, and not a fact's shape (``fact_type``, or both
    ``doc_id`` and ``id``: a fact whose type column is named otherwise) nor a dataset line's."""
    return (isinstance(first, dict) and "fact_type" not in first and "gold_facts" not in first
            and not {"doc_id", "id"} <= first.keys()
            and any(isinstance(v, list) and v and all(isinstance(i, dict) for i in v) for v in first.values()))


class RecordLines(DocumentLines):
    expected = EXPECTED
    #: The records' type when the config names none (default: the file's stem); the gold file's
    #: stem for the predictions of a paired run (:func:`factjudge.io.formats.open_dataset`).
    default_type: str | None = None

    def convert(self, rec: Any, lineno: int, prefix: str) -> tuple[str, list[dict[str, Any]]]:
        doc_id, id_key = line_doc_id(rec, lineno, prefix, self.config)
        record_type = self.config.record_type or self.default_type or self.path.stem
        record: dict[str, Any] = {}
        lists: list[tuple[str, list[dict[str, Any]]]] = []
        for key, value in rec.items():
            if key == id_key:
                continue
            if key == "fact_type":
                raise InputError(f"{prefix}: a top-level field 'fact_type' ({json.dumps(value)[:40]}): the records "
                                 f"format names the record's type itself ({record_type!r}, {self._named_by()}; "
                                 "record_type in the config names it otherwise): rename the field upstream")
            if isinstance(value, list) and value and any(isinstance(i, dict) for i in value):
                lists.append((key, _items(key, value, prefix)))
            elif not (isinstance(value, list) and not value):  # an empty list: no facts of its type
                record[key] = value
        if record and any(key == record_type for key, _ in lists):
            raise InputError(f"{prefix}: the list {record_type!r} has the name of the record type ({self._named_by()}):"
                             " its items and the record would be one fact type; name the record type otherwise "
                             "with record_type in the config")
        facts = [{"fact_type": record_type, **record, **_scoped_id(record, record_type, prefix)}] if record else []
        return doc_id, facts + [{**item, "fact_type": key, **_scoped_id(item, key, f"{prefix}: {key!r} item {n}")}
                                for key, items in lists for n, item in enumerate(items, start=1)]

    def _named_by(self) -> str:
        """Where the record type comes from, for errors."""
        if self.config.record_type:
            return "the config's record_type"
        return "the gold file's stem" if self.default_type else "the file's stem"


def _scoped_id(obj: dict[str, Any], fact_type: str, prefix: str) -> dict[str, str]:
    """An object's own ``id`` as its fact id scoped by its type (``line_items:7``), so each list
    may number its items from 1; none (``{}``) when it has no id or a null one (an ``Optional``
    left empty: the fact is numbered by position)."""
    own = obj.get("id")
    return {} if own is None else {"id": f"{fact_type}:{coerce_id(own, 'id', prefix)}"}


def _items(key: str, items: list[Any], prefix: str) -> list[dict[str, Any]]:
    seen: dict[object, int] = {}
    for n, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            raise InputError(f"{prefix}: {key!r} item {n} is {json_type(item)}: a list is either records "
                             "(objects, each a fact) or values (a field), not both")
        if "fact_type" in item:
            raise InputError(f"{prefix}: {key!r} item {n} has a field 'fact_type': the list's key names "
                             "the type of its items")
        own = item.get("id")
        if type(own) in (str, int):  # another kind is coerce_id's error
            first = seen.setdefault(str(own), n)
            if first != n:
                raise InputError(f"{prefix}: {key!r} items {first} and {n} have the same id {json.dumps(own)}: "
                                 "an item's id names it within its list")
    return items
