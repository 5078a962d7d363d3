"""Rules judge: numbers as European, Swiss and Indian business documents write them (German scale
abbreviations, thousands apostrophes, lakh grouping, an accounting minus after the figure, kr, zł
and Rs). Each test failed before its fix; the controls beside it keep different values apart."""
from decimal import Decimal

import pytest
from evalkit import rules_link

from factjudge.judges.rules.normalize import (
    Quantity,
    Reading,
    Text,
    normalize_fact,
    normalize_value,
    parse_number,
    parse_unit,
)

COMMA = Reading(decimal=",")


def _amount(text: str, reading: Reading = Reading()) -> tuple[Decimal, str | None] | None:
    q = parse_number(text, reading)
    return None if q is None else (q.value, q.currency)


# --------------------------------------------------------------------------- 1. Mio., Mrd., Tsd., TEUR

DE = {"decimal_separator": ","}


def test_a_unit_in_german_millions_scales_the_amount_as_an_english_one_does():
    """{"value": "1,2", "unit": "Mio. EUR"} was read as 1.2 EUR: "Mio." was a word of the unit."""
    german = {"value": "1,2", "unit": "Mio. EUR"}
    assert rules_link(german, {"value": 1200000, "unit": "EUR"}, DE)
    assert rules_link(german, {"value": "1.2", "unit": "EUR million"}, DE)
    # the same figure as a decimal-point config reads the English writing
    de = normalize_fact(german, reading=COMMA)["value"]
    en = normalize_fact({"value": "1.2", "unit": "EUR million"})["value"]
    assert isinstance(de, Quantity) and isinstance(en, Quantity)
    assert (de.value, de.currency) == (en.value, en.currency) == (Decimal(1200000), "EUR")
    # controls: another scale, another currency, the bare number
    assert not rules_link(german, {"value": "1,2", "unit": "Mrd. EUR"}, DE)
    assert not rules_link(german, {"value": "1,2", "unit": "Mio. USD"}, DE)
    assert not rules_link(german, {"value": "1,2", "unit": "EUR"}, DE)


@pytest.mark.parametrize(("text", "value", "currency"), [
    ("1,2 Mio. EUR", 1200000, "EUR"), ("1,2 Mio. €", 1200000, "EUR"), ("EUR 1,2 Mio.", 1200000, "EUR"),
    ("1,2 EUR Mio.", 1200000, "EUR"), ("1,5 Mio", 1500000, None), ("3 Mrd", 3000000000, None),
    ("1,2 Mrd. EUR", 1200000000, "EUR"), ("2 Tsd.", 2000, None), ("5 Tsd. EUR", 5000, "EUR"),
    ("5 TEUR", 5000, "EUR"), ("5 T€", 5000, "EUR"), ("10 TCHF", 10000, "CHF"), ("(1,2) Mio.", -1200000, None),
])
def test_german_scale_abbreviations_in_a_value_are_read(text, value, currency):
    assert _amount(text, COMMA) == (Decimal(value), currency)


def test_a_value_text_in_german_millions_equals_the_figure():
    assert rules_link({"v": "1,2 Mio. EUR"}, {"v": 1200000}, DE)
    assert rules_link({"v": "1,2 Mio. EUR"}, {"v": "1.2 million EUR"}, DE)
    assert rules_link({"v": "5 T€"}, {"v": "5.000 €"}, DE)  # was 5 trillion euros
    assert not rules_link({"v": "1,2 Mio. EUR"}, {"v": "1,2 Mrd. EUR"}, DE)
    assert not rules_link({"v": "5 T€"}, {"v": "5 trillion EUR"}, DE)
    assert not rules_link({"v": "1,2 Mio. EUR"}, {"v": "1.200 EUR"}, DE)


@pytest.mark.parametrize(("text", "currency", "scale"), [
    ("Mio. EUR", "EUR", 10 ** 6), ("Mrd. EUR", "EUR", 10 ** 9), ("Mio. €", "EUR", 10 ** 6), ("EUR Mio", "EUR", 10 ** 6),
    ("TEUR", "EUR", 10 ** 3), ("T€", "EUR", 10 ** 3), ("Tsd. €", "EUR", 10 ** 3), ("TCHF", "CHF", 10 ** 3),
])
def test_german_scale_abbreviations_in_a_unit_are_read(text, currency, scale):
    u = parse_unit(text)
    assert (u.currency, u.scale, u.rest) == (currency, Decimal(scale), None)


def test_mio_is_a_scale_only_after_a_figure_or_in_a_unit():
    """A name holding the word stays a name ("Mio" is a brand and a given name)."""
    for name in ("Mio", "Mio Corp", "Studio 54 Mio", "Mio 5"):
        assert isinstance(normalize_value(name, reading=COMMA), Text), name
    assert not rules_link({"name": "Mio Technology"}, {"name": "Million Technology"})
    assert rules_link({"name": "Mio Technology"}, {"name": "MIO Technology"})


# --------------------------------------------------------------------------- 2. Swiss apostrophes


@pytest.mark.parametrize("text", ["1'234.5", "1’234.5", "1'234,5"])
def test_thousands_apostrophes_are_read(text):
    assert _amount(text) == (Decimal("1234.5"), None)


def test_a_swiss_figure_equals_the_number():
    assert rules_link({"v": "CHF 1'234.50"}, {"v": 1234.5})
    assert rules_link({"v": "1’234’567"}, {"v": "1,234,567"})
    assert not rules_link({"v": "1'234.5"}, {"v": 1234.6})
    assert _amount("5'11") is None  # feet and inches, no thousands


# --------------------------------------------------------------------------- 3. Indian grouping


def test_indian_digit_grouping_is_read_with_a_decimal_point():
    assert _amount("12,34,567") == (Decimal(1234567), None)
    assert _amount("Rs 1,00,000") == (Decimal(100000), "INR")
    assert _amount("1,23,45,678.50") == (Decimal("12345678.50"), None)
    assert rules_link({"v": "12,34,567"}, {"v": 1234567})
    assert rules_link({"v": "₹ 1,00,000"}, {"v": "1 lakh"})
    assert not rules_link({"v": "12,34,567"}, {"v": 1234568})


def test_indian_grouping_is_no_number_under_a_decimal_comma_or_with_a_long_head():
    assert _amount("12,34,567", COMMA) is None
    assert _amount("123,45,678") is None  # no lakh grouping: three digits before the first pair


# --------------------------------------------------------------------------- 4. accounting minus


def test_an_accounting_minus_after_a_figure_is_a_negative():
    assert _amount("1.234-", COMMA) == (Decimal(-1234), None)
    assert _amount("1,234-") == (Decimal(-1234), None)
    assert _amount("1.234,56- EUR", COMMA) == (Decimal("-1234.56"), "EUR")
    assert rules_link({"v": "1.234-"}, {"v": -1234}, DE)
    assert rules_link({"v": "1,234-"}, {"v": "(1,234)"})
    assert not rules_link({"v": "1,234-"}, {"v": 1234})


@pytest.mark.parametrize("text", ["2020-", "100-", "1,000–", "1,000—", "-1,234-", "(1,234)-", "1e3-", "1.5 m-"])
def test_a_dash_after_a_figure_that_may_end_a_range_is_no_minus(text):
    """Bare digits ("2020-": since 2020), a range dash, two signs: no number."""
    assert parse_number(text) is None


def test_a_german_price_without_cents_is_not_negative():
    assert _amount("1.234,-", COMMA) is None  # "1.234,-" is 1,234.00, never read as -1,234


# --------------------------------------------------------------------------- 5. kr, zł, Rs


def test_zloty_and_rupee_abbreviations_name_their_currency():
    assert _amount("100 zł") == (Decimal(100), "PLN") and _amount("zł 100") == (Decimal(100), "PLN")
    assert _amount("Rs. 1,500") == (Decimal(1500), "INR") and _amount("Rs.1,500") == (Decimal(1500), "INR")
    assert rules_link({"v": "100 zł"}, {"v": "100 PLN"}) and rules_link({"v": "Rs. 1,500"}, {"v": "₹1,500"})
    assert not rules_link({"v": "100 zł"}, {"v": "100 EUR"}) and not rules_link({"v": "Rs 1,500"}, {"v": "$1,500"})
    assert parse_unit("zł").currency == "PLN" and parse_unit("Rs.").currency == "INR"


def test_kr_is_a_crown_of_no_one_country():
    """kr is Swedish, Norwegian, Danish and Icelandic alike: equal to kr, never to SEK or NOK."""
    assert _amount("100 kr") == _amount("kr. 100") == (Decimal(100), "kr")
    assert rules_link({"v": "100 kr"}, {"v": "kr 100"})
    assert not rules_link({"v": "100 kr"}, {"v": "100 SEK"}) and not rules_link({"v": "100 kr"}, {"v": "100 NOK"})
    assert not rules_link({"v": "100 kr"}, {"v": "$100"}) and not rules_link({"v": "100 kr"}, {"v": "101 kr"})
    assert not rules_link({"value": 100, "unit": "kr"}, {"value": 100, "unit": "DKK"})


def test_an_abbreviation_before_a_dash_is_no_currency():
    assert parse_number("RS-232") is None and parse_number("kr-5") is None
