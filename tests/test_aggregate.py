"""Aggregation over documents (pure): macro averages by the convention a user chooses."""
import pytest

from factjudge.aggregate import DocStats, aggregate

ZERO = {"errors": 0, "out_of_scope_gold": 0, "out_of_scope_predicted": 0}


def doc(name, tp_predicted, fp, tp_gold, fn):
    counts = {"tp_predicted": tp_predicted, "fp": fp, "tp_gold": tp_gold, "fn": fn, **ZERO}
    return DocStats(name, counts, {}, {}, {})


# A: P 1/2, R 1/1 | B: no predictions (P undefined), R 0/2 | C: nothing at all (P, R undefined)
DOCS = [doc("A", 1, 1, 1, 0), doc("B", 0, 0, 0, 2), doc("C", 0, 0, 0, 0)]


@pytest.mark.parametrize("zero_division, precision, recall, f1", [
    ("skip", 0.5, 0.5, 2 / 3),                      # only the defined values: P of A; R of A, B
    ("0", (0.5 + 0 + 0) / 3, (1 + 0 + 0) / 3, (2 / 3 + 0 + 0) / 3),
    ("1", (0.5 + 1 + 1) / 3, (1 + 0 + 1) / 3, (2 / 3 + 0 + 1) / 3),   # B: P 1, R 0 -> F1 0
])
def test_macro_follows_the_chosen_zero_division(zero_division, precision, recall, f1):
    macro = aggregate(DOCS, resamples=5, zero_division=zero_division).macro
    assert (macro.precision, macro.recall, macro.f1) == pytest.approx((precision, recall, f1))
    assert macro.defined == {"precision": 1, "recall": 2, "f1": 1}
    assert macro.zero_division == zero_division


def test_micro_does_not_depend_on_zero_division():
    micros = {z: aggregate(DOCS, resamples=5, zero_division=z).micro for z in ("skip", "0", "1")}
    assert micros["skip"] == micros["0"] == micros["1"]
    assert micros["skip"].precision == 0.5 and micros["skip"].recall == pytest.approx(1 / 3)
