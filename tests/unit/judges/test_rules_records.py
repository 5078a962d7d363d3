"""Records as extractors write them (issue 34): nulls, number and date locales, lists of records
inside a fact, fields per fact type."""
import itertools
import json
import warnings

import pytest
from hypo import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from factjudge import run_judge
from factjudge.core.scope import compared_fields, merge_warnings, nothing_to_compare
from factjudge.errors import InputError
from factjudge.io.config import parse_config
from factjudge.judges.llm.prompts import fact_tables, system_message
from factjudge.judges.rules.compare import compare_facts, normalized
from factjudge.models import JudgeConfig
from factjudge.util.assignment import max_assignment


def judged(gold, pred, config=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run_judge(gold, pred, config or {})
    return (result, [f["factjudge"]["status"] for f in result.gold_facts],
            [f["factjudge"]["status"] for f in result.predicted_facts])


# --------------------------------------------------------------------------- null is absence


def test_fields_null_on_both_sides_are_no_evidence_of_a_match():
    # the case: fields naming only attributes neither fact has linked two companies
    gold = [{"id": "g1", "fact_type": "supplier", "name": "Northwind Traders", "po_number": None, "phone": None}]
    pred = [{"id": "p1", "fact_type": "supplier", "name": "Fabrikam Holdings", "po_number": None}]
    result, g, p = judged(gold, pred, {"fields": ["po_number", "phone"]})
    assert (g, p) == (["FN"], ["FP"])
    assert "Nothing to compare: po_number, phone null, empty or absent on both sides" in \
        result.gold_facts[0]["factjudge"]["reasoning"]
    assert any(w.startswith("supplier: 2 facts had nothing to compare") for w in result.warnings)


def test_a_field_null_on_both_sides_is_not_compared():
    gold = [{"id": "g1", "fact_type": "invoice", "vendor": "Acme", "total": 5, "note": None}]
    pred = [{"id": "p1", "fact_type": "invoice", "vendor": "Acme", "total": 5, "note": None}]
    result, g, p = judged(gold, pred)
    assert (g, p) == (["TP"], ["TP"])
    assert "note" not in result.gold_facts[0]["factjudge"]["reasoning"]
    assert not any("nothing to compare" in w for w in result.warnings)


@pytest.mark.parametrize("empty", ["", "  ", [], {}])
def test_an_empty_value_is_absence_as_null_is(empty):
    """An extractor's "" or [] for what it did not find (a Pydantic default) against a gold that
    leaves the field out: was a difference (FN + FP), counted as a value, and warned of as a field
    no prediction has."""
    gold = [{"id": "g1", "fact_type": "invoice", "vendor": "Acme", "total": 5, "note": empty}]
    pred = [{"id": "p1", "fact_type": "invoice", "vendor": "Acme", "total": 5}]
    for a, b in ((gold, pred), (pred, [{**gold[0], "id": "p1"}])):
        result, g, p = judged(a, b)
        assert (g, p) == (["TP"], ["TP"]), result.gold_facts[0]["factjudge"]["reasoning"]
        assert not any("note" in w for w in result.warnings), result.warnings
        assert "note" not in result.to_dict()["analysis"]["fields"]["invoice"]  # no value either side: not counted
    # against a value it is a missing value, as null is
    result, g, p = judged([{**gold[0], "note": "paid"}], [{**pred[0], "note": empty}])
    assert (g, p) == (["FN"], ["FP"]) and "note: missing on candidate" in result.gold_facts[0]["factjudge"]["reasoning"]
    # a fact whose every compared field is empty has nothing to compare
    result, g, _ = judged([{"id": "g", "fact_type": "x", "name": empty}],
                          [{"id": "p", "fact_type": "x", "name": empty}])
    assert g == ["FN"] and any("x: 2 facts had nothing to compare" in w for w in result.warnings)


def test_a_null_prediction_against_a_gold_value_is_a_missing_value():
    gold = [{"id": "g1", "fact_type": "invoice", "vendor": "Acme", "total": 5}]
    pred = [{"id": "p1", "fact_type": "invoice", "vendor": "Acme", "total": None}]
    result, g, p = judged(gold, pred)
    assert (g, p) == (["FN"], ["FP"])  # the pair differs on total
    assert "total: missing on candidate" in result.gold_facts[0]["factjudge"]["reasoning"]


def test_a_type_without_fields_still_matches_by_its_type():
    result, g, p = judged([{"id": "g1", "fact_type": "flag"}], [{"id": "p1", "fact_type": "flag"}])
    assert (g, p) == (["TP"], ["TP"])
    assert not result.warnings


def test_nothing_to_compare_counts_add_up_over_documents():
    config = JudgeConfig(fields=["total"])
    doc1 = nothing_to_compare([{"id": "a", "fact_type": "invoice", "total": None}],
                              [{"id": "b", "fact_type": "invoice"}], config, None)
    doc2 = nothing_to_compare([{"id": "a", "fact_type": "invoice", "total": None}], [], config, None)
    merged = merge_warnings([*doc1, "other", *doc2, "other"])
    assert merged[1] == "other" and len(merged) == 2
    assert merged[0].startswith("invoice: 3 facts had nothing to compare")


def test_fields_of_one_side_are_said_of_the_documents_they_are_true_of():
    """Document a: only the prediction has ``note``; b: only the gold. Merged as the run's, the
    two warnings said both that no gold fact and that no prediction of type x has ``note``."""
    config = JudgeConfig()
    _, doc_a = compared_fields([{"id": "g", "fact_type": "x", "v": 1}],
                               [{"id": "p", "fact_type": "x", "v": 1, "note": "q"}], config)
    _, doc_b = compared_fields([{"id": "g", "fact_type": "x", "v": 1, "note": "q"}],
                               [{"id": "p", "fact_type": "x", "v": 1}], config)
    assert doc_a == ["x: predicted facts carry note, which no gold fact of this type has: not compared (set "
                     "'fields' to compare them)"]
    merged = merge_warnings([*doc_a, *doc_b, *doc_b])
    assert merged == [
        "x: in 1 document, predicted facts carry note, which no gold fact of this type has there: not compared "
        "(set 'fields' to compare them)",
        "x: in 2 documents, gold facts carry note, which no predicted fact of this type has there: such "
        "predictions cannot match"]
    # as a run counts them: each message with the number of documents that gave it
    assert merge_warnings({doc_a[0]: 1, doc_b[0]: 2}) == merged
    assert merge_warnings({doc_b[0]: 3})[0].startswith("x: in 3 documents, gold facts")


def test_a_unit_only_the_gold_names_is_no_warning_that_predictions_cannot_match():
    """"gold facts carry unit, which no predicted fact of this type has: such predictions cannot
    match" was said of a prediction judged TP (a unit no prediction names is no unit)."""
    result, g, _ = judged([{"id": "g1", "fact_type": "revenue", "value": "12", "unit": "USD"}],
                          [{"id": "p1", "fact_type": "revenue", "value": "$12"}])
    assert g == ["TP"] and not any("carry unit" in w for w in result.warnings)
    _, warned = compared_fields([{"id": "g", "fact_type": "x", "v": 1, "note": "q", "price_currency": "EUR"}],
                                [{"id": "p", "fact_type": "x", "v": 1}], JudgeConfig())
    assert warned == ["x: gold facts carry note, which no predicted fact of this type has: such predictions "
                      "cannot match"]


# --------------------------------------------------------------------------- number and date locales


def one_pair(gold_value, pred_value, config=None, field="total"):
    gold = [{"id": "g1", "fact_type": "invoice", field: gold_value}]
    pred = [{"id": "p1", "fact_type": "invoice", field: pred_value}]
    return judged(gold, pred, config)


@pytest.mark.parametrize(("written", "value"), [
    ("148,16", 148.16),         # a decimal comma before two digits
    ("1.234,50", 1234.5),       # dots group thousands, the last separator is the decimal one
    ("1 234,5", 1234.5),        # spaces group thousands
    ("0,125", 0.125),           # a leading 0 groups nothing
    ("1.234.567", 1234567),     # a separator written twice groups thousands
    ("EUR 1.234,50", 1234.5),
])
def test_unambiguous_number_forms_are_read_without_configuration(written, value):
    for config in ({}, {"decimal_separator": ","}, {"decimal_separator": "."}):
        result, g, p = one_pair(written, value, config)
        assert (g, p) == (["TP"], ["TP"]), (written, config, result.gold_facts[0]["factjudge"]["reasoning"])
        assert not any("decimal_separator" in w for w in result.warnings)


@pytest.mark.parametrize(("written", "point", "comma"), [("1,234", 1234, 1.234), ("1.234", 1.234, 1234)])
def test_ambiguous_numbers_follow_decimal_separator(written, point, comma):
    for config, value, other in (({}, point, comma), ({"decimal_separator": "."}, point, comma),
                                 ({"decimal_separator": ","}, comma, point)):
        assert one_pair(written, value, config)[1:] == (["TP"], ["TP"]), (written, config)
        assert one_pair(written, other, config)[1:] == (["FN"], ["FP"]), (written, config)


def test_a_run_that_read_ambiguous_values_by_default_says_so_once_naming_the_key():
    result, _, _ = one_pair("1,234", 1234)
    said = [w for w in result.warnings if "decimal_separator" in w]
    assert len(said) == 1 and "set decimal_separator: ','" in said[0]
    assert not any("decimal_separator" in w for w in one_pair("1,234", 1234, {"decimal_separator": "."})[0].warnings)
    dates = one_pair("03/04/2024", "2024-03-04", field="date")[0].warnings
    assert sum("date_order" in w for w in dates) == 1
    assert merge_warnings([*dates, *dates]) == dates  # many documents: still once


@pytest.mark.parametrize(("written", "iso"), [
    ("13/05/2024", "2024-05-13"),   # 13 is no month
    ("05/13/2024", "2024-05-13"),
    ("13-05-2024", "2024-05-13"),
])
def test_unambiguous_dates_are_read_without_configuration(written, iso):
    for config in ({}, {"date_order": "DMY"}, {"date_order": "MDY"}, {"date_order": "YMD"}):
        result, g, p = one_pair(written, iso, config, field="date")
        assert (g, p) == (["TP"], ["TP"]), (written, config)
        assert not any("date_order" in w for w in result.warnings)


@pytest.mark.parametrize(("config", "iso"), [({}, "2024-03-04"), ({"date_order": "MDY"}, "2024-03-04"),
                                             ({"date_order": "DMY"}, "2024-04-03"),
                                             ({"date_order": "YMD"}, "2024-03-04")])
def test_ambiguous_dates_follow_date_order(config, iso):
    assert one_pair("03/04/2024", iso, config, field="date")[1:] == (["TP"], ["TP"])
    other = "2024-04-03" if iso == "2024-03-04" else "2024-03-04"
    assert one_pair("03/04/2024", other, config, field="date")[1:] == (["FN"], ["FP"])


def test_the_locale_keys_are_config_keys_with_their_values_checked():
    assert JudgeConfig(decimal_separator=",", date_order="DMY").date_order == "DMY"
    with pytest.raises(ValueError):
        JudgeConfig(decimal_separator=";")
    with pytest.raises(ValueError):
        JudgeConfig(date_order="DYM")


# --------------------------------------------------------------------------- lists inside a fact

ITEMS = [{"description": "Switch 8-port", "qty": 2, "unit_price": 180},
         {"description": "Cable Cat6 2m", "qty": 10, "unit_price": "4.50"},
         {"description": "Router", "qty": 1, "unit_price": 99}]


def invoice(fid, items, **more):
    return {"id": fid, "fact_type": "invoice", "vendor": "Acme", "line_items": items, **more}


def test_line_items_in_another_order_are_equal():
    reordered = [ITEMS[2], {**ITEMS[1], "unit_price": "4,50"}, ITEMS[0]]
    result, g, p = judged([invoice("g1", ITEMS)], [invoice("p1", reordered)])
    assert (g, p) == (["TP"], ["TP"])
    assert "line_items: 3 items equal (in another order)" in result.gold_facts[0]["factjudge"]["reasoning"]


def test_the_reasoning_names_the_item_that_differs_and_the_one_missing():
    pred = [{**ITEMS[0], "unit_price": 185}, ITEMS[2]]
    result, g, p = judged([invoice("g1", ITEMS)], [invoice("p1", pred)])
    assert (g, p) == (["FN"], ["FP"])
    reasoning = result.gold_facts[0]["factjudge"]["reasoning"]
    assert "line_items: item 1 (Switch 8-port) unit_price: 180 vs 185: differ" in reasoning
    assert "1 item missing on candidate: item 2 (Cable Cat6 2m)" in reasoning
    assert "1 item missing on subject: item 2 (Cable Cat6 2m)" in result.predicted_facts[0]["factjudge"]["reasoning"]


def test_an_extra_item_makes_the_list_differ():
    _, g, p = judged([invoice("g1", ITEMS[:2])], [invoice("p1", ITEMS)])
    assert (g, p) == (["FN"], ["FP"])


def test_item_fields_take_tolerances_by_path():
    pred = [ITEMS[2], {**ITEMS[0], "unit_price": 183}, ITEMS[1]]
    assert judged([invoice("g1", ITEMS)], [invoice("p1", pred)])[1] == ["FN"]
    result, g, _ = judged([invoice("g1", ITEMS)], [invoice("p1", pred)],
                          {"tolerances": {"line_items.unit_price": {"absolute": 5}}})
    assert g == ["TP"]
    assert not any("tolerances" in w for w in result.warnings)  # a path is no unknown field


def test_lists_of_values_are_multisets():
    def tags(a, b, config=None):
        return judged([{"id": "g", "fact_type": "t", "tags": a}], [{"id": "p", "fact_type": "t", "tags": b}],
                      config)[1]
    assert tags(["a", "b", "b"], ["b", "a", "b"]) == ["TP"]
    assert tags(["a", "b"], ["a", "b", "b"]) == ["FN"]
    assert tags(["12.5", "Acme Inc."], ["acme", 12.5]) == ["TP"]  # each value read as a field is
    assert tags([], []) == ["FN"]  # an empty list is no value, as null: nothing to compare, no evidence


def test_ordered_keeps_the_order_where_it_matters():
    config = {"ordered": ["steps"]}
    gold = [{"id": "g", "fact_type": "recipe", "steps": ["mix", "bake"]}]
    pred = [{"id": "p", "fact_type": "recipe", "steps": ["bake", "mix"]}]
    assert judged(gold, pred)[1] == ["TP"]
    result, g, _ = judged(gold, pred, config)
    assert g == ["FN"]
    assert 'item 1 (mix) "mix" vs "bake"' in result.gold_facts[0]["factjudge"]["reasoning"]


def test_the_llm_judge_still_sees_a_list_as_one_json_cell():
    table = fact_tables([invoice("g1", ITEMS[:1])])
    assert '[{"description":"Switch 8-port","qty":2,"unit_price":180}]' in table


def _same(items_a, items_b, config=None):
    cfg = JudgeConfig(**(config or {}))
    a = normalized(invoice("g", items_a), 0, True)
    b = normalized(invoice("p", items_b), 1, True)
    r = compare_facts(a, b, ["line_items"], cfg)
    return r.ok, round(r.score, 6)


item = st.fixed_dictionaries({"description": st.sampled_from(["Switch", "Cable", "Router", "Desk"]),
                              "qty": st.integers(1, 3), "unit_price": st.sampled_from([4.5, 99, 180, 185])})


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(item, max_size=5), st.lists(item, max_size=5), st.randoms(use_true_random=False))
def test_alignment_is_invariant_under_permutation_of_either_list(a, b, rnd):
    pa, pb = a[:], b[:]
    rnd.shuffle(pa)
    rnd.shuffle(pb)
    assert _same(a, b) == _same(pa, b) == _same(a, pb)


@settings(max_examples=examples(40), deadline=None)
@given(st.lists(item, min_size=1, max_size=6), st.randoms(use_true_random=False))  # ([] is no value, as null)
def test_equal_lists_are_equal_in_any_order(a, rnd):
    shuffled = a[:]
    rnd.shuffle(shuffled)
    assert _same(a, a) == (True, 100.0)
    assert _same(a, shuffled)[0]


@settings(max_examples=examples(100), deadline=None)
@given(st.integers(1, 5).flatmap(lambda n: st.lists(st.lists(st.integers(0, 9), min_size=n, max_size=n),
                                                    min_size=1, max_size=5)))
def test_the_assignment_is_optimal_and_one_to_one(benefit):
    pairs = max_assignment(benefit)
    rows, cols = len(benefit), len(benefit[0])
    assert len(pairs) == min(rows, cols)
    assert len({i for i, _ in pairs}) == len({j for _, j in pairs}) == len(pairs)
    if rows <= cols:
        best = max(sum(benefit[i][j] for i, j in enumerate(perm))
                   for perm in itertools.permutations(range(cols), rows))
    else:
        best = max(sum(benefit[i][j] for j, i in enumerate(perm))
                   for perm in itertools.permutations(range(rows), cols))
    assert sum(benefit[i][j] for i, j in pairs) == best
    assert max_assignment(benefit) == pairs  # deterministic


@settings(max_examples=examples(200), deadline=None)
@given(st.integers(1, 7).flatmap(lambda n: st.lists(
    st.lists(st.one_of(st.just(0), st.just(0), st.integers(1, 9)), min_size=n, max_size=n), min_size=1, max_size=7)))
def test_the_assignment_of_each_group_is_the_assignment_of_the_whole(benefit):
    """A long list's assignment is solved for each group of items linked by a pair worth
    something (the solver is O(n^3) in Python): the same worth as the whole table's, one-to-one,
    and no pair worth nothing kept but as the whole would."""
    from factjudge.judges.rules.compare import _assignment

    split = _assignment(benefit, split_from=1)
    whole = max_assignment(benefit)
    assert len({i for i, _ in split}) == len({j for _, j in split}) == len(split)
    worth = [sum(benefit[i][j] for i, j in pairs) for pairs in (split, whole)]
    assert worth[0] == worth[1], (split, whole)


def test_a_long_list_aligns_its_equal_items_first_however_long():
    """From 100 items the equal pairs no longer decided the alignment (100 similar pairs could
    outweigh an equal one's 1,000,000): the whole table went to the O(n^3) solver, and 1,000
    shuffled equal line items took 41 s. An equal pair is now worth more than any sum of others,
    at any length; this guards the result (the time is benchmarks/nested_lists.py's)."""
    items = [{"description": f"part {i}", "qty": i % 7, "unit_price": f"{i}.50"} for i in range(150)]
    shuffled = items[::-1]
    result, g, p = judged([{"id": "g", "fact_type": "invoice", "line_items": items}],
                          [{"id": "p", "fact_type": "invoice", "line_items": shuffled}])
    assert (g, p) == (["TP"], ["TP"])
    counts = result.to_dict()["analysis"]["fields"]["invoice"]
    assert counts["line_items[]"]["correct"] == 150 and counts["line_items[].unit_price"]["wrong"] == 0


# --------------------------------------------------------------------------- fields per fact type

PER_TYPE = {"fields": {"invoice": ["vendor", "total"], "line_item": ["sku"]}}
GOLD = [{"id": "g1", "fact_type": "invoice", "vendor": "Acme", "total": 100, "note": "paid", "po": "7"},
        {"id": "g2", "fact_type": "line_item", "sku": "A1", "qty": 2},
        {"id": "g3", "fact_type": "payment", "amount": 5, "method": "card"}]
PRED = [{"id": "p1", "fact_type": "invoice", "vendor": "Acme", "total": 120, "note": "unpaid", "confidence": 0.9},
        {"id": "p2", "fact_type": "line_item", "sku": "A1", "qty": 3},
        {"id": "p3", "fact_type": "payment", "amount": 5, "method": "cash"}]


def test_fields_per_fact_type_compare_each_types_own_list():
    result, g, p = judged(GOLD, PRED, PER_TYPE)
    # line_item: qty differs but only sku is listed; payment is not listed: all its gold fields count
    assert g == ["FN", "TP", "FN"] and p == ["FP", "TP", "FP"]
    assert "note" not in result.gold_facts[0]["factjudge"]["reasoning"]
    near = result.analysis.near_misses
    assert [(n.fact_type, n.agree, n.differ) for n in near if n.fact_type == "invoice"] == [
        ("invoice", ["vendor"], ["total"])]


def test_fields_per_fact_type_reach_the_prompt_tables_and_the_warnings():
    config = JudgeConfig(**PER_TYPE)
    per_type, warnings_ = compared_fields(GOLD, PRED, config)
    assert per_type is not None
    assert per_type["invoice"] == ("vendor", "total") and per_type["line_item"] == ("sku",)
    assert per_type["payment"] == ("amount", "method")
    table = fact_tables(PRED[:1], per_type)
    assert "note" not in table and "confidence" not in table and "vendor" in table
    assert "Fields to compare" not in system_message("gold", config)  # the tables say it per type
    # no warning about invoice's unlisted fields (po, note, confidence)
    assert not any(w.startswith("invoice") for w in warnings_)
    listed_missing = compared_fields(GOLD, PRED, JudgeConfig(fields={"invoice": ["vendor", "po"]}))[1]
    assert any(w.startswith("invoice: gold facts carry po") for w in listed_missing)


def test_the_list_form_of_fields_keeps_its_meaning():
    config = JudgeConfig(fields=["vendor"])
    assert compared_fields(GOLD, PRED, config) == (None, [])
    assert config.fields_for("invoice") == config.fields_for("anything") == ["vendor"]
    assert "Fields to compare: vendor" in system_message("gold", config)


def test_an_empty_list_for_one_type_is_refused():
    with pytest.raises(InputError, match="fields of 'invoice'"):
        parse_config({"fields": {"invoice": [], "line_item": ["sku"]}})


@pytest.mark.parametrize(("gold", "pred", "status"), [
    ({"zip": "80331"}, {"zip": 80331}, "TP"),
    ({"city": "München"}, {"city": "Munchen"}, "TP"),
    ({"city": "Paris", "zip": None}, {"city": "Paris"}, "TP"),  # null is absent, as at the top level
    ({"street": {"no": "12"}}, {"street": {"no": 12}}, "TP"),  # a record inside a record
    ({"city": "Paris"}, {"city": "Lyon"}, "FN"),
    ({"amount": "12.50", "currency": "EUR"}, {"amount": "12.50", "currency": "USD"}, "FN"),
])
def test_a_nested_record_is_compared_field_by_field_as_a_lists_record(gold, pred, status):
    """A pydantic sub-model's dict was compared by its JSON text ({"zip": "80331"} was not
    {"zip": 80331}) while the same record inside a list was normalised (a review)."""
    result, g, _ = judged([{"id": "g1", "fact_type": "t", "name": "x", "addr": gold}],
                          [{"id": "p1", "fact_type": "t", "name": "x", "addr": pred}])
    assert g == [status], result.gold_facts[0]["factjudge"]["reasoning"]


def test_a_pydantic_models_dump_and_its_json_are_the_same_record():
    """model_dump() holds Decimal and date items in lists, tuples, Enums and UUIDs: each was "not
    comparable" (or "Status.PAID" vs "paid"), and the very same invoice was FN, its list items
    counted missing and spurious."""
    import datetime
    import enum
    import uuid
    from decimal import Decimal

    from pydantic import BaseModel

    class Status(str, enum.Enum):
        PAID = "paid"

    class Invoice(BaseModel):
        status: Status
        ref: uuid.UUID
        prices: list[Decimal]
        due_dates: list[datetime.date]
        dims: tuple[int, int]

    inv = Invoice(status=Status.PAID, ref=uuid.UUID(int=7), prices=[Decimal("1.10"), Decimal("2.00")],
                  due_dates=[datetime.date(2024, 1, 2)], dims=(3, 4))
    gold = {"id": "g", "fact_type": "invoice", **json.loads(inv.model_dump_json())}
    pred = {"id": "p", "fact_type": "invoice", **inv.model_dump()}
    result, g, p = judged([gold], [pred])
    assert (g, p) == (["TP"], ["TP"]), result.gold_facts[0]["factjudge"]["reasoning"]
    fields = result.to_dict()["analysis"]["fields"]["invoice"]
    assert all(c["missing"] == c["spurious"] == c["wrong"] == 0 for c in fields.values()), fields
    assert fields["dims[]"]["correct"] == 2 and fields["prices[]"]["correct"] == 2


@pytest.mark.parametrize(("gold", "pred"), [
    (["", "a"], ["a"]), ([None, "a"], ["a"]), ([{}, {"k": 1}], [{"k": 1}]), (["a", "  "], ["a", None]),
])
def test_an_absent_item_of_a_list_is_no_item(gold, pred):
    """The judge called the lists different ("1 item missing: item 1 ((missing))") while the field
    counts counted no missing item."""
    result, g, _ = judged([{"id": "g", "fact_type": "t", "x": 1, "items": gold}],
                          [{"id": "p", "fact_type": "t", "x": 1, "items": pred}])
    assert g == ["TP"], result.gold_facts[0]["factjudge"]["reasoning"]
    counts = result.to_dict()["analysis"]["fields"]["t"]["items[]"]
    assert (counts["correct"], counts["missing"], counts["spurious"]) == (1, 0, 0)


def test_an_item_is_named_by_its_place_as_written():
    result, g, _ = judged([{"id": "g", "fact_type": "t", "items": ["", "b", "a"]}],
                          [{"id": "p", "fact_type": "t", "items": ["a"]}])
    assert g == ["FN"] and "item 2 (b)" in result.gold_facts[0]["factjudge"]["reasoning"]


@pytest.mark.parametrize("empty", [{"street": None, "city": None}, {"street": "", "city": " "}, [""], [None, {}]])
def test_a_record_or_list_of_absent_values_is_absent(empty):
    """What strict structured outputs write for a sub-model not found, against a gold null."""
    result, g, p = judged([{"id": "g", "fact_type": "t", "x": 1, "address": None}],
                          [{"id": "p", "fact_type": "t", "x": 1, "address": empty}])
    assert (g, p) == (["TP"], ["TP"]), result.gold_facts[0]["factjudge"]["reasoning"]
    assert "address" not in result.to_dict()["analysis"]["fields"]["t"]


def test_an_ordered_path_no_fact_has_is_warned_of_and_the_reports_spelling_is_read():
    """`ordered` was never checked: a typo left the order unchecked without a word, and the field
    table's own spelling (items[].sub) was ignored."""
    from factjudge.core.scope import field_check

    config = JudgeConfig(ordered=["line_itmes", "steps[]", "line_items[].taxes"])
    assert config.ordered == ["line_itmes", "steps", "line_items.taxes"]
    assert field_check(config, ["line_items", "steps"], "data.jsonl") == [
        "ordered 'line_itmes': no fact in data.jsonl carries this field (did you mean 'line_items'?): ignored"]
    gold = [{"id": "g", "fact_type": "recipe", "steps": ["mix", "bake"]}]
    pred = [{"id": "p", "fact_type": "recipe", "steps": ["bake", "mix"]}]
    assert judged(gold, pred, {"ordered": ["steps[]"]})[1] == ["FN"]


def test_a_named_field_no_fact_has_beside_others_is_a_warning_not_a_refusal():
    """run_judge of one document whose facts lack `note` was refused ("every pair would match"),
    though `value` was still compared; a list none of whose fields any fact has still is."""
    from factjudge.core.scope import field_check

    config = JudgeConfig(fields=["value", "note"])
    assert field_check(config, ["id", "fact_type", "value"], "doc") == [
        "fields 'note': no fact in doc carries this field: absent on both sides"]
    gold = [{"id": "g", "fact_type": "t", "value": 1}]
    assert judged(gold, [{"id": "p", "fact_type": "t", "value": 2}], {"fields": ["value", "note"]})[1] == ["FN"]
    with pytest.raises(InputError, match="carries 'valeu' \\(did you mean 'value'\\?\\)"):
        field_check(JudgeConfig(fields=["valeu"]), ["id", "fact_type", "value"], "doc")


# --------------------------------------------------------------------------- mixed lists


@pytest.mark.parametrize(("gold", "pred"), [
    ([{"k": 1}, "x"], ["x", {"k": 1}]),            # a record and a value
    ([[1, 2], [3]], [[3], [2, 1]]),                # lists of lists, the inner lists shuffled too
    ([["a", {"k": 1}], 2.0], [2, [{"k": "1"}, "a"]]),  # values read as values are (2.0 = 2, "1" = 1)
])
def test_a_mixed_list_is_unordered_as_other_lists_are(gold, pred):
    facts = [{"id": "g", "fact_type": "t", "m": gold}], [{"id": "p", "fact_type": "t", "m": pred}]
    result, g, p = judged(*facts)
    assert (g, p) == (["TP"], ["TP"]), result.gold_facts[0]["factjudge"]["reasoning"]
    assert "in another order" in result.gold_facts[0]["factjudge"]["reasoning"]
    _, g, p = judged(*facts, {"ordered": ["m"]})
    assert (g, p) == (["FN"], ["FP"])


def test_a_mixed_list_says_which_items_differ():
    facts = ([{"id": "g", "fact_type": "t", "m": [{"k": 1, "n": "a"}, "x", "y"]}],
             [{"id": "p", "fact_type": "t", "m": ["x", {"k": 2, "n": "a"}, "z"]}])
    result, g, _ = judged(*facts)
    why = result.gold_facts[0]["factjudge"]["reasoning"]
    assert g == ["FN"] and "item 1 (a) k: 1 vs 2" in why and "item 3 (y)" in why, why
    result, _, _ = judged(*facts, {"ordered": ["m"]})
    assert "item 1 (a) a record vs a value" in result.gold_facts[0]["factjudge"]["reasoning"]
