"""Python and notebooks (#24): the library's warnings also go through Python's ``warnings``, once
each, and an eval run has a short repr and an HTML headline for a notebook cell."""
import warnings

import pytest
from evalkit import CONFIG, DOCS, fact, write_jsonl

from factjudge import evaluate_dataset, run_judge
from factjudge.errors import FactJudgeWarning


def caught(call):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        result = call()
    return result, [str(w.message) for w in seen if issubclass(w.category, FactJudgeWarning)]


def test_run_judge_issues_its_warnings_through_python_warnings_once_each():
    gold = [fact("g1", "Revenue", value="1"), fact("g2", "ceo", name="X", entity="A")]
    pred = [fact("p1", "revenue", value="1"), fact("p2", "ceo", name="X")]
    result, messages = caught(lambda: run_judge(gold, pred, {"entity_types": ["Revenue", "revenue", "ceo",
                                                                                "headquarter"]}))
    assert messages == result.warnings  # the same list, each once
    assert any("entity_types 'headquarter' matches no fact" in m for m in messages)
    assert any("differ only in case" in m for m in messages)
    assert any("ceo: gold facts carry entity" in m for m in messages)


def test_run_judge_warns_when_nothing_is_in_scope_instead_of_a_silent_zero():
    result, messages = caught(lambda: run_judge([fact("g1", value="1")], [fact("p1", value="1")],
                                                {"entity_types": ["revenu"]}))
    assert result.metrics.out_of_scope_gold == 1
    assert any("no fact is in scope" in m for m in messages)


def test_evaluate_dataset_issues_the_summary_warnings_and_alerts(tmp_path):
    data = write_jsonl(tmp_path / "d.jsonl", DOCS)
    run, messages = caught(lambda: evaluate_dataset(data, {**CONFIG, "entity_types": ["revenue", "ceo", "ceo_x"]}))
    assert len(messages) == len(set(messages))
    assert set(run.summary.warnings) <= set(messages)
    assert {a.message for a in run.summary.alerts} <= set(messages)
    assert any("'ceo_x'" in m for m in messages)


def test_a_clean_run_issues_no_warning(tmp_path):
    _, messages = caught(lambda: run_judge([fact("g1", value="1")], [fact("p1", value="1")], {}))
    assert messages == []


def test_eval_run_repr_is_one_short_line(tmp_path):
    data = write_jsonl(tmp_path / "d.jsonl", DOCS)
    run = evaluate_dataset(data, CONFIG)
    m = run.summary.micro
    text = repr(run)
    assert "\n" not in text and len(text) < 200
    assert text.startswith(f"EvalRun(P {m.precision:.3f} R {m.recall:.3f} F1 {m.f1:.3f} (micro) | 5 documents, ")
    assert f"{m.tp_gold + m.fn + m.tp_predicted + m.fp + m.errors} in-scope facts, 0 ERROR" in text


def test_eval_run_html_is_the_headline_table_escaped(tmp_path):
    docs = [{"doc_id": "a", "gold_facts": [fact("g1", "<b>Rev</b>", value="1")],
             "predicted_facts": [fact("p1", "<b>rev</b>", value="1")]}]
    run = evaluate_dataset(write_jsonl(tmp_path / "d.jsonl", docs))
    page = run._repr_html_()
    assert "<table>" in page and "micro 95% CI" in page and "macro" in page
    assert "&lt;b&gt;Rev&lt;/b&gt;" in page and "<b>Rev" not in page  # the alert, escaped
    assert 'role="alert"' in page


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FactJudgeWarning)
        yield
