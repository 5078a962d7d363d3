"""Field comparison for the rules judge: a fact normalised once (:class:`Prepared`), one field of
two facts compared (:func:`compare_field`), and a whole candidate against a subject
(:func:`compare_facts`).

* A field absent or None on one side only never matches (unit fields excepted: they are compared
  by their effect, see :mod:`factjudge.judges.rules.normalize`).
* Text: token-sorted rapidfuzz ratio >= ``config.text_threshold`` and the same numbers inside.
* Numbers: same currency when both name one, and equal -- or within ``config.tolerances[field]``:
  ``|a - b| <= absolute`` or ``|a - b| <= relative * max(|a|, |b|)`` (symmetric, so both passes
  agree). A percentage is its number / 100, so ``12.5%`` equals ``0.125``; when either side is a
  percentage both are compared in percent, so ``absolute`` counts percentage points. A percentage
  never equals an amount of money. A four-digit year equals only an equal bare integer.
* Identifiers and codes (:class:`~.normalize.Code`): the same characters once case, spaces and
  punctuation are left out, never merely similar.
* Dates and periods: equal keys. Anything else: equal canonical JSON (a NaN equals nothing).

A candidate matches when every compared field matches. The reasoning quotes each value at most
:data:`~factjudge.models.QUOTE_LIMIT` characters, then says how long it was. It is written only
when read (:attr:`FieldResult.detail`: the comparison again, ``explain=True``): a subject is
compared with several candidates, and a list's items pair by pair, but only the best or closest
comparison is explained (issue 39). The comparators build no text and no closure unless asked to
explain, so a run allocates little per comparison (closures tripled the collector's passes).
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Generic, Literal, NamedTuple, TypeVar, overload

from rapidfuzz import fuzz

from ...core.scope import NOT_COMPARED
from ...models import QUOTE_LIMIT, JudgeConfig, Tolerance, cut_text, quoted
from ...util.assignment import max_assignment
from . import variants
from .knowledge import Canon, Knowledge, is_product_field, is_relation_field, qualifiers, text_units
from .marks import lost_difference
from .normalize import (
    EMPTY_UNIT,
    MISSING,
    READING,
    SHORT_TEXT,
    Code,
    Item,
    Items,
    Measure,
    Missing,
    Norm,
    Other,
    Period,
    Quantity,
    Reading,
    Text,
    Unit,
    as_measure,
    fact_currency,
    format_decimal,
    is_unit_field,
    normalize_fact,
    sorted_tokens,
    text_numbers,
    unit_physical,
)
from .units import common_values


@dataclass(slots=True)
class Prepared:
    """A fact with its fields normalised once."""

    position: int
    fact_id: str
    fact_type: Any
    values: dict[str, Norm]
    currency: str | None

    def get(self, name: str) -> Norm:
        if name in self.values:
            return self.values[name]
        return EMPTY_UNIT if is_unit_field(name) else MISSING

    def at(self, position: int) -> Prepared:
        """The same fact at ``position`` of a candidate list (its forms shared, not copied)."""
        if position == self.position:
            return self
        return Prepared(position, self.fact_id, self.fact_type, self.values, self.currency)


def normalized(fact: dict[str, Any], position: int, ignore_company_suffixes: bool,
               reading: Reading = READING) -> Prepared:
    values = normalize_fact(fact, ignore_company_suffixes=ignore_company_suffixes, skip=NOT_COMPARED,
                            reading=reading)
    return Prepared(position=position, fact_id=str(fact.get("id")),
                    fact_type=fact.get("fact_type"), values=values,
                    currency=fact_currency(values))


#: A document's facts prepared (position -1), by the identity of the fact dict; each entry holds
#: its fact, so an id is never another's. One config's: the facts of one document, judged in both
#: directions and read again by its analysis (:data:`~factjudge.judges.base.FactForms`).
Forms = dict[int, tuple[Mapping[str, Any], Prepared]]


def prepared_once(fact: Mapping[str, Any], ignore_company_suffixes: bool, reading: Reading,
                  forms: Forms | None) -> Prepared:
    """``fact`` prepared (position -1), once per ``forms``: a fact is a subject in one direction, a
    candidate in the other and read again by the document's analysis, and finding its normal forms
    in the run's memo (:func:`~.normalize.normalize_fact`'s key of every value) and its currency
    cost more than its comparisons (issue 39: 2.6 preparations a fact)."""
    if forms is None:
        return normalized(fact if isinstance(fact, dict) else dict(fact), -1, ignore_company_suffixes, reading)
    hit = forms.get(id(fact))
    if hit is None or hit[0] is not fact:
        # (not copied: normalising reads a fact, never changes it)
        hit = forms[id(fact)] = (fact, normalized(fact if isinstance(fact, dict) else dict(fact), -1,
                                                  ignore_company_suffixes, reading))
    return hit[1]


class FieldResult(NamedTuple):
    """One field of two facts compared. A tuple: a frozen dataclass sets each of its 12 fields
    through ``object.__setattr__`` (4 us a result; a run of 1,000 x 20 facts makes 60,000 of them)."""

    name: str
    ok: bool
    #: Equal after normalisation (not merely similar or within tolerance).
    exact: bool
    score: float
    #: Written the same way on both sides (the reasoning then only names the field).
    identical: bool
    # what was compared, and how: the reasoning is written from them when read (:attr:`detail`)
    a: Norm
    b: Norm
    config: JudgeConfig
    cur_a: str | None
    cur_b: str | None
    knowledge: Knowledge | None
    path: str

    @property
    def detail(self) -> str:
        """Why the field matches or not, as the reasoning says it: worked out once per run for the
        same values compared the same way (:data:`_DETAILS`)."""
        a, b, config, knowledge = self.a, self.b, self.config, self.knowledge
        key = (self.name, self.path, id(a), id(b), self.cur_a, self.cur_b, id(config), id(knowledge))
        hit = _DETAILS.get(key)
        if hit is None or hit[0] is not a or hit[1] is not b or hit[2] is not config or hit[3] is not knowledge:
            if len(_DETAILS) >= _DETAILS_LIMIT:
                _DETAILS.clear()
            hit = _DETAILS[key] = (a, b, config, knowledge,
                                   _compare(self.name, a, b, config, self.cur_a, self.cur_b, knowledge, self.path,
                                            True)[3])
        return hit[4]

    def line(self) -> str:
        return f"{self.name}: {self.detail}"


#: A :class:`FieldResult` of its 12 fields in order, made without the named tuple's ``__new__``: a
#: Python function, a frame for each of a document's ~100 field comparisons (2% of judging).
_new_result = tuple.__new__

#: Explained comparisons (:attr:`FieldResult.detail`) by the identities of the values, config and
#: knowledge compared (each entry holds them, so an id is never another's): the normal forms are
#: shared, and the reasonings of a 1,000 x 20 facts run explain 22,092 comparisons of 7,689 pairs.
_DETAILS: dict[tuple[str, str, int, int, str | None, str | None, int, int],
               tuple[Norm, Norm, JudgeConfig, Knowledge | None, str]] = {}
_DETAILS_LIMIT = 10_000  # (a detail is mostly under 200 characters; one quotes a value at most QUOTE_LIMIT)


def _shown(a: Norm, b: Norm) -> str:
    """``a vs b`` as the reasoning quotes them: each value at most QUOTE_LIMIT characters (a
    30 MB text made every reasoning naming it 30 MB)."""
    return f"{cut_text(a.describe(), QUOTE_LIMIT)} vs {cut_text(b.describe(), QUOTE_LIMIT)}"


def _pct(x: Decimal) -> str:
    return f"{float(x) * 100:.2f}".rstrip("0").rstrip(".") + "%"


_Outcome = tuple[bool, bool, float, str]  # ok, exact, score, detail ("" unless explaining)


def _compare_quantities(a: Quantity, b: Quantity, tol: Tolerance | None, explain: bool) -> _Outcome:
    shown = _shown(a, b) if explain else ""
    if a.per != b.per:  # never a different period (issue #37, guideline G15)
        return False, False, 0.0, (f"{shown}: an amount per {a.per or '(no period)'} vs per "
                                   f"{b.per or '(no period)'}: a different period" if explain else "")
    if a.currency and b.currency and a.currency != b.currency:
        return False, False, 0.0, (f"{shown}: currency {a.currency} != {b.currency}" if explain else "")
    mixed = a.percent != b.percent
    if mixed and (a.currency or b.currency):
        return False, False, 0.0, (f"{shown}: a percentage is not an amount of money" if explain else "")
    # in percent when either side is one, so that an absolute tolerance counts percentage points
    va, vb = (_in_percent(a), _in_percent(b)) if a.percent or b.percent else (a.value, b.value)
    if va == vb:
        how = " (a percentage is its number / 100)" if mixed else ""
        approx = "; approximate, as one side says" if a.approx != b.approx else ""
        return True, not approx and a.approx == b.approx, 100.0, (f"{shown}: equal{how}{approx}" if explain else "")
    if (rounding := _rounds_to(a, b, va, vb, explain)) is not None:
        return (True, False, 100.0 * (1 - float(abs(va - vb) / max(abs(va), abs(vb)))),
                (f"{shown}: {rounding}" if explain else ""))
    diff = abs(va - vb)
    rel = diff / max(abs(va), abs(vb))
    score = max(0.0, 100.0 * (1 - float(rel)))
    facts = (f"abs. diff {format_decimal(diff)}, rel. diff {_pct(rel)}" if explain else "")
    if tol is None or (tol.relative is None and tol.absolute is None):
        return False, False, score, (f"{shown}: differ ({facts}; no tolerance)" if explain else "")
    bounds = []
    if tol.absolute is not None:
        bounds.append(f"abs. {tol.absolute}")
        if diff <= Decimal(str(tol.absolute)):
            return True, False, score, (f"{shown}: within tolerance (abs. diff "
                                        f"{format_decimal(diff)} <= {tol.absolute})" if explain else "")
    if tol.relative is not None:
        bounds.append(f"rel. {_pct(Decimal(str(tol.relative)))}")
        if rel <= Decimal(str(tol.relative)):
            return True, False, score, (f"{shown}: within tolerance (rel. diff {_pct(rel)} <= "
                                        f"{_pct(Decimal(str(tol.relative)))})" if explain else "")
    return False, False, score, (f"{shown}: differ ({facts}; tolerance {' or '.join(bounds)})" if explain else "")


def _rounds_to(a: Quantity, b: Quantity, va: Decimal, vb: Decimal, explain: bool = True) -> str | None:
    """Why one figure is the other written rounded (guideline G8: the less precise one is the
    finer one rounded to the digits it shows; a hedged one too), or None ("" when not
    ``explain``)."""
    for coarse, fine, vc, vf in ((a, b, va, vb), (b, a, vb, va)):
        step = coarse.step
        if not coarse.rounded or step is None or coarse.percent != fine.percent:
            continue
        if not (coarse.approx or fine.step is None or fine.step < step):
            continue
        # at most a tenth apart, whatever the digits shown: "about 10,000" shows one digit, and
        # 5,000 rounds to it, but nobody says about 10,000 of 5,000 (nor 20% of 15%)
        if (vf / step).to_integral_value(ROUND_HALF_UP) * step == vc and abs(vf - vc) * 10 <= abs(vc):
            if not explain:
                return ""
            how = "a hedged figure" if coarse.approx else "rounded"
            return (f"{how}: {fine.source or format_decimal(vf)} rounds to "
                    f"{coarse.source or format_decimal(vc)} at the digits shown")
    return None


def _in_percent(q: Quantity) -> Decimal:
    return q.value if q.percent else q.value.scaleb(2)


_K = TypeVar("_K")
_V = TypeVar("_V")


class KnowledgeMemo(Generic[_K, _V]):
    """What is worked out once per key and knowledge (a config's, or None) in a run, bounded (a
    run of unique keys only clears it now and then). The knowledge is kept beside its results,
    so that its id is never another's."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._by: dict[int, tuple[Knowledge | None, dict[_K, _V]]] = {}

    def table(self, knowledge: Knowledge | None) -> dict[_K, _V]:
        """The results worked out with ``knowledge``, to read and add to (a callable making a
        missing one would cost a closure a look-up: the collector's passes grow with them)."""
        held = self._by.get(id(knowledge))
        if held is None or held[0] is not knowledge:
            if len(self._by) >= 8:
                self._by.clear()
            held = self._by[id(knowledge)] = (knowledge, {})
        if len(held[1]) >= self.limit:
            held[1].clear()
        return held[1]


#: Two different texts compared (unexplained), by the texts, the threshold and the field: names,
#: products and places repeat across a run's facts, and a list's items are compared pair by pair
#: (5 line items an invoice: 25 pairs, most of them two different products).
_TEXT_OUTCOMES: KnowledgeMemo[tuple[str, str, str, str, float, str, str], _Outcome] = KnowledgeMemo(50_000)


def _compare_texts(a: Text, b: Text, threshold: float, name: str = "",
                   knowledge: Knowledge | None = None, explain: bool = True, decimal: str = ".") -> _Outcome:
    if a.raw == b.raw:
        return True, True, 100.0, (f"{_shown(a, b)}: equal after normalisation ({quoted(a.norm)})" if explain else "")
    if explain:
        return _texts_outcome(a, b, threshold, name, knowledge, decimal, True)
    memo = _TEXT_OUTCOMES.table(knowledge)
    named = name if knowledge is not None else ""
    # by the texts' fields, which a Text's equality compares (hashing the strings is C's)
    key = (a.raw, a.norm, b.raw, b.norm, threshold, named, decimal)
    found = memo.get(key)
    if found is None:
        found = memo[key] = _texts_outcome(a, b, threshold, name, knowledge, decimal, False)
        # the unexplained outcome is the same both ways round (every step compares the two sides
        # alike: tests/unit/judges/test_judging_cost.py checks it), and the other direction of the
        # document asks the other way round: two different names were worked out twice
        memo[(b.raw, b.norm, a.raw, a.norm, threshold, named, decimal)] = found
    return found


def _texts_outcome(a: Text, b: Text, threshold: float, name: str, knowledge: Knowledge | None, decimal: str,
                   explain: bool) -> _Outcome:
    """Two texts written differently compared (:func:`_compare_texts` keeps the unexplained outcome):
    what their normal form loses first (:mod:`.marks`), then the normal forms."""
    if (lost := lost_difference(a.raw, b.raw, decimal)) is not None:
        return False, False, 0.0, f"{_shown(a, b)}: {lost}" if explain else ""
    if a.norm == b.norm:
        return True, True, 100.0, (f"{_shown(a, b)}: equal after normalisation ({quoted(a.norm)})" if explain else "")
    if knowledge is not None:
        return _compare_known_texts(a, b, threshold, name, knowledge, explain)
    return _similar_texts(a.sorted, b.sorted, a.numbers, b.numbers, threshold, _shown(a, b) if explain else "")


def _qualifier_difference(qa: tuple[str, ...], qb: tuple[str, ...]) -> str:
    """How two texts' qualifier words differ: "chief executive officer" vs "chief operating
    officer" is "qualifier executive on the first side only" (operating is no qualifier), not
    "executive vs none"."""
    only_a, only_b = [q for q in qa if q not in qb], [q for q in qb if q not in qa]
    if only_a and only_b or not (only_a or only_b):  # the latter: the same words, a different count
        only_a, only_b = only_a or list(qa), only_b or list(qb)
        return f"qualifier words differ ({', '.join(only_a)} vs {', '.join(only_b)})"
    return f"qualifier {', '.join(only_a or only_b)} on the {'first' if only_a else 'second'} side only"


def _compare_known_texts(a: Text, b: Text, threshold: float, name: str, knowledge: Knowledge,
                         explain: bool) -> _Outcome:
    """Texts read with the config's aliases and the built-in knowledge (knowledge.py, variants.py)."""
    shown = _shown(a, b) if explain else ""
    ca, cb = knowledge.canon(name, a.raw, a.norm), knowledge.canon(name, b.raw, b.norm)
    used = list(dict.fromkeys((*ca.used, *cb.used))) if explain else []
    by = f" by {'; '.join(used)}" if used else ""
    wa, wb = _words(ca.norm), _words(cb.norm)
    qa, qb = wa.qualifiers, wb.qualifiers
    if qa != qb:
        return False, False, 0.0, (f"{shown}: {_qualifier_difference(qa, qb)}, which changes what is meant"
                                   if explain else "")
    if ca.norm == cb.norm:
        return True, False, 100.0, f"{shown}: equal{by} ({quoted(ca.norm)})" if explain else ""
    if knowledge.families.units:  # "2 TB" vs "2 TiB" inside a text: similar, never the same
        ua, ub = wa.units, wb.units
        if ua != ub and ua and ub:
            return False, False, 0.0, (f"{shown}: different units ({', '.join(sorted(ua ^ ub))})" if explain else "")
    if knowledge.families.products and (why := _brand_dropped(ca, cb, name)):
        return True, False, 85.0, (f"{shown}: {why}" if explain else "")
    decision = variants.decide(a.raw, a.norm, ca, b.raw, b.norm, cb, name, knowledge)
    if decision is not None:
        return decision.ok, False, decision.score, (f"{shown}: {decision.detail}{by}" if explain else "")
    if knowledge.families.relations and is_relation_field(name):
        # relation names word for word, never by similarity: one word makes another relation
        # (hasToItsSouthwest vs hasToItsSoutheast scored 95; guideline G23)
        return False, False, float(fuzz.ratio(ca.norm, cb.norm)), (f"{shown}: different relations{by}"
                                                                     if explain else "")
    ok, exact, score, detail = _similar_texts(wa.sorted, wb.sorted, wa.numbers, wb.numbers,
                                              threshold, shown if explain else "")
    return ok, exact, score, (detail + (f" (read{by})" if used else "") if explain else "")


class _Words(NamedTuple):
    """What :func:`_compare_known_texts` reads of a canonical text's words."""

    qualifiers: tuple[str, ...]
    units: frozenset[str]
    sorted: str
    numbers: tuple[str, ...]


def _words(norm: str) -> _Words:
    """:class:`_Words` of a canonical text, once per run for a short one while it is recent (as
    :func:`~.normalize.text_numbers` keeps its numbers): two different texts are compared as a
    pair (the pair's outcome is kept, :data:`_TEXT_OUTCOMES`), but a name meets many others
    ("Company 433" vs "Company 49", "Company 120", ...), and each pair read both texts' words
    again (issue 39: 7% of judging 10,000 documents of 10 + 10 facts)."""
    return _short_words(norm) if len(norm) <= SHORT_TEXT else _read_words(norm)


def _read_words(norm: str) -> _Words:
    tokens = norm.split()
    return _Words(qualifiers(tokens), text_units(tokens), sorted_tokens(norm), text_numbers(norm))


_short_words = functools.lru_cache(maxsize=20_000)(_read_words)


def _brand_dropped(ca: Canon, cb: Canon, name: str) -> str | None:
    """Why two product names are one product named with and without its brand (one leading word;
    the rest, with its model number, equal), or None. A trailing parenthetical spec may be left
    out too. Another model number or variant word is another product."""
    if not is_product_field(name) or (ca.disambiguator and cb.disambiguator):
        return None
    ta, tb = ca.head.split(), cb.head.split()
    longer, shorter = (ta, tb) if len(ta) > len(tb) else (tb, ta)
    if len(longer) != len(shorter) + 1 or longer[1:] != shorter or len(shorter) < 2:
        return None
    if not longer[0].isalpha() or not any(any(c.isdigit() for c in t) for t in shorter) or not any(
            t.isalpha() for t in shorter):
        return None
    return f"the same product named without its brand ({longer[0]})"


def _similar_texts(sa: str, sb: str, numbers_a: tuple[str, ...], numbers_b: tuple[str, ...],
                   threshold: float, shown: str) -> _Outcome:
    """``shown``: the two values quoted, "" to explain nothing."""
    explain = bool(shown)
    score = float(fuzz.ratio(sa, sb))
    if score < threshold:
        return False, False, score, (f"{shown}: similarity {score:.0f} < {threshold:g}" if explain else "")
    if numbers_a != numbers_b:
        return False, False, score, (f"{shown}: similarity {score:.0f} but the numbers differ "
                                     f"({', '.join(numbers_a) or 'none'} vs "
                                     f"{', '.join(numbers_b) or 'none'})" if explain else "")
    return True, False, score, (f"{shown}: similarity {score:.0f} >= {threshold:g}" if explain else "")


def _compare_units(a: Norm, b: Norm, cur_a: str | None, cur_b: str | None,
                   threshold: float, explain: bool) -> _Outcome:
    if not (isinstance(a, Unit) and isinstance(b, Unit)):
        return _compare_plain(a, b, explain)
    if (a.physical or b.physical) and (a.physical or a.metric) and (b.physical or b.metric):
        return _compare_physical_units(a, b, explain)
    shown = _shown(a, b) if explain else ""
    ea, eb = a.currency or cur_a, b.currency or cur_b
    if ea and eb and ea != eb:
        return False, False, 0.0, (f"{shown}: currency {ea} != {eb}" if explain else "")
    rest_a, rest_b = a.rest, b.rest
    score = 100.0
    if rest_a is None or rest_b is None:
        one_side = rest_a if rest_a is not None else rest_b
        if one_side is not None:
            words = one_side.raw
            return False, False, 0.0, (f"{shown}: {quoted(words)} on one side only" if explain else "")
    else:
        ok, _, score, why = _compare_texts(rest_a, rest_b, threshold, explain=explain)
        if not ok:
            return False, False, score, (f"{shown}: {why}" if explain else "")
    # the scale is already inside the amount, so equality is about what is left
    exact = (ea, a.percent, rest_a and rest_a.norm) == (eb, b.percent, rest_b and rest_b.norm)
    if not explain:
        return True, exact, score, ""
    currency = f"currency {ea or '-'} / {eb or '-'} agree" if (ea or eb) else "no currency"
    scale = "; scale applied to the amount" if (a.scale or b.scale) else ""
    return True, exact, score, f"{shown}: {currency}{scale}"


def _compare_physical_units(a: Unit, b: Unit, explain: bool) -> _Outcome:
    """Same dimension, and the same unit unless both facts have an amount that carries it."""
    shown = _shown(a, b) if explain else ""
    pa, pb = unit_physical(a), unit_physical(b)
    if pa is None or pb is None or pa.dimension != pb.dimension:
        return False, False, 0.0, (f"{shown}: units of different kinds" if explain else "")
    if pa.name == pb.name:
        return True, True, 100.0, (f"{shown}: same unit" if explain else "")
    if a.applied and b.applied:
        return True, False, 100.0, (f"{shown}: same kind of unit; converted in the amount" if explain else "")
    return False, False, 0.0, (f"{shown}: different units and no amount to convert" if explain else "")


def _compare_measures(a: Norm, b: Norm, tol: Tolerance | None, converted: bool, explain: bool) -> _Outcome:
    """Physical amounts: same dimension, magnitudes compared in the finer unit (units.py).
    ``converted`` (the ``units`` knowledge; no tolerance set): a measure in another unit matches when converted and
    rounded to the digits the other side shows it is that side, within 1% (``15.6 in`` = ``39.6
    cm``, ``3.5 lb`` = ``1.59 kg``; guideline G14)."""
    ma, mb = as_measure(a), as_measure(b)
    if ma is None or mb is None:
        return _compare_plain(a, b, explain)
    common = common_values(ma, mb)
    if common is None:
        return False, False, 0.0, (f"{_shown(a, b)}: units of different "
                                   f"kinds ({ma.unit.name} vs {mb.unit.name})" if explain else "")
    va, vb, unit = common
    ok, exact, score, detail = _compare_quantities(Quantity(va, source=ma.source),
                                                   Quantity(vb, source=mb.source), tol, explain)
    if not ok and converted and tol is None and ma.unit.name != mb.unit.name and (
            why := _converted_rounding(ma, mb)):
        return True, False, score, (f"{_shown(a, b)}: {why}" if explain else "")
    return ok, exact, score, (f"{detail} (in {unit})" if explain else "")


def _converted_rounding(ma: Measure, mb: Measure) -> str | None:
    """Why one measure is the other converted to its unit and rounded to its digits, or None."""
    for x, y in ((ma, mb), (mb, ma)):
        common = common_values(x, Measure(Decimal(1), y.unit, ""))
        if common is None or common[1] == 0:
            continue
        in_y = common[0] / common[1]  # x in y's unit
        step = Decimal(1).scaleb(min(0, y.value.as_tuple().exponent))  # type: ignore[arg-type]
        if y.value == 0 or abs(in_y - y.value) > abs(y.value) / 100:
            continue
        if (in_y / step).to_integral_value(ROUND_HALF_UP) * step == y.value:
            return f"{x.source} is {format_decimal(in_y)} in the unit of {y.source}, {y.source} at the digits shown"
    return None


def _compare_codes(a: Code, b: Code, explain: bool) -> _Outcome:
    """Two identifiers: equal by their keys, else different however alike (a similarity ranks the
    closest fact, never links: ``ABCDEFGHIJKLMNOPQ`` and ``...X`` were linked at 94)."""
    shown = _shown(a, b) if explain else ""
    if a.key == b.key:
        if not explain or a.raw == b.raw:
            return True, True, 100.0, f"{shown}: equal" if explain else ""
        return True, True, 100.0, f"{shown}: the same identifier without case, spaces and punctuation"
    return False, False, fuzz.ratio(a.key, b.key), (
        f"{shown}: different identifiers (compared without case, spaces and punctuation)" if explain else "")


def _compare_plain(a: Norm, b: Norm, explain: bool) -> _Outcome:
    shown = _shown(a, b) if explain else ""
    if isinstance(a, Other) and isinstance(b, Other) and a.json == b.json:
        if a.nan:
            return False, False, 0.0, (f"{shown}: NaN equals nothing, not even NaN" if explain else "")
        return True, True, 100.0, (f"{shown}: equal" if explain else "")
    if not explain:
        return False, False, 0.0, ""
    return False, False, 0.0, f"{shown}: not comparable ({_kind(a)} vs {_kind(b)})" if type(
        a) is not type(b) else f"{shown}: differ"


def _kind(n: Norm) -> str:
    return {Missing: "missing", Text: "text", Code: "identifier", Quantity: "number", Period: "date/period",
            Other: "JSON value", Unit: "unit", Measure: "measure", Items: "list"}[type(n)]


def _compare_periods(a: Period, b: Period, explain: bool) -> _Outcome:
    """The same period; when both sides give a time of day, the same time too (the same instant
    when both give an offset). A date without a time equals any time of its day."""
    if a.time is None or b.time is None:
        ok = a.key == b.key
        how = f"{'same' if ok else 'different'} period"
    elif a.instant is not None and b.instant is not None:
        ok = a.instant == b.instant
        how = "the same instant" if ok else "different instants"
    else:
        ok = a.key == b.key and a.time == b.time
        how = "same day and time" if ok else "same day, another time" if a.key == b.key else "different period"
    return ok, ok, 100.0 if ok else 0.0, f"{_shown(a, b)}: {how}" if explain else ""


def _compare_year(p: Period, q: Quantity, shown: str) -> _Outcome:
    """A bare year equals only the same plain integer ("2023" = 2023, "2023" != "2,023")."""
    if p.year is None:
        return False, False, 0.0, f"{shown}: a date or period is not a number"
    if q.plain and q.currency is None and not q.percent and q.value == p.year:
        return True, True, 100.0, f"{shown}: same year"
    return False, False, 0.0, f"{shown}: a year only equals the same bare integer"


#: The normal forms that a field compares equal to themselves, exactly (a text, a figure, a date
#: or period): :func:`compare_field` takes one against itself as equal without comparing it.
_SELF_EQUAL = frozenset({Text, Code, Quantity, Period})


def compare_field(name: str, a: Norm, b: Norm, config: JudgeConfig,
                  cur_a: str | None = None, cur_b: str | None = None,
                  knowledge: Knowledge | None = None, path: str = "") -> FieldResult:
    """Compare one field of the subject (``a``) with the same field of a candidate (``b``);
    ``path`` (``line_items.unit_price``) names a field inside a list's items, for ``tolerances``
    and ``ordered``. Its reasoning (``detail``) is written when read."""
    path = path or name
    if a is b and type(a) in _SELF_EQUAL and not is_unit_field(name):
        # one normal form on both sides (the memos share them): equal, as _compare finds through
        # its type checks (half of a document's field comparisons are these)
        return _new_result(FieldResult, (name, True, True, 100.0, True, a, b, config, cur_a, cur_b, knowledge, path))
    ok, exact, score, _ = _outcome(name, a, b, config, cur_a, cur_b, knowledge, path)
    # the normal forms are cached and shared, so equal values are mostly the same object
    return _new_result(FieldResult, (name, ok, exact, score, exact and (a is b or _alike(a, b)) and not isinstance(
        a, Missing), a, b, config, cur_a, cur_b, knowledge, path))


#: What tells two normal forms of a type apart first: how each was written ("FY2023" and "fiscal
#: 2023" are one period, "1,926.8" [USD million] and "$1926.8 million" [USD] one figure).
_WRITTEN: dict[type, str] = {Text: "raw", Code: "raw", Period: "raw", Unit: "raw", Quantity: "source",
                             Measure: "source", Other: "json", Items: "json"}


def _alike(a: Norm, b: Norm) -> bool:
    """``a == b``: compared as written first, which mostly differs when they are equal but not the
    same object (a dataclass's ``__eq__`` builds a tuple of all of each one's fields)."""
    written = _WRITTEN.get(type(a))
    return type(a) is type(b) and (written is None or getattr(a, written) == getattr(b, written)) and a == b


def compare_outcome(name: str, a: Norm, b: Norm, config: JudgeConfig, cur_a: str | None = None,
                    cur_b: str | None = None, knowledge: Knowledge | None = None) -> tuple[bool, bool, float, str]:
    """:func:`compare_field`'s ok, exact and score (and ""), without its :class:`FieldResult`,
    for a caller reading no more (the near-miss search)."""
    return _compare(name, a, b, config, cur_a, cur_b, knowledge, name, False)


def _outcome(name: str, a: Norm, b: Norm, config: JudgeConfig, cur_a: str | None, cur_b: str | None,
             knowledge: Knowledge | None, path: str, unit: bool | None = None) -> _Outcome:
    """:func:`_compare`'s unexplained outcome, two texts or two figures compared by their own
    comparator without its other types' checks (most comparisons: a subject's other candidates of
    its type mostly differ from it first by a name, an invoice's item pairs by their descriptions;
    the checks were 8% of an invoice's alignment), one normal form on both sides equal as
    :func:`compare_field` takes it (an equal invoice item shares its description and quantity with
    its partner). ``unit``: whether ``name`` is a unit's field, when the caller knows it (asking
    for each field of a list's items was 10% of an alignment)."""
    kind = type(a)
    if kind is type(b) and kind in _SELF_EQUAL and not (is_unit_field(name) if unit is None else unit):
        if a is b:
            return True, True, 100.0, ""
        # (both sides of ``kind``, which mypy does not follow through a variable)
        if kind is Text:
            return _compare_texts(a, b, config.text_threshold, name, knowledge, False,  # type: ignore[arg-type]
                                  config.decimal_separator)
        if kind is Quantity:
            return _compare_quantities(a, b, config.tolerances.get(path), False)  # type: ignore[arg-type]
    return _compare(name, a, b, config, cur_a, cur_b, knowledge, path, False)


def _compare(name: str, a: Norm, b: Norm, config: JudgeConfig, cur_a: str | None, cur_b: str | None,
             knowledge: Knowledge | None, path: str, explain: bool) -> _Outcome:
    """:func:`compare_field`'s outcome, with its reasoning when ``explain`` ("" otherwise)."""
    if is_unit_field(name):
        return _compare_units(a, b, cur_a, cur_b, config.text_threshold, explain)
    if isinstance(a, Missing) or isinstance(b, Missing):
        both = isinstance(a, Missing) and isinstance(b, Missing)
        side = "both" if both else ("subject" if isinstance(a, Missing) else "candidate")
        return both, both, 100.0 if both else 0.0, (
            f"missing on {side}" + ("" if both else f" ({_shown(a, b)})") if explain else "")
    if isinstance(a, Code) and isinstance(b, Code):
        return _compare_codes(a, b, explain)
    if isinstance(a, Measure) or isinstance(b, Measure):
        return _compare_measures(a, b, config.tolerances.get(path), config.rules_knowledge.units, explain)
    if isinstance(a, Quantity) and isinstance(b, Quantity):
        return _compare_quantities(a, b, config.tolerances.get(path), explain)
    if isinstance(a, Items) and isinstance(b, Items):
        return _compare_lists(name, path, a, b, config, knowledge, explain)
    if isinstance(a, Text) and isinstance(b, Text):
        return _compare_texts(a, b, config.text_threshold, name, knowledge, explain, config.decimal_separator)
    if isinstance(a, Period) and isinstance(b, Period):
        return _compare_periods(a, b, explain)
    if isinstance(a, Period) and isinstance(b, Quantity):
        return _compare_year(a, b, _shown(a, b) if explain else "")
    if isinstance(a, Quantity) and isinstance(b, Period):
        return _compare_year(b, a, _shown(a, b) if explain else "")
    return _compare_plain(a, b, explain)


# --------------------------------------------------------------------------- lists inside a fact


class _ItemPair(NamedTuple):
    """Two list items compared (:func:`_compare_item`): a named tuple made by :data:`_new_pair`
    (a frozen dataclass sets each field through ``object.__setattr__``: 0.6 us a pair, an
    invoice's alignment makes 6)."""

    ok: bool
    exact: bool
    score: float
    #: The keys of the item fields that differ (:func:`_failed_fields` compares them again to
    #: explain: of an item's 25 pairs only the aligned ones are ever explained).
    failed: tuple[str, ...]
    #: Some field agrees: a pair worth aligning (else both items are reported unaligned).
    related: bool


#: An :class:`_ItemPair` of its 5 fields in order, made as :data:`_new_result` makes a FieldResult.
_new_pair = tuple.__new__


@overload
def _compare_item(x: Item, y: Item, name: str, path: str, config: JudgeConfig,
                  knowledge: Knowledge | None, probe: Literal[False] = False, below: None = None) -> _ItemPair: ...


@overload
def _compare_item(x: Item, y: Item, name: str, path: str, config: JudgeConfig, knowledge: Knowledge | None,
                  probe: bool, below: tuple[int, int] | None = None) -> _ItemPair | None: ...


def _compare_item(x: Item, y: Item, name: str, path: str, config: JudgeConfig,
                  knowledge: Knowledge | None, probe: bool = False,
                  below: tuple[int, int] | None = None) -> _ItemPair | None:
    """Two items field by field, with the comparators and tolerances of top-level fields (a
    field null or absent in both is not compared); a scalar item is the one field ``""``.
    ``probe``: None at the first field that differs (whether the pair is equal, see :func:`_align`).
    ``below``: (a worth, what an equal pair is worth): None as soon as the pair is surely worth
    less than it to :func:`_align` (:func:`_worth`), even were every field left equal."""
    # one pass (5 x 5 items are 25 pairs a list), with no FieldResult: three of them a pair
    # were most of its cost, and only an aligned pair's differing fields are ever read
    ok, exact, compared, total, failed = True, True, 0, 0.0, []
    related = False
    xv, yv = x.values, y.values
    # the same fields on both sides, mostly: then in x's order, as the union would be
    same = xv.keys() == yv.keys()
    keys = xv if same else dict.fromkeys((*xv, *yv))
    left = len(keys)
    for key in keys:
        left -= 1
        u, v = (xv[key], yv[key]) if same else (x.get(key), y.get(key))
        if absent(u) and absent(v):
            continue
        # a record's unit field is read as a unit (normalize._make_plan), never a text, figure or
        # period: only a scalar item (the field "") asks whether the list's name is a unit's
        f_ok, f_exact, score, _ = _outcome(key or name, u, v, config, x.currency, y.currency, knowledge,
                                           (f"{path}.{key}" if key else path) or name, False if key else None)
        compared += 1
        total += score
        if f_ok:
            related, exact = True, exact and f_exact
        elif probe:
            return None
        else:
            ok = False
            failed.append(key)
        if below is not None and _worth_at_most(ok, total, compared, left, below[1]) < below[0]:
            return None
    return _new_pair(_ItemPair, (ok, ok and exact, total / compared if compared else 100.0, tuple(failed),
                                 related or not compared))


def _worth_at_most(ok: bool, total: float, compared: int, left: int, equal: int) -> int:
    """More than :func:`_worth` of an item pair whose ``compared`` fields so far scored ``total``
    with ``left`` fields still to compare (each at most 100, some maybe not compared at all:
    counting them raises the mean): the rounding of the floats' sums covered by a unit."""
    return (equal if ok else 0) + round((total + 100.0 * left) / (compared + left) * 100) + 1


def _equal_pairs_decide(rows: Sequence[int], cols: Sequence[int], pair: Callable[[int, int], _ItemPair],
                        probe: Callable[[int, int], _ItemPair | None],
                        probed: dict[tuple[int, int], _ItemPair | None]) -> list[tuple[int, int, _ItemPair]] | None:
    """The optimal assignment of :func:`_align` when its equal pairs decide it, else None (every
    pair probed is in ``probed``: an equal one compared in full, None for the others).

    An equal pair is worth more than any sum of other pairs (:func:`_equal_worth`), so an
    assignment with fewer equal pairs is always worth less. When no item has two equal partners,
    every optimal assignment therefore holds all the equal pairs; when they leave no item over on
    one side, or one on each, nothing is left to choose: that is the one optimal assignment, which
    the solver finds too. Two different items then cost a comparison up to their first differing
    field (5 line items: 25 pairs, 20 of them two different products) instead of every field and
    the solver. Otherwise (duplicates, similar items, several left over) the full table decides,
    ties and all."""
    kept: list[tuple[int, int, _ItemPair]] = []
    rows_equal: set[int] = set()
    cols_equal: set[int] = set()
    for i in rows:
        for j in cols:
            found = probed[i, j] = probe(i, j)
            if found is not None:
                if i in rows_equal or j in cols_equal:
                    return None  # an item with two equal partners: the scores decide
                rows_equal.add(i)
                cols_equal.add(j)
                kept.append((i, j, found))
    rows_left = [i for i in rows if i not in rows_equal]
    cols_left = [j for j in cols if j not in cols_equal]
    if rows_left and cols_left:
        if len(rows_left) > 1 or len(cols_left) > 1:
            return None
        last = pair(rows_left[0], cols_left[0])  # the one pair left: aligned when related
        if last.related:
            kept.append((rows_left[0], cols_left[0], last))
    return sorted(kept, key=lambda pair_: pair_[0])


def _failed_fields(x: Item, y: Item, pair: _ItemPair, name: str, path: str, config: JudgeConfig,
                   knowledge: Knowledge | None) -> list[FieldResult]:
    """The fields of an item pair that differ, compared again as :func:`_compare_item` did them."""
    return [compare_field(key or name, x.get(key), y.get(key), config, x.currency, y.currency, knowledge,
                          f"{path}.{key}" if key else path) for key in pair.failed]


def _align(a: Items, b: Items, ordered: bool, pair: Callable[[int, int], _ItemPair],
           probe: Callable[[int, int], _ItemPair | None] | None = None, partners: ItemPartners | None = None,
           above: Above | None = None) -> tuple[list[tuple[int, int, _ItemPair]], bool]:
    """The aligned items of ``a`` and ``b``: by position when ``ordered``, else one-to-one by
    most equal items, then most agreement (an optimal assignment: the items' order never
    matters). Unordered, a pair sharing no equal field is no alignment: both items are left over.
    ``probe``: ``pair``, or None as soon as a field differs: when the equal pairs decide the
    alignment (:func:`_equal_pairs_decide`) the other pairs are compared up to their first
    differing field only. Beside it, whether it is the one alignment the lists allow (by
    position, or decided by the equal pairs): the same whichever list is ``a``, where the solver
    breaks a tie by the lists' content. ``partners``: for long lists, the items of ``b`` that
    may equal or agree with an item of ``a`` (:func:`_align_long`), and ``above`` how it compares
    an item pair that may be worth less than another (:data:`Above`)."""
    if ordered:
        return [(i, i, pair(i, i)) for i in range(min(len(a.items), len(b.items)))], True
    if partners is not None and probe is not None:
        return _align_long(a, b, pair, probe, partners, above)
    probed: dict[tuple[int, int], _ItemPair | None] = {}
    if probe is not None:  # the one optimal alignment, whatever the order: no tie to break
        decided = _equal_pairs_decide(range(len(a.items)), range(len(b.items)), pair, probe, probed)
        if decided is not None:
            return decided, True
    kept = _solve(a, b, range(len(a.items)), range(len(b.items)), pair, probed)
    return sorted(kept, key=lambda pair_: pair_[0]), False


#: How :func:`_align_long` compares item ``i`` of one list with item ``j`` of the other when
#: another item of the other list is worth as much as ``below`` says (a worth, what an equal pair
#: is worth): the pair compared in full, or None as soon as it is surely worth less
#: (:func:`_compare_item`'s ``below``).
Above = Callable[[int, int, tuple[int, int]], "_ItemPair | None"]


def _solve(a: Items, b: Items, rows: Iterable[int], cols: Iterable[int], pair: Callable[[int, int], _ItemPair],
           probed: dict[tuple[int, int], _ItemPair | None],
           related: Callable[[int], Mapping[int, int]] | None = None,
           above: Above | None = None) -> list[tuple[int, int, _ItemPair]]:
    """The optimal assignment of ``rows`` of ``a`` to ``cols`` of ``b`` (the pairs kept: related
    ones), every pair of them compared (``probed``: those compared in full already), or with
    ``related``, only those it gives (the others are worth nothing), each row's best first when
    ``above`` is given (:func:`_best_of_rows`)."""
    # The solver breaks a tie between equally good alignments by position: it is given the items
    # in an order of their own content, so the one kept (and the per-field counts it makes) never
    # depends on the lists' order (hypothesis: description agreeing on 4 items or on 3, qty on 3
    # or 4, as one list was shuffled).
    rows = sorted(rows, key=lambda i: _content_order(a.items[i]))
    cols = sorted(cols, key=lambda j: _content_order(b.items[j]))
    near = {i: related(i) for i in rows} if related is not None else None
    # integers keep the solver exact: one equal item outweighs any sum of similarities. A pair
    # that is no alignment is worth nothing, so every optimal assignment keeps the same worth in
    # its kept pairs, whatever the lists' order (hypothesis found 56.9 vs 68.1 when it counted)
    equal = _equal_worth(len(a.items), len(b.items))
    if near is not None and above is not None:
        best = _best_of_rows(rows, set(cols), near, above, probed, equal)
        if best is not None:
            return best
    table = [[probed.get((i, j)) or (pair(i, j) if near is None or j in near[i] else None) for j in cols]
             for i in rows]
    benefit = [[0 if p is None else _worth(p, equal) for p in row] for row in table]
    return [(rows[r], cols[c], p) for r, c in _assignment(benefit) if (p := table[r][c]) is not None and p.related]


def _best_of_rows(rows: Sequence[int], cols: Collection[int], near: Mapping[int, Mapping[int, int]],
                  above: Above, probed: dict[tuple[int, int], _ItemPair | None], equal: int
                  ) -> list[tuple[int, int, _ItemPair]] | None:
    """The optimal assignment of :func:`_solve` when each row's related pair worth most is worth
    more than its others and no two rows want the same column, else None (each pair compared in
    full is then in ``probed``, for the solver).

    No assignment is worth more than the sum of its rows' best pairs, so one that gives every row
    its best is optimal, and the only one when each row's best is worth more than its others: the
    solver finds the same. A row's other pairs are compared only until they are surely worth less
    (``above``), its likely best first (the items agreeing with it in most fields, by the index:
    ``near``'s counts). 400 line items each with a wrong price compared each item in full with
    every item of the same quantity (a ninth of the list): 5.87x the flat run's cost a value, now
    1.64x (mostly one field of each such pair; 1.01x flat facts with every value wrong)."""
    kept: list[tuple[int, int, _ItemPair]] = []
    taken: set[int] = set()
    for i in rows:
        top: tuple[int, _ItemPair] | None = None
        worth, tied = 0, False
        counts = near[i]
        most = max(counts.values(), default=0)
        # those looked up by most fields first, then the others (the order only decides how soon
        # the others are stopped: a row's one best is the same in any order)
        for j in (*(j for j, c in counts.items() if c == most), *(j for j, c in counts.items() if c != most)):
            if j not in cols:
                continue
            p = probed.get((i, j)) or above(i, j, (worth, equal))
            if p is None:
                continue
            probed[i, j] = p
            w = _worth(p, equal)
            if w > worth:
                top, worth, tied = (j, p), w, False
            elif w == worth and w:
                tied = True
        if top is None:  # (a related pair is worth something: a field agreeing scores)
            continue
        if tied or top[0] in taken:
            return None  # a tie, or two rows wanting one item: the solver decides
        taken.add(top[0])
        kept.append((i, *top))
    return kept


class ItemPartners(NamedTuple):
    """For two long lists (:func:`_align_long`), the items of the second that may equal item
    ``i`` of the first (``equal``), and those that may agree with it in some field (``related``):
    a superset of each (judges/rules/index.py looks them up)."""

    equal: Callable[[int], Iterable[int]]
    #: Each item ``related`` gives, with the number of fields it was looked up by (the likely
    #: best partners first, :func:`_best_of_rows`).
    related: Callable[[int], Mapping[int, int]]


def _align_long(a: Items, b: Items, pair: Callable[[int, int], _ItemPair],
                probe: Callable[[int, int], _ItemPair | None], partners: ItemPartners, above: Above | None = None
                ) -> tuple[list[tuple[int, int, _ItemPair]], bool]:
    """:func:`_align` of long lists, from their equal pairs found through ``partners`` (the index
    of judges/rules/index.py: a few candidates an item instead of every item of the other list;
    1,000 line items probed 10^6 pairs and took 28 s). The same optimum as the full table:

    An optimal assignment holds as many equal pairs as the graph of equal pairs can match, each
    worth more than any sum of other pairs (:func:`_equal_worth`), so each connected group of
    that graph gives it as many as the group can match. A group that can pair off all its items
    therefore does, within itself (an equal pair alone, mostly; copies of one item): it is solved
    apart. The items of the other groups and those equal to none are solved together, as
    :func:`_align` solves a short list (an item or two per wrong price or missing line), each
    compared with the items it may agree with only (a pair agreeing in no field is worth nothing:
    400 items each with a price wrong took 160,000 comparisons a direction, 4.9 s)."""
    edges: list[tuple[int, int, _ItemPair]] = []
    for i in range(len(a.items)):
        for j in partners.equal(i):
            found = probe(i, j)
            if found is not None:
                edges.append((i, j, found))
    groups = _groups(len(a.items), [(i, j) for i, j, _ in edges])
    equal_pairs = {(i, j): p for i, j, p in edges}
    probed: dict[tuple[int, int], _ItemPair | None] = dict(equal_pairs)
    kept: list[tuple[int, int, _ItemPair]] = []
    rest_rows, rest_cols, unique = set(range(len(a.items))), set(range(len(b.items))), True
    for rows, cols in groups:
        if len(rows) == len(cols) == 1:
            solved = [(rows[0], cols[0], equal_pairs[rows[0], cols[0]])]
        else:
            unique = False  # copies of one item: the solver breaks a tie by their content
            solved = _solve(a, b, rows, cols, pair, probed)
            if len(rows) != len(cols) or sum(p.ok for _, _, p in solved) != len(rows):
                continue  # some item of the group is left to the others
        kept += solved
        rest_rows.difference_update(rows)
        rest_cols.difference_update(cols)
    if rest_rows and rest_cols:
        unique = unique and len(rest_rows) == len(rest_cols) == 1
        kept += _solve(a, b, rest_rows, rest_cols, pair, probed, partners.related, above)
    return sorted(kept, key=lambda pair_: pair_[0]), unique


#: From this many items on both sides a list's assignment is solved apart for each group of items
#: related to each other (the solver is O(n^3) in Python: 1,000 line items took a minute), and
#: its equal pairs are looked up in an index (:func:`_align_long`).
_SPLIT_FROM = 50


def _equal_worth(n: int, m: int) -> int:
    """What an equal pair is worth to :func:`_align`: more than any sum of unequal pairs (each at
    most 10,000), so most equal items come first however long the lists."""
    return max(1_000_000, 10_001 * min(n, m))


def _assignment(benefit: list[list[int]], split_from: int = _SPLIT_FROM) -> list[tuple[int, int]]:
    """:func:`~factjudge.util.assignment.max_assignment` of ``benefit``; for long lists, of each
    group of rows and columns linked by a pair worth something, which is the same optimum (a pair
    worth nothing is never kept): an invoice of 1,000 items has groups of a few."""
    if min(len(benefit), len(benefit[0]) if benefit else 0) < split_from:
        return max_assignment(benefit)
    out = []
    for rows, cols in _groups(len(benefit), [(r, c) for r, row in enumerate(benefit)
                                             for c, worth in enumerate(row) if worth]):
        sub = [[benefit[r][c] for c in cols] for r in rows]
        out += [(rows[i], cols[j]) for i, j in max_assignment(sub)]
    return sorted(out)


def _groups(rows_n: int, links: Iterable[tuple[int, int]]) -> list[tuple[list[int], list[int]]]:
    """The rows and columns of each connected group of ``links`` (row, column) that holds both,
    each in ascending order."""
    parent: dict[int, int] = {}

    def root(x: int) -> int:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for r, c in links:
        parent[root(r)] = root(rows_n + c)
    groups: dict[int, tuple[list[int], list[int]]] = {}
    for x in sorted(parent):
        groups.setdefault(root(x), ([], []))[x >= rows_n].append(x - rows_n if x >= rows_n else x)
    return list(groups.values())


#: An item's place in the content order of :func:`_align`, by identity (the item kept beside it, so
#: an id is never another's): an item is aligned in each direction, by the near-miss analysis and
#: the field counts, and its repr was a tenth of a nested run's alignments.
_ORDER: dict[int, tuple[Item, str]] = {}


def _content_order(item: Item) -> str:
    held = _ORDER.get(id(item))
    if held is None or held[0] is not item:
        if len(_ORDER) >= 50_000:
            _ORDER.clear()
        held = _ORDER[id(item)] = (item, repr(item.values))
    return held[1]


def _worth(p: _ItemPair, equal: int = 1_000_000) -> int:
    """What aligning a pair is worth to :func:`_align` (0: no alignment)."""
    return p.ok * equal + round(p.score * 100) if p.related else 0


def _item_name(n: int, item: Item) -> str:
    n = item.position if item.position >= 0 else n  # its place as written (absent items are none)
    return f"item {n + 1} ({cut_text(item.label, 40)})" if item.label else f"item {n + 1}"


#: The last lists aligned, by identity (each kept with its key's objects, so an id is never
#: another's): the alignment a reasoning explains, and the one the field counts and the reports'
#: closest-fact search read again (fieldscore.py; same knowledge, same alignment). Beside it,
#: whether the other direction may read it turned over (:func:`aligned_items`).
_ALIGNED: dict[tuple[int, int, str, str, int, int],
               tuple[Items, Items, JudgeConfig, Knowledge | None, list[tuple[int, int, _ItemPair]], bool]] = {}


def aligned_items(name: str, path: str, a: Items, b: Items, config: JudgeConfig,
                  knowledge: Knowledge | None) -> list[tuple[int, int, _ItemPair]]:
    """:func:`_align` of two lists of ``name`` (``path``) compared with ``knowledge``, once for the
    same lists, config and knowledge: explaining a comparison just made, or counting its fields,
    aligns no item again (every item pair compared again doubled the cost of a fact with a list).
    The other direction (``b`` against ``a``) reads the alignment made this way round turned over,
    when it is the one alignment the lists allow and :func:`_alike_items` holds: no item pair is
    compared again (an invoice's 25 pairs were compared once for each direction)."""
    key = (id(a), id(b), name, path, id(config), id(knowledge))
    kept = _ALIGNED.get(key)
    if kept is not None and kept[0] is a and kept[1] is b and kept[2] is config and kept[3] is knowledge:
        return kept[4]
    other = _ALIGNED.get((id(b), id(a), name, path, id(config), id(knowledge)))
    if (other is not None and other[5] and other[0] is b and other[1] is a and other[2] is config
            and other[3] is knowledge):
        aligned, turns = sorted(((j, i, p) for i, j, p in other[4]), key=lambda pair_: pair_[0]), True
    else:
        ordered, partners = path in config.ordered, None
        long = not ordered and min(len(a.items), len(b.items)) >= _SPLIT_FROM
        alike = long and _alike_items(a, b)
        if alike and b.json < a.json:
            # Long lists of alike items are solved one way round, the lists' content deciding which,
            # and read turned over the other way: both directions align alike, and the items a
            # wrong price leaves are solved once (the other direction solved them again: a third
            # of a run of 400 items all with a wrong price)
            turned = aligned_items(name, path, b, a, config, knowledge)
            return sorted(((j, i, p) for i, j, p in turned), key=lambda pair_: pair_[0])
        if long:
            from .index import item_partners  # (index.py builds on this module)
            partners = item_partners(a, b, name, path, config, knowledge)
        aligned, unique = _align(
            a, b, ordered,
            lambda i, j: _compare_item(a.items[i], b.items[j], name, path, config, knowledge),
            lambda i, j: _compare_item(a.items[i], b.items[j], name, path, config, knowledge, True), partners,
            lambda i, j, below: _compare_item(a.items[i], b.items[j], name, path, config, knowledge, False, below))
        turns = alike or (unique and _alike_items(a, b))
    if len(_ALIGNED) >= 5_000:
        _ALIGNED.clear()
    _ALIGNED[key] = (a, b, config, knowledge, aligned, turns)
    return aligned


def _alike_items(a: Items, b: Items) -> bool:
    """Every item of both lists has the same fields in the same order, none of them a list: then
    an item pair's outcome is the same either way round (each field compares its two sides alike,
    the scores are summed, and the differing fields named, in the same order)."""
    fields = tuple(a.items[0].values if a.items else b.items[0].values if b.items else ())
    for item in (*a.items, *b.items):
        if tuple(item.values) != fields:
            return False
        for v in item.values.values():
            if isinstance(v, Items):
                return False
    return True


def lists_equal(a: Items, b: Items, aligned: Sequence[tuple[int, int, _ItemPair]]) -> bool:
    """Two lists equal as the judge says, from their one-to-one alignment: every item aligned with
    an equal item, none left over (as many aligned as either list holds: the items left over are
    worked out only to explain, 4 comprehensions a comparison)."""
    return len(aligned) == len(a.items) == len(b.items) and all(p.ok for _, _, p in aligned)


def not_comparable(a: Items, b: Items) -> bool:
    """A list of records against a list of values: no item of one can equal an item of the other
    (a mixed list may share items with either)."""
    return bool(a.items and b.items and a.records != b.records and not (a.mixed or b.mixed))


def _compare_lists(name: str, path: str, a: Items, b: Items, config: JudgeConfig,
                   knowledge: Knowledge | None, explain: bool = True) -> _Outcome:
    """Lists inside a fact: equal when every item aligns with an equal item and none is left
    over; the detail names the items that differ and those left over (issue 34 item 1)."""
    if not_comparable(a, b):
        return False, False, 0.0, (f"{_shown(a, b)}: a list of records vs a list of values" if explain else "")
    aligned = aligned_items(name, path, a, b, config, knowledge)
    ok = lists_equal(a, b, aligned)
    longest = max(len(a.items), len(b.items))
    # from the worth the alignment maximised, so ties between optimal alignments score alike
    score = sum(_worth(p) % 1_000_000 for _, _, p in aligned) / 100 / longest if longest else 100.0
    exact = ok and all(p.exact for _, _, p in aligned)
    if not explain:
        return ok, exact, score, ""
    if ok:
        moved = "" if all(i == j for i, j, _ in aligned) else " (in another order)"
        return True, exact, score, f"{len(aligned)} item{'' if len(aligned) == 1 else 's'} equal{moved}"
    kept_a, kept_b = {i for i, _, _ in aligned}, {j for _, j, _ in aligned}
    only_a = [i for i in range(len(a.items)) if i not in kept_a]
    only_b = [j for j in range(len(b.items)) if j not in kept_b]
    parts = []
    for i, j, p in aligned:
        if not p.ok:
            x, y = a.items[i], b.items[j]
            if (a.mixed or b.mixed) and ("" in x.values) != ("" in y.values):  # (only in an ordered list)
                differ = "a value vs a record" if "" in x.values else "a record vs a value"
            else:
                differ = "; ".join(f"{f.name}: {f.detail}" if a.records or key else f.detail for key, f in zip(
                    p.failed, _failed_fields(x, y, p, name, path, config, knowledge), strict=True))
            parts.append(f"{_item_name(i, x)} {differ}")
    for side, left, items in (("candidate", only_a, a.items), ("subject", only_b, b.items)):
        if left:
            names = ", ".join(_item_name(k, items[k]) for k in left[:5]) + (", ..." if len(left) > 5 else "")
            parts.append(f"{len(left)} item{'' if len(left) == 1 else 's'} missing on {side}: {names}")
    return False, False, score, "; ".join(parts)


def absent(value: Norm) -> bool:
    """Null or not there at all (a unit field's absence reads as the empty unit)."""
    # a written unit differs from the empty one in its text: no comparison of all its fields
    return isinstance(value, Missing) or (isinstance(value, Unit) and not value.raw and value == EMPTY_UNIT)


@dataclass(slots=True)
class CandidateResult:
    candidate: Prepared
    #: The compared fields present on at least one side: a field null or absent on both is no
    #: evidence either way, so it is not compared (issue 34 item 3).
    fields: list[FieldResult]
    #: The compared fields, when every one was null or absent on both sides: nothing to compare,
    #: so no match ("Northwind Traders" was linked to "Fabrikam Holdings" on two empty fields).
    empty: tuple[str, ...] = ()
    #: Where in the compared fields a comparison stopped at a field that differs (``until_miss``
    #: of :func:`compare_facts`; :func:`finish_facts` goes on from there), 0 when complete.
    rest: int = 0
    ok: bool = field(init=False)
    exact: bool = field(init=False)
    score: float = field(init=False)

    def __post_init__(self) -> None:
        # one pass (a subject is compared with every candidate of its type: 40 pairs a document
        # of 10 + 10 facts); the scores summed in the fields' order, as sum() did
        ok = exact = not self.empty
        total = 0.0
        for f in self.fields:
            ok = ok and f.ok
            exact = exact and f.exact
            total += f.score
        self.ok, self.exact = ok, ok and exact
        self.score = total / len(self.fields) if self.fields else 0.0 if self.empty else 100.0

    @property
    def closeness(self) -> tuple[int, float, int]:
        return (sum(f.ok for f in self.fields), self.score, -self.candidate.position)


def compare_facts(subject: Prepared, candidate: Prepared, fields: list[str],
                  config: JudgeConfig, knowledge: Knowledge | None = None, *,
                  until_miss: bool = False) -> CandidateResult:
    """``subject`` against ``candidate`` on ``fields``. A type with no field to compare at all
    (a fact that is its fact_type) matches by type; fields that are all null or absent on both
    sides do not. ``until_miss``: stop at the first field that differs, the candidate no match
    (:attr:`CandidateResult.rest`; :func:`finish_facts` compares the others when it is read)."""
    return _compared(subject, candidate, fields, config, knowledge, [], 0, until_miss)


def finish_facts(result: CandidateResult, subject: Prepared, fields: list[str], config: JudgeConfig,
                 knowledge: Knowledge | None = None) -> CandidateResult:
    """``result`` of :func:`compare_facts` with every field compared (itself when it was)."""
    if not result.rest:
        return result
    return _compared(subject, result.candidate, fields, config, knowledge, list(result.fields), result.rest, False)


def _compared(subject: Prepared, candidate: Prepared, fields: list[str], config: JudgeConfig,
              knowledge: Knowledge | None, results: list[FieldResult], start: int,
              until_miss: bool) -> CandidateResult:
    held_a, held_b = subject.values, candidate.values
    for k in range(start, len(fields)):
        name = fields[k]
        # (Prepared.get inlined for the fields a fact has: a call each was a tenth of a pair's cost)
        a = held_a[name] if name in held_a else subject.get(name)
        b = held_b[name] if name in held_b else candidate.get(name)
        if absent(a) and absent(b):
            continue
        result = compare_field(name, a, b, config, subject.currency, candidate.currency, knowledge)
        results.append(result)
        if until_miss and not result.ok and k + 1 < len(fields):
            return CandidateResult(candidate, results, (), k + 1)
    return CandidateResult(candidate, results, () if results else tuple(fields))
