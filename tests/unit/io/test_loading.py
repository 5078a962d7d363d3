import json

import pytest

from factjudge import InputError, JudgeConfig, load_config, load_facts
from factjudge.core.scope import in_scope_facts
from factjudge.io.config import parse_config


def test_json_list_object_and_jsonl_forms_load_the_same(write_json, tmp_path):
    facts = [{"id": 1, "fact_type": "revenue", "value": "12", "extra": {"a": [1, 2]}},
             {"id": "b", "fact_type": "ceo", "name": "X"}]
    a = load_facts(write_json("a.json", facts))
    b = load_facts(write_json("b.json", {"facts": facts}))
    c = load_facts(write_json("c.jsonl", facts))
    assert a == b == c
    assert a[0]["id"] == "1"  # integer ids become their decimal string
    assert a[0]["extra"] == {"a": [1, 2]}  # free-form fields untouched
    assert list(a[0]) == ["id", "fact_type", "value", "extra"]  # field order kept


def test_jsonl_skips_blank_lines_and_names_bad_line(tmp_path):
    p = tmp_path / "f.jsonl"
    p.write_text('{"id": "a", "fact_type": "t"}\n\n{"id": "b", "fact_type": \n', encoding="utf-8")
    with pytest.raises(InputError, match=r"f\.jsonl: line 3 column 26: invalid JSON: Expecting value$"):
        load_facts(p)


@pytest.mark.parametrize(("name", "text", "at"), [
    ("f.jsonl", '{"id": "a", "fact_type": "t"}\n{"id": "b", "v":\n', "line 2 column 17"),
    ("f.json", '[{"id": "a", "fact_type": \n\n\n', "line 1 column 26"),  # the text ends on line 1
])
def test_a_line_cut_short_is_named_not_the_next(tmp_path, name, text, at):
    """A JSON text ending too soon was reported on the line after it (where the parser stood)."""
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=rf"{name.replace('.', '[.]')}: {at}: invalid JSON"):
        load_facts(p)


@pytest.mark.parametrize("record, problem", [
    ([1, 2], "must be a JSON object"),
    ({"fact_type": "t"}, "missing or empty 'id'"),
    ({"id": "", "fact_type": "t"}, "missing or empty 'id'"),
    ({"id": True, "fact_type": "t"}, "'id' must be a string or an integer, got boolean true"),
    ({"id": 1.5, "fact_type": "t"}, "'id' must be a string or an integer, got number 1.5"),
    ({"id": None, "fact_type": "t"}, "missing or empty 'id'"),
    ({"id": "x"}, "missing or empty 'fact_type'"),
    ({"id": "x", "fact_type": "  "}, "missing or empty 'fact_type'"),
    ({"id": "x", "fact_type": 3}, "'fact_type' must be a string, got number 3"),
    ({"id": "x", "fact_type": "t", "factjudge": {"status": "TP"}}, "'factjudge' is reserved"),
])
def test_bad_records_are_named(write_json, record, problem):
    path = write_json("g.json", [{"id": "ok", "fact_type": "t"}, record])
    with pytest.raises(InputError) as exc:
        load_facts(path)
    msg = str(exc.value)
    assert msg.startswith(f"{path}: record 2")  # counted from 1, like JSONL lines
    assert problem in msg
    assert "\n" not in msg


def test_duplicate_id_names_both_records(write_json):
    path = write_json("g.jsonl", [{"id": "a", "fact_type": "t"}, {"id": "a", "fact_type": "u"}])
    with pytest.raises(InputError, match=r"line 2 \(id 'a'\): duplicate id, first seen at line 1"):
        load_facts(path)


def test_integer_and_string_id_collide(write_json):
    path = write_json("g.json", [{"id": 7, "fact_type": "t"}, {"id": "7", "fact_type": "t"}])
    with pytest.raises(InputError, match="duplicate id"):
        load_facts(path)


def test_not_a_list_and_unreadable_files(tmp_path, write_json):
    with pytest.raises(InputError, match="expected a list of facts"):
        load_facts(write_json("g.json", {"facts": [], "other": 1}))
    with pytest.raises(InputError, match="cannot read file"):
        load_facts(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("[{", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad\.json: line 1 column 3: invalid JSON"):
        load_facts(bad)


def test_config_yaml_and_json(tmp_path):
    y = tmp_path / "c.yaml"
    y.write_text("entity_types: [revenue]\nmatching_rules:\n  - same year\n  - {field: value, rule: exact}\n"
                 "tolerances:\n  value: {relative: 0.01, absolute: 0}\none_to_one: true\n", encoding="utf-8")
    cfg = load_config(y)
    assert cfg.entity_types == ["revenue"] and cfg.one_to_one is True
    assert cfg.matching_rules[1] == {"field": "value", "rule": "exact"}
    assert cfg.tolerances["value"].relative == 0.01
    j = tmp_path / "c.json"
    j.write_text(json.dumps(cfg.model_dump()), encoding="utf-8")
    assert load_config(j) == cfg
    assert load_config(None) == JudgeConfig()
    empty = tmp_path / "empty.yml"
    empty.write_text("", encoding="utf-8")
    assert load_config(empty) == JudgeConfig()


@pytest.mark.parametrize("data, problem", [
    ({"entity_type": ["x"]}, "unknown config key 'entity_type'"),
    ({"entity_types": "revenue"}, "config key 'entity_types'"),
    ({"one_to_one": "yes"}, "config key 'one_to_one'"),
    ({"tolerances": {"value": {"relative": "1%"}}}, "config key 'tolerances.value.relative'"),
    ({"tolerances": {"value": {"relativ": 0.1}}}, "unknown config key 'tolerances.value.relativ'"),
    ({"fields": [1]}, "config key 'fields.0'"),
    (["x"], "must be a mapping"),
])
def test_bad_config_values(data, problem):
    with pytest.raises(InputError) as exc:
        parse_config(data, "cfg.yaml")
    assert str(exc.value).startswith("cfg.yaml: ")
    assert problem in str(exc.value)


def test_bad_yaml_and_extension(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("entity_types: [a\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"c\.yaml: line \d+: invalid YAML"):
        load_config(p)
    t = tmp_path / "c.toml"
    t.write_text("", encoding="utf-8")
    with pytest.raises(InputError, match="must be a .json, .yaml or .yml"):
        load_config(t)


def test_scope():
    facts = [{"id": "1", "fact_type": "a"}, {"id": "2", "fact_type": "b"}]
    assert in_scope_facts(facts, JudgeConfig()) == facts
    assert in_scope_facts(facts, JudgeConfig(entity_types=["b"])) == [facts[1]]
    assert in_scope_facts(facts, JudgeConfig(entity_types=["A"])) == []  # exact, case-sensitive


def test_a_byte_order_mark_is_not_an_error(tmp_path):
    fact = b'{"id": "a", "fact_type": "t"}'
    for name, body in (("g.json", b"[" + fact + b"]"), ("g.jsonl", fact + b"\n")):
        path = tmp_path / name
        path.write_bytes(b"\xef\xbb\xbf" + body)
        assert load_facts(path)[0]["id"] == "a"


def test_null_list_keys_mean_defaults_and_numbers_are_named(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("entity_types:\nmatching_rules:\ntolerances:\n", encoding="utf-8")
    assert load_config(path) == JudgeConfig()
    path.write_text("tolerances:\n  value: {relative: '0.1'}\n", encoding="utf-8")
    with pytest.raises(InputError, match="'tolerances.value.relative': Input should be a number$"):
        load_config(path)
