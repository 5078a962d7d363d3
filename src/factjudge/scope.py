"""Scope filtering, done in code before any judge call."""
from __future__ import annotations

from typing import Any

from .models import JudgeConfig


def is_in_scope(fact: dict[str, Any], config: JudgeConfig) -> bool:
    """A fact is in scope when its type is listed, or when no types are listed at all."""
    return not config.entity_types or fact["fact_type"] in config.entity_types


def in_scope_facts(facts: list[dict[str, Any]], config: JudgeConfig) -> list[dict[str, Any]]:
    return [f for f in facts if is_in_scope(f, config)]
