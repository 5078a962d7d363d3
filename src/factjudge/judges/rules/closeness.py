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
from .compare import Forms, Prepared, absent, compare_outcome, prepared_once
from .knowledge import Knowledge, knowledge_for
from .normalize import Norm, Reading

#: Candidates fully compared per subject. A larger group is first narrowed to this many by a
#: C-level text similarity of the whole facts: a full comparison costs about 56 us for three
#: fields (measured on 2 busy cores), so 20 keep a document of 1,000 FN facts near 1 s.
RANK_POOL = 20


def closeness(a: Prepared, b: Prepared, fields: Sequence[str], config: JudgeConfig,
              knowledge: Knowledge | None = None) -> Closeness:
    """The closeness of two prepared facts over ``fields``, compared with ``config``'s aliases
    and families (``knowledge``: :func:`~.knowledge.knowledge_for` of it, when the caller has it)."""
    checks = _checks(a, b, fields, config, knowledge or knowledge_for(config))
    assert checks is not None  # (no floor: never given up)
    return Closeness(tuple(FieldCheck(*c) for c in checks))


#: A field's similarity is at most this (the judge's 0-100 scale): what bounds a pair not yet compared.
TOP_SCORE = 100.0
#: Below a floor by less than this is not proved below it: the bound's float sum may round otherwise.
_MARGIN = 1e-9


#: Field outcomes (agrees, similarity) by the identity of the values compared, for one config:
#: the normal forms are cached and shared, so a pair of values recurs across a run's documents (a
#: company, a period: the 22,603 comparisons of a 1,000 x 20 facts run's closest-fact search were
#: 10,636 distinct ones). An entry holds the values it is keyed by, so an identity is never
#: another object's. Kept by whoever holds the config (:func:`rules_closest`'s ``memo``).
FieldMemo = dict[tuple[str, int, int, str | None, str | None], tuple[Norm, Norm, bool, float]]
#: Entries a :data:`FieldMemo` holds before it is cleared (a few hundred bytes each).
FIELDS_LIMIT = 50_000


def _field(name: str, x: Norm, y: Norm, config: JudgeConfig, cur_x: str | None, cur_y: str | None,
           memo: FieldMemo | None, knowledge: Knowledge) -> tuple[bool, float]:
    """:func:`~.compare.compare_field`'s verdict and similarity, from ``memo`` when it has them."""
    if memo is None:
        return _outcome(name, x, y, config, cur_x, cur_y, knowledge)
    key = (name, id(x), id(y), cur_x, cur_y)
    hit = memo.get(key)
    if hit is None or hit[0] is not x or hit[1] is not y:
        if len(memo) >= FIELDS_LIMIT:
            memo.clear()
        hit = memo[key] = (x, y, *_outcome(name, x, y, config, cur_x, cur_y, knowledge))
    return hit[2], hit[3]


def _outcome(name: str, x: Norm, y: Norm, config: JudgeConfig, cur_x: str | None, cur_y: str | None,
             knowledge: Knowledge) -> tuple[bool, float]:
    """:func:`~.compare.compare_field`'s verdict and similarity, without the result it would make
    (only they are read: 16,000 comparisons of a 1,000 x 20 facts run's near-miss search)."""
    ok, _, score, _ = compare_outcome(name, x, y, config, cur_x, cur_y, knowledge)
    return ok, score


def _checks(a: Prepared, b: Prepared, fields: Sequence[str], config: JudgeConfig, knowledge: Knowledge,
            floor: tuple[int, float] | None = None, memo: FieldMemo | None = None
            ) -> list[tuple[str, bool, float]] | None:
    """Each compared field of ``a`` and ``b`` (name, agrees, similarity), as
    :func:`~.compare.compare_facts` finds them with ``knowledge`` (the judge's: ``config``'s
    aliases and families), a field null or absent on both sides not compared; None as soon as
    the pair cannot reach ``floor`` (fields agreeing, mean similarity), not even if every field
    left agreed at :data:`TOP_SCORE`: a closest-fact search stops a pair that cannot win on its
    first fields instead of comparing them all."""
    out: list[tuple[str, bool, float]] = []
    agree, total, left = 0, 0.0, len(fields)
    for name in fields:
        left -= 1
        x, y = a.get(name), b.get(name)
        if absent(x) and absent(y):
            continue
        ok, score = _field(name, x, y, config, a.currency, b.currency, memo, knowledge)
        out.append((name, ok, score))
        agree += ok
        total += score
        if floor is not None and not (ok and score >= TOP_SCORE):
            most = agree + left
            # the mean is highest with every field left compared (each at most TOP_SCORE)
            if most < floor[0] or (most == floor[0] and (total + TOP_SCORE * left) / (len(out) + left)
                                   < floor[1] - _MARGIN):
                return None
    return out


def _key(checks: Sequence[tuple[str, bool, float]]) -> tuple[int, float]:
    """:attr:`Closeness.key` of ``checks`` (the same sum in the same order, so ties stay ties)."""
    return (sum(c[1] for c in checks),
            sum(c[2] for c in checks) / len(checks) if checks else TOP_SCORE)


def _text(fact: Mapping[str, Any], fields: Sequence[str]) -> str:
    return " ".join(str(fact.get(name, "")) for name in fields).casefold()


def preparer(config: JudgeConfig, forms: Forms | None = None) -> Callable[[Mapping[str, Any]], Prepared]:
    """Facts normalised for ``config``, each once (about 0.2 ms a fact): a report asks about both
    sides, and eval's field-level counts about the near-miss pairs the ranker has read. ``forms``:
    the document's facts the judge has prepared already (for ``config``), added to."""
    cache: Forms = {} if forms is None else forms
    reading, ignore = Reading.of(config), config.ignore_company_suffixes

    def prepare(fact: Mapping[str, Any]) -> Prepared:
        return prepared_once(fact, ignore, reading, cache)

    return prepare


def _shortlister(config: JudgeConfig, fields: Mapping[Any, Sequence[str]] | None, pool: int,
                 candidates: Sequence[Mapping[str, Any]]
                 ) -> Callable[[Mapping[str, Any]], tuple[list[str], Sequence[int]]]:
    """A subject's compared fields and the candidates it is compared with: all, or the ``pool``
    most similar by text when there are more."""
    texts: dict[tuple[str, ...], list[str]] = {}

    def shortlist(subject: Mapping[str, Any]) -> tuple[list[str], Sequence[int]]:
        names = fact_fields(subject, config, fields)
        if len(candidates) <= pool:
            return names, range(len(candidates))
        choices = texts.setdefault(tuple(names), [_text(c, names) for c in candidates])
        return names, [i for _, _, i in process.extract(_text(subject, names), choices, scorer=fuzz.ratio,
                                                         limit=pool, processor=None)]

    return shortlist


def rules_ranker(config: JudgeConfig, fields: Mapping[Any, Sequence[str]] | None = None,
                 pool: int = RANK_POOL, prepare: Callable[[Mapping[str, Any]], Prepared] | None = None) -> Ranker:
    """A :data:`~factjudge.core.analysis.Ranker` comparing as the rules judge does with
    ``config``; ``fields``: the compared fields per fact_type (see :func:`~factjudge.core.scope.fact_fields`);
    ``prepare``: a :func:`preparer` to share."""
    prepare = prepare or preparer(config)
    knowledge = knowledge_for(config)

    def rank(subjects: Sequence[Mapping[str, Any]], candidates: Sequence[Mapping[str, Any]]
             ) -> list[list[tuple[int, Closeness]]]:
        shortlist = _shortlister(config, fields, pool, candidates)
        out = []
        for subject in subjects:
            names, among = shortlist(subject)
            mine = prepare(subject)
            out.append(closest_first((i, closeness(mine, prepare(candidates[i]), names, config, knowledge))
                                     for i in among))
        return out

    return rank


def _likely_first(subject: Prepared, among: list[tuple[int, Prepared]], names: Sequence[str]
                  ) -> list[tuple[int, Prepared]]:
    """``among`` with the candidates sharing most normal forms with ``subject`` first (the forms
    are cached and shared, so an equal value is mostly the same object): the closest is then
    mostly found first, and the others stop early against it. Only the order of the search."""
    if len(among) < 2:
        return among
    mine = subject.values
    return sorted(among, key=lambda o: -sum(mine.get(n) is o[1].values.get(n) for n in names))


#: For facts of one type: each subject's closest candidate (index, closeness), None without candidates.
Finder = Callable[[Sequence[Mapping[str, Any]], Sequence[Mapping[str, Any]]], list[tuple[int, Closeness] | None]]


def rules_closest(config: JudgeConfig, fields: Mapping[Any, Sequence[str]] | None = None,
                  pool: int = RANK_POOL, prepare: Callable[[Mapping[str, Any]], Prepared] | None = None,
                  memo: FieldMemo | None = None) -> Finder:
    """Each subject's first in :func:`rules_ranker`'s order (the same arguments), found without
    ranking the rest: a candidate is compared until it cannot beat the closest so far (see
    :func:`_checks`), and only the closest is made a :class:`Closeness`. The reports' and the
    review queue's search of every failing fact of a run wants no more (issue 39). ``memo``: a
    :data:`FieldMemo` kept for ``config`` (never changed while it is used), shared by the searches of
    a run's documents."""
    prepare = prepare or preparer(config)
    knowledge = knowledge_for(config)

    def closest(subjects: Sequence[Mapping[str, Any]], candidates: Sequence[Mapping[str, Any]]
                ) -> list[tuple[int, Closeness] | None]:
        shortlist = _shortlister(config, fields, pool, candidates)
        out: list[tuple[int, Closeness] | None] = []
        for subject in subjects:
            names, among = shortlist(subject)
            mine = prepare(subject)
            best: tuple[int, list[tuple[str, bool, float]]] | None = None
            floor: tuple[int, float] | None = None
            for i, other in _likely_first(mine, [(i, prepare(candidates[i])) for i in among], names):
                checks = _checks(mine, other, names, config, knowledge, floor, memo)
                if checks is None:
                    continue
                key = _key(checks)
                # the earliest candidate on ties, whatever order the shortlist is in
                if best is None or floor is None or key > floor or (key == floor and i < best[0]):
                    best, floor = (i, checks), key
            out.append(None if best is None else (best[0], Closeness(tuple(FieldCheck(*c) for c in best[1]))))
        return out

    return closest
