"""The words of a judged fact: the two directions, the statuses a pass and a fact can have, and the
fields factjudge adds to every output fact."""
from __future__ import annotations

from typing import Literal

Direction = Literal["gold", "predicted"]
#: A fact judged unmatched: FN in the gold pass, FP in the predicted pass.
NegativeStatus = Literal["FN", "FP"]
PassStatus = Literal["TP", "FN", "FP", "ERROR"]
Status = Literal["TP", "FN", "FP", "ERROR", "OUT_OF_SCOPE"]
DIRECTIONS: tuple[Direction, Direction] = ("gold", "predicted")
PASS_STATUSES: tuple[PassStatus, ...] = ("TP", "FN", "FP", "ERROR")

#: Fields factjudge adds to every output fact; an input fact may not carry them.
OUTPUT_FIELDS = ("in_scope", "status", "matched_ids", "description", "reasoning", "linked_reasoning",
                 "votes")
