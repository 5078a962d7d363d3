"""The reports' words and rows for the predictions checked against their documents' text
(summary.json's ``source``, :mod:`factjudge.core.grounding`): report.html's and report.md's
"Possible gold omissions" section."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..core.grounding import SourceSummary
from ..core.scope import EVIDENCE
from .rows import shown_fields

SOURCE_HEADER = ["fact type", "predicted", "found in the source", "not found", "possible gold omissions",
                 "ungrounded"]
OMISSION_HEADER = ["doc_id", "fact type", "id", "fields"]


def source_note(s: SourceSummary) -> str:
    """One paragraph: what was checked, and what the counts mean."""
    found, missing = s.found.total, s.not_found.total
    without = (f"; {s.documents_without_text:,} document(s) had no text and are not counted"
               if s.documents_without_text else "")
    where = "the --documents file" if s.text_from == "documents file" else "the inputs"
    return (f"Predictions checked against their document's text (from {where}): {found:,} of "
            f"{found + missing:,} found in the source, {s.possible_gold_omissions.total:,} of them FP "
            f"(possible gold omissions: the text states them, the gold set lacks them), "
            f"{s.ungrounded.total:,} ungrounded (the extractor gave no span){without}. A prediction is "
            "found at its span when the extractor gives one, else when every value of it is in the "
            "text after the rules judge's normalisation.")


def source_rows(s: SourceSummary) -> list[list[Any]]:
    """Per fact type: predictions checked, found, not found, possible gold omissions, ungrounded."""
    types = sorted({*s.found.by_fact_type, *s.not_found.by_fact_type})
    rows = []
    for t in types:
        found, missing = s.found.by_fact_type.get(t, 0), s.not_found.by_fact_type.get(t, 0)
        rows.append([t, found + missing, found, missing, s.possible_gold_omissions.by_fact_type.get(t, 0),
                     s.ungrounded.by_fact_type.get(t, 0)])
    return rows


def omission_rows(omissions: Sequence[tuple[str, Mapping[str, Any]]]) -> list[list[Any]]:
    """The listed possible gold omissions: doc_id, fact type, id, its fields as ``k: v`` text."""
    return [[doc_id, str(f.get("fact_type")), str(f.get("id")),
             "; ".join(f"{k}: {v}" for k, v in shown_fields(f).items() if k != EVIDENCE)] for doc_id, f in omissions]
