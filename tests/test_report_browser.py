"""report.html in a real headless browser (Debian's chromium): it loads offline without console
errors, shows the headline numbers, escapes hostile fact values and its filters work."""
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ROOT = Path(__file__).resolve().parent.parent
HOSTILE = '</script><img src=x onerror="document.title=1"><b>bold</b> & "quotes"'

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="needs Debian's chromium at /usr/bin/chromium (apt-get install chromium; .ci/run installs it)")


def load(url: str, tmp_path: Path) -> tuple[str, list[str]]:
    """The DOM after scripts ran, and every console message the page produced."""
    profile = tempfile.mkdtemp(dir=tmp_path)
    proc = subprocess.run(
        [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={profile}", "--host-resolver-rules=MAP * ~NOTFOUND",
         # console messages (uncaught exceptions included) go to stderr as "...:CONSOLE(...)]"
         "--enable-logging=stderr", "--v=0", "--dump-dom", url],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    console = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]
    return proc.stdout, console


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """The bundled example plus a document with hostile text, evaluated offline (rules judge)."""
    tmp = tmp_path_factory.mktemp("report")
    lines = (ROOT / "examples" / "dataset.jsonl").read_text(encoding="utf-8").splitlines()
    lines.append(json.dumps({"doc_id": "hostile <doc>", "gold_facts": [
        {"id": "h1", "fact_type": "ceo", "name": HOSTILE}], "predicted_facts": [
        {"id": "h2", "fact_type": "ceo", "name": "Nobody"}]}))
    data = tmp / "data.jsonl"
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp / "out"
    proc = subprocess.run([sys.executable, "-m", "factjudge", "eval", str(data), "-c",
                           str(ROOT / "examples" / "config.yaml"), "-o", str(out)],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    return out, json.loads((out / "summary.json").read_text())


def text_of(dom: str, ident: str) -> str:
    match = re.search(rf'id="{ident}"[^>]*>([^<]*)<', dom)
    assert match, ident
    return match.group(1)


def visible_rows(dom: str) -> list[str]:
    table = dom.split('id="facts"')[1].split("</table>")[0]
    return [row for row in re.findall(r"<tr [^>]*>", table) if "hidden" not in row]


def test_loads_without_console_errors_and_shows_the_headline(report, tmp_path):
    out, summary = report
    dom, console = load((out / "report.html").as_uri(), tmp_path)
    assert console == []
    m = summary["micro"]
    assert text_of(dom, "documents") == "6"
    for k in ("precision", "recall", "f1"):
        assert text_of(dom, f"micro-{k}") == f"{m[k]:.3f}"
        low, high = summary["ci95"][k]
        assert f"95% CI [{low:.3f}, {high:.3f}]" in dom
    assert "<svg" in dom and "<title>revenue precision" in dom
    # every fact row is shown until a filter is chosen
    assert len(visible_rows(dom)) == m["fn"] + m["fp"] + m["errors"] == int(text_of(dom, "shown"))
    # hostile text is shown as text: no element injected, no script broken
    assert "<img" not in dom and "<b>bold</b>" not in dom
    assert "&lt;/script&gt;&lt;img src=x" in dom and "hostile &lt;doc&gt;" in dom
    # offline: the page references no resource at all
    assert not re.search(r'<[^>]*\s(src|href)=|url\(|@import', dom)


def test_filters_by_status_and_fact_type(report, tmp_path):
    out, summary = report
    url = (out / "report.html").as_uri()
    dom, console = load(url + "#status=FP", tmp_path)
    assert console == []
    rows = visible_rows(dom)
    assert len(rows) == summary["micro"]["fp"] == int(text_of(dom, "shown"))
    assert all('data-status="FP"' in r for r in rows)
    dom, console = load(url + "#status=FN&type=revenue", tmp_path)
    assert console == []
    rows = visible_rows(dom)
    assert len(rows) == summary["by_fact_type"]["revenue"]["fn"] > 0
    assert all('data-type="revenue"' in r and 'data-status="FN"' in r for r in rows)


def test_the_harness_catches_a_script_error(report, tmp_path):
    """Without this, a broken console check would pass every report."""
    out, _ = report
    broken = tmp_path / "broken.html"
    html = (out / "report.html").read_text(encoding="utf-8")
    broken.write_text(html.replace("  apply();\n})();", "  apply();\n  notDefined.call();\n})();"),
                      encoding="utf-8")
    _, console = load(broken.as_uri(), tmp_path)
    assert any("Uncaught ReferenceError: notDefined is not defined" in line for line in console)

