"""Error analysis: where a document's errors are and what a scorer calls them. Pure: data in,
data out; the field comparison is given (:data:`Ranker`), so one closeness measure is used
throughout (``factjudge.judges.rules.closeness`` builds it from the rules judge's own field
comparisons, the scale of its reasoning).

**Closeness** of two facts of one type: first the number of compared fields on which they agree,
then the mean of the per-field similarities (0-100). The closest fact wins, the earliest on ties.

**Categories** (after MUC's correct / incorrect / missing / spurious, Chinchor and Sundheim 1993,
and SemEval-2013 Task 9's correct / incorrect / partial / missing / spurious, Segura-Bedmar et
al. 2013): every in-scope fact that is not ERROR is exactly one of

* ``correct``: TP (on the gold side, one per link kept);
* ``near_miss``: an FN gold fact and an FP prediction of the same type that pair up, counted
  once: they agree on at least half of the compared fields (and on one at least) but not on all.
  Pairs are taken closest first, each fact in at most one;
* ``missing``: any other FN gold fact;
* ``duplicate``: an FP prediction whose link to a gold fact was dropped because another
  prediction kept it (a *split* of that gold fact);
* ``spurious``: any other FP prediction.

So per fact type: ``correct = tp_gold``, ``near_miss + missing = fn``, ``near_miss + spurious +
duplicate = fp``. Granularity: a *merge* is a prediction linked to several gold facts, a *split*
a gold fact whose other predictions were dropped as duplicates.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..models import (
    Analysis,
    CategoryCounts,
    Direction,
    Merge,
    NearMiss,
    Split,
    fact_category,
    line_analysis,
    status_of,
    verdict_of,
)


@dataclass(frozen=True, slots=True)
class FieldCheck:
    """One compared field of a pair: whether it agrees, and its similarity (0-100)."""

    name: str
    ok: bool
    score: float

    def __reduce__(self) -> tuple[type[FieldCheck], tuple[str, bool, float]]:
        # pickled as its constructor's call: a frozen dataclass's own state goes through a
        # __setstate__ in Python (a worker sends each document's closest facts: 2,000 documents'
        # ~25,000 checks pickled and read back 126 -> 45 ms)
        return FieldCheck, (self.name, self.ok, self.score)


@dataclass(frozen=True, slots=True)
class Closeness:
    """How close two facts are: their compared fields, each checked."""

    fields: tuple[FieldCheck, ...]

    def __reduce__(self) -> tuple[type[Closeness], tuple[tuple[FieldCheck, ...]]]:
        return Closeness, (self.fields,)  # as FieldCheck's

    @property
    def agree(self) -> list[str]:
        return [f.name for f in self.fields if f.ok]

    @property
    def differ(self) -> list[str]:
        return [f.name for f in self.fields if not f.ok]

    @property
    def score(self) -> float:
        """The mean per-field similarity, 0-100 (100 with no field to compare)."""
        return sum(f.score for f in self.fields) / len(self.fields) if self.fields else 100.0

    @property
    def key(self) -> tuple[int, float]:
        """Greater is closer: fields agreeing, then the mean similarity."""
        return len(self.agree), self.score

    @property
    def pairs_up(self) -> bool:
        """Close enough to be a near miss: agree on at least half the fields (one at least), not all."""
        agree = len(self.agree)
        return 0 < agree < len(self.fields) and 2 * agree >= len(self.fields)


#: For facts of one type: each subject's closest candidates (index, closeness), closest first.
Ranker = Callable[[Sequence[Mapping[str, Any]], Sequence[Mapping[str, Any]]], list[list[tuple[int, Closeness]]]]


def closest_first(options: Iterable[tuple[int, Closeness]]) -> list[tuple[int, Closeness]]:
    """``options`` closest first, the earliest candidate on ties (the one order everywhere)."""
    return sorted(options, key=lambda o: (-o[1].key[0], -o[1].key[1], o[0]))


def pair_near_misses(ranked: Sequence[Sequence[tuple[int, Closeness]]]) -> list[tuple[int, int, Closeness]]:
    """Near-miss pairs (subject, candidate, closeness) from ``ranked`` (a :data:`Ranker`'s
    answer): the closest pair that :attr:`Closeness.pairs_up` first, each fact in one pair at most;
    ties go to the earliest subject, then the earliest candidate."""
    options = [(s, c, near) for s, row in enumerate(ranked) for c, near in row if near.pairs_up]
    options.sort(key=lambda o: (-o[2].key[0], -o[2].key[1], o[0], o[1]))
    used_s: set[int] = set()
    used_c: set[int] = set()
    pairs = []
    for s, c, near in options:
        if s not in used_s and c not in used_c:
            used_s.add(s)
            used_c.add(c)
            pairs.append((s, c, near))
    return sorted(pairs, key=lambda p: p[0])


def _granularity(gold: Sequence[Mapping[str, Any]], predicted: Sequence[Mapping[str, Any]],
                 dropped: Sequence[tuple[Direction, str, str]]) -> tuple[list[Merge], list[Split]]:
    """Merges and splits from the final links and the links reconciliation dropped (a fact's id
    is unique on its side: checked facts). Only a prediction linked to several gold facts or
    one that lost a link is read for a merge, only a gold fact that lost one for a split: most
    documents have neither (every fact's links and type were copied first: ~30 us a 20-fact
    document)."""
    lost: dict[tuple[Direction, str], list[str]] = {}
    for side, fact_id, owner in dropped:
        owner_side: Direction = "gold" if side == "predicted" else "predicted"
        lost.setdefault((owner_side, owner), []).append(fact_id)
    merges = []
    for f in predicted:
        golds = verdict_of(f).get("matched_ids") or ()
        if len(golds) < 2 and not lost:
            continue
        p = str(f["id"])
        every = [str(i) for i in golds] + lost.get(("predicted", p), [])
        if len(every) > 1:
            merges.append(Merge(fact_type=f.get("fact_type"), predicted=p, gold=every))
    splits = []
    if any(side == "gold" for side, _ in lost):
        by_id = {str(f["id"]): f for f in gold}
        for (side, g), ps in lost.items():
            if side == "gold":
                kept = next(iter(verdict_of(by_id[g]).get("matched_ids") or ()), None)
                splits.append(Split(fact_type=by_id[g].get("fact_type"), gold=g,
                                    kept=None if kept is None else str(kept), dropped=ps))
    return merges, splits


def analyse(gold: Sequence[Mapping[str, Any]], predicted: Sequence[Mapping[str, Any]],
            dropped: Sequence[tuple[Direction, str, str]], rank: Ranker) -> Analysis:
    """The :class:`~factjudge.models.Analysis` of one judged document: ``gold`` and
    ``predicted`` are its output facts (final statuses and ``matched_ids``), ``dropped`` the
    links reconciliation dropped as duplicates (``Reconciliation.dropped``), ``rank`` the field
    comparison. Near-miss pairs are sought per fact type, between FN gold facts and the FP
    predictions that are not duplicates, in input order."""
    merges, splits = _granularity(gold, predicted, dropped)
    duplicates = {p for s in splits for p in s.dropped}
    subjects: dict[Any, list[Mapping[str, Any]]] = {}
    candidates: dict[Any, list[Mapping[str, Any]]] = {}
    for f in gold:
        if status_of(f) == "FN":
            subjects.setdefault(_type_key(f.get("fact_type")), []).append(f)
    for f in predicted:
        if status_of(f) == "FP" and str(f["id"]) not in duplicates:
            candidates.setdefault(_type_key(f.get("fact_type")), []).append(f)
    near: list[NearMiss] = []
    for key, subs in subjects.items():
        cands = candidates.get(key)
        if not cands:
            continue
        for s, c, closeness in pair_near_misses(rank(subs, cands)):
            near.append(NearMiss(fact_type=subs[s].get("fact_type"), gold=str(subs[s]["id"]),
                                 predicted=str(cands[c]["id"]), score=round(closeness.score, 1),
                                 agree=closeness.agree, differ=closeness.differ))
    order = {str(f["id"]): i for i, f in enumerate(gold)}
    near.sort(key=lambda n: order[n.gold])
    return Analysis(near_misses=near, merges=merges, splits=splits)


def _type_key(fact_type: object) -> Any:
    return fact_type if isinstance(fact_type, (str, int, float, bool, type(None))) else repr(fact_type)


@dataclass(slots=True)
class CategoryTally:
    """:class:`~factjudge.models.CategoryCounts` as plain counters: what the finishing pass sums per
    document (a pydantic model per fact type and document, and its setattr per fact, cost 0.1 ms
    a document of 20 facts); :meth:`counts` makes the model."""

    #: Per category (and ``merges``, ``splits``), its count; absent: 0.
    n: dict[str, int] = field(default_factory=dict)
    near_miss_fields: dict[str, int] = field(default_factory=dict)
    one_field: dict[str, int] = field(default_factory=dict)

    def add(self, other: CategoryTally) -> None:
        for mine, theirs in ((self.n, other.n), (self.near_miss_fields, other.near_miss_fields),
                             (self.one_field, other.one_field)):
            for key, k in theirs.items():
                mine[key] = mine.get(key, 0) + k

    def counts(self) -> CategoryCounts:
        return CategoryCounts(**self.n, near_miss_fields=dict(self.near_miss_fields),
                              one_field=dict(self.one_field))


def count_categories(line: Mapping[str, Any]) -> dict[str, CategoryCounts]:
    """Per fact type (as a string), the categories of a result line (or ``to_dict()`` of a
    result): each in-scope fact that is not ERROR counted once, a near miss once for its pair."""
    return {t: c.counts() for t, c in category_tallies(line).items()}


def category_tallies(line: Mapping[str, Any]) -> dict[str, CategoryTally]:
    """:func:`count_categories` as :class:`CategoryTally`, per fact type in the order first met."""
    analysis = line_analysis(line)
    out: dict[str, CategoryTally] = {}

    def tally(fact_type: object) -> CategoryTally:
        key = str(fact_type)
        found = out.get(key)
        if found is None:
            found = out[key] = CategoryTally()
        return found

    marks = analysis.marks() if analysis.near_misses or analysis.merges or analysis.splits else {}
    for side in ("gold", "predicted"):
        for fact in line.get(f"{side}_facts") or ():
            status = status_of(fact)
            if status == "TP":  # correct counts links: once, on the gold side
                if side == "predicted":
                    continue
                category = "correct"
            elif status in ("ERROR", "OUT_OF_SCOPE"):
                continue
            else:
                category = fact_category(side, status, marks.get((side, str(fact.get("id")))))
                if category == "near_miss" and side == "predicted":
                    continue  # the pair counts once, on the gold side
            n = tally(fact.get("fact_type")).n
            n[category] = n.get(category, 0) + 1
    for nm in analysis.near_misses:
        c = tally(nm.fact_type)
        for name in nm.differ:
            c.near_miss_fields[name] = c.near_miss_fields.get(name, 0) + 1
        if len(nm.differ) == 1:
            c.one_field[nm.differ[0]] = c.one_field.get(nm.differ[0], 0) + 1
    for m in analysis.merges:
        n = tally(m.fact_type).n
        n["merges"] = n.get("merges", 0) + 1
    for s in analysis.splits:
        n = tally(s.fact_type).n
        n["splits"] = n.get("splits", 0) + 1
    return out


def total_categories(by_type: Mapping[str, CategoryCounts]) -> CategoryCounts:
    """The overall counts: the sum over fact types."""
    total = CategoryCounts()
    for c in by_type.values():
        total.add(c)
    return total


def sorted_counts(by_type: Mapping[str, CategoryCounts]) -> dict[str, CategoryCounts]:
    """``by_type`` in fact-type order, each field tally most frequent first (then by name)."""
    out = {}
    for t, c in sorted(by_type.items()):
        out[t] = c.model_copy(update={
            "near_miss_fields": dict(sorted(c.near_miss_fields.items(), key=lambda kv: (-kv[1], kv[0]))),
            "one_field": dict(sorted(c.one_field.items(), key=lambda kv: (-kv[1], kv[0])))})
    return out
