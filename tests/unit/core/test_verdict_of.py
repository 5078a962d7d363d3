"""The one accessor of an output fact's verdict reads both layouts: the verdict under ``factjudge``
(a fact's own ``status`` then stays the fact's) and, from an older factjudge, beside the fields."""
from factjudge.models import own_fields, status_of, verdict_of

NEW = {"id": "g1", "fact_type": "item", "status": "shipped", "description": "Switch",
       "factjudge": {"in_scope": True, "status": "FN", "matched_ids": [], "description": "",
                     "reasoning": "no match", "linked_reasoning": {}}}
OLD = {"id": "g1", "fact_type": "item", "name": "Switch", "in_scope": True, "status": "FN",
       "matched_ids": [], "description": "", "reasoning": "no match", "linked_reasoning": {}}


def test_the_new_layout_keeps_the_facts_own_fields_apart():
    assert status_of(NEW) == "FN" and verdict_of(NEW)["reasoning"] == "no match"
    assert own_fields(NEW) == {"id": "g1", "fact_type": "item", "status": "shipped", "description": "Switch"}


def test_the_old_layout_reads_the_same_verdict():
    assert status_of(OLD) == "FN" and verdict_of(OLD)["reasoning"] == "no match"
    assert own_fields(OLD) == {"id": "g1", "fact_type": "item", "name": "Switch"}
    assert status_of({"id": "x", "fact_type": "t"}) is None  # an unjudged fact has no verdict
