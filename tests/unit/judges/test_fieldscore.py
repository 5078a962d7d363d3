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


def fact_counts(gold, pred, config=None, linked=False):
    """The counts of one pair of facts of type t (a near miss, or linked), compared by the rules."""
    compare = rules_field_comparer(JudgeConfig(**(config or {})))
    names = sorted({*gold, *pred})
    g = {"id": "g", "fact_type": "t", "status": "TP" if linked else "FN", "matched_ids": ["p"] if linked else [],
         **gold}
    p = {"id": "p", "fact_type": "t", "status": "TP" if linked else "FP", **pred}
    near = Analysis() if linked else Analysis(near_misses=[NearMiss(fact_type="t", gold="g", predicted="p", score=50,
                                                                    agree=[], differ=[])])
    return count_fields([g], [p], near, lambda f: names, compare)["t"]


def test_a_nested_record_counts_each_of_its_fields_as_the_judge_compared_them():
    gold = {"address": {"city": "Berlin", "zip": "10115", "street": "Unter den Linden 1"}}
    pred = {"address": {"city": "Munich", "zip": 10115, "country": "DE"}}  # zip as a number: equal
    assert fact_counts(gold, pred) == {"address": [0, 1, 0, 0], "address.city": [0, 1, 0, 0],
                                       "address.zip": [1, 0, 0, 0], "address.street": [0, 0, 1, 0],
                                       "address.country": [0, 0, 0, 1]}
    # a linked pair counts every value both sides have correct, sub-fields too
    assert fact_counts(gold, pred, linked=True)["address.city"] == [1, 0, 0, 0]
    # records that agree in no field (the judge aligns no item): each field differs
    other = fact_counts({"address": {"city": "Berlin"}}, {"address": {"city": "Munich"}})
    assert other == {"address": [0, 1, 0, 0], "address.city": [0, 1, 0, 0]}


def test_a_record_inside_a_list_item_and_a_list_inside_a_nested_record_at_any_depth():
    gold = {"line_items": [{"sku": "A", "dims": {"width": 3, "height": 4}}, {"sku": "B", "dims": {"width": 1}}],
            "meta": {"tags": ["x", "y"], "source": {"page": 2}}}
    pred = {"line_items": [{"sku": "B", "dims": {"width": 1}}, {"sku": "A", "dims": {"width": 5, "height": 4}}],
            "meta": {"tags": ["y", "z"], "source": {"page": 2}}}
    got = fact_counts(gold, pred)
    assert got["line_items[].dims"] == [1, 1, 0, 0]
    assert got["line_items[].dims.width"] == [1, 1, 0, 0] and got["line_items[].dims.height"] == [1, 0, 0, 0]
    assert got["meta.tags[]"] == [1, 0, 1, 1]  # aligned as a multiset, inside the record
    assert got["meta.source.page"] == [1, 0, 0, 0] and got["meta.source"] == [1, 0, 0, 0]
    linked = fact_counts(gold, {**gold, "meta": {"tags": ["y", "x"], "source": {"page": 2}}}, linked=True)
    assert linked["meta.tags[]"] == [2, 0, 0, 0]  # a linked pair's nested list is aligned too


def test_a_python_set_counts_its_items_as_a_list_does():
    got = fact_counts({"tags": {"b", "a", "c"}}, {"tags": frozenset({"a", "c", "d"})})
    assert got == {"tags": [0, 1, 0, 0], "tags[]": [2, 0, 1, 1]}
    assert fact_counts({"tags": set(), "n": 1}, {"tags": set(), "n": 1}) == {"n": [1, 0, 0, 0]}  # empty: absent
    records = fact_counts({"parts": ({"sku": "A", "qty": 1},)}, {"parts": ({"sku": "A", "qty": 2},)})
    assert records["parts[].qty"] == [0, 1, 0, 0]  # a tuple of records, as the judge reads it


def test_mixed_lists_and_lists_of_lists_are_unordered_unless_ordered_names_them():
    mixed = fact_counts({"m": [{"k": 1, "n": "a"}, "x", 3]}, {"m": ["x", 3, {"k": 2, "n": "a"}]})
    assert mixed == {"m": [0, 1, 0, 0], "m[]": [2, 1, 0, 0], "m[].k": [0, 1, 0, 0], "m[].n": [1, 0, 0, 0]}
    nested = fact_counts({"m": [[1, 2], [3]]}, {"m": [[3], [2, 1]]})
    assert nested == {"m": [1, 0, 0, 0], "m[]": [2, 0, 0, 0], "m[][]": [3, 0, 0, 0]}
    by_position = fact_counts({"m": [[1, 2], [3]]}, {"m": [[3], [2, 1]]}, {"ordered": ["m"]})
    # by position at every depth: 1 vs 3 and 3 vs 2 wrong, 2 missing, 1 spurious
    assert by_position["m"] == [0, 1, 0, 0] and by_position["m[][]"] == [0, 2, 1, 1]
