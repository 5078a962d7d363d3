"""Issue 39: a plain written figure ("1,926.8", "$1926.8 million") is read by normalize._figure
without the period patterns and the number parser, into exactly what the full path makes."""
from __future__ import annotations

from typing import Any

import pytest
from calls import count_calls
from hypo import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from factjudge.judges.rules import normalize
from factjudge.judges.rules.normalize import READING, Reading, normalize_fact, parse_unit

_UNITS = [None, "USD million", "USD", "EUR", "%", "bps", "ft", "m", "million", "shares", "USD thousands",
          "EUR bn", "mm", "mg/kg", "per cent"]
_READINGS = [READING, Reading(decimal=","), Reading(families=frozenset())]


@st.composite
def figures(draw: Any) -> str:
    """Written figures around :data:`normalize._FIGURE`'s shapes, and some just outside them."""
    whole = draw(st.integers(0, 10 ** draw(st.sampled_from([1, 3, 4, 7, 13, 16]))))
    text = f"{whole:,}" if draw(st.booleans()) else str(whole)
    if draw(st.integers(0, 9)) == 0:
        text = draw(st.sampled_from(["0", "00", "012", "0,", "1,23", "1 234"])) + text
    if draw(st.booleans()):
        text += "." + draw(st.text("0123456789", max_size=17))
    if draw(st.booleans()):  # as a decimal comma writes it ("1.234,50")
        text = text.translate({ord(","): ".", ord("."): ","})
    if draw(st.booleans()):
        text = draw(st.sampled_from(["$", "€", "£", "¥", "us$", "-", "~", "(", " ", "USD "])) + text
    if draw(st.booleans()):
        scale = draw(st.sampled_from(["million", "m", "mm", "bn", "b", "k", "thousand", "thousands", "tn",
                                      "trillions", "mln", "Million", "t", "%", "x", "000", "'000", "cents"]))
        text += draw(st.sampled_from([" ", "", "  "])) + scale
    return text


def _same_as_the_full_path(text: str, unit_text: str | None, amount: bool, reading: Reading,
                           suffixes: bool) -> None:
    unit = parse_unit(unit_text) if unit_text is not None else None
    if unit is not None and not unit.is_numeric:
        unit = None  # as a fact's plan hands over no unit that changes nothing
    fast = normalize._normalize_value(text, suffixes, unit, amount, reading)
    full = normalize._normalize_string(text, suffixes, unit, amount, reading)
    assert repr(fast) == repr(full)  # every field, each Decimal with its exponent
    assert fast == full and fast.describe() == full.describe()


@settings(max_examples=examples(4000), deadline=None)
@given(figures(), st.sampled_from(_UNITS), st.booleans(), st.sampled_from(_READINGS), st.booleans())
def test_a_figure_reads_as_the_full_path_reads_it(text: str, unit: str | None, amount: bool,
                                                  reading: Reading, suffixes: bool) -> None:
    _same_as_the_full_path(text, unit, amount, reading, suffixes)


@settings(max_examples=examples(4000), deadline=None)
@given(st.sampled_from(list(normalize._FIGURES.values())).flatmap(
           lambda pattern: st.from_regex(pattern, fullmatch=True)),
       st.sampled_from(_UNITS), st.booleans(), st.sampled_from(_READINGS), st.booleans())
def test_every_text_of_the_figure_pattern_reads_as_the_full_path_reads_it(text: str, unit: str | None,
                                                                         amount: bool, reading: Reading,
                                                                         suffixes: bool) -> None:
    _same_as_the_full_path(text, unit, amount, reading, suffixes)


def test_the_benchmark_s_figures_are_read_without_the_period_patterns_or_the_number_parser(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The 1M benchmark's values are nearly all new to the run (84,738 first-time readings in
    10,000 documents): each was tried as a period and parsed by parse_number (13.7 us a value);
    a plain figure is read by one match (4.1 us). Before: 5 parse_period and 3 parse_number calls."""
    monkeypatch.setattr(normalize, "_VALUES", {})  # every value new, as the benchmark's are
    monkeypatch.setattr(normalize, "_FACTS", {})
    periods = count_calls(monkeypatch, normalize, "parse_period")
    numbers = count_calls(monkeypatch, normalize, "parse_number")
    skip = frozenset({"id"})
    gold = normalize_fact({"id": "g0", "entity": "Company 4331", "period": "FY2023", "value": "7,926.81",
                           "unit": "USD million"}, skip=skip)
    pred = normalize_fact({"id": "p0", "entity": "Company 4331", "period": "fiscal 2023",
                           "value": "$7926.81 million", "unit": "USD"}, skip=skip)
    assert gold["value"].describe() == "7,926.81 [USD million] = 7926810000 USD"
    assert pred["value"].describe() == "$7926.81 million [USD] = 7926810000 USD"
    assert gold["value"] != pred["value"] and gold["value"].value == pred["value"].value
    assert numbers[0] == 1  # the entity's ("Company 4331" is no number)
    assert periods[0] == 3  # the entity's and the two periods': FY2023, fiscal 2023


def test_a_decimal_comma_s_figures_are_read_without_the_number_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 39, item 3: a European invoice's prices ("1.234,50" with decimal_separator ',') took
    the full path while the flat facts' figures took one match, and the records with lists came to
    cost more per value than flat facts (0.081 against 0.075 ms). Before: 2 parse_number calls."""
    monkeypatch.setattr(normalize, "_VALUES", {})
    numbers = count_calls(monkeypatch, normalize, "parse_number")
    comma = Reading(decimal=",")
    price = normalize._normalize_value("1.234,50", False, None, True, comma)
    total = normalize._normalize_value("€12,5 million", False, None, True, comma)
    assert (price.describe(), str(price.value)) == ("1.234,50 = 1234.5", "1234.50")
    assert total.value == 12_500_000 and total.currency == "EUR"
    assert numbers[0] == 0
