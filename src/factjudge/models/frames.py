"""Results as tables: the columns of facts.csv, the Parquet file and the DataFrames
(:data:`FACT_COLUMNS`), one row per fact (:func:`result_rows`), and the pandas DataFrame made of
them (:func:`result_to_pandas`; pandas is imported only here, when asked for)."""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ..errors import missing_dependency
from .analysis import Analysis, fact_category
from .statuses import own_fields, verdict_of

#: The columns of :meth:`Analysis.marks` and the category (:func:`fact_category`), per fact.
ANALYSIS_COLUMNS = ("category", "partner", "differ", "closeness", "granularity")
#: The fixed columns of the output tables, in order; the facts' own fields follow.
FACT_COLUMNS = ("doc_id", "side", "id", "fact_type", "status", "in_scope", "matched_ids",
                "description", "reasoning", "linked_reasoning", "votes", *ANALYSIS_COLUMNS)


#: The fixed columns factjudge fills that do not come from the fact itself: every column but the
#: fact's ``id`` and ``fact_type``, the verdict's (``status``, ``description``...) included. A
#: fact may have fields of these names (``category`` and ``description`` are ordinary business
#: fields): they go to ``fact.<name>`` (:func:`fact_column`), never into factjudge's column.
ADDED_COLUMNS = tuple(c for c in FACT_COLUMNS if c not in ("id", "fact_type"))
_PREFIX = "fact."


def fact_column(name: str) -> str:
    """The column of a fact's own field ``name``: ``name`` itself, except that a field named like
    an :data:`ADDED_COLUMNS` column (``doc_id``, ``side``, ``category``, ``partner``, ...), or
    like one with ``fact.`` prefixes (``fact.doc_id``, ``fact.fact.side``), gets one more
    ``fact.`` in front. So ``category`` is ``fact.category``, ``fact.category`` is
    ``fact.fact.category``, and no fact field ever shares a column with factjudge's columns or
    with another field of the fact (``fact.other`` and any other name are kept as they are)."""
    base = name
    while base.startswith(_PREFIX):
        base = base[len(_PREFIX):]
    return _PREFIX + name if base in ADDED_COLUMNS else name


def import_pandas() -> Any:
    try:
        import pandas as pd
    except ImportError as exc:
        raise missing_dependency("pandas is needed for to_pandas(): pip install 'factjudge[pandas]'",
                                 exc, "pandas") from None
    return pd


def result_rows(result: Any, doc_id: str | None = None) -> Iterator[dict[str, Any]]:
    """One row dict per fact of a result (gold facts first, then predicted, in input order).

    ``result`` is a :class:`~factjudge.models.JudgeResult`, its ``to_dict()``, or a line of an
    eval ``results.jsonl`` (whose ``doc_id`` is used when ``doc_id`` is not given). Keys: the
    :data:`FACT_COLUMNS`, then the fact's own fields, named by :func:`fact_column` (``doc_id``
    is ``fact.doc_id``, ``fact.doc_id`` is ``fact.fact.doc_id``: both values are kept)."""
    if isinstance(result, Mapping):
        line: Mapping[str, Any] = result
        if doc_id is None:
            doc_id = line.get("doc_id")
    else:
        line = {"gold_facts": result.gold_facts, "predicted_facts": result.predicted_facts,
                "analysis": result.analysis}
    marks = line_analysis(line).marks()
    for side in ("gold", "predicted"):
        for fact in line.get(f"{side}_facts") or ():
            mark = marks.get((side, str(fact.get("id"))), {})
            verdict = verdict_of(fact)
            row: dict[str, Any] = {
                "doc_id": doc_id, "side": side, "id": fact.get("id"),
                "fact_type": fact.get("fact_type"), "status": verdict.get("status"),
                "in_scope": verdict.get("in_scope"), "matched_ids": list(verdict.get("matched_ids") or ()),
                "description": verdict.get("description"), "reasoning": verdict.get("reasoning"),
                "linked_reasoning": verdict.get("linked_reasoning"), "votes": verdict.get("votes"),
                "category": fact_category(side, verdict.get("status"), mark), "partner": mark.get("partner"),
                "differ": mark.get("differ"), "closeness": mark.get("closeness"),
                "granularity": mark.get("granularity"),
            }
            for key, value in own_fields(fact).items():
                if key not in ("id", "fact_type"):
                    row[fact_column(key)] = value
            yield row


def line_analysis(line: Mapping[str, Any]) -> Analysis:
    """The :class:`Analysis` of a result line (or of a dict holding one); empty when the line has
    none (a line of an older version: its FN and FP facts then count as missing / spurious)."""
    found = line.get("analysis")
    if isinstance(found, Analysis):
        return found
    return Analysis.model_validate(found) if isinstance(found, Mapping) else Analysis()


def _columns(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """The fixed columns, then every other key in the order first met."""
    extra: dict[str, None] = {}
    for row in rows:
        for key in row:
            if key not in extra:
                extra[key] = None
    return list(FACT_COLUMNS) + [k for k in extra if k not in FACT_COLUMNS]


def results_frame(rows: list[dict[str, Any]]) -> Any:
    """A DataFrame of ``rows``. Fixed columns have fixed types; a fact field whose present values
    are all integers (or all booleans) keeps them with pandas' nullable ``Int64`` / ``boolean``
    when some rows lack it, instead of turning into floats; missing values are NA/None."""
    pd = import_pandas()
    columns = _columns(rows)
    data: dict[str, Any] = {}
    for name in columns:
        values = [row.get(name) for row in rows]
        if name in ("doc_id", "matched_ids", "reasoning"):  # lists, and None kept as None
            data[name] = pd.Series(values, dtype=object)
            continue
        present = [v for v in values if v is not None]
        if len(present) < len(values) and present:
            if all(isinstance(v, bool) for v in present):
                data[name] = pd.Series(values, dtype="boolean")
                continue
            if all(isinstance(v, int) and not isinstance(v, bool) for v in present):
                data[name] = pd.Series(values, dtype="Int64")
                continue
        if present and any(isinstance(v, (list, dict)) for v in present):
            data[name] = pd.Series(values, dtype=object)
            continue
        data[name] = pd.Series(values) if present else pd.Series(values, dtype=object)
    return pd.DataFrame(data, columns=columns)


def result_to_pandas(result: object, doc_id: str | None = None) -> Any:
    """A ``pandas.DataFrame`` with one row per fact of one judged document.

    Columns: ``doc_id`` (``None`` unless given), ``side`` (``"gold"`` / ``"predicted"``), ``id``,
    ``fact_type``, ``status``, ``in_scope``, ``matched_ids`` (a list), ``description``,
    ``reasoning``, then the facts' own fields (an absent field is missing: None / NA), named by
    :func:`fact_column` (a fact's own ``doc_id`` is ``fact.doc_id``).
    ``result`` is a :class:`~factjudge.models.JudgeResult` or its ``to_dict()``.
    Raises :class:`OptionalDependencyError` (an ``ImportError``) without pandas."""
    import_pandas()
    return results_frame(list(result_rows(result, doc_id)))
