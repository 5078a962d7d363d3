"""The docs cannot drift from the code: every ``factjudge`` command of the getting-started page runs
against the bundled examples with the exit code the page gives it (``# exits N``, else 0) and prints
the lines the page shows under it; the README's quick start is the page's, unchanged in effect."""
import re
import shlex
import shutil
from pathlib import Path

from evalkit import run_cli

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "getting-started.md"
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```$", re.M | re.S)
#: A run's wall time ("0.02s") is the one figure of a summary that changes from run to run.
SECONDS = re.compile(r"\b\d+(?:\.\d+)?s\b")


def fenced(text):
    """The fenced blocks of a page, as (info string, body)."""
    return [(m[1].strip(), m[2]) for m in FENCE.finditer(text)]


def examples(text):
    """Each ``factjudge`` command of a page's shell blocks, with the exit code the page gives it and
    the output lines it shows in the ``text title="stderr"`` block right after, if any."""
    blocks = fenced(text)
    found = []
    for i, (info, body) in enumerate(blocks):
        if info not in ("bash", "console", "sh"):
            continue
        shown = []
        if i + 1 < len(blocks) and blocks[i + 1][0].startswith("text") and "stderr" in blocks[i + 1][0]:
            shown = [line for line in blocks[i + 1][1].splitlines() if line.strip()]
        commands = [line for line in body.replace("\\\n", " ").splitlines() if line.startswith("factjudge ")]
        for n, line in enumerate(commands):
            command, _, comment = line.partition("#")
            code = re.search(r"exits (\d+)", comment)
            last = n == len(commands) - 1  # the output shown is the block's last command's
            found.append((shlex.split(command)[1:], int(code[1]) if code else 0, shown if last else []))
    return found


def quick_start(readme):
    """The README's quick-start section: its shell commands and the summary it shows."""
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = fenced(section)
    return [b for info, b in blocks if info == "bash"], [b for info, b in blocks if info.startswith("text")]


def test_every_command_of_the_getting_started_page_runs_as_documented(tmp_path):
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    cases = examples(PAGE.read_text(encoding="utf-8"))
    assert len(cases) >= 3 and sum(bool(shown) for _, _, shown in cases) >= 2
    for argv, code, shown in cases:
        proc = run_cli(*argv, cwd=tmp_path)
        assert proc.returncode == code, (argv, proc.stderr)
        said = SECONDS.sub("<s>", proc.stderr)
        for line in shown:
            assert SECONDS.sub("<s>", line) in said, (argv, line, proc.stderr)
    assert (tmp_path / "report_result.json").is_file() and (tmp_path / "eval_out" / "report.html").is_file()


def test_the_readme_quick_start_is_the_getting_started_page_s():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands, outputs = quick_start(readme)
    assert [c.strip() for c in commands[:2]] == [
        "pip install . && factjudge judge examples/report_gold.json examples/report_predicted.jsonl "
        "--config examples/config.yaml -o report_result.json",
        'pip install -e ".[test]" && pytest',
    ]
    page = PAGE.read_text(encoding="utf-8")
    first, _, shown = examples(page)[0]
    assert shlex.split(commands[0].split("&&", 1)[1])[1:] == first
    # any other command the README shows is one the page's test runs
    ran = [argv for argv, _, _ in examples(page)]
    assert all(argv in ran for argv, _, _ in examples("\n".join(f"```bash\n{c}```" for c in commands[2:])))
    # the summary the README promises is the one the page's test checks
    assert [line for line in outputs[0].splitlines() if line.strip()] == shown
    assert len(readme.splitlines()) <= 200


def test_the_readme_links_to_files_that_exist():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)[^)]*\)", readme)
    assert "docs/getting-started.md" in targets
    assert [t for t in targets if "://" not in t and not (ROOT / t).exists()] == []
