"""Field-level scores (issue 34 item 6): after the judge has linked facts, how many of the
compared field values of each fact type were found right. Pure: data in, data out; the field
comparison of a pair is given (:data:`FieldComparer`), as the analysis gets its ranker
(``factjudge.judges.rules.fieldscore`` builds it from the rules judge's comparators and its list
alignment).

**Alignment of facts**: every gold fact is aligned with its linked prediction (one-to-one, in gold
order, the first linked prediction not yet taken), or else with its near-miss partner (the pairing
of :mod:`factjudge.core.analysis`); every other gold fact and prediction is unaligned. ERROR and
out-of-scope facts are not counted, as in the fact-level figures.

**Paths**: each compared field (``total``), inside a list field its items (``line_items[]``),
inside a record (a JSON object, as a sub-model dumps) its fields (``address.city``), at any
depth (``line_items[].dims.width``). A value is there unless it is absent: left out, null, a
blank string or an empty list or record (:func:`~.scope.is_absent`); a list's items (a tuple's,
a set's sorted by repr, as the judge reads them) are its values at ``field[]``, a record's
fields its values at ``field.name``. Two records are compared field by field, as the judge
compares them. A field whose own name holds ``[]`` (a column
literally named ``items[].p``), or starts with ``"``, is written in a path as a JSON string
(``"items[].p"``): it would otherwise be counted with the path of that name (:func:`path_name`).

**Counts** per fact type and path:

* ``correct``: aligned, present on both sides, equal;
* ``wrong``: aligned, present on both sides, different;
* ``missing``: the gold value has no counterpart (absent from the aligned prediction, in an item
  left unaligned, or in an unaligned gold fact);
* ``spurious``: the predicted value has no counterpart.

So ``correct + wrong + missing`` is the number of gold values and ``correct + wrong + spurious``
the number of predicted values; precision ``correct / (correct + wrong + spurious)``, recall
``correct / (correct + wrong + missing)``. A linked pair counts every value both sides have as
correct (the judge said they state the same fact): its list items are still aligned, so an item
only one side has is missing or spurious. A near-miss pair's values follow the comparison.
"""
from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import TypeAdapter

from ..models import Analysis, FieldCounts, FieldScore, status_of, verdict_of
from .metrics import prf
from .scope import is_absent

CORRECT, WRONG, MISSING, SPURIOUS = range(4)


@dataclass(frozen=True, slots=True)
class Match:
    """What the field comparison says of one value of an aligned pair (a field, or a list item)."""

    ok: bool
    #: A list on both sides: its aligned items (gold index, predicted index, their match); None:
    #: items paired by position, each as ``ok`` says (a list the comparison does not align).
    items: tuple[tuple[int, int, Match], ...] | None = None
    #: A record item: its fields' matches by name; a field not named here is as ``ok`` says.
    fields: Mapping[str, Match] = field(default_factory=dict)


#: The field comparison of an aligned pair: (gold fact, predicted fact, field names) -> a
#: :class:`Match` per field name (a name left out is equal).
FieldComparer = Callable[[Mapping[str, Any], Mapping[str, Any], Sequence[str]], Mapping[str, Match]]
#: A fact's compared fields.
FieldsOf = Callable[[Mapping[str, Any]], Sequence[str]]
#: Per fact type (as a string), per path: [correct, wrong, missing, spurious].
Tally = dict[str, dict[str, list[int]]]

_EQUAL, _DIFFERENT = Match(True), Match(False)
#: What holds a list's values: a JSON list, or a tuple or set a Python model handed over (as the
#: judge reads it, a set as its items sorted by repr: :func:`_as_list`).
_LISTS = (list, tuple, set, frozenset)
#: What has values inside it: a list's items, a record's fields.
_NESTED = (*_LISTS, dict)


def path_name(name: object) -> str:
    """A field's name as a step of a path: as it is, unless it holds ``[]`` or starts with ``"``,
    when it is written as a JSON string. A path is then read one way only: a name as it is ends at
    the first ``[]``, a JSON string at its closing quote, so a field named ``items[].p`` is counted
    apart from the ``p`` of the items of ``items``."""
    text = str(name)
    return text if "[]" not in text and text[:1] != '"' else json.dumps(text, ensure_ascii=False)


def _slot(tally: dict[str, list[int]], path: str) -> list[int]:
    found = tally.get(path)
    if found is None:
        found = tally[path] = [0, 0, 0, 0]
    return found


def _as_list(value: Any) -> Sequence[Any]:
    """A list's items at the places the judge gives them (its alignment names items by place): a
    set's sorted by repr, as the judge reads a set (normalize._python_scalar)."""
    return sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value


def _one_side(tally: dict[str, list[int]], path: str, value: Any, kind: int) -> None:
    """``value`` and everything inside it counted as ``kind`` (missing or spurious)."""
    if is_absent(value):
        return
    _slot(tally, path)[kind] += 1
    _inside_one_side(tally, path, value, kind)


def _inside_one_side(tally: dict[str, list[int]], path: str, value: Any, kind: int) -> None:
    """What is inside ``value`` (a list's items, a record's fields) counted as ``kind``."""
    if isinstance(value, _LISTS):
        for item in _as_list(value):
            _one_side(tally, path + "[]", item, kind)
    elif isinstance(value, dict):
        for key, field_value in value.items():
            _one_side(tally, f"{path}.{path_name(key)}", field_value, kind)


def _pairs(match: Match, gold: Sequence[Any], predicted: Sequence[Any]) -> list[tuple[int, int, Match]]:
    """The aligned items of two lists: the comparison's (indices checked, each item once), or by
    position."""
    if match.items is None:
        return [(i, i, match) for i in range(min(len(gold), len(predicted)))]
    used_g: set[int] = set()
    used_p: set[int] = set()
    out = []
    for i, j, m in match.items:
        if 0 <= i < len(gold) and 0 <= j < len(predicted) and i not in used_g and j not in used_p:
            used_g.add(i)
            used_p.add(j)
            out.append((i, j, m))
    return out


def _record_match(match: Match) -> Match:
    """What a field's comparison says of the record it holds on both sides: the judge compares a
    nested record as a list of that one record (normalize.Items), so its fields' matches are those
    of that item pair; a record pair it did not align (no field agrees) has every field as ``ok``
    says (each differs), as has a comparison that aligns nothing."""
    if match.items is None:
        return match
    return next((m for i, j, m in match.items if i == j == 0), Match(match.ok))


def _both(tally: dict[str, list[int]], path: str, gold: Any, predicted: Any, match: Match,
          linked: bool, item: bool = False) -> None:
    """One value of an aligned pair, and everything inside it. ``item``: two aligned list items,
    ``match`` their pair's (a field's otherwise)."""
    if is_absent(gold) or is_absent(predicted):
        _one_side(tally, path, gold, MISSING)
        _one_side(tally, path, predicted, SPURIOUS)
        return
    if isinstance(gold, dict) and isinstance(predicted, dict):  # two records: field by field
        record = match if item else _record_match(match)
        _slot(tally, path)[CORRECT if linked or record.ok else WRONG] += 1
        for key in dict.fromkeys((*gold, *predicted)):
            sub = record.fields.get(key) or (_EQUAL if record.ok else _DIFFERENT)
            _both(tally, f"{path}.{path_name(key)}", gold.get(key), predicted.get(key), sub, linked)
        return
    _slot(tally, path)[CORRECT if linked or match.ok else WRONG] += 1
    if not (isinstance(gold, _LISTS) and isinstance(predicted, _LISTS)):
        # a list or record against another kind of value: what is inside has no counterpart
        _inside_one_side(tally, path, gold, MISSING)
        _inside_one_side(tally, path, predicted, SPURIOUS)
        return
    gold, predicted = _as_list(gold), _as_list(predicted)
    items = path + "[]"
    pairs = _pairs(match, gold, predicted)
    for i, j, m in pairs:
        _both(tally, items, gold[i], predicted[j], m, linked, item=True)
    taken_g, taken_p = {i for i, _, _ in pairs}, {j for _, j, _ in pairs}
    for i, value in enumerate(gold):
        if i not in taken_g:
            _one_side(tally, items, value, MISSING)
    for j, value in enumerate(predicted):
        if j not in taken_p:
            _one_side(tally, items, value, SPURIOUS)


def _pairable(gold: Mapping[str, Any], predicted: Mapping[str, Any], status: str) -> bool:
    """Whether two facts can be aligned: the same fact type, the prediction of ``status``."""
    return status_of(predicted) == status and str(gold.get("fact_type")) == str(predicted.get("fact_type"))


def align_facts(gold: Sequence[Mapping[str, Any]], predicted: Sequence[Mapping[str, Any]],
                analysis: Analysis) -> tuple[list[tuple[Mapping[str, Any], Mapping[str, Any], bool]],
                                             list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    """The aligned pairs (gold, prediction, linked), then the unaligned gold facts and
    predictions, of one judged document's output facts (ERROR and out of scope left out)."""
    counted = ("TP", "FN", "FP")
    preds = {str(p["id"]): p for p in predicted if status_of(p) in counted}
    used: set[str] = set()
    pairs: list[tuple[Mapping[str, Any], Mapping[str, Any], bool]] = []
    alone_g: dict[str, Mapping[str, Any]] = {}
    for g in gold:
        verdict = verdict_of(g)
        if verdict.get("status") not in counted:
            continue
        partner = next((str(i) for i in verdict.get("matched_ids") or () if str(i) in preds and str(i) not in used
                        and _pairable(g, preds[str(i)], "TP")), None) if verdict.get("status") == "TP" else None
        if partner is None:
            alone_g[str(g["id"])] = g
        else:
            used.add(partner)
            pairs.append((g, preds[partner], True))
    for n in analysis.near_misses:
        g_fact = alone_g.get(n.gold)
        if g_fact is not None and n.predicted in preds and n.predicted not in used and _pairable(
                g_fact, preds[n.predicted], "FP"):
            del alone_g[n.gold]
            used.add(n.predicted)
            pairs.append((g_fact, preds[n.predicted], False))
    return pairs, list(alone_g.values()), [p for i, p in preds.items() if i not in used]


def count_fields(gold: Sequence[Mapping[str, Any]], predicted: Sequence[Mapping[str, Any]],
                 analysis: Analysis, fields_of: FieldsOf, compare: FieldComparer) -> Tally:
    """Per fact type (a string) and path, [correct, wrong, missing, spurious] of one judged
    document (see the module docs). ``compare`` is asked about near-miss pairs, and about linked
    pairs only for the fields that hold a list (to align their items)."""
    tally: Tally = {}
    pairs, alone_g, alone_p = align_facts(gold, predicted, analysis)
    for g, p, linked in pairs:
        names = fields_of(g)
        # a linked pair's lists and records are asked about, to align the items inside them
        asked = ([n for n in names if isinstance(g.get(n), _NESTED) and isinstance(p.get(n), _NESTED)] if linked
                 else names)
        matches = compare(g, p, asked) if asked else {}
        mine = tally.setdefault(str(g.get("fact_type")), {})
        for name in names:
            gv, pv = g.get(name), p.get(name)
            if linked and not (is_absent(gv) or is_absent(pv) or isinstance(gv, _NESTED) or isinstance(pv, _NESTED)):
                _slot(mine, path_name(name))[CORRECT] += 1  # all _both does of two linked scalars
            else:
                _both(mine, path_name(name), gv, pv, matches.get(name, _EQUAL), linked)
    for facts, kind in ((alone_g, MISSING), (alone_p, SPURIOUS)):
        for f in facts:
            mine = tally.setdefault(str(f.get("fact_type")), {})
            for name in fields_of(f):
                _one_side(mine, path_name(name), f.get(name), kind)
    return tally


def field_counts(tally: Mapping[str, Mapping[str, Sequence[int]]]) -> dict[str, dict[str, FieldCounts]]:
    """A :data:`Tally` as :class:`~factjudge.models.FieldCounts` (what a result line keeps),
    types and paths sorted: validated as one value (a ``FieldCounts(...)`` each, ~20 a 20-fact
    document, cost twice as much)."""
    return _counts_adapter().validate_python(
        {t: {path: {"correct": c[0], "wrong": c[1], "missing": c[2], "spurious": c[3]}
             for path, c in sorted(paths.items())} for t, paths in sorted(tally.items())})


@functools.cache
def _counts_adapter() -> TypeAdapter[dict[str, dict[str, FieldCounts]]]:
    """Built on first use, as the models are (a run without field counts never builds it)."""
    return TypeAdapter(dict[str, dict[str, FieldCounts]])


def field_score(c: Sequence[int], ci95: Mapping[str, list[float] | None] | None = None) -> FieldScore:
    """Counts [correct, wrong, missing, spurious] with precision, recall and F1 (None where undefined)."""
    correct, wrong, missing, spurious = c
    # prf's fp and fn: a wrong value is both a wrong prediction and a gold value not found
    p, r, f = prf(correct, wrong + spurious, wrong + missing)
    return FieldScore(correct=correct, wrong=wrong, missing=missing, spurious=spurious, precision=p, recall=r,
                      f1=f, ci95=dict(ci95) if ci95 is not None else None)


def tally_of(counts: Mapping[str, Mapping[str, FieldCounts]]) -> Tally:
    """The :data:`Tally` of stored :class:`~factjudge.models.FieldCounts`."""
    return {t: {path: [c.correct, c.wrong, c.missing, c.spurious] for path, c in paths.items()}
            for t, paths in counts.items()}


def worst_first(rows: Iterable[tuple[str, str, FieldScore]]) -> list[tuple[str, str, FieldScore]]:
    """(fact type, path, counts) lowest F1 first (undefined last), then most values, then by name."""
    return sorted(rows, key=lambda r: (r[2].f1 is None, r[2].f1 or 0.0,
                                       -(r[2].correct + r[2].wrong + r[2].missing + r[2].spurious), r[0], r[1]))
