"""Issue 39: the CLI collects the youngest generation every GC_YOUNG allocations, not every 700
(Python's default): the collector's passes were 18% of a rules run's CPU; and the middle one every
GC_MIDDLE young collections, not every 10: it walked what the run keeps to its end (0.1 s)."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

from factjudge.cli import GC_MIDDLE, GC_YOUNG

SRC = Path(__file__).resolve().parents[2] / "src"


def _env() -> dict[str, str]:
    """This environment with this checkout's package first, for a command run in a process."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}


def test_a_command_runs_with_the_raised_generation_thresholds() -> None:
    # the command replaced by one that says what the collector's threshold is while it runs
    code = ("import gc, factjudge.cli as cli\n"
            "cli.app = lambda standalone_mode: print(gc.get_threshold()) or 0\n"
            "cli.main()\n")
    env = _env()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    young, *older = ast.literal_eval(proc.stdout)
    assert young == GC_YOUNG > 700 and older == [GC_MIDDLE, 10] and GC_MIDDLE > 10


def test_openblas_runs_one_thread_unless_the_user_says_otherwise() -> None:
    """numpy's BLAS threads only spun (factjudge calls no BLAS routine): one, unless set."""
    code = ("import os, factjudge.cli as cli\n"
            "cli.app = lambda standalone_mode: print(os.environ['OPENBLAS_NUM_THREADS']) or 0\n"
            "cli.main()\n")
    env = _env()
    env.pop("OPENBLAS_NUM_THREADS", None)
    said = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, check=True).stdout
            for e in (env, {**env, "OPENBLAS_NUM_THREADS": "4"})]
    assert said == ["1\n", "4\n"]


def test_the_command_modules_load_without_the_collector_and_the_command_runs_with_it() -> None:
    """The collector's passes during the command's imports walked the new modules' objects again
    and again (8 ms of an eval's start); the run itself is collected as ever."""
    code = ("import gc, factjudge.cli as cli\n"
            "register = cli.register_commands\n"
            "cli.register_commands = lambda argv: print(gc.isenabled()) or register(argv)\n"
            "cli.app = lambda standalone_mode: print(gc.isenabled()) or 0\n"
            "cli.main()\n")
    env = _env()
    proc = subprocess.run([sys.executable, "-c", code, "eval"], capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "True"]
