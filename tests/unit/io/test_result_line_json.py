"""Issue 39: a result line is pydantic's compact JSON of the document's result (65 us a 20-fact
document's line against 149 us for json.dumps with spaces), the values and their order those of
the line json wrote before; where JSON has no form for a value (a None key, a NaN, a date) it is
written as before, pydantic's way. Lines are read back by pydantic-core's parser, json's where that
refuses a text."""
from __future__ import annotations

import datetime
import json
from typing import Any

import pytest

from factjudge import run_judge
from factjudge.io.runfolder import result_line
from factjudge.judges.rules.judge import RulesJudge
from factjudge.models import JudgeResult
from factjudge.util.jsonutil import parse_written


def _spaced_line(result: JudgeResult) -> bytes:
    """The line as it was written before: pydantic's dump of the result, then json.dumps."""
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
def test_a_result_line_holds_the_values_the_spaced_line_held(extra: dict[str, Any]) -> None:
    result = _result(extra)
    line, before = result_line("d1", "a" * 64, result), _spaced_line(result)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    # the same values in the same order (json.dumps of both parsed: dict order included)
    assert json.dumps(json.loads(line)) == json.dumps(json.loads(before))
    assert parse_written(line) == json.loads(line)
    assert line.startswith(b'{"doc_id":"d1","input_sha256":"' + b"a" * 64 + b'","gold_facts":[')
    assert len(line) < len(before)  # compact: no space after a separator


@pytest.mark.parametrize("text", [
    '{"a": [1, 2.5, -0.0, 1e+16, 1e-05, 12345678901234567890], "b": {"c": null, "d": true}, "\u00e4": "\u2603"}',
    '{"a": 1, "a": 2}',  # the last of a key given twice, as json
    '{"s": "\\ud800 half a pair"}',  # a lone surrogate escape: pydantic-core refuses it
    "[" * 300 + "]" * 300,  # nested deeper than pydantic-core reads
    '{"f": NaN, "g": -Infinity}',
], ids=["values", "twice", "surrogate", "deep", "nan"])
def test_factjudge_s_own_json_is_read_as_json_reads_it(text: str) -> None:
    expected = json.loads(text)
    got = parse_written(text.encode())
    assert json.dumps(got) == json.dumps(expected)


def test_text_that_is_not_json_fails_with_json_s_error() -> None:
    with pytest.raises(json.JSONDecodeError):
        parse_written(b'{"a": ')



def test_a_circular_value_fails_as_pydantic_s_dump_does() -> None:
    """A circular value of a Python caller's fails with pydantic's error, as it did before."""
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular reference detected"):
        result_line("d1", "a" * 64, _result({"loop": loop}))
