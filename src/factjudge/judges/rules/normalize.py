"""Normalisation of field values for the deterministic ``rules`` judge.

Every field value is read into one of a few normal forms, once per fact:

* :class:`Missing`  -- ``None`` or an absent field.
* :class:`Period`   -- a date, month, calendar year, fiscal year, quarter or half, as a key.
* :class:`Quantity` -- a number, with its currency and whether it is a percentage.
* :class:`Text`     -- anything else that is a string.
* :class:`Unit`     -- the value of a unit-like field (``unit``, ``currency``, ``scale``, ...).
* :class:`Measure`  -- a number with a physical unit (``600 ft``, ``2 mg/kg``, ``37 °C``).
* :class:`Other`    -- bools, lists, dicts, non-finite floats: compared by canonical JSON (a
  value holding NaN equals nothing, not even itself).

Text
    NFKC, case-folded, accents removed (``María`` = ``maria``; extractors often drop them, and
    letters that do not decompose are mapped: ø, ł, đ, æ, œ), ``&`` read as ``and``, apostrophes
    dropped (``McDonald's`` = ``McDonalds``), dots inside abbreviations dropped (``U.S.`` = ``US``), thousands commas
    inside numbers dropped, every other punctuation or symbol becomes a space (so
    ``founded_by`` = ``founded by``), camelCase split (``foundedBy`` = ``founded by``; not
    ``iPhone`` or ``PayPal``), whitespace collapsed, Roman numerals read as numbers where one is
    expected (``Stage II`` = ``stage 2``, see :func:`_roman_numerals`). With
    ``ignore_company_suffixes`` the trailing legal-form words (Inc, Corp, Ltd, LLC, PLC, AG, SA,
    GmbH, Co, A/S, AB, NV, SpA, KK, Pty, S.A. de C.V., ...; ISO 20275) and a leading "the" are
    dropped, but never the last remaining word. Similarity is rapidfuzz ``fuzz.ratio`` over the words sorted
    alphabetically, i.e. ``token_sort_ratio``: word order is formatting ("Smith, John" = "John
    Smith") while every character still counts ("Apple" vs "Applied" scores 83). We reject
    ``token_set_ratio`` and ``partial_ratio``: a name contained in a longer one ("Apple" in
    "Apple Bank") would score 100. Texts that contain numbers only match when the numbers in them
    are the same ("Q1 sales" never matches "Q2 sales", however similar the letters).

Numbers (:func:`parse_number`)
    Thousands separators (``,``, a space or an apostrophe, in groups of three: ``1'234.5`` as
    Switzerland writes it; in Indian groups ``12,34,567`` under a decimal point only), decimals,
    exponents, a sign, accounting negatives ``(1,234)`` and ``1.234,56-`` (a minus after a figure
    that has a separator: after bare digits, ``2020-``, it may end an open range and is no number),
    currency symbols / codes / words before or after the number (``$`` is read as USD, ``¥`` as JPY,
    ``zł`` as PLN, ``Rs`` as INR as ``rupees`` is; ``kr`` is Swedish, Norwegian, Danish or
    Icelandic and names the currency ``kr``, equal to no one of them), scale words and
    abbreviations (thousand/k/Tsd., million/m/mn/mm/mln/Mio., billion/b/bn/bln/Mrd.,
    trillion/tn/trn; ``m`` is always million, never metres; ``TEUR``, ``T€``, ``TCHF`` are
    thousands of the currency), and percentages (``%``, ``percent``, ``per cent``, ``pct``; ``bp``/``bps``/``basis
    points`` are hundredths of a percent). Decimal commas are read where the form says so
    (``148,16``, ``1.234,50``, ``1 234,5``, ``0,125``: issue 34 item 4); a single separator
    followed by exactly three digits (``1,234``, ``1.234``) is ambiguous and read as
    :class:`Reading` says (config ``decimal_separator``, ``"."`` by default: ``1,234`` is one
    thousand two hundred and thirty-four). A percentage is a number: ``12.5%`` (``12.5 percent``, ``12.5
    pct``) is 0.125 and equals ``0.125`` (:attr:`Quantity.number`). A bare ``12.5`` is not a
    percentage and does not equal ``12.5%``, unless a unit field says percent (``%``,
    ``percent``, ``pct``): then the bare number is read as one (``{"value": "12.5", "unit": "%"}``
    is 12.5% = 0.125).

Units (:func:`parse_unit`, :func:`normalize_fact`)
    A unit-like field (``unit``, ``units``, ``currency``, ``scale``, ``multiplier``, ``uom``,
    ``unit_of_measure``, or ``<name>_unit`` / ``_units`` / ``_currency`` / ``_scale``) is read
    into a currency, a scale, a percent flag and the remaining words (``"million shares"`` ->
    scale 1e6, rest ``shares``). Its currency, scale and percent flag are folded into the
    fact's amount: for ``<name>_unit`` that is the field ``<name>``; for the generic names it is
    ``value`` and/or ``amount`` when the fact has them, otherwise every other field that reads
    as a number. The unit's scale is applied only when the number carries no scale or percent
    sign of its own, its currency only when the number names none. So ``{"value": "12.5",
    "unit": "USD million"}`` holds 12500000 USD, exactly like ``{"value": "$12,500,000",
    "unit": "USD"}``. Two amounts whose currencies are both named must name the same one; when
    only one side names a currency the amounts are compared on their numbers alone. The unit
    field itself is then compared by its effect: its remaining words must match as text, and
    the effective currencies (the unit's, or else the one the fact's amount carries) must agree
    when both are known; its scale is already inside the amount. A fact without the unit field
    therefore matches one with ``"unit": "USD"`` when its amount is in dollars or names no
    currency, but never one with ``"unit": "shares"``.

Physical units (:mod:`factjudge.judges.rules.units`)
    A unit field holding a physical unit (``mg``, ``ft``, ``mg/kg``, ``°C``; no currency, scale
    or percent) turns the amount it applies to into a :class:`Measure`, and so does a value
    written with one (``"600 ft"``). Two measures match when their dimensions agree and their
    magnitudes, in the finer of the two units, are equal or within the field's tolerance
    (``600 ft`` = ``183 m`` within 1%; ``mg/kg`` never equals ``mcg/kg``). Two physical unit
    fields agree when they measure the same kind of thing and both facts have an amount that
    carries the conversion, else only when they are the same unit. ``m`` and ``mm`` stay million
    (finance), but against a measure they are read as metres and millimetres. Words that are no
    physical unit (``goals``, ``tablets``) compare as text, as before.

Dates and periods (:func:`parse_period`)
    Keys: ``2023-03-05`` (ISO ``2023-03-05``/``2023/3/5``, ``March 5, 2023``, ``Mar. 5, 2023``,
    ``5 Mar 2023``, ``5th of March 2023``, ``03/05/2023``, after a weekday that is the date's own,
    ``Sun 5 Mar 2023`` or ``Sunday, March 5, 2023``; slash and dash all-number dates are month first
    unless the first number exceeds 12, dotted ones (``05.03.2023``) day first; an ISO date may
    carry a time: see below; a month name in German, French, Spanish, Italian, Dutch or
    Portuguese, full or short, with or without its dot, the day first: ``15. Juni 2024``,
    ``1er mars 2024``, ``1 de marzo de 2024``, ``1 mrt. 2024``: :data:`MONTH_NAMES`), ``2023-03``
    (``March 2023``, ``2023-03``, ``Juni 2024``, ``janv. 2024``, ``marzo de 2024``; a name that is
    also a word or a name, ``Mai``, ``Mars``, ``Juni``, is a month only in a date's shape, and
    ``set``, ``out``, ``gen``, ``mag``, ``ago`` only with a bare day or their dot), ``2023`` (``2023``,
    ``CY2023``, ``calendar year 2023``), ``FY2023`` (``FY2023``, ``FY 2023``, ``FY23``,
    ``fiscal 2023``, ``fiscal year 2023``, ``2023 fiscal year``), ``2023-Q1`` (``Q1 2023``,
    ``1Q23``, ``2023Q1``, ``first quarter of 2023``), ``FY2023-Q1`` (``Q1 FY2023``, ``FY23 Q1``)
    and the halves ``2023-H1`` / ``FY2023-H1``. A calendar year is not a fiscal year: ``2023``
    never equals ``FY2023`` (many fiscal years do not end in December). Two-digit years are only
    read after a marker (FY, Q, H, CY) and mean 20xx below 70, else 19xx.

    A time after an ISO date (``2024-03-01T10:00:00``, ``2024-03-01 10:00Z``) is part of the
    value (:attr:`Period.time`): two values that both give one are equal only at the same time of
    day, and at the same instant when both give an offset (``10:00Z`` = ``11:00+01:00``). A date
    without a time equals any time of its day (``2024-03-01`` = ``2024-03-01T09:00``).

Identifiers and codes (:class:`Code`)
    A field holding an identifier or a code (named ``id``, ``number``, ``no``, ``code``, ``sku``,
    ``ticker``, ``iban``, ``isin``, ``ref``... alone or as its last part, ``invoice_number``,
    ``customer_id``: :data:`IDENTIFIER_NAME`; or named by the config's ``identifier_fields``)
    holds a :class:`Code` when its value is a string or an integer: equal only to the same
    characters once case, spaces and punctuation are left out (``inv 0077`` = ``INV-0077`` !=
    ``2024-INV-0077``, ``00123`` != ``123``), never merely similar. As :mod:`.proof` proves two
    such values different, so the rules judge never links them.

Years versus numbers
    A string of exactly four digits from 1900 to 2100 is read as a year, not as a number, so
    ``"2023"`` never equals ``"2,023"`` or ``"$2,023"``. It still equals a JSON integer 2023 and
    another ``"2023"``. The price: ``"2000"`` does not equal ``"2,000"`` -- unless the field is
    the amount of a unit field (``{"value": "2000", "unit": "employees"}``), where four digits
    are always a number.
"""
from __future__ import annotations

import calendar as _calendar
import datetime as _dt
import functools
import json
import math
import re
import unicodedata
from collections.abc import Callable, Hashable
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from enum import Enum
from typing import Any, TypeVar
from uuid import UUID

from ...core.scope import GENERIC_UNIT_FIELDS as _GENERIC_UNIT_FIELDS
from ...core.scope import UNIT_FIELD_SUFFIXES as _UNIT_FIELD_SUFFIXES
from ...core.scope import is_absent
from ...core.scope import is_unit_field as is_unit_field
from ...util.jsonutil import canonical_json as _strict_json
from .units import (
    NUMBER_WORDS,
    Measure,
    PhysicalUnit,
    indian_scales,
    number_in_words,
    parse_measure,
    physical_unit,
)

__all__ = [
    "COMPANY_SUFFIXES", "Item", "Items", "Measure", "Missing", "MISSING", "Norm", "Other", "Period", "Quantity",
    "READING", "Reading", "Text",
    "Unit", "format_decimal", "is_unit_field", "normalize_fact",
    "normalize_text", "normalize_value", "parse_number", "parse_period", "parse_unit",
    "as_measure", "sorted_tokens", "text_numbers", "text_similarity", "unit_physical", "unit_target",
]

# --------------------------------------------------------------------------- reading


@dataclass(frozen=True, slots=True)
class Reading:
    """How ambiguous forms are read: ``1,234`` / ``1.234`` by ``decimal`` (the config's
    ``decimal_separator``), ``03/04/2024`` by ``date_order`` (``MDY``, ``DMY`` or ``YMD``; year
    first forms are ISO-like and unambiguous, so ``YMD`` reads ``03/04/2024`` month first).
    Unambiguous forms (``148,16``, ``13/05/2024``) are read the same whatever it says."""

    decimal: str = "."
    date_order: str = "MDY"
    #: The knowledge families read while normalising (issue #37): ``units`` (data sizes, Hz,
    #: mAh, W, nits, inch marks), ``durations`` (and number words before them) and
    #: ``per_period`` (an amount per month, week or year), ``periods`` (months spanned as a
    #: quarter, half or fiscal year) and ``numbers`` (whole values in words, crore and lakh).
    families: frozenset[str] = frozenset({"units", "durations", "per_period", "periods", "numbers"})
    #: The config's ``identifier_fields``: fields holding a :class:`Code` whatever their names.
    identifiers: frozenset[str] = frozenset()

    @classmethod
    def of(cls, config: Any) -> Reading:
        """The reading a :class:`~factjudge.models.JudgeConfig` asks for: one object for equal
        readings (:data:`_READINGS`)."""
        known = config.rules_knowledge
        made = cls(config.decimal_separator, config.date_order,
                   frozenset(f for f in ("units", "durations", "per_period", "periods", "numbers")
                             if getattr(known, f)), frozenset(config.identifier_fields))
        return _READINGS.setdefault(made, made)

    @property
    def unit_families(self) -> frozenset[str]:
        return self.families & {"units", "durations"}


READING = Reading()
#: Each reading once: the memos of normal forms are keyed by the reading, and an equal one made
#: anew for each document's index was compared field by field (a dataclass ``__eq__``) on every
#: hit of :func:`normalize_fact`'s and :func:`_keyed_value`'s memos; the same object is not.
_READINGS: dict[Reading, Reading] = {READING: READING}


# --------------------------------------------------------------------------- normal forms


def quote(text: str) -> str:
    """``text`` as a JSON string, as the reasoning quotes a value: every field comparison quotes
    both values, so the common case (printable ASCII, nothing to escape) skips the encoder."""
    if text.isascii() and text.isprintable() and '"' not in text and "\\" not in text:
        return f'"{text}"'
    return json.dumps(text, ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class Missing:
    def describe(self) -> str:
        return "(missing)"


MISSING = Missing()


@dataclass(frozen=True, slots=True)
class Text:
    raw: str
    norm: str

    # Worked out when asked, not kept: a large document's candidate index holds a Text per field
    # of every fact, and few of them are ever compared.
    @property
    def sorted(self) -> str:
        """``norm`` with its words sorted: what the similarity is computed on."""
        return sorted_tokens(self.norm)

    @property
    def numbers(self) -> tuple[str, ...]:
        """The numbers written in the text, sorted; they must be equal for two texts to match."""
        return text_numbers(self.norm)

    def describe(self) -> str:
        return quote(self.raw)


#: A field named so holds an identifier or a code (``id``, ``invoice_number``, ``customer_id``,
#: ``product_code``; module docs). Not by its value's shape: ``Model X5`` looks like a code and is a name.
IDENTIFIER_NAME = re.compile(
    r"(?:^|[_\s-])(?:id|number|no|num|nr|code|sku|ticker|symbol|iban|isin|cusip|ean|upc|gtin|vin|ref|"
    r"reference)$", re.IGNORECASE)
_NOT_ALNUM = re.compile(r"[\W_]+")


def identifier_key(value: Any) -> str | None:
    """An identifier as compared: case, spaces and punctuation left out; None for no scalar (a
    float, a boolean, a list) or nothing left."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None
    return _NOT_ALNUM.sub("", str(value).casefold()) or None


@dataclass(frozen=True, slots=True)
class Code:
    """An identifier or a code, by its field (module docs): equal to another only by its ``key``."""

    raw: str
    #: :func:`identifier_key` of the value.
    key: str

    def describe(self) -> str:
        return quote(self.raw)


@dataclass(frozen=True, slots=True)
class Quantity:
    #: As written, after scale words: 12.5 for "12.5%" (see :attr:`number`).
    value: Decimal
    currency: str | None = None
    percent: bool = False
    #: Written as bare digits (or a JSON integer) with nothing else: it may also be a year.
    plain: bool = False
    #: Carries its own scale word or percent sign, so a unit's scale no longer applies.
    scaled: bool = False
    #: How it was written, with the unit that was folded in (for reasoning).
    source: str = ""
    #: Its scale word was ``m`` or ``mm``, which may be metres or millimetres instead: against a
    #: physical measure it is read as a length (``183 m`` = ``600 ft``), else as millions.
    metric: str | None = None
    #: Hedged ("about 12,000", "~12k"): equals any figure that rounds to it (see :attr:`step`).
    approx: bool = False
    #: The place of the last digit shown, after scale (100 for "4,300", 1e7 for "$1.25 billion":
    #: trailing zeros of a whole number are not shown digits); None for a JSON number.
    step: Decimal | None = None
    #: A figure written rounded, that equals a finer one rounding to it: a hedged one, a decimal
    #: with a scale word ("$1.25 billion"), a percentage of two digits or more ("42%").
    rounded: bool = False
    #: An amount per period (``$5,000 per month``): ``year`` for money per week, month or year,
    #: converted to the year (52 weeks, 12 months); else the period as written (``hour``, ``day``,
    #: ``month`` for a rate in percent). Two quantities of different ``per`` never match.
    per: str | None = None

    @property
    def number(self) -> Decimal:
        """The value as a plain number: a percentage divided by 100 (12.5% -> 0.125)."""
        return self.value.scaleb(-2) if self.percent else self.value

    def describe(self) -> str:
        shown = format_decimal(self.value) + ("%" if self.percent else "")
        if self.currency:
            shown += f" {self.currency}"
        if self.per:
            shown += f" per {self.per}"
        return shown if self.source in ("", shown) else f"{self.source} = {shown}"


@dataclass(frozen=True, slots=True)
class Period:
    key: str
    raw: str
    #: The time of day after an ISO date (``HH:MM:SS``, a fraction of a second when not zero), as
    #: written: a day with a time is not the day with another time.
    time: str | None = None
    #: That date and time in UTC (``YYYY-MM-DD HH:MM:SS``) when an offset (``Z``, ``+01:00``) says
    #: which instant it is.
    instant: str | None = None

    @property
    def year(self) -> int | None:
        """The year of a bare calendar-year key, else None."""
        return int(self.key) if self.key.isdigit() else None

    def describe(self) -> str:
        norm = self.key if self.time is None else f"{self.instant} UTC" if self.instant else f"{self.key} {self.time}"
        return self.raw if self.raw == norm else f"{self.raw} = {norm}"


@dataclass(frozen=True, slots=True)
class Other:
    json: str
    #: Holds a NaN, which equals nothing (not even NaN), whatever its JSON text says.
    nan: bool = False

    def describe(self) -> str:
        return self.json


@dataclass(frozen=True, slots=True)
class Unit:
    raw: str
    currency: str | None = None
    scale: Decimal | None = None
    percent: bool = False
    #: The words that are not a currency, scale or percent, e.g. "shares".
    rest: Text | None = None
    #: A physical unit (``mg``, ``ft``, ``mg/kg``): the amount becomes a :class:`Measure`.
    physical: PhysicalUnit | None = None
    #: Written as ``m`` or ``mm``: a scale (million), but maybe metres (see Quantity.metric).
    metric: str | None = None
    #: Applied to an amount of the fact, which then carries its magnitude.
    applied: bool = False

    @property
    def is_numeric(self) -> bool:
        """Whether it changes the amount it applies to (currency, scale, percent, physical unit)."""
        return (self.currency is not None or self.scale is not None or self.percent
                or self.physical is not None)

    def describe(self) -> str:
        return quote(self.raw) if self.raw else "(no unit)"


EMPTY_UNIT = Unit(raw="")

@dataclass(frozen=True, slots=True)
class Item:
    """One element of a list inside a fact: a record's fields normalised as a fact's are (its
    unit fields folded into its amounts), or a scalar as the one field ``""``."""

    values: dict[str, Norm]
    currency: str | None
    #: How the reasoning names it: its description, name or title, else its first text.
    label: str
    #: Its place in the list as written (absent items, null or empty, are no items: ``["", "a"]``
    #: holds one, at place 1).
    position: int = -1

    def get(self, name: str) -> Norm:
        if name in self.values:
            return self.values[name]
        return EMPTY_UNIT if is_unit_field(name) else MISSING


@dataclass(frozen=True, slots=True)
class Items:
    """A list of records (``records``) or of scalars inside a fact, compared as an unordered
    list (judges/rules/compare.py aligns the items one-to-one) unless the config's ``ordered``
    names the field. A ``mixed`` list (records and values, lists in a list) holds each record as
    a record's item and any other value, a list included, as a scalar's (the one field ``""``):
    it is unordered too, and a record is never equal to a value."""

    items: tuple[Item, ...]
    records: bool
    json: str
    mixed: bool = False

    def describe(self) -> str:
        return self.json


Norm = Missing | Text | Code | Quantity | Period | Other | Unit | Measure | Items


def lenient_json(value: Any) -> str:
    """The prompts' canonical JSON, but never raising: facts handed over in Python may hold
    values JSON cannot encode (dates, gigantic ints)."""
    try:
        return _strict_json(value)
    except (TypeError, ValueError, RecursionError):
        try:
            return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"),
                              default=str)
        except (TypeError, ValueError, RecursionError):  # mixed-type keys, cycles, huge ints
            return f"{type(value).__name__}#{hash(value) if value.__hash__ else id(value)}"


def _holds_nan(value: Any) -> bool:
    stack, seen = [value], set()
    while stack:
        item = stack.pop()
        if isinstance(item, float) and math.isnan(item):
            return True
        if isinstance(item, (list, tuple, dict)) and id(item) not in seen:
            seen.add(id(item))  # facts from Python may share or even nest themselves
            stack.extend(item.values() if isinstance(item, dict) else item)
    return False


def _may_hold_nan(value: Any, text: str) -> bool:
    """:func:`_holds_nan` of ``value``, whose :func:`lenient_json` is ``text``: each of its
    encoders writes a float NaN as ``NaN`` (its last resort, ``type#hash``, says nothing), so a
    text with neither holds none, and only one with either is walked (an invoice's 5 line items
    cost 13.8 us to walk, as many as their JSON)."""
    return ("NaN" in text or "#" in text) and _holds_nan(value)


def _other(value: Any) -> Other:
    text = lenient_json(value)
    return Other(text, nan=_may_hold_nan(value, text))


#: Under a decimal comma: a thousands dot between digits ("1.234,5"), and a decimal comma.
_THOUSANDS_DOT = re.compile(r"(?<=\d)\.(?=\d{3}(?!\d))")
_DECIMAL_COMMA = re.compile(r"(?<=\d),(?=\d)")


def with_decimal_point(text: str) -> str:
    """``text``'s figures, written with a decimal comma, rewritten with a decimal point
    ("1.234,5" -> "1234.5", "0,5" -> "0.5"): a text as ``decimal_separator: ","`` reads it. (Text
    normalisation keeps "1234.5" one word and splits "1234,5" in two.)"""
    if "," not in text and "." not in text:
        return text
    return _DECIMAL_COMMA.sub(".", _THOUSANDS_DOT.sub("", text))


def format_decimal(value: Decimal) -> str:
    """``Decimal('1.25E+7')`` -> ``12500000``; no exponent, no trailing zeros."""
    text = format(value.normalize(), "f")
    return "0" if text in ("-0", "") else text


# --------------------------------------------------------------------------- text

# Legal forms from the ISO 20275 Entity Legal Forms code list (GLEIF,
# https://www.gleif.org/en/about-lei/code-lists/iso-20275-entity-legal-forms-code-list), as
# written after normalisation (S.p.A. -> spa, A/S -> a s), limited to the abbreviations that are
# no ordinary word at the end of a company name.
COMPANY_SUFFIXES = frozenset({
    "inc", "incorporated", "corp", "corporation", "co", "company", "ltd", "limited", "llc",
    "llp", "lp", "plc", "ag", "sa", "se", "nv", "bv", "gmbh", "spa", "sarl", "ab", "oyj",
    "asa", "kk", "pty", "pte", "pvt", "sas", "srl", "sl", "as", "aps", "oy", "kg", "kgaa",
    "bhd", "tbk", "ltda", "sro", "doo",
})
#: Legal forms of several words (A/S, S.A. de C.V., AB (publ), Sdn Bhd), by their last word.
_COMPANY_SUFFIX_PHRASES: dict[str, tuple[tuple[str, ...], ...]] = {
    "cv": (("sa", "de", "cv"),), "rl": (("s", "de", "rl"),), "oo": (("sp", "z", "oo"),),
    "publ": (("ab", "publ"),), "bhd": (("sdn", "bhd"),), "s": (("a", "s"),),
}

_APOSTROPHES = re.compile(r"['’‘ʼ`´]")
_ABBREV_DOT = re.compile(r"(?<=[^\W\d_])\.(?=[^\W\d_])")  # U.S. -> US, never 3.5 -> 35
_THOUSANDS_COMMA = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_NOT_WORD = re.compile(r"(?:(?!(?<=\d)\.(?=\d))[^\w])+|_+")
_NUMBER_IN_TEXT = re.compile(r"\d+(?:\.\d+)?")


_UNDECOMPOSABLE = str.maketrans({"ø": "o", "ł": "l", "đ": "d", "ħ": "h", "ı": "i", "æ": "ae",
                                  "œ": "oe", "þ": "th", "ð": "d"})


def _strip_accents(s: str) -> str:
    decomposed = unicodedata.normalize("NFD", s)
    kept = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return unicodedata.normalize("NFC", kept).translate(_UNDECOMPOSABLE)


#: camelCase identifiers ("foundedBy", "dateOfBirth"), split into words before case folding;
#: a lower-case start of two letters or more, so brands ("iPhone", "eBay", "McDonald",
#: "PayPal") stay whole.
_CAMEL_CASE = re.compile(r"\b[a-z]{2,}(?:[A-Z][a-z]+)+\b")
_CAMEL_HUMP = re.compile(r"(?<=[a-z])(?=[A-Z])")


#: Bound signs next to a number, kept as words so that a bound never reads as its bare number
#: ("5+ years" is not "5 years"; guideline G8, G20).
_BOUND_SIGNS = [(re.compile(r"(?<=\d)\s*\+(?![\d+])"), " plus "), (re.compile(r"≥\s*(?=\d)"), " at least "),
                (re.compile(r"≤\s*(?=\d)"), " at most "), (re.compile(r">=?\s*(?=[\d$€£])"), " over "),
                (re.compile(r"<=?\s*(?=[\d$€£])"), " under ")]


def normalize_text(text: str, *, ignore_company_suffixes: bool = False) -> str:
    s = unicodedata.normalize("NFKC", text)
    if any(c in s for c in "+<>≥≤"):
        for pattern, word in _BOUND_SIGNS:
            s = pattern.sub(word, s)
    s = _CAMEL_CASE.sub(lambda m: _CAMEL_HUMP.sub(" ", m.group()), s)
    s = _strip_accents(s.casefold())
    s = s.replace("&", " and ")
    s = _APOSTROPHES.sub("", s)
    s = _ABBREV_DOT.sub("", s)
    s = _THOUSANDS_COMMA.sub("", s)
    words = _NOT_WORD.sub(" ", s).split()
    if ignore_company_suffixes:
        words = _strip_company_words(words)
    return " ".join(_roman_numerals(words))


def _strip_company_words(words: list[str]) -> list[str]:
    words = list(words)
    if len(words) > 1 and words[0] == "the":
        words.pop(0)
    while len(words) > 1:
        phrase = next((p for p in _COMPANY_SUFFIX_PHRASES.get(words[-1], ())
                       if len(words) > len(p) and tuple(words[-len(p):]) == p), None)
        if phrase is not None:
            del words[-len(phrase):]
        elif words[-1] in COMPANY_SUFFIXES:
            words.pop()
        else:
            break
        if len(words) > 1 and words[-1] == "and":  # "Johnson & Co"
            words.pop()
    return words


# Roman numerals, read as numbers so that "Stage II" never matches "Stage III" (similarity 94)
# and "Type II" equals "Type 2". A word is a numeral only where one is expected, because many
# are words or abbreviations ("I", "mix", "CD", "DC", "MD", "vi", "Xi", "IV" for intravenous):
# after one of these words, with the letters I, V, X, L, C only (one letter: I, V or X; so
# "Vitamin C" and "Class C shares" stay letters), or as the last word of a short name of two to
# four words ("Henry VIII", "Louis XIV"), with I, V and X only and at least two letters -- but
# never "iv", "vi" or "xi", which are also a route of administration, an editor and a surname.
_ROMAN = re.compile(r"(?=[ivxlc])(xc|xl|l?x{0,3})(ix|iv|v?i{0,3})")
_ROMAN_VALUES = {"i": 1, "v": 5, "x": 10, "l": 50, "c": 100}
_NUMERAL_AFTER = frozenset({
    "stage", "type", "grade", "phase", "class", "part", "chapter", "war", "act", "book",
    "volume", "vol", "level", "category", "tier", "division", "title", "article", "annex",
    "appendix", "schedule", "bowl", "series", "round", "league",
})
_NOT_NAME_SUFFIX = frozenset({"iv", "vi", "xi"})


def _roman_value(word: str) -> int:
    values = [_ROMAN_VALUES[ch] for ch in word]
    return sum(-v if v < nxt else v for v, nxt in zip(values, [*values[1:], 0], strict=True))


def _roman_numerals(words: list[str]) -> list[str]:
    out = list(words)
    for i, word in enumerate(words):
        if word.strip("ivxlc") or not _ROMAN.fullmatch(word):  # the strip: a cheap first test
            continue
        after_keyword = i > 0 and words[i - 1] in _NUMERAL_AFTER and (
            len(word) > 1 or word in "ivx")
        name_suffix = (i == len(words) - 1 and 2 <= len(words) <= 4 and len(word) > 1
                       and set(word) <= set("ivx") and word not in _NOT_NAME_SUFFIX
                       and words[i - 1].isalpha())
        if after_keyword or name_suffix:
            out[i] = str(_roman_value(word))
    return out


def sorted_tokens(norm: str) -> str:
    return " ".join(sorted(norm.split()))


def text_numbers(norm: str) -> tuple[str, ...]:
    """The numbers in a normalised text, canonical (``05`` = ``5``, ``2.50`` = ``2.5``), sorted."""
    # once per distinct short text while it is recent: names repeat across a run's facts, and two
    # different ones are compared by their numbers too ("Company 433" vs "Company 49")
    return _short_text_numbers(norm) if len(norm) <= SHORT_TEXT else _text_numbers(norm)


#: The longest text whose numbers (:func:`text_numbers`) or words (compare.py's ``_words``) are
#: kept: a 30 MB one would stay in memory.
SHORT_TEXT = 200


def _text_numbers(norm: str) -> tuple[str, ...]:
    return tuple(sorted(format_decimal(Decimal(n)) for n in _NUMBER_IN_TEXT.findall(norm)))


_short_text_numbers = functools.lru_cache(maxsize=16384)(_text_numbers)


def make_text(raw: str, *, ignore_company_suffixes: bool = False) -> Text:
    norm = normalize_text(raw, ignore_company_suffixes=ignore_company_suffixes)
    if not norm:
        # nothing but symbols ("+", "-", a check mark, "€"): normalising left no word, and every
        # such value was equal to every other ("+" = "-"); they are compared as written instead,
        # any dash as "-" (an en or em dash, a minus sign: one "none" written several ways)
        norm = " ".join("".join("-" if c == "\u2212" or unicodedata.category(c) == "Pd" else c
                                for c in unicodedata.normalize("NFKC", raw).casefold()).split())
    return Text(raw=raw, norm=raw if norm == raw else norm)  # one string when nothing changed


def text_similarity(a: str, b: str, *, ignore_company_suffixes: bool = False) -> float:
    """0-100 similarity of two raw strings, as the rules judge computes it."""
    from rapidfuzz import fuzz

    ta = make_text(a, ignore_company_suffixes=ignore_company_suffixes)
    tb = make_text(b, ignore_company_suffixes=ignore_company_suffixes)
    return float(fuzz.ratio(ta.sorted, tb.sorted))


# --------------------------------------------------------------------------- shared prep

_DASHES = re.compile(r"[‐‑‒–—―−﹣－]")


def _prep(text: str) -> str:
    s = unicodedata.normalize("NFKC", text).casefold()
    s = _DASHES.sub("-", s)
    s = s.replace("’", "'").replace("‘", "'")
    return " ".join(s.split())


# --------------------------------------------------------------------------- currencies, scales

#: The currency of an amount in ``kr`` (module docs): named, but by no ISO code.
_CROWNS = "kr"
_CODES = (
    "usd eur gbp jpy cny chf cad aud nzd hkd sgd inr krw brl mxn zar rub sek nok dkk pln czk "
    "huf try ils aed sar twd thb idr myr php"
).split()
_CURRENCY_WORDS: dict[str, str] = {c: c.upper() for c in _CODES}
_CURRENCY_WORDS.update({
    "rmb": "CNY", "yuan": "CNY", "renminbi": "CNY", "dollar": "USD", "dollars": "USD",
    "us dollar": "USD", "us dollars": "USD", "u.s. dollars": "USD", "u.s. dollar": "USD",
    "euro": "EUR", "euros": "EUR", "pound": "GBP", "pounds": "GBP", "sterling": "GBP",
    "pounds sterling": "GBP", "pound sterling": "GBP", "yen": "JPY", "rupees": "INR",
    "rupee": "INR", "swiss francs": "CHF",
    # Swedish krona (plural kronor); the Danish and Norwegian krone (kroner) stay unread
    "kronor": "SEK", "krona": "SEK", "swedish kronor": "SEK",
    # the Polish zloty's sign; Rs as rupees are read (INR, as "rupees" is)
    "zł": "PLN", "rs": "INR", "rs.": "INR",
    # kr is the Swedish, Norwegian, Danish and Icelandic crown alike: a currency of its own that
    # equals no one of them (100 kr != 100 SEK), as "krone" names none
    "kr": _CROWNS, "kr.": _CROWNS,
})
#: Abbreviations that are also the start of other writings ("RS-232"): before an amount only when a
#: digit follows (after a space at most).
_ABBREVIATED = frozenset({"rs", "rs.", "kr", "kr."})
_CURRENCY_SYMBOLS: dict[str, str] = {
    "us$": "USD", "u.s.$": "USD", "a$": "AUD", "au$": "AUD", "c$": "CAD", "ca$": "CAD",
    "hk$": "HKD", "s$": "SGD", "nz$": "NZD", "r$": "BRL", "mx$": "MXN", "$": "USD", "€": "EUR",
    "£": "GBP", "¥": "JPY", "₹": "INR", "₩": "KRW", "₽": "RUB", "₺": "TRY", "₪": "ILS",
}
_ALL_CURRENCY = {**_CURRENCY_WORDS, **_CURRENCY_SYMBOLS}


def _alternation(words: Any) -> str:
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))


_SCALES: dict[str, Decimal] = {}
for _words, _factor in (
    # German Tsd., Mio., Mrd. (Milliarde: 10^9; a German "Billion" is 10^12 and stays unread)
    (("k", "thousand", "thousands", "000", "000s", "'000", "'000s", "tsd", "tsd."), Decimal(10) ** 3),
    (("m", "mn", "mm", "mln", "million", "millions", "mio", "mio."), Decimal(10) ** 6),
    (("b", "bn", "bln", "billion", "billions", "mrd", "mrd."), Decimal(10) ** 9),
    (("tn", "trn", "trillion", "trillions"), Decimal(10) ** 12),
):
    for _w in _words:
        _SCALES[_w] = _factor

_PERCENT_WORDS = ("%", "percent", "per cent", "per-cent", "pct")
_BP_WORDS = ("bp", "bps", "basis point", "basis points")

#: Thousands of a currency in one word, as German and Swiss accounts head their columns (``TEUR``,
#: ``T€``, ``TCHF``): written out as the scale and the currency (``tsd eur``) before either is read.
_THOUSANDS_OF = re.compile(r"(?<![^\W\d_])t(eur|€|chf)(?![^\W\d_])")
_THOUSANDS_OF_ENDS = ("teur", "t€", "tchf")

# Each currency pattern names the currency "cur"; parse_number cuts that span out.
_CURRENCY_PREFIX = re.compile(
    rf"(?P<cur>{_alternation(_CURRENCY_SYMBOLS)}|(?:{_alternation(set(_CURRENCY_WORDS) - _ABBREVIATED)})"
    rf"(?=[\s\d.(+-])|(?:{_alternation(_ABBREVIATED)})(?=\s?\d))")
_CURRENCY_SUFFIX = re.compile(
    rf"(?P<cur>(?<=[\s\d)])(?:{_alternation(_CURRENCY_WORDS)})|(?:{_alternation(_CURRENCY_SYMBOLS)}))$")
_SCALE_WORDS = _alternation(w for w in _SCALES if not w.startswith(("0", "'")))
# "12.5 USD million": the currency written between the amount and its scale
_CURRENCY_BEFORE_SCALE = re.compile(
    rf"(?<=[\s\d])(?P<cur>{_alternation(_CURRENCY_WORDS)})\s*(?P<scale>{_SCALE_WORDS})$")
#: How a text that _CURRENCY_SUFFIX or _CURRENCY_BEFORE_SCALE matches ends (a currency; a scale
#: word): a figure written without them ("1,926.8") searches neither.
_CURRENCY_ENDS = tuple(_ALL_CURRENCY)
_SCALE_ENDS = tuple(w for w in _SCALES if not w.startswith(("0", "'")))
_NUMBER_CORE = re.compile(
    # thousands by commas, in Indian groups (12,34,567: lakhs, with a decimal point only), by
    # apostrophes (Swiss: 1'234.5, then either separator is the decimal one), by dots (then a
    # decimal comma), by spaces, or none; _digits reads them
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d*)?|(?P<indian>\d{1,2}(?:,\d{2})+,\d{3})(?:\.\d*)?"
    r"|\d{1,3}(?:'\d{3})+(?:[.,]\d+)?|\d{1,3}(?:\.\d{3})+(?:,\d*)?|\d{1,3}(?: \d{3})+(?:\.\d*|,\d+)?"
    r"|\d+(?:\.\d*|,\d+)?|\.\d+)"
    r"(?P<exp>e[+-]?\d+)?"
    rf"\s*(?:(?P<scale>{_SCALE_WORDS})"
    rf"(?![a-z]))?\s*(?:(?P<pct>{_alternation(_PERCENT_WORDS)})|(?P<bp>{_alternation(_BP_WORDS)}))?"
)
_PLAIN_DIGITS = re.compile(r"\d+")
_PARENS_THEN_WORD = re.compile(
    rf"\((?P<inner>[^()]*)\)\s*(?P<word>{_alternation([*_SCALES, *_PERCENT_WORDS, *_BP_WORDS])})")


#: Words that hedge a figure (guideline G8); "over", "up to", "nearly" make a bound instead and
#: are never read as a number.
_HEDGE = re.compile(r"(?:about|approximately|approx\.?|around|roughly|some|an\s+estimated|estimated"
                    r"|circa|ca\.|c\.|~)\s*(?P<rest>.+)")
_LOSS = re.compile(r"(?:an?\s+)?(?:net\s+)?(?:loss|decline|decrease|drop|fall)\s+of\s+(?P<rest>.+)")
_CENTS = re.compile(r"(?P<rest>[\d.,]+)\s*(?:cents?|¢)")


def _digits(num: str, reading: Reading) -> str:
    """Written digits as Python reads them ("1.234,5" -> "1234.5"). The last of two different
    separators is the decimal one; a separator written twice groups thousands; one separator
    is a decimal unless exactly three digits follow a group of one to three that is not 0
    ("1,234", "1.234": ambiguous, read by ``reading.decimal``). Apostrophes group thousands."""
    num = num.replace(" ", "").replace("'", "")
    seps = [c for c in num if c in ".,"]
    if not seps:
        return num
    if len(set(seps)) == 2:
        decimal = seps[-1]
    elif len(seps) > 1:
        decimal = ""
    else:
        head, _, tail = num.partition(seps[0])
        ambiguous = len(tail) == 3 and 1 <= len(head) <= 3 and head != "0"
        decimal = (seps[0] if reading.decimal == seps[0] else "") if ambiguous else seps[0]
    thousands = "".join(c for c in ".," if c != decimal)
    for c in thousands:
        num = num.replace(c, "")
    return num.replace(",", ".")


def parse_number(text: str, reading: Reading = READING) -> Quantity | None:
    """Read a written number (see the module docs); None when it is not one. A hedge ("about",
    "approximately", "~") marks it approximate, "loss of" / "decline of" negates it, and
    "25 cents" is 0.25."""
    s = _prep(text)
    approx = negative = cents = False
    if m := _HEDGE.fullmatch(s):
        approx, s = True, m["rest"]
    if m := _LOSS.fullmatch(s):
        negative, s = True, m["rest"]
    if m := _CENTS.fullmatch(s):
        cents, s = True, m["rest"]
    q = _parse_written(s, text.strip(), reading)
    if q is None or not (approx or negative or cents):
        return q
    value, step = q.value, q.step
    if cents:
        value, step = value.scaleb(-2), step.scaleb(-2) if step is not None else None
    return replace(q, value=-value if negative else value, step=step, plain=False,
                   approx=approx, rounded=q.rounded or approx, metric=None)


def _step(digits: str, exponent: str | None, zeros: bool = False) -> Decimal:
    """The place of the last shown digit of written digits ("4300" -> 100, "1.25" -> 0.01); with
    ``zeros`` a whole number's trailing zeros are shown digits too ("20" of "20%" -> 1: a
    percentage is written to the point, and "20%" is no "15%" rounded to tens)."""
    if "." in digits:
        place = -len(digits.split(".")[1])
    else:
        place = len(digits) - len(digits.rstrip("0")) if digits.strip("0") and not zeros else 0
    return Decimal(1).scaleb(place + (int(exponent[1:]) if exponent else 0))


def _peel(s: str) -> tuple[str, bool, str | None] | None:
    """The figure inside its signs, accounting parentheses and currency (``-$(1,234)`` ->
    ``1,234``), whether they make it negative, and the currency; None for two currencies."""
    negative, currency = False, None
    changed = True
    while changed and s:
        changed = False
        if s[0] in "-+":
            negative = negative or s[0] == "-"
            s, changed = s[1:].strip(), True
            continue
        if s[0] == "(" and s[-1] == ")":
            negative, s, changed = True, s[1:-1].strip(), True
            continue
        if m := _PARENS_THEN_WORD.fullmatch(s):  # "(5.2) million": the scale sits outside
            negative, s, changed = True, f"{m['inner'].strip()} {m['word']}", True
            continue
        for pattern, ends in ((_CURRENCY_PREFIX, None), (_CURRENCY_SUFFIX, _CURRENCY_ENDS),
                              (_CURRENCY_BEFORE_SCALE, _SCALE_ENDS)):
            # a pattern at the end is searched (from every position) only when s ends as it must
            m = pattern.match(s) if ends is None else pattern.search(s) if s.endswith(ends) else None
            if not m:
                continue
            found = _ALL_CURRENCY[m["cur"]]
            if currency not in (None, found):
                return None  # "$12 EUR": contradictory, not a number we can read
            currency = found
            s = f"{s[:m.start('cur')]} {s[m.end('cur'):]}".strip()
            changed = True
            break
    return s, negative, currency


#: Dashes that may end an open range ("1,000–") and are no minus sign (:func:`_parse_written`;
#: _prep has made each a "-").
_RANGE_DASHES = frozenset("‐‑‒–—―")


def _parse_written(s: str, source: str, reading: Reading) -> Quantity | None:
    if s.endswith(_THOUSANDS_OF_ENDS):  # "5 TEUR", "5 T€": thousands of euros
        s = _THOUSANDS_OF.sub(r"tsd \1", s)
    peeled = _peel(s)
    if peeled is None:
        return None
    s, negative, currency = peeled
    # an accounting minus after the figure ("1.234,56-", as SAP prints a credit), read only when
    # glued to a figure with a separator: after bare digits it may end an open range ("2020-",
    # "100-"), and so may a dash that is no minus sign ("1,000–")
    trailing = s.endswith("-") and len(s) > 1 and s[-2].isdigit()
    if trailing:
        if negative or any(c in _RANGE_DASHES for c in source):
            return None
        s = s[:-1]
    m = _NUMBER_CORE.fullmatch(s)
    if not m and currency is not None and s.endswith("t"):
        m = _NUMBER_CORE.fullmatch(s[:-1].rstrip() + "tn")  # "3.2T USD"; a bare "3.2 t" is tonnes
    if not m or (m["indian"] and reading.decimal != "."):
        return None  # (India writes a decimal point: under a decimal comma "12,34,567" is no number)
    if trailing:
        if not any(c in m["num"] for c in ".,'") or m["exp"] or m["scale"] or m["pct"] or m["bp"]:
            return None
        negative = True
    digits = _digits(m.group("num"), reading)
    try:
        value = Decimal(digits + (m.group("exp") or ""))
    except InvalidOperation:
        return None
    if not _sane(value):
        return None
    scale, pct, bp = m.group("scale"), m.group("pct"), m.group("bp")
    step = _step(digits, m.group("exp"), zeros=bool(pct or bp))
    if scale:
        value, step = value * _SCALES[scale], step * _SCALES[scale]
    if bp:
        value, step = value / 100, step / 100
    if negative:
        value = -value
    plain = bool(_PLAIN_DIGITS.fullmatch(s)) and not negative and currency is None
    metric = scale if scale in _METRIC_SCALES and not (currency or pct or bp) else None
    shown = len(digits.replace(".", "").lstrip("0"))
    rounded = bool(scale and "." in digits) or bool((pct or bp) and shown >= 2)
    return Quantity(value=value, currency=currency, percent=bool(pct or bp), plain=plain,
                    scaled=bool(scale or pct or bp), source=source, metric=metric, step=step,
                    rounded=rounded)


#: Scale words that are also lengths (metres, millimetres).
_METRIC_SCALES = ("m", "mm")


#: Larger magnitudes are not amounts anyone reports; refusing them keeps Decimal arithmetic
#: (scales, differences) and float conversion (tolerance windows) from overflowing.
_MAX_ADJUSTED_EXPONENT = 200


def _sane(value: Decimal) -> bool:
    return value.is_finite() and (value.is_zero() or abs(value.adjusted()) <= _MAX_ADJUSTED_EXPONENT)


def _quantity_from_json(value: int | float | Decimal) -> Quantity | None:
    if isinstance(value, Decimal):
        if not value.is_finite():
            return None
        number, source = value, str(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            return None
        # float's own repr: a subclass's may name its type (numpy 2: "np.float64(1.5)")
        number, source = Decimal(float.__repr__(value)), float.__repr__(value)
    else:
        if abs(value) >= 10 ** _MAX_ADJUSTED_EXPONENT:
            return None  # also avoids int -> str limits on gigantic integers
        number, source = Decimal(value), int.__repr__(value)
    if not _sane(number):
        return None
    return Quantity(value=number, plain=isinstance(value, int), source=source)


#: The items of a list read as they are; any other (Decimal, date, Enum...) as :func:`_python_scalar` says.
_JSON_ITEMS = frozenset({str, int, float, bool, type(None), dict, list})


def _python_scalar(value: Any) -> Any:
    """The JSON value a Python object handed over in Python stands for (a pydantic model's
    ``model_dump()`` holds ``Decimal`` and ``date``, a pandas frame numpy scalars), else
    ``value`` itself: they were JSON values that equal nothing ("not comparable"), and numpy 2's
    float64 raised in Decimal."""
    if isinstance(value, (_dt.date, _dt.time)):
        return value.isoformat()  # a datetime's time is then read as an ISO string's is
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, (set, frozenset)):  # in one order whatever the process's string hashes
        return sorted(value, key=repr)
    if type(value).__module__ == "numpy" and callable(item := getattr(value, "item", None)):
        scalar = item()
        if isinstance(scalar, float) and not isinstance(value, float):
            return float(str(value))  # numpy's shortest form at its own precision: float32 0.1 is 0.1
        return scalar if isinstance(scalar, (bool, int, float, str)) else value
    return value


# --------------------------------------------------------------------------- units

_UNIT_GLUED = re.compile(rf"^({_alternation(_CODES)})({_alternation(_SCALES)})$")
_UNIT_SPACED = re.compile(rf"({_alternation(_CURRENCY_SYMBOLS)}|%|'000s?)")
_UNIT_FILLER = frozenset({"in", "of", "s", "the", "per", "unit", "units"})
_UNIT_MULTIWORD = [
    (re.compile(r"\bu\.?s\.?\s*dollars?\b"), " usd "),
    (re.compile(r"\bpounds?\s+sterling\b"), " gbp "),
    (re.compile(r"\bswiss\s+francs?\b"), " chf "),
    (re.compile(r"\bper[\s-]cent\b"), " % "),
    (re.compile(r"\bbasis\s+points?\b"), " bps "),
]


#: Units by what decides them: a run writes a few units on all its facts ("USD million"), and
#: reading one anew was half the cost of normalising a fact of four fields (issue 39). Immutable,
#: so one is shared; bounded as the values' memo is.
_UNITS: dict[str, Unit] = {}
_MERGED: dict[tuple[Unit, ...], Unit] = {}
_Key = TypeVar("_Key", bound=Hashable)
_Arg = TypeVar("_Arg")
_Made = TypeVar("_Made")


def parse_unit(text: str) -> Unit:
    """Split a unit-like field into currency, scale, percent and the remaining words."""
    return _kept(_UNITS, text, _parse_unit, text)


def _kept(memo: dict[_Key, _Made], key: _Key, make: Callable[[_Arg], _Made], arg: _Arg) -> _Made:
    """``make(arg)``, kept in ``memo`` under ``key`` (cleared at :data:`VALUES_LIMIT` entries)."""
    found = memo.get(key)
    if found is None:
        if len(memo) >= VALUES_LIMIT:
            memo.clear()
        found = memo[key] = make(arg)
    return found


def _parse_unit(text: str) -> Unit:
    s = _prep(text)
    for pattern, repl in _UNIT_MULTIWORD:
        s = pattern.sub(repl, s)
    s = _THOUSANDS_OF.sub(r" tsd \1 ", s)  # "TEUR", "T€": thousands of euros
    # Symbols are their own token ("$m", "US$bn", "%"), "'000" is a scale token.
    s = _UNIT_SPACED.sub(r" \1 ", s)
    currency: str | None = None
    scale: Decimal | None = None
    percent = False
    rest: list[str] = []
    for token in re.split(r"[\s,/()\-]+", s):
        token = token.strip(".")
        if not token or token in _UNIT_FILLER:
            continue
        glued = _UNIT_GLUED.match(token)  # "usdm", "eurbn"
        parts = [glued.group(1), glued.group(2)] if glued else [token]
        for part in parts:
            if part in _ALL_CURRENCY and currency is None:
                currency = _ALL_CURRENCY[part]
            elif part in _SCALES and scale is None:
                scale = _SCALES[part]
            elif part in ("%", "percent", "pct", "percentage"):
                percent = True
            elif part in ("bp", "bps"):
                percent, scale = True, Decimal("0.01")
            else:
                rest.append(part)
    rest_text = make_text(" ".join(rest)) if rest else None
    raw = text.strip()
    physical = metric = None
    if currency is None and not percent:
        if scale is None and rest:
            physical = physical_unit(raw)  # loads pint: no currency, scale or percent here
        elif not rest and s.strip() in _METRIC_SCALES:
            metric = s.strip()
    return Unit(raw=raw, currency=currency, scale=scale, percent=percent, rest=rest_text,
                physical=physical, metric=metric)


_AMOUNT_FIELDS = ("value", "amount")


@functools.lru_cache(maxsize=4096, typed=True)  # asked for every unit field of a fact normalised
def unit_target(name: str) -> str | None:
    """The field a ``<name>_unit``-style field applies to; None for the generic names."""
    text = str(name)
    lower = text.casefold()
    if lower in _GENERIC_UNIT_FIELDS:
        return None
    for suffix in _UNIT_FIELD_SUFFIXES:
        if lower.endswith(suffix):
            return text[: -len(suffix)]
    return None


def _merge_units(units: list[Unit]) -> Unit:
    """Several generic unit fields ("unit": "million", "currency": "USD") act as one (once per
    run for the same units, as :func:`parse_unit` reads each once)."""
    return _kept(_MERGED, tuple(units), _merged, units)


def _merged(units: list[Unit]) -> Unit:
    currency = next((u.currency for u in units if u.currency), None)
    scale = next((u.scale for u in units if u.scale is not None), None)
    raw = " ".join(u.raw for u in units if u.is_numeric)
    physical = next((u.physical for u in units if u.physical is not None), None)
    metric = next((u.metric for u in units if u.metric is not None), None)
    return Unit(raw=raw, currency=currency, scale=scale, percent=any(u.percent for u in units),
                physical=physical, metric=metric)


def unit_physical(unit: Unit) -> PhysicalUnit | None:
    """The physical unit of a unit field, reading ``m`` / ``mm`` as lengths."""
    return unit.physical or (physical_unit(unit.metric) if unit.metric else None)


def as_measure(value: Norm) -> Measure | None:
    """A measure as itself; ``183 m`` (read as 183 million) as 183 metres; else None."""
    if isinstance(value, Measure):
        return value
    if isinstance(value, Quantity) and value.metric:
        unit = physical_unit(value.metric)
        if unit is not None:
            return Measure(value=value.value.scaleb(-6), unit=unit, source=value.source)
    return None


def _apply_unit(q: Quantity, unit: Unit) -> Quantity | Measure:
    return _applied(q.value, q.currency, q.percent, q.plain, q.scaled, q.source, q.metric, q.approx,
                    q.step, q.rounded, unit)


def _applied(value: Decimal, currency: str | None, percent: bool, plain: bool, scaled: bool, source: str,
             metric: str | None, approx: bool, step: Decimal | None, rounded: bool,
             unit: Unit) -> Quantity | Measure:
    """A figure's fields (a :class:`Quantity`'s) with ``unit`` folded in: :func:`_figure` hands
    them over without making the Quantity of the figure alone (one made is 1.6 us)."""
    if unit.raw:
        source = f"{source} [{unit.raw}]"
    if unit.physical is not None and not (currency or percent or scaled):
        return Measure(value=value, unit=unit.physical, source=source)
    if unit.scale is not None and not scaled:
        value, scaled, plain, metric = value * unit.scale, True, False, unit.metric
        if step is not None:  # "1.2" [USD billion] is rounded like "$1.2 billion"
            step, rounded = step * unit.scale, rounded or step < 1
    if unit.percent and not percent:
        percent, plain = True, False
    currency = currency or unit.currency
    if currency is not None:
        plain = False
    if currency is not None or percent:
        metric = None
    return Quantity(value=value, currency=currency, percent=percent, plain=plain, scaled=scaled,
                    source=source, metric=metric, approx=approx, step=step, rounded=rounded)


# --------------------------------------------------------------------------- periods

def _month_table(rows: tuple[str, ...]) -> dict[str, int]:
    """Each name of row ``n`` (January first) to ``n``."""
    return {name: n for n, names in enumerate(rows, start=1) for name in names.split()}


#: Month names in English, German, French, Spanish, Italian, Dutch and Portuguese and their common
#: short forms, casefolded, accents kept and left out. A date is read with them (``15. Juni 2024``,
#: ``1er mars 2024``, ``1 de marzo de 2024``) and :mod:`.marks` tells two texts apart by them.
MONTH_NAMES: dict[str, int] = _month_table((
    "january jan januar janvier enero gennaio januari janeiro jän jänner",
    "february feb februar février fevrier febrero febbraio februari fevereiro",
    "march mar märz maerz marz mars marzo maart março marco mrt",
    "april apr avril abril aprile",
    "may mai mayo maggio mei maio",
    "june jun juni juin junio giugno junho",
    "july jul juli juillet juil julio luglio julho",
    "august aug août aout agosto augustus ago",
    "september sep sept septembre septiembre settembre setembro",
    "october oct oktober octobre octubre ottobre outubro okt",
    "november nov novembre noviembre novembro",
    "december dec dezember décembre decembre diciembre dicembre dezembro dez",
))
#: Short forms read only inside a date's shape: as words of a text some are other words (``set``,
#: ``out``, ``gen``), so :mod:`.marks` does not look for them.
_DATE_MONTHS: dict[str, int] = {**MONTH_NAMES, **_month_table((
    "janv gen ene",
    "févr fevr fév fev",
    "mär mrz",
    "avr abr",
    "mag",
    "giu",
    "lug",
    "",
    "set setiembre",
    "ott out",
    "",
    "déc dic",
))}
#: Short forms that are also words (``Set 2024``, ``Gen 2024``, ``Out 2024``): a month only with a
#: day or with their dot (``set. 2024``).
_WORDLIKE_MONTHS = frozenset({"gen", "set", "out", "mag", "ago"})
#: An English month name (the orders only English writes: ``March 5, 2023``, ``April-June 2023``).
_MON = (r"(?P<mon>jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
        r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?")
#: A month name in any language of :data:`_DATE_MONTHS` (the day, if any, written first).
_ANY_MON = (r"(?P<mon>" + "|".join(sorted(map(re.escape, _DATE_MONTHS), key=len, reverse=True))
            + r")(?P<dot>\.)?")
_ORD = r"(?:st|nd|rd|th)?"
#: A day in any language: ``5th``, ``1er`` (French), ``1º`` / ``1°`` (Spanish, Portuguese: NFKC
#: reads ``º`` as ``o``), ``15.`` (German).
_DAY = r"(?P<d>\d{1,2})(?P<ord>st|nd|rd|th|er|o|°|\.)?"
_FY = r"(?:fy|f\.y\.|fiscal(?:\s*year)?|financial\s+year)"
_YR = rf"(?P<fy>{_FY})?[\s\-']*(?P<y>\d{{4}}|\d{{2}})"
_QTR = (r"(?:q(?P<q1>[1-4])|(?P<q2>[1-4])q|(?P<q3>first|second|third|fourth|1st|2nd|3rd|4th)"
        r"\s+quarter(?:\s+of)?)")
_HALF = r"(?:h(?P<h1>[12])|(?P<h2>[12])h|(?P<h3>first|second|1st|2nd)\s+half(?:\s+of)?)"
_ORDINALS = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4,
             "4th": 4}

_ISO = re.compile(r"(?P<y>\d{4})[-/.](?P<m>\d{1,2})[-/.](?P<d>\d{1,2})"
                  r"(?:[t ](?P<hh>\d{1,2}):(?P<mi>\d{2})(?::(?P<ss>\d{2})(?:\.(?P<frac>\d+))?)?"
                  r"\s*(?P<tz>z|[+-]\d{2}:?\d{2})?)?")
_NUMERIC_DATE = re.compile(r"(?P<a>\d{1,2})(?P<sep>[-/.])(?P<b>\d{1,2})(?P=sep)(?P<y>\d{4})")
#: ``5 March 2023``, ``15. Juni 2024``, ``1 de marzo de 2024``, ``1er mars 2024``.
_DAY_MON_YEAR = re.compile(
    rf"{_DAY}[\s\-/]*(?:(?:of|de)\s+)?{_ANY_MON}[\s,\-/]*(?:del?\s+)?(?P<y>\d{{4}})")
_MON_DAY_YEAR = re.compile(rf"{_MON}[\s\-/]*(?P<d>\d{{1,2}}){_ORD}[\s,\-/]+(?P<y>\d{{4}})")
#: ``March 2023``, ``Juni 2024``, ``marzo de 2024``, ``janv. 2024``.
_MON_YEAR = re.compile(rf"{_ANY_MON}[\s,\-/]*(?:del?\s+)?(?P<y>\d{{4}})")
_YEAR_MON = re.compile(r"(?P<y>\d{4})[-/](?P<m>\d{1,2})")
_CAL_YEAR = re.compile(r"(?:cy|calendar(?:\s*year)?)[\s\-']*(?P<y>\d{4}|\d{2})")
_BARE_YEAR = re.compile(r"(?P<y>\d{4})")
_FISCAL_YEAR = re.compile(rf"{_FY}[\s\-']*(?P<y>\d{{4}}|\d{{2}})")
_YEAR_FISCAL = re.compile(r"(?P<y>\d{4})\s*(?:fiscal(?:\s*year)?|fy)")
_QUARTER = [re.compile(rf"{_QTR}[\s\-/,']*{_YR}"), re.compile(rf"{_YR}[\s\-/,']*{_QTR}")]
_HALVES = [re.compile(rf"{_HALF}[\s\-/,']*{_YR}"), re.compile(rf"{_YR}[\s\-/,']*{_HALF}")]

BARE_YEAR_RANGE = (1900, 2100)

#: A leading weekday ("Tue 5 Mar 2024", "Tuesday, March 5, 2024"); it must be the date's own.
_WEEKDAY = re.compile(r"(?P<wd>mon|tue|wed|thu|fri|sat|sun)(?:day|s|sday|nesday|r|rs|rsday|urday)?"
                      r"\.?,?\s+(?P<rest>.+)")
_WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


#: What :func:`_time_of_day` gives for a time that is no time of day (``25:00``, ``10:61``).
_NO_TIME = "no time"


def _time_of_day(text: str) -> tuple[str | None, str | None]:
    """:attr:`Period.time` and :attr:`Period.instant` of an ISO date with a time (``None, None``
    without one; :data:`_NO_TIME` with a time that is no time of day: ``25:00``)."""
    m = _ISO.fullmatch(_prep(text.replace("_", " ")).rstrip("."))
    if m is None or m["hh"] is None:
        return None, None
    try:
        at = _dt.datetime(int(m["y"]), int(m["m"]), int(m["d"]), int(m["hh"]), int(m["mi"]), int(m["ss"] or 0))
    except ValueError:
        return _NO_TIME, None
    frac = (m["frac"] or "").rstrip("0")
    time = at.strftime("%H:%M:%S") + (f".{frac}" if frac else "")
    if m["tz"] is None:
        return time, None
    offset = 0 if m["tz"] == "z" else (1 if m["tz"][0] == "+" else -1) * (
        int(m["tz"][1:3]) * 60 + int(m["tz"][-2:]))
    utc = at - _dt.timedelta(minutes=offset)
    return time, utc.strftime("%Y-%m-%d %H:%M:%S") + (f".{frac}" if frac else "")


def _year(text: str) -> int:
    if len(text) == 2:  # only reached after a marker (FY23, Q1'23)
        yy = int(text)
        return 2000 + yy if yy < 70 else 1900 + yy
    return int(text)


def _date_key(y: int, m: int, d: int) -> str | None:
    try:
        return _dt.date(y, m, d).isoformat()
    except ValueError:
        return None


def _month(name: str) -> int:
    return _DATE_MONTHS[name]


def _is_month(m: re.Match[str], *, bare_day: bool) -> bool:
    """Whether the month word of ``m`` (:data:`_ANY_MON`) is a month: a short form that is also a
    word (:data:`_WORDLIKE_MONTHS`) is one only with its dot or after a bare day (``1 set 2024``;
    ``5th gen 2024`` is a product's generation, ``Set 2024`` a set)."""
    return m["dot"] is not None or bare_day or m["mon"] not in _WORDLIKE_MONTHS


def _dated_weekday(weekday: str, rest: str, reading: Reading) -> str | None:
    """The date after a weekday, if it is a full date falling on that weekday."""
    key = parse_period(rest, reading=reading)
    if key is None or len(key) != 10 or not key[0].isdigit():
        return None
    return key if _WEEKDAYS[_dt.date.fromisoformat(key).weekday()] == weekday else None


def parse_period(text: str, *, bare_year: bool = True, reading: Reading = READING) -> str | None:
    """The period key of a written date or period (see the module docs), or None.

    ``bare_year=False`` leaves four plain digits to be read as a number.
    """
    # identifiers write spaces as underscores ("30_March_2007" in RDF, as WebNLG does)
    s = _prep(text.replace("_", " ")).rstrip(".")
    if not s or not any(ch.isdigit() for ch in s) or not _may_be_period(s):
        return None
    return _period_key(s, bare_year, reading)


#: What every period pattern below holds: four digits in a row (a year), or the letter of a
#: marker that may stand before a two-digit year (fy, cy / calendar, q / quarter, h / half).
_PERIOD_HINT = re.compile(r"\d{4}|[fcqh]")


def _may_be_period(s: str) -> bool:
    """False when no pattern of :func:`_period_key` can match ``s`` (prepared): every one starts
    with a digit, a letter, ``-`` or ``'`` and holds :data:`_PERIOD_HINT`. Every amount is tried
    as a period first: "1,926.8" and "$1926.8 million" then cost no full match (15 of them)."""
    return (s[0].isalnum() or s[0] in "-'") and _PERIOD_HINT.search(s) is not None


def _period_key(s: str, bare_year: bool, reading: Reading) -> str | None:
    """:func:`parse_period` of ``s``, prepared."""
    if m := _WEEKDAY.fullmatch(s):
        return _dated_weekday(m["wd"], m["rest"], reading)
    if m := _ISO.fullmatch(s):
        return _date_key(int(m["y"]), int(m["m"]), int(m["d"]))
    if m := _NUMERIC_DATE.fullmatch(s):
        a, b, y = int(m["a"]), int(m["b"]), int(m["y"])
        # 13/05/2024 and 05/13/2024 say which is the day; 03.04.2024 is day first where written
        day_first = a > 12 or (b <= 12 and (m["sep"] == "." or reading.date_order == "DMY"))
        return _date_key(y, a, b) if not day_first else _date_key(y, b, a)
    if (m := _DAY_MON_YEAR.fullmatch(s)) and _is_month(m, bare_day=m["ord"] in (None, ".")):
        return _date_key(int(m["y"]), _month(m["mon"]), int(m["d"]))
    if m := _MON_DAY_YEAR.fullmatch(s):
        return _date_key(int(m["y"]), _month(m["mon"]), int(m["d"]))
    if (m := _MON_YEAR.fullmatch(s)) and _is_month(m, bare_day=False):
        return f"{int(m['y']):04d}-{_month(m['mon']):02d}"
    if (m := _YEAR_MON.fullmatch(s)) and 1 <= int(m["m"]) <= 12:
        return f"{int(m['y']):04d}-{int(m['m']):02d}"
    if m := (_FISCAL_YEAR.fullmatch(s) or _YEAR_FISCAL.fullmatch(s)):
        return f"FY{_year(m['y'])}"
    if m := _CAL_YEAR.fullmatch(s):
        return str(_year(m["y"]))
    for patterns, prefix, groups in ((_QUARTER, "Q", ("q1", "q2", "q3")),
                                     (_HALVES, "H", ("h1", "h2", "h3"))):
        for pattern in patterns:
            if m := pattern.fullmatch(s):
                which = next(m[g] for g in groups if m[g])
                n = _ORDINALS.get(which) or int(which)
                fiscal = "FY" if m["fy"] else ""
                return f"{fiscal}{_year(m['y'])}-{prefix}{n}"
    if "periods" in reading.families and (key := _spanned_period(s)) is not None:
        return key
    if bare_year and (m := _BARE_YEAR.fullmatch(s)):
        y = int(m["y"])
        if BARE_YEAR_RANGE[0] <= y <= BARE_YEAR_RANGE[1]:
            return str(y)
    return None


#: Periods written as the months they span (``periods`` family, guideline G25).
_MONTHS_ENDED = re.compile(rf"(?P<n>three|six|3|6)[\s-]+months?\s+(?:ended|ending)\s+{_MON}[\s\-/]*"
                           rf"(?P<d>\d{{1,2}}){_ORD}[\s,\-/]+(?P<y>\d{{4}})")
_FY_ENDED = re.compile(rf"{_FY}\s+(?:ended|ending)\s+(?:{_MON}[\s\-/]*\d{{1,2}}{_ORD}[\s,\-/]+)?(?P<y>\d{{4}})")
_MONTH_SPAN = re.compile(rf"{_MON}\s*(?:-|to|through)\s*{_MON.replace('?P<mon>', '?P<mon2>')}[\s,\-/]*"
                         r"(?P<y>\d{4})")
_SPAN_MONTHS = {"three": 3, "3": 3, "six": 6, "6": 6}


def _calendar_span(year: int, last: int, months: int) -> str | None:
    """The calendar quarter or half of ``months`` months ending with month ``last``, or None."""
    if months == 3 and last % 3 == 0:
        return f"{year}-Q{last // 3}"
    if months == 6 and last % 6 == 0:
        return f"{year}-H{last // 6}"
    return None


def _spanned_period(s: str) -> str | None:
    """``three months ended june 30, 2023`` -> ``2023-Q2``, ``april-june 2023`` -> ``2023-Q2``,
    ``fiscal year ended 2023`` -> ``FY2023``; None for a span that is no calendar quarter or half
    (``three months ended may 31``: a fiscal quarter of an unknown year)."""
    if m := _MONTHS_ENDED.fullmatch(s):
        year, last = int(m["y"]), _month(m["mon"])
        if int(m["d"]) != _calendar.monthrange(year, last)[1]:
            return None
        return _calendar_span(year, last, _SPAN_MONTHS[m["n"]])
    if m := _MONTH_SPAN.fullmatch(s):
        first, last = _month(m["mon"]), _month(m["mon2"])
        return _calendar_span(int(m["y"]), last, last - first + 1) if last > first else None
    if m := _FY_ENDED.fullmatch(s):
        return f"FY{int(m['y'])}"
    return None


# --------------------------------------------------------------------------- values and facts


_QUOTES = {'"': '"', "'": "'", "\u201c": "\u201d", "\u2018": "\u2019"}


def _strip_quotes(text: str) -> str:
    t = text.strip()
    if len(t) >= 2 and _QUOTES.get(t[0]) == t[-1]:
        return t[1:-1].strip()
    return t


#: Normal forms by what decides them: a fact is normalised as a candidate, again as a subject of the
#: other direction, by the near-miss analysis and by the reports' closest-fact search, and values
#: repeat across facts (periods, units, company names). The forms are immutable, so one is shared.
#: Bounded (a run of unique values only clears it now and then): 50,000 facts hold a document's
#: facts in flight many times over, and a run of 1,000 x 20 facts whole for its reports, in some
#: 75 MB (a fact's key and forms take about 1.5 kB).
_VALUES: dict[Any, Norm] = {}
_FACTS: dict[Any, dict[str, Norm]] = {}
VALUES_LIMIT, FACTS_LIMIT = 100_000, 50_000


#: The JSON scalars, whose cache key is (type, value) (_value_key, inlined for a fact's fields).
_SCALARS = frozenset({str, int, float, bool, type(None)})


def _value_key(value: Any) -> Any:
    """``value`` as a cache key: its type too (``1``, ``1.0`` and ``True`` are equal keys but
    normalise differently); lists and records by their items."""
    # a JSON scalar's key inline (a list of 5 records of 3 fields: 21 calls made 5)
    if isinstance(value, list):
        return list, tuple([(type(v), v) if type(v) in _SCALARS else _value_key(v) for v in value])
    if isinstance(value, dict):
        return dict, tuple([(k, (type(v), v) if type(v) in _SCALARS else _value_key(v)) for k, v in value.items()])
    return type(value), value


def normalize_value(value: Any, *, ignore_company_suffixes: bool = False,
                    unit: Unit | None = None, amount: bool = False, reading: Reading = READING) -> Norm:
    """The normal form of one (non-unit) field value.

    ``amount`` marks the field a unit applies to: four digits are then a number, not a year.
    """
    return _keyed_value(value, None, ignore_company_suffixes, unit, amount, reading)


def _keyed_value(value: Any, value_key: Any, ignore_company_suffixes: bool, unit: Unit | None, amount: bool,
                 reading: Reading) -> Norm:
    """:func:`normalize_value`, given the value's :func:`_value_key` when the caller has worked it
    out (a fact's key holds its fields'; a list's was worked out again, item by item), else None."""
    if value is None:
        return MISSING
    try:
        key = (_value_key(value) if value_key is None else value_key, ignore_company_suffixes, unit, amount, reading)
        found = _VALUES.get(key)
        if found is None:  # (no callable making it: a closure a call feeds the collector's passes)
            if len(_VALUES) >= VALUES_LIMIT:
                _VALUES.clear()
            found = _VALUES[key] = _normalize_value(value, ignore_company_suffixes, unit, amount, reading)
        return found
    except TypeError:  # an unhashable value inside (a set, an object): not cached
        return _normalize_value(value, ignore_company_suffixes, unit, amount, reading)


def _normalize_value(value: Any, ignore_company_suffixes: bool, unit: Unit | None, amount: bool,
                     reading: Reading) -> Norm:
    if type(value) is str:  # the common case first: a string, most often a figure
        pattern = _FIGURES.get(reading.decimal)
        if pattern is not None and (m := pattern.fullmatch(value)) is not None and not value.isdigit():
            return _figure(m, value, unit, reading.decimal)
        return _normalize_string(value, ignore_company_suffixes, unit, amount, reading)
    if isinstance(value, (tuple, set, frozenset)):
        value = _python_scalar(value)  # a Python sequence handed over: the JSON list it stands for
    if value is None or (isinstance(value, (list, dict)) and is_absent(value)):
        return MISSING  # an empty list or record says nothing, as null (core.scope.is_absent)
    if isinstance(value, list) and not all(type(v) in _JSON_ITEMS for v in value):
        value = [_python_scalar(v) for v in value]  # Decimal, date, Enum items of model_dump()
    if isinstance(value, list) and (items := _items(value, ignore_company_suffixes, reading)) is not None:
        return items
    if isinstance(value, dict) and value and (items := _items([value], ignore_company_suffixes, reading)) is not None:
        # a nested record (a pydantic sub-model: an address, an amount with its currency) is
        # compared field by field as a list's record is, not by its JSON ({"zip": "80331"} was
        # not {"zip": 80331}); it is shown as written
        return replace(items, json=lenient_json(value))
    if isinstance(value, (bool, Enum)) or not isinstance(value, (int, float, str, Decimal)):
        # (an Enum of a pydantic model, a str's or an int's too: its value, not "Status.PAID")
        scalar = _python_scalar(value)
        if scalar is value:
            return _other(value)
        return _normalize_value(scalar, ignore_company_suffixes, unit, amount, reading)
    if isinstance(value, (int, float, Decimal)):
        q = _quantity_from_json(value)
        if q is None:
            return _other(value)
        return _apply_unit(q, unit) if unit is not None else q
    # a str's subclass (numpy's str_): read as the string it holds
    return _normalize_string(str(value), ignore_company_suffixes, unit, amount, reading)


def _figure_pattern(thousands: str, decimal: str) -> re.Pattern[str]:
    """:data:`_FIGURE` written with these separators."""
    t, d = re.escape(thousands), re.escape(decimal)
    return re.compile(rf"(?P<cur>[$€£])?(?P<int>[1-9][0-9]{{0,2}}(?:{t}[0-9]{{3}})+|[0-9]{{1,15}})"
                      rf"(?:{d}(?P<frac>[0-9]{{1,15}}))?(?: (?P<scale>{_SCALE_WORDS}))?")


#: The commonest written figures ("1,926.8", "$1926.8 million", "699.6"), most of a run's values
#: and nearly all new to it: an optional currency symbol, digits (in comma thousands, not after a
#: 0) with an optional decimal part and an optional scale word after one space, lower-case ASCII
#: with nothing around. No period pattern matches one, ``_prep`` leaves it as it is, and with
#: ``.`` the decimal separator (``1,234`` is then a thousands comma) :func:`parse_number` reads it
#: as :func:`_figure` does: 13.3 -> 3.9 us a value read first (tests/unit/judges/
#: test_normalize_figures.py proves the two the same over generated figures). Bare digits
#: ("2023": maybe a year) take the full path.
_FIGURE = _figure_pattern(",", ".")
#: The figure pattern of each decimal separator: with a decimal comma the separators swap
#: ("1.234,50", "€12,5 million": European invoices), whose values would otherwise cost the full
#: path's 13 us each (issue 39, item 3: records with lists no costlier than flat facts).
_FIGURES = {".": _FIGURE, ",": _figure_pattern(".", ",")}


#: ``_step`` of a figure with ``n`` decimals, by ``n`` (``1E-n``, each made once).
_FRACTION_STEPS = [Decimal(1).scaleb(-n) for n in range(16)]


def _figure(m: re.Match[str], text: str, unit: Unit | None, decimal: str = ".") -> Quantity | Measure:
    """What :func:`_normalize_string` makes of ``text``, a :data:`_FIGURES` match (``m``) of the
    ``decimal`` separator's."""
    symbol, whole, frac, scale = m.group("cur", "int", "frac", "scale")
    whole = whole.replace("," if decimal == "." else ".", "")
    digits = whole if frac is None else f"{whole}.{frac}"
    value = Decimal(digits)
    step = _step(digits, None) if frac is None else _FRACTION_STEPS[len(frac)]
    if scale:
        factor = _SCALES[scale]
        value, step = value * factor, step * factor
    currency = _CURRENCY_SYMBOLS[symbol] if symbol else None
    metric = scale if scale in _METRIC_SCALES and not symbol else None
    rounded = bool(scale) and frac is not None
    if unit is None:
        return Quantity(value=value, currency=currency, scaled=bool(scale), source=text, metric=metric,
                        step=step, rounded=rounded)
    return _applied(value, currency, False, False, bool(scale), text, metric, False, step, rounded, unit)


def _normalize_string(value: str, ignore_company_suffixes: bool, unit: Unit | None, amount: bool,
                      reading: Reading) -> Norm:
    """:func:`_normalize_value` of a string, by every reading in turn."""
    if not value or value.isspace():
        return MISSING  # a blank string says nothing, as null (core.scope.is_absent)
    # a quoted date or number ('"1923-11-18"', as RDF literals are written) is still one
    bare = _strip_quotes(value)
    key = parse_period(bare, bare_year=not amount, reading=reading)
    if key is not None:
        # (only an ISO date is read with a time, which has a colon)
        time, instant = _time_of_day(bare) if ":" in bare else (None, None)
        if time != _NO_TIME:
            return Period(key=key, raw=value.strip(), time=time, instant=instant)
        # "T25:99", "T24:00": no time of day, so no date and time; read on as written
    q = parse_number(bare, reading)
    if q is None and "numbers" in reading.families:
        q = _written_number(bare, reading)
    if q is not None:
        return _apply_unit(q, unit) if unit is not None else q
    families = reading.unit_families
    if (measure := parse_measure(bare, families)) is not None:
        return measure
    # identifiers write spaces as underscores ("1.8_g" in RDF, as WebNLG does): a measure too, so
    # that "1.8_g" never matches "1.8_mg" by similarity (91)
    if "_" in bare and " " not in bare and (measure := parse_measure(bare.replace("_", " "), families)) is not None:
        return measure
    if "per_period" in reading.families and (m := _PER_PERIOD.fullmatch(bare.strip())):
        q = parse_number(m["amount"], reading)
        if q is not None:
            return replace(_per_period(q, (m["per"] or m["adverb"]).casefold()), source=bare.strip())
    return make_text(value, ignore_company_suffixes=ignore_company_suffixes)


def _written_number(bare: str, reading: Reading) -> Quantity | None:
    """A number in words or in crore and lakh (``numbers`` family, guideline G26), as written."""
    low = bare.casefold()
    if "crore" in low or "lakh" in low:
        # India writes a decimal point: under a decimal comma "1.234 crore" is no 12.34 crore
        written: str | None = indian_scales(bare) if reading.decimal == "." else None
    elif low.lstrip().split(" ", 1)[0].split("-", 1)[0] in NUMBER_WORDS:  # the usual text: no
        written = number_in_words(bare)
    else:
        return None
    q = parse_number(written, reading) if written is not None and written != bare else None
    return replace(q, source=bare.strip()) if q is not None else None


_PERIOD_WORDS = {"hour": "hour", "hr": "hour", "day": "day", "week": "week", "wk": "week",
                 "month": "month", "mo": "month", "year": "year", "yr": "year", "annum": "year",
                 "annually": "year", "yearly": "year", "monthly": "month", "weekly": "week",
                 "daily": "day", "hourly": "hour", "p.a.": "year", "pa": "year"}
#: ``$5,000 per month``, ``$9,000/mo``, ``$41,600 annually``, ``1.5% a month`` (issue #37, G15).
_PER_PERIOD = re.compile(
    r"(?P<amount>.*?\d.*?)\s*(?:(?:/|\bper\b|\ba\b|\ban\b|\beach\b|\bevery\b)\s*"
    r"(?P<per>hour|hr|day|week|wk|month|mo|year|yr|annum)s?|\s(?P<adverb>annually|yearly|monthly|"
    r"weekly|daily|hourly|p\.a\.))", re.IGNORECASE)
#: Money per week or month is compared per year (exact: 52 weeks, 12 months); per hour and per day
#: are never converted (the hours and days of a year are not fixed), nor is a rate in percent.
_PER_YEAR = {"week": Decimal(52), "month": Decimal(12), "year": Decimal(1)}


def _per_period(q: Quantity, written: str) -> Quantity:
    per = _PERIOD_WORDS[written]
    if q.currency and not q.percent and per in _PER_YEAR:
        factor = _PER_YEAR[per]
        return replace(q, value=q.value * factor, step=None if q.step is None else q.step * factor,
                       per="year", plain=False)
    return replace(q, per=per, plain=False)


_LABEL_FIELDS = ("description", "name", "title", "label", "product", "item")


def _label(values: dict[str, Norm]) -> str:
    """An item's name in a reasoning: its first text of a label field, else its first text."""
    # one pass, no dict of its texts (each list item is labelled as it is normalised)
    first = None
    for k, v in values.items():
        if type(v) is Text:
            if str(k).casefold() in _LABEL_FIELDS:
                return v.raw
            if first is None:
                first = v.raw
    return first if first is not None else "; ".join(v.describe() for v in values.values())


def _items(value: list[Any], ignore_company_suffixes: bool, reading: Reading) -> Items | None:
    """A list of records, of scalars, or of both or of lists (``mixed``) as :class:`Items`; None
    for one holding a NaN (compared by its JSON). A mixed list was compared by its JSON, so two
    lists of the same items in another order differed, where lists of records or of values do not."""
    # an absent item (null, "", {}) says nothing, as an absent field does (core.scope.is_absent)
    kept = [(k, v) for k, v in enumerate(value) if not is_absent(v)]
    records = bool(kept) and all(isinstance(v, dict) for _, v in kept)
    mixed = not records and not all(isinstance(v, (str, int, float, Decimal)) for _, v in kept)
    text = lenient_json(value)
    if _may_hold_nan(value, text):
        return None  # a NaN equals nothing, whichever item holds it: one JSON value says so
    out = []
    for k, v in kept:
        if isinstance(v, dict):  # (every item of a list of records; a record of a mixed list)
            values = normalize_fact(v, ignore_company_suffixes=ignore_company_suffixes, reading=reading)
        else:
            values = {"": normalize_value(v, ignore_company_suffixes=ignore_company_suffixes, reading=reading)}
        out.append(Item(values, fact_currency(values), _label(values), k))
    return Items(tuple(out), records, text, mixed)


def _unit_norm(value: Any) -> Norm:
    if value is None:
        return EMPTY_UNIT
    if isinstance(value, str):
        return parse_unit(value)
    return _other(value)


def normalize_fact(fact: dict[str, Any], *, ignore_company_suffixes: bool = False,
                   skip: frozenset[str] = frozenset(), reading: Reading = READING) -> dict[str, Norm]:
    """The normal form of every field of a fact except those in ``skip``.

    Unit-like fields are read first and folded into the amounts they apply to (module docs).
    The result is shared by every equal fact of the run: it must not be changed.
    """
    try:
        fields = tuple([(k, (type(v), v) if type(v) in _SCALARS else _value_key(v))
                        for k, v in fact.items() if k not in skip])
        key = (fields, ignore_company_suffixes, reading)
        found = _FACTS.get(key)
        if found is None:
            if len(_FACTS) >= FACTS_LIMIT:
                _FACTS.clear()
            found = _FACTS[key] = _normalize_fact(fact, ignore_company_suffixes, skip, reading, fields)
        return found
    except TypeError:  # an unhashable value inside: not cached
        return _normalize_fact(fact, ignore_company_suffixes, skip, reading)


def _normalize_fact(fact: dict[str, Any], ignore_company_suffixes: bool, skip: frozenset[str],
                    reading: Reading, fields: tuple[tuple[Any, Any], ...] = ()) -> dict[str, Norm]:
    """``fields``: the fields' names and cache keys, as :func:`normalize_fact` worked them out
    (empty: each value's worked out when it is normalised)."""
    value_keys = dict(fields)
    out: dict[str, Norm] = {}
    for k, unit_norm, unit, amount in _plan_of(fact, skip, ignore_company_suffixes, reading):
        if unit_norm is not None:
            out[k] = unit_norm
        elif (code := _code(k, fact[k], reading)) is not None:
            out[k] = code
        else:
            out[k] = _keyed_value(fact[k], value_keys.get(k), ignore_company_suffixes, unit, amount, reading)
    return out


#: Whether a field holds identifiers (:data:`IDENTIFIER_NAME`, the reading's ``identifiers``), by
#: its name and the reading's: asked of every field of every new fact.
_CODE_FIELDS: dict[tuple[Any, frozenset[str]], bool] = {}


def _code(name: Any, value: Any, reading: Reading) -> Code | None:
    """``value`` as a :class:`Code` when ``name`` holds identifiers and it is one, else None."""
    named = _CODE_FIELDS.get((name, reading.identifiers))
    if named is None:
        if len(_CODE_FIELDS) >= VALUES_LIMIT:
            _CODE_FIELDS.clear()
        named = _CODE_FIELDS[(name, reading.identifiers)] = isinstance(name, str) and (
            name in reading.identifiers or IDENTIFIER_NAME.search(name) is not None)
    if not named:
        return None
    if isinstance(value, (UUID, Enum)):  # a pydantic model's UUID or Enum: the string it stands for
        value = _python_scalar(value)
    key = identifier_key(value)
    return None if key is None else Code(str(value), key)


#: A fact's field: its name, its normal form when it is a unit field (else None), the unit its
#: value is read with (None: none) and whether it is an amount a unit applies to.
_Step = tuple[Any, Norm | None, Unit | None, bool]
#: The fields compared of a fact's keys (by the keys and the skipped names), and its unit fields.
_SHAPES: dict[tuple[tuple[Any, ...], frozenset[str]], tuple[list[Any], list[Any]]] = {}
#: How a fact's fields are read (:func:`_make_plan`), by its keys, the skipped names and its unit
#: fields' texts: what decides which unit applies to which field. A run's facts have a few shapes
#: and units ("USD million"), and working it out again was a third of normalising a new fact.
_PLANS: dict[tuple[tuple[Any, ...], frozenset[str], tuple[str | None, ...]], list[_Step]] = {}


def _plan_of(fact: dict[str, Any], skip: frozenset[str], ignore_company_suffixes: bool,
             reading: Reading) -> list[_Step]:
    """:func:`_make_plan` of ``fact``, once per run for the same keys and unit texts."""
    keys = tuple(fact)
    shape = _SHAPES.get((keys, skip))
    if shape is None:
        names = [k for k in keys if k not in skip]
        if len(_SHAPES) >= VALUES_LIMIT:
            _SHAPES.clear()
        shape = _SHAPES[(keys, skip)] = (names, [k for k in names if is_unit_field(k)])
    texts = tuple([fact[k] for k in shape[1]])
    for t in texts:
        if t is not None and type(t) is not str:  # (1 and True would be one key)
            return _make_plan(fact, shape[0], ignore_company_suffixes, reading)[0]
    plan = _PLANS.get((keys, skip, texts))
    if plan is None:
        plan, reusable = _make_plan(fact, shape[0], ignore_company_suffixes, reading)
        if reusable:
            if len(_PLANS) >= VALUES_LIMIT:
                _PLANS.clear()
            _PLANS[(keys, skip, texts)] = plan
    return plan


def _make_plan(fact: dict[str, Any], names: list[Any], ignore_company_suffixes: bool,
               reading: Reading) -> tuple[list[_Step], bool]:
    """How each of ``names`` is read (:data:`_Step`): unit-like fields are read first and folded
    into the amounts they apply to (module docs). Beside it, whether it holds for any fact of the
    same keys and unit texts (not when a generic unit found its amounts by their values)."""
    units = {k: _unit_norm(fact[k]) for k in names if is_unit_field(k)}
    # which unit applies to which field
    applied: dict[Any, list[Unit]] = {}
    amounts: set[Any] = set()
    generic = [u for k, u in units.items() if unit_target(k) is None and isinstance(u, Unit)
               and (u.raw or u.is_numeric)]
    for k, u in units.items():
        target = unit_target(k)
        if target is not None and target in fact and isinstance(u, Unit) and u.raw:
            applied.setdefault(target, []).append(u)
            amounts.add(target)
    generic_names = {k for k, u in units.items() if unit_target(k) is None}
    generic_targets = False
    reusable = True
    if generic:
        others = [k for k in names if k not in units]
        targets = [k for k in others if k in _AMOUNT_FIELDS]
        if not targets:
            reusable = False
            targets = [k for k in others if isinstance(
                normalize_value(fact[k], ignore_company_suffixes=ignore_company_suffixes, reading=reading),
                Quantity)]
        for k in targets:
            applied.setdefault(k, []).extend(generic)
            amounts.add(k)
        generic_targets = bool(targets)
    for k, u in units.items():  # a physical unit then compares by dimension (judge)
        if isinstance(u, Unit) and (u.physical or u.metric) and (
                k in generic_names and generic_targets or unit_target(k) in amounts):
            units[k] = replace(u, applied=True)
    plan: list[_Step] = []
    for k in names:
        if k in units:
            plan.append((k, units[k], None, False))
            continue
        unit = _merge_units(applied[k]) if k in applied else None
        plan.append((k, None, unit if unit is not None and unit.is_numeric else None, k in amounts))
    return plan, reusable


def fact_currency(values: dict[str, Norm]) -> str | None:
    """The currency a fact's amount is in: a unit field's, else the first amount's."""
    for k, v in values.items():
        if isinstance(v, Unit) and v.currency and unit_target(k) is None:
            return v.currency
    for k in (*_AMOUNT_FIELDS, *values):
        amount = values.get(k)
        if isinstance(amount, Quantity) and amount.currency:
            return amount.currency
    return None
