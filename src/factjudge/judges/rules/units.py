"""Physical units for the rules judge: lengths, areas, volumes, masses, temperatures and their
ratios (``mg/kg``, ``km/h``, ``mg/kg/day``), read with pint's default registry.

pint ships its unit definitions inside the package (``default_en.txt``) and has no network code:
nothing is downloaded, and the registry is built with ``cache_folder=None`` so nothing is written
either. Importing pint and building the registry costs about 1.5 s (0.8 s import + 0.7 s registry,
measured on the development machine), so both happen only when a value or unit field holds a word
that is no currency, scale or percent (``5 mg``, ``"unit": "ft"``), once per process.

A unit is accepted only when every part of it measures length, area, volume, mass or temperature,
with times allowed below the fraction bar (rates); anything else (``goals``, ``tablets``, molar,
energy) is no physical unit here and stays text. A few units pint knows are common words or
abbreviations with other meanings in our domains and are refused: ``points`` (pint: a printer's
point, a length; in sports a score), ``pt`` (pint or point), ``pc`` (parsec or pieces), ``kt``
(knot or kilotonne / karat), ``mt`` (millitonne, but usually a metric tonne), ``au``, ``hand``,
``league``, ``cup``, ``barn``, ``shot`` (a volume; in sports a try at goal).

Two units are comparable when their dimensions agree part by part: the numerator's and the
denominator's dimensions are kept apart, so ``mg/kg`` (mass per mass) is not dimensionless and
never equals ``ppm`` or a bare number, but ``mg/kg`` and ``mcg/kg`` compare -- 1,000-fold apart.
"""
from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

__all__ = ["Measure", "PhysicalUnit", "common_values", "listed_unit", "parse_measure", "physical_unit"]


@dataclass(frozen=True, slots=True)
class PhysicalUnit:
    #: pint's spelling (``milligram / kilogram``), which pint reads back.
    name: str
    #: Numerator and denominator dimensions, e.g. ``[mass]/[mass]``.
    dimension: str
    #: Size of one unit in SI base units (the change per unit for a temperature).
    scale: float


@dataclass(frozen=True, slots=True)
class Measure:
    """A number with a physical unit, e.g. ``600 ft``."""

    value: Decimal
    unit: PhysicalUnit
    source: str

    def describe(self) -> str:
        return self.source


_BASE = frozenset({"[length]", "[mass]", "[temperature]"})
_REFUSED_NAMES = frozenset({"point", "hand", "league", "cup", "parsec", "astronomical_unit",
                            "knot", "millimetric_ton", "barn", "shot"})
_REFUSED_WRITINGS = frozenset({"pt", "pc", "kt", "mt", "au", "b", "a"})
#: A letter (or °, µ) then up to 39 unit characters, no digit after a space ("3 ft 2 in" is two
#: measures, which pint would multiply into an area).
_UNIT_TEXT = re.compile(r"(?:[^\W\d_]|[°µμ])(?:[^\W\d_]|[°µμ./^²³·*-]|(?<! )\d| (?!\d)){0,39}")
_MEASURE = re.compile(r"(?P<num>[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|[+-]?\.\d+)\s*"
                      r"(?P<unit>(?:[^\W\d_]|[°µμ]).*)")


@functools.lru_cache(maxsize=1)
def _registry() -> Any:
    import pint  # lazy: ~1.5 s with the registry (module docs)

    return pint.UnitRegistry(cache_folder=None)


def _dimension(registry: Any, units: Any) -> str | None:
    """``[mass]/[mass]`` for mg/kg; None when a part is no length, area, volume, mass,
    temperature, or a time below the fraction bar."""
    top: list[str] = []
    bottom: list[str] = []
    for name, exponent in units.items():
        if name in _REFUSED_NAMES:
            return None
        dims = dict(registry.get_dimensionality(name))
        if len(dims) != 1:
            return None
        (dim, power), = dims.items()
        if dim not in _BASE and not (dim == "[time]" and exponent < 0):
            return None
        part = f"{dim}^{abs(power * exponent)}" if abs(power * exponent) != 1 else dim
        (top if exponent > 0 else bottom).append(part)
    if not top:
        return None
    return f"{'*'.join(sorted(top))}/{'*'.join(sorted(bottom))}"


#: The families of units read from ``data/rules/units.tsv`` (issue #37): ``units`` (data sizes,
#: frequency, charge, power, energy, luminance) and ``durations``.
UNIT_FAMILIES = frozenset({"units", "durations"})
#: Names of listed units start with this, so :func:`common_values` converts them without pint.
_LISTED = "listed:"


@functools.lru_cache(maxsize=1)
def _listed() -> tuple[dict[str, tuple[str, PhysicalUnit]], dict[str, tuple[str, PhysicalUnit]]]:
    """(writing -> (family, unit)) as written, and by casefold for the writings not marked ``!``
    (``Gb`` is a gigabit, ``GB`` and ``gb`` gigabytes)."""
    from importlib import resources

    text = resources.files("factjudge").joinpath("data/rules/units.tsv").read_text(encoding="utf-8")
    exact: dict[str, tuple[str, PhysicalUnit]] = {}
    folded: dict[str, tuple[str, PhysicalUnit]] = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        family, writings, name, dimension, size = line.split("\t")
        unit = PhysicalUnit(name=_LISTED + name, dimension=dimension, scale=float(size))
        for writing in writings.split(","):
            marked = writing.startswith("!")
            writing = writing.lstrip("!")
            exact.setdefault(writing, (family, unit))
            if not marked:
                folded.setdefault(writing.casefold(), (family, unit))
    return exact, folded


def listed_unit(text: str, families: frozenset[str]) -> PhysicalUnit | None:
    """A unit of ``data/rules/units.tsv`` in one of ``families``, or None."""
    exact, folded = _listed()
    written = " ".join(text.split())
    found = exact.get(written) or folded.get(written.casefold())
    return found[1] if found is not None and found[0] in families else None


@functools.lru_cache(maxsize=4096)
def physical_unit(text: str) -> PhysicalUnit | None:
    """The physical unit written in ``text`` (``mg/kg``, ``ft``, ``°C``), or None."""
    written = " ".join(unicodedata.normalize("NFKC", text).split())
    if not _UNIT_TEXT.fullmatch(written) or written.casefold() in _REFUSED_WRITINGS:
        return None
    registry = _registry()
    # pint raises many kinds of errors on text that is not a unit (undefined names, syntax,
    # tokenizer errors): each means "not a unit", and text must never make the judge fail
    try:
        units = registry.parse_units(written)
        dimension = _dimension(registry, registry.parse_units_as_container(written))
        if dimension is None:
            return None
        one, zero = (registry.Quantity(x, units).to_base_units().magnitude for x in (1.0, 0.0))
        return PhysicalUnit(name=str(units), dimension=dimension, scale=float(one - zero))
    except Exception:  # noqa: BLE001 -- see above
        return None


#: An inch mark after a number (``15.6"``, ``15.6″``, ``15.6''``): read as ``in`` (units family).
_INCH_MARK = re.compile(r"(?<=\d)\s*(?:\"|″|”|'')$")
#: ``16-inch``, ``one-year``: a hyphen between a number and its unit.
_HYPHENATED = re.compile(r"^(?P<num>[\d.,]+)-(?P<unit>[^\W\d_].*)$")


def parse_measure(text: str, families: frozenset[str] = frozenset()) -> Measure | None:
    """``600 ft``, ``2 mg/kg``, ``37 °C``; None when the words after the number are no unit.
    ``families``: the listed units also read (``16GB``, ``60 Hz``, ``18 months``; inch marks and
    number words with the ``units`` and ``durations`` families, see :func:`spelled_numbers`)."""
    written = " ".join(unicodedata.normalize("NFKC", text).replace("−", "-").split())
    if families:
        written = spelled_numbers(written)
        if "units" in families:
            written = _INCH_MARK.sub(" in", written)
        written = _HYPHENATED.sub(r"\g<num> \g<unit>", written)
    m = _MEASURE.fullmatch(written)
    if not m:
        return None
    unit = listed_unit(m["unit"], families) if families else None
    unit = unit or physical_unit(m["unit"].replace("° ", "°"))
    if unit is None:
        return None
    try:
        value = Decimal(m["num"].replace(",", ""))
    except InvalidOperation:  # pragma: no cover - the pattern only lets numbers through
        return None
    return Measure(value=value, unit=unit, source=text.strip())


def _convert(value: Decimal, unit: PhysicalUnit, to: PhysicalUnit) -> Decimal | None:
    registry = _registry()
    try:
        magnitude = registry.Quantity(float(value), unit.name).to(to.name).magnitude
    except Exception:  # noqa: BLE001 -- offset units in a ratio (degC/kg) do not convert
        return None
    # 12 significant digits: enough for any written measure, and drops float noise
    # (600 ft -> 182.88000000000002 m)
    return Decimal(format(float(magnitude), ".12g"))


def common_values(a: Measure, b: Measure) -> tuple[Decimal, Decimal, str] | None:
    """Both magnitudes in the finer of the two units, and that unit; None when they do not
    measure the same thing.

    The finer unit (the smaller one, e.g. feet against metres) is chosen whichever side is the
    subject, so both directions of a comparison agree, and an absolute tolerance counts in it --
    the stricter reading. A relative tolerance does not depend on the unit, except for
    temperatures, whose zero moves: compare those with an absolute tolerance.
    """
    if a.unit.dimension != b.unit.dimension:
        return None
    if a.unit.name == b.unit.name:
        return a.value, b.value, a.unit.name.removeprefix(_LISTED)
    finer = min(a.unit, b.unit, key=lambda u: (u.scale, u.name))
    if a.unit.name.startswith(_LISTED) or b.unit.name.startswith(_LISTED):
        if not (a.unit.name.startswith(_LISTED) and b.unit.name.startswith(_LISTED)):
            return None
        size = Decimal(repr(finer.scale))
        la, lb = (m.value * Decimal(repr(m.unit.scale)) / size for m in (a, b))
        return la.normalize(), lb.normalize(), finer.name.removeprefix(_LISTED)
    va = a.value if a.unit == finer else _convert(a.value, a.unit, finer)
    vb = b.value if b.unit == finer else _convert(b.value, b.unit, finer)
    if va is None or vb is None:
        return None
    return va, vb, finer.name


#: Number words (issue #37, guideline G15): "two weeks", "thirty (30) days", "twenty-four months".
_UNITS_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen".split())}
_TENS_WORDS = {w: 10 * (i + 2) for i, w in enumerate(
    "twenty thirty forty fifty sixty seventy eighty ninety".split())}
_NUMBER_WORD = re.compile(
    rf"^(?P<word>(?:{'|'.join(_TENS_WORDS)})(?:[- ](?:{'|'.join(w for w in _UNITS_WORDS if _UNITS_WORDS[w] < 10)}))?"
    rf"|{'|'.join(sorted(_UNITS_WORDS, key=len, reverse=True))})"
    r"(?:\s*\((?P<digits>\d+)\))?(?=[\s-])", re.IGNORECASE)


def spelled_numbers(text: str) -> str:
    """A leading number word as digits (``two weeks`` -> ``2 weeks``; ``thirty (30) days`` -> ``30
    days``); the text as it is when the words and the digits in parentheses disagree."""
    m = _NUMBER_WORD.match(text)
    if m is None:
        return text
    parts = m["word"].casefold().replace("-", " ").split()
    value = sum(_TENS_WORDS.get(p, _UNITS_WORDS.get(p, 0)) for p in parts)
    if m["digits"] is not None and int(m["digits"]) != value:
        return text
    return f"{value}{text[m.end():]}"


#: Whole values in words (issue #37 item 3, guideline G26): "four thousand three hundred and ten".
_MAGNITUDES = {"thousand": 10 ** 3, "million": 10 ** 6, "billion": 10 ** 9, "trillion": 10 ** 12}
#: The words a number in words starts with (a cheap test before reading one).
NUMBER_WORDS = frozenset(_UNITS_WORDS) | frozenset(_TENS_WORDS)
#: What may follow the words: a percent, nothing else ("one m" would read as one million).
_WORDS_TAIL = frozenset({"", "%", "percent", "per cent", "pct"})


def number_in_words(text: str) -> str | None:
    """A value that is a number written in words, as digits (``fifty-one percent`` -> ``51
    percent``); None when it is not one, or when the words are not a number as written
    (``nineteen eighty-four``, ``five one``: no number, a name or a year)."""
    words = text.casefold().replace("-", " ").split()
    total = current = 0
    last = ""  # "small", "tens", "hundred", "magnitude", "and"
    magnitude = 10 ** 15
    used = 0
    for word in words:
        if word in _UNITS_WORDS or word in _TENS_WORDS:
            value = _UNITS_WORDS.get(word, _TENS_WORDS.get(word, 0))
            if last == "small" or (last == "tens" and (value >= 10 or word == "zero")):
                return None
            current += value
            last = "tens" if word in _TENS_WORDS else "small"
        elif word == "hundred":
            if not 0 < current < 10 or last not in ("small",):
                return None
            current, last = current * 100, "hundred"
        elif word in _MAGNITUDES:
            size = _MAGNITUDES[word]
            if current == 0 or size >= magnitude or last == "and":
                return None
            total, current, magnitude, last = total + current * size, 0, size, "magnitude"
        elif word == "and" and last in ("hundred", "magnitude"):
            last = "and"
        else:
            break
        used += 1
    if used == 0 or last == "and" or " ".join(words[used:]) not in _WORDS_TAIL:
        return None
    rest = " ".join(words[used:])
    return f"{total + current} {rest}".strip()


#: The Indian numbering scales (guideline G26): one crore is ten million, one lakh a hundred
#: thousand; written as millions so that the amount keeps its scale's rounding.
# (commas only as Indian or Western thousands, 1,50,000 or 150,000: "1,5 crore" is no 15 crore)
_INDIAN_SCALE = re.compile(r"(?<![\d,.])(?P<n>\d{1,3}(?:,\d{2})*,\d{3}|\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
                           r"\s*(?P<scale>crores?|lakhs?)\b", re.IGNORECASE)
_INDIAN_FACTORS = {"crore": Decimal(10), "lakh": Decimal("0.1")}


def indian_scales(text: str) -> str:
    """``₹15,000 crore`` -> ``₹150000 million``; the text as it is when it has no such scale."""
    def millions(m: re.Match[str]) -> str:
        try:
            n = Decimal(m[0][:m.start("scale") - m.start()].strip().replace(",", ""))
        except InvalidOperation:  # pragma: no cover - the pattern only lets numbers through
            return m[0]
        value = n * _INDIAN_FACTORS[m["scale"].casefold().rstrip("s")]
        return f"{format(value.normalize(), 'f')} million"
    return _INDIAN_SCALE.sub(millions, text)
