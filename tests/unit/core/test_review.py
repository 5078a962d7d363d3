"""core/review.py: the figures with a person's verdicts in place of the judge's, counted by hand;
the reviews an interval width needs; a run's identity."""
import pytest

from factjudge.core.review import Review, identity_mismatch, reviewed_figures, reviews_needed, run_identity


def g(fid, status, *matched):
    return {"id": fid, "fact_type": "t", "status": status, "matched_ids": list(matched)}


# g1 is linked to p1 and p2 (a merge), g2 to p3; g3 FN beside p4 FP; p5 FP alone; g4 out of scope
LINE = {"doc_id": "D",
        "gold_facts": [g("g1", "TP", "p1", "p2"), g("g2", "TP", "p3"), g("g3", "FN"), g("g4", "OUT_OF_SCOPE")],
        "predicted_facts": [g("p1", "TP", "g1"), g("p2", "TP", "g1"), g("p3", "TP", "g2"), g("p4", "FP"),
                            g("p5", "FP")]}


def test_no_review_gives_the_judges_counts():
    f = reviewed_figures([LINE], [])
    assert (f.tp_predicted, f.fp, f.tp_gold, f.fn) == (3, 2, 2, 1)


def test_the_persons_verdicts_replace_the_judges_counted_by_hand():
    reviews = [
        Review("D", "link", "wrong", "g1", "p1"),  # g1 stays TP through p2; p1 becomes FP
        Review("D", "link", "wrong", "g2", "p3"),  # g2 FN, p3 FP
        Review("D", "miss", "wrong", "g3", "p4"),  # g3 and p4 linked: TP both
        Review("D", "extra", "omission", None, "p5", {}),  # p5 true: TP, and a gold fact added
        Review("D", "link", "right", "g1", "p2", {"v": "x"}),
        Review("other", "link", "wrong", "g1", "p1"),  # another document's: changes nothing here
    ]
    f = reviewed_figures([LINE], reviews)
    # predicted: p2 p4 p5 TP, p1 p3 FP; gold: g1 g3 + the added one TP, g2 FN
    assert (f.tp_predicted, f.fp, f.tp_gold, f.fn) == (3, 2, 3, 1)
    assert (f.precision, f.recall) == (0.6, 0.75)
    # the judge's links against the person's, on this run's documents: 2 wrong links (fp), 1 right
    # (tp), the wrong miss (fn); the omission has no pair
    assert f.agreement == {"tp": 1, "fp": 2, "fn": 1, "tn": 0}
    assert f.by_verdict == {"wrong": 4, "omission": 1, "right": 1}
    assert (f.gold_corrections, f.omissions, f.reviewed) == (1, 1, 6)


def test_reviews_needed_follows_the_delta_method():
    # p = r = 0.9, raw 0.72: 2 * (1/9 + 1/9) * (1.96 * 0.72 / 0.05)^2
    assert reviews_needed(0.72, 0.9, 0.9, 0.10) == 355
    assert reviews_needed(0.72, 0.9, 0.9, 0.05) == 1417  # half the width: four times the reviews
    # no error seen yet is no certainty: a rate of 1 counts as 0.97
    assert reviews_needed(0.72, 1.0, 1.0, 0.10) == reviews_needed(0.72, 0.97, 0.97, 0.10) > 1


def test_an_identity_names_what_differs():
    run = run_identity({"name": "rules"}, {"a": 1}, [("A", "h1")])
    assert run_identity({"name": "rules"}, {"a": 1}, [("A", "h1")]) == run
    assert identity_mismatch(run, run) is None
    other = run_identity({"name": "rules"}, {"a": 2}, [("A", "h2")])
    assert "different config, inputs" in identity_mismatch(other, run)


@pytest.mark.parametrize("kind,verdict,match", [("link", "right", True), ("link", "wrong", False),
                                                ("miss", "wrong", True), ("extra", "right", False),
                                                ("extra", "omission", False)])
def test_the_persons_match_of_a_pair(kind, verdict, match):
    assert Review("D", kind, verdict, "g", "p").match is match
    assert Review("D", kind, verdict, None, "p").match is None
