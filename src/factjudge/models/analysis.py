"""Where a document's errors are (:mod:`factjudge.core.analysis` computes them): the category of
each fact, near misses, merges and splits, and their counts per fact type."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field

from .base import Model

#: What an in-scope fact is to a scorer (see :mod:`factjudge.core.analysis`); out-of-scope and
#: ERROR facts are ``out_of_scope`` and ``error``.
FactCategory = Literal["correct", "near_miss", "missing", "spurious", "duplicate", "error", "out_of_scope"]
#: The categories counted per fact type, in the order they are shown.
CATEGORIES = ("correct", "near_miss", "missing", "spurious", "duplicate")


class CategoryCounts(Model):
    """The categories of :mod:`factjudge.core.analysis`, counted for one fact type or overall.

    ``correct`` counts the links kept (= TP gold facts); a near miss is one FN gold fact and one
    FP prediction counted once, so ``near_miss + missing = FN`` and ``near_miss + spurious +
    duplicate = FP``."""

    correct: int = 0
    near_miss: int = 0
    missing: int = 0
    spurious: int = 0
    duplicate: int = 0
    #: Predictions linked to several gold facts.
    merges: int = 0
    #: Gold facts whose other predictions were dropped as duplicates.
    splits: int = 0
    #: Near misses per compared field they differ in (one near miss may count in several fields).
    near_miss_fields: dict[str, int] = Field(default_factory=dict)
    #: Near misses that differ in one compared field only, per that field.
    one_field: dict[str, int] = Field(default_factory=dict)

    def add(self, other: CategoryCounts) -> None:
        for name in (*CATEGORIES, "merges", "splits"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for mine, theirs in ((self.near_miss_fields, other.near_miss_fields), (self.one_field, other.one_field)):
            for key, n in theirs.items():
                mine[key] = mine.get(key, 0) + n


class NearMiss(Model):
    """An FN gold fact and an FP prediction of the same type that pair up: they agree on at least
    half of the compared fields (and on one at least) but not on all."""

    fact_type: Any
    gold: str
    predicted: str
    #: The closeness of the pair: the mean of the per-field similarities, 0-100 (the rules
    #: judge's field scores, the scale of its reasoning).
    score: float
    agree: list[str]
    differ: list[str]


class Merge(Model):
    """A prediction linked to several gold facts (with ``one_to_one``, all but one were dropped)."""

    fact_type: Any
    predicted: str
    gold: list[str]


class Split(Model):
    """A gold fact that several predictions named: one link kept, the others dropped as duplicates."""

    fact_type: Any
    gold: str
    kept: str | None
    dropped: list[str]


class FieldCounts(Model):
    """The values of one field path of one fact type (:mod:`factjudge.core.fields`): ``correct +
    wrong + missing`` are the gold values, ``correct + wrong + spurious`` the predicted ones."""

    correct: int = 0
    wrong: int = 0
    missing: int = 0
    spurious: int = 0


class FieldScore(FieldCounts):
    """:class:`FieldCounts` over a run, with precision ``correct / (correct + wrong + spurious)``,
    recall ``correct / (correct + wrong + missing)``, F1 (None where undefined) and their
    document-bootstrap 95% intervals (``ci95``: ``{precision: [low, high], ...}``)."""

    precision: float | None = None
    recall: float | None = None
    f1: float | None = None
    ci95: dict[str, list[float] | None] | None = None


class Analysis(Model):
    """Where one document's errors are: near misses, merges and splits (:mod:`factjudge.core.analysis`),
    and the field-level counts (:mod:`factjudge.core.fields`)."""

    near_misses: list[NearMiss] = Field(default_factory=list)
    merges: list[Merge] = Field(default_factory=list)
    splits: list[Split] = Field(default_factory=list)
    #: Per fact type and field path (``total``, ``line_items[]``, ``line_items[].unit_price``).
    fields: dict[str, dict[str, FieldCounts]] = Field(default_factory=dict)

    def marks(self) -> dict[tuple[str, str], dict[str, Any]]:
        """(side, id) -> what this says of the fact: ``partner`` (the near-miss partner, or for a
        duplicate the prediction kept), ``differ`` and ``closeness`` (near misses), ``near_miss``
        / ``duplicate`` flags and ``granularity`` (``merge`` or ``split``)."""
        out: dict[tuple[str, str], dict[str, Any]] = {}
        for m in self.merges:
            for key in (("predicted", m.predicted), *(("gold", g) for g in m.gold)):
                out.setdefault(key, {})["granularity"] = "merge"
        for s in self.splits:
            out.setdefault(("gold", s.gold), {})["granularity"] = "split"
            for p in s.dropped:
                out.setdefault(("predicted", p), {}).update(granularity="split", duplicate=True, partner=s.kept)
        for n in self.near_misses:
            for key, partner in ((("gold", n.gold), n.predicted), (("predicted", n.predicted), n.gold)):
                out.setdefault(key, {}).update(near_miss=True, partner=partner, differ=list(n.differ),
                                               closeness=n.score)
        return out


def fact_category(side: str, status: object, mark: Mapping[str, Any] | None) -> FactCategory:
    """A fact's category from its final status and its :meth:`Analysis.marks` entry."""
    if status in ("TP", "ERROR", "OUT_OF_SCOPE"):
        return "correct" if status == "TP" else "error" if status == "ERROR" else "out_of_scope"
    mark = mark or {}
    if mark.get("near_miss"):
        return "near_miss"
    if side == "gold":
        return "missing"
    return "duplicate" if mark.get("duplicate") else "spurious"
