"""factjudge.core.metrics: the one P/R/F1 and Cohen's kappa kernel, property-tested against the
definitions and against a direct formula."""
from fractions import Fraction

import pytest
from hypo import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from factjudge.core.metrics import PRF, cohen_kappa, prf

counts = st.integers(0, 10_000)


@settings(max_examples=examples(300), deadline=None)
@given(counts, counts, counts)
def test_prf_follows_the_definitions(tp, fp, fn):
    p, r, f1 = prf(tp, fp, fn)
    assert p == (None if tp + fp == 0 else tp / (tp + fp))
    assert r == (None if tp + fn == 0 else tp / (tp + fn))
    if p is None or r is None:
        assert f1 is None  # undefined when either side is: never silently 0
    elif p + r == 0:
        assert f1 == 0.0
    else:
        assert f1 == pytest.approx(2 * tp / (2 * tp + fp + fn))  # F1 = 2TP / (2TP + FP + FN)
        assert min(p, r) - 1e-12 <= f1 <= max(p, r) + 1e-12  # a mean of the two (float rounding aside)


@settings(max_examples=examples(200), deadline=None)
@given(counts, counts, counts, counts)
def test_prf_with_a_gold_side_count(tp, fp, tp_gold, fn):
    scores = prf(tp, fp, fn, tp_gold=tp_gold)
    assert scores.precision == prf(tp, fp, 0).precision
    assert scores.recall == prf(tp_gold, 0, fn).recall
    assert prf(tp, fp, fn, tp_gold=tp) == prf(tp, fp, fn)


def test_prf_known_values():
    assert prf(3, 1, 2) == PRF(0.75, 0.6, pytest.approx(2 * 0.75 * 0.6 / 1.35))
    assert prf(0, 0, 0) == PRF(None, None, None)
    assert prf(0, 2, 3) == PRF(0.0, 0.0, 0.0)
    assert prf(1, 0, 0)._asdict() == {"precision": 1.0, "recall": 1.0, "f1": 1.0}


def matrices(max_classes=4):
    return st.integers(1, max_classes).flatmap(
        lambda k: st.lists(st.lists(st.integers(0, 50), min_size=k, max_size=k), min_size=k, max_size=k))


def kappa_by_the_formula(matrix):
    """(p_o - p_e) / (1 - p_e), written the textbook way with fractions."""
    n = sum(map(sum, matrix))
    if n == 0:
        return None
    k = len(matrix)
    p_o = Fraction(sum(matrix[i][i] for i in range(k)), n)
    p_e = sum(Fraction(sum(matrix[i]), n) * Fraction(sum(row[i] for row in matrix), n) for i in range(k))
    return None if p_e == 1 else float((p_o - p_e) / (1 - p_e))


@settings(max_examples=examples(300), deadline=None)
@given(matrices())
def test_kappa_matches_the_formula_and_is_symmetric(matrix):
    kappa = cohen_kappa(matrix)
    assert kappa == kappa_by_the_formula(matrix)
    transposed = [list(column) for column in zip(*matrix, strict=True)]
    assert cohen_kappa(transposed) == kappa  # exact: the raters' order does not matter
    if kappa is not None:
        assert -1 <= kappa <= 1


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=80))
def test_kappa_is_one_for_identical_labels(labels):
    k = 4
    matrix = [[0] * k for _ in range(k)]
    for label in labels:
        matrix[label][label] += 1
    # one class only: chance agreement is 1 and kappa undefined
    assert cohen_kappa(matrix) == (1.0 if len(set(labels)) > 1 else None)


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.booleans()), max_size=80))
def test_binary_kappa_from_pairs(pairs):
    both = sum(a and b for a, b in pairs)
    a_only = sum(a and not b for a, b in pairs)
    b_only = sum(b and not a for a, b in pairs)
    neither = len(pairs) - both - a_only - b_only
    assert cohen_kappa([[both, a_only], [b_only, neither]]) == kappa_by_the_formula(
        [[both, a_only], [b_only, neither]])


def test_kappa_by_the_book():
    assert cohen_kappa([[20, 5], [10, 15]]) == pytest.approx(0.4)  # Wikipedia's worked example
    assert cohen_kappa([[3, 0], [0, 2]]) == 1.0
    assert cohen_kappa([[0, 1], [1, 0]]) == -1.0
    assert cohen_kappa([[4, 0], [0, 0]]) is None and cohen_kappa([[0, 0], [0, 0]]) is None
    assert cohen_kappa([]) is None
