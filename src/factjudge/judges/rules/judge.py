"""The deterministic, offline ``rules`` judge.

It answers the same question as the LLM judge (is the subject fact matched by one of the
candidates?) with normalisation (:mod:`factjudge.judges.rules.normalize`) and per-field comparisons:

* ``fact_type`` must be equal. The compared fields are ``config.fields`` or, when that is None,
  every field of the subject except ``id`` and ``fact_type``. A field absent or None on one side
  only never matches (unit fields excepted: they are compared by their effect, see
  :mod:`factjudge.judges.rules.normalize`).
* Text: token-sorted rapidfuzz ratio >= ``config.text_threshold`` and the same numbers inside.
* Numbers: same currency when both name one, and equal -- or within ``config.tolerances[field]``:
  ``|a - b| <= absolute`` or ``|a - b| <= relative * max(|a|, |b|)`` (symmetric, so both passes
  agree). A percentage is its number / 100, so ``12.5%`` equals ``0.125``; when either side is a
  percentage both are compared in percent, so ``absolute`` counts percentage points. A percentage
  never equals an amount of money. A four-digit year equals only an equal bare integer.
* Dates and periods: equal keys. Anything else: equal canonical JSON (a NaN equals nothing).

A candidate matches when every compared field matches. Among matching candidates the highest
score (the mean of the field scores, 0-100) wins, ties go to the earliest candidate. The
reasoning quotes each value at most :data:`~factjudge.models.QUOTE_LIMIT` characters, then says
how long it was.

Speed: candidates are prepared (normalised) once per candidate list and indexed by fact_type and,
lazily, per field: exact keys (numbers, periods, JSON, missing), sorted numbers for tolerance
windows, and the distinct texts for one C-level fuzzy search. A subject is only fully compared
with the few candidates that survive the intersection of those look-ups, which are a superset of
the candidates that can match. The index is built once per direction of a document and kept in
the tasks' ``shared`` dict, so it is freed when that direction is done.
"""
from __future__ import annotations

import bisect
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from rapidfuzz import fuzz, process

from ...core.scope import NOT_COMPARED, matching_rules_check
from ...models import (
    QUOTE_LIMIT,
    Direction,
    JudgeConfig,
    NegativeStatus,
    PassStatus,
    Tolerance,
    Verdict,
    cut_text,
    quoted,
)
from ..base import JudgeBase, JudgePass, JudgeTask, negative_status
from . import variants
from .knowledge import Knowledge, knowledge_for, qualifiers
from .normalize import (
    EMPTY_UNIT,
    MISSING,
    Measure,
    Missing,
    Norm,
    Other,
    Period,
    Quantity,
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

#: Stop narrowing the shortlist once it is this small; comparing a few facts is cheaper.
_SMALL_POOL = 8


# --------------------------------------------------------------------------- preparation


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


def normalized(fact: dict[str, Any], position: int, ignore_company_suffixes: bool) -> Prepared:
    values = normalize_fact(fact, ignore_company_suffixes=ignore_company_suffixes, skip=NOT_COMPARED)
    return Prepared(position=position, fact_id=str(fact.get("id")),
                    fact_type=fact.get("fact_type"), values=values,
                    currency=fact_currency(values))


# --------------------------------------------------------------------------- field comparison


@dataclass(frozen=True, slots=True)
class FieldResult:
    name: str
    ok: bool
    #: Equal after normalisation (not merely similar or within tolerance).
    exact: bool
    score: float
    detail: str
    #: Written the same way on both sides (the reasoning then only names the field).
    identical: bool = False

    def line(self) -> str:
        return f"{self.name}: {self.detail}"


def _shown(a: Norm, b: Norm) -> str:
    """``a vs b`` as the reasoning quotes them: each value at most QUOTE_LIMIT characters (a
    30 MB text made every reasoning naming it 30 MB)."""
    return f"{cut_text(a.describe(), QUOTE_LIMIT)} vs {cut_text(b.describe(), QUOTE_LIMIT)}"


def _pct(x: Decimal) -> str:
    return f"{float(x) * 100:.2f}".rstrip("0").rstrip(".") + "%"


_Outcome = tuple[bool, bool, float, str]  # ok, exact, score, detail


def _compare_quantities(a: Quantity, b: Quantity, tol: Tolerance | None) -> _Outcome:
    shown = _shown(a, b)
    if a.currency and b.currency and a.currency != b.currency:
        return False, False, 0.0, f"{shown}: currency {a.currency} != {b.currency}"
    mixed = a.percent != b.percent
    if mixed and (a.currency or b.currency):
        return False, False, 0.0, f"{shown}: a percentage is not an amount of money"
    # in percent when either side is one, so that an absolute tolerance counts percentage points
    va, vb = (_in_percent(a), _in_percent(b)) if a.percent or b.percent else (a.value, b.value)
    if va == vb:
        how = " (a percentage is its number / 100)" if mixed else ""
        approx = "; approximate, as one side says" if a.approx != b.approx else ""
        return True, not approx and a.approx == b.approx, 100.0, f"{shown}: equal{how}{approx}"
    if (rounding := _rounds_to(a, b, va, vb)) is not None:
        return True, False, 100.0 * (1 - float(abs(va - vb) / max(abs(va), abs(vb)))), f"{shown}: {rounding}"
    diff = abs(va - vb)
    rel = diff / max(abs(va), abs(vb))
    score = max(0.0, 100.0 * (1 - float(rel)))
    facts = f"abs. diff {format_decimal(diff)}, rel. diff {_pct(rel)}"
    if tol is None or (tol.relative is None and tol.absolute is None):
        return False, False, score, f"{shown}: differ ({facts}; no tolerance)"
    bounds = []
    if tol.absolute is not None:
        bounds.append(f"abs. {tol.absolute}")
        if diff <= Decimal(str(tol.absolute)):
            return True, False, score, (f"{shown}: within tolerance (abs. diff "
                                        f"{format_decimal(diff)} <= {tol.absolute})")
    if tol.relative is not None:
        bounds.append(f"rel. {_pct(Decimal(str(tol.relative)))}")
        if rel <= Decimal(str(tol.relative)):
            return True, False, score, (f"{shown}: within tolerance (rel. diff {_pct(rel)} <= "
                                        f"{_pct(Decimal(str(tol.relative)))})")
    return False, False, score, f"{shown}: differ ({facts}; tolerance {' or '.join(bounds)})"


def _rounds_to(a: Quantity, b: Quantity, va: Decimal, vb: Decimal) -> str | None:
    """Why one figure is the other written rounded (guideline G8: the less precise one is the
    finer one rounded to the digits it shows; a hedged one too), or None."""
    for coarse, fine, vc, vf in ((a, b, va, vb), (b, a, vb, va)):
        step = coarse.step
        if not coarse.rounded or step is None or coarse.percent != fine.percent:
            continue
        if not (coarse.approx or fine.step is None or fine.step < step):
            continue
        if (vf / step).to_integral_value(ROUND_HALF_UP) * step == vc:
            how = "a hedged figure" if coarse.approx else "rounded"
            return (f"{how}: {fine.source or format_decimal(vf)} rounds to "
                    f"{coarse.source or format_decimal(vc)} at the digits shown")
    return None


def _in_percent(q: Quantity) -> Decimal:
    return q.value if q.percent else q.value.scaleb(2)


def _compare_texts(a: Text, b: Text, threshold: float, name: str = "",
                   knowledge: Knowledge | None = None) -> _Outcome:
    shown = _shown(a, b)
    if a.norm == b.norm:
        return True, True, 100.0, f"{shown}: equal after normalisation ({quoted(a.norm)})"
    if knowledge is not None:
        return _compare_known_texts(a, b, threshold, name, knowledge)
    return _similar_texts(a.sorted, b.sorted, a.numbers, b.numbers, threshold, shown)


def _qualifier_difference(qa: tuple[str, ...], qb: tuple[str, ...]) -> str:
    """How two texts' qualifier words differ: "chief executive officer" vs "chief operating
    officer" is "qualifier executive on the first side only" (operating is no qualifier), not
    "executive vs none"."""
    only_a, only_b = [q for q in qa if q not in qb], [q for q in qb if q not in qa]
    if only_a and only_b or not (only_a or only_b):  # the latter: the same words, a different count
        only_a, only_b = only_a or list(qa), only_b or list(qb)
        return f"qualifier words differ ({', '.join(only_a)} vs {', '.join(only_b)})"
    return f"qualifier {', '.join(only_a or only_b)} on the {'first' if only_a else 'second'} side only"


def _compare_known_texts(a: Text, b: Text, threshold: float, name: str, knowledge: Knowledge) -> _Outcome:
    """Texts read with the config's aliases and the built-in knowledge (knowledge.py, variants.py)."""
    shown = _shown(a, b)
    ca, cb = knowledge.canon(name, a.raw, a.norm), knowledge.canon(name, b.raw, b.norm)
    used = list(dict.fromkeys((*ca.used, *cb.used)))
    by = f" by {'; '.join(used)}" if used else ""
    qa, qb = qualifiers(ca.tokens), qualifiers(cb.tokens)
    if qa != qb:
        return False, False, 0.0, f"{shown}: {_qualifier_difference(qa, qb)}, which changes what is meant"
    if ca.norm == cb.norm:
        return True, False, 100.0, f"{shown}: equal{by} ({quoted(ca.norm)})"
    decision = variants.decide(a.raw, a.norm, ca, b.raw, b.norm, cb, name, knowledge)
    if decision is not None:
        return decision.ok, False, decision.score, f"{shown}: {decision.detail}{by}"
    ok, exact, score, detail = _similar_texts(sorted_tokens(ca.norm), sorted_tokens(cb.norm),
                                              text_numbers(ca.norm), text_numbers(cb.norm),
                                              threshold, shown)
    return ok, exact, score, detail + (f" (read{by})" if used else "")


def _similar_texts(sa: str, sb: str, numbers_a: tuple[str, ...], numbers_b: tuple[str, ...],
                   threshold: float, shown: str) -> _Outcome:
    score = float(fuzz.ratio(sa, sb))
    if score < threshold:
        return False, False, score, f"{shown}: similarity {score:.0f} < {threshold:g}"
    if numbers_a != numbers_b:
        return False, False, score, (f"{shown}: similarity {score:.0f} but the numbers differ "
                                     f"({', '.join(numbers_a) or 'none'} vs "
                                     f"{', '.join(numbers_b) or 'none'})")
    return True, False, score, f"{shown}: similarity {score:.0f} >= {threshold:g}"


def _compare_units(a: Norm, b: Norm, cur_a: str | None, cur_b: str | None,
                   threshold: float) -> _Outcome:
    if not (isinstance(a, Unit) and isinstance(b, Unit)):
        return _compare_plain(a, b)
    if (a.physical or b.physical) and (a.physical or a.metric) and (b.physical or b.metric):
        return _compare_physical_units(a, b)
    shown = _shown(a, b)
    ea, eb = a.currency or cur_a, b.currency or cur_b
    if ea and eb and ea != eb:
        return False, False, 0.0, f"{shown}: currency {ea} != {eb}"
    rest_a, rest_b = a.rest, b.rest
    score = 100.0
    if rest_a is None or rest_b is None:
        one_side = rest_a if rest_a is not None else rest_b
        if one_side is not None:
            words = one_side.raw
            return False, False, 0.0, f"{shown}: {quoted(words)} on one side only"
    else:
        ok, _, score, why = _compare_texts(rest_a, rest_b, threshold)
        if not ok:
            return False, False, score, f"{shown}: {why}"
    # the scale is already inside the amount, so equality is about what is left
    exact = (ea, a.percent, rest_a and rest_a.norm) == (eb, b.percent, rest_b and rest_b.norm)
    currency = f"currency {ea or '-'} / {eb or '-'} agree" if (ea or eb) else "no currency"
    scale = "; scale applied to the amount" if (a.scale or b.scale) else ""
    return True, exact, score, f"{shown}: {currency}{scale}"


def _compare_physical_units(a: Unit, b: Unit) -> _Outcome:
    """Same dimension, and the same unit unless both facts have an amount that carries it."""
    shown = _shown(a, b)
    pa, pb = unit_physical(a), unit_physical(b)
    if pa is None or pb is None or pa.dimension != pb.dimension:
        return False, False, 0.0, f"{shown}: units of different kinds"
    if pa.name == pb.name:
        return True, True, 100.0, f"{shown}: same unit"
    if a.applied and b.applied:
        return True, False, 100.0, f"{shown}: same kind of unit; converted in the amount"
    return False, False, 0.0, f"{shown}: different units and no amount to convert"


def _compare_measures(a: Norm, b: Norm, tol: Tolerance | None) -> _Outcome:
    """Physical amounts: same dimension, magnitudes compared in the finer unit (units.py)."""
    ma, mb = as_measure(a), as_measure(b)
    if ma is None or mb is None:
        return _compare_plain(a, b)
    common = common_values(ma, mb)
    if common is None:
        return False, False, 0.0, (f"{_shown(a, b)}: units of different "
                                   f"kinds ({ma.unit.name} vs {mb.unit.name})")
    va, vb, unit = common
    ok, exact, score, detail = _compare_quantities(Quantity(va, source=ma.source),
                                                   Quantity(vb, source=mb.source), tol)
    return ok, exact, score, f"{detail} (in {unit})"


def _compare_plain(a: Norm, b: Norm) -> _Outcome:
    shown = _shown(a, b)
    if isinstance(a, Other) and isinstance(b, Other) and a.json == b.json:
        if a.nan:
            return False, False, 0.0, f"{shown}: NaN equals nothing, not even NaN"
        return True, True, 100.0, f"{shown}: equal"
    return False, False, 0.0, f"{shown}: not comparable ({_kind(a)} vs {_kind(b)})" if type(
        a) is not type(b) else f"{shown}: differ"


def _kind(n: Norm) -> str:
    return {Missing: "missing", Text: "text", Quantity: "number", Period: "date/period",
            Other: "JSON value", Unit: "unit", Measure: "measure"}[type(n)]


def _compare_year(p: Period, q: Quantity, shown: str) -> _Outcome:
    """A bare year equals only the same plain integer ("2023" = 2023, "2023" != "2,023")."""
    if p.year is None:
        return False, False, 0.0, f"{shown}: a date or period is not a number"
    if q.plain and q.currency is None and not q.percent and q.value == p.year:
        return True, True, 100.0, f"{shown}: same year"
    return False, False, 0.0, f"{shown}: a year only equals the same bare integer"


def compare_field(name: str, a: Norm, b: Norm, config: JudgeConfig,
                  cur_a: str | None = None, cur_b: str | None = None,
                  knowledge: Knowledge | None = None) -> FieldResult:
    """Compare one field of the subject (``a``) with the same field of a candidate (``b``)."""
    if is_unit_field(name):
        ok, exact, score, detail = _compare_units(a, b, cur_a, cur_b, config.text_threshold)
    elif isinstance(a, Missing) or isinstance(b, Missing):
        both = isinstance(a, Missing) and isinstance(b, Missing)
        ok, exact, score = both, both, 100.0 if both else 0.0
        side = "both" if both else ("subject" if isinstance(a, Missing) else "candidate")
        detail = f"missing on {side}" + ("" if both else f" ({_shown(a, b)})")
    elif isinstance(a, Measure) or isinstance(b, Measure):
        ok, exact, score, detail = _compare_measures(a, b, config.tolerances.get(name))
    elif isinstance(a, Quantity) and isinstance(b, Quantity):
        ok, exact, score, detail = _compare_quantities(a, b, config.tolerances.get(name))
    elif isinstance(a, Text) and isinstance(b, Text):
        ok, exact, score, detail = _compare_texts(a, b, config.text_threshold, name, knowledge)
    elif isinstance(a, Period) and isinstance(b, Period):
        ok = exact = a.key == b.key
        score = 100.0 if ok else 0.0
        detail = f"{_shown(a, b)}: {'same' if ok else 'different'} period"
    elif isinstance(a, Period) and isinstance(b, Quantity):
        ok, exact, score, detail = _compare_year(a, b, _shown(a, b))
    elif isinstance(a, Quantity) and isinstance(b, Period):
        ok, exact, score, detail = _compare_year(b, a, _shown(a, b))
    else:
        ok, exact, score, detail = _compare_plain(a, b)
    return FieldResult(name, ok, exact, score, detail, exact and a == b and not isinstance(a, Missing))


@dataclass(slots=True)
class CandidateResult:
    candidate: Prepared
    fields: list[FieldResult]
    ok: bool = field(init=False)
    exact: bool = field(init=False)
    score: float = field(init=False)

    def __post_init__(self) -> None:
        self.ok = all(f.ok for f in self.fields)
        self.exact = self.ok and all(f.exact for f in self.fields)
        self.score = sum(f.score for f in self.fields) / len(self.fields) if self.fields else 100.0

    @property
    def closeness(self) -> tuple[int, float, int]:
        return (sum(f.ok for f in self.fields), self.score, -self.candidate.position)


def compare_facts(subject: Prepared, candidate: Prepared, fields: list[str],
                  config: JudgeConfig, knowledge: Knowledge | None = None) -> CandidateResult:
    return CandidateResult(candidate, [
        compare_field(name, subject.get(name), candidate.get(name), config,
                      subject.currency, candidate.currency, knowledge)
        for name in fields
    ])


# --------------------------------------------------------------------------- index


def _exact_keys(norm: Norm) -> tuple[Hashable, ...] | None:
    """The keys a value is filed under; two values can only match if they share one.

    None for texts and units, which are looked up fuzzily or not at all.
    """
    if isinstance(norm, Missing):
        return (("missing",),)
    if isinstance(norm, Quantity):  # a rounded figure also under its value and last digit's place
        if norm.rounded and norm.step is not None:
            return (("n", norm.number), ("n~", norm.percent, norm.value, norm.step))
        return (("n", norm.number),)
    if isinstance(norm, Period):
        if norm.year is not None:  # a year also equals the bare integer
            return (("d", norm.key), ("n", Decimal(norm.year)))
        return (("d", norm.key),)
    if isinstance(norm, Other):
        return (("j", norm.json),)
    return None


class CandidateIndex:
    """Prepared candidates of one list, with lazily built per-(fact_type, field) look-ups."""

    def __init__(self, candidates: list[dict[str, Any]], ignore_company_suffixes: bool,
                 knowledge: Knowledge | None = None, config: JudgeConfig | None = None) -> None:
        self.size = len(candidates)
        self.ignore_company_suffixes = ignore_company_suffixes
        self.knowledge = knowledge
        #: The config the knowledge was built from (an index is rebuilt for another one).
        self.config = config
        self.prepared = [normalized(c, i, ignore_company_suffixes) for i, c in enumerate(candidates)]
        self.by_type: dict[Any, list[int]] = {}
        for p in self.prepared:
            self.by_type.setdefault(_type_key(p.fact_type), []).append(p.position)
        self._exact: dict[tuple[Any, str], dict[Hashable, list[int]]] = {}
        self._numbers: dict[tuple[Any, str], tuple[list[float], list[int]]] = {}
        self._texts: dict[tuple[Any, str], tuple[list[str], list[list[int]], dict[Hashable, list[int]]]] = {}
        self._signatures: dict[Any, list[str]] = {}

    def bucket(self, fact_type: Any) -> list[int]:
        return self.by_type.get(_type_key(fact_type), [])

    def _exact_table(self, fact_type: Any, name: str) -> dict[Hashable, list[int]]:
        table = self._exact.get((_type_key(fact_type), name))
        if table is None:
            table = {}
            for i in self.bucket(fact_type):
                for key in _exact_keys(self.prepared[i].get(name)) or ():
                    table.setdefault(key, []).append(i)  # a list: a set per key costs 3x more
            self._exact[(_type_key(fact_type), name)] = table
        return table

    def exact_postings(self, fact_type: Any, name: str, keys: Iterable[Hashable]) -> set[int]:
        table = self._exact_table(fact_type, name)
        found: set[int] = set()
        for key in keys:
            found.update(table.get(key, ()))
        return found

    def exact_count(self, fact_type: Any, name: str, keys: Iterable[Hashable]) -> int:
        """How many postings :meth:`exact_postings` would gather (without gathering them)."""
        table = self._exact_table(fact_type, name)
        return sum(len(table.get(key, ())) for key in keys)

    def exact_filter(self, pool: set[int], name: str, keys: Iterable[Hashable]) -> set[int]:
        """The members of ``pool`` that :meth:`exact_postings` would also return: checked one by
        one, so a value most candidates share (a period, a unit) costs the pool, not its postings."""
        wanted = set(keys)
        return {i for i in pool if not wanted.isdisjoint(_exact_keys(self.prepared[i].get(name)) or ())}

    def number_window(self, fact_type: Any, name: str, low: float, high: float) -> set[int]:
        entry = self._numbers.get((_type_key(fact_type), name))
        if entry is None:
            pairs = sorted((float(q.number), i) for i in self.bucket(fact_type)
                           if isinstance(q := self.prepared[i].get(name), Quantity))
            entry = ([v for v, _ in pairs], [i for _, i in pairs])
            self._numbers[(_type_key(fact_type), name)] = entry
        values, positions = entry
        lo, hi = bisect.bisect_left(values, low), bisect.bisect_right(values, high)
        return set(positions[lo:hi])

    def _text_table(self, fact_type: Any, name: str
                    ) -> tuple[list[str], list[list[int]], dict[Hashable, list[int]]]:
        entry = self._texts.get((_type_key(fact_type), name))
        if entry is None:
            by_text: dict[str, list[int]] = {}
            by_key: dict[Hashable, list[int]] = {}
            for i in self.bucket(fact_type):
                t = self.prepared[i].get(name)
                if isinstance(t, Text):
                    by_text.setdefault(self.searched(name, t), []).append(i)
                    for key in self.variant_keys(name, t, query=False):
                        by_key.setdefault(key, []).append(i)
            entry = (list(by_text), list(by_text.values()), by_key)
            self._texts[(_type_key(fact_type), name)] = entry
        return entry

    def searched(self, name: str, t: Text) -> str:
        """What a text's similarity is computed on: its words sorted, as the knowledge reads them."""
        if self.knowledge is None:
            return t.sorted
        return sorted_tokens(self.knowledge.canon(name, t.raw, t.norm).norm)

    def variant_keys(self, name: str, t: Text, query: bool) -> tuple[Hashable, ...]:
        if self.knowledge is None:
            return ()
        return variants.keys(t.raw, t.norm, self.knowledge.canon(name, t.raw, t.norm), self.knowledge,
                             name, query)

    def similar_texts(self, fact_type: Any, name: str, subject: Text, threshold: float) -> set[int]:
        """The candidates whose text may match ``subject``'s: similar enough, or sharing a key of
        a variant rule (a superset of the matches: variants.keys)."""
        choices, postings, by_key = self._text_table(fact_type, name)
        found: set[int] = set()
        for _, _, k in process.extract(self.searched(name, subject), choices, scorer=fuzz.ratio,
                                       score_cutoff=threshold, limit=None):
            found.update(postings[k])
        for key in self.variant_keys(name, subject, query=True):
            found.update(by_key.get(key, ()))
        return found

    def closest_overall(self, subject: Prepared, fields: list[str]) -> int:
        """The same-type candidate most similar over all its fields (only to explain a miss)."""
        ft = _type_key(subject.fact_type)
        if ft not in self._signatures:
            self._signatures[ft] = [_signature(self.prepared[i]) for i in self.by_type[ft]]
        best = process.extractOne(_signature(subject, fields), self._signatures[ft],
                                  scorer=fuzz.ratio)
        return self.by_type[ft][best[2]] if best else self.by_type[ft][0]


def _knowledge_key(config: JudgeConfig | None) -> Any:
    """What of a config the knowledge is built from."""
    if config is None:
        return None
    return ([g.model_dump() for g in config.aliases], config.rules_knowledge.model_dump())


def _type_key(fact_type: Any) -> Any:
    hashable = isinstance(fact_type, (str, int, float, bool, type(None)))
    return fact_type if hashable else repr(fact_type)


def _signature(p: Prepared, fields: list[str] | None = None) -> str:
    names = fields if fields is not None else list(p.values)
    parts = []
    for name in sorted(names, key=str):
        v = p.get(name)
        shown = v.norm if isinstance(v, Text) else v.key if isinstance(v, Period) else (
            format_decimal(v.value) if isinstance(v, Quantity) else v.describe())
        parts.append(f"{name}={shown}")
    return "|".join(parts)


_Lookups = tuple[list[tuple[str, tuple[Hashable, ...]]],
                 list[tuple[str, tuple[float, float], tuple[Hashable, ...]]], list[tuple[str, Text]]]


def _lookups(subject: Prepared, fields: list[str], config: JudgeConfig) -> _Lookups:
    """How each field of the subject narrows the candidates: exact keys, a number window (with
    the keys found outside it), or a text search."""
    exact: list[tuple[str, tuple[Hashable, ...]]] = []
    windows: list[tuple[str, tuple[float, float], tuple[Hashable, ...]]] = []
    texts: list[tuple[str, Text]] = []
    for name in fields:
        if is_unit_field(name):
            continue  # compared by effect, see normalize; never a reason to skip a candidate
        value = subject.get(name)
        if isinstance(value, Quantity) and value.metric:
            continue  # "183 m" may be metres and match a measure, which is filed under no key
        if isinstance(value, Text):
            texts.append((name, value))
        elif isinstance(value, Quantity):
            keys = (("n", value.number), *_coarser_keys(value))
            bounds = _bounds(value, config.tolerances.get(name))
            if bounds is None:
                exact.append((name, keys))
            else:
                windows.append((name, bounds, keys))
        elif (found := _exact_keys(value)) is not None:
            exact.append((name, tuple(found)))
    return exact, windows, texts


def shortlist(index: CandidateIndex, subject: Prepared, fields: list[str],
              config: JudgeConfig) -> list[int]:
    """Positions of the same-type candidates that may match; a superset of the true matches."""
    ft = subject.fact_type
    exact, windows, texts = _lookups(subject, fields, config)
    pool: set[int] | None = None
    if exact:  # the rarest value's candidates, then each other field checked on those only
        exact.sort(key=lambda nk: index.exact_count(ft, *nk))
        pool = index.exact_postings(ft, *exact[0])
        for name, keys in exact[1:]:
            if not pool:
                break
            pool = index.exact_filter(pool, name, keys)
        if not pool:
            return []
    for name, bounds, keys in windows:
        if pool is not None and len(pool) <= _SMALL_POOL:
            break
        # with the keys: a year equal to a plain integer, coarser figures the subject rounds to
        s = index.number_window(ft, name, *bounds) | index.exact_postings(ft, name, keys)
        pool = s if pool is None else pool & s
        if not pool:
            return []
    for name, t in texts:
        if pool is not None and len(pool) <= _SMALL_POOL:
            break
        s = index.similar_texts(ft, name, t, config.text_threshold)
        pool = s if pool is None else pool & s
        if not pool:
            return []
    return sorted(pool) if pool is not None else list(index.bucket(ft))


#: Places of the last shown digit a rounded figure may have (1e-6 to 1e15), for its index keys.
_STEPS = tuple(Decimal(1).scaleb(e) for e in range(-6, 16))


def _coarser_keys(q: Quantity) -> tuple[Hashable, ...]:
    """The keys of the rounded figures ``q`` may round to (each filed by _exact_keys under its
    value and the place of its last digit)."""
    return tuple(("n~", q.percent, (q.value / step).to_integral_value(ROUND_HALF_UP) * step, step)
                 for step in _STEPS if q.step is None or step > q.step)


def _bounds(q: Quantity, tol: Tolerance | None) -> tuple[float, float] | None:
    """The number window of the candidates ``q`` may match by tolerance or by rounding (a
    rounded subject equals the finer figures within half its last digit); None for neither."""
    low = high = None
    if tol is not None and (tol.relative or tol.absolute):
        low, high = _window(q, tol)
    if q.rounded and q.step is not None:
        half = float(q.step) / (200 if q.percent else 2)
        v, slack = float(q.number), 1e-9 * max(1.0, abs(float(q.number)))
        low = min(low if low is not None else v, v - half - slack)
        high = max(high if high is not None else v, v + half + slack)
    return (low, high) if low is not None and high is not None else None


def _window(q: Quantity, tol: Tolerance) -> tuple[float, float]:
    """Bounds on the plain numbers (:attr:`Quantity.number`) of the candidates that may match."""
    v = float(q.number)
    # a percentage compares in percentage points (absolute / 100 as a number); a plain subject
    # may meet a percentage too, whose window (absolute / 100) lies inside this one
    width = float(tol.absolute or 0) / (100 if q.percent else 1)
    if tol.relative:
        r = float(tol.relative)
        # |a - b| <= r * max(|a|, |b|) allows b up to |a| / (1 - r) away from zero
        width = max(width, float("inf") if r >= 1 else r * abs(v) / (1 - r))
    slack = 1e-9 * max(1.0, abs(v), width)  # float rounding of the decimal values
    return v - width - slack, v + width + slack


# --------------------------------------------------------------------------- the judge


class RulesJudge(JudgeBase):
    """Deterministic offline judge: normalisation + per-field rules, no LLM calls."""

    name = "rules"

    def open(self, questions: JudgePass) -> RulesPass:
        return RulesPass(self, questions)

    def config_warnings(self, config: JudgeConfig) -> list[str]:
        return matching_rules_check(config)

    @staticmethod
    def index(candidates: list[dict[str, Any]], config: JudgeConfig) -> CandidateIndex:
        return CandidateIndex(candidates, config.ignore_company_suffixes, knowledge_for(config), config)

    def decide(self, task: JudgeTask, index: CandidateIndex | None = None) -> tuple[Verdict, bool]:
        """The verdict, and whether it is exact: one candidate matched, every field equal.
        ``index``: the task's candidates indexed (a question on its own indexes them itself)."""
        if index is None:
            index = self.index(task.candidates, task.config)
        config = task.config
        negative = negative_status(task.direction)
        other: Direction = "predicted" if task.direction == "gold" else "gold"
        subject = normalized(task.subject, -1, config.ignore_company_suffixes)
        fields = task.compared

        def verdict(status: PassStatus, reasoning: str, matched: str | None = None) -> Verdict:
            return Verdict(fact_id=task.subject_id, status=status, matched_id=matched,
                           reasoning=reasoning)

        bucket = index.bucket(subject.fact_type)
        if not bucket:
            return verdict(negative, f"{negative}: none of the {index.size} {other} facts has "
                                     f"fact_type {quoted(subject.fact_type)}."), False
        results = [compare_facts(subject, index.prepared[i], fields, config, index.knowledge)
                   for i in shortlist(index, subject, fields, config)]
        matches = [r for r in results if r.ok]
        if matches:
            best = max(matches, key=lambda r: (r.score, -r.candidate.position))
            return verdict("TP", _tp_reasoning(best, matches, fields),
                           best.candidate.fact_id), len(matches) == 1 and best.exact
        if results:
            closest = max(results, key=lambda r: r.closeness)
            how = ""
        else:
            i = index.closest_overall(subject, fields)
            closest = compare_facts(subject, index.prepared[i], fields, config, index.knowledge)
            how = " (by overall similarity: none agrees on the indexed fields)"
        return verdict(negative, _negative_reasoning(negative, other, subject, closest, len(bucket),
                                                     how)), False

    async def judge(self, task: JudgeTask) -> Verdict:
        return self.decide(task)[0]


class RulesPass:
    """One direction of a document: its candidates indexed once, every subject judged against them
    (a large document holds one direction's index at a time)."""

    def __init__(self, rules: RulesJudge, questions: JudgePass) -> None:
        self.rules, self.questions = rules, questions
        self.index = rules.index(questions.candidates, questions.config)

    def decide(self, subject: dict[str, Any]) -> tuple[Verdict, bool]:
        return self.rules.decide(self.questions.task(subject), self.index)

    async def judge(self, subject: dict[str, Any]) -> Verdict:
        return self.decide(subject)[0]


def _tp_reasoning(best: CandidateResult, matches: list[CandidateResult], fields: list[str]) -> str:
    head = f"TP: matches {best.candidate.fact_id} (fact_type {quoted(best.candidate.fact_type)}"
    head += f", score {best.score:.1f})." if fields else "; no fields to compare)."
    same = [f.name for f in best.fields if f.identical]
    lines = [head, *([f"Identical: {', '.join(same)}."] if same else []),
             *(f.line() + "." for f in best.fields if not f.identical)]
    if len(matches) > 1:
        ids = ", ".join(m.candidate.fact_id for m in matches)
        lines.append(f"{len(matches)} candidates matched ({ids}); the best score wins, "
                     "the earliest on ties.")
    return " ".join(lines)


def _negative_reasoning(negative: NegativeStatus, other: Direction, subject: Prepared, closest: CandidateResult,
                        same_type: int, how: str) -> str:
    failed = [f for f in closest.fields if not f.ok]
    agreed = [f.name for f in closest.fields if f.ok]
    lines = [f"{negative}: no {other} fact of fact_type {quoted(subject.fact_type)} matches "
             f"({same_type} of that type). Closest: {closest.candidate.fact_id}{how}."]
    lines += [f"{f.line()}." for f in failed]
    if agreed:
        lines.append(f"Agrees on {', '.join(agreed)}.")
    return " ".join(lines)
