"""``util.exiting``: the CLI leaves by ``os._exit``, so what a run built is kept to the end
instead of freed object by object when the run returns (45 ms of 1,000 documents); a library
caller's runs free theirs as ever."""
import os
import subprocess
import sys
from pathlib import Path

from evalkit import DOCS, write_jsonl

from factjudge import evaluate_dataset
from factjudge.evaluation.runner import FinishPass
from factjudge.util import exiting

SRC = Path(__file__).resolve().parents[3] / "src"


def test_a_run_keeps_its_finishing_pass_only_in_a_process_that_leaves_by_exit(tmp_path, monkeypatch):
    data = write_jsonl(tmp_path / "d.jsonl", DOCS)
    monkeypatch.setattr(exiting, "_kept", None)  # a library caller's process
    evaluate_dataset(data, out_dir=tmp_path / "lib")
    assert exiting._kept is None
    monkeypatch.setattr(exiting, "_kept", [])  # as the CLI's main sets it
    evaluate_dataset(data, out_dir=tmp_path / "cli")
    assert [type(k) for k in exiting._kept] == [FinishPass]


def test_the_cli_leaves_by_exit():
    code = ("import factjudge.cli as cli\n"
            "from factjudge.util import exiting\n"
            "cli.app = lambda standalone_mode: print(exiting._kept) or 0\n"
            "cli.main()\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert proc.stdout == "[]\n"
