"""Issue 39: a value and a fact are normalised once per run; equal keys of other types are not mixed."""
from __future__ import annotations

import datetime
import json
from typing import Any

import pytest
from calls import count_calls
from hypo import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from factjudge.judges.rules import normalize
from factjudge.judges.rules.normalize import READING, Other, Quantity, Reading, normalize_fact, normalize_value
from factjudge.models import JudgeConfig


def test_a_fact_is_normalised_once() -> None:
    fact = {"id": "g1", "fact_type": "revenue", "company": "Acme Inc.", "value": "1,234.5", "unit": "USD million"}
    first = normalize_fact(fact, skip=frozenset({"id", "fact_type"}))
    again = normalize_fact(dict(fact, id="p7"), skip=frozenset({"id", "fact_type"}))
    assert again is first  # the same content: the form worked out before


def test_equal_values_of_other_types_normalise_apart() -> None:
    assert isinstance(normalize_value(1), Quantity)
    assert isinstance(normalize_value(True), Other)  # True == 1: the cache keys on the type too
    assert isinstance(normalize_value(1.0), Quantity)
    assert normalize_fact({"a": True}) != normalize_fact({"a": 1})


def test_lists_of_records_are_cached_by_their_items() -> None:
    items = [{"sku": "A1", "qty": 2}, {"sku": "B2", "qty": 1}]
    assert normalize_fact({"line_items": items}) is normalize_fact({"line_items": [dict(i) for i in items]})


def test_values_are_quoted_as_json_writes_them() -> None:
    from factjudge.judges.rules.normalize import quote

    for text in ["Acme Inc.", 'say "x"', "a\\b", "tab\there", "Zürich", "\x7f", "", "1,234.5 USD"]:
        assert quote(text) == json.dumps(text, ensure_ascii=False)


def test_a_facts_list_is_keyed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 39 item 3: a fact's cache key holds its list's; normalising the list reads that key
    rather than working it out again, and a record's scalar keys are written inline (a list of 5
    records of 3 fields: 58 key calls, now the list and its 5 records once each)."""
    real = normalize._value_key
    calls = count_calls(monkeypatch, normalize, "_value_key")
    items = [{"description": f"Part {n} keyed", "quantity": n, "unit_price": f"{n},50"} for n in range(1, 6)]
    values = normalize_fact({"number": "INV-9", "line_items": items})
    assert calls[0] == 6  # before: 58
    listed = values["line_items"]
    assert isinstance(listed, normalize.Items) and len(listed.items) == 5
    assert listed.items[0].values["unit_price"] == normalize_value("1,50")
    monkeypatch.setattr(normalize, "_value_key", real)
    assert normalize_value(items) is listed  # the list's own form, shared under its key


def test_a_reading_is_one_object_per_reading() -> None:
    # the memos of normal forms are keyed by it: an equal one made anew for each document's index
    # was compared field by field on every hit
    assert Reading.of(JudgeConfig()) is READING
    comma = Reading.of(JudgeConfig(decimal_separator=","))
    assert comma is Reading.of(JudgeConfig(decimal_separator=",")) and comma.decimal == "," and comma != READING


_SHAPED = [  # (first fact, second fact of the same keys and unit texts)
    ({"value": "1,926.8", "unit": "USD million"}, {"value": "$2,103.4 million", "unit": "USD million"}),
    ({"revenue": "12.5", "revenue_unit": "EUR bn", "period": "FY2023"},
     {"revenue": "about 13", "revenue_unit": "EUR bn", "period": "fiscal 2024"}),
    ({"weight": "3", "unit": "kg"}, {"weight": "heavy", "unit": "kg"}),  # no amount field: by the values
    ({"amount": "15.6", "unit": "in", "scale": "thousand"}, {"amount": "12", "unit": "in", "scale": "thousand"}),
    ({"price": 12, "currency": "GBP", "unit": None}, {"price": "12.50", "currency": "GBP", "unit": None}),
]


@pytest.mark.parametrize(("first", "second"), _SHAPED)
def test_a_facts_unit_plan_is_reused_only_as_it_would_be_made(first: dict[str, Any], second: dict[str, Any]) -> None:
    normalize._PLANS.clear()
    normalize._FACTS.clear()
    fresh = normalize._normalize_fact(second, False, frozenset(), READING)
    normalize._PLANS.clear()
    normalize.normalize_fact(first)  # its plan kept, then read for the second fact
    assert normalize._normalize_fact(second, False, frozenset(), READING) == fresh


def test_a_facts_unit_plan_is_worked_out_once_per_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = count_calls(monkeypatch, normalize, "unit_target")
    normalize_fact({"id": "g1", "value": "1,926.8", "unit": "USD million"}, skip=frozenset({"id"}))
    made = calls[0]
    assert made > 0
    normalize_fact({"id": "g2", "value": "2,103.4", "unit": "USD million"}, skip=frozenset({"id"}))
    assert calls[0] == made  # (before: every unit field's target read again for each new fact)


class _CountedPattern:
    def __init__(self, pattern: Any, calls: list[int]) -> None:
        self.pattern, self.calls = pattern, calls

    def findall(self, text: str) -> list[str]:
        self.calls[0] += 1
        return list(self.pattern.findall(text))


def test_a_short_texts_numbers_are_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = [0]
    monkeypatch.setattr(normalize, "_NUMBER_IN_TEXT", _CountedPattern(normalize._NUMBER_IN_TEXT, calls))
    normalize._short_text_numbers.cache_clear()
    assert [normalize.text_numbers("company 433 unit 05") for _ in range(3)] == [("433", "5")] * 3
    assert calls[0] == 1
    long = "x 2.50 " + "y" * 300  # never kept: read each time
    assert normalize.text_numbers(long) == normalize.text_numbers(long) == ("2.5",) and calls[0] == 3


def test_a_list_without_nan_in_its_json_is_not_walked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 39 item 3: an invoice's line items were walked for a NaN (13.8 us) beside their JSON
    (10.3 us); a NaN float is written NaN in that JSON, so a list whose JSON says none is not."""
    walks = count_calls(monkeypatch, normalize, "_holds_nan")
    items = [{"description": f"Part {n} walked", "quantity": n, "unit_price": n + 0.5} for n in range(1, 6)]
    assert isinstance(normalize_value(items), normalize.Items)
    assert walks[0] == 0  # before: 1
    assert normalize_value([{"description": "NaN", "quantity": 1}]).items[0].label == "NaN"  # type: ignore[union-attr]
    assert walks[0] == 1  # a text saying NaN: walked, and no NaN found
    held = normalize_value([{"description": "x", "unit_price": float("nan")}])
    assert isinstance(held, Other) and held.nan


_SCALAR = st.one_of(st.floats(), st.sampled_from(["NaN", "#", "a", 1, None, True, datetime.date(2024, 1, 2)]))
_NESTED = st.recursive(_SCALAR, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.sampled_from(["a", "NaN", "k"]), inner, max_size=3), max_leaves=8)


@given(_NESTED)
@settings(max_examples=examples(300), deadline=None)
def test_the_json_tells_a_nan_as_the_walk_does(value: Any) -> None:
    # JSON values and the odd ones a Python caller may hand over (a date: written by str)
    assert normalize._may_hold_nan(value, normalize.lenient_json(value)) == normalize._holds_nan(value)
