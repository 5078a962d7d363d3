"""Formats ``spacy`` and ``gliner``: labelled spans of a text, one document per line. Each span is
a fact: ``fact_type`` its label, its one compared field ``text`` the characters it covers, its
``evidence`` ``{start, end}`` (character offsets, never compared). Spans may overlap (a nested
entity, two labels on one span); a span written twice with the same label (``ents`` and a span
group) is one fact.

``spacy``: ``Doc.to_json()`` per line (explosion/spaCy ``spacy/tokens/doc.pyx``, ``to_json``;
https://spacy.io/api/doc#to_json): ``{"text", "ents": [{"start", "end", "label"}], "spans":
{group: [{"start", "end", "label", "kb_id"}]}, "tokens": [...]}``; ``ents`` and every span group
are read. A doc_id given with ``doc.to_json(underscore=["doc_id"])`` (``"_": {"doc_id": ...}``) or
as a top-level key is used, else the line number (:mod:`.document_lines`).

``gliner``: what ``GLiNER.predict_entities(text, labels)`` returns for one text (urchade/GLiNER,
usage docs ``_sources/usage.md.txt``: ``[{"start", "end", "text", "label", "score"}]``), one
list per line (its doc_id the line number), or an object ``{"doc_id", "text", "entities": [...]}``.
The ``score`` is kept as the fact's ``score`` (a prediction's confidence: only predictions carry
it, so it is not compared)."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ...core.scope import EVIDENCE
from ...errors import InputError
from ..jsonl import json_type
from .document_lines import DocumentLines, check_span, line_doc_id, span_text

SPACY_EXPECTED = "spaCy's Doc.to_json() {\"text\", \"ents\": [{\"start\", \"end\", \"label\"}]}"
GLINER_EXPECTED = ("GLiNER's predict_entities() list [{\"start\", \"end\", \"text\", \"label\", \"score\"}], or "
                   "{\"doc_id\", \"entities\": [...]}")


def spacy_claims(first: Any) -> bool:
    return isinstance(first, dict) and "text" in first and ("ents" in first or "tokens" in first)


def gliner_claims(first: Any) -> bool:
    ents = first.get("entities") if isinstance(first, dict) else first
    return isinstance(ents, list) and all(isinstance(e, dict) and "label" in e and "start" in e for e in ents)


def _label(span: Any, where: str) -> str:
    if not isinstance(span, dict):
        raise InputError(f"{where}: expected an object {{\"start\", \"end\", \"label\"}}, got {json_type(span)}")
    label = span.get("label")
    if not isinstance(label, str) or not label.strip():
        raise InputError(f"{where}: 'label' must be a non-empty string, got {json_type(label)}")
    return label


def _facts(spans: Iterable[tuple[str, Any]], text: Any, *, own_text: bool) -> list[dict[str, Any]]:
    """Facts of ``(where, span)`` pairs: ``own_text``: the span carries its ``text`` (GLiNER),
    checked against the document's text when there is one; else it is cut from the text."""
    facts, seen = [], set()
    for where, span in spans:
        label = _label(span, where)
        start, end = span.get("start"), span.get("end")
        where = f"{where} ({label})"
        if text is not None:
            value = span_text(text, start, end, where)
            if own_text and span.get("text") != value:
                raise InputError(f"{where}: 'text' {span.get('text')!r} is not the text's characters "
                                 f"{start}-{end} ({value!r})")
        else:  # GLiNER's list alone: the span's own text, its offsets checked as offsets
            value = span.get("text")
            check_span(start, end, where)
            if not isinstance(value, str):
                raise InputError(f"{where}: 'text' must be a string, got {json_type(value)}")
        if (start, end, label) in seen:
            continue
        seen.add((start, end, label))
        fact: dict[str, Any] = {"fact_type": label, "text": value}
        if own_text and span.get("score") is not None:
            fact["score"] = span["score"]
        fact[EVIDENCE] = {"start": start, "end": end}
        facts.append(fact)
    return facts


class SpacyLines(DocumentLines):
    expected = SPACY_EXPECTED

    def convert(self, rec: Any, lineno: int, prefix: str) -> tuple[str, list[dict[str, Any]]]:
        if not isinstance(rec.get("text"), str):
            raise InputError(f"{prefix}: expected {SPACY_EXPECTED}: 'text' is "
                             f"{'missing' if 'text' not in rec else json_type(rec['text'])}")
        underscore = rec.get("_") if isinstance(rec.get("_"), dict) else {}
        doc_id, _ = line_doc_id({**underscore, **{k: v for k, v in rec.items() if k != "_"}}, lineno, prefix,
                                self.config)
        ents = rec.get("ents") or []
        groups = rec.get("spans") or {}
        if not isinstance(ents, list) or not isinstance(groups, dict):
            raise InputError(f"{prefix}: 'ents' must be a list and 'spans' an object of span groups")
        spans = [(f"{prefix}: ents item {i}", e) for i, e in enumerate(ents, start=1)]
        for group, items in groups.items():
            if not isinstance(items, list):
                raise InputError(f"{prefix}: span group {group!r} must be a list, got {json_type(items)}")
            spans += [(f"{prefix}: spans {group!r} item {i}", s) for i, s in enumerate(items, start=1)]
        return doc_id, _facts(spans, rec["text"], own_text=False)


class GlinerLines(DocumentLines):
    expected = GLINER_EXPECTED
    arrays = True

    def convert(self, rec: Any, lineno: int, prefix: str) -> tuple[str, list[dict[str, Any]]]:
        if isinstance(rec, list):
            doc_id, ents, text = str(lineno), rec, None
        else:
            doc_id = line_doc_id(rec, lineno, prefix, self.config)[0]
            ents, text = rec.get("entities"), rec.get("text")
            if text is not None and not isinstance(text, str):
                raise InputError(f"{prefix}: 'text' must be the document's text (a string), got {json_type(text)}")
            if not isinstance(ents, list):
                raise InputError(f"{prefix}: expected {GLINER_EXPECTED}: 'entities' is "
                                 f"{'missing' if 'entities' not in rec else json_type(ents)}")
        spans = [(f"{prefix}: entity {i}", e) for i, e in enumerate(ents, start=1)]
        return doc_id, _facts(spans, text, own_text=True)
