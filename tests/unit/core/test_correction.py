"""factjudge.core.correction: the extractor's figures corrected for the judge's measured link errors."""
import pytest
from hypo import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from judge_simulation import simulation

from factjudge.core.aggregate import bootstrap_ci, key_prf
from factjudge.core.correction import (
    JudgeCalibration,
    JudgeErrors,
    calibration_mismatch,
    corrected_prf,
    judge_corrected,
)


def test_worked_example_of_the_readme():
    # a lenient judge: 62 of its 100 links are true, it finds every true link (the #23 figures)
    errors = JudgeErrors(tp=62, fp=38, fn=0, tn=100)
    assert (errors.link_precision, errors.link_recall) == (0.62, 1.0)
    # raw: precision 80 / (80 + 20) = 0.80, recall 70 / (70 + 30) = 0.70, F1 0.747
    figures, capped = corrected_prf((80, 20, 70, 30), 0.62, 1.0)
    assert figures["precision"] == pytest.approx(0.496) and figures["recall"] == pytest.approx(0.434)
    assert figures["f1"] == pytest.approx(2 * 0.496 * 0.434 / (0.496 + 0.434)) == pytest.approx(0.46293, abs=1e-5)
    assert capped == []


def test_a_strict_judge_raises_the_figures_and_caps_them_at_1():
    # finds 60% of the true links and is right about 98% of those it makes: factor 0.98 / 0.6
    figures, capped = corrected_prf((50, 50, 80, 20), 0.98, 0.6)
    assert figures["precision"] == pytest.approx(0.5 * 0.98 / 0.6)
    assert figures["recall"] == 1.0 and capped == ["recall"]


def test_nothing_to_correct_with():
    with pytest.raises(ValueError, match="tp 0"):
        judge_corrected([(1, 1, 1, 1)], JudgeErrors(tp=0, fp=3, fn=2, tn=5))


def test_undefined_figures_stay_undefined():
    jc = judge_corrected([(0, 0, 0, 0)], JudgeErrors(10, 1, 1, 10), resamples=50)
    assert (jc.precision, jc.recall, jc.f1) == (None, None, None)
    assert jc.ci95 == {"precision": None, "recall": None, "f1": None}


keys_strategy = st.lists(st.tuples(*(st.integers(0, 6) for _ in range(4))), min_size=1, max_size=12)


@settings(max_examples=examples(60), deadline=None)
@given(keys_strategy, st.integers(0, 3))
def test_a_perfect_judge_changes_nothing(keys, seed):
    # a judge measured right on a million labels: the correction is the identity, and its interval
    # is the raw one (same resamples), up to the posterior's tiny spread
    jc = judge_corrected(keys, JudgeErrors(10**6, 0, 0, 10**6), resamples=100, seed=seed)
    totals = [sum(c) for c in zip(*keys, strict=True)]
    raw = key_prf(totals)
    assert (jc.precision, jc.recall, jc.f1) == (raw["precision"], raw["recall"], raw["f1"])
    raw_ci = bootstrap_ci(keys, 100, seed)
    for k, ci in raw_ci.items():
        if ci is None:
            assert jc.ci95[k] is None
        else:
            assert jc.ci95[k] == pytest.approx(ci, abs=1e-4)


def test_the_intervals_are_seeded():
    keys = [(3, 1, 2, 2), (1, 2, 1, 0), (4, 0, 4, 1)]
    errors = JudgeErrors(40, 10, 5, 45)
    assert judge_corrected(keys, errors, 200, 7) == judge_corrected(keys, errors, 200, 7)
    assert judge_corrected(keys, errors, 200, 7).ci95 != judge_corrected(keys, errors, 200, 8).ci95


def test_another_judge_or_config_is_named():
    cal = JudgeCalibration(JudgeErrors(5, 1, 1, 5), "cal.json", "llm",
                           {"name": "llm", "model": "qwen2.5-1.5b", "temperature": 0},
                           {"one_to_one": False, "link_policy": "either"})
    judge = {"name": "llm", "model": "qwen2.5-7b", "temperature": 0}
    config = {"one_to_one": False, "link_policy": "both"}
    warnings = calibration_mismatch(cal, judge, config)
    assert len(warnings) == 2
    assert "another judge (model 'qwen2.5-1.5b' there, 'qwen2.5-7b' here)" in warnings[0]
    assert "another config (link_policy 'either' there, 'both' here)" in warnings[1]
    assert calibration_mismatch(cal, cal.judge, cal.config) == []
    old = JudgeCalibration(JudgeErrors(5, 1, 1, 5), "cal.json", "rules")
    assert "another judge ('rules' there, 'llm' here)" in calibration_mismatch(old, judge, config)[0]
    assert "does not record" in calibration_mismatch(old, {"name": "rules"}, config)[0]


# --------------------------------------------------------------------------- coverage, simulated


@pytest.mark.slow
def test_the_corrected_interval_covers_the_true_f1():
    # 200 seeded simulations of a synthetic extractor and a judge of known error rates
    # (tests/judge_simulation.py), 80 documents each; 200 resamples keep this near 6 s. With 100
    # documents and 1,000 resamples: benchmarks/judge_correction.py
    runs = 200
    covered = raw_covered = 0
    for seed in range(runs):
        keys, errors, true_f1, _ = simulation(seed)
        low, high = judge_corrected(keys, errors, resamples=200, seed=seed).ci95["f1"]
        covered += low <= true_f1 <= high
        raw_low, raw_high = bootstrap_ci(keys, 100, seed)["f1"]
        raw_covered += raw_low <= true_f1 <= raw_high
    message = (f"corrected 95% interval covered the true F1 in {covered}/{runs} simulations, "
               f"the raw interval in {raw_covered}/{runs}")
    print(message)
    assert covered >= 0.93 * runs, message
    assert raw_covered < 0.5 * runs, message  # the raw interval is off: the judge errs
