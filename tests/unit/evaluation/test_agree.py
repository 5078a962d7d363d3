"""``factjudge agree``: two eval folders written by the CLI with two scripted judges, agreement and
Cohen's kappa checked by hand, the HTML page, and the one-line errors."""
import os
import re

import evalkit
import pytest
from scripted_server import Reply, ScriptedServer, answer, describe

from factjudge.errors import InputError
from factjudge.evaluation.agree import agree


def run_cli(*args):  # in this process; one response cache per test
    return evalkit.run_cli(*args, cache_dir=os.environ["FACTJUDGE_CACHE_DIR"], env={"OPENAI_BASE_URL": None})


def rev(i, v):
    return {"id": i, "fact_type": "revenue", "value": v}


def ceo(i, name):
    return {"id": i, "fact_type": "ceo", "name": name}


D1 = {"doc_id": "d1", "gold_facts": [rev("a_g1", 1), rev("a_g2", 2), ceo("a_g3", "Ann"),
                                     {"id": "a_g4", "fact_type": "misc", "x": 1}],
      "predicted_facts": [rev("a_p1", 1), rev("a_p2", 2), ceo("a_p3", "Bob")]}
D2 = {"doc_id": "d2", "gold_facts": [rev("b_g1", 5), ceo("b_g2", "Cy"), rev("b_g3", 6)],
      "predicted_facts": [rev("b_p1", 5), ceo("b_p2", "Cy"), rev("b_p3", 8)]}
D2_B = {**D2, "predicted_facts": D2["predicted_facts"] + [rev("b_p9", 7)]}   # one fact only in B
D3 = {"doc_id": "d3", "gold_facts": [rev("c_g1", 9)], "predicted_facts": [rev("c_p1", 9)]}


def table(gold, predicted):
    return {**{("gold", k): v for k, v in gold.items()}, **{("predicted", k): v for k, v in predicted.items()}}


# judge A and judge B, pass by pass (None: FN / FP)
TRUTH_A = table({"a_g1": "a_p1", "a_g2": "a_p2", "a_g3": None, "b_g1": "b_p1", "b_g2": "b_p2", "b_g3": None},
                {"a_p1": "a_g1", "a_p2": "a_g2", "a_p3": None, "b_p1": "b_g1", "b_p2": "b_g2", "b_p3": None})
TRUTH_B = table({"a_g1": "a_p1", "a_g2": None, "a_g3": None, "b_g1": "b_p3", "b_g3": None, "c_g1": "c_p1"},
                {"a_p1": "a_g1", "a_p2": None, "a_p3": "a_g3", "b_p1": None, "b_p2": "b_g2", "b_p3": "b_g1",
                 "b_p9": None, "c_p1": "c_g1"})
# After reconciliation (both runs), facts in both runs:
#   gold       A           B            counted as
#   a_g1       TP a_p1     TP a_p1      agree            (TP/TP)
#   a_g2       TP a_p2     FN           differ           (TP/neg)
#   a_g3       FN          TP a_p3      differ           (neg/TP; B's predicted side promoted it)
#   a_g4       OUT_OF_SCOPE both        left out
#   b_g1       TP b_p1     TP b_p3      differ, same status (TP/TP)
#   b_g2       TP b_p2     ERROR        left out (and listed)
#   b_g3       FN          FN           agree            (neg/neg)
#   -> compared 5, agree 2, same status 3; p_o 3/5, p_e (3/5)(3/5)+(2/5)(2/5) = 13/25, kappa 1/6
#   predicted  A           B
#   a_p1       TP a_g1     TP a_g1      agree            (TP/TP)
#   a_p2       TP a_g2     FP           differ           (TP/neg)
#   a_p3       FP          TP a_g3      differ           (neg/TP)
#   b_p1       TP b_g1     FP           differ           (TP/neg)
#   b_p2       TP b_g2     TP b_g2      agree            (TP/TP)
#   b_p3       FP          TP b_g1      differ           (neg/TP)
#   b_p9       only in B
#   -> compared 6, agree 2, same status 2; p_o 1/3, p_e (2/3)^2+(1/3)^2 = 5/9, kappa -1/2
#   all: 4 of 11 agree; 8 facts differ, 1 of them left out (b_g2); d3 only in B (2 facts)


def reasoned(truth, reasoning):
    def respond(body):
        direction, subject, _ = describe(body)
        return answer(direction, subject, truth.get((direction, subject)), reasoning=reasoning)
    return respond


@pytest.fixture
def runs(tmp_path, write_json):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("entity_types: [revenue, ceo]\n", encoding="utf-8")
    data_a = write_json("a.jsonl", [D1, D2])
    data_b = write_json("b.jsonl", [D1, D2_B, D3])
    out_a, out_b = tmp_path / "out_a", tmp_path / "out_b"
    with ScriptedServer(responder=reasoned(TRUTH_A, "A thinks <b>so</b>")) as a, \
            ScriptedServer(responder=reasoned(TRUTH_B, "B: <script>alert('x')</script> & co")) as b:
        b.faults[("gold", "b_g2")] = [Reply(content="nonsense")] * 3   # ERROR in run B
        proc = run_cli("eval", data_a, "-c", cfg, "-o", out_a, "--model", "ma", "--base-url", a.base_url, "-q")
        assert proc.returncode == 0, proc.stderr
        proc = run_cli("eval", data_b, "-c", cfg, "-o", out_b, "--model", f"mb@{b.base_url}", "-q",
                       "--no-warmup")
        assert proc.returncode == 1, proc.stderr   # finished, with one ERROR fact
    return out_a, out_b


def test_agreement_and_kappa_by_hand(runs):
    out_a, out_b = runs
    ag = agree(out_a, out_b)
    g, p = ag.sides["gold"], ag.sides["predicted"]
    assert (g.compared, g.agree, g.same_status, g.tp_tp, g.tp_neg, g.neg_tp, g.neg_neg) == (5, 2, 3, 2, 1, 1, 1)
    assert (g.errors, g.out_of_scope, g.only_a, g.only_b) == (1, 1, 0, 0)
    assert g.kappa == pytest.approx(1 / 6) and g.agreement == pytest.approx(2 / 5)
    assert (p.compared, p.agree, p.same_status, p.tp_tp, p.tp_neg, p.neg_tp, p.neg_neg) == (6, 2, 2, 2, 2, 2, 0)
    assert (p.errors, p.out_of_scope, p.only_a, p.only_b) == (0, 0, 0, 1)
    assert p.kappa == pytest.approx(-0.5)
    assert ag.agreement == pytest.approx(4 / 11)
    assert (ag.documents, ag.docs_only_a, ag.docs_only_b, ag.doc_ids_only_b) == (2, 0, 1, ["d3"])
    assert ag.facts_in_docs_only_b == 2 and ag.inputs_differ == 0
    assert ag.differences_total == 8 and ag.differences_left_out == 1
    assert [(d.doc_id, d.side, d.id) for d in ag.differences] == [
        ("d1", "gold", "a_g2"), ("d1", "gold", "a_g3"), ("d1", "predicted", "a_p2"),
        ("d1", "predicted", "a_p3"), ("d2", "gold", "b_g1"), ("d2", "gold", "b_g2"),
        ("d2", "predicted", "b_p1"), ("d2", "predicted", "b_p3")]
    b_g1 = ag.differences[4]
    assert b_g1.a["matched_ids"] == ["b_p1"] and b_g1.b["matched_ids"] == ["b_p3"]
    assert b_g1.a["reasoning"] == "A thinks <b>so</b>" and "alert" in b_g1.b["reasoning"]
    assert ag.differences[5].left_out and ag.differences[5].b["status"] == "ERROR"
    # direction does not matter for agreement and kappa
    back = agree(out_b, out_a)
    assert back.agreement == ag.agreement and back.sides["gold"].kappa == pytest.approx(1 / 6)
    assert (back.docs_only_a, back.sides["predicted"].only_a) == (1, 1)
    assert agree(out_a, out_b, max_rows=3).differences_total == 8


def test_cli_agree_prints_the_figures_and_writes_an_escaped_offline_page(runs, tmp_path):
    out_a, out_b = runs
    html_dir = tmp_path / "agreement"
    proc = run_cli("agree", out_a, out_b, "-o", html_dir)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert f"A: {out_a} (llm ma at 127.0.0.1:" in text
    assert "documents: 2 in both; 0 only in A, 1 only in B (d3)" in text
    assert ("facts: 13 in both runs; in shared documents 0 only in A and 1 only in B; in documents of "
            "one run 0 in A and 2 in B; left out of agreement and kappa: 1 ERROR, 1 OUT_OF_SCOPE") in text
    rows = {line.split()[0]: line.split()[1:] for line in text.splitlines()
            if re.match(r"(gold|predicted|all) +\d", line)}
    assert rows["gold"] == ["5", "2", "0.400", "3", "0.167", "2", "1", "1", "1"]
    assert rows["predicted"] == ["6", "2", "0.333", "2", "-0.500", "2", "2", "2", "0"]
    assert rows["all"] == ["11", "4", "0.364", "5"]
    assert "differing facts: 8 (status or matched ids; 1 of them ERROR or OUT_OF_SCOPE in a run)" in text
    assert "d2 gold b_g1 (revenue): A TP [b_p1] | B TP [b_p3]" in text
    assert "  A reasoning: A thinks <b>so</b>" in text
    assert "d2 gold b_g2 (ceo): A TP [b_p2] | B ERROR" in text and "  B note: no valid answer" in text
    assert f"wrote {html_dir / 'agree.html'}" in proc.stderr
    page = (html_dir / "agree.html").read_text(encoding="utf-8")
    assert page.count("<script") == 1  # the page's own filters; hostile text stays text:
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; co" in page
    assert "A thinks &lt;b&gt;so&lt;/b&gt;" in page and "<b>so</b>" not in page
    assert not re.search(r"(src|href)=|@import|url\(", page)          # nothing to fetch: opens offline
    assert "<strong>0.364</strong> over 11 facts" in page and "0.167" in page and "-0.500" in page
    assert page.count("<tr>") == 2 + 2 + 3   # A/B, two table heads, gold/predicted/all
    diffs = page.split('id="diffs"')[1].split("</table>")[0]
    head = re.findall(r"<th>", diffs.split("</thead>")[0])
    rows = re.findall(r"<tr data-type=.*?</tr>", diffs, re.S)
    assert len(rows) == 8 and all(r.count("<td>") == len(head) for r in rows)  # no extra column
    assert "<td></td>" not in diffs and 'data-left-out="true"' in diffs
    assert '<dl class="fields"><dt>value</dt><dd>2</dd></dl>' in diffs  # fields, not JSON
    for ident in ("filter-type", "filter-side", "filter-doc", "filter-judged"):
        assert f'id="{ident}"' in page


def test_cli_agree_caps_the_listed_facts_but_counts_them_all(runs):
    out_a, out_b = runs
    proc = run_cli("agree", out_a, out_b, "--max-rows", "2")
    assert proc.returncode == 0
    assert ("differing facts: 8 (status or matched ids; 1 of them ERROR or OUT_OF_SCOPE in a run); "
            "the first 2 shown") in proc.stdout
    assert len(re.findall(r"^d\d (gold|predicted) \S+ \(\w+\): A ", proc.stdout, re.M)) == 2


def test_cli_agree_never_replaces_an_agree_html_it_did_not_write(runs, tmp_path):
    """``agree -o DIR`` replaced a user's agree.html in DIR without a word; it is refused in one
    line, untouched, and nothing is done. Its own page from an earlier run is written again."""
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "agree.html").write_text("<p>my notes</p>\n", encoding="utf-8")
    proc = run_cli("agree", *runs, "-o", folder)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (f"factjudge: error: {folder / 'agree.html'}: not a file factjudge agree wrote, "
                           "which it would replace: move it or give another -o\n")
    assert (folder / "agree.html").read_text(encoding="utf-8") == "<p>my notes</p>\n"

    own = tmp_path / "own"
    for _ in range(2):  # again into its own output folder
        proc = run_cli("agree", *runs, "-o", own)
        assert proc.returncode == 0, proc.stderr
    assert "<title>factjudge agreement</title>" in (own / "agree.html").read_text(encoding="utf-8")


def test_a_jury_run_shows_its_votes(runs, tmp_path, write_json):
    _, out_b = runs
    cfg = tmp_path / "cfg.yaml"
    data = write_json("j.jsonl", [D1, D2])
    out_j = tmp_path / "out_j"
    with ScriptedServer(TRUTH_A) as a, ScriptedServer(TRUTH_B) as b:
        proc = run_cli("eval", data, "-c", cfg, "-o", out_j, "--model", f"ma@{a.base_url}",
                       "--model", f"mb@{b.base_url}", "--jury-rules", "-q")
        assert proc.returncode == 0, proc.stderr
    proc = run_cli("agree", out_b, out_j, "-o", tmp_path / "h")
    assert proc.returncode == 0, proc.stderr
    assert f"B: {out_j} (jury of ma, mb, rules)" in proc.stdout
    assert "d1 gold a_g2 (revenue): A FN | B TP [a_p2]" in proc.stdout
    page = (tmp_path / "h" / "agree.html").read_text(encoding="utf-8")
    assert "votes: ma: TP:a_p2, mb: FN, rules: TP:a_p2" in page      # B said FN, the jury 2 of 3 TP
    assert "votes: ma: TP:a_p1, mb: TP:a_p1, rules: TP:a_p1" not in page   # a_g1: both agree


@pytest.mark.parametrize("make, message", [
    (lambda t, a: t / "missing", "not an eval output folder (no such folder)"),
    (lambda t, a: (t / "empty").mkdir() or t / "empty", "not an eval output folder (no results.jsonl)"),
    (lambda t, a: (a / "summary.json").unlink() or a, "not a finished eval output folder (no summary.json)"),
])
def test_not_an_eval_folder_is_one_line_and_exit_2(runs, tmp_path, make, message):
    out_a, out_b = runs
    bad = make(tmp_path, out_b)
    proc = run_cli("agree", out_a, bad, "-o", tmp_path / "h")
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and str(bad) in lines[0]
    assert not (tmp_path / "h").exists()


def test_a_broken_results_line_and_no_common_document_are_one_line_errors(runs, tmp_path, write_json):
    out_a, out_b = runs
    with (out_b / "results.jsonl").open("a") as fh:
        fh.write('{"doc_id": "d9"}\n')
    proc = run_cli("agree", out_a, out_b)
    assert proc.returncode == 2 and "results.jsonl: line 4: not a factjudge result line" in proc.stderr
    only_d3 = write_json("d3.jsonl", [D3])
    out_c = tmp_path / "out_c"
    assert run_cli("eval", only_d3, "-o", out_c, "-q").returncode == 0   # rules judge, offline
    proc = run_cli("agree", out_a, out_c)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == f"factjudge: error: {out_a} and {out_c} have no document in common"
    with pytest.raises(InputError, match="no document in common"):
        agree(out_a, out_c)


def test_runs_are_labelled_by_what_differs():
    from factjudge.evaluation.agree import run_labels
    from factjudge.reports.text import config_hash

    rules = {"judge": {"name": "rules"}, "config": {"tolerances": {"value": {"relative": 0.01}}, "x": 1}}
    loose = {"judge": {"name": "rules"}, "config": {"tolerances": {"value": {"relative": 0.5}}, "x": 1}}
    a, b = run_labels(rules, loose)
    assert a == f"rules, config {config_hash(rules['config'])} (tolerances differ)"
    assert b == f"rules, config {config_hash(loose['config'])} (tolerances differ)" and a != b
    hot = {"judge": {"name": "llm", "model": "m", "temperature": 0.7}, "config": {}}
    cold = {"judge": {"name": "llm", "model": "m", "temperature": 0.0}, "config": {}}
    assert run_labels(hot, cold) == ("llm m, temperature 0.7", "llm m, temperature 0.0")
    other = {"judge": {"name": "llm", "model": "n", "temperature": 0.0}, "config": {}}
    assert run_labels(hot, other) == ("llm m", "llm n")  # the names tell them apart already
