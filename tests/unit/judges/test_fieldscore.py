"""judges/rules/fieldscore: the rules judge's comparison for field-level scores (issue 34 item 6):
the items of a near-miss pair's lists aligned as the judge aligns them, in any order."""
import itertools

from hypo import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from factjudge.core.fields import count_fields
from factjudge.judges.rules.fieldscore import rules_field_comparer
from factjudge.models import Analysis, JudgeConfig, NearMiss

FIELDS = ["vendor", "total", "line_items"]
NEAR = Analysis(near_misses=[NearMiss(fact_type="invoice", gold="g", predicted="p", score=50, agree=[], differ=[])])


def invoice(fid, status, items, **rest):
    return {"id": fid, "fact_type": "invoice", "status": status, "vendor": "Northwind", "total": 100,
            "line_items": items, **rest}


def counts(gold_items, pred_items, config=None, **pred):
    compare = rules_field_comparer(JudgeConfig(**(config or {})))
    return count_fields([invoice("g", "FN", gold_items)], [invoice("p", "FP", pred_items, **pred)], NEAR,
                        lambda f: FIELDS, compare)["invoice"]


def test_a_wrong_price_a_missing_item_and_an_extra_one():
    gold = [{"description": "Switch 8-port", "qty": 2, "unit_price": "180,00"},
            {"description": "Router AX", "qty": 1, "unit_price": 600},
            {"description": "Patch panel", "qty": 1, "unit_price": 90}]
    pred = [{"description": "Router AX", "qty": 1, "unit_price": 600.0},
            {"description": "Switch 8-port", "qty": 2, "unit_price": 185},
            {"description": "Desk lamp", "qty": 4}]
    got = counts(gold, pred, {"decimal_separator": ","}, total=120)
    assert got == {"vendor": [1, 0, 0, 0], "total": [0, 1, 0, 0], "line_items": [0, 1, 0, 0],
                   "line_items[]": [1, 1, 1, 1], "line_items[].description": [2, 0, 1, 1],
                   "line_items[].qty": [2, 0, 1, 1], "line_items[].unit_price": [1, 1, 1, 0]}


def test_tolerances_by_path_decide_an_item_field():
    gold = [{"description": "Cable", "unit_price": 4.50}]
    pred = [{"description": "Cable", "unit_price": 4.51}]
    assert counts(gold, pred)["line_items[].unit_price"] == [0, 1, 0, 0]
    tolerant = counts(gold, pred, {"tolerances": {"line_items.unit_price": {"absolute": 0.01}}})
    assert tolerant["line_items[].unit_price"] == [1, 0, 0, 0] and tolerant["line_items"] == [1, 0, 0, 0]


def test_lists_of_values_count_as_multisets_and_ordered_lists_by_position():
    tags = counts([], [], tags=None)  # no tags on either side: no path
    assert "tags" not in tags
    compare = rules_field_comparer(JudgeConfig())
    gold = [{**invoice("g", "FN", []), "tags": ["b", "a", "a"]}]
    pred = [{**invoice("p", "FP", []), "tags": ["a", "b", "c"]}]
    got = count_fields(gold, pred, NEAR, lambda f: ["tags"], compare)["invoice"]
    assert got["tags[]"] == [2, 0, 1, 1]
    by_position = rules_field_comparer(JudgeConfig(ordered=["tags"]))
    assert count_fields(gold, pred, NEAR, lambda f: ["tags"], by_position)["invoice"]["tags[]"] == [0, 3, 0, 0]


item = st.fixed_dictionaries({"description": st.sampled_from(["Switch", "Cable", "Router", "Desk"]),
                              "qty": st.integers(1, 3), "unit_price": st.sampled_from([4.5, 99, 180, 185])})


@settings(max_examples=examples(80), deadline=None)
@given(st.lists(item, max_size=5), st.lists(item, max_size=5), st.randoms(use_true_random=False))
def test_counts_are_invariant_under_permutation_of_either_list(a, b, rnd):
    pa, pb = a[:], b[:]
    rnd.shuffle(pa)
    rnd.shuffle(pb)
    assert counts(a, b) == counts(pa, b) == counts(a, pb)


def test_a_tie_between_two_alignments_is_broken_the_same_way_in_every_order():
    """Hypothesis's case: the Router line agrees with one predicted item on its price and with
    another on its description, two alignments worth the same; the kept one (so description
    [4, 1] or [3, 2]) followed the gold list's order before the solver got a canonical order."""
    a = [{"description": "Switch", "qty": 1, "unit_price": 4.5}, {"description": "Switch", "qty": 1, "unit_price": 4.5},
         {"description": "Switch", "qty": 1, "unit_price": 180}, {"description": "Cable", "qty": 1, "unit_price": 4.5},
         {"description": "Router", "qty": 3, "unit_price": 180}]
    b = [{"description": "Switch", "qty": 1, "unit_price": 4.5}, {"description": "Switch", "qty": 1, "unit_price": 4.5},
         {"description": "Switch", "qty": 1, "unit_price": 4.5}, {"description": "Switch", "qty": 2, "unit_price": 180},
         {"description": "Router", "qty": 1, "unit_price": 4.5}]
    seen = {repr(counts(list(pa), b)) for pa in itertools.permutations(a)}
    seen |= {repr(counts(a, list(pb))) for pb in itertools.permutations(b)}
    assert len(seen) == 1, seen


@settings(max_examples=examples(40), deadline=None)
@given(st.lists(item, min_size=1, max_size=6), st.randoms(use_true_random=False))
def test_equal_lists_count_every_item_correct_in_any_order(a, rnd):
    shuffled = a[:]
    rnd.shuffle(shuffled)
    got = counts(a, shuffled)
    assert got["line_items[]"] == [len(a), 0, 0, 0]
    assert all(c[1:] == [0, 0, 0] for c in got.values())
