"""Likely mistakes behind a confident score, found from the inputs and the counts of a run: each is
a warning (stderr, ``warnings``) and, for a report, an :class:`Alert` (a banner). Pure: data in,
data out.

What counts as a likely mistake (issue #24, each met by a new user with exit 0 and no word):
fact types that differ between the sides only in case or separators (``Revenue`` vs ``revenue``:
F1 0.000), ``entity_types`` values that match no fact (a typo put the failing facts out of scope:
P/R/F1 1.000), a side with no fact at all (the extractor crashed: all FN), and a run whose ERROR
facts are more than :data:`ERROR_SHARE_ALERT` of its in-scope facts (the figures rest on the few
facts judged).
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import InputError
from ..models import DIRECTIONS, Counts, Direction, JudgeConfig
from ..models.base import Model
from .scope import field_check, scope_check

#: An ERROR share of the in-scope facts above this raises the ``errors`` alert (issue #24: "ERROR
#: facts > 5% of in-scope facts"); below it the figures still rest on nearly every fact.
ERROR_SHARE_ALERT = 0.05

AlertKind = Literal["errors", "entity_types", "fact_type_case", "empty_side", "linked_against_proof"]


class Alert(Model):
    """A finding a report shows as a banner above its figures (``summary.alerts``)."""

    kind: AlertKind
    message: str


@dataclass
class InputShape:
    """Per side: the fact types met (in the order met) and how many facts, over a whole run."""

    types: dict[Direction, dict[str, None]] = field(
        default_factory=lambda: {d: {} for d in DIRECTIONS})
    facts: dict[Direction, int] = field(default_factory=lambda: dict.fromkeys(DIRECTIONS, 0))

    def add(self, gold: Iterable[Mapping[str, Any]], predicted: Iterable[Mapping[str, Any]]) -> None:
        sides: tuple[tuple[Direction, Iterable[Mapping[str, Any]]], ...] = (("gold", gold), ("predicted", predicted))
        for side, facts in sides:
            seen = self.types[side]
            n = 0
            for fact in facts:
                seen[fact["fact_type"]] = None
                n += 1
            self.facts[side] += n


def shape_of(gold: Iterable[Mapping[str, Any]], predicted: Iterable[Mapping[str, Any]]) -> InputShape:
    shape = InputShape()
    shape.add(gold, predicted)
    return shape


def _type_key(name: str) -> str:
    return re.sub(r"[\s_\-]+", "_", name.strip().casefold())


def case_mismatches(shape: InputShape) -> list[str]:
    """Fact types on one side only that differ from one on the other side in case or separators
    only: types are compared exactly, so their facts never match."""
    gold, pred = shape.types["gold"], shape.types["predicted"]
    pred_keys: dict[str, list[str]] = {}
    for t in pred:
        if t not in gold:
            pred_keys.setdefault(_type_key(t), []).append(t)
    out = []
    for t in gold:
        if t not in pred and (others := pred_keys.get(_type_key(t))):
            out.append(f"fact_type {t!r} (gold) and {others[0]!r} (predicted) differ only in case or "
                       "separators: fact types are compared exactly, so these facts never match; "
                       "write them the same way in both files")
    return out


def empty_sides(shape: InputShape) -> list[str]:
    """A side without any fact while the other has some: every fact of the other side is missed
    (or spurious) because of the input, not the system."""
    out = []
    cases: tuple[tuple[Direction, Direction, str], ...] = (("predicted", "gold", "missed (FN)"),
                                                           ("gold", "predicted", "spurious (FP)"))
    for side, other, outcome in cases:
        if not shape.facts[side] and shape.facts[other]:
            out.append(f"no {side} facts at all: every {other} fact counts as {outcome}; check that "
                       f"the {side} input is the right one and is complete")
    return out


def unmatched_entity_types(config: JudgeConfig, shape: InputShape) -> list[str]:
    """The ``entity_types`` values no fact of either side has."""
    present = {*shape.types["gold"], *shape.types["predicted"]}
    return [t for t in config.entity_types if t not in present]


def entity_types_alert(config: JudgeConfig, shape: InputShape, out_of_scope: int) -> Alert | None:
    unknown = unmatched_entity_types(config, shape)
    if not unknown:
        return None
    scope = (f"{out_of_scope} fact(s) of types not listed are out of scope and not scored" if out_of_scope
             else "no fact is out of scope")
    return Alert(kind="entity_types",
                 message=f"entity_types {', '.join(map(repr, unknown))} match(es) no fact; {scope}: "
                         "check the spelling of entity_types before trusting these figures")


def in_scope_facts_count(counts: Counts) -> int:
    """The in-scope facts of both sides: TP, FN, FP and ERROR."""
    return counts.tp_gold + counts.fn + counts.tp_predicted + counts.fp + counts.errors


def error_alert(counts: Counts) -> Alert | None:
    """The ``errors`` alert when ERROR facts are more than :data:`ERROR_SHARE_ALERT` of the
    in-scope facts: precision and recall then rest on the other facts only."""
    total = in_scope_facts_count(counts)
    if not total or counts.errors / total <= ERROR_SHARE_ALERT:
        return None
    judged = total - counts.errors
    return Alert(kind="errors",
                 message=f"{counts.errors} of {total} in-scope facts ({counts.errors / total:.0%}) could "
                         f"not be judged (ERROR): precision, recall and F1 rest on the other {judged} "
                         "only; run again to retry them")


#: Examples a ``linked_against_proof`` alert names, at most.
PROOF_EXAMPLES = 3
#: How each hard field's kind is said: "whose numbers differ" (judges/rules/proof.py's kinds).
_KIND_WORDS = {"number": "numbers", "date": "dates", "identifier": "identifiers"}


@dataclass
class ProofLinks:
    """The links of a run whose pair the rules prove different on a hard field (a number beyond
    tolerance, a date, an identifier): per kind how many, and the first examples as
    ``total 936.32 vs 936.33``."""

    kinds: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)

    def add(self, kind: str, example: str) -> None:
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        if len(self.examples) < PROOF_EXAMPLES:
            self.examples.append(example)

    @property
    def count(self) -> int:
        return sum(self.kinds.values())


def proof_alert(links: ProofLinks) -> Alert | None:
    """The ``linked_against_proof`` alert: the judge (an LLM: the rules judge proves what it
    links) linked pairs the rules prove different."""
    if not links.count:
        return None
    kinds = " and ".join(_KIND_WORDS.get(k, k) for k in sorted(links.kinds, key=links.kinds.__getitem__,
                                                                  reverse=True))
    more = ", ..." if links.count > len(links.examples) else ""
    return Alert(kind="linked_against_proof",
                 message=f"the LLM linked {links.count} pair{'s' if links.count != 1 else ''} whose {kinds} "
                         f"differ: {', '.join(links.examples)}{more}; the rules prove these pairs different, so "
                         "these TPs are likely wrong: review them (review.html), or use --judge hybrid, which "
                         "does not ask the model about such pairs")


def run_alerts(config: JudgeConfig, shape: InputShape, counts: Counts, out_of_scope: int,
               proof_links: ProofLinks | None = None) -> list[Alert]:
    """Every alert of a run, in the order a reader should see them."""
    alerts = [a for a in (error_alert(counts), entity_types_alert(config, shape, out_of_scope)) if a]
    if proof_links is not None and (proof := proof_alert(proof_links)) is not None:
        alerts.append(proof)
    alerts += [Alert(kind="empty_side", message=m) for m in empty_sides(shape)]
    alerts += [Alert(kind="fact_type_case", message=m) for m in case_mismatches(shape)]
    return alerts


def input_warnings(shape: InputShape) -> list[str]:
    """The warnings about the inputs that :func:`run_alerts` also raises as alerts (scope has its
    own, :func:`factjudge.core.scope.scope_check`)."""
    return [*empty_sides(shape), *case_mismatches(shape)]


def document_warnings(config: JudgeConfig, gold: list[dict[str, Any]], predicted: list[dict[str, Any]],
                      source: str) -> list[str]:
    """What ``factjudge judge`` warns about one document's validated facts, for the library's
    ``run_judge``: scope (nothing in scope is a warning here, not an error: the facts come back
    OUT_OF_SCOPE), tolerances no fact has, an empty side, types differing in case only. A
    ``fields`` entry no fact has stays an :class:`InputError` (every pair would match)."""
    facts = [*gold, *predicted]
    try:
        out = scope_check(config, {f["fact_type"] for f in facts}, source)
    except InputError as exc:
        out = [str(exc)]
    out += field_check(config, {k for f in facts for k in f}, source)
    return out + input_warnings(shape_of(gold, predicted))
