"""report.html in a real headless browser (Debian's chromium, one process for the module driven over
the DevTools protocol: tests/headless.py): it loads offline without console errors, shows the
headline numbers, escapes hostile fact values and its filters work; the document view draws a link
per matched pair; the compare page filters its changed facts; the agree page shows its figures and
hostile ids as text."""
import json
import re
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from evalkit import ROOT
from headless import CHROMIUM, Browser


def external_references(html):
    """Attributes that would load something: any src, an href leaving the page, url() or @import
    in a style. Parsed, so escaped text inside an attribute value is not mistaken for one."""
    from html.parser import HTMLParser

    found = []

    class Refs(HTMLParser):
        def handle_starttag(self, tag, attrs):
            for name, value in attrs:
                value = value or ""
                if name == "src" or (name == "href" and not value.startswith("#")) or (
                        name == "style" and ("url(" in value or "@import" in value)):
                    found.append((tag, name, value))

        def handle_data(self, data):
            if self.lasttag == "style" and ("url(" in data or "@import" in data):
                found.append(("style", "", data[:80]))

    Refs().feed(html)
    return found


HOSTILE = '</script><img src=x onerror="document.title=1"><b>bold</b> & "quotes"'

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser"), pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="needs Debian's chromium at /usr/bin/chromium (apt-get install chromium; .ci/run installs it)")]


@pytest.fixture(scope="module")
def browser(tmp_path_factory) -> Iterator[Browser]:
    """One Chromium for every page of the module: a start costs ~0.5-1 s of CPU, a page load far less."""
    running = Browser(tmp_path_factory.mktemp("chromium"))
    yield running
    running.close()


def load(browser: Browser, url: str, **viewport) -> tuple[str, list[str]]:
    """The DOM after scripts ran, and every console message (uncaught exceptions included) the page
    produced. ``viewport``: :meth:`Browser.load`'s width, height and virtual-time budget."""
    got = browser.load(url, **viewport)
    return got.dom, got.console


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


def test_loads_without_console_errors_and_shows_the_headline(browser, report):
    out, summary = report
    dom, console = load(browser, (out / "report.html").as_uri())
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
    # offline: the page references no resource at all (links within the page only)
    assert external_references(dom) == []


def test_filters_by_status_and_fact_type(browser, report):
    out, summary = report
    url = (out / "report.html").as_uri()
    dom, console = load(browser, url + "#status=FP")
    assert console == []
    rows = visible_rows(dom)
    assert len(rows) == summary["micro"]["fp"] == int(text_of(dom, "shown"))
    assert all('data-status="FP"' in r for r in rows)
    dom, console = load(browser, url + "#status=FN&type=revenue")
    assert console == []
    rows = visible_rows(dom)
    assert len(rows) == summary["by_fact_type"]["revenue"]["fn"] > 0
    assert all('data-type="revenue"' in r and 'data-status="FN"' in r for r in rows)


def test_the_harness_catches_a_script_error(browser, report, tmp_path):
    """Without this, a broken console check would pass every report."""
    out, _ = report
    broken = tmp_path / "broken.html"
    html = (out / "report.html").read_text(encoding="utf-8")
    broken.write_text(html.replace("</body>", "<script>notDefined.call();</script></body>"),
                      encoding="utf-8")
    _, console = load(browser, broken.as_uri())
    assert any("Uncaught ReferenceError: notDefined is not defined" in line for line in console)



# --------------------------------------------------------------------------- what evaluate passes

PROVENANCE = {"factjudge": "0.0.0-test", "created": "2025-06-01T12:00:00+00:00", "inputs": ["data.jsonl"]}


def read_lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def render_full(out: Path, dest: Path, rows_limit: int = 5000, tp_limit: int = 5000) -> Path:
    """report.html as evaluate renders it once wired: rows and documents worst first, TP rows for
    spot checks, the document view of the worst documents, provenance."""
    from factjudge.core.aggregate import Summary
    from factjudge.reports.html import render_html
    from factjudge.reports.rows import select_rows, worst_order_key

    summary = Summary.model_validate({**json.loads((out / "summary.json").read_text()), "provenance": PROVENANCE})
    lines = read_lines(out / "results.jsonl")
    order = sorted(range(len(lines)), key=lambda i: worst_order_key(lines[i]["metrics"], i))
    by_worst = [lines[i] for i in order]
    wrong = [x for x in by_worst if x["metrics"]["fn"] + x["metrics"]["fp"] + x["metrics"]["errors"]]
    worst = [{"doc_id": x["doc_id"], **{k: x["metrics"][k] for k in
                                        ("precision", "recall", "f1", "fn", "fp", "errors")}}
             for x in wrong[:10]]
    m = summary.micro
    rows = select_rows(by_worst, rows_limit, tp_limit=tp_limit)
    dest.write_text(render_html(summary, worst, rows, m.fn + m.fp + m.errors,
                                rows_order="worst", documents=wrong[:50]), encoding="utf-8")
    return dest


@pytest.fixture(scope="module")
def full(report, tmp_path_factory):
    out, summary = report
    return render_full(out, tmp_path_factory.mktemp("full") / "report.html"), out, summary


def matched_pairs(line: dict) -> set[tuple[str, str]]:
    pairs = {(g["id"], p) for g in line["gold_facts"] for p in g["factjudge"]["matched_ids"]}
    return pairs | {(g, p["id"]) for p in line["predicted_facts"] for g in p["factjudge"]["matched_ids"]}


def links_svg(dom: str) -> str:
    match = re.search(r'<svg id="doc-links"[^>]*>', dom)
    assert match
    return match.group(0)


def test_document_view_draws_a_link_per_matched_pair(browser, full):
    page, out, _ = full
    lines = {x["doc_id"]: x for x in read_lines(out / "results.jsonl")}
    for doc_id in ("contoso-robotics-ar-2023", "tailspin-toys-ar-2023", "hostile <doc>"):
        url = page.as_uri() + "#doc=" + quote(doc_id, safe="")
        dom, console = load(browser, url, width=1280, height=1000, budget=2000)
        assert console == []
        expected = len(matched_pairs(lines[doc_id]))
        svg = links_svg(dom)
        assert f'data-links-drawn="{expected}"' in svg, (doc_id, svg)
        view = dom.split('id="docview"')[1]
        assert view.count('class="link"') == expected
        # every fact of the document is a card, gold left, predicted right
        gold = view.split('id="doc-gold-facts"')[1].split('id="doc-pred-facts"')[0]
        assert gold.count('class="fact-id"') == len(lines[doc_id]["gold_facts"])
        if lines[doc_id]["metrics"]["fn"]:
            assert 'class="fact st-FN' in gold
    # the hostile document's text is text
    assert "<img" not in dom and "&lt;/script&gt;&lt;img src=x" in dom
    assert contoso_width_ok(browser, page)


def contoso_width_ok(browser: Browser, page: Path) -> bool:
    """At 1280px the two columns sit side by side (the links run left to right)."""
    dom, _ = load(browser, page.as_uri() + "#doc=contoso-robotics-ar-2023", width=1280, height=1000)
    path = re.search(r'<path d="M([\d.]+),[\d.]+ C[^"]* ([\d.]+),[\d.]+" class="link"', dom)
    assert path, "no link drawn"
    return 500 < float(path.group(1)) < float(path.group(2)) < 760


def test_document_view_screenshot(browser, full):
    page, _, _ = full
    # tall enough that the document view is on screen without scrolling
    png = browser.load(page.as_uri() + "#doc=contoso-robotics-ar-2023", width=1280, height=4200, budget=2000,
                       screenshot=True).png
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 50_000
    assert struct.unpack(">II", png[16:24]) == (1280, 4200)


def test_tp_rows_are_hidden_until_asked_for_and_rows_filter_by_document(browser, full):
    page, _, summary = full
    m = summary["micro"]
    dom, console = load(browser, page.as_uri())
    assert console == []
    assert len(visible_rows(dom)) == m["fn"] + m["fp"] + m["errors"] == int(text_of(dom, "shown"))
    assert "the worst documents first" in dom
    dom, _ = load(browser, page.as_uri() + "#status=TP")
    rows = visible_rows(dom)
    assert len(rows) == m["tp_gold"] + m["tp_predicted"] and all('data-status="TP"' in r for r in rows)
    dom, _ = load(browser, page.as_uri() + "#status=all&rowdoc=tailspin-toys-ar-2023")
    rows = visible_rows(dom)
    assert rows and all('data-doc="tailspin-toys-ar-2023"' in r for r in rows)
    assert any('data-status="TP"' in r for r in rows) and any('data-status="FN"' in r for r in rows)
    # the worst documents link to the document view; the first one comes first
    worst = dom.split('id="worst"')[1].split("</table>")[0]
    assert re.findall(r'href="#doc=([^"]*)"', worst)[0] == "hostile%20%3Cdoc%3E"


# --------------------------------------------------------------------------- compare


def build_cmp(dir_a: Path, dir_b: Path, resamples: int = 200, seed: int = 0):
    """The ``cmp`` of ``render_compare_*``, as ``factjudge compare`` builds it."""
    from factjudge.io.run_models import CompareResult

    try:  # evaluate.py was split into aggregate.py / results.py
        from factjudge.core.aggregate import paired_bootstrap
        from factjudge.io.runfolder import read_eval_dir
    except ImportError:
        from factjudge.evaluation.runner import paired_bootstrap, read_eval_dir  # type: ignore[no-redef]
    from factjudge.reports.rows import changed_facts, fact_type_keys

    a, b = read_eval_dir(dir_a), read_eval_dir(dir_b)
    common = [d for d in a if d in b]
    lines_a = {x["doc_id"]: x for x in read_lines(dir_a / "results.jsonl")}
    lines_b = {x["doc_id"]: x for x in read_lines(dir_b / "results.jsonl")}
    keys_a = [fact_type_keys(lines_a[d]) for d in common]
    keys_b = [fact_type_keys(lines_b[d]) for d in common]
    types = sorted({t for k in keys_a + keys_b for t in k})
    zero = (0, 0, 0, 0)
    return CompareResult.model_validate({"a": str(dir_a), "b": str(dir_b), "documents": len(common),
            "only_a": len(a) - len(common), "only_b": len(b) - len(common),
            "bootstrap": {"resamples": resamples, "seed": seed},
            "metrics": paired_bootstrap([a[d][0] for d in common], [b[d][0] for d in common],
                                        resamples, seed),
            "by_fact_type": {t: paired_bootstrap([k.get(t, zero) for k in keys_a],
                                                 [k.get(t, zero) for k in keys_b], resamples, seed)
                             for t in types},
            "changed": [c for d in common for c in changed_facts(lines_a[d], lines_b[d])]})


def test_compare_page_filters_changed_facts(browser, report, tmp_path):
    from factjudge.reports.html import render_compare_html

    out_a, _ = report
    docs = [json.loads(x) for x in (ROOT / "examples" / "dataset.jsonl").read_text().splitlines()]
    gold_of = {d["doc_id"]: {f["id"]: f for f in d["gold_facts"]} for d in docs}
    for d in docs[:2]:  # B: the first two documents predict their gold facts exactly
        d["predicted_facts"] = [{**f, "id": "b" + f["id"]} for f in gold_of[d["doc_id"]].values()]
    docs[2]["predicted_facts"] = docs[2]["predicted_facts"][1:]  # and a third loses a prediction
    data = tmp_path / "b.jsonl"
    data.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    out_b = tmp_path / "b"
    proc = subprocess.run([sys.executable, "-m", "factjudge", "eval", str(data), "-c",
                           str(ROOT / "examples" / "config.yaml"), "-o", str(out_b), "-q"],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    cmp = build_cmp(out_a, out_b)
    assert cmp.metrics["recall"].diff > 0 and cmp.only_a == 1
    kinds = {c["change"] for c in cmp.changed}
    assert {"fixed", "broke"} <= kinds
    page = tmp_path / "compare.html"
    page.write_text(render_compare_html(cmp), encoding="utf-8")
    dom, console = load(browser, page.as_uri())
    assert console == []
    table = lambda dom: dom.split('id="changed"')[1].split("</table>")[0]  # noqa: E731
    rows = [r for r in re.findall(r"<tr [^>]*>", table(dom)) if "hidden" not in r]
    assert len(rows) == len(cmp.changed) == int(text_of(dom, "shown"))
    doc = docs[2]["doc_id"]
    dom, console = load(browser, page.as_uri() + f"#change=broke&doc={doc}")
    assert console == []
    rows = [r for r in re.findall(r"<tr [^>]*>", table(dom)) if "hidden" not in r]
    expected = [c for c in cmp.changed if c["change"] == "broke" and c["doc_id"] == doc]
    assert rows and len(rows) == len(expected) == int(text_of(dom, "shown"))
    assert all('data-change="broke"' in r and f'data-doc="{doc}"' in r for r in rows)
    assert not re.search(r'<[^>]*\s(src|href)=|url\(|@import', dom)


# --------------------------------------------------------------------------- agree

IMG = "<img src=x onerror=alert(1)>"


def test_agree_page_shows_the_figures_and_hostile_values_as_text(browser, tmp_path):
    """Two rules-judge runs whose tolerances differ: the hostile fact is TP in B only, and a
    document with a hostile doc_id is in B only; agree.html shows both as text."""
    doc = {"doc_id": f"d {IMG}", "gold_facts": [{"id": f"g{IMG}", "fact_type": "revenue", "entity": IMG,
                                                  "value": "100"}],
           "predicted_facts": [{"id": "p1", "fact_type": "revenue", "entity": IMG, "value": "120"}]}
    only_b = {"doc_id": f"only {IMG}", "gold_facts": [], "predicted_facts": []}
    runs = []
    for name, docs, relative in (("a", [doc], 0.01), ("b", [doc, only_b], 0.5)):
        data, config, out = tmp_path / f"{name}.jsonl", tmp_path / f"{name}.json", tmp_path / name
        data.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
        config.write_text(json.dumps({"entity_types": ["revenue"],
                                      "tolerances": {"value": {"relative": relative}}}), encoding="utf-8")
        proc = subprocess.run([sys.executable, "-m", "factjudge", "eval", str(data), "-c", str(config),
                               "-o", str(out), "-q"], capture_output=True, text=True, timeout=180)
        assert proc.returncode == 0, proc.stderr
        runs.append(out)
    proc = subprocess.run([sys.executable, "-m", "factjudge", "agree", *map(str, runs), "-o", str(tmp_path / "h")],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    dom, console = load(browser, (tmp_path / "h" / "agree.html").as_uri())
    assert console == []
    assert "<h1>factjudge agreement</h1>" in dom
    # 2 facts judged in both runs (the gold one and the predicted one), neither agrees
    assert re.search(r'id="overall">Per-fact agreement [^<]*<strong>0\.000</strong> over 2 facts', dom)
    diffs = dom.split('id="diffs"')[1].split("</table>")[0]
    assert diffs.count("<tr>") == 1 and diffs.count("<tr data-type") == 2  # the head, the two differing facts
    assert '<span class="status-FN">FN</span>' in diffs and '<span class="status-TP">TP</span>' in diffs
    # the hostile fact id, field and doc_ids are text, never an element
    assert "<img" not in dom
    assert f"<td>d {IMG.replace('<', '&lt;').replace('>', '&gt;')}</td>" in diffs
    assert f"<span class=\"fid\">g{IMG.replace('<', '&lt;').replace('>', '&gt;')}</span>" in diffs
    assert "1 only in B (0 facts): <code>only &lt;img src=x onerror=alert(1)&gt;</code>" in dom
    assert external_references(dom) == []


# --------------------------------------------------------------------------- widths and the ERROR banner (#24)

#: Runs in the page after its own script: every word of every table cell that the layout split
#: over two lines (a cell narrower than the word), and whether the page itself scrolls sideways.
#: A word is a run of non-space characters, split after a hyphen (a line may end there).
MEASURE_JS = """<script>(function () {
  var broken = [], cells = document.querySelectorAll("td, th");
  cells.forEach(function (cell) {
    var walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT), node, m;
    while ((node = walker.nextNode())) {
      var words = /[^\\s-]+-?/g;
      while ((m = words.exec(node.data))) {
        var range = document.createRange();
        range.setStart(node, m.index); range.setEnd(node, m.index + m[0].length);
        var tops = new Set(Array.from(range.getClientRects()).filter(function (r) { return r.width > 0; })
                           .map(function (r) { return Math.round(r.top); }));
        if (tops.size > 1) {
          broken.push({word: m[0].slice(0, 40), cell: Math.round(cell.getBoundingClientRect().width)});
        }
      }
    }
  });
  var out = document.createElement("pre");
  out.id = "measure";
  out.textContent = JSON.stringify({broken: broken, cells: cells.length, width: window.innerWidth,
                                    scroll: document.documentElement.scrollWidth,
                                    banner: !!document.getElementById("banners")});
  document.body.appendChild(out);
})();</script>"""

BANNER_RGB = (0xFD, 0xEC, 0xEA)  # .banner's background in report.css


def measure(browser: Browser, page: Path, width: int, tmp_path: Path, extra: str = "") -> dict:
    """The layout of ``page`` at ``width`` px, measured by :data:`MEASURE_JS` in Chromium."""
    probe = tmp_path / f"probe-{width}-{page.name}"
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", extra + MEASURE_JS + "</body>"),
                     encoding="utf-8")
    dom, console = load(browser, probe.as_uri(), width=width, height=1000, budget=2000)
    assert console == []
    match = re.search(r'<pre id="measure">([^<]*)</pre>', dom)
    assert match, "the measuring script did not run"
    import html
    return json.loads(html.unescape(match.group(1)))


def png_pixels(png: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and the rows of RGB(A) bytes of an 8-bit, non-interlaced PNG (as Chromium writes)."""
    import zlib

    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, head = 8, b"", b""
    while pos < len(png):
        size, kind = struct.unpack(">I4s", png[pos:pos + 8])
        body = png[pos + 8:pos + 8 + size]
        head, idat = (body, idat) if kind == b"IHDR" else (head, idat + body if kind == b"IDAT" else idat)
        pos += 12 + size
    width, height, depth, color = struct.unpack(">IIBB", head[:10])
    assert depth == 8 and color in (2, 6) and head[12] == 0, "only 8-bit RGB/RGBA, not interlaced"
    bpp = 3 if color == 2 else 4
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    # "up" (most of Chromium's rows) adds the row above byte by byte, mod 256: done on the whole row
    # as one integer, the carry out of each byte's low 7 bits kept in the byte (xor for bit 7)
    low, high = int.from_bytes(b"\x7f" * stride, "big"), int.from_bytes(b"\x80" * stride, "big")
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if kind == 2:
            a, b = int.from_bytes(line, "big"), int.from_bytes(prev, "big")
            line = bytearray((((a & low) + (b & low)) ^ ((a ^ b) & high)).to_bytes(stride, "big"))
        for i in range(stride if kind in (1, 3, 4) else 0):
            left = line[i - bpp] if i >= bpp else 0
            up, corner = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, [bytes(r) for r in rows] if bpp == 3 else [
        b"".join(r[i:i + 3] for i in range(0, len(r), 4)) for r in rows]


def banner_pixels(browser: Browser, page: Path, width: int) -> int:
    """How many pixels of a ``width`` x 900 screenshot of ``page`` have the banner's colour."""
    png = browser.load(page.as_uri(), width=width, height=900, budget=2000, hide_scrollbars=True, screenshot=True).png
    w, h, rows = png_pixels(png)
    assert (w, h) == (width, 900)
    # a bit per pixel for each channel that has the banner's value; the pixels where all three do
    tables = [bytes(v == value for v in range(256)) for value in BANNER_RGB]
    bits = lambda row, c: int.from_bytes(row[c::3].translate(tables[c]), "big")  # noqa: E731
    return sum((bits(row, 0) & bits(row, 1) & bits(row, 2)).bit_count() for row in rows)


@pytest.fixture(scope="module")
def error_run(tmp_path_factory):
    """An LLM-judged run (the scripted server) where 4 of 42 in-scope facts end ERROR (9.5%), with a
    worst document that has no prediction, and the rules run of the same facts to compare against."""
    from example_truth import TRUTH
    from scripted_server import Reply, ScriptedServer

    tmp = tmp_path_factory.mktemp("errors")
    gold = json.loads((ROOT / "examples" / "report_gold.json").read_text(encoding="utf-8"))
    pred = [json.loads(x) for x in (ROOT / "examples" / "report_predicted.jsonl").read_text().splitlines() if x]
    docs = [{"doc_id": "contoso-robotics-ar-2023", "gold_facts": gold, "predicted_facts": pred},
            {"doc_id": "no-predictions-at-all", "gold_facts": gold[:3], "predicted_facts": []}]
    data = tmp / "data.jsonl"
    data.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    with ScriptedServer(truth=TRUTH) as server:
        for g in ("g01", "g02", "g03", "g04"):
            server.faults[("gold", g)] = [Reply(content="nonsense")] * 20
        proc = subprocess.run([sys.executable, "-m", "factjudge", "eval", str(data), "-o", str(tmp / "llm"),
                               "--model", "m", "--base-url", server.base_url, "--no-cache", "-q"],
                              capture_output=True, text=True, timeout=180)
    assert proc.returncode == 1 and "4 fact(s) could not be judged" in proc.stderr, proc.stderr
    proc = subprocess.run([sys.executable, "-m", "factjudge", "eval", str(data), "-o", str(tmp / "rules"), "-q"],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    for command in ("compare", "agree"):
        proc = subprocess.run([sys.executable, "-m", "factjudge", command, str(tmp / "rules"), str(tmp / "llm"),
                               "-o", str(tmp / command)], capture_output=True, text=True, timeout=180)
        assert proc.returncode == 0, proc.stderr
    return tmp


PAGES = ["llm/report.html", "rules/report.html", "compare/compare.html", "agree/agree.html"]


@pytest.mark.parametrize("width", [800, 1400])
@pytest.mark.parametrize("name", PAGES)
def test_no_cell_is_narrower_than_a_word(browser, error_run, name, width, tmp_path):
    got = measure(browser, error_run / name, width, tmp_path)
    assert got["width"] == width and got["cells"] > 20
    assert got["broken"] == [], got["broken"][:10]
    assert got["scroll"] <= width  # a wide table scrolls in its own box, the page does not


def test_the_width_check_catches_a_cell_that_breaks_words(browser, error_run, tmp_path):
    """Without this, a measuring script that found nothing would pass every page."""
    got = measure(browser, error_run / "llm/report.html", 800, tmp_path, "<style>td{word-break:break-all}</style>")
    assert got["broken"]


@pytest.mark.parametrize("width", [800, 1400])
def test_the_error_banner_shows_over_five_percent(browser, error_run, width, tmp_path):
    summary = json.loads((error_run / "llm" / "summary.json").read_text())
    m = summary["micro"]
    assert m["errors"] / (m["tp_gold"] + m["fn"] + m["tp_predicted"] + m["fp"] + m["errors"]) > 0.05
    assert measure(browser, error_run / "llm/report.html", width, tmp_path)["banner"]
    assert banner_pixels(browser, error_run / "llm/report.html", width) > 2000  # on screen, above the fold
    assert not measure(browser, error_run / "rules/report.html", width, tmp_path)["banner"]
    assert banner_pixels(browser, error_run / "rules/report.html", width) == 0


def test_the_document_view_opens_on_a_document_with_both_sides(browser, error_run):
    dom, console = load(browser, (error_run / "llm/report.html").as_uri(), width=1280, height=1000, budget=2000)
    assert console == []
    worst = dom.split('id="worst"')[1].split("</table>")[0]
    assert re.findall(r'href="#doc=([^"]*)"', worst)[0] == "no-predictions-at-all"  # the worst one...
    pred = dom.split('id="doc-pred-facts"')[1].split("</div></div>")[0]
    assert pred.count('class="fact-id"') > 0  # ...is not the one it opens on
    assert 'data-links-drawn="0"' not in links_svg(dom)


def test_agree_filters_by_side_and_hides_facts_left_out(browser, error_run):
    page = (error_run / "agree/agree.html").as_uri()
    rows = lambda dom: [r for r in re.findall(r"<tr [^>]*>", dom.split('id="diffs"')[1].split("</table>")[0])  # noqa: E731
                        if "hidden" not in r]
    dom, console = load(browser, page)
    assert console == []
    every = rows(dom)
    assert any('data-left-out="true"' in r for r in every) and int(text_of(dom, "shown")) == len(every)
    dom, _ = load(browser, page + "#side=gold&leftOut=1")
    kept = rows(dom)
    assert kept and all('data-side="gold"' in r and 'data-left-out="false"' in r for r in kept)
    assert len(kept) < len(every) and int(text_of(dom, "shown")) == len(kept)
