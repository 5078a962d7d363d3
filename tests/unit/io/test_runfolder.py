"""io/runfolder.RunFolder, the one reader of an eval output folder, and the run-folder models:
one way for BOMs, blank lines, cut-off last lines and duplicate doc_ids, errors worded
``<path>: line N: <problem>``, models that give back the files' very bytes."""
import json
import os
import stat

import pytest
from evalkit import ROOT

from factjudge import load_config, load_facts, run_judge
from factjudge.errors import InputError
from factjudge.io.datasets import DocInfo
from factjudge.io.run_models import BatchState, ResultLine, RunManifest
from factjudge.io.runfolder import ResultStore, RunFolder
from factjudge.io.tables import iter_result_lines

EXAMPLES = ROOT / "examples"


@pytest.fixture(scope="module")
def result():
    return run_judge(load_facts(EXAMPLES / "report_gold.json"),
                     load_facts(EXAMPLES / "report_predicted.jsonl"), load_config(EXAMPLES / "config.yaml"))


def line_of(result, doc_id, **kw):
    return {"doc_id": doc_id, "input_sha256": "h" + doc_id, **result.to_dict(), **kw}


def text(*lines):
    return "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines)


def folder(tmp_path, body, finished):
    (tmp_path / "results.jsonl").write_bytes(body if isinstance(body, bytes) else body.encode("utf-8"))
    if finished:
        (tmp_path / "summary.json").write_text('{"provenance": {"created": "2026-01-01T00:00:00+00:00"}}')
    return RunFolder(tmp_path)


def error(fn):
    with pytest.raises(InputError) as info:
        fn()
    assert "\n" not in str(info.value)
    return str(info.value)


def test_the_result_line_model_gives_back_the_line_bytes(result):
    raw = json.dumps(line_of(result, "d1"), ensure_ascii=False)
    model = ResultLine.model_validate_json(raw)
    assert json.dumps(model.model_dump(mode="json"), ensure_ascii=False) == raw
    assert model.to_result().to_dict() == result.to_dict()


def test_the_manifest_and_batch_state_models_give_back_their_bytes():
    manifest = {"factjudge": "1.0", "inputs": ["/d.jsonl"], "config": {"one_to_one": False, "x": [1.5]},
                "judge": {"name": "rules"}}
    written = json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
    assert RunManifest.model_validate(manifest).to_json() == written
    job = {"round": 1, "file": "batch/input-001-round1.jsonl", "lines": 3, "step": "done",
           "input_file_id": "f", "batch_id": "b", "status": "completed", "request_counts": {"total": 3},
           "output_file_id": "o", "error_file_id": None, "imported": {"stored": 3}, "errors": "",
           "outputs": ["batch/b.output.jsonl"]}
    state = {"version": 1, "judge": {"name": "llm", "model": "m"}, "round": 1, "finished": True,
             "jobs": [job]}
    assert BatchState.model_validate(state).to_json() == json.dumps(state, indent=1) + "\n"


def test_a_bom_and_blank_lines_are_read(tmp_path, result):
    run = folder(tmp_path, "\ufeff" + text(line_of(result, "a")) + "\n" + text(line_of(result, "b")), True)
    assert [x["doc_id"] for x in run.lines()] == ["a", "b"]
    index = run.index()
    assert [r.lineno for r in index.values()] == [1, 3]
    with run.results.open("rb") as fh:
        assert run.line_at(fh, index["a"])["doc_id"] == "a"
    assert run.result("b").doc_id == "b"


def test_a_finished_run_refuses_a_doc_id_twice(tmp_path, result):
    run = folder(tmp_path, text(line_of(result, "a"), line_of(result, "b"), line_of(result, "a")), True)
    want = f"{run.results}: line 3: doc_id 'a' again (first on line 1)"
    assert error(lambda: list(run.lines())) == want
    assert error(run.index) == want
    assert error(lambda: list(iter_result_lines(tmp_path))) == want


def test_a_killed_run_keeps_the_latest_line_and_drops_the_cut_off_one(tmp_path, result):
    complete = text(line_of(result, "a"), line_of(result, "b"), line_of(result, "a", gold_facts=[]))
    run = folder(tmp_path, complete + '{"doc_id": "c", "go', False)
    got = list(run.lines())
    assert [x["doc_id"] for x in got] == ["a", "b"] and got[0]["gold_facts"] == []
    store = ResultStore(run.results, repair=False)   # a look-up changes nothing
    assert run.results.read_text(encoding="utf-8").endswith('"go')
    assert store.reusable(DocInfo("b", "hb", 0)) and not store.reusable(DocInfo("b", "other", 0))
    assert store.index["a"].lineno == 3
    ResultStore(run.results)   # resuming cuts the cut-off line from the file
    assert run.results.read_text(encoding="utf-8") == complete


def test_resuming_keeps_the_mode_of_the_rewritten_results(tmp_path, result):
    run = folder(tmp_path, text(line_of(result, "b"), line_of(result, "a")), False)
    os.chmod(run.results, 0o640)
    store = ResultStore(run.results)
    lines = list(store.rewrite([DocInfo("a", "ha", 0), DocInfo("b", "hb", 0)]))
    assert [x["doc_id"] for x in lines] == ["a", "b"]
    assert run.results.read_text(encoding="utf-8") == text(line_of(result, "a"), line_of(result, "b"))
    assert stat.S_IMODE(os.stat(run.results).st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.jsonl"]


@pytest.mark.parametrize("body, problem", [
    ("{not json\n", "not JSON"),
    ("[1]\n", "not a JSON object"),
    ('{"doc_id": 3}\n', "no doc_id"),
    ('{"doc_id": "d", "input_sha256": "h", "gold_facts": [{"id": "1"}], "predicted_facts": []}\n',
     "gold_facts is not a list of judged facts"),
    ('{"doc_id": "d", "input_sha256": "h", "gold_facts": [], "predicted_facts": [], "metrics": {}}\n',
     "no metrics"),
])
def test_a_bad_line_is_named_one_way(tmp_path, result, body, problem):
    run = folder(tmp_path, text(line_of(result, "a")) + body, True)
    want = f"{run.results}: line 2: not a factjudge result line ({problem})"
    assert error(lambda: list(run.lines())) == want
    assert error(lambda: list(iter_result_lines(tmp_path))) == want
    (tmp_path / "summary.json").unlink()
    assert error(lambda: ResultStore(run.results)) == f"{want}; choose another output folder"


def test_not_an_eval_folder(tmp_path):
    assert error(RunFolder(tmp_path / "none").require) == f"{tmp_path / 'none'}: not an eval output " \
                                                           "folder (no such folder)"
    assert error(RunFolder(tmp_path).require) == f"{tmp_path}: not an eval output folder (no results.jsonl)"
    (tmp_path / "results.jsonl").write_text("")
    assert error(RunFolder(tmp_path).require) == f"{tmp_path}: not a finished eval output folder " \
                                                 "(no summary.json)"
    (tmp_path / "run.json").write_text('{"inputs": 3}')
    assert error(RunFolder(tmp_path).manifest) == f"{tmp_path / 'run.json'}: not a factjudge run " \
                                                  "manifest; use --overwrite or another -o"


def test_the_run_config_is_kept_once_not_per_result_line(tmp_path):
    """Alias groups (a config's bulk) are not copied into every results.jsonl line: with 20 KB of
    alias groups the file is as large as with none (issue 32: 2,000 documents wrote 156 MB
    instead of 5.3 MB), every line read back has the run's config (the aliases decide the report's
    closest facts), and a folder of an older version, whose lines hold the config, resumes."""
    import warnings

    from factjudge.evaluation.runner import evaluate_dataset

    docs = [{"doc_id": f"d{i}", "gold_facts": [{"id": "g1", "fact_type": "t", "role": "boss", "n": i}],
             "predicted_facts": [{"id": "p1", "fact_type": "t", "role": "top dog", "n": i}]}
            for i in range(6)]
    data = tmp_path / "d.jsonl"
    data.write_text(text(*docs), encoding="utf-8")
    (tmp_path / "small.csv").write_text("boss,top dog\n", encoding="utf-8")
    filler = "".join(f"Alias Company {i} Ltd,ACME Holding {i}\n" for i in range(600))
    (tmp_path / "big.csv").write_text("boss,top dog\n" + filler, encoding="utf-8")
    assert len(filler) > 20_000
    sizes = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in ("small", "big"):
            (tmp_path / f"{name}.yaml").write_text(f"aliases_file: {name}.csv\n", encoding="utf-8")
            run = evaluate_dataset(data, tmp_path / f"{name}.yaml", out_dir=tmp_path / name)
            assert run.judged == 6 and run.summary.micro.f1 == 1.0  # the alias matched
            sizes[name] = (tmp_path / name / "results.jsonl").stat().st_size
        assert sizes["big"] - sizes["small"] < 100, sizes  # was 6 x the alias groups' JSON
        folder = RunFolder(tmp_path / "big")
        config = folder.summary()["config"]
        assert len(config["aliases"]) == 601
        assert all(line["config"] == config for line in folder.lines())
        assert all(line["config"] == config for line in iter_result_lines(tmp_path / "big"))
        assert folder.result("d3").config == config

        # an older version's folder: the config on every line; it resumes (nothing judged again)
        old = tmp_path / "big" / "results.jsonl"
        old.write_text(text(*({**line, "config": config} for line in RunFolder(tmp_path / "big").lines())),
                       encoding="utf-8")
        again = evaluate_dataset(data, tmp_path / "big.yaml", out_dir=tmp_path / "big")
        assert (again.judged, again.reused) == (0, 6) and again.summary.micro.f1 == 1.0
