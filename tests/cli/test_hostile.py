"""Hostile input: files that parse but cannot be processed, YAML bombs, a corrupt response cache,
and outputs that are devices, FIFOs or symlinks. Each must fail with one line naming the file and
the record (exit 2 from the CLI), or be handled, never a traceback or a destroyed file."""
import json
import os
import sqlite3
import stat
import threading
import time
from pathlib import Path

import pytest

from factjudge import InputError, load_config, load_facts, run_judge
from factjudge.io.config import parse_config
from factjudge.io.facts import coerce_facts
from factjudge.io.files import check_writable, same_file, write_atomic
from factjudge.io.jsonl import check_json_value
from factjudge.judges.llm.cache import ResponseCache


def one_line(exc: pytest.ExceptionInfo) -> str:
    msg = str(exc.value)
    assert "\n" not in msg and msg.strip() == msg
    msg.encode("utf-8")  # printable on any UTF-8 stderr: no lone surrogate in the message
    return msg


def nested(depth: int) -> str:
    return "[" * depth + "1" + "]" * depth


# --------------------------------------------------------------------------- unprocessable JSON

# JSON text of one field value that json.loads accepts but that cannot be processed
HOSTILE_VALUES = [
    (nested(300), "nested deeper than 100 levels"),
    (nested(100_000), "nested deeper than 100 levels"),  # json.loads itself raises RecursionError
    ('"abc\\ud800def"', "lone surrogate \\ud800"),
    ('"\\udfff"', "lone surrogate \\udfff"),
    ("1" * 4301, "integer with more than 4300 digits"),
    ("-" + "9" * 5000, "integer with more than 4300 digits"),
    ("NaN", "NaN is not valid JSON"),
    ("Infinity", "Infinity is not valid JSON"),
    ("-Infinity", "-Infinity is not valid JSON"),
]


@pytest.mark.parametrize("value, problem", HOSTILE_VALUES, ids=[
    "depth300", "depth100000", "surrogate", "low-surrogate", "int4301", "negative-int5000", "nan",
    "inf", "-inf"])
@pytest.mark.parametrize("form", ["json", "jsonl", "facts-object"])
def test_unprocessable_values_are_rejected_at_load_naming_file_and_record(
        tmp_path, value, problem, form):
    ok = '{"id": "a", "fact_type": "t", "value": 1}'
    bad = f'{{"id": "b", "fact_type": "t", "value": {value}}}'
    if form == "jsonl":
        path = tmp_path / "f.jsonl"
        path.write_text(f"{ok}\n{bad}\n", encoding="utf-8")
        record = "line 2"
    else:
        path = tmp_path / "f.json"
        body = f"[{ok}, {bad}]"
        path.write_text(body if form == "json" else f'{{"facts": {body}}}', encoding="utf-8")
        # json.loads cannot even parse 100,000 levels: then the position is named instead
        record = "line 1 column" if len(value) > 100_000 else "record 2"
    with pytest.raises(InputError) as exc:
        load_facts(path)
    msg = one_line(exc)
    assert msg.startswith(f"{path}: {record}")
    assert problem in msg


def test_deep_nesting_in_a_json_file_names_the_position(tmp_path):
    path = tmp_path / "f.json"
    before = ' {"id": "b", "fact_type": "t", "v": '
    path.write_text('[{"id": "a", "fact_type": "t"},\n' + before + nested(100_000) + "}]",
                    encoding="utf-8")
    with pytest.raises(InputError) as exc:
        load_facts(path)
    # the file's "[" and "{" are levels 1 and 2, so the value's 99th bracket is level 101
    assert one_line(exc) == (f"{path}: line 2 column {len(before) + 99}: nested deeper than "
                             "100 levels")


def test_nesting_up_to_the_limit_is_fine(write_json):
    value = json.loads(nested(99))  # the fact object is level 1
    facts = load_facts(write_json("f.json", [{"id": "a", "fact_type": "t", "v": value}]))
    assert facts[0]["v"] == value


def test_the_problem_names_the_field_inside_the_record(tmp_path):
    path = tmp_path / "f.jsonl"
    path.write_text('{"id": "a", "fact_type": "t", "meta": {"scores": [1, NaN]}}\n',
                    encoding="utf-8")
    with pytest.raises(InputError) as exc:
        load_facts(path)
    assert one_line(exc) == (f"{path}: line 1: field 'meta.scores[1]': NaN is not valid JSON "
                             "(JSON has no NaN or Infinity; write null or a string)")


def test_a_lone_surrogate_in_a_key_is_rejected_and_the_message_stays_printable(tmp_path):
    path = tmp_path / "f.jsonl"
    path.write_text('{"id": "a", "fact_type": "t", "k\\ud83d": 1}\n', encoding="utf-8")
    with pytest.raises(InputError) as exc:
        load_facts(path)
    assert "lone surrogate \\ud83d" in one_line(exc)


def test_a_surrogate_pair_is_fine(tmp_path):
    path = tmp_path / "f.jsonl"
    path.write_text('{"id": "a", "fact_type": "t", "v": "\\ud83d\\ude00"}\n', encoding="utf-8")
    assert load_facts(path)[0]["v"] == "\U0001F600"


def test_a_jsonl_string_may_hold_unicode_line_separators(tmp_path):
    # U+2028, U+2029 and U+0085 are legal raw inside JSON strings: only \n ends a JSONL line
    path = tmp_path / "f.jsonl"
    path.write_text('{"id": "a", "fact_type": "t", "v": "x\u2028y\x85z\u2029w"}\r\n'
                    '{"id": "b", "fact_type": "t"}\n', encoding="utf-8")
    facts = load_facts(path)
    assert [f["id"] for f in facts] == ["a", "b"] and facts[0]["v"] == "x\u2028y\x85z\u2029w"


@pytest.mark.parametrize("value, problem", [
    (float("nan"), "NaN is not valid JSON"),
    (float("-inf"), "-Infinity is not valid JSON"),
    ("\ud800", "lone surrogate \\ud800"),
    (10 ** 4300, "integer with more than 4300 digits"),
    (-(10 ** 4300), "integer with more than 4300 digits"),
], ids=["nan", "-inf", "surrogate", "int4301", "negative-int4301"])
def test_python_api_facts_get_the_same_checks(value, problem):
    facts = [{"id": "a", "fact_type": "t", "v": [value]}]
    with pytest.raises(InputError) as exc:
        coerce_facts(facts, "gold facts")
    msg = one_line(exc)
    assert msg.startswith("gold facts: record 1: field 'v[0]': ") and problem in msg
    with pytest.raises(InputError, match="gold facts: record 1"):
        run_judge(facts, [], {})


def test_python_api_deep_and_cyclic_values_are_rejected_without_recursion():
    deep: list = []
    for _ in range(100_000):  # built without recursion, so only the check can trip on it
        deep = [deep]
    cyclic: dict = {}
    cyclic["self"] = cyclic
    for value in (deep, cyclic):
        with pytest.raises(InputError) as exc:
            coerce_facts([{"id": "a", "fact_type": "t", "v": value}], "predicted facts")
        assert "nested deeper than 100 levels" in one_line(exc)


def test_largest_allowed_integer_passes():
    check_json_value({"v": 10 ** 4300 - 1, "w": -(10 ** 4300 - 1)}, "x")


def test_check_json_value_is_the_shared_entry_point():
    with pytest.raises(InputError) as exc:
        check_json_value({"gold_facts": [{"id": 1, "x": float("inf")}]}, "d.jsonl: line 7")
    assert one_line(exc).startswith("d.jsonl: line 7: field 'gold_facts[0].x': Infinity is not")


@pytest.mark.parametrize("value, problem", HOSTILE_VALUES[:1] + HOSTILE_VALUES[2:],
                         ids=lambda v: v[:20] if isinstance(v, str) else None)
def test_json_configs_are_checked_too(tmp_path, value, problem):
    path = tmp_path / "c.json"
    path.write_text(f'{{"matching_rules": [{{"rule": {value}}}]}}', encoding="utf-8")
    with pytest.raises(InputError) as exc:
        load_config(path)
    msg = one_line(exc)
    assert msg.startswith(f"{path}: ") and problem in msg


def test_a_long_integer_before_deep_nesting_still_gives_one_line(tmp_path):
    # int() fails first, then the second reading (integers marked) meets the nesting
    path = tmp_path / "f.jsonl"
    path.write_text(f'{{"id": "a", "fact_type": "t", "n": {"1" * 5000}, "v": {nested(100_000)}}}\n',
                    encoding="utf-8")
    with pytest.raises(InputError) as exc:
        load_facts(path)
    assert one_line(exc).startswith(f"{path}: line 1 column ")
    assert one_line(exc).endswith("nested deeper than 100 levels")


def test_json_config_too_deep_for_json_loads(tmp_path):
    path = tmp_path / "c.json"
    before = '{"matching_rules": ['
    path.write_text(before + nested(100_000) + "]}", encoding="utf-8")
    with pytest.raises(InputError) as exc:
        load_config(path)
    assert one_line(exc) == (f"{path}: line 1 column {len(before) + 99}: nested deeper than "
                             "100 levels")


def test_python_api_config_values_are_checked():
    with pytest.raises(InputError) as exc:
        parse_config({"matching_rules": [{"w": float("nan")}]}, "config")
    assert one_line(exc).startswith("config: config key 'matching_rules[0].w': NaN is not valid "
                                    "JSON")


# --------------------------------------------------------------------------- YAML


BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
    for p, n in zip("abcdefgh", "bcdefghi", strict=False))


def test_yaml_alias_bomb_is_refused_at_once(tmp_path):
    assert len(BOMB) < 400  # expands to 9**9 = 387 million strings
    path = tmp_path / "c.yaml"
    path.write_text(BOMB, encoding="utf-8")
    start = time.perf_counter()
    with pytest.raises(InputError) as exc:
        load_config(path)
    assert time.perf_counter() - start < 1
    assert one_line(exc) == (f"{path}: line 2: YAML alias '*a' refused: aliases can expand a "
                             "small file into gigabytes; write the value out")


def test_a_single_yaml_alias_is_refused_with_its_line(tmp_path):
    path = tmp_path / "c.yml"
    path.write_text("entity_types: &types [revenue]\nmatching_rules:\n  - x\nfields: *types\n",
                    encoding="utf-8")
    with pytest.raises(InputError, match=r"c\.yml: line 4: YAML alias '\*types' refused"):
        load_config(path)


@pytest.mark.parametrize("text, problem", [
    ("matching_rules:\n  - " + nested(100_000) + "\n", "nested deeper than 100 levels"),
    ("matching_rules:\n  - " + nested(300) + "\n", "nested deeper than 100 levels"),
    ("matching_rules:\n  - {n: " + "7" * 5000 + "}\n", "integer with more than 4300 digits"),
    ("matching_rules:\n  - {d: 2023-02-30}\n", "day is out of range for month"),
    ('matching_rules:\n  - "\\ud800"\n', "lone surrogate \\ud800"),
    ("matching_rules:\n  - {x: .nan}\n", "NaN is not valid JSON"),
], ids=["depth100000", "depth300", "int5000", "bad-date", "surrogate", "nan"])
def test_unprocessable_yaml_values_are_one_line_errors(tmp_path, text, problem):
    path = tmp_path / "c.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as exc:
        load_config(path)
    msg = one_line(exc)
    assert msg.startswith(f"{path}: ") and problem in msg


def test_yaml_anchors_without_aliases_and_merge_free_configs_still_load(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("entity_types: &types [revenue]\none_to_one: true\n", encoding="utf-8")
    assert load_config(path).entity_types == ["revenue"]


# --------------------------------------------------------------------------- config messages


@pytest.mark.parametrize("data, message", [
    ({"text_threshold": 0.9},
     "cfg.yaml: config key 'text_threshold': 0.9 looks like a 0-1 fraction, but text_threshold "
     "is a similarity on the 0-100 scale: write 90"),
    ({"tolerances": {"value": 0.01}},
     "cfg.yaml: config key 'tolerances.value': a tolerance is an object naming its bound, "
     "got number 0.01: write {\"value\": {\"relative\": 0.01}} (or {\"absolute\": ...})"),
    ({"tolerances": {"value": "1%"}},
     "cfg.yaml: config key 'tolerances.value': a tolerance is an object naming its bound, "
     "got string \"1%\": write {\"value\": {\"relative\": 0.01}} (or {\"absolute\": ...})"),
    ({"tolerances": 0.01},
     "cfg.yaml: config key 'tolerances': expected an object of fields and their bounds, "
     "got number 0.01: write {\"value\": {\"relative\": 0.01}}"),
    ({"entity_type": ["x"]}, "cfg.yaml: unknown config key 'entity_type' (did you mean "
                             "'entity_types'?)"),
    ({"tolerances": {"value": {"relativ": 0.1}}},
     "cfg.yaml: unknown config key 'tolerances.value.relativ' (did you mean 'relative'?)"),
    # a nested key is checked against the keys of its own level, not the top level's
    ({"tolerances": {"value": {"banana": 0.1}}},
     "cfg.yaml: unknown config key 'tolerances.value.banana' (known keys: relative, absolute)"),
    ({"rules_knowledge": {"banana": False}},
     "cfg.yaml: unknown config key 'rules_knowledge.banana' (known keys: titles, places, companies, "
     "honorifics, names, clinical, units, durations, per_period, bounds, abbreviations, jobs, results, "
     "products, relations, periods, numbers, documents)"),
    ({"rules_knowledge": {"place": False}},
     "cfg.yaml: unknown config key 'rules_knowledge.place' (did you mean 'places'?)"),
    ({"aliases": [{"values": ["a", "b"], "fieldz": "x"}]},  # an alias group has 'field', not 'fields'
     "cfg.yaml: unknown config key 'aliases.0.fieldz' (did you mean 'field'?)"),
    ({"aliases": ["x = y", {"values": ["a", "b"], "banana": "x"}]},
     "cfg.yaml: unknown config key 'aliases.1.banana' (known keys: field, values)"),
    # (no known key is close to it; 'colour' was, once the key 'columns' came)
    ({"banana": 1}, "cfg.yaml: unknown config key 'banana' (known keys: entity_types, "
                    "matching_rules, fields, tolerances, one_to_one, text_threshold, "
                    "ignore_company_suffixes, max_prompt_tokens, shortlist_top_k)"),
])
def test_config_mistakes_say_how_to_fix_them(data, message):
    with pytest.raises(InputError) as exc:
        parse_config(data, "cfg.yaml")
    msg = one_line(exc)
    if "known keys: entity_types" in message:  # other keys may be added; the start and the form matter
        assert msg.startswith(message.split("known keys:")[0] + "known keys: entity_types, ")
    else:
        assert msg == message


@pytest.mark.parametrize("threshold", [0, 1, 50, 90, 100])
def test_thresholds_on_the_0_100_scale_are_fine(threshold):
    assert parse_config({"text_threshold": threshold}).text_threshold == threshold


# --------------------------------------------------------------------------- JSON messages


def test_jsonl_syntax_error_keeps_the_whole_sentence_with_line_and_column(tmp_path):
    path = tmp_path / "f.jsonl"
    before = '{"id": "b", "fact_type": "t", "v": '
    path.write_text('{"id": "a", "fact_type": "t"}\n\n\n\n' + before + '"x\n', encoding="utf-8")
    with pytest.raises(InputError) as exc:
        load_facts(path)
    at = f"line 5 column {len(before) + 1}"
    assert one_line(exc) == f"{path}: {at}: invalid JSON: Unterminated string starting at: {at}"


def test_json_syntax_error_names_line_and_column(tmp_path):
    path = tmp_path / "f.json"
    path.write_text('[\n  {"id": "a",\n   "fact_type": }\n]', encoding="utf-8")
    with pytest.raises(InputError) as exc:
        load_facts(path)
    assert one_line(exc) == f"{path}: line 3 column 17: invalid JSON: Expecting value"


def test_json_record_numbers_count_from_one(write_json):
    path = write_json("g.json", [{"id": "a", "fact_type": "t"}, {"id": "b"}])
    with pytest.raises(InputError) as exc:
        load_facts(path)
    assert one_line(exc).startswith(f"{path}: record 2 (id 'b'): missing or empty 'fact_type'")
    path = write_json("d.json", [{"id": "a", "fact_type": "t"}, {"id": "a", "fact_type": "t"}])
    with pytest.raises(InputError, match="record 2 \\(id 'a'\\): duplicate id, first seen at "
                                         "record 1$"):
        load_facts(path)


# --------------------------------------------------------------------------- response cache


@pytest.mark.parametrize("garbage", [
    "not json", "", "[1, 2]", '"a string"', "null", '{"content": 7}', '{"other": "x"}',
    b"\xff\xfe binary", 42, nested(100_000),
], ids=lambda v: repr(v)[:20])
def test_a_corrupt_cache_row_is_a_miss_and_the_next_put_overwrites_it(tmp_path, garbage):
    cache = ResponseCache(tmp_path)
    with sqlite3.connect(cache.path) as conn:
        conn.execute("INSERT INTO answers (key, answer) VALUES (?, ?)", ("k", garbage))
    assert cache.get("k") is None
    cache.put("k", {"content": "{\"status\": \"FN\"}"})
    assert cache.get("k") == {"content": "{\"status\": \"FN\"}"}
    assert len(cache) == 1
    cache.close()


# --------------------------------------------------------------------------- output paths


def test_output_to_a_fifo_writes_through_and_keeps_the_fifo(tmp_path):
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    check_writable(fifo)  # must not open it: that would block until a reader comes
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text(encoding="utf-8")),
                              daemon=True)
    reader.start()
    write_atomic(fifo, '{"ok": true}\n')
    reader.join(timeout=10)
    assert got == ['{"ok": true}\n']
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["out.fifo"]  # no temporary file left


def test_output_through_a_symlink_replaces_the_target_and_keeps_the_link(tmp_path):
    real = tmp_path / "data" / "result.json"
    real.parent.mkdir()
    real.write_text("old", encoding="utf-8")
    os.chmod(real, 0o640)
    link = tmp_path / "latest.json"
    link.symlink_to(real)
    check_writable(link)
    write_atomic(link, "new")
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text(encoding="utf-8") == "new"
    assert stat.S_IMODE(os.stat(real).st_mode) == 0o640  # the replaced file keeps its mode
    assert sorted(p.name for p in real.parent.iterdir()) == ["result.json"]


def test_output_through_a_dangling_symlink_creates_the_target(tmp_path):
    link = tmp_path / "latest.json"
    link.symlink_to(tmp_path / "made.json")
    check_writable(link)
    write_atomic(link, "x")
    assert link.is_symlink() and (tmp_path / "made.json").read_text(encoding="utf-8") == "x"


def test_output_to_dev_null_leaves_the_device_alone():
    devnull = Path(os.devnull)
    assert stat.S_ISCHR(os.stat(devnull).st_mode)
    check_writable(devnull)
    write_atomic(devnull, "discarded\n")
    assert stat.S_ISCHR(os.lstat(devnull).st_mode)


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
def test_output_to_stdout_redirected_to_a_file_appends_in_place(tmp_path):
    # "factjudge ... -o /dev/stdout >> log": replacing the file behind the fd would lose the log
    log = tmp_path / "log.txt"
    log.write_text("earlier\n", encoding="utf-8")
    with open(log, "a", encoding="utf-8") as fh:
        fd_path = Path(f"/proc/self/fd/{fh.fileno()}")
        check_writable(fd_path)
        write_atomic(fd_path, "result\n")
    assert log.read_text(encoding="utf-8") == "earlier\nresult\n"
    assert [p.name for p in tmp_path.iterdir()] == ["log.txt"]


def test_output_to_a_regular_file_is_still_atomic_and_to_a_folder_an_error(tmp_path):
    out = tmp_path / "sub" / "out.json"
    check_writable(out)
    write_atomic(out, "a")
    before = os.stat(out).st_ino
    write_atomic(out, "b")
    assert out.read_text(encoding="utf-8") == "b" and os.stat(out).st_ino != before  # replaced
    with pytest.raises(InputError, match="is a folder"):
        check_writable(tmp_path)


def test_same_file(tmp_path):
    a = tmp_path / "a.json"
    a.write_text("x", encoding="utf-8")
    link = tmp_path / "link.json"
    link.symlink_to(a)
    hard = tmp_path / "hard.json"
    os.link(a, hard)
    assert same_file(a, link) and same_file(str(hard), a) and same_file(a, tmp_path / "." / "a.json")
    assert not same_file(a, tmp_path / "missing.json")
    assert not same_file(tmp_path / "missing.json", tmp_path / "missing.json")
    (tmp_path / "b.json").write_text("x", encoding="utf-8")
    assert not same_file(a, tmp_path / "b.json")
