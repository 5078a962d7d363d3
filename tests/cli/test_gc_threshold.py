"""Issue 39: the CLI collects the youngest generation every GC_YOUNG allocations, not every 700
(Python's default): the collector's passes were 18% of a rules run's CPU."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

from factjudge.cli import GC_YOUNG

SRC = Path(__file__).resolve().parents[2] / "src"


def test_a_command_runs_with_the_raised_young_generation_threshold() -> None:
    # the command replaced by one that says what the collector's threshold is while it runs
    code = ("import gc, factjudge.cli as cli\n"
            "cli.app = lambda standalone_mode: print(gc.get_threshold()) or 0\n"
            "cli.main()\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    young, *older = ast.literal_eval(proc.stdout)
    assert young == GC_YOUNG > 700 and older == [10, 10]
