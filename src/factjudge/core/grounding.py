"""A fact's evidence in its document's text: where it sits (its span, or its values found in the
text) and whether it is there at all. Pure: the search for a value is given (a :data:`Finder`,
the rules judge's normalised search in :mod:`factjudge.judges.rules.locate`), so this module
decides only what counts.

- A fact whose ``evidence`` has a span (``start``/``end``, LangExtract's ``char_interval``, spaCy's
  and GLiNER's offsets) that fits the text is *found in the source*, at that span.
- Else its compared values (strings and numbers, the items of a list) are searched: it is found
  when every one of them is found (a fact half in the text is not in the text), at every place
  each one is found.
- A fact whose ``evidence`` has no span (LangExtract could not align it: ``char_interval`` null)
  is *ungrounded*, whether or not its values are then found.

A predicted fact the judge calls FP that is found in the source is a *possible gold omission*:
annotators miss facts, and an FP that the text states may be one of them rather than a
hallucination; unless it is the near-miss partner of a missed gold fact (one field differs: a
wrong value of a fact gold has, not a fact gold lacks; a LangExtract span covers the extraction's
text only, so a wrong attribute is still "at its span"). :class:`SourceCounts` counts these per
fact type for ``summary.json``."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from pydantic import Field

from ..models import own_fields, status_of
from ..models.base import Model
from .scope import EVIDENCE, NOT_COMPARED

Span = tuple[int, int]
#: Where a value is found in one document's text: its spans (character offsets), in text order,
#: empty when it is not there.
Finder = Callable[[str], Sequence[Span]]
#: At most this many places are kept per value (a word found 500 times is highlighted 20 times).
MAX_PLACES = 20
FOUND, NOT_FOUND = "found in the source", "not found in the source"


@dataclass(frozen=True)
class Grounding:
    """Where one fact sits in its document's text."""

    found: bool
    spans: tuple[Span, ...] = ()
    #: The format gives spans, but this fact has none (LangExtract's ``char_interval`` null).
    ungrounded: bool = False

    @property
    def tag(self) -> str:
        return FOUND if self.found else NOT_FOUND


def searchable_values(fact: Mapping[str, Any]) -> list[str]:
    """The compared values of ``fact`` a text can hold: strings and numbers (not bools), the
    items of lists, each once, in field order; empty strings left out."""
    out: dict[str, None] = {}

    def add(v: object) -> None:
        if isinstance(v, list):
            for item in v:
                add(item)
        elif isinstance(v, str) and v.strip():
            out[v] = None
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            out[str(v)] = None

    for key, value in own_fields(fact).items():  # an older run's verdict beside the fields is none
        if key not in NOT_COMPARED:
            add(value)
    return list(out)


def evidence_span(fact: Mapping[str, Any], text_length: int) -> Span | None:
    """The fact's own span when its evidence gives one that fits the text."""
    ev = fact.get(EVIDENCE)
    if not isinstance(ev, Mapping):
        return None
    start, end = ev.get("start"), ev.get("end")
    if all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end)):
        assert isinstance(start, int) and isinstance(end, int)
        if 0 <= start < end <= text_length:
            return start, end
    return None


def is_ungrounded(fact: Mapping[str, Any]) -> bool:
    """The fact has evidence from a format that gives spans, without a span."""
    ev = fact.get(EVIDENCE)
    return isinstance(ev, Mapping) and ev.get("start") is None


def ground(fact: Mapping[str, Any], text: str, find: Finder) -> Grounding:
    """Where ``fact`` sits in ``text`` (see the module docstring); ``find`` searches one value."""
    ungrounded = is_ungrounded(fact)
    span = evidence_span(fact, len(text))
    if span is not None:
        return Grounding(True, (span,), ungrounded)
    values = searchable_values(fact)
    spans: list[Span] = []
    found = bool(values)
    for value in values:
        places = list(find(value))[:MAX_PLACES]
        found = found and bool(places)
        spans += places
    return Grounding(found, tuple(sorted(set(spans))), ungrounded)


def segments(text: str, marks: Iterable[tuple[Span, str]]) -> list[tuple[str, list[str]]]:
    """``text`` cut into pieces at every mark's ends, each piece with the keys of the marks that
    cover it (in the order given; none for unmarked text): overlapping marks give a piece marked
    by both. The pieces join to ``text`` exactly, so offsets (Python's code points) never reach
    the page, whose script counts UTF-16 units."""
    kept = [((max(0, s), min(len(text), e)), k) for (s, e), k in marks if s < e and s < len(text)]
    cuts = sorted({0, len(text), *(p for (s, e), _ in kept for p in (s, e))})
    out: list[tuple[str, list[str]]] = []
    for a, b in pairwise(cuts):
        keys = [k for (s, e), k in kept if s <= a and b <= e]
        if out and not keys and not out[-1][1]:
            out[-1] = (out[-1][0] + text[a:b], [])
        else:
            out.append((text[a:b], list(dict.fromkeys(keys))))
    return out


class TypeCounts(Model):
    """Counts per fact type, and their total."""

    total: int = 0
    by_fact_type: dict[str, int] = Field(default_factory=dict)

    def add(self, fact_type: str) -> None:
        self.total += 1
        self.by_fact_type[fact_type] = self.by_fact_type.get(fact_type, 0) + 1


class SourceSummary(Model):
    """``summary.json``'s ``source``: the predictions checked against their documents' text."""

    #: Where the text came from: the inputs' own (``text``), or the ``--documents`` file.
    text_from: str
    #: Documents with a text, and without one (their predictions are not counted below).
    documents: int = 0
    documents_without_text: int = 0
    found: TypeCounts = Field(default_factory=TypeCounts)
    not_found: TypeCounts = Field(default_factory=TypeCounts)
    #: FP predictions found in the source: possibly right, and missing from the gold set.
    possible_gold_omissions: TypeCounts = Field(default_factory=TypeCounts)
    #: Predictions whose extractor gave no span (LangExtract's ``char_interval`` null).
    ungrounded: TypeCounts = Field(default_factory=TypeCounts)


@dataclass
class SourceCounts:
    """Adds up the predictions of each document against its text (None: the document has none)."""

    text_from: str
    summary: SourceSummary = field(init=False)
    #: The first ``rows`` possible gold omissions, (doc_id, fact), in dataset order (the report's list) ...
    omissions: list[tuple[str, Mapping[str, Any]]] = field(default_factory=list)
    rows: int = 100
    #: ... and (doc_id, fact id) of up to ``keep`` of them (review.html's queue puts them first).
    omission_keys: set[tuple[str, str]] = field(default_factory=set)
    keep: int = 100_000

    def __post_init__(self) -> None:
        self.summary = SourceSummary(text_from=self.text_from)

    def add(self, doc_id: str, predicted: Iterable[Mapping[str, Any]], text: str | None,
            find: Callable[[str], Finder], near_misses: Iterable[str] = ()) -> dict[str, Grounding]:
        """Count one document's predictions; ``find(text)`` makes the finder of its text (made
        once, only when a fact has no span of its own); ``near_misses``: the ids of the FP
        predictions that are near-miss partners (never possible omissions). Returns each fact
        id's grounding."""
        partners = set(near_misses)
        s = self.summary
        if text is None:
            s.documents_without_text += 1
            return {}
        s.documents += 1
        finder: Finder | None = None

        def lazy(value: str) -> Sequence[Span]:
            nonlocal finder
            finder = finder or find(text)
            return finder(value)

        out: dict[str, Grounding] = {}
        for fact in predicted:
            if status_of(fact) == "OUT_OF_SCOPE":
                continue
            g = out[str(fact.get("id"))] = ground(fact, text, lazy)
            fact_type = str(fact.get("fact_type"))
            (s.found if g.found else s.not_found).add(fact_type)
            if g.ungrounded:
                s.ungrounded.add(fact_type)
            if g.found and status_of(fact) == "FP" and str(fact.get("id")) not in partners:
                s.possible_gold_omissions.add(fact_type)
                if len(self.omissions) < self.rows:
                    self.omissions.append((doc_id, fact))
                if len(self.omission_keys) < self.keep:
                    self.omission_keys.add((doc_id, str(fact.get("id"))))
        return out


__all__ = ["FOUND", "MAX_PLACES", "NOT_FOUND", "Finder", "Grounding", "SourceCounts", "SourceSummary", "Span",
           "TypeCounts", "evidence_span", "ground", "is_ungrounded", "searchable_values", "segments"]
