"""Which facts a report lists, and what it says about each: the failing (and spot-check TP) rows
worst document first, the closest fact of a near miss, and the facts whose status changed between
two runs. Plain data (dicts of str, numbers, lists), the same for report.md and report.html."""
from __future__ import annotations

import heapq
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..core.analysis import Closeness
from ..core.scope import compared_fields
from ..models import (
    DIRECTIONS,
    OUTPUT_FIELDS,
    QUOTE_LIMIT,
    VERDICT_KEY,
    Direction,
    JudgeConfig,
    Status,
    cut_text,
    own_fields,
    status_of,
    verdict_of,
)

if TYPE_CHECKING:  # the module itself is imported when first needed (_finder)
    from ..judges.base import FactForms
    from ..judges.rules.closeness import FieldMemo, Finder

#: Statuses listed in the failing-facts table; TP rows are added on request (spot checks).
ROW_STATUSES: tuple[Status, ...] = ("FN", "FP", "ERROR")
#: A fact's identity and type have their own columns in a report.
_NOT_SHOWN = frozenset({"id", "fact_type"})
#: "Closest fact" search is skipped for a (document, side, fact_type) group with more pairs.
CLOSEST_MAX_PAIRS = 1_000_000
#: Candidates fully compared per fact for its "closest" fact, the most similar by the text of the
#: whole fact first: normalising a fact for the rules judge's comparison costs about 0.2 ms, and with
#: 20 the closest facts of 100 documents x 20 facts took 5 s against 0.3 s before (token_set_ratio).
CLOSEST_POOL = 5
#: Each side with the other one.
_SIDE_PAIRS: tuple[tuple[Direction, Direction], ...] = (("gold", "predicted"), ("predicted", "gold"))


def _value_text(fact: Mapping[str, Any]) -> str:
    """The text of a fact's own fields (not id, fact_type or the verdict), for similarity."""
    return " ".join(v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, sort_keys=True)
                    for k, v in own_fields(fact).items() if k not in _NOT_SHOWN)


def _similarity_text(fact: Mapping[str, Any]) -> str:
    """Case-folded field values; punctuation is a separator except inside numbers, so "9.8%" and
    "9.9%" stay different tokens ("Inc." and "Inc" the same)."""
    text = _value_text(fact).casefold()
    text = re.sub(r"(?<!\d)[.,]|[.,](?!\d)", " ", text)
    return " ".join(re.sub(r"[^\w.,%$\u20ac\u00a3\u00a5-]+", " ", text).split())


#: The keys :func:`_own_fields` leaves out, by the fact's layout (see
#: :func:`~factjudge.models.own_fields`): its verdict under VERDICT_KEY, or beside its fields.
_SKIPPED = frozenset({*_NOT_SHOWN, VERDICT_KEY})
_SKIPPED_OLD = frozenset({*_NOT_SHOWN, *OUTPUT_FIELDS})


def _not_shown(fact: Mapping[str, Any]) -> frozenset[str]:
    """The keys of ``fact`` that are not its own shown fields, by its layout."""
    return _SKIPPED if isinstance(fact.get(VERDICT_KEY), dict) else _SKIPPED_OLD


def _own_fields(fact: Mapping[str, Any]) -> dict[str, Any]:
    """A fact's own fields: id and fact_type have their own columns, the verdict its own places."""
    skip = _not_shown(fact)
    return {k: v for k, v in fact.items() if k not in skip}


def shown_fields(fact: Mapping[str, Any]) -> dict[str, Any]:
    """A fact's own fields as a report shows them: a text over :data:`QUOTE_LIMIT` characters is
    cut (results.jsonl keeps it whole). A report shows a fact in up to five places (its row, the
    closest fact of others' rows, the document view): one 30 MB text made a 120 MB report.html.
    One pass over the fact (a report's rows call it about 10,000 times on 1,000 documents)."""
    skip = _not_shown(fact)
    return {k: cut_text(v, QUOTE_LIMIT) if isinstance(v, str) and len(v) > QUOTE_LIMIT else v
            for k, v in fact.items() if k not in skip}


def closest_facts(line: Mapping[str, Any], statuses: Sequence[Status] = ROW_STATUSES
                  ) -> dict[tuple[Direction, str], tuple[Mapping[str, Any], float]]:
    """(side, id) -> (closest fact of the other side, score) for the facts of ``line`` with one of
    ``statuses``: the fact of the same document and ``fact_type`` on the other side that is
    closest by the one closeness measure of :mod:`factjudge.core.analysis` (most compared fields
    agreeing, then the mean per-field similarity, 0-100, as the rules judge scores fields; earliest
    on ties; none when no field agrees and every similarity is 0, or the group has more than
    :data:`CLOSEST_MAX_PAIRS` pairs). :func:`closest_detail` gives the fields that differ too."""
    return {key: (fact, round(near.score, 1)) for key, (fact, near) in closest_detail(line, statuses).items()}


#: The config parsed last, by the identity of the dict it came from, with the closest-fact
#: search's field outcomes for it: a run folder's lines share one
#: (:meth:`~factjudge.io.runfolder.RunFolder.with_config`), parsed once instead of per line.
_PARSED: list[tuple[Any, JudgeConfig, FieldMemo]] = []


def read_config_as(data: Mapping[str, Any], config: JudgeConfig) -> None:
    """Read the lines whose config is ``data`` (the dict itself) with ``config``, the object the
    judge judged with, instead of parsing it: a search reads the judge's caches kept by the config's
    identity (a list's alignment: 1,021 of an invoice run's 9,288 alignments were made again)."""
    _PARSED[:] = [(data, config, {})]  # holds the dict, so its identity is not reused


def _line_config(line: Mapping[str, Any]) -> tuple[JudgeConfig, FieldMemo]:
    data = line.get("config") or {}
    if _PARSED and _PARSED[0][0] is data:
        return _PARSED[0][1], _PARSED[0][2]
    try:
        config = JudgeConfig.model_validate(data)
    except ValueError:  # a line of another version: compare with the defaults
        config = JudgeConfig()
    read_config_as(data, config)
    return config, _PARSED[0][2]


#: A line's facts of each side, each with its status (read once: the search asks for it three times).
_Judged = dict[Direction, list[tuple[dict[str, Any], Any]]]
#: The fields compared per fact_type, as :func:`~factjudge.core.scope.compared_fields` gives them.
CompareFields = dict[str, tuple[str, ...]] | None


def _finder(line: Mapping[str, Any], facts: _Judged, forms: FactForms | None = None,
            fields: Sequence[CompareFields] = ()) -> Finder:
    """The rules judge's closest-fact search with the line's config, over the fields it compared
    (``fields[0]`` when given: the judge's own)."""
    from ..judges.rules.closeness import preparer, rules_closest  # when first needed: the run starts faster

    config, memo = _line_config(line)
    if fields:
        compared = fields[0]
    else:
        # the fields of the facts themselves: an older run wrote its verdict beside them (a verdict
        # under VERDICT_KEY is skipped by compared_fields, so such a fact is not copied without it)
        in_scope = [[f if isinstance(f.get(VERDICT_KEY), dict) else own_fields(f) for f, status in facts[side]
                     if status != "OUT_OF_SCOPE" and isinstance(f.get("fact_type"), str)] for side in DIRECTIONS]
        compared = compared_fields(in_scope[0], in_scope[1], config)[0]
    return rules_closest(config, compared, pool=CLOSEST_POOL,
                         prepare=None if forms is None else preparer(config, forms), memo=memo)


#: What :func:`closest_detail` returns: (side, id) -> (closest fact of the other side, closeness).
ClosestMap = dict[tuple[Direction, str], tuple[Mapping[str, Any], Closeness]]


def closest_detail(line: Mapping[str, Any], statuses: Sequence[Status] = ROW_STATUSES, *,
                   forms: FactForms | None = None, fields: Sequence[CompareFields] = ()) -> ClosestMap:
    """:func:`closest_facts` with each pair's :class:`~factjudge.core.analysis.Closeness`.
    ``forms``: the line's facts prepared already with its config (by the identity of the fact
    dicts: the judge's own, :func:`~factjudge.evaluation.pipeline.judge_checked`'s ``forms``);
    ``fields``: one item, the fields the judge compared (``judge_checked``'s ``fields_out``), else
    worked out from the line's facts."""
    out: ClosestMap = {}
    find: Finder | None = None
    facts: _Judged = {side: [(f, status_of(f)) for f in line.get(f"{side}_facts") or []] for side in DIRECTIONS}
    for side, other in _SIDE_PAIRS:
        subjects: dict[Any, list[Mapping[str, Any]]] = {}
        for f, status in facts[side]:
            if status in statuses:
                subjects.setdefault(f.get("fact_type"), []).append(f)
        if not subjects:
            continue
        candidates: dict[Any, list[Mapping[str, Any]]] = {}
        for f, status in facts[other]:
            if f.get("fact_type") in subjects and status != "OUT_OF_SCOPE":
                candidates.setdefault(f.get("fact_type"), []).append(f)
        for fact_type, subs in subjects.items():
            cands = candidates.get(fact_type, [])
            if not cands or len(subs) * len(cands) > CLOSEST_MAX_PAIRS:
                continue
            find = find or _finder(line, facts, forms, fields)
            for subject, best in zip(subs, find(subs, cands), strict=True):
                if best and (best[1].agree or best[1].score > 0):
                    out[(side, str(subject["id"]))] = (cands[best[0]], best[1])
    return out


#: A :data:`ClosestMap` as another process sends it: each closest fact by its id.
ClosestIds = dict[tuple[Direction, str], tuple[str, Closeness]]


def closest_ids(found: ClosestMap) -> ClosestIds:
    """``found`` with each closest fact named by its id (a fact's id is unique on its side)."""
    return {key: (str(fact["id"]), closeness) for key, (fact, closeness) in found.items()}


def closest_of_ids(line: Mapping[str, Any], ids: ClosestIds) -> ClosestMap:
    """The :data:`ClosestMap` of ``line`` that :func:`closest_ids` described, each closest fact
    the line's own."""
    by_id = {side: {str(f["id"]): f for f in line.get(f"{side}_facts") or []} for side in DIRECTIONS}
    return {(side, fid): (by_id["predicted" if side == "gold" else "gold"][other], closeness)
            for (side, fid), (other, closeness) in ids.items()}


class ClosestMemo:
    """:func:`closest_detail` of a run's worst documents, worked out once where the run's lines are
    read (eval's pass over its results, which the review queue needs them for) and reused by the
    report's rows and document view: the search is the reports' largest cost. Only the ``keep``
    worst documents with a failing fact are held (the reports show no others); another line is
    searched when asked (``memo(line)``)."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self._heap: list[tuple[tuple[float, int, int], str]] = []  # the kept, best of them first
        self._found: dict[str, ClosestMap] = {}

    def add(self, line: Mapping[str, Any], order_key: tuple[float, int, int], found: ClosestMap) -> None:
        """``found``: the line's :func:`closest_detail`; ``order_key`` its
        :func:`worst_order_key` (lower is worse)."""
        m = line.get("metrics") or {}
        if not m.get("fn", 0) + m.get("fp", 0) + m.get("errors", 0) or self.keep <= 0:
            return
        doc_id = str(line["doc_id"])
        entry = ((-order_key[0], -order_key[1], -order_key[2]), doc_id)
        if len(self._heap) < self.keep:
            heapq.heappush(self._heap, entry)
        elif entry > self._heap[0]:
            self._found.pop(heapq.heapreplace(self._heap, entry)[1], None)
        else:
            return
        self._found[doc_id] = found

    def __call__(self, line: Mapping[str, Any], statuses: Sequence[Status] = ROW_STATUSES) -> ClosestMap:
        found = self._found.get(str(line.get("doc_id"))) if statuses == ROW_STATUSES else None
        return closest_detail(line, statuses) if found is None else found


def collect_rows(line: Mapping[str, Any], include_tp: bool = False,
                 closest: Callable[[Mapping[str, Any]], ClosestMap] = closest_detail) -> list[dict[str, Any]]:
    """One row per FN/FP/ERROR fact of a result line (and per TP fact with ``include_tp``), gold
    facts first, in input order, with what a reader needs to check it:

    ``doc_id, side, id, fact_type, status, fact`` (its own fields), ``reasoning``, ``note``
    (the reconciliation description), ``matched_ids``, ``linked`` (the matched facts of the other
    side: ``[{"id", "status", "fact"}]``, what a TP row is checked against) and ``closest``
    (for a fact that is not TP: ``{"id", "status", "fact", "score", "differ"}`` of the closest fact
    of the other side with the same fact_type and the compared fields they differ in, see
    :func:`closest_facts`, else ``None``). ``closest``: :func:`closest_detail` or a
    :class:`ClosestMemo` holding it."""
    statuses = ROW_STATUSES + (("TP",) if include_tp else ())
    return _rows_of(line, statuses.__contains__, closest)


def _rows_of(line: Mapping[str, Any], take: Callable[[Any], bool],
             closest: Callable[[Mapping[str, Any]], ClosestMap] | None) -> list[dict[str, Any]]:
    """:func:`collect_rows` of the facts whose status ``take(status)`` accepts, asked in the
    rows' order; ``closest`` None: no closest fact is searched (only TP rows are taken)."""
    facts = {side: line.get(f"{side}_facts") or [] for side in ("gold", "predicted")}
    by_id = {side: {str(f.get("id")): f for f in fs} for side, fs in facts.items()}
    near_of = closest(line) if closest is not None else {}
    rows = []
    for side, other in _SIDE_PAIRS:
        for fact in facts[side]:
            verdict = verdict_of(fact)
            status = verdict.get("status")
            if not take(status):
                continue
            matched = [str(i) for i in verdict.get("matched_ids") or []]
            linked = [{"id": i, "status": status_of(by_id[other][i]), "fact": shown_fields(by_id[other][i])}
                      for i in matched if i in by_id[other]]
            near = near_of.get((side, str(fact["id"]))) if status != "TP" else None
            rows.append({
                "doc_id": line["doc_id"], "side": side, "id": fact["id"],
                "fact_type": fact["fact_type"], "status": status, "fact": shown_fields(fact),
                "matched_ids": matched, "linked": linked,
                "closest": None if near is None else {
                    "id": near[0]["id"], "status": status_of(near[0]),
                    "fact": shown_fields(near[0]), "score": round(near[1].score, 1),
                    "differ": near[1].differ},
                "reasoning": verdict.get("reasoning") or "", "note": verdict.get("description") or "",
            })
    return rows


def worst_order_key(metrics: Mapping[str, Any], index: int) -> tuple[float, int, int]:
    """Sort key of a document, worst first: lowest F1 (undefined counts as 0), then most
    FN+FP+ERROR facts, then dataset order (``index``); the same order as ``Aggregator.worst``.
    ``metrics`` is a result line's ``metrics``."""
    wrong = metrics.get("fn", 0) + metrics.get("fp", 0) + metrics.get("errors", 0)
    return (metrics.get("f1") or 0.0, -wrong, index)


def select_rows(lines_by_worst: Iterable[Mapping[str, Any]], limit: int, *, tp_limit: int = 0,
                closest: Callable[[Mapping[str, Any]], ClosestMap] = closest_detail) -> list[dict[str, Any]]:
    """The report's rows: :func:`collect_rows` of each line of ``lines_by_worst`` (result lines,
    worst document first) until ``limit`` FN/FP/ERROR rows and ``tp_limit`` TP rows are taken.
    It stops reading the iterable once both are full, so a generator is read only as far as needed.
    Rows keep their document order (worst first; gold then predicted within a document)."""
    rows: list[dict[str, Any]] = []
    failing = tp = 0
    if limit <= 0 and tp_limit <= 0:
        return rows

    def take(status: Any) -> bool:
        # a row is built only when its quota has room: the rows of a full quota (each fact's
        # fields copied, its linked facts looked up) were built and dropped, 4 of 5 rows on
        # 1,000 documents x 20 facts
        nonlocal failing, tp
        if status == "TP":
            if tp >= tp_limit:
                return False
            tp += 1
            return True
        if status in ROW_STATUSES and failing < limit:
            failing += 1
            return True
        return False

    for line in lines_by_worst:
        rows += _rows_of(line, take, closest if failing < limit else None)
        if failing >= limit and tp >= tp_limit:
            break
    return rows


# --------------------------------------------------------------------------- compare data


def _badness(status: Status | None) -> int:
    return {"TP": 1, None: 0, "OUT_OF_SCOPE": 0}.get(status, -1)


def changed_facts(line_a: Mapping[str, Any], line_b: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The facts whose status differs between two result lines of the same document (A and B),
    matched by side and id; gold facts first, each side in A's order then B's new ids.

    Each: ``doc_id, side, id, fact_type, status_a, status_b`` (``None``: the fact is not in
    that run), ``change``, ``fact`` (B's fields, else A's), ``same_fact`` (False when both runs
    have the id with different fields: two extractors may reuse a predicted id for different
    facts), ``reasoning_a``, ``reasoning_b``, ``note_b``.

    ``fact_a``: A's fields (``None`` when A lacks the id), shown beside B's when ``same_fact`` is
    False.

    ``change``: ``"new"`` when run A lacks the fact (a new prediction is neither fixed nor broken:
    nothing in A was), ``"fixed"`` when B is better (FN/FP/ERROR -> TP, an FP gone), ``"broke"``
    when worse (TP -> FN/FP/ERROR, a TP gone), ``"other"`` otherwise (FN -> ERROR, scope changes).
    A status ranks TP > absent = OUT_OF_SCOPE > FN = FP = ERROR."""
    out: list[dict[str, Any]] = []
    for side in DIRECTIONS:
        a = {str(f.get("id")): f for f in line_a.get(f"{side}_facts") or []}
        b = {str(f.get("id")): f for f in line_b.get(f"{side}_facts") or []}
        for fid in [*a, *(i for i in b if i not in a)]:
            fa, fb = a.get(fid), b.get(fid)
            sa = status_of(fa) if fa else None
            sb = status_of(fb) if fb else None
            if sa == sb:
                continue
            ra, rb = _badness(sa), _badness(sb)
            change = "new" if fa is None else "fixed" if rb > ra else "broke" if rb < ra else "other"
            base = fb if fb is not None else fa
            assert base is not None
            out.append({
                "doc_id": line_b.get("doc_id", line_a.get("doc_id")), "side": side, "id": base["id"],
                "fact_type": base.get("fact_type"), "status_a": sa, "status_b": sb, "change": change,
                "fact": shown_fields(base), "fact_a": None if fa is None else shown_fields(fa),
                "same_fact": fa is None or fb is None or _own_fields(fa) == _own_fields(fb),
                "reasoning_a": verdict_of(fa or {}).get("reasoning") or "",
                "reasoning_b": verdict_of(fb or {}).get("reasoning") or "",
                "note_b": verdict_of(fb or {}).get("description") or "",
            })
    return out


def fact_type_keys(line: Mapping[str, Any]) -> dict[str, tuple[int, int, int, int]]:
    """fact_type -> (TP predicted, FP, TP gold, FN) of one result line: the per-document keys
    ``core.aggregate.paired_bootstrap`` takes, for per-fact-type intervals in a compare."""
    by_type = (line.get("metrics") or {}).get("by_fact_type") or {}
    return {t: (c["tp_predicted"], c["fp"], c["tp_gold"], c["fn"]) for t, c in by_type.items()}

