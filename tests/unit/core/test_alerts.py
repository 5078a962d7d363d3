"""The likely mistakes found from a run's inputs (factjudge.core.alerts): pure functions."""
from factjudge.core.alerts import case_mismatches, empty_sides, run_alerts, shape_of
from factjudge.models import Counts, JudgeConfig


def f(t):
    return {"id": "x", "fact_type": t}


def test_types_differing_in_case_or_separators_are_named_and_equal_ones_are_not():
    shape = shape_of([f("Net Income"), f("ceo"), f("Revenue")], [f("net_income"), f("ceo"), f("Revenue"), f("revenue")])
    assert [m.split(" differ")[0] for m in case_mismatches(shape)] == [
        "fact_type 'Net Income' (gold) and 'net_income' (predicted)"]


def test_an_empty_side_is_named_only_when_the_other_has_facts():
    assert empty_sides(shape_of([], [])) == []
    assert empty_sides(shape_of([f("a")], [f("a")])) == []
    assert empty_sides(shape_of([], [f("a")]))[0].startswith("no gold facts at all")


def test_a_clean_run_has_no_alert():
    shape = shape_of([f("a")], [f("a")])
    assert run_alerts(JudgeConfig(entity_types=["a"]), shape, Counts(tp_gold=1, tp_predicted=1), 0) == []
    alerts = run_alerts(JudgeConfig(entity_types=["a", "b"]), shape, Counts(tp_gold=1, tp_predicted=1), 0)
    assert [a.kind for a in alerts] == ["entity_types"] and "no fact is out of scope" in alerts[0].message
