"""Format ``langextract``: LangExtract's annotated documents, one per line, as
``lx.io.save_annotated_documents`` writes them (google/langextract ``langextract/io.py``, each line
``data_lib.annotated_document_to_dict``: ``langextract/data_lib.py``; the fields are the
dataclasses of ``langextract/core/data.py``)::

    {"extractions": [{"extraction_class": "medication", "extraction_text": "aspirin",
                      "char_interval": {"start_pos": 12, "end_pos": 19},
                      "alignment_status": "match_exact", "extraction_index": 1, "group_index": 0,
                      "description": null, "attributes": {"dosage": "100 mg"}}],
     "text": "...", "document_id": "doc_1a2b3c4d"}

Each extraction is a fact: ``fact_type`` its ``extraction_class``, compared fields its
``extraction_text`` and its ``attributes`` (the config key ``langextract_compare`` says which of
``extraction_text``, ``attributes``, ``span``, ``alignment_status`` are compared). Its
``evidence`` (never compared, see :data:`factjudge.core.scope.EVIDENCE`) keeps ``start``/``end``
(the ``char_interval``; absent when LangExtract could not ground the extraction: ``char_interval``
null), ``alignment_status``, ``extraction_index``, ``group_index`` and ``description``.

An attribute may have any name (``status``, ``reasoning``...) but ``factjudge``, the key of
factjudge's verdict in its output, which is refused in one line naming the file, the line and the
field, as in any fact file."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...core.scope import EVIDENCE
from ...errors import InputError
from ..jsonl import coerce_id, json_type
from .document_lines import DocumentLines

EXPECTED = ("LangExtract's annotated document {\"document_id\", \"text\", \"extractions\": [{\"extraction_class\", "
            "\"extraction_text\", ...}]} (lx.io.save_annotated_documents)")
#: The extraction's own keys kept as evidence (``char_interval`` is kept as ``start``/``end``).
_EVIDENCE_KEYS = ("alignment_status", "extraction_index", "group_index", "description")
#: Field names a fact of this format gets from factjudge, which an attribute may not take.
_OURS = ("id", "fact_type", "extraction_text", "char_start", "char_end", "alignment_status", EVIDENCE)


def claims(first: Any) -> bool:
    return isinstance(first, dict) and "document_id" in first and "extractions" in first


class LangExtractLines(DocumentLines):
    expected = EXPECTED

    def convert(self, rec: Any, lineno: int, prefix: str) -> tuple[str, list[dict[str, Any]]]:
        if "extractions" not in rec or "document_id" not in rec:
            missing = " and ".join(repr(k) for k in ("document_id", "extractions") if k not in rec)
            raise InputError(f"{prefix}: missing {missing}: expected {EXPECTED}; keys found: "
                             f"{', '.join(list(rec)[:12]) or 'none'}")
        doc_id = coerce_id(rec["document_id"], "document_id", prefix)
        extractions = rec["extractions"] or []  # an AnnotatedDocument may hold None
        if not isinstance(extractions, list):
            raise InputError(f"{prefix} (document_id {doc_id!r}): 'extractions' must be a list, "
                             f"got {json_type(extractions)}")
        return doc_id, [self._fact(e, f"{prefix} (document_id {doc_id!r}): extraction {i}")
                        for i, e in enumerate(extractions, start=1)]

    def _fact(self, ext: object, where: str) -> dict[str, Any]:
        if not isinstance(ext, dict):
            raise InputError(f"{where}: expected an object {{\"extraction_class\", \"extraction_text\", ...}}, "
                             f"got {json_type(ext)}")
        cls = ext.get("extraction_class")
        if not isinstance(cls, str) or not cls.strip():
            raise InputError(f"{where}: 'extraction_class' must be a non-empty string, got "
                             f"{json_type(cls)}")
        attributes = ext.get("attributes") or {}
        if not isinstance(attributes, dict):
            raise InputError(f"{where} ({cls}): 'attributes' must be an object or null, got "
                             f"{json_type(attributes)}")
        clash = next((k for k in attributes if k in _OURS), None)
        if clash is not None:
            raise InputError(f"{where} ({cls}): attribute {clash!r} has the name of a field factjudge "
                             "gives every LangExtract fact: rename it")
        evidence = {**_span(ext.get("char_interval"), f"{where} ({cls})"),
                    **{k: ext[k] for k in _EVIDENCE_KEYS if ext.get(k) is not None}}
        compare = self.config.langextract_compare
        fact: dict[str, Any] = {"fact_type": cls}
        if "extraction_text" in compare:
            fact["extraction_text"] = ext.get("extraction_text")
        if "attributes" in compare:
            fact.update(attributes)
        if "span" in compare:
            fact["char_start"], fact["char_end"] = evidence.get("start"), evidence.get("end")
        if "alignment_status" in compare:
            fact["alignment_status"] = evidence.get("alignment_status")
        fact[EVIDENCE] = evidence
        return fact


def _span(interval: object, where: str) -> Mapping[str, int]:
    """``char_interval`` as ``{start, end}``; empty when LangExtract found no span (null, or
    either end null): the extraction is ungrounded."""
    if interval is None:
        return {}
    if not isinstance(interval, dict):
        raise InputError(f"{where}: 'char_interval' must be {{\"start_pos\", \"end_pos\"}} or null, "
                         f"got {json_type(interval)}")
    start, end = interval.get("start_pos"), interval.get("end_pos")
    if start is None or end is None:
        return {}
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (start, end)) or start > end:
        raise InputError(f"{where}: 'char_interval' {{start_pos: {start!r}, end_pos: {end!r}}} is no span "
                         "of characters (two offsets, start <= end)")
    return {"start": start, "end": end}
