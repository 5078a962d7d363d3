"""The field comparison of field-level scores (:data:`factjudge.core.fields.FieldComparer`), built
from the rules judge's own comparators and its alignment of list items (:mod:`.compare`), so a
near-miss pair's fields are equal or not exactly as the rules judge and the near-miss analysis
say, whichever judge ran.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ...core.fields import FieldComparer, Match
from ...models import JudgeConfig
from .closeness import preparer
from .compare import Prepared, absent, aligned_items, compare_outcome, lists_equal, not_comparable
from .knowledge import Knowledge, knowledge_for
from .normalize import Items

#: A record item's field as the alignment found it, shared (a match is never changed): making
#: one a field was a fifth of the field counts' cost of an invoice's items.
_SAME, _DIFFERS = Match(True), Match(False)


def list_match(name: str, path: str, a: Items, b: Items, config: JudgeConfig,
               knowledge: Knowledge | None = None) -> Match:
    """Two lists inside a fact: the rules judge's one-to-one alignment of their items, each item
    pair with its fields' outcomes (a list inside an item aligned in turn); ``knowledge``:
    :func:`~.knowledge.knowledge_for` ``config``, when the caller has it."""
    if not_comparable(a, b):
        return Match(False, items=())  # a list of records vs a list of values: nothing aligns
    # with the config's aliases and families, as the judge and the near-miss search compare: the
    # alignment each of them made of the same two lists is the one read here
    knowledge = knowledge or knowledge_for(config)
    aligned = aligned_items(name, path, a, b, config, knowledge)
    pairs = []
    for i, j, pair in aligned:
        x, y = a.items[i], b.items[j]
        u, v = x.get(""), y.get("")
        if isinstance(u, Items) and isinstance(v, Items):  # two lists, items of a mixed list: aligned in turn
            # (compare.py compares them as the list's own name and path, as a scalar item)
            inner = list_match(name, path, u, v, config, knowledge)
            pairs.append((x.position, y.position, Match(pair.ok, items=inner.items)))
            continue
        failed = set(pair.failed)  # a record's field keys
        fields: dict[str, Match] = {}
        # a record (a mixed list's record has no field "", its values have nothing else)
        if a.records or (a.mixed and "" not in x.values and "" not in y.values):
            for key in dict.fromkeys((*x.values, *y.values)):
                u, v = x.get(key), y.get(key)
                if isinstance(u, Items) and isinstance(v, Items):
                    fields[key] = list_match(key, f"{path}.{key}", u, v, config, knowledge)
                else:
                    fields[key] = _DIFFERS if key in failed else _SAME
        pairs.append((x.position, y.position, Match(pair.ok, fields=fields)))  # places as written
    return Match(lists_equal(a, b, aligned), items=tuple(pairs))


def rules_field_comparer(config: JudgeConfig, prepare: Callable[[Mapping[str, Any]], Prepared] | None = None
                         ) -> FieldComparer:
    """A :data:`~factjudge.core.fields.FieldComparer` comparing as the rules judge does with
    ``config``; ``prepare``: the near-miss ranker's :func:`~.closeness.preparer`, so a pair it has
    read is not normalised again."""
    prepare = prepare or preparer(config)
    knowledge = knowledge_for(config)

    def compare(gold: Mapping[str, Any], predicted: Mapping[str, Any], names: Sequence[str]) -> dict[str, Match]:
        g, p = prepare(gold), prepare(predicted)
        out = {}
        for name in names:
            a, b = g.get(name), p.get(name)
            if absent(a) and absent(b):
                continue
            if isinstance(a, Items) and isinstance(b, Items):
                out[name] = list_match(name, name, a, b, config, knowledge)
            else:
                out[name] = Match(compare_outcome(name, a, b, config, g.currency, p.currency, knowledge)[0])
        return out

    return compare
