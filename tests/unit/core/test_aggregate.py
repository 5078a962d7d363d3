"""Aggregation over documents (pure): macro averages by the convention a user chooses."""
import random

import pytest
from calls import count_calls
from hypo import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from factjudge.core import aggregate as aggregate_module
from factjudge.core.aggregate import (
    Aggregator,
    DocStats,
    aggregate,
    bootstrap_ci,
    key_prf,
    paired_bootstrap,
    run_intervals,
)

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


# --------------------------------------------------------------------------- pure functions

keys = st.lists(st.tuples(*[st.integers(0, 20)] * 4), min_size=0, max_size=25)


@settings(max_examples=examples(60), deadline=None)
@given(keys, st.integers(0, 2**32))
def test_bootstrap_interval_is_ordered_and_seeded(docs, seed):
    a = bootstrap_ci(docs, resamples=60, seed=seed)
    assert a == bootstrap_ci(docs, resamples=60, seed=seed)
    for ci in a.values():
        if ci is None:
            continue
        assert 0 <= ci[0] <= ci[1] <= 1
    point = key_prf([sum(c) for c in zip(*docs, strict=False)]) if docs else key_prf([0, 0, 0, 0])
    for k in ("precision", "recall", "f1"):
        assert (a[k] is None) == (point[k] is None)  # undefined only when the data says so


@settings(max_examples=examples(40), deadline=None)
@given(st.tuples(*[st.integers(0, 9)] * 4), st.integers(1, 30), st.integers(0, 1000))
def test_identical_documents_give_a_zero_width_interval_at_the_point(doc, n, seed):
    ci = bootstrap_ci([doc] * n, resamples=30, seed=seed)
    point = key_prf(doc)
    for k, value in point.items():
        assert ci[k] == (None if value is None else [value, value])


@settings(max_examples=examples(40), deadline=None)
@given(keys)
def test_micro_is_the_sum_and_paired_diff_of_a_run_with_itself_is_zero(docs):
    stats = [DocStats(f"d{i}", {"tp_predicted": a, "fp": b, "tp_gold": c, "fn": d, "errors": 0,
                                "out_of_scope_gold": 0, "out_of_scope_predicted": 0},
                      {"t": {"tp_predicted": a, "fp": b, "tp_gold": c, "fn": d, "errors": 0}},
                      {"duplicate_gold": 1}, {"llm_calls": a, "seconds": 0.1})
             for i, (a, b, c, d) in enumerate(docs)]
    s = aggregate(stats, resamples=20).model_dump()
    assert s["documents"] == len(docs)
    assert s["micro"]["tp_predicted"] == sum(d[0] for d in docs)
    assert s["micro"]["fn"] == sum(d[3] for d in docs)
    assert s["usage"].get("llm_calls", 0) == sum(d[0] for d in docs)
    assert s["conflicts"] == ({"duplicate_gold": len(docs)} if docs else {})
    if docs:
        assert s["by_fact_type"]["t"]["precision"] == s["micro"]["precision"]
    pair = paired_bootstrap(docs, docs, resamples=20)
    for k in ("precision", "recall", "f1"):
        assert pair[k]["diff"] in (None, 0) and not pair[k]["excludes_zero"]



def _agg(documents, seed, top=5):
    """An Aggregator of ``documents`` random documents, counts below ``top``, two field paths."""
    rng = random.Random(seed)
    agg = Aggregator()
    for i in range(documents):
        key = [rng.randrange(top) for _ in range(4)]
        agg.add(DocStats(f"d{i}", {"tp_predicted": key[0], "fp": key[1], "tp_gold": key[2], "fn": key[3],
                                   **ZERO}, {}, {}, {},
                         fields={"t": {"a": [rng.randrange(3), rng.randrange(2), rng.randrange(2), 0],
                                       "b": [rng.randrange(3), 0, rng.randrange(2), rng.randrange(2)]}}))
    return agg, list(zip(*agg.keys, strict=True))


def test_numpy_bootstrap_draws_a_block_of_resamples_at_once(monkeypatch):
    # issue 39: one resample at a time, the loop's numpy calls were most of summary()'s 60 ms on
    # 1,000 documents; a block of resamples is drawn with one call
    np = pytest.importorskip("numpy")
    calls = []

    class Counting(np.random.RandomState):
        def random_sample(self, *args):
            calls.append(args)
            return super().random_sample(*args)

    monkeypatch.setattr(np.random, "RandomState", Counting)
    agg, keys = _agg(40, 1)
    run_intervals(keys, agg.field_columns, 40, 300, 0, use_numpy=True)
    assert len(calls) == 1
    monkeypatch.setattr(aggregate_module, "NUMPY_BLOCK", 40 * 100)
    calls.clear()
    run_intervals(keys, agg.field_columns, 40, 300, 0, use_numpy=True)
    assert len(calls) == 3


@pytest.mark.parametrize("documents, block, top", [
    (1, 1 << 20, 5), (3, 1, 5), (37, 37 * 7, 5), (50, 1 << 20, 2),
    (2, 1 << 20, 2 ** 53),  # sums past 2**53: added as int64 and divided as Python integers
    (3, 1 << 20, 2 ** 23),  # sums past 2**24, which float32 would round: added in float64
])
def test_numpy_bootstrap_blocks_give_the_python_figures(monkeypatch, documents, block, top):
    pytest.importorskip("numpy")
    monkeypatch.setattr(aggregate_module, "NUMPY_BLOCK", block)
    agg, keys = _agg(documents, documents, top)
    for seed in (0, 9):
        python = run_intervals(keys, agg.field_columns, documents, 120, seed, use_numpy=False)
        assert run_intervals(keys, agg.field_columns, documents, 120, seed, use_numpy=True) == python


@pytest.mark.parametrize("top, einsums", [(5, 0), (2 ** 23, 0), (2 ** 53, 1)])
def test_exact_float_sums_are_added_by_blas_and_int64_ones_by_einsum(monkeypatch, top, einsums):
    """Issue 39: sums exact in a float (integers below 2**24 in float32, 2**53 in float64) are one
    BLAS product a block, whose order of adding cannot change them (100,000 documents, float64:
    0.71 s against einsum's 1.89 s); sums past 2**53 stay int64, added by einsum (the figures of
    both: the test above)."""
    np = pytest.importorskip("numpy")
    used = count_calls(monkeypatch, np, "einsum")
    agg, keys = _agg(30, 3, top)
    run_intervals(keys, agg.field_columns, 30, 50, 0, use_numpy=True)
    assert used[0] == einsums


def test_sums_are_added_in_the_narrowest_float_that_holds_them_exactly():
    # issue 39: float32's product is twice float64's speed; a sum of 2**24 or more is past its
    # 24-bit significand (2**24 + 1 is no float32), one of 2**53 or more past float64's
    np = pytest.importorskip("numpy")
    assert aggregate_module._exact_float(np, 2 ** 24 - 1) is np.float32
    assert aggregate_module._exact_float(np, 2 ** 24) is np.float64
    assert aggregate_module._exact_float(np, 2 ** 53 - 1) is np.float64
    assert aggregate_module._exact_float(np, 2 ** 53) is None
    assert int(np.float32(2 ** 24 + 1)) != 2 ** 24 + 1  # why the bound is where it is


def _drawn_with_numpy(monkeypatch, documents):
    """Whether run_intervals' default drew ``documents`` with numpy (and its figures)."""
    used = []
    numpy_sums = aggregate_module._numpy_sums
    monkeypatch.setattr(aggregate_module, "_numpy_sums", lambda *a: used.append(1) or numpy_sums(*a))
    agg, keys = _agg(documents, 1)
    figures = run_intervals(keys, agg.field_columns, documents, 200, 0)
    return bool(used), figures


def test_bootstrap_draws_with_numpy_below_numpy_from_once_it_is_imported(monkeypatch):
    # issue 39: an LLM run imports numpy while it waits for answers; imported, it draws 200
    # documents in 11 ms against Python's 78 (at 1 document 3 ms against 35)
    pytest.importorskip("numpy")
    assert aggregate_module.NUMPY_FROM > 20
    used, figures = _drawn_with_numpy(monkeypatch, 20)
    assert used
    agg, keys = _agg(20, 1)
    assert figures == run_intervals(keys, agg.field_columns, 20, 200, 0, use_numpy=False)


def test_bootstrap_without_numpy_installed_draws_in_python(monkeypatch):
    # "numpy" in sys.modules as None: its import fails, as where it is not installed
    monkeypatch.setitem(__import__("sys").modules, "numpy", None)
    used, figures = _drawn_with_numpy(monkeypatch, 20)
    assert not used
    agg, keys = _agg(20, 1)
    assert figures == run_intervals(keys, agg.field_columns, 20, 200, 0, use_numpy=False)
