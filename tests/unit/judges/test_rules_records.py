"""Records as extractors write them (issue 34): nulls, number and date locales, lists of records
inside a fact, fields per fact type."""
import warnings

import pytest

from factjudge import run_judge
from factjudge.core.scope import merge_warnings, nothing_to_compare
from factjudge.models import JudgeConfig


def judged(gold, pred, config=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run_judge(gold, pred, config or {})
    return result, [f["status"] for f in result.gold_facts], [f["status"] for f in result.predicted_facts]


# --------------------------------------------------------------------------- null is absence


def test_fields_null_on_both_sides_are_no_evidence_of_a_match():
    # the case: fields naming only attributes neither fact has linked two companies
    gold = [{"id": "g1", "fact_type": "supplier", "name": "Northwind Traders", "po_number": None, "phone": None}]
    pred = [{"id": "p1", "fact_type": "supplier", "name": "Fabrikam Holdings", "po_number": None}]
    result, g, p = judged(gold, pred, {"fields": ["po_number", "phone"]})
    assert (g, p) == (["FN"], ["FP"])
    assert "Nothing to compare: po_number, phone null or absent on both sides" in result.gold_facts[0]["reasoning"]
    assert any(w.startswith("supplier: 2 facts had nothing to compare") for w in result.warnings)


def test_a_field_null_on_both_sides_is_not_compared():
    gold = [{"id": "g1", "fact_type": "invoice", "vendor": "Acme", "total": 5, "note": None}]
    pred = [{"id": "p1", "fact_type": "invoice", "vendor": "Acme", "total": 5, "note": None}]
    result, g, p = judged(gold, pred)
    assert (g, p) == (["TP"], ["TP"])
    assert "note" not in result.gold_facts[0]["reasoning"]
    assert not any("nothing to compare" in w for w in result.warnings)


def test_a_null_prediction_against_a_gold_value_is_a_missing_value():
    gold = [{"id": "g1", "fact_type": "invoice", "vendor": "Acme", "total": 5}]
    pred = [{"id": "p1", "fact_type": "invoice", "vendor": "Acme", "total": None}]
    result, g, p = judged(gold, pred)
    assert (g, p) == (["FN"], ["FP"])  # the pair differs on total
    assert "total: missing on candidate" in result.gold_facts[0]["reasoning"]


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
