"""Scope filtering, done in code before any judge call."""
from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

from ..errors import InputError
from ..models import OUTPUT_FIELDS, JudgeConfig

#: Never data to compare: the identity, the type, factjudge's own output fields.
NOT_COMPARED = frozenset({"id", "fact_type", *OUTPUT_FIELDS})


def is_in_scope(fact: dict[str, Any], config: JudgeConfig) -> bool:
    """A fact is in scope when its type is listed, or when no types are listed at all."""
    return not config.entity_types or fact["fact_type"] in config.entity_types


def in_scope_facts(facts: list[dict[str, Any]], config: JudgeConfig) -> list[dict[str, Any]]:
    return [f for f in facts if is_in_scope(f, config)]


def _fields(facts: Iterable[dict[str, Any]]) -> dict[str, dict[str, None]]:
    out: dict[str, dict[str, None]] = {}
    for fact in facts:
        seen = out.setdefault(fact["fact_type"], {})
        for key in fact:
            if key not in NOT_COMPARED:
                seen[key] = None
    return out


def compared_fields(gold: list[dict[str, Any]], predicted: list[dict[str, Any]],
                    config: JudgeConfig) -> tuple[dict[str, tuple[str, ...]] | None, list[str]]:
    """The fields compared per ``fact_type`` and the warnings about them. ``config.fields`` when
    given (None here: judges use it as it is); otherwise the fields the gold facts of that type
    carry, the reference deciding what a fact is. Fields only predictions carry (``confidence``,
    ``page``...) are not compared, and gold fields no prediction has are named."""
    if config.fields is not None:
        return None, []
    gold_fields, pred_fields = _fields(gold), _fields(predicted)
    warnings = []
    for fact_type in sorted(set(gold_fields) & set(pred_fields)):
        only_pred = [f for f in pred_fields[fact_type] if f not in gold_fields[fact_type]]
        only_gold = [f for f in gold_fields[fact_type] if f not in pred_fields[fact_type]]
        if only_pred:
            warnings.append(f"{fact_type}: predicted facts carry {', '.join(only_pred)}, which no gold "
                            "fact of this type has: not compared (set 'fields' to compare them)")
        if only_gold:
            warnings.append(f"{fact_type}: gold facts carry {', '.join(only_gold)}, which no predicted "
                            "fact of this type has: such predictions cannot match")
    return {t: tuple(f) for t, f in gold_fields.items()}, warnings


def scope_check(config: JudgeConfig, fact_types: Iterable[str], source: str) -> list[str]:
    """Warnings for ``entity_types`` values no fact has (a typo puts every fact out of scope);
    an :class:`InputError` when facts exist but none is in scope."""
    present = set(fact_types)
    if not config.entity_types:
        return []
    unknown = [t for t in config.entity_types if t not in present]
    warnings = []
    for t in unknown:
        close = difflib.get_close_matches(t, sorted(present), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        warnings.append(f"entity_types {t!r} matches no fact in {source}{hint}")
    if present and not present & set(config.entity_types):
        raise InputError(f"{source}: no fact is in scope: entity_types {list(config.entity_types)} "
                         f"matches none of the fact types present ({', '.join(sorted(present))})")
    return warnings


def field_check(config: JudgeConfig, present: Iterable[str], source: str) -> list[str]:
    """Check the fields the config names against ``present``, every field any fact of the run
    carries (gold or predicted, every document). A ``fields`` entry no fact has compares nothing,
    so every pair of one fact_type would match (``["valeu"]`` turned recall 0.0 into 1.0): an
    :class:`InputError`. A ``tolerances`` entry no fact has is ignored: a warning."""
    have = set(present)
    known = sorted(have - NOT_COMPARED)

    def hint(name: str) -> str:
        close = difflib.get_close_matches(name, known, n=1)
        return f" (did you mean {close[0]!r}?)" if close else ""

    if have:  # nothing to judge is not a mistake
        for name in config.fields or ():
            if name not in have:
                raise InputError(f"config key 'fields': no fact in {source} carries {name!r}"
                                 f"{hint(name)}; a field no fact has compares nothing, so every "
                                 "pair of the same fact_type would match")
    return [f"tolerances {name!r}: no fact in {source} carries this field{hint(name)}: ignored"
            for name in config.tolerances if have and name not in have]


def matching_rules_check(config: JudgeConfig) -> list[str]:
    """The warning of a judge that reads no prompt (the rules judge) when ``matching_rules`` are
    given: they would be silently ignored (issue #22 item 5)."""
    if not config.matching_rules:
        return []
    return [f"matching_rules ({len(config.matching_rules)}) are read by LLM judges only and are "
            "ignored by the rules judge: declare equivalent values with 'aliases' or "
            "'aliases_file' instead"]
