"""The data that crosses a boundary (pydantic), a module by what it holds:

- :mod:`.statuses`: the directions, the statuses and the verdict factjudge adds to an output fact and its accessors;
- :mod:`.config`: the judge config file (:class:`JudgeConfig`) and its parts;
- :mod:`.usage`: what judging cost (:class:`CallUsage`, :class:`Usage`, :class:`Prices`);
- :mod:`.analysis`: where the errors are (categories, near misses, merges, splits);
- :mod:`.results`: a pass's :class:`Verdict`, the counts and a document's :class:`JudgeResult`;
- :mod:`.frames`: results as tables (the columns, one row per fact, pandas DataFrames).

Every public name is importable from here (``from factjudge.models import JudgeConfig``).
"""
from .analysis import (
    CATEGORIES,
    Analysis,
    CategoryCounts,
    FactCategory,
    FieldCounts,
    FieldScore,
    Merge,
    NearMiss,
    Split,
    fact_category,
)
from .config import AliasGroup, ColumnName, JudgeConfig, Number, RulesKnowledge, Tolerance, alias_values
from .frames import (
    ADDED_COLUMNS,
    ANALYSIS_COLUMNS,
    FACT_COLUMNS,
    fact_column,
    import_pandas,
    line_analysis,
    result_rows,
    result_to_pandas,
    results_frame,
)
from .results import (
    QUOTE_LIMIT,
    REASONING_LIMIT,
    VERDICT_TEXT_LIMIT,
    Counts,
    JudgeResult,
    Metrics,
    Verdict,
    cut_text,
    quoted,
)
from .statuses import (
    DIRECTIONS,
    OUTPUT_FIELDS,
    PASS_STATUSES,
    VERDICT_KEY,
    Direction,
    NegativeStatus,
    PassStatus,
    Status,
    own_fields,
    status_of,
    verdict_of,
)
from .usage import CallUsage, Prices, Usage, money

__all__ = [
    "Direction",
    "NegativeStatus",
    "PassStatus",
    "DIRECTIONS",
    "PASS_STATUSES",
    "Status",
    "OUTPUT_FIELDS",
    "VERDICT_KEY",
    "verdict_of",
    "status_of",
    "own_fields",
    "Number",
    "Tolerance",
    "ColumnName",
    "alias_values",
    "AliasGroup",
    "RulesKnowledge",
    "JudgeConfig",
    "CallUsage",
    "Prices",
    "money",
    "Usage",
    "FactCategory",
    "CATEGORIES",
    "CategoryCounts",
    "NearMiss",
    "Merge",
    "Split",
    "Analysis",
    "FieldCounts",
    "FieldScore",
    "fact_category",
    "REASONING_LIMIT",
    "QUOTE_LIMIT",
    "VERDICT_TEXT_LIMIT",
    "cut_text",
    "quoted",
    "Verdict",
    "Counts",
    "Metrics",
    "JudgeResult",
    "ANALYSIS_COLUMNS",
    "FACT_COLUMNS",
    "ADDED_COLUMNS",
    "fact_column",
    "import_pandas",
    "result_rows",
    "line_analysis",
    "results_frame",
    "result_to_pandas",
]
