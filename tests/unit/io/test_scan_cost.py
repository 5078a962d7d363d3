"""What the scan of an eval's input does per fact and per line (issue #39: the scan of 1,000 x 20
facts runs alone before any judging). Counts, not seconds: each test fails on the work it stops."""
import pytest

from factjudge import InputError
from factjudge.io.facts import validate_facts


class Where(str):
    """A record's label that counts the times it is made into text."""

    made = 0

    def __str__(self):
        Where.made += 1
        return str.__str__(self)

    def __format__(self, spec):
        Where.made += 1
        return str.__format__(self, spec)


def test_a_valid_fact_costs_no_message_text():
    Where.made = 0
    facts = [{"id": f"f{i}", "fact_type": "t", "value": str(i)} for i in range(50)]
    assert validate_facts([(Where(f"line {i}"), f) for i, f in enumerate(facts, 1)], "g.jsonl",
                          checked=True) == facts
    assert Where.made == 0
    with pytest.raises(InputError, match=r"^g\.jsonl: line 2 \(id 'a'\): duplicate id, first seen at line 1$"):
        validate_facts([(Where("line 1"), {"id": "a", "fact_type": "t"}),
                        (Where("line 2"), {"id": "a", "fact_type": "t"})], "g.jsonl", checked=True)
