"""The config key ``columns``: a file's own column or field names mapped to factjudge's, for fact
files, split datasets (JSON lines, CSV, Parquet) and document datasets (#24 item 2)."""
import json

import pytest
from evalkit import run_cli, write_jsonl

from factjudge.errors import InputError
from factjudge.io.config import parse_config
from factjudge.io.facts import load_facts

MAPPING = {"doc_id": "document_id", "id": "fact_id", "fact_type": "type"}
CONFIG = "columns: {doc_id: document_id, id: fact_id, fact_type: type}\n"


def theirs(doc_id, fid, fact_type, value):
    return {"document_id": doc_id, "fact_id": fid, "type": fact_type, "value": value}


def write_csv(path, rows):
    path.write_text("document_id,fact_id,type,value\n" + "".join(",".join(r) + "\n" for r in rows))
    return path


def write_parquet(path, rows):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    names = ["document_id", "fact_id", "type", "value"]
    pq.write_table(pa.table({n: [r[i] for r in rows] for i, n in enumerate(names)}), path)
    return path


@pytest.mark.parametrize("kind", ["jsonl", "csv", "parquet"])
def test_eval_reads_mapped_columns_of_split_files(tmp_path, kind):
    gold_rows = [("a", "g1", "revenue", "5"), ("b", "g2", "revenue", "7")]
    pred_rows = [("a", "p1", "revenue", "5"), ("b", "p2", "revenue", "8")]
    files = []
    for name, rows in (("gold", gold_rows), ("pred", pred_rows)):
        path = tmp_path / f"{name}.{kind}"
        if kind == "jsonl":
            write_jsonl(path, [theirs(*r) for r in rows])
        elif kind == "csv":
            write_csv(path, rows)
        else:
            write_parquet(path, rows)
        files.append(path)
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(CONFIG)
    out = tmp_path / "out"
    proc = run_cli("eval", "--gold", files[0], "--predicted", files[1], "-o", out, "-c", cfg)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["documents"] == 2
    assert (summary["micro"]["tp_gold"], summary["micro"]["fn"], summary["micro"]["fp"]) == (1, 1, 1)
    assert summary["config"]["columns"] == MAPPING


def test_eval_reads_mapped_fields_of_a_document_dataset(tmp_path):
    data = write_jsonl(tmp_path / "d.jsonl", [{"document_id": "a", "gold": [{"fact_id": "g1", "type": "r"}],
                                               "predictions": [{"fact_id": "p1", "type": "r"}]}])
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"columns": {"doc_id": "document_id", "id": "fact_id", "fact_type": "type",
                                           "gold_facts": "gold", "predicted_facts": "predictions"}}))
    out = tmp_path / "out"
    proc = run_cli("eval", data, "-o", out, "-c", cfg)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((out / "summary.json").read_text())["micro"]["tp_gold"] == 1


def test_judge_reads_mapped_fields(tmp_path, write_json):
    g = write_json("g.json", [{"fact_id": "g1", "type": "revenue", "value": "5"}])
    p = write_json("p.json", [{"fact_id": "p1", "type": "revenue", "value": "5"}])
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(CONFIG)
    proc = run_cli("judge", g, p, "-c", cfg)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["metrics"]["f1"] == 1.0 and out["gold_facts"][0]["id"] == "g1"


def test_without_the_key_the_errors_list_the_columns_found_and_expected(tmp_path, write_json):
    g = write_csv(tmp_path / "g.csv", [("a", "g1", "revenue", "5")])
    proc = run_cli("eval", "--gold", g, "--predicted", g, "-o", tmp_path / "out")
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        f"factjudge: error: {g}: header: missing column 'doc_id' (columns found: document_id, fact_id, type, "
        "value; expected: doc_id, id, fact_type; map yours with the config key columns: {doc_id: YOUR_COLUMN})")
    j = write_json("g.json", [{"fact_id": "g1", "type": "revenue"}])
    with pytest.raises(InputError, match=r"record 1: missing or empty 'id' \(a non-empty string or an integer\); "
                       r"fields found: fact_id, type \(map yours with the config key columns: \{id: YOUR_FIELD\}\)$"):
        load_facts(j)


def test_a_mapped_name_next_to_the_name_it_maps_to_is_refused(tmp_path, write_json):
    j = write_json("g.json", [{"id": "x", "fact_id": "g1", "fact_type": "revenue"}])
    with pytest.raises(InputError, match=r"record 1: both 'fact_id' \(mapped to 'id' by config key 'columns'\) "
                       "and 'id' are present: keep one"):
        load_facts(j, {"id": "fact_id"})
    c = tmp_path / "g.csv"
    c.write_text("id,fact_id,fact_type\nx,g1,r\n")
    with pytest.raises(InputError, match=r"header: both 'fact_id' \(mapped to 'id'"):
        load_facts(c, {"id": "fact_id"})


@pytest.mark.parametrize("columns, message", [
    ({"doc": "document_id"}, "'doc' is not a name factjudge reads (did you mean 'doc_id'?)"),
    ({"id": "x", "fact_type": "x"}, "two names are mapped to the same column"),
    ({"id": " "}, "a column name must be a non-empty string"),
])
def test_a_bad_columns_key_is_named(columns, message):
    with pytest.raises(InputError, match="config key 'columns'") as exc:
        parse_config({"columns": columns})
    assert message in str(exc.value)


def test_a_config_without_columns_keeps_its_outputs():
    assert "columns" not in parse_config({}).model_dump(mode="json")
