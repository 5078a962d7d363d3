"""The suite's own scheduling: the modules marked ``xdist_group`` (one Ray cluster, one browser,
one model server each) must run on one worker. pytest 9.2 with pytest-xdist 3.8 silently dropped
the groups (pytest-dev/pytest-xdist#1386): CI started the Qwen server on both workers, and the two
1.5B servers on 2 cores slowed each other. This runs a small suite with the project's pytest options
and checks where each grouped module ran."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

MODULE = '''import os, pytest
pytestmark = [pytest.mark.xdist_group("one_worker")]
@pytest.fixture(scope="module")
def started():
    with open("workers.txt", "a") as fh:
        fh.write(__name__ + " " + os.environ["PYTEST_XDIST_WORKER"] + "\\n")
@pytest.mark.parametrize("i", range(6))
def test_grouped(started, i):
    pass
'''
FILLER = "import pytest\n@pytest.mark.parametrize('i', range(30))\ndef test_other(i):\n    pass\n"


def test_a_group_of_modules_runs_on_one_worker(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / f"test_grouped_{name}.py").write_text(MODULE, "utf-8")
    for name in range(4):
        (tmp_path / f"test_filler_{name}.py").write_text(FILLER, "utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", "utf-8")
    # xdist alone of the installed plugins (hypothesis, anyio... loaded in three processes were
    # most of this test's 5.7 s)
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "xdist",
                           "--import-mode=importlib", "-n", "2", "--dist", "loadgroup"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    started = (tmp_path / "workers.txt").read_text("utf-8").split("\n")[:-1]
    # each grouped module's fixture ran once, and both on the same worker
    assert len(started) == 2 and len({line.split()[1] for line in started}) == 1, (
        f"xdist_group split across workers: {started} (see pytest-dev/pytest-xdist#1386)")
