"""The bundled example's report.md and summary.json, pinned byte for byte (but for the time of
the run, its seconds and the version): what the reports say must not change by accident, e.g. when
the renderers' input changes shape (they took summary.json as a dict, now the typed Summary).

After an intended change: ``python tests/unit/reports/test_example_report.py`` writes the files
of ``tests/data/example_run/`` again; review their diff."""
import re
import sys
import tempfile
from pathlib import Path

from evalkit import ROOT, run_cli

PINNED = ROOT / "tests" / "data" / "example_run"
FILES = ("report.md", "summary.json")
#: What differs between two runs of the same inputs: when, how long, which version.
_VARYING = [
    (re.compile(r'("created": |\| created \| )"?[0-9T:+\-]+"?'), r"\1CREATED"),
    (re.compile(r'("seconds": |\| seconds [^|]*\| )[0-9.]+'), r"\1SECONDS"),
    (re.compile(r'("factjudge": |\| factjudge \| )"?[^"|\s]+"?'), r"\1VERSION"),
]


def _steady(text):
    for pattern, repl in _VARYING:
        text = pattern.sub(repl, text)
    return text


def _run(out):
    # relative paths from the checkout: the provenance names the input as the user typed it
    proc = run_cli("eval", "examples/dataset.jsonl", "-c", "examples/config.yaml", "-o", out, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return {name: _steady((out / name).read_text(encoding="utf-8")) for name in FILES}


def test_the_example_renders_as_pinned(tmp_path):
    got = _run(tmp_path / "out")
    for name in FILES:
        assert got[name] == (PINNED / name).read_text(encoding="utf-8"), name


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parents[2]))
    for name, text in _run(Path(tempfile.mkdtemp()) / "out").items():
        (PINNED / name).write_text(text, encoding="utf-8")
