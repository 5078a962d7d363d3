"""The words of a judged fact: the two directions, the statuses a pass and a fact can have, and the
verdict factjudge adds to every output fact (under the one key :data:`VERDICT_KEY`), with the
accessors every reader uses (:func:`verdict_of`, :func:`own_fields`), which read both layouts."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

Direction = Literal["gold", "predicted"]
#: A fact judged unmatched: FN in the gold pass, FP in the predicted pass.
NegativeStatus = Literal["FN", "FP"]
PassStatus = Literal["TP", "FN", "FP", "ERROR"]
Status = Literal["TP", "FN", "FP", "ERROR", "OUT_OF_SCOPE"]
DIRECTIONS: tuple[Direction, Direction] = ("gold", "predicted")
PASS_STATUSES: tuple[PassStatus, ...] = ("TP", "FN", "FP", "ERROR")

#: The fields of factjudge's verdict on a fact. An output fact is the input fact unchanged plus
#: these under :data:`VERDICT_KEY`, so a fact's own field may have any of these names.
OUTPUT_FIELDS = ("in_scope", "status", "matched_ids", "description", "reasoning", "linked_reasoning",
                 "votes")
#: The one key factjudge adds to an output fact, holding its verdict (:data:`OUTPUT_FIELDS`); the
#: one field name an input fact may not have.
VERDICT_KEY = "factjudge"


def verdict_of(fact: Mapping[str, Any]) -> Mapping[str, Any]:
    """factjudge's verdict on an output fact: its :data:`VERDICT_KEY` dict, or, for a fact
    written by an older factjudge (the verdict fields beside the fact's own, which then could not have those
    names), the fact itself. Read it with ``.get`` (``verdict_of(f).get("status")``)."""
    verdict = fact.get(VERDICT_KEY)
    return verdict if isinstance(verdict, dict) else fact


def status_of(fact: Mapping[str, Any]) -> Any:
    """The status of an output fact (see :func:`verdict_of`); None for an unjudged fact."""
    return verdict_of(fact).get("status")


def own_fields(fact: Mapping[str, Any]) -> dict[str, Any]:
    """An output fact's own fields, as the input had them, without factjudge's verdict (either
    layout, see :func:`verdict_of`)."""
    if isinstance(fact.get(VERDICT_KEY), dict):
        return {k: v for k, v in fact.items() if k != VERDICT_KEY}
    return {k: v for k, v in fact.items() if k not in OUTPUT_FIELDS}

