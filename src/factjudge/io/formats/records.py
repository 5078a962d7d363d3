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
- an object of a list that has an ``id`` keeps it as its fact id; the others are numbered per
  type (``line_items-2``)."""
from __future__ import annotations

from typing import Any

from ...errors import InputError
from ..jsonl import json_type
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
            if isinstance(value, list) and value and any(isinstance(i, dict) for i in value):
                lists.append((key, _items(key, value, prefix)))
            elif not (isinstance(value, list) and not value):  # an empty list: no facts of its type
                record[key] = value
        facts = [{"fact_type": record_type, **record}] if record else []
        return doc_id, facts + [{**item, "fact_type": key} for key, items in lists for item in items]


def _items(key: str, items: list[Any], prefix: str) -> list[dict[str, Any]]:
    for n, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            raise InputError(f"{prefix}: {key!r} item {n} is {json_type(item)}: a list is either records "
                             "(objects, each a fact) or values (a field), not both")
        if "fact_type" in item:
            raise InputError(f"{prefix}: {key!r} item {n} has a field 'fact_type': the list's key names "
                             "the type of its items")
    return items
