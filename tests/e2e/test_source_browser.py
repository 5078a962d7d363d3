"""The document view of report.html with the documents' text, in a real headless browser (as
test_report_browser.py: Debian's chromium): each fact's evidence is marked in the text, each
prediction tagged found or not found in the source, hostile text shown as text (issue #35 item 3)."""
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from urllib.parse import quote

import pytest
from e2e.test_report_browser import HOSTILE, load
from headless import CHROMIUM, Browser

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser"), pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="needs Debian's chromium at /usr/bin/chromium (apt-get install chromium; .ci/run installs it)")]

TEXT = f"😀 Acme hired MARÍA LÓPEZ as CEO in 2021. {HOSTILE} Revenue was $3.5m; María López left."
DOC = {"doc_id": "memo <1>", "text": TEXT,
       "gold_facts": [{"id": "g1", "fact_type": "ceo", "name": "Maria Lopez"}],
       "predicted_facts": [{"id": "p1", "fact_type": "ceo", "name": "María López"},
                           {"id": "p2", "fact_type": "revenue", "value": "$3.5m"},      # FP, in the text
                           {"id": "p3", "fact_type": "revenue", "value": HOSTILE + "x"}]}  # FP, not in it


@pytest.fixture(scope="module")
def browser(tmp_path_factory) -> Iterator[Browser]:
    running = Browser(tmp_path_factory.mktemp("chromium"))
    yield running
    running.close()


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("source")
    data = tmp / "data.jsonl"
    data.write_text(json.dumps(DOC, ensure_ascii=False) + "\n", encoding="utf-8")
    out = tmp / "out"
    proc = subprocess.run([sys.executable, "-m", "factjudge", "eval", str(data), "-o", str(out), "-q"],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    return out


def test_the_text_is_shown_with_each_facts_evidence_marked_and_hostile_text_escaped(browser, page):
    url = (page / "report.html").as_uri() + "#doc=" + quote("memo <1>", safe="")
    dom, console = load(browser, url, width=1280, height=1000, budget=2000)
    assert console == []
    box = dom.split('id="doc-text"')[1].split('<div id="docview"')[0]
    marks = re.findall(r'<mark class="ev (ev-[gp])" data-keys="([^"]*)" title="[^"]*">([^<]*)</mark>', box)
    # the CEO, gold and predicted, found twice (accents and case normalised); the revenue once
    assert ("ev-p", "g0 p0", "MARÍA LÓPEZ") in marks and ("ev-p", "g0 p0", "María López") in marks
    assert ("ev-p", "p1", "$3.5m") in marks and len(marks) == 3
    # the whole text, in order, its hostile part as text
    assert re.sub(r"<[^>]+>", "", box.split(">", 1)[1]).replace("&lt;", "<").replace("&gt;", ">") \
        .replace("&amp;", "&").replace("&quot;", '"').startswith(TEXT)
    assert "<img" not in dom and "<b>bold</b>" not in dom and "&lt;/script&gt;&lt;img src=x" in box
    tags = re.findall(r'<span class="fact-src (src-\w+)">([^<]*)</span>', dom)
    assert tags == [("src-found", "found in the source"), ("src-found", "found in the source"),
                    ("src-missing", "not found in the source")]


def test_a_screenshot_of_the_document_view(browser, page):
    """For a person to look at (the page drawn, not blank: a blank page is some 8 kB)."""
    shot = page / "document-view.png"
    shot.write_bytes(browser.load((page / "report.html").as_uri(), width=1280, height=2400, budget=2000,
                                  hide_scrollbars=True, screenshot=True).png)
    assert shot.stat().st_size > 50_000
