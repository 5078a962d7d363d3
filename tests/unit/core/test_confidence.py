"""The extractor's confidence against the verdicts (core/confidence.py): the figures against a hand
computation, AUROC's invariance under a monotone transform, hostile values, and the confidence
field kept out of the compared fields."""
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from factjudge.core.aggregate import Aggregator, doc_stats
from factjudge.core.confidence import (
    auroc,
    brier,
    corrected,
    detect_field,
    doc_confidence,
    ece,
    read_confidence,
    reliability_bins,
    review_rows,
    threshold_rows,
)
from factjudge.core.scope import compared_fields
from factjudge.models import JudgeConfig

# Four correct predictions (TP) and three wrong ones (FP).
CORRECT = [0.9, 0.8, 0.8, 0.6]
WRONG = [0.8, 0.3, 0.1]


def test_auroc_counts_pairs_with_ties_as_half():
    # 12 (correct, wrong) pairs. 0.9 beats all 3; each 0.8 beats 0.3 and 0.1 and ties 0.8 (1/2):
    # 2.5 twice; 0.6 beats 0.3 and 0.1: 2. (3 + 5 + 2) / 12.
    assert auroc(CORRECT, WRONG) == pytest.approx(10 / 12)
    assert auroc([0.5], [0.5]) == 0.5
    assert auroc(CORRECT, []) is None and auroc([], WRONG) is None


def test_ece_over_ten_equal_width_bins_and_brier():
    bins = reliability_bins(CORRECT, WRONG)
    assert [(b.low, b.high) for b in bins] == [(i / 10, (i + 1) / 10) for i in range(10)]
    filled = {round(b.low, 1): (b.predictions, b.confidence, b.accuracy) for b in bins if b.predictions}
    # 0.1 and 0.3 and 0.6 alone; 0.8 x3 (two correct); 0.9 alone (0.9 is in [0.9, 1.0])
    assert filled == {0.1: (1, 0.1, 0.0), 0.3: (1, 0.3, 0.0), 0.6: (1, 0.6, 1.0),
                      0.8: (3, pytest.approx(0.8), pytest.approx(2 / 3)), 0.9: (1, 0.9, 1.0)}
    # gaps |accuracy - confidence| weighted by the bin's share of the 7 predictions:
    # 0.1 + 0.3 + 0.4 + 3 * (0.8 - 2/3) + 0.1 = 1.3, over 7
    assert ece(bins) == pytest.approx(1.3 / 7)
    # (1 - c)^2 for the correct ones, w^2 for the wrong: (0.01 + 0.04 + 0.04 + 0.16) + (0.64 + 0.09 + 0.01)
    assert brier(CORRECT, WRONG) == pytest.approx(0.99 / 7)
    assert [b.predictions for b in reliability_bins([1.0, 0.0], [])][::9] == [1, 1]  # 1.0 in the last bin


def test_thresholds_keep_the_predictions_at_or_above_the_cut():
    # 5 gold facts judged TP or FN; three are linked to predictions of best confidence 0.6, 0.8, 0.9
    rows = {r.threshold: r for r in threshold_rows(sorted(CORRECT), sorted(WRONG), [0.6, 0.8, 0.9], 5)}
    assert (rows[0.5].kept_predictions, rows[0.5].precision, rows[0.5].recall) == (5, 0.8, 0.6)
    assert (rows[0.8].kept_predictions, rows[0.8].precision, rows[0.8].recall) == (4, 0.75, 0.4)
    assert (rows[0.9].kept, rows[0.9].precision, rows[0.9].recall) == (pytest.approx(1 / 7), 1.0, 0.2)
    assert (rows[0.95].kept_predictions, rows[0.95].precision, rows[0.95].recall) == (0, None, 0.0)


def test_review_takes_the_lowest_confidence_first_ties_in_random_order():
    rows = {r.share_reviewed: r for r in review_rows(sorted(CORRECT), sorted(WRONG))}
    assert (rows[0.1].reviewed, rows[0.1].errors_caught) == (1, pytest.approx(1 / 3))  # 0.1: wrong
    assert (rows[0.3].reviewed, rows[0.3].errors_caught) == (2, pytest.approx(2 / 3))  # 0.1, 0.3
    # 4 of 7 (round(3.5)): 0.1, 0.3, 0.6, then one of the three 0.8s, one of which is wrong
    assert (rows[0.5].reviewed, rows[0.5].errors_caught) == (4, pytest.approx((2 + 1 / 3) / 3))


def _pairs(correct, wrong):
    """AUROC by the definition: every pair, a tie 1/2."""
    return sum((c > w) + (c == w) / 2 for c in correct for w in wrong) / (len(correct) * len(wrong))


# confidences on a grid of 1/1000, so a strictly increasing transform keeps distinct values distinct
grid = st.lists(st.integers(0, 1000).map(lambda i: i / 1000), min_size=1, max_size=40)


@given(grid, grid)
def test_auroc_is_pair_counting_and_invariant_under_a_monotone_transform(correct, wrong):
    assert auroc(correct, wrong) == pytest.approx(_pairs(correct, wrong))
    for transform in (lambda x: x * x, math.sqrt, lambda x: 0.2 + 0.5 * x ** 3):
        assert auroc([transform(c) for c in correct], [transform(w) for w in wrong]) == \
            pytest.approx(auroc(correct, wrong))


@pytest.mark.parametrize(("value", "expected"), [
    (0.9, 0.9), (1, 1.0), (0, 0.0), ("0.9", 0.9), (" 0.25 ", 0.25),
    ("high", None), (-1, None), (2, None), (float("nan"), None), ("NaN", None), (float("inf"), None),
    ("", None), (True, None), (None, None), ([0.5], None), ({"p": 0.5}, None),
])
def test_a_confidence_is_a_number_in_0_1_or_nothing(value, expected):
    assert read_confidence(value) == expected


def _line(predicted, gold=()):
    return {"doc_id": "d", "metrics": {}, "gold_facts": list(gold), "predicted_facts": predicted}


def test_hostile_values_count_as_without_a_confidence_named_once():
    predicted = [{"id": "p1", "status": "TP", "confidence": 0.9},
                 {"id": "p2", "status": "FP", "confidence": "high"},
                 {"id": "p3", "status": "FP", "confidence": -1},
                 {"id": "p4", "status": "TP"},
                 {"id": "p5", "status": "ERROR", "confidence": 0.7},  # no verdict: left out
                 {"id": "p6", "status": "OUT_OF_SCOPE", "confidence": 2}]
    doc = doc_confidence(_line(predicted))
    assert (doc.name, doc.correct, doc.wrong, doc.missing, doc.invalid) == ("confidence", [0.9], [], 3, 2)
    agg = Aggregator()
    agg.add(doc_stats({**_line(predicted), "doc_id": "d1", "metrics": {}}))
    agg.add(doc_stats({**_line(predicted), "doc_id": "d2", "metrics": {}}))
    [warning] = agg.confidence.warnings()
    assert warning.startswith("confidence: 4 predicted facts carry a confidence that is not a number in [0, 1] "
                              "(first: 'high' in document 'd1')")
    summary = agg.summary(resamples=10).confidence
    assert (summary.predictions, summary.without_confidence, summary.invalid) == (2, 6, 4)
    assert summary.auroc is None and summary.ece == pytest.approx(0.1)


def test_the_confidence_field_is_found_by_name_unless_gold_facts_carry_it():
    pred, gold = [{"id": "p", "score": 0.5, "probability": 0.2}], [{"id": "g", "score": 3}]
    assert detect_field(pred, []) == "score"
    assert detect_field(pred, gold) == "probability"  # a gold fact's score is something it states
    assert detect_field([{"id": "p", "value": 1}], []) is None
    assert detect_field(pred, gold, named="conf") == "conf"


def test_summary_has_no_confidence_when_no_prediction_carries_one():
    agg = Aggregator()
    agg.add(doc_stats(_line([{"id": "p", "status": "TP", "value": 1}])))
    assert agg.summary(resamples=10).confidence is None
    assert "confidence" not in agg.summary(resamples=10).model_dump(mode="json")


def test_documents_without_any_confidence_count_as_without_one():
    agg = Aggregator()
    agg.add(doc_stats({**_line([{"id": "p1", "status": "TP", "score": 0.9}]), "doc_id": "a"}))
    agg.add(doc_stats({**_line([{"id": "p2", "status": "FP"}]), "doc_id": "b"}))
    summary = agg.summary(resamples=10).confidence
    assert (summary.field, summary.predictions, summary.without_confidence) == ("score", 1, 1)


def test_recall_follows_the_gold_facts_links_to_kept_predictions():
    gold = [{"id": "g1", "status": "TP", "matched_ids": ["p1", "p2"]}, {"id": "g2", "status": "FN"},
            {"id": "g3", "status": "TP", "matched_ids": ["p3"]}]
    predicted = [{"id": "p1", "status": "TP", "confidence": 0.55}, {"id": "p2", "status": "TP", "confidence": 0.95},
                 {"id": "p3", "status": "TP"}]
    doc = doc_confidence(_line(predicted, gold))
    assert (doc.recalled, doc.gold) == ([0.95], 3)  # g1's best link; g3's link has no confidence


def test_judge_corrected_figures_scale_each_share_of_correct_predictions():
    agg = Aggregator()
    agg.add(doc_stats(_line([{"id": "p1", "status": "TP", "confidence": 0.95},
                             {"id": "p2", "status": "FP", "confidence": 0.95}])))
    c = agg.summary(resamples=10).confidence
    fixed = corrected(c, link_precision=0.9, link_recall=0.6)  # factor 1.5: accuracy 0.5 -> 0.75
    assert fixed["factor"] == pytest.approx(1.5)
    assert fixed["ece"] == pytest.approx(abs(0.75 - 0.95))
    assert {r["threshold"]: r["precision"] for r in fixed["thresholds"]}[0.9] == pytest.approx(0.75)
    assert corrected(c, 0.9, 0.3)["thresholds"][0]["precision"] == 1.0  # capped


def test_the_confidence_is_never_a_compared_field():
    gold = [{"id": "g", "fact_type": "person", "name": "Ann", "conf": 1.0}]
    predicted = [{"id": "p", "fact_type": "person", "name": "Ann", "conf": 0.4}]
    fields, _ = compared_fields(gold, predicted, JudgeConfig(confidence_field="conf"))
    assert fields == {"person": ("name",)}
    fields, _ = compared_fields(gold, predicted, JudgeConfig())  # not named: gold carries it, a fact field
    assert fields == {"person": ("name", "conf")}
    gold, predicted = [{**gold[0]}], [{**predicted[0], "score": 0.4}]
    del gold[0]["conf"], predicted[0]["conf"]
    fields, warnings = compared_fields(gold, predicted, JudgeConfig())
    assert fields == {"person": ("name",)} and warnings == []  # no "predicted facts carry score" warning


def test_a_document_without_confidences_reads_no_prediction_s_value(monkeypatch):
    # the finishing pass's common case (issue #39): the same counts as when a named field is
    # absent from every fact, without a prediction's value read (one read per TP or FP before)
    from calls import count_calls

    from factjudge.core import confidence

    predicted = [{"id": "p1", "status": "TP"}, {"id": "p2", "status": "FP"}, {"id": "p3", "status": "ERROR"},
                 {"id": "p4", "factjudge": {"status": "TP"}}, {"id": "p5", "status": "OUT_OF_SCOPE"}]
    gold = [{"id": "g1", "status": "TP", "matched_ids": ["p1"]}, {"id": "g2", "status": "FN"},
            {"id": "g3", "factjudge": {"status": "TP", "matched_ids": ["p4", "p9"]}}, {"id": "g4", "status": "ERROR"}]
    named = doc_confidence(_line(predicted, gold), named="conf")
    reads = count_calls(monkeypatch, confidence, "read_confidence")
    doc = doc_confidence(_line(predicted, gold))
    assert reads == [0]
    assert doc.name is None and (doc.correct, doc.wrong, doc.recalled) == ([], [], [])
    assert (doc.gold, doc.missing, doc.invalid, doc.first_invalid) == (named.gold, named.missing, 0, None)
    assert (doc.gold, doc.missing) == (3, 3)
