"""The rules judge's candidate index: one candidate list prepared (normalised) once and indexed by
fact_type and, lazily, per field: exact keys (numbers, periods, JSON, missing), sorted numbers for
tolerance windows, and the distinct texts for one C-level fuzzy search. :func:`shortlist` gives a
subject only the few candidates that survive the intersection of those look-ups, which are a
superset of the candidates that can match.
"""
from __future__ import annotations

import bisect
from collections.abc import Collection, Hashable, Iterable, Mapping
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from rapidfuzz import fuzz, process

from ...models import JudgeConfig, Tolerance
from . import variants
from .compare import Forms, ItemPartners, KnowledgeMemo, Prepared, absent, prepared_once
from .knowledge import Knowledge
from .normalize import (
    READING,
    Code,
    Item,
    Items,
    Missing,
    Norm,
    Other,
    Period,
    Quantity,
    Reading,
    Text,
    format_decimal,
    is_unit_field,
    sorted_tokens,
)

#: Stop narrowing the shortlist once it is this small; comparing a few facts is cheaper.
SMALL_POOL = 8

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
        if norm.instant is not None:  # also the same instant at another offset, its day another
            return (("d", norm.key), ("i", norm.instant))
        return (("d", norm.key),)
    if isinstance(norm, Other):
        return (("j", norm.json),)
    if isinstance(norm, Code):
        return (("c", norm.key),)
    return None


class CandidateIndex:
    """Prepared candidates of one list, with lazily built per-(fact_type, field) look-ups."""

    def __init__(self, candidates: list[dict[str, Any]], ignore_company_suffixes: bool,
                 knowledge: Knowledge | None = None, config: JudgeConfig | None = None,
                 forms: Forms | None = None) -> None:
        self.ignore_company_suffixes = ignore_company_suffixes
        self.knowledge = knowledge
        #: The config the knowledge was built from (an index is rebuilt for another one).
        self.config = config
        #: How ambiguous numbers and dates were read (the config's; an index is rebuilt for another).
        self.reading = READING if config is None else Reading.of(config)
        #: The document's facts prepared once (the config's), whichever direction or analysis reads them.
        self.forms = forms
        self._file([self.prepare(c).at(i) for i, c in enumerate(candidates)])

    @classmethod
    def of_items(cls, items: Items, name: str, knowledge: Knowledge | None, config: JudgeConfig) -> CandidateIndex:
        """The items of a list inside a fact (``name``), as candidates of no fact_type: a
        record's fields by their keys, a scalar item as the field ``name`` (how compare.py names
        them to the knowledge)."""
        index = cls([], False, knowledge, config)
        index._file([Prepared(j, "", None, _item_fields(item, name, items.records), item.currency)
                     for j, item in enumerate(items.items)])
        return index

    def _file(self, prepared: list[Prepared]) -> None:
        self.size = len(prepared)
        self.prepared = prepared
        self.by_type: dict[Any, list[int]] = {}
        for p in self.prepared:
            self.by_type.setdefault(_type_key(p.fact_type), []).append(p.position)
        self._exact: dict[tuple[Any, str], dict[Hashable, list[int]]] = {}
        self._numbers: dict[tuple[Any, str], tuple[list[float], list[int]]] = {}
        self._texts: dict[tuple[Any, str], tuple[list[str], list[list[int]], dict[Hashable, list[int]]]] = {}
        self._signatures: dict[Any, list[str]] = {}
        self._steps: dict[tuple[Any, str], frozenset[Decimal]] = {}

    def prepare(self, fact: dict[str, Any]) -> Prepared:
        """``fact`` prepared as the candidates are (position -1), once per document's ``forms``."""
        return prepared_once(fact, self.ignore_company_suffixes, self.reading, self.forms)

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

    def rounded_steps(self, fact_type: Any, name: str) -> frozenset[Decimal]:
        """The places of the last digit of the rounded figures filed under ``name`` (their ``n~``
        keys): a subject looks up the figures it may round to at those places only (mostly none:
        a key for each of up to 22 places cost 4% of judging a fact)."""
        steps = self._steps.get((_type_key(fact_type), name))
        if steps is None:
            steps = self._steps[(_type_key(fact_type), name)] = frozenset(
                key[3] for key in self._exact_table(fact_type, name) if isinstance(key, tuple) and key[0] == "n~")
        return steps

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
        """What a text's similarity is computed on: its words sorted, as the knowledge reads them
        (once per text and field: a text is a candidate in one direction and a subject in the
        other, and names repeat across documents: 19,928 look-ups of 1,000 x 20 facts)."""
        knowledge = self.knowledge
        if knowledge is None:
            return t.sorted
        memo = _SEARCHED.table(knowledge)
        hit = memo.get((name, id(t)))
        if hit is None or hit[0] is not t:
            hit = memo[name, id(t)] = (t, sorted_tokens(knowledge.canon(name, t.raw, t.norm).norm))
        return hit[1]

    def variant_keys(self, name: str, t: Text, query: bool) -> tuple[Hashable, ...]:
        knowledge = self.knowledge
        if knowledge is None:
            return ()
        # a text is a candidate in one direction and a subject in the other, and names repeat
        memo = _VARIANT_KEYS.table(knowledge)
        found = memo.get((name, t, query))
        if found is None:
            found = memo[name, t, query] = variants.keys(t.raw, t.norm, knowledge.canon(name, t.raw, t.norm),
                                                         knowledge, name, query)
        return found

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


#: What a text's similarity is computed on (:meth:`CandidateIndex.searched`), by field and the
#: text's identity (each entry holds its text, so an id is never another's), per knowledge.
_SEARCHED: KnowledgeMemo[tuple[str, int], tuple[Text, str]] = KnowledgeMemo(20_000)
#: A text's variant keys (variants.keys) by field, text and use, per knowledge.
_VARIANT_KEYS: KnowledgeMemo[tuple[str, Text, bool], tuple[Hashable, ...]] = KnowledgeMemo(20_000)


def knowledge_key(config: JudgeConfig | None) -> Any:
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
        shown = v.norm if isinstance(v, Text) else v.key if isinstance(v, (Period, Code)) else (
            format_decimal(v.value) if isinstance(v, Quantity) else v.describe())
        parts.append(f"{name}={shown}")
    return "|".join(parts)


_Lookups = tuple[list[tuple[str, tuple[Hashable, ...]]],
                 list[tuple[str, tuple[float, float], Quantity]], list[tuple[str, Text]]]


def _lookups(index: CandidateIndex, subject: Prepared, fields: list[str],
             tolerances: Mapping[str, Tolerance]) -> _Lookups:
    """How each field of the subject narrows the candidates: exact keys, a number window (with
    the figure whose keys are looked up outside it: :func:`_figure_keys`), or a text search."""
    exact: list[tuple[str, tuple[Hashable, ...]]] = []
    windows: list[tuple[str, tuple[float, float], Quantity]] = []
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
            bounds = _bounds(value, tolerances.get(name))
            if bounds is None:
                exact.append((name, _figure_keys(index, subject.fact_type, name, value)))
            else:
                windows.append((name, bounds, value))
        elif (found := _exact_keys(value)) is not None:
            exact.append((name, tuple(found)))
    return exact, windows, texts


def shortlist(index: CandidateIndex, subject: Prepared, fields: list[str],
              config: JudgeConfig, tolerances: Mapping[str, Tolerance] | None = None) -> list[int]:
    """Positions of the same-type candidates that may match; a superset of the true matches.
    ``tolerances``: by field name, when not the config's (the items of a list: by their path)."""
    ft = subject.fact_type
    exact, windows, texts = _lookups(index, subject, fields, config.tolerances if tolerances is None else tolerances)
    pool: set[int] | None = None
    if exact:  # the rarest value's candidates, then each other field checked on those only
        if len(exact) > 1:
            exact.sort(key=lambda nk: index.exact_count(ft, *nk))
        pool = index.exact_postings(ft, *exact[0])
        for name, keys in exact[1:]:
            if not pool:
                break
            pool = index.exact_filter(pool, name, keys)
        if not pool:
            return []
    for name, bounds, value in windows:
        if pool is not None and len(pool) <= SMALL_POOL:
            break
        # with the keys: a year equal to a plain integer, coarser figures the subject rounds to
        s = index.number_window(ft, name, *bounds) | index.exact_postings(
            ft, name, _figure_keys(index, ft, name, value))
        pool = s if pool is None else pool & s
        if not pool:
            return []
    for name, t in texts:
        if pool is not None and len(pool) <= SMALL_POOL:
            break
        s = index.similar_texts(ft, name, t, config.text_threshold)
        pool = s if pool is None else pool & s
        if not pool:
            return []
    return sorted(pool) if pool is not None else list(index.bucket(ft))


def item_partners(a: Items, b: Items, name: str, path: str, config: JudgeConfig,
                  knowledge: Knowledge | None) -> ItemPartners | None:
    """For two long lists of ``name`` inside a fact (``path``), the items of ``b`` that may equal
    item ``i`` of ``a`` (compare._align_long), looked up as a subject's candidates are with the
    tolerances of the items' fields, and those that may agree with it in one field at least (the
    same look-up, field by field), each with the number of fields it was found by. None for
    records with a field named "" (compared as the list's own name and path, which a record's
    field of that name may be too) and for a mixed list."""
    if a.records and any("" in item.values for item in (*a.items, *b.items)) or a.mixed or b.mixed:
        return None  # (a mixed list's items are records and values: its index would be neither's)
    index = CandidateIndex.of_items(b, name, knowledge, config)
    tolerances = {name: tol} if not a.records and (tol := config.tolerances.get(path)) else {
        key[len(path) + 1:]: tol for key, tol in config.tolerances.items() if key.startswith(f"{path}.")}

    def subject(i: int) -> Prepared:
        item = a.items[i]
        return Prepared(-1, "", None, _item_fields(item, name, a.records), item.currency)

    def equal(i: int) -> list[int]:
        x = subject(i)
        return shortlist(index, x, list(x.values), config, tolerances)

    # a unit field absent on one side may still agree with the other's (a currency implied), and
    # one is looked up under no key: an item holding one may agree with any item, and any item
    # with an item holding one
    with_units = {j for j, item in enumerate(b.items)
                  if any(is_unit_field(f) for f in _item_fields(item, name, b.records))}

    def related(i: int) -> dict[int, int]:
        x = subject(i)
        if any(is_unit_field(f) for f in x.values):
            return dict.fromkeys(range(len(b.items)), 0)
        # another field absent on one side differs, on both is not compared: a present one agrees
        found = dict.fromkeys(with_units, 0)
        for f, v in x.values.items():
            if not absent(v):
                for j in shortlist(index, x, [f], config, tolerances):
                    found[j] = found.get(j, 0) + 1
        return found
    return ItemPartners(equal, related)


def _item_fields(item: Item, name: str, records: bool) -> dict[str, Norm]:
    return item.values if records else {name: item.get("")}


def _figure_keys(index: CandidateIndex, fact_type: Any, name: str, q: Quantity) -> tuple[Hashable, ...]:
    """The keys a figure's candidates are filed under (its number's, the coarser figures it rounds
    to): for a window, worked out only when the window is looked up (a small pool, mostly a
    document's bucket narrowed by its period, stops before; the rounded figures' table built for
    its coarser keys was 2% of judging 10,000 documents of 10 + 10 facts)."""
    return (("n", q.number), *_coarser_keys(q, index.rounded_steps(fact_type, name)))


#: Places of the last shown digit a rounded figure may have (1e-6 to 1e15), for its index keys.
_STEPS = tuple(Decimal(1).scaleb(e) for e in range(-6, 16))


def _coarser_keys(q: Quantity, steps: Collection[Decimal] = _STEPS) -> tuple[Hashable, ...]:
    """The keys of the rounded figures ``q`` may round to (each filed by _exact_keys under its
    value and the place of its last digit); ``steps``: only those places (the candidates'
    rounded figures are filed under no others, see :meth:`CandidateIndex.rounded_steps`)."""
    if not steps:
        return ()
    return tuple(("n~", q.percent, (q.value / step).to_integral_value(ROUND_HALF_UP) * step, step)
                 for step in _STEPS if (q.step is None or step > q.step) and step in steps)


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
