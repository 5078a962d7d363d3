"""Reconciliation of the two passes into final statuses and links. Pure: data in, data out.

The rules, in order (see docs/concepts/reconciliation.md for them in plain words):

1. Links: (g, p) for every gold verdict TP->p and every predicted verdict TP->g.
2. A link named only by the gold side is dropped when p's own verdict is FP (the predicted side
   decides); kept when p is TP->another gold or ERROR. A link named only by the predicted side is
   kept; a gold fact judged FN is then promoted.
3. A gold fact with several predicted links keeps one: the mutual link, else the one its own
   verdict named, else the earliest predicted fact. The others are dropped as duplicates.
4. With ``one_to_one``, a predicted fact with several gold links likewise keeps one.
5. ERROR stays ERROR; otherwise TP when a link remains, else FN (gold) / FP (predicted).

With ``link_policy="both"`` rule 2 is stricter: every one-sided link is dropped, so a link needs
both passes to name it (each fact of a dropped link then takes its negative status, with a note).
The links kept are then exactly the mutual ones, a subset of those ``"either"`` keeps (a fact names
one partner, so rules 3 and 4 never drop a mutual link): ``both`` never counts more TP.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple, Protocol

from ..models import Direction, NegativeStatus, PassStatus

#: ``either``: a link stands when either pass names it (rule 2); ``both``: only when both do.
LinkPolicy = Literal["either", "both"]


class PassVerdict(NamedTuple):
    status: PassStatus  # "TP", "FN" (gold), "FP" (predicted) or "ERROR"
    matched_id: str | None = None


class Decided(Protocol):
    """What reconciliation reads of a verdict: a :class:`PassVerdict`, or the pipeline's own
    per-fact record (no copy of a large document's verdicts is made for it)."""

    @property
    def status(self) -> PassStatus: ...

    @property
    def matched_id(self) -> str | None: ...


@dataclass(slots=True)
class Outcome:
    status: PassStatus
    matched_ids: list[str] = field(default_factory=list)
    notes: Sequence[str] = ()  # most facts have none: no empty list each


@dataclass(slots=True)
class Reconciliation:
    gold: dict[str, Outcome]
    predicted: dict[str, Outcome]
    #: Every note, in the order the rules produced them.
    notes: list[str]
    #: How many times each rule changed something, by kind (for aggregate reports).
    conflicts: dict[str, int]
    #: Links dropped as duplicates (rules 3 and 4): (side of the dropped fact, its id, the id of
    #: the fact of the other side that kept another link), in the order they were dropped.
    dropped: list[tuple[Direction, str, str]] = field(default_factory=list)


def reconcile(
    gold_ids: list[str],
    predicted_ids: list[str],
    gold_verdicts: Mapping[str, Decided],
    predicted_verdicts: Mapping[str, Decided],
    one_to_one: bool = False,
    link_policy: LinkPolicy = "either",
) -> Reconciliation:
    """Combine per-fact verdicts of both passes (in-scope facts only, ids in input order)."""
    g_order = {g: i for i, g in enumerate(gold_ids)}
    p_order = {p: i for i, p in enumerate(predicted_ids)}
    notes: list[str] = []
    fact_notes: dict[tuple[Direction, str], list[str]] = {}
    conflicts: dict[str, int] = {}
    dropped: list[tuple[Direction, str, str]] = []

    def note(kind: str, text: str, *facts: tuple[Direction, str]) -> None:
        notes.append(text)
        conflicts[kind] = conflicts.get(kind, 0) + 1
        for f in facts:
            fact_notes.setdefault(f, []).append(text)

    def named_by_gold(g: str, p: str) -> bool:
        v = gold_verdicts[g]
        return v.status == "TP" and v.matched_id == p

    def named_by_pred(g: str, p: str) -> bool:
        v = predicted_verdicts[p]
        return v.status == "TP" and v.matched_id == g

    # 1. every link either side named, in a deterministic order
    links: set[tuple[str, str]] = set()
    for g in gold_ids:
        v = gold_verdicts[g]
        if v.status == "TP" and v.matched_id in p_order:
            links.add((g, v.matched_id))
    for p in predicted_ids:
        v = predicted_verdicts[p]
        if v.status == "TP" and v.matched_id in g_order:
            links.add((v.matched_id, p))

    def ordered(pairs: set[tuple[str, str]]) -> list[tuple[str, str]]:
        return sorted(pairs, key=lambda gp: (g_order[gp[0]], p_order[gp[1]]))

    # 2. one-sided links
    for g, p in ordered(links):
        by_gold, by_pred = named_by_gold(g, p), named_by_pred(g, p)
        if by_gold and not by_pred and predicted_verdicts[p].status not in ("TP", "ERROR"):
            links.discard((g, p))
            note("gold_link_rejected_by_predicted",
                 f"gold {g} named predicted {p} as its match, but predicted {p} was judged "
                 f"{predicted_verdicts[p].status}; the predicted side decides, link dropped",
                 ("gold", g), ("predicted", p))
        elif link_policy == "both" and by_gold != by_pred:
            links.discard((g, p))
            namer, named = (f"gold {g}", f"predicted {p}") if by_gold else (f"predicted {p}", f"gold {g}")
            other = predicted_verdicts[p] if by_gold else gold_verdicts[g]
            answer = f"{other.status} -> {other.matched_id}" if other.status == "TP" else other.status
            note("one_sided_link_dropped",
                 f"{namer} named {named} as its match, but {named} was judged {answer}; "
                 "link_policy both needs both passes to name a link, link dropped",
                 ("gold", g), ("predicted", p))
        elif by_pred and not by_gold and gold_verdicts[g].status == "FN":
            note("gold_promoted_by_predicted",
                 f"gold {g} was judged FN, but predicted {p} names it as its match; "
                 f"gold {g} promoted to TP", ("gold", g), ("predicted", p))

    def is_mutual(g: str, p: str) -> bool:
        return named_by_gold(g, p) and named_by_pred(g, p)

    def adjacency(side: Direction) -> dict[str, list[str]]:
        """Each fact's remaining partners, in the partner side's input order."""
        adj: dict[str, list[str]] = {}
        for g, p in ordered(links):
            owner, partner = (g, p) if side == "gold" else (p, g)
            adj.setdefault(owner, []).append(partner)
        if side == "predicted":
            for partners in adj.values():
                partners.sort(key=g_order.__getitem__)
        return adj

    def keep_one(side: Direction, owner: str, partners: list[str], own: Decided) -> None:
        """Keep one of several links of ``owner``; the rest are dropped as duplicates."""
        pair = (lambda x: (owner, x)) if side == "gold" else (lambda x: (x, owner))
        mutual = [x for x in partners if is_mutual(*pair(x))]
        if mutual:
            kept = mutual[0]
        elif own.status == "TP" and own.matched_id in partners:
            kept = own.matched_id
        else:
            kept = partners[0]
        other: Direction = "predicted" if side == "gold" else "gold"
        for x in partners:
            if x != kept:
                links.discard(pair(x))
                dropped.append((other, x, owner))
                note(f"duplicate_{other}", f"{other} {x} dropped: duplicate of {kept} for {side} {owner}",
                     (other, x), (side, owner))

    # 3. a gold fact keeps at most one predicted link
    for g, partners in adjacency("gold").items():
        if len(partners) > 1:
            keep_one("gold", g, partners, gold_verdicts[g])

    # 4. optionally, a predicted fact keeps at most one gold link
    if one_to_one:
        for p, partners in sorted(adjacency("predicted").items(), key=lambda kv: p_order[kv[0]]):
            if len(partners) > 1:
                keep_one("predicted", p, partners, predicted_verdicts[p])

    # 5. final statuses
    def outcome(side: Direction, fact_id: str, own: Decided, partners: list[str],
                negative: NegativeStatus) -> Outcome:
        status: PassStatus = "ERROR" if own.status == "ERROR" else ("TP" if partners else negative)
        return Outcome(status, partners, fact_notes.get((side, fact_id), ()))

    gold_links, pred_links = adjacency("gold"), adjacency("predicted")
    gold = {g: outcome("gold", g, gold_verdicts[g], gold_links.get(g, []), "FN") for g in gold_ids}
    predicted = {p: outcome("predicted", p, predicted_verdicts[p], pred_links.get(p, []), "FP")
                 for p in predicted_ids}
    return Reconciliation(gold, predicted, notes, conflicts, dropped)
