"""What the scan of an eval's input does per fact and per line (issue #39: the scan of 1,000 x 20
facts runs alone before any judging). Counts, not seconds: each test fails on the work it stops."""
import json
from pathlib import Path

import pytest
from hypo import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from factjudge import InputError
from factjudge.io import jsonl
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


# --------------------------------------------------------------- duplicate keys, found by counting

STRING = st.lists(st.sampled_from(["a", ":", "x:y", "\\u003a", "\\u003A", "\\u00e9", '\\"', "{", "[", "é", "\\\\"]),
                  max_size=4).map(lambda parts: '"' + "".join(parts) + '"')
KEY = st.sampled_from(['"a"', '"b"', '"id"', '"a:b"', '"\\u003a"', '"b\\u003A"', '"é"'])
SPACE = st.sampled_from(["", " ", "\n"])
SCALAR = STRING | st.sampled_from(["1", "-2.5e3", "true", "null", "NaN", "1" * 30])


def _json(children):
    array = st.lists(children, max_size=4).map(lambda items: "[" + ",".join(items) + "]")
    pair = st.tuples(KEY, SPACE, children).map(lambda p: f"{p[0]}{p[1]}:{p[1]}{p[2]}")
    return array | st.lists(pair, max_size=4).map(lambda pairs: "{" + ", ".join(pairs) + "}")


TEXT = st.tuples(st.recursive(SCALAR, _json, max_leaves=24), st.sampled_from(["", "", " x", "}", ',"a":1}']))


def _outcome(parse, text):
    try:
        return "value", repr(parse(text))
    except jsonl._DuplicateKey as exc:
        return "duplicate", exc.key, exc.record
    except (ValueError, RecursionError) as exc:
        return type(exc).__name__, str(exc)


def _with_the_hook(text):
    """What the parse was before the count: the hook on every text of two objects or more, and
    on a text of one object that parsed."""
    if text.count("{") <= 1:
        json.loads(text)  # its error stands
    return json.loads(text, object_pairs_hook=jsonl._unique_keys)


@given(TEXT)
@settings(max_examples=examples(400))
def test_counting_finds_every_duplicate_key_the_hook_finds(drawn):
    text = drawn[0] + drawn[1]
    assert _outcome(jsonl._loads, text) == _outcome(_with_the_hook, text)


def test_a_dataset_line_is_parsed_without_the_hook(monkeypatch):
    calls, hook = [], jsonl._unique_keys

    def counting(pairs):
        calls.append(len(pairs))
        return hook(pairs)

    monkeypatch.setattr(jsonl, "_unique_keys", counting)
    monkeypatch.setattr(jsonl, "_UNIQUE", json.JSONDecoder(object_pairs_hook=counting), raising=False)
    fact = {"id": "g1", "fact_type": "revenue", "company": "Titan", "value": "9,935.6", "unit": "USD million"}
    line = json.dumps({"doc_id": "d1", "gold_facts": [fact] * 10, "predicted_facts": [fact] * 10})
    assert jsonl.parse_json_line(line.encode(), Path("d.jsonl"), 1) == json.loads(line)
    timed = json.dumps({"doc_id": "d1", "text": "at 12:30: up", "gold_facts": [{**fact, "at": "9:15"}] * 3,
                        "predicted_facts": []})
    assert jsonl.parse_json_line(timed.encode(), Path("d.jsonl"), 1) == json.loads(timed)
    assert calls == []
    with pytest.raises(InputError, match=r"^d\.jsonl: line 1: duplicate key 'value' in one object \(id 'g1'\)"):
        jsonl.parse_json_line(line.replace('"unit"', '"value"', 1).encode(), Path("d.jsonl"), 1)


# --------------------------------------------------------------- lines, scope

@given(st.lists(st.sampled_from([b"", b" ", b"\t", b"\r", b"\x0b", b"\x0c", b"\xc2\xa0", b"\x00", b"{}", b"x"]),
                max_size=30).map(lambda parts: b"".join(parts)) | st.binary(max_size=40))
@settings(max_examples=examples(200))
def test_the_lines_read_are_those_strip_leaves_something_of(tmp_path_factory, body):
    path = tmp_path_factory.mktemp("lines") / "f.jsonl"
    path.write_bytes(body)
    *ended, last = body.split(b"\n")  # lines end at b"\n" only
    expected, offset = [], 0
    for lineno, raw in enumerate([line + b"\n" for line in ended] + ([last] if last else []), start=1):
        if raw.strip():  # as jsonl_lines read them before: every line but blank ones, their offsets
            expected.append((lineno, offset, raw))
        offset += len(raw)
    assert list(jsonl.jsonl_lines(path)) == expected


def test_in_scope_facts_is_a_new_list_whatever_the_scope():
    from factjudge import JudgeConfig
    from factjudge.core.scope import in_scope_facts

    facts = [{"id": "1", "fact_type": "a"}, {"id": "2", "fact_type": "b"}]
    assert in_scope_facts(facts, JudgeConfig()) == facts and in_scope_facts(facts, JudgeConfig()) is not facts
    assert in_scope_facts(facts, JudgeConfig(entity_types=["b", "c"])) == [facts[1]]


def test_a_valid_fact_line_costs_no_message_text(tmp_path):
    from factjudge import JudgeConfig
    from factjudge.io.formats.fact_jsonl import FactLines

    path = tmp_path / "g.jsonl"
    path.write_text("".join(json.dumps({"doc_id": f"d{i % 3}", "id": f"f{i}", "fact_type": "t", "at": "9:15"}) + "\n"
                            for i in range(30)))
    Where.made = 0
    source = FactLines(path, unit=Where("line"))
    entries = list(source.read(JudgeConfig()))
    with source.opened() as load:
        facts = load([e.key for e in entries], [e.line for e in entries])
    assert [f[0]["id"] for f in facts] == [f"f{i}" for i in range(30)] and Where.made == 0
