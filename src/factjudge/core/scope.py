"""Scope filtering, done in code before any judge call."""
from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import repeat
from typing import Any, TypeVar

from ..errors import InputError
from ..models import VERDICT_KEY, JudgeConfig
from .confidence import detect_field

#: A fact's evidence: where an extractor found it in the source (its span, alignment, the
#: extractor's own description), kept with the fact and shown, never compared (what a fact states
#: is in its other fields). The input formats of extractors (LangExtract, spaCy, GLiNER) fill it.
EVIDENCE = "evidence"
#: Never data to compare: the identity, the type, factjudge's verdict on an output fact, the
#: evidence. A fact's own ``status`` or ``description`` is data like any other field.
NOT_COMPARED = frozenset({"id", "fact_type", VERDICT_KEY, EVIDENCE})
#: A fact as a caller holds it (a dict, or any mapping).
F = TypeVar("F", bound=Mapping[str, Any])


def in_scope_facts(facts: list[dict[str, Any]], config: JudgeConfig) -> list[dict[str, Any]]:
    """The facts in scope: those of a listed type, or all when no types are listed (a new list
    either way)."""
    types = config.entity_types
    return [f for f in facts if f["fact_type"] in types] if types else list(facts)


def _fields(facts: Iterable[dict[str, Any]], skip: frozenset[str] = NOT_COMPARED) -> dict[str, dict[str, None]]:
    out: dict[str, dict[str, None]] = {}
    for fact in facts:
        seen = out.setdefault(fact["fact_type"], {})
        for key in fact:
            if key not in skip:
                seen[key] = None
    return out


def is_absent(value: Any) -> bool:
    """Whether a field's value says nothing: null, a blank string, a list or record empty or of
    absent values only. An extractor writes ``""``, ``[]`` or a sub-record of nulls (strict
    structured outputs) for what it did not find, where the gold leaves the field out or null:
    the same absence, which is no evidence of a match."""
    if value is None:
        return True
    if isinstance(value, str):
        return not value or value.isspace()
    if isinstance(value, (list, tuple, set, frozenset)):  # one of absent items only ([""], [null]) too
        return all(map(is_absent, value))
    if isinstance(value, dict):  # a record of absent fields ({"street": null, "city": null}) too
        return all(map(is_absent, value.values()))
    return False


#: Unit-like fields (:mod:`factjudge.judges.rules.normalize`): read into the amount they apply to
#: and compared by their effect, so one absent on a side is no unit, not a missing value.
GENERIC_UNIT_FIELDS = frozenset({
    "unit", "units", "currency", "scale", "multiplier", "uom", "unit_of_measure",
    "unit_of_measurement",
})
UNIT_FIELD_SUFFIXES = ("_unit", "_units", "_currency", "_scale")


@functools.lru_cache(maxsize=4096, typed=True)  # asked for every field compared; a run has few field names
def is_unit_field(name: str) -> bool:
    lower = str(name).casefold()
    return lower in GENERIC_UNIT_FIELDS or lower.endswith(UNIT_FIELD_SUFFIXES)


def compared_fields(gold: list[dict[str, Any]], predicted: list[dict[str, Any]],
                    config: JudgeConfig) -> tuple[dict[str, tuple[str, ...]] | None, list[str]]:
    """The fields compared per ``fact_type`` and the warnings about them. ``config.fields`` as one
    list: None here (judges use it as it is); as a list per fact_type: those lists; for any other
    type, the fields the gold facts of that type carry, the reference deciding what a fact is.
    Fields only predictions carry (``page``...) are not compared, and gold fields no prediction has
    are named. The predictions' confidence (``confidence_field``, or the name
    :func:`~factjudge.core.confidence.detect_field` finds) is no fact field, on either side."""
    if isinstance(config.fields, list):
        return None, []
    listed = config.fields or {}
    confidence = detect_field(predicted, gold, config.confidence_field)
    skip = NOT_COMPARED | {confidence} if confidence else NOT_COMPARED
    gold_fields, pred_fields = _fields(gold, skip), _fields(predicted, skip)
    warnings = []
    for fact_type in sorted(set(gold_fields) & set(pred_fields)):
        names = listed.get(fact_type, gold_fields[fact_type])  # a type's own list says what counts
        only_pred = [] if fact_type in listed else [f for f in pred_fields[fact_type] if f not in names]
        # a unit no prediction names is no unit, which an amount in the gold's currency matches
        only_gold = [f for f in names if f in gold_fields[fact_type] and f not in pred_fields[fact_type]
                     and not is_unit_field(f)]
        # (a field only ever absent, null or "", is no field the other side lacks: absent there too)
        only_pred = _given(only_pred, predicted, fact_type)
        only_gold = _given(only_gold, gold, fact_type)
        if only_pred:
            warnings.append(f"{fact_type}: predicted facts carry {', '.join(only_pred)}, which no gold "
                            "fact of this type has: not compared (set 'fields' to compare them)")
        if only_gold:
            warnings.append(f"{fact_type}: gold facts carry {', '.join(only_gold)}, which no predicted "
                            "fact of this type has: such predictions cannot match")
    per_type = {t: tuple(f) for t, f in gold_fields.items()}
    per_type.update({t: tuple(config.fields_for(t) or ()) for t in listed})
    return per_type, warnings


def _given(names: list[str], facts: Iterable[Mapping[str, Any]], fact_type: Any) -> list[str]:
    """Those of ``names`` that a fact of ``fact_type`` gives a value (:func:`is_absent`: not null,
    blank or empty): looked for only when there is a warning to give."""
    if not names:
        return names
    of_type = [f for f in facts if f.get("fact_type") == fact_type]
    return [n for n in names if any(not is_absent(f.get(n)) for f in of_type)]


def fact_fields(fact: Mapping[str, Any], config: JudgeConfig,
                fields: Mapping[Any, Sequence[str]] | None) -> list[str]:
    """The fields compared for ``fact``: ``config.fields`` (its type's), else its type's in
    ``fields`` (from :func:`compared_fields`), else its own but the config's ``confidence_field``."""
    if (named := config.fields_for(fact.get("fact_type"))) is not None:
        return named
    if fields is not None and fact.get("fact_type") in fields:
        return list(fields[fact["fact_type"]])
    return [k for k in fact if k not in NOT_COMPARED and k != config.confidence_field]


def per_fact_type(config: JudgeConfig, fields: Mapping[Any, Sequence[str]] | None,
                  fields_of: Callable[[dict[str, Any]], list[str]]) -> Callable[[dict[str, Any]], list[str]]:
    """``fields_of(fact)`` (a fact's compared fields), worked out once per fact_type whose fields
    the config or ``fields`` name: a fact of another type is compared on its own fields. For one
    pass over a document's facts (the scope checks below: 52,384 calls a 1,000 x 20 facts run;
    the rules judge's subjects)."""
    return _once_per_type(config, fields, fields_of)


def _once_per_type(config: JudgeConfig, fields: Mapping[Any, Sequence[str]] | None,
                   fields_of: Callable[[F], list[str]]) -> Callable[[F], list[str]]:
    """:func:`per_fact_type` for facts of any mapping type (the field-level counts' output facts)."""
    known: dict[Any, list[str]] = {}

    def of(fact: F) -> list[str]:
        fact_type = fact.get("fact_type")
        names = known.get(fact_type)
        if names is None:
            names = fields_of(fact)
            if config.fields_for(fact_type) is not None or (fields is not None and fact_type in fields):
                known[fact_type] = names
        return names

    return of


def fields_by_type(config: JudgeConfig, fields: Mapping[Any, Sequence[str]] | None
                   ) -> Callable[[Mapping[str, Any]], list[str]]:
    """:func:`fact_fields` once per named fact_type (:func:`per_fact_type`): the same list each
    time, not to be changed."""
    return _once_per_type(config, fields, lambda fact: fact_fields(fact, config, fields))


def _nothing_message(fact_type: object, count: int) -> str:
    return (f"{fact_type}: {count} fact{'' if count == 1 else 's'} had nothing to compare (every "
            "compared field null, empty or absent): absence is no evidence, so the rules judge matches "
            "such a fact with nothing")


_NOTHING = re.compile(r"(?P<type>.*): (?P<count>\d+) facts? had nothing to compare \(")
#: A document's warning about fields one side's facts of a type carry (:func:`compared_fields`).
_ONE_SIDE = re.compile(r"(?P<type>.*): (?P<side>gold|predicted) facts carry (?P<fields>.*), which no "
                       r"(?P<other>gold|predicted) fact of this type has: (?P<then>.*)")


def nothing_to_compare(gold: list[dict[str, Any]], predicted: list[dict[str, Any]], config: JudgeConfig,
                       fields: Mapping[Any, tuple[str, ...]] | None) -> list[str]:
    """A warning per fact_type with facts whose compared fields are all absent (:func:`is_absent`: a
    Pydantic ``Optional`` left empty): counted on both sides. A type with no field to compare at
    all is a fact by its type alone and is not counted."""
    counts, _ = _scope_pass(gold, predicted, config, fields, True, ())
    return [_nothing_message(t, n) for t, n in counts.items()]


#: A value that is one number with a single separator before three digits ("1,234", "$1.234"):
#: a thousands separator or a decimal one, as ``decimal_separator`` says (the rules judge's
#: normaliser reads it so; the unambiguous forms "148,16" and "1.234,50" never need the key).
_AMBIGUOUS_NUMBER = re.compile(r"[^\d]*(?<![\d.,])[1-9]\d{0,2}[.,]\d{3}(?![\d.,])[^\d]*")
#: A day and a month that could be either, with a four-digit year last ("03/04/2024").
_AMBIGUOUS_DATE = re.compile(r"\s*(?P<a>\d{1,2})(?P<sep>[/-])(?P<b>\d{1,2})(?P=sep)\d{4}\s*")

_READ_BY_DEFAULT = {
    "decimal_separator": "values such as 1,234 or 1.234 were read with decimal_separator '.' (the "
                         "default: 1,234 is one thousand two hundred and thirty-four): set "
                         "decimal_separator: ',' in the config if they are decimal commas",
    "date_order": "dates such as 03/04/2024 were read month first (date_order MDY, the default): set "
                  "date_order: DMY in the config if they are day first",
}


def _ambiguous(value: str) -> str | None:
    """The config key that decides how ``value`` is read, when it is ambiguous; else None."""
    return None if len(value) > 40 else _ambiguous_short(value)


@functools.lru_cache(maxsize=16384)
def _ambiguous_short(value: str) -> str | None:
    """:func:`_ambiguous` of a value of at most 40 characters, once per distinct value while it is
    recent: names, periods and units repeat across a run's documents (before: two regex matches
    for each of 111,826 values of a 1,000 x 20 facts run; 16,384 values hold ~1.5 MB)."""
    if (m := _AMBIGUOUS_DATE.fullmatch(value)) and int(m["a"]) <= 12 and int(m["b"]) <= 12 \
            and m["a"].lstrip("0") != m["b"].lstrip("0"):
        return "date_order"
    return "decimal_separator" if _AMBIGUOUS_NUMBER.fullmatch(value) else None


def _open_keys(config: JudgeConfig) -> list[str]:
    """The locale keys of :data:`_READ_BY_DEFAULT` the config leaves to their default."""
    return [k for k in _READ_BY_DEFAULT if k not in config.model_fields_set]


def read_by_default(gold: list[dict[str, Any]], predicted: list[dict[str, Any]], config: JudgeConfig,
                    fields: Mapping[Any, tuple[str, ...]] | None) -> list[str]:
    """A warning per locale key the config leaves to its default while a compared value needs it
    ("1,234", "03/04/2024"); the same text for every document, so a run says it once."""
    open_keys = _open_keys(config)
    if not open_keys:
        return []
    _, met = _scope_pass(gold, predicted, config, fields, False, open_keys)
    return [_READ_BY_DEFAULT[k] for k in open_keys if k in met]


def scope_warnings(gold: list[dict[str, Any]], predicted: list[dict[str, Any]], config: JudgeConfig,
                   fields: Mapping[Any, tuple[str, ...]] | None) -> list[str]:
    """:func:`nothing_to_compare`'s warnings, then :func:`read_by_default`'s, from one pass over
    the facts (each walked them and worked out their fields: 35 -> 28 us a 20-fact document)."""
    open_keys = _open_keys(config)
    counts, met = _scope_pass(gold, predicted, config, fields, True, open_keys)
    return [*(_nothing_message(t, n) for t, n in counts.items()),
            *(_READ_BY_DEFAULT[k] for k in open_keys if k in met)]


def _scope_pass(gold: list[dict[str, Any]], predicted: list[dict[str, Any]], config: JudgeConfig,
                fields: Mapping[Any, tuple[str, ...]] | None, nothing: bool,
                open_keys: Sequence[str]) -> tuple[dict[Any, int], set[str | None]]:
    """Per fact_type the facts with nothing to compare (when ``nothing``), and which of
    ``open_keys`` a compared value needs; the pass ends early once it only looks for keys and has
    met them all."""
    counts: dict[Any, int] = {}
    met: set[str | None] = set()  # None never: only a key of open_keys is added
    looking = bool(open_keys)
    fields_of = fields_by_type(config, fields)
    for fact in (*gold, *predicted):
        names = fields_of(fact)
        values = list(map(fact.get, names))
        if nothing and names and all(map(is_absent, values)):
            counts[fact["fact_type"]] = counts.get(fact["fact_type"], 0) + 1
            continue  # no value to read
        if looking:
            for value in values:
                # _ambiguous inlined: a call less for each compared value (~80 a 20-fact document)
                if isinstance(value, str) and len(value) <= 40 and (key := _ambiguous_short(value)) in open_keys:
                    met.add(key)
            if len(met) == len(open_keys):
                if not nothing:
                    break
                looking = False
    return counts, met


def merge_warnings(warnings: Iterable[str] | Mapping[str, int]) -> list[str]:
    """The warnings of many documents as one run's: each once, in the order first met, the
    counts of :func:`nothing_to_compare` summed per fact_type, and a document's fields of one
    side (:func:`compared_fields`) said of the documents it is true of ("x: predicted facts
    carry note, which no gold fact of this type has" read as the run's was false of it when
    other documents' gold facts had ``note``). ``warnings``: the documents' messages, or each
    message with the number of documents that gave it (a run counts them as its lines come and
    merges once: merging again at each line was 24 us a line)."""
    weighted = warnings.items() if isinstance(warnings, Mapping) else zip(warnings, repeat(1))
    out: dict[str, None] = {}
    counts: dict[str, int] = {}
    for message, times in weighted:
        if m := _NOTHING.match(message):
            key, add = f"\0nothing:{m['type']}", int(m["count"]) * times
        elif m := _ONE_SIDE.fullmatch(message):
            key, add = f"\0side:{m['type']}\0{m['side']}\0{m['fields']}\0{m['then']}", times
        else:
            out[message] = None
            continue
        out.setdefault(key, None)  # its place in the order
        counts[key] = counts.get(key, 0) + add
    return [_nothing_message(w[9:], counts[w]) if w.startswith("\0nothing:")
            else _one_side_message(w, counts[w]) if w.startswith("\0side:") else w for w in out]


def _one_side_message(key: str, documents: int) -> str:
    fact_type, side, fields, then = key[len("\0side:"):].split("\0")
    other = "gold" if side == "predicted" else "predicted"
    return (f"{fact_type}: in {documents} document{'' if documents == 1 else 's'}, {side} facts carry "
            f"{fields}, which no {other} fact of this type has there: {then}")


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
    carries (gold or predicted, every document). A ``fields`` list none of whose fields a fact has
    compares nothing, so every pair of one fact_type would match (``["valeu"]`` turned recall 0.0
    into 1.0): an :class:`InputError`; one such field beside others is compared as absent on both
    sides: a warning (``run_judge`` of one document without ``note`` was refused). A
    ``tolerances`` or ``ordered`` entry no fact has is ignored: a warning."""
    have = set(present)
    known = sorted(have - NOT_COMPARED)

    def hint(name: str) -> str:
        close = difflib.get_close_matches(name, known, n=1)
        return f" (did you mean {close[0]!r}?)" if close else ""

    if not have:  # nothing to judge is not a mistake
        return []
    lists = config.fields.values() if isinstance(config.fields, dict) else [config.fields or []]
    for names in lists:
        named = [n for n in names if n != "fact_type"]
        if named and not any(n in have for n in named):  # (one such field absent among others: a warning)
            raise InputError(f"config key 'fields': no fact in {source} carries {named[0]!r}"
                             f"{hint(named[0])}; a field no fact has compares nothing, so every "
                             "pair of the same fact_type would match")
    out = [f"fields {name!r}: no fact in {source} carries this field{hint(name)}: absent on both sides"
           for name in config.field_names() if name not in have and name != "fact_type"]
    # a path into a list's items (line_items.unit_price) is checked by the list field it starts with
    return out + [f"{key} {name!r}: no fact in {source} carries this field{hint(name.split('.')[0])}: ignored"
                  for key, names in (("tolerances", config.tolerances), ("ordered", config.ordered))
                  for name in names if name not in have and name.split(".")[0] not in have]


def matching_rules_check(config: JudgeConfig) -> list[str]:
    """The warning of a judge that reads no prompt (the rules judge) when ``matching_rules`` are
    given: they would be silently ignored (issue #22 item 5)."""
    if not config.matching_rules:
        return []
    return [f"matching_rules ({len(config.matching_rules)}) are read by LLM judges only and are "
            "ignored by the rules judge: declare equivalent values with 'aliases' or "
            "'aliases_file' instead"]
