"""Shared by the CLI and eval tests: five documents whose outcome is easy to work out by hand, the
CLI in this process (or, where a test needs one, as a real process), and file helpers."""
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = {"entity_types": ["revenue", "ceo"]}


def fact(fid, fact_type="revenue", **kw):
    return {"id": fid, "fact_type": fact_type, **kw}


# Five documents whose outcome is easy to work out by hand (ids are unique across documents so
# one truth table answers for all of them).
DOCS = [
    {"doc_id": "A",
     "gold_facts": [fact("a-g1", value="1"), fact("a-g2", value="2"), fact("a-g3", "ceo", name="X")],
     "predicted_facts": [fact("a-p1", value="1"), fact("a-p2", "ceo", name="X"),
                         fact("a-p3", "ceo", name="Y")]},
    {"doc_id": "B",
     "gold_facts": [fact("b-g1", value="5"), fact("b-g2", "ceo", name="Z"),
                    fact("b-g3", "auditor", name="KPMG")],
     "predicted_facts": [fact("b-p1", value="5")]},
    {"doc_id": "C", "gold_facts": [], "predicted_facts": [fact("c-p1", value="7")]},
    {"doc_id": "D", "gold_facts": [fact("d-g1", value="8")], "predicted_facts": [fact("d-p1", value="9")]},
    {"doc_id": "E", "gold_facts": [fact("e-g1", value="3")],
     "predicted_facts": [fact("e-p1", value="3"), fact("e-p2", value="3.0")]},
]
TRUTH = {
    ("gold", "a-g1"): "a-p1", ("predicted", "a-p1"): "a-g1",              # TP both ways
    ("gold", "a-g3"): "a-p2", ("predicted", "a-p2"): "a-g3",              # a-g2 FN, a-p3 FP
    ("gold", "b-g1"): "b-p1", ("predicted", "b-p1"): "b-g1",              # b-g2 FN, b-g3 out of scope
    ("gold", "d-g1"): "d-p1",                                             # rejected by d-p1: FN + FP
    ("predicted", "e-p1"): "e-g1", ("predicted", "e-p2"): "e-g1",         # e-g1 promoted, e-p2 duplicate
}
# C has no gold: its predicted fact is FP without a call; nor is b-g2 asked (no predicted ceo in B)
CALLS = 6 + 2 + 0 + 2 + 3


def rules_link(gold, pred, config=None):
    """Whether the rules judge links a gold fact of ``gold``'s fields with a prediction of
    ``pred``'s (a TP), its warnings silenced."""
    import warnings

    from factjudge.evaluation.pipeline import run_judge

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run_judge([{"id": "g", "fact_type": "t", **gold}], [{"id": "p", "fact_type": "t", **pred}],
                           config or {})
    return result.gold_facts[0]["factjudge"]["status"] == "TP"


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def run_cli(*args, cache_dir=None, env=None, cwd=None, timeout=180, real_process=False):
    """The CLI on ``args``, in this process (typer's CliRunner) unless ``real_process``; the answer
    is a CompletedProcess either way. The response cache never goes to the user's cache dir, and
    no OPENAI_API_KEY leaks in from the developer's environment.

    A real process is for what only one can show: ``os._exit`` after the flush, signals, file
    descriptors, an environment the CLI cannot change for its caller."""
    with contextlib.ExitStack() as stack:  # a cache of its own, removed after the run
        cache = cache_dir or stack.enter_context(tempfile.TemporaryDirectory(prefix="factjudge-test-cache-"))
        env = {"FACTJUDGE_CACHE_DIR": str(cache), "OPENAI_API_KEY": None, **(env or {})}
        argv = [str(a) for a in args]
        if real_process:
            return run_process(argv, env=env, cwd=cwd, timeout=timeout)
        return run_in_process(argv, env=env, cwd=cwd)


def run_process(argv, *, env, cwd=None, timeout=180):
    """``python -m factjudge ARGV`` as a real process; ``env`` overrides this one's (None unsets)."""
    full = {**os.environ, **env}
    full = {k: v for k, v in full.items() if v is not None}
    return subprocess.run([sys.executable, "-m", "factjudge", *argv], capture_output=True, text=True,
                          env=full, cwd=cwd, timeout=timeout)


def run_in_process(argv, *, env, cwd=None):
    """What ``main()`` does (the typer app, then its exit-code mapping) without ``os._exit``,
    stdout and stderr captured; ``env`` overrides os.environ for the run (None unsets)."""
    from typer.testing import CliRunner

    from factjudge.cli import _exit_code, app, register_commands

    register_commands(argv)
    with CliRunner().isolation(env=env) as (stdout, stderr, _), _chdir(cwd):
        raised, returned = None, None
        try:
            returned = app(args=argv, prog_name="factjudge", standalone_mode=False)
        except SystemExit as exc:
            returned = exc.code
        except BaseException as exc:  # noqa: BLE001  (mapped like main() maps it, or re-raised)
            raised = exc
        code = _exit_code(raised, returned)
        sys.stdout.flush()
        sys.stderr.flush()
        out, err = stdout.getvalue(), stderr.getvalue()
    # what text=True makes of a real process's output
    return subprocess.CompletedProcess(["factjudge", *argv], code, _text(out), _text(err))


def _text(data):
    return data.decode("utf-8", "replace").replace("\r\n", "\n")


@contextlib.contextmanager
def _chdir(path):
    if path is None:
        yield
        return
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def llm_args(server, cache_dir):
    return ["--model", "m", "--base-url", server.base_url, "--cache-dir", cache_dir]


def read_lines(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def without_usage(obj):
    """What two runs of the same inputs share: all but what they cost and when they ran."""
    if isinstance(obj, dict):
        return {k: without_usage(v) for k, v in obj.items() if k != "usage" and k != "created"}
    if isinstance(obj, list):
        return [without_usage(v) for v in obj]
    return obj


def outputs(out):
    return {name: (out / name).read_bytes()
            for name in ("results.jsonl", "summary.json", "report.md", "report.html")}


TIMING = [(re.compile(r'"seconds": ?[0-9.eE+-]+'), '"seconds": X'),
          (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00"), "TIME"),
          (re.compile(r"(seconds[^|<]*\| )[0-9.]+"), r"\1X"),
          (re.compile(r'(seconds[^<]*</td><td class="num">)[0-9.]+'), r"\1X")]


def timeless_outputs(folder):
    """A run folder's files without what two runs of the same code differ in: seconds and times."""
    def timeless(text):
        for pattern, repl in TIMING:
            text = pattern.sub(repl, text)
        return text

    return {name: timeless((folder / name).read_text(encoding="utf-8"))
            for name in ("results.jsonl", "summary.json", "report.md", "report.html", "review.html")}


def review_data(out):
    html = (out / "review.html").read_text(encoding="utf-8")
    return json.loads(re.search(r'<script type="application/json" id="review-data">(.*?)</script>', html, re.S)[1])


def export_lines(data, verdicts):
    """What review.html's Export button writes (static/review.js exportLines), in queue order."""
    done = []
    for item in data["items"]:
        ident = (item["doc_id"], item["kind"], item["gold"] and item["gold"]["id"],
                 item["predicted"] and item["predicted"]["id"])
        if ident in verdicts:
            verdict, correction = verdicts[ident]
            pair = item["gold"] is not None and item["predicted"] is not None
            match = (verdict == "right" if item["kind"] == "link" else verdict == "wrong") if pair else None
            done.append({"id": item["key"], "doc_id": item["doc_id"], "kind": item["kind"], "verdict": verdict,
                         "match": match, "judge_match": item["kind"] == "link", "category": item["kind"],
                         "gold_fact": item["gold"], "predicted_fact": item["predicted"],
                         "gold_correction": correction, "note": None})
    header = {"_header": {"kind": data["kind"], "version": 1, "run": data["run"], "items": len(done)}}
    return [header, *done]


# Worked out by hand with the rules judge: A's g1-p1 and B's g1-p1 are links, A's g2 (200 vs 201)
# and g3 (Ann Lee vs Bob Stone) are misses beside their closest prediction, A's p4 (an auditor,
# no gold auditor) an extra with nothing close.
REVIEW_DOCS = [
    {"doc_id": "A",
     "gold_facts": [fact("g1", entity="Xco", value="100"), fact("g2", entity="Xco", period="2023", value="200"),
                    fact("g3", "ceo", name="Ann Lee")],
     "predicted_facts": [fact("p1", entity="Xco", value="100"), fact("p2", entity="Xco", period="2023", value="201"),
                         fact("p3", "ceo", name="Bob Stone"), fact("p4", "auditor", name="KPMG")]},
    {"doc_id": "B", "gold_facts": [fact("g1", entity="Yco", value="5")],
     "predicted_facts": [fact("p1", entity="Yco", value="5")]},
]
# (doc, kind, gold id, predicted id) -> (verdict, gold correction)
REVIEW_VERDICTS = {
    ("A", "miss", "g2", "p2"): ("wrong", {"value": "201"}),  # a match once the gold typo is fixed
    ("A", "miss", "g3", "p3"): ("right", None),
    ("A", "extra", None, "p4"): ("omission", None),
    ("A", "link", "g1", "p1"): ("right", None),
    ("B", "link", "g1", "p1"): ("wrong", None),
}
