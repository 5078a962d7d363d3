"""Issue 39: what the pipeline pays per verdict of a rules run. Neither the contract check of a
verdict nor the rules judge's question builds a JudgeTask per fact (two a fact before; the
compared fields are worked out once per fact_type and direction), and the check for
ambiguous numbers and dates reads a value repeated across documents once; results unchanged."""
from __future__ import annotations

import re
from typing import Any

import pytest
from calls import count_calls

from factjudge.core import scope
from factjudge.errors import FactJudgeWarning
from factjudge.evaluation import pipeline
from factjudge.evaluation.pipeline import run_judge
from factjudge.judges.base import JudgePass
from factjudge.judges.rules.judge import RulesJudge
from factjudge.models import VERDICT_KEY, JudgeConfig


def _document() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    gold = [{"id": f"g{k}", "fact_type": "revenue", "company": "Acme Inc.", "period": f"FY{2010 + k}",
             "value": f"1,{100 + k}", "unit": "USD million"} for k in range(5)]
    gold += [{"id": "g9", "fact_type": "ceo", "company": "Acme Inc.", "person": "Wei Okafor"}]
    predicted = [{**f, "id": f"p{f['id'][1:]}"} for f in gold]
    return gold, predicted


def test_a_rules_run_builds_a_task_per_fact_type_not_per_subject(monkeypatch: pytest.MonkeyPatch) -> None:
    built = count_calls(monkeypatch, JudgePass, "task")
    gold, predicted = _document()
    with pytest.warns(FactJudgeWarning, match="decimal_separator"):
        result = run_judge(gold, predicted, JudgeConfig(), RulesJudge())
    assert [f[VERDICT_KEY]["matched_ids"] for f in result.gold_facts] == [[f["id"]] for f in predicted]
    assert result.metrics.f1 == 1.0
    # every fact matched: no analysis ranks anything. One task per fact_type and direction, for its
    # compared fields (2 x 2); before: one per rules question and per verdict's contract check, 24
    assert built[0] == 4


class _Counted:
    def __init__(self, pattern: re.Pattern[str], calls: list[int]) -> None:
        self.pattern, self.calls = pattern, calls

    def fullmatch(self, value: str) -> re.Match[str] | None:
        self.calls[0] += 1
        return self.pattern.fullmatch(value)


def test_a_value_repeated_across_documents_is_matched_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = [0]
    for name in ("_AMBIGUOUS_NUMBER", "_AMBIGUOUS_DATE"):
        monkeypatch.setattr(scope, name, _Counted(getattr(scope, name), calls))
    scope._ambiguous_short.cache_clear()
    gold, predicted = _document()
    fields, _ = scope.compared_fields(gold, predicted, JudgeConfig())
    warned = [scope.read_by_default(gold, predicted, JudgeConfig(), fields) for _ in range(3)]
    assert warned[0] == warned[1] == warned[2] and "decimal_separator" in warned[0][0]
    # 13 distinct values, a date pattern and a number pattern each (before: 3 x 64)
    assert calls[0] == 26
    assert scope.read_by_default(gold, predicted, JudgeConfig(date_order="DMY"), fields) == warned[0]
    assert calls[0] == 26
    # a long value is never kept (a 30 MB text would stay in memory): nor ambiguous
    assert scope._ambiguous("1,234" + " " * 40) is None and scope._ambiguous_short.cache_info().currsize == 13


def test_a_document_s_scope_checks_work_out_the_fields_once_per_fact_type(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = count_calls(monkeypatch, scope, "fact_fields")
    gold, predicted = _document()
    predicted.append({"id": "p7", "fact_type": "city", "company": None, "city": None})
    config = JudgeConfig()
    fields, _ = scope.compared_fields(gold, predicted, config)
    assert scope.nothing_to_compare(gold, predicted, config, fields)[0].startswith("city: 1 fact had nothing")
    assert "decimal_separator" in scope.read_by_default(gold, predicted, config, fields)[0]
    # revenue and ceo once each per check; the city fact (no gold of its type) its own fields
    # (before: one per fact, 2 x 13)
    assert calls[0] == 2 * 3


def test_a_document_s_scope_warnings_come_from_one_pass_over_its_facts(monkeypatch: pytest.MonkeyPatch) -> None:
    """nothing_to_compare's and read_by_default's warnings from one walk of the facts (each
    walked them and worked out their fields), the same warnings in the same order."""
    gold, predicted = _document()
    predicted.append({"id": "p7", "fact_type": "city", "company": None, "city": None})
    calls = count_calls(monkeypatch, scope, "fact_fields")
    # the pipeline's field counts asked fact_fields under a name of their own before: counted too
    monkeypatch.setattr(pipeline, "fact_fields", scope.fact_fields, raising=False)
    with pytest.warns(FactJudgeWarning):
        result = run_judge(gold, predicted, JudgeConfig(), RulesJudge())
    assert result.warnings[-2].startswith("city: 1 fact had nothing") and "decimal_separator" in result.warnings[-1]
    # revenue, ceo, the city fact for the scope checks (before: 6, the two checks' own walks), and
    # the same three for the field-level counts (before: 7, one per counted fact)
    assert calls[0] == 3 + 3


@pytest.mark.parametrize("config", [JudgeConfig(), JudgeConfig(date_order="DMY"),
                                    JudgeConfig(decimal_separator=".", date_order="MDY"),
                                    JudgeConfig(fields=["value"])])
def test_scope_warnings_are_the_two_checks_warnings(config: JudgeConfig) -> None:
    gold, predicted = _document()
    gold.append({"id": "g8", "fact_type": "deal", "date": "03/04/2024", "value": None})
    predicted += [{"id": "p7", "fact_type": "city", "company": None, "city": None},
                  {"id": "p8", "fact_type": "deal", "date": None, "value": None},
                  {"id": "p9", "fact_type": "deal", "date": "03/04/2024", "value": [1, {"a": "1,234"}]}]
    for g, p in ((gold, predicted), (gold[:1], predicted[-2:]), ([], predicted), (gold, [])):
        fields, _ = scope.compared_fields(g, p, config)
        assert scope.scope_warnings(g, p, config, fields) == (
            scope.nothing_to_compare(g, p, config, fields) + scope.read_by_default(g, p, config, fields))


def test_a_document_without_merges_or_splits_reads_no_gold_fact_s_links(monkeypatch: pytest.MonkeyPatch) -> None:
    """Merges and splits: only a prediction's links are read when reconciliation dropped none
    (every fact's links and type were copied first), and the analysis is the same."""
    from factjudge.core import analysis

    gold, predicted = _document()
    predicted[1]["value"] = "9,999"  # an FN and an FP: near misses are looked for too
    judged = _judged(gold, predicted)
    calls = count_calls(monkeypatch, analysis, "verdict_of")
    merges, splits = analysis._granularity(*judged)
    assert (merges, splits) == ([], [])
    assert calls[0] == len(predicted)  # before: 12, each fact's links


def _judged(gold: list[dict[str, Any]], predicted: list[dict[str, Any]]) -> tuple[Any, Any, Any]:
    with pytest.warns(FactJudgeWarning):
        result = run_judge(gold, predicted, JudgeConfig(), RulesJudge())
    assert result.analysis.near_misses[0].gold == "g1"
    return result.gold_facts, result.predicted_facts, []


def test_a_rules_run_adds_no_verdict_s_zero_usage(monkeypatch: pytest.MonkeyPatch) -> None:
    """A rules verdict costs nothing (no call, no token): adding its usage to the document's
    summed zeros, ~0.7% of a worker's CPU; the document's usage is the same."""
    from factjudge.models import CallUsage

    added = count_calls(monkeypatch, CallUsage, "add")
    gold, predicted = _document()
    with pytest.warns(FactJudgeWarning, match="decimal_separator"):
        result = run_judge(gold, predicted, JudgeConfig(), RulesJudge())
    assert added[0] == 0  # before: 12, one a verdict
    usage = result.usage.model_dump(mode="json")
    assert usage["llm_calls"] == usage["prompt_tokens"] == usage["cache_hits"] == 0
