"""``factjudge eval --ray`` and :func:`factjudge.runners.ray_data.evaluate_ray`: documents judged by Ray
workers give the very files of a single-process ``factjudge eval`` (but for what the runs cost in
time), with the rules judge and with an LLM judge (the scripted server on 127.0.0.1).

One local Ray (2 CPUs, so 2 workers; ``ray_session`` in tests/conftest.py) serves the module: the
Python API uses it directly and the CLI joins it with ``--ray-address``. Every test here skips when
the ``ray`` extra is missing, except the one checking what the CLI says then.
"""
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile

import pytest
from evalkit import ROOT
from scripted_server import ScriptedServer, answer, http_error, prompt_facts

from factjudge import JudgeBase, ResponseCache, RulesJudge
from factjudge.errors import InputError, JudgeSetupError
from factjudge.judges.factory import JudgeSpec
from factjudge.models import Verdict

EXAMPLE = ROOT / "examples" / "dataset.jsonl"
EXAMPLE_CONFIG = ROOT / "examples" / "config.yaml"
NO_RAY = "the ray extra is not installed (pip install 'factjudge[ray]')"

# one worker runs the module (one local Ray, started once); Ray's own deprecation notes about its
# settings are not this project's
pytestmark = [pytest.mark.ray, pytest.mark.xdist_group("ray"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning:ray")]


@pytest.fixture(scope="module")
def ray_address(ray_session):
    """The session's local Ray (tests/conftest.py); its GCS address for the CLI's --ray-address."""
    # the judges defined here travel to the workers by value: they cannot import this module
    ray_session.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    return ray_session.get_runtime_context().gcs_address


# --------------------------------------------------------------------------- helpers


def run_cli(*args, cache_dir=None):
    """The CLI as a real process; with --ray-address it joins the module's Ray (it inherits this
    process's Ray settings, such as the token authentication mode Ray sets here)."""
    with contextlib.ExitStack() as stack:  # a cache of its own, removed after the run
        cache = cache_dir or stack.enter_context(tempfile.TemporaryDirectory(prefix="factjudge-test-cache-"))
        env = {**os.environ, "FACTJUDGE_CACHE_DIR": str(cache)}
        env.pop("OPENAI_API_KEY", None)
        env.pop("RAY_ADDRESS", None)
        return subprocess.run([sys.executable, "-m", "factjudge", *map(str, args)], capture_output=True,
                              text=True, env=env, timeout=600)


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def without_time(obj):
    """A run's files without what depends on time: ``seconds`` and the ``created`` time."""
    if isinstance(obj, dict):
        return {k: without_time(v) for k, v in obj.items() if k not in ("seconds", "created")}
    if isinstance(obj, list):
        return [without_time(v) for v in obj]
    return obj


def files(out):
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    return without_time(lines), without_time(summary)


def assert_same_files(ray_out, reference):
    ray_lines, ray_summary = files(ray_out)
    ref_lines, ref_summary = files(reference)
    assert [x["doc_id"] for x in ray_lines] == [x["doc_id"] for x in ref_lines]  # dataset order
    assert ray_lines == ref_lines
    assert ray_summary == ref_summary
    return ray_summary


def stderr_lines(proc, out):
    """What the CLI said, but for the wall time on the summary line and the folder."""
    lines = proc.stderr.replace(str(out), "OUT").strip().splitlines()
    assert lines and " documents (" in lines[0], proc.stderr
    return [re.sub(r"\| [0-9.]+s( \||$)", r"| Ns\1", lines[0]), *lines[1:]]


def generated(n):
    """``n`` small documents, each of its own (no two share a prompt): matches, near misses,
    an out-of-scope fact, documents with one side empty."""
    docs = []
    for i in range(n):
        gold = [{"id": "g1", "fact_type": "revenue", "period": "FY2023", "value": f"{i}.5",
                 "unit": "USD million"}]
        pred = [{"id": "p1", "fact_type": "revenue", "period": "FY2023",
                 "value": f"{i}.5" if i % 3 else f"{i}.7", "unit": "USD million"}]
        if i % 4 == 0:
            gold.append({"id": "g2", "fact_type": "ceo", "name": f"Person {i}"})
            pred.append({"id": "p2", "fact_type": "ceo", "name": f"Person {i}" if i % 8 else "Someone"})
        if i % 5 == 0:
            gold.append({"id": "g3", "fact_type": "auditor", "name": "KPMG"})  # out of scope
        if i % 97 == 0:
            pred = []
        if i % 89 == 1:
            gold = []
        docs.append({"doc_id": f"doc-{i:05d}", "gold_facts": gold, "predicted_facts": pred})
    return docs


GENERATED_CONFIG = {"entity_types": ["revenue", "ceo"]}


def same_fields(body):
    """A deterministic LLM: TP with the first candidate of the subject's type and equal fields."""
    direction, fact, candidates = prompt_facts(body)
    subject = fact["id"]

    def strip(f):
        return {k: v for k, v in f.items() if k != "id"}

    match = next((c["id"] for c in candidates if strip(c) == strip(fact)), None)
    return answer(direction, subject, match)


@pytest.fixture
def llm_server():
    with ScriptedServer(responder=same_fields) as server:
        yield server


def llm_args(server, cache):
    return ["--model", "m", "--base-url", server.base_url, "--cache-dir", cache]


# --------------------------------------------------------------------------- the CLI


@pytest.mark.parametrize("judge", ["rules", "llm"])
def test_the_bundled_example_gives_the_files_of_a_single_process_run(ray_address, llm_server, tmp_path, judge):
    extra = llm_args(llm_server, tmp_path / "cache-ref") if judge == "llm" else []
    ref = run_cli("eval", EXAMPLE, "-c", EXAMPLE_CONFIG, *extra, "-o", tmp_path / "ref")
    assert ref.returncode == 0, ref.stderr
    asked = len(llm_server.requests)
    llm_server._seen_prefixes.clear()  # the provider cache starts cold for the Ray run too
    extra = llm_args(llm_server, tmp_path / "cache-ray") if judge == "llm" else []
    proc = run_cli("eval", EXAMPLE, "-c", EXAMPLE_CONFIG, *extra, "-o", tmp_path / "ray",
                   "--ray-address", ray_address)
    assert proc.returncode == 0, proc.stderr
    assert stderr_lines(proc, tmp_path / "ray") == stderr_lines(ref, tmp_path / "ref")  # no word from Ray
    summary = assert_same_files(tmp_path / "ray", tmp_path / "ref")
    assert summary["documents"] == 5 and summary["judge"]["name"] == judge
    if judge == "llm":
        assert len(llm_server.requests) == 2 * asked > 0  # every question asked once per run
        assert summary["usage"]["llm_calls"] == asked and summary["usage"]["structured_output"]


def test_500_documents_with_the_rules_judge_and_a_resumed_run(ray_address, tmp_path):
    # 500 documents are about 16 batches over the 2 workers: as many as 2,000 gave for what is
    # checked here (the files of one process, a resume from lines out of order), in a quarter of the time
    data = write_jsonl(tmp_path / "data.jsonl", generated(500))
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps(GENERATED_CONFIG))
    ref = run_cli("eval", data, "-c", cfg, "-o", tmp_path / "ref")
    assert ref.returncode == 0, ref.stderr
    proc = run_cli("eval", data, "-c", cfg, "-o", tmp_path / "ray", "--ray-address", ray_address)
    assert proc.returncode == 0, proc.stderr
    assert stderr_lines(proc, tmp_path / "ray") == stderr_lines(ref, tmp_path / "ref")
    summary = assert_same_files(tmp_path / "ray", tmp_path / "ref")
    assert summary["documents"] == 500 and summary["micro"]["fp"] > 0 and summary["micro"]["fn"] > 0

    # a run killed part-way: 275 finished lines (not in order) and one cut off mid-write
    out = tmp_path / "resumed"
    out.mkdir()
    lines = (tmp_path / "ref" / "results.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    kept = lines[325:] + lines[:100]
    (out / "results.jsonl").write_text("".join(kept) + lines[125][:100], encoding="utf-8")
    proc = run_cli("eval", data, "-c", cfg, "-o", out, "--ray-address", ray_address)
    assert proc.returncode == 0, proc.stderr
    assert "500 documents (225 judged, 275 reused)" in proc.stderr
    assert_same_files(out, tmp_path / "ref")


def test_500_documents_with_an_llm_judge(ray_address, llm_server, tmp_path):
    docs = generated(500)
    for d in docs:  # small: one fact a side, two questions a document
        d["gold_facts"], d["predicted_facts"] = d["gold_facts"][:1], d["predicted_facts"][:1]
    data = write_jsonl(tmp_path / "data.jsonl", docs)
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps(GENERATED_CONFIG))
    ref = run_cli("eval", data, "-c", cfg, *llm_args(llm_server, tmp_path / "c1"), "-o", tmp_path / "ref")
    assert ref.returncode == 0, ref.stderr
    asked = len(llm_server.requests)
    llm_server._seen_prefixes.clear()
    proc = run_cli("eval", data, "-c", cfg, *llm_args(llm_server, tmp_path / "c2"), "-o", tmp_path / "ray",
                   "--ray-address", ray_address)
    assert proc.returncode == 0, proc.stderr
    assert stderr_lines(proc, tmp_path / "ray") == stderr_lines(ref, tmp_path / "ref")
    summary = assert_same_files(tmp_path / "ray", tmp_path / "ref")
    assert summary["usage"]["llm_calls"] == asked == len(llm_server.requests) - asked > 750

    # the workers wrote their answers into the one response cache: a run on it asks nothing
    assert len(ResponseCache(tmp_path / "c2")) == asked
    llm_server.requests.clear()
    proc = run_cli("eval", data, "-c", cfg, *llm_args(llm_server, tmp_path / "c2"), "-o", tmp_path / "again")
    assert proc.returncode == 0, proc.stderr
    assert llm_server.requests == []
    assert json.loads((tmp_path / "again" / "summary.json").read_text())["usage"]["cache_hits"] == asked


def test_what_the_workers_judges_adapted_to_is_in_the_summary(ray_address, tmp_path):
    """A server that refuses ``temperature`` as OpenAI's reasoning models do: the workers' judges
    adapt, and the summary says so as a single-process run's does."""
    with ScriptedServer(responder=same_fields) as server:
        server.refuse = {"temperature"}
        ref = run_cli("eval", EXAMPLE, "-c", EXAMPLE_CONFIG, *llm_args(server, tmp_path / "c1"), "-o", tmp_path / "ref")
        assert ref.returncode == 0, ref.stderr
        server._seen_prefixes.clear()  # the same prompt caching for both runs
        proc = run_cli("eval", EXAMPLE, "-c", EXAMPLE_CONFIG, *llm_args(server, tmp_path / "c2"),
                       "-o", tmp_path / "ray", "--ray-address", ray_address)
    assert proc.returncode == 0, proc.stderr
    summary = assert_same_files(tmp_path / "ray", tmp_path / "ref")
    assert summary["usage"]["adapted"] == ["no_temperature"]


def test_a_judge_that_cannot_work_stops_the_run_with_one_line(ray_address, tmp_path):
    with ScriptedServer(responder=lambda body: http_error(401)) as server:
        proc = run_cli("eval", EXAMPLE, "-c", EXAMPLE_CONFIG, *llm_args(server, tmp_path / "c"),
                       "-o", tmp_path / "out", "--ray-address", ray_address)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("factjudge: error: "), proc.stderr
    assert "401" in lines[0] and "Traceback" not in proc.stderr
    assert not (tmp_path / "out" / "summary.json").exists()


def test_without_the_ray_extra_the_cli_says_what_to_install(tmp_path):
    code = ("import sys; sys.modules['ray'] = None; from factjudge.cli import main; "
            f"sys.argv = ['factjudge', 'eval', {str(EXAMPLE)!r}, '-o', {str(tmp_path / 'out')!r}, '--ray']; main()")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "factjudge: error: Ray is needed to judge on Ray: pip install 'factjudge[ray]'"]


# --------------------------------------------------------------------------- the Python API


def example_rows(as_text=True):
    rows = [json.loads(x) for x in EXAMPLE.read_text(encoding="utf-8").splitlines() if x.strip()]
    if as_text:  # JSON text: the facts exactly as written, never through Arrow structs
        rows = [{**r, "gold_facts": json.dumps(r["gold_facts"]),
                 "predicted_facts": json.dumps(r["predicted_facts"])} for r in rows]
    return rows


def test_a_ray_dataset_gives_the_files_of_the_cli(ray_address, tmp_path):
    import ray

    from factjudge.io.config import load_config
    from factjudge.runners.ray_data import RayHooks, RayInput, evaluate_ray

    ref = run_cli("eval", EXAMPLE, "-c", EXAMPLE_CONFIG, "-o", tmp_path / "ref")
    assert ref.returncode == 0, ref.stderr
    ds = ray.data.from_items(example_rows())
    started = []
    run = evaluate_ray(ds, load_config(EXAMPLE_CONFIG), lambda cfg: RulesJudge(), tmp_path / "ray",
                       source=RayInput(name=str(EXAMPLE)), hooks=RayHooks(on_start=lambda *a: started.append(a)))
    assert (run.judged, run.reused) == (5, 0) and started[0][:2] == (5, 0)
    assert_same_files(tmp_path / "ray", tmp_path / "ref")

    # started again: everything is reused, nothing is sent to Ray, the same bytes are written
    before = {n: (tmp_path / "ray" / n).read_bytes() for n in ("results.jsonl", "summary.json")}
    run = evaluate_ray(ds, load_config(EXAMPLE_CONFIG), lambda cfg: RulesJudge(), tmp_path / "ray",
                       source=RayInput(name=str(EXAMPLE)))
    assert (run.judged, run.reused) == (0, 5)
    assert {n: (tmp_path / "ray" / n).read_bytes() for n in before} == before

    # facts as lists of objects work too (Arrow may add the other facts' fields, as null); a spec
    # travels as well as a factory
    run = evaluate_ray(ray.data.from_items(example_rows(as_text=False)), load_config(EXAMPLE_CONFIG),
                       JudgeSpec(), tmp_path / "lists")
    assert run.summary.documents == 5 and run.summary.micro.tp_gold > 0


def test_a_ray_dataset_is_read_with_the_config_key_columns(ray_address, tmp_path):
    """Rows and facts in the user's own names give the run of factjudge's names, on the driver's
    scan and on the workers alike (the CLI's datasets read ``columns`` the same way)."""
    import ray

    from factjudge.io.config import load_config
    from factjudge.runners.ray_data import evaluate_ray

    theirs = {"doc_id": "document", "gold_facts": "gold", "id": "fact_id", "fact_type": "kind"}

    def own_names(record):
        return {theirs.get(k, k): v for k, v in record.items()}

    rows = [own_names({**r, "gold_facts": json.dumps([own_names(f) for f in json.loads(r["gold_facts"])]),
                       "predicted_facts": json.dumps([own_names(f) for f in json.loads(r["predicted_facts"])])})
            for r in example_rows()]
    assert "document" in rows[0] and "fact_id" in json.loads(rows[0]["gold"])[0]
    cfg = load_config(EXAMPLE_CONFIG)
    ours = evaluate_ray(ray.data.from_items(example_rows()), cfg, lambda c: RulesJudge(), tmp_path / "ours")
    mine = evaluate_ray(ray.data.from_items(rows), cfg.model_copy(update={"columns": theirs}),
                        lambda c: RulesJudge(), tmp_path / "theirs")
    assert (mine.judged, mine.summary.micro) == (5, ours.summary.micro)
    # the same verdicts; the config (with its columns) and the input hashes it salts differ
    def verdicts(out):
        return [{k: v for k, v in line.items() if k not in ("config", "input_sha256")} for line in files(out)[0]]

    assert verdicts(tmp_path / "theirs") == verdicts(tmp_path / "ours")

    # without the key, the rows are not documents: the run stops naming the row
    with pytest.raises(InputError, match="5 bad row"):
        evaluate_ray(ray.data.from_items(rows), cfg, lambda c: RulesJudge(), tmp_path / "plain")


def test_bad_rows_stop_the_run_or_are_listed_with_skip_invalid(ray_address, tmp_path):
    import ray

    from factjudge.runners.ray_data import RayInput, evaluate_ray

    rows = example_rows()[:2] + [
        {"doc_id": "bad", "gold_facts": json.dumps([{"id": "1"}]), "predicted_facts": "[]"},
        {**example_rows()[0]},  # a second row of the first doc_id
        {"doc_id": "x", "gold_facts": "{not json", "predicted_facts": "[]"},
    ]
    ds = ray.data.from_items(rows)
    with pytest.raises(InputError, match="3 bad row"):
        evaluate_ray(ds, {}, lambda cfg: RulesJudge(), tmp_path / "out")
    assert not (tmp_path / "out").exists()
    run = evaluate_ray(ds, {}, lambda cfg: RulesJudge(), tmp_path / "out",
                       source=RayInput(name="rows", skip_invalid=True))
    assert run.summary.documents == 2
    assert [(s["file"], s["line"]) for s in run.summary.skipped] == [("rows", 3), ("rows", 4), ("rows", 5)]
    # facts are numbered from 1, as in a .jsonl dataset's line
    assert "rows: row 3: gold_facts: record 1 (id '1'): missing or empty 'fact_type'" in run.summary.skipped[0]["error"]
    assert "duplicate doc_id" in run.summary.skipped[1]["error"]


def pid_judge(identity=None):
    """A judge that says which process judged: every gold fact FN, every predicted fact FP."""

    class PidJudge(JudgeBase):
        name = "pid"

        async def judge(self, task):
            return Verdict(fact_id=task.subject_id, status="FN" if task.direction == "gold" else "FP",
                           reasoning=f"pid {os.getpid()}")

        def identity(self):
            return identity() if identity else {"name": self.name}

    return PidJudge()


def test_documents_are_judged_by_several_ray_workers(ray_address, tmp_path):
    import ray

    from factjudge.runners.ray_data import RayPool, evaluate_ray

    rows = [{"doc_id": f"d{i}", "gold_facts": json.dumps([{"id": "g", "fact_type": "t", "v": i}]),
             "predicted_facts": json.dumps([{"id": "p", "fact_type": "t", "v": i}])} for i in range(200)]
    run = evaluate_ray(ray.data.from_items(rows), {}, lambda cfg: pid_judge(), tmp_path / "out",
                       pool=RayPool(concurrency=2, batch_size=5))
    assert run.judged == 200
    lines = [json.loads(x) for x in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert [x["doc_id"] for x in lines] == [f"d{i}" for i in range(200)]
    pids = {f["factjudge"]["reasoning"] for x in lines for f in x["gold_facts"] + x["predicted_facts"]}
    assert len(pids) == 2 and f"pid {os.getpid()}" not in pids  # two workers, none of them here


def test_a_worker_whose_judge_differs_from_the_drivers_stops_the_run(ray_address, tmp_path):
    import ray

    from factjudge.runners.ray_data import evaluate_ray

    ds = ray.data.from_items(example_rows())

    def elsewhere(cfg):
        return pid_judge(lambda: {"name": "pid", "pid": os.getpid()})

    with pytest.raises(JudgeSetupError, match="not the driver's"):
        evaluate_ray(ds, {}, elsewhere, tmp_path / "out")
    assert not (tmp_path / "out" / "summary.json").exists()


def test_a_worker_that_cannot_build_the_spec_stops_the_run_with_its_reason(ray_address, tmp_path, monkeypatch):
    import ray

    from factjudge.io.config import load_config
    from factjudge.runners.ray_data import evaluate_ray

    # set after Ray started: the driver has the key, the workers do not
    monkeypatch.setenv("FJ_KEY_OF_THE_DRIVER", "sk-driver-only")
    spec = JudgeSpec(models=("m",), base_url="http://127.0.0.1:9/v1", api_key_env="FJ_KEY_OF_THE_DRIVER",
                     cache=False)
    with pytest.raises(JudgeSetupError, match="^a Ray worker cannot build the judge: no API key: the "
                       "environment variable FJ_KEY_OF_THE_DRIVER is not set$"):
        evaluate_ray(ray.data.from_items(example_rows()), load_config(EXAMPLE_CONFIG), spec, tmp_path / "out")
