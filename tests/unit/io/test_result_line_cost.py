"""Issue 39: a result line writes a document's facts with json.dumps as they are, not through
pydantic's JSON dump of them first (~20 us of a 20-fact document's line), byte for byte the line
pydantic's dump gave; where the two would differ (a None key: "None" against "null", a NaN, a
value json cannot write) the line is still pydantic's."""
from __future__ import annotations

import datetime
import json
from typing import Any

import pytest

from factjudge import run_judge
from factjudge.io.runfolder import result_line
from factjudge.judges.rules.judge import RulesJudge
from factjudge.models import JudgeResult


def _pydantic_line(result: JudgeResult) -> bytes:
    """The line as pydantic's dump of the whole result gives it (what result_line wrote before)."""
    line = {"doc_id": "d1", "input_sha256": "a" * 64, **result.model_dump(mode="json", exclude={"config"})}
    return (json.dumps(line, ensure_ascii=False) + "\n").encode("utf-8")


def _result(extra: dict[str, Any]) -> JudgeResult:
    gold = [{"id": "g1", "fact_type": "revenue", "company": "Ächme ☃ \"Inc\"", "value": "1,234.5",
             "line_items": [{"sku": "a", "qty": 2, "price": 1.5e-7}, None, True], "period": "FY2021"},
            {"id": "g2", "fact_type": "ceo", "company": "Acme", "person": "Wei"}]
    predicted = [{"id": "p1", "fact_type": "revenue", "company": "Acme Inc", "value": "1,234.5",
                  "line_items": [{"sku": "a", "qty": 2, "price": 1.5e-7}, None, True], "period": "FY2021"},
                 {"id": "p2", "fact_type": "ceo", "company": "Acme", "person": "Wei Li"}]
    result = run_judge(gold, predicted, {}, RulesJudge())
    result.gold_facts[1].update(extra)  # after judging: a fact of any content (a Python caller's)
    return result


@pytest.mark.parametrize("extra", [
    {}, {"null": "a field named null"}, {"note": '"null": in a string'}, {"n": 12345678901234567890},
    {"x": -0.0, "y": 1e16, "z": [1.5, float(2)]},
    {"nested": {None: "a None key"}},  # pydantic: "None"; json.dumps: "null"
    {"f": float("nan")}, {"when": datetime.date(2024, 3, 1)}, {"tags": ("a", "b")},
], ids=["plain", "null-name", "null-text", "long-int", "floats", "none-key", "nan", "date", "tuple"])
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_result_line_is_the_bytes_pydantic_s_dump_gave(extra: dict[str, Any]) -> None:
    result = _result(extra)
    assert result_line("d1", "a" * 64, result) == _pydantic_line(result)


def test_a_result_line_leaves_the_facts_out_of_pydantic_s_dump(monkeypatch: pytest.MonkeyPatch) -> None:
    excluded: list[set[str]] = []
    dump = JudgeResult.model_dump

    def recording(self: JudgeResult, **kwargs: Any) -> dict[str, Any]:
        excluded.append(set(kwargs.get("exclude") or ()))
        return dump(self, **kwargs)

    plain, none_key = _result({}), _result({"nested": {None: 1}})
    monkeypatch.setattr(JudgeResult, "model_dump", recording)
    result_line("d1", "a" * 64, plain)
    assert excluded == [{"config", "gold_facts", "predicted_facts"}]  # before: {"config"}, the facts dumped
    excluded.clear()
    result_line("d1", "a" * 64, none_key)
    assert excluded[-1] == {"config"}  # a None key: the line is pydantic's, "None" as ever
    assert b'"None": 1' in result_line("d1", "a" * 64, none_key)


def test_a_circular_value_fails_as_pydantic_s_dump_does() -> None:
    """The line is written without json's check for circular references (a line's values are
    trees): a circular value of a Python caller's still falls back to pydantic's dump, and fails
    with its error, as before (not a RecursionError)."""
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular reference detected"):
        result_line("d1", "a" * 64, _result({"loop": loop}))
