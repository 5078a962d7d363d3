"""The one closeness measure of two facts (:class:`factjudge.core.analysis.Closeness`), built from
the rules judge's own field comparisons: the fields that agree, then the mean per-field
similarity on the 0-100 scale of the judge's reasoning ("similarity 60 < 90"). Used for near
misses (eval's analysis) and the reports' "closest" fact, whichever judge ran, so a pair scores
the same wherever it is shown.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rapidfuzz import fuzz, process

from ...core.analysis import Closeness, FieldCheck, Ranker, closest_first
from ...core.scope import fact_fields
from ...models import JudgeConfig
from .compare import Prepared, compare_facts, normalized
from .normalize import Reading

#: Candidates fully compared per subject. A larger group is first narrowed to this many by a
#: C-level text similarity of the whole facts: a full comparison costs about 56 us for three
#: fields (measured on 2 busy cores), so 20 keep a document of 1,000 FN facts near 1 s.
RANK_POOL = 20


def closeness(a: Prepared, b: Prepared, fields: Sequence[str], config: JudgeConfig) -> Closeness:
    """The closeness of two prepared facts over ``fields``."""
    result = compare_facts(a, b, list(fields), config)
    return Closeness(tuple(FieldCheck(f.name, f.ok, f.score) for f in result.fields))


def _text(fact: Mapping[str, Any], fields: Sequence[str]) -> str:
    return " ".join(str(fact.get(name, "")) for name in fields).casefold()


def preparer(config: JudgeConfig) -> Callable[[Mapping[str, Any]], Prepared]:
    """Facts normalised for ``config``, each once (about 0.2 ms a fact): a report asks about both
    sides, and eval's field-level counts about the near-miss pairs the ranker has read."""
    cache: dict[int, tuple[Mapping[str, Any], Prepared]] = {}
    reading = Reading.of(config)

    def prepare(fact: Mapping[str, Any]) -> Prepared:
        hit = cache.get(id(fact))
        if hit is None or hit[0] is not fact:
            hit = cache[id(fact)] = (fact, normalized(dict(fact), -1, config.ignore_company_suffixes,
                                                               reading))
        return hit[1]

    return prepare


def rules_ranker(config: JudgeConfig, fields: Mapping[Any, Sequence[str]] | None = None,
                 pool: int = RANK_POOL, prepare: Callable[[Mapping[str, Any]], Prepared] | None = None) -> Ranker:
    """A :data:`~factjudge.core.analysis.Ranker` comparing as the rules judge does with
    ``config``; ``fields``: the compared fields per fact_type (see :func:`~factjudge.core.scope.fact_fields`);
    ``prepare``: a :func:`preparer` to share."""
    prepare = prepare or preparer(config)

    def rank(subjects: Sequence[Mapping[str, Any]], candidates: Sequence[Mapping[str, Any]]
             ) -> list[list[tuple[int, Closeness]]]:
        texts: dict[tuple[str, ...], list[str]] = {}
        out = []
        for subject in subjects:
            names = fact_fields(subject, config, fields)
            shortlist: Sequence[int] = range(len(candidates))
            if len(candidates) > pool:
                choices = texts.setdefault(tuple(names), [_text(c, names) for c in candidates])
                shortlist = [i for _, _, i in process.extract(_text(subject, names), choices, scorer=fuzz.ratio,
                                                              limit=pool, processor=None)]
            mine = prepare(subject)
            out.append(closest_first((i, closeness(mine, prepare(candidates[i]), names, config)) for i in shortlist))
        return out

    return rank
