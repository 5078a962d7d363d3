"""Hostile inputs, round three (issue #20, items 7, 19, 20, 21, 23): a config or an input file that
would silently change the score is refused or named, each problem one line naming where it sits."""
import json

import pytest
from evalkit import run_cli, write_jsonl

from factjudge import InputError, load_config, load_facts

GOLD = [{"id": "g1", "fact_type": "revenue", "value": "1"},
        {"id": "g2", "fact_type": "revenue", "value": "2"}]
PRED = [{"id": "p1", "fact_type": "revenue", "value": "3"},
        {"id": "p2", "fact_type": "revenue", "value": "4"}]


def judge(write_json, tmp_path, config, gold=GOLD, pred=PRED):
    g, p = write_json("g.json", gold), write_json("p.json", pred)
    cfg = write_json("cfg.json", config)
    return run_cli("judge", g, p, "-c", cfg, "-o", tmp_path / "out.json", "-q")


def split_files(tmp_path, gold_ids, pred_ids, extra=None):
    gold = [{"doc_id": d, "id": f"g{d}", "fact_type": "revenue", "value": "1", **(extra or {})}
            for d in gold_ids]
    pred = [{"doc_id": d, "id": f"p{d}", "fact_type": "revenue", "value": "1"} for d in pred_ids]
    return write_jsonl(tmp_path / "g.jsonl", gold), write_jsonl(tmp_path / "p.jsonl", pred)


# --------------------------------------------------------------- 7: fields no fact carries


def test_a_misspelled_field_is_an_error_naming_the_closest_field(write_json, tmp_path):
    assert json.loads(judge(write_json, tmp_path, {}).stdout or "{}") == {}  # sanity: quiet, to -o
    assert json.loads((tmp_path / "out.json").read_text())["metrics"]["recall"] == 0.0
    (tmp_path / "out.json").unlink()
    proc = judge(write_json, tmp_path, {"fields": ["valeu"]})
    assert proc.returncode == 2 and not (tmp_path / "out.json").exists()
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "'valeu'" in proc.stderr and "did you mean 'value'?" in proc.stderr


def test_an_empty_fields_list_is_an_error_at_config_load(write_json, tmp_path):
    path = write_json("cfg.json", {"fields": []})
    with pytest.raises(InputError, match=r"cfg.json: config key 'fields': .*empty"):
        load_config(path)
    proc = judge(write_json, tmp_path, {"fields": []})
    assert proc.returncode == 2 and not (tmp_path / "out.json").exists()
    assert "config key 'fields'" in proc.stderr


def test_eval_checks_fields_against_every_document(tmp_path, write_json):
    g, p = split_files(tmp_path, ["1", "2"], ["1", "2"])
    # 'page' is carried by one gold fact of one document only: a real field, no error
    rows = [json.loads(line) for line in g.read_text().splitlines()]
    rows[1]["page"] = 3
    write_jsonl(g, rows)
    ok = write_json("ok.json", {"fields": ["value", "page"]})
    proc = run_cli("eval", "--gold", g, "--predicted", p, "-c", ok, "-o", tmp_path / "out", "-q")
    assert proc.returncode == 0, proc.stderr
    bad = write_json("bad.json", {"fields": ["pgae"]})
    proc = run_cli("eval", "--gold", g, "--predicted", p, "-c", bad, "-o", tmp_path / "out2", "-q")
    assert proc.returncode == 2 and not (tmp_path / "out2" / "results.jsonl").exists()
    assert "'pgae'" in proc.stderr and "did you mean 'page'?" in proc.stderr


# --------------------------------------------------------------- 23: tolerances no fact has


def test_a_tolerance_for_a_field_no_fact_has_warns(write_json, tmp_path):
    proc = judge(write_json, tmp_path, {"tolerances": {"valeu": {"relative": 0.1}}})
    assert proc.returncode == 0
    assert "factjudge: warning: tolerances 'valeu'" in proc.stderr
    assert "did you mean 'value'?" in proc.stderr
    out = json.loads((tmp_path / "out.json").read_text())
    assert any("tolerances 'valeu'" in w for w in out["warnings"])
    g, p = split_files(tmp_path, ["1"], ["1"])
    cfg = write_json("tol.json", {"tolerances": {"valeu": {"relative": 0.1}}})
    proc = run_cli("eval", "--gold", g, "--predicted", p, "-c", cfg, "-o", tmp_path / "out", "-q")
    assert proc.returncode == 0, proc.stderr
    assert "factjudge: warning: tolerances 'valeu'" in proc.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert any("tolerances 'valeu'" in w for w in summary["warnings"])


# --------------------------------------------------------------- 19: Parquet rows named


def parquet(path, rows):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def test_a_parquet_value_error_names_the_file_and_row_in_judge(tmp_path):
    g = parquet(tmp_path / "g.parquet", [{"id": "g1", "fact_type": "revenue", "value": 1.0},
                                         {"id": "g2", "fact_type": "revenue", "value": float("inf")}])
    p = parquet(tmp_path / "p.parquet", [{"id": "p1", "fact_type": "revenue", "value": 1.0}])
    with pytest.raises(InputError, match=r"g\.parquet: row 2: .*'value': Infinity"):
        load_facts(g)
    proc = run_cli("judge", g, p, "-q")
    assert proc.returncode == 2
    assert "g.parquet: row 2" in proc.stderr and "gold facts: record" not in proc.stderr


def test_a_parquet_value_error_in_eval_says_row_not_line(tmp_path):
    g = parquet(tmp_path / "g.parquet", [
        {"doc_id": "1", "id": "g1", "fact_type": "revenue", "value": 1.0},
        {"doc_id": "1", "id": "g2", "fact_type": "revenue", "value": float("inf")}])
    p = parquet(tmp_path / "p.parquet", [{"doc_id": "1", "id": "p1", "fact_type": "revenue", "value": 1.0}])
    proc = run_cli("eval", "--gold", g, "--predicted", p, "-o", tmp_path / "out", "-q")
    assert proc.returncode == 2
    assert "g.parquet: row 2" in proc.stderr and "line 2" not in proc.stderr


# --------------------------------------------------------------- 20: duplicate keys


def test_duplicate_json_keys_are_refused_with_the_record_and_the_key(tmp_path):
    jl = tmp_path / "f.jsonl"
    jl.write_text('{"id": "f1", "fact_type": "revenue", "value": "1"}\n'
                  '{"id": "f2", "fact_type": "revenue", "value": "1", "value": "2"}\n')
    with pytest.raises(InputError, match=r"f\.jsonl: line 2: duplicate key 'value'"):
        load_facts(jl)
    js = tmp_path / "f.json"
    js.write_text('[{"id": "f1", "fact_type": "revenue", "value": "1"},\n'
                  ' {"id": "f2", "fact_type": "revenue",\n  "value": "1", "value": "2"}]')
    with pytest.raises(InputError, match=r"f\.json: line 3: duplicate key 'value' .*'f2'"):
        load_facts(js)
    ds = tmp_path / "ds.jsonl"
    ds.write_text('{"doc_id": "1", "gold_facts": [], "predicted_facts": [], "doc_id": "2"}\n')
    proc = run_cli("eval", ds, "-o", tmp_path / "out", "-q")
    assert proc.returncode == 2 and "ds.jsonl: line 1: duplicate key 'doc_id'" in proc.stderr


def test_duplicate_keys_in_a_config_are_refused(tmp_path):
    js = tmp_path / "c.json"
    js.write_text('{"one_to_one": true, "one_to_one": false}')
    with pytest.raises(InputError, match="duplicate key 'one_to_one'"):
        load_config(js)
    ym = tmp_path / "c.yaml"
    ym.write_text("one_to_one: true\nfields: [value]\none_to_one: false\n")
    with pytest.raises(InputError, match=r"c\.yaml: line 3: .*duplicate key 'one_to_one'"):
        load_config(ym)
    nested = tmp_path / "n.yaml"
    nested.write_text("tolerances:\n  value: {relative: 0.1, relative: 0.2}\n")
    with pytest.raises(InputError, match="duplicate key 'relative'"):
        load_config(nested)


@pytest.mark.parametrize("line", [
    '{"id": "f1", "fact_type": "t", "at": "12:30", "value": "1", "value": "2"}',
    # an escaped colon in a value must not hide the colon of the second key
    '{"id": "f1", "fact_type": "t", "at": "12\\u003a30", "value": "1", "value": "2"}',
    '{"id": "f1", "fact_type": "t", "value": "1", "value": "2", "x": [1, "a:b"]}',
    '[{"id": "f1", "fact_type": "t"}, 2, {"id": "f2", "fact_type": "t", "fact_type": "u"}]'])
def test_duplicate_keys_are_found_whatever_the_colons_in_values(tmp_path, line):
    path = tmp_path / "f.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(InputError, match=r"f\.jsonl: line 1: duplicate key '(value|fact_type)'"):
        load_facts(path)


def test_same_keys_in_different_objects_are_fine(tmp_path):
    jl = tmp_path / "f.jsonl"
    jl.write_text('{"id": "f1", "fact_type": "t", "x": {"value": 1}, "value": "a:b"}\n')
    assert load_facts(jl)[0]["value"] == "a:b"


# --------------------------------------------------------------- 21: doc_ids never paired


def test_doc_ids_that_never_pair_are_named(tmp_path):
    g, p = split_files(tmp_path, ["1", "2"], ["01", "02"])
    proc = run_cli("eval", "--gold", g, "--predicted", p, "-o", tmp_path / "out", "-q")
    assert proc.returncode == 0, proc.stderr
    warning = [line for line in proc.stderr.splitlines() if "gold facts only" in line]
    assert len(warning) == 1 and warning[0].startswith("factjudge: warning: ")
    assert "2 document(s) have gold facts only ('1', '2')" in warning[0]
    assert "2 predicted facts only ('01', '02')" in warning[0]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert any("gold facts only" in w for w in summary["warnings"])


def test_one_sided_documents_on_one_side_only_are_not_noise(tmp_path):
    # a system that found nothing in document 2 is not a doc_id mismatch
    g, p = split_files(tmp_path, ["1", "2"], ["1"])
    proc = run_cli("eval", "--gold", g, "--predicted", p, "-o", tmp_path / "out", "-q")
    assert proc.returncode == 0 and "facts only" not in proc.stderr


@pytest.mark.ray
@pytest.mark.xdist_group("ray")
@pytest.mark.filterwarnings("ignore::DeprecationWarning:ray")
def test_a_ray_dataset_checks_fields_against_every_row(ray_session):
    from factjudge.models import JudgeConfig
    from factjudge.runners.ray_data import RayDataset

    rows = [{"doc_id": d, "gold_facts": json.dumps(GOLD), "predicted_facts": json.dumps(PRED)}
            for d in ("1", "2")]
    ds = RayDataset(ray_session.data.from_items(rows), "rows")
    with pytest.raises(InputError, match=r"no fact in rows carries 'valeu' \(did you mean 'value'\?\)"):
        ds.scan(JudgeConfig(fields=["valeu"]), "salt")
    assert ds.scan(JudgeConfig(tolerances={"valeu": {"relative": 0.1}}), "salt") == []
    assert ds.warnings and ds.warnings[0].startswith("tolerances 'valeu': no fact in rows")


def _capped(argv, cwd, cap=1 << 30):
    """``factjudge ARGV`` in a real process whose address space is capped (``cap`` bytes): a
    file read until memory is gone ends there, in a MemoryError, instead of taking the machine."""
    import os
    import resource
    import subprocess
    import sys

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    return subprocess.run([sys.executable, "-m", "factjudge", *map(str, argv)], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=120, preexec_fn=limit)


@pytest.mark.parametrize("case", ["config", "labels", "judge_calibration"])
def test_a_settings_file_that_is_dev_zero_is_refused_before_it_is_read(tmp_path, case):
    """A config, calibration labels or --judge-calibration that is /dev/zero (here a link to it)
    read until memory was gone (4-8 GB in 8-20 s): each is refused in one line naming the file,
    as the data inputs are, within a 1 GB memory cap. (An alias file must be a regular file.)"""
    import os
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    names = {"config": "zero.yaml", "labels": "zero.jsonl", "judge_calibration": "zero.json"}
    zero = tmp_path / names[case]
    zero.symlink_to("/dev/zero")
    write_jsonl(tmp_path / "d.jsonl", [{"doc_id": "1", "gold_facts": GOLD, "predicted_facts": PRED}])
    argv = {"config": ["eval", "d.jsonl", "-c", zero, "-o", "out"],
            "labels": ["calibrate", zero],
            "judge_calibration": ["eval", "d.jsonl", "-o", "out", "--judge-calibration", zero]}[case]
    proc = _capped(argv, tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert f"{zero.name}: a binary file, not " in proc.stderr
