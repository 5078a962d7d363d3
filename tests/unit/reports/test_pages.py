"""The page machinery of reports/html.py: templates autoescape, the inlined package files cannot end
their element, a misspelt name fails the render, and a command that writes no page never imports
jinja2."""
import subprocess
import sys
from importlib import resources

import jinja2
import pytest

from factjudge.reports.html import environment, render_page, static_file

STATIC = resources.files("factjudge.reports") / "static"
TEMPLATES = resources.files("factjudge.reports") / "templates"


def test_every_template_is_autoescaped_and_loads():
    env = environment()
    names = sorted(p.name for p in TEMPLATES.iterdir() if p.name.endswith(".j2"))
    assert {"base.html.j2", "report.html.j2", "compare.html.j2", "agree.html.j2"} <= set(names)
    for name in names:
        template = env.get_template(name)
        assert env.autoescape is True or env.autoescape(template.name)


@pytest.mark.parametrize("name", sorted(p.name for p in STATIC.iterdir()))
def test_inlined_files_cannot_close_their_element(name):
    """CSS and JavaScript go into <style> / <script> unescaped: they must not end the element or
    open a comment that swallows the rest of the page."""
    text = static_file(name).lower()
    assert "</style" not in text and "</script" not in text and "<!--" not in text


def test_a_value_is_text_and_a_misspelt_name_fails_the_render():
    env = environment()
    page = env.from_string('{% from "macros.html.j2" import kv_table %}{{ kv_table([(k, v)]) }}').render(
        k="<b>k</b>", v=["<img src=x onerror=alert(1)>"])
    assert "<img" not in page and "<b>" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    with pytest.raises(jinja2.UndefinedError):
        render_page("base.html.j2", title="t")  # no "script": an error, not a page without its script


def test_a_judge_run_never_imports_jinja2():
    """The CLI imports what a command needs: ``judge`` writes no page."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "factjudge", "judge", "--help"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "factjudge.cli" in proc.stderr and "jinja2" not in proc.stderr


def test_review_puts_an_extra_found_in_the_source_before_one_that_is_not():
    """An FP with nothing close is a possible gold omission; found in its text, more likely one."""
    from factjudge.reports.review import review_queue

    line = {"doc_id": "d", "gold_facts": [], "predicted_facts": [
        {"id": "p1", "fact_type": "drug", "name": "zzz", "status": "FP", "matched_ids": []},
        {"id": "p2", "fact_type": "drug", "name": "aspirin", "status": "FP", "matched_ids": []}]}
    items, _ = review_queue([line], found={("d", "p2")})
    assert [i["predicted"]["id"] for i in items] == ["p2", "p1"]
    assert items[0]["reason"].startswith("possible gold omission: found in the source")
    items, _ = review_queue([line])  # no text: dataset order, as before
    assert [i["predicted"]["id"] for i in items] == ["p1", "p2"]


def test_the_document_view_embeds_the_text_only_when_given():
    """Without a text the payload is as before (the example report's pin); with one, the pieces
    mark gold (g) and predicted (p) evidence and each prediction is tagged."""
    from factjudge.judges.rules.locate import finder
    from factjudge.reports.docview import embed_documents

    line = {"doc_id": "d", "metrics": {}, "gold_facts": [
        {"id": "g1", "fact_type": "drug", "name": "Aspirin", "status": "TP", "matched_ids": ["p1"]}],
        "predicted_facts": [
        {"id": "p1", "fact_type": "drug", "name": "aspirin", "status": "TP", "matched_ids": ["g1"]},
        {"id": "p2", "fact_type": "drug", "name": "zzz", "status": "FP", "matched_ids": [],
         "evidence": {"extraction_index": 2}}]}
    (plain,), _ = embed_documents([line])
    assert "text" not in plain and "source" not in plain["predicted"][0]
    (shown,), _ = embed_documents([line], texts={"d": "took ASPIRIN."}, find=finder())
    assert shown["text"] == [["took ", []], ["ASPIRIN", ["g0", "p0"]], [".", []]]
    assert [(f["source"], f["ungrounded"]) for f in shown["predicted"]] == [
        ("found in the source", False), ("not found in the source", True)]
