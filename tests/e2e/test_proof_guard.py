"""Issue #36 item 1-2: an LLM judge cannot overrule what the rules prove. A "yes-man" server links
every pair it is asked about; in ``hybrid`` it cannot make a TP of a pair proved different on a
hard field (a number beyond tolerance, a date, an identifier), and with ``--judge llm`` every such
link is counted (summary.json ``alerts``), named on stderr and shown as a banner."""
from __future__ import annotations

import json

import pytest
from evalkit import fact, run_cli, write_jsonl
from scripted_server import ScriptedServer, answer, prompt_facts, proved_ids

from factjudge.models import JudgeConfig, verdict_of

#: The newcomer's invoice case (issue #36), in the same shape: two pairs the rules prove different
#: (total 936.32 vs 936.33 with no tolerance; INV-0077 vs 2024-INV-0077), one the model must judge
#: (a vendor's name written two ways), one equal (a date written two ways).
INVOICE = {"doc_id": "inv-1",
           "gold_facts": [fact("g1", "invoice_total", total="936.32 EUR"),
                          fact("g2", "invoice_id", invoice_number="INV-0077"),
                          fact("g3", "vendor", name="Acme Industrial Supplies GmbH"),
                          fact("g4", "due_date", date="2024-03-01")],
           "predicted_facts": [fact("p1", "invoice_total", total="936.33 EUR"),
                               fact("p2", "invoice_id", invoice_number="2024-INV-0077"),
                               fact("p3", "vendor", name="ACME Industrial"),
                               fact("p4", "due_date", date="March 1, 2024")]}
PARTNER = {"g1": "p1", "g2": "p2", "g3": "p3", "g4": "p4", "p1": "g1", "p2": "g2", "p3": "g3", "p4": "g4"}


def yes_man(body):
    """Links every fact to its partner of the same type whenever that partner is shown."""
    direction, subject, candidates = prompt_facts(body)
    shown = {c["id"] for c in candidates}
    partner = PARTNER[subject["id"]]
    return answer(direction, subject["id"], partner if partner in shown else None)


def run(tmp_path, judge, config=None):
    data = write_jsonl(tmp_path / "data.jsonl", [INVOICE])
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps(config or {}), encoding="utf-8")
    with ScriptedServer(responder=yes_man) as server:
        llm = ("--model", "m", "--base-url", server.base_url) if judge != "rules" else ()
        proc = run_cli("eval", data, "-c", cfg, "--judge", judge, *llm, "-o", tmp_path / "out")
        asked = [prompt_facts(r) for r in server.requests]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    results = json.loads((tmp_path / "out" / "results.jsonl").read_text(encoding="utf-8").splitlines()[0])
    return proc, summary, results, asked


def statuses(results):
    return {f["id"]: verdict_of(f)["status"] for f in [*results["gold_facts"], *results["predicted_facts"]]}


def test_hybrid_never_asks_about_a_pair_proved_different_and_keeps_it_apart(tmp_path):
    proc, summary, results, asked = run(tmp_path, "hybrid")
    assert proc.returncode == 0, proc.stderr
    got = statuses(results)
    # before: the yes-man's links made all four TP (F1 1.000)
    assert got["g1"] == got["g2"] == "FN" and got["p1"] == got["p2"] == "FP"
    assert got["g3"] == got["p3"] == got["g4"] == got["p4"] == "TP"
    # only the vendor was asked (both ways): the date is equal, the rest proved different
    assert sorted(subject["id"] for _, subject, _ in asked) == ["g3", "p3"]
    g1 = next(f for f in results["gold_facts"] if f["id"] == "g1")
    assert "proved different on total" in verdict_of(g1)["reasoning"] and "936.32" in verdict_of(g1)["reasoning"]
    g2 = next(f for f in results["gold_facts"] if f["id"] == "g2")
    assert "proved different on invoice_number (identifiers)" in verdict_of(g2)["reasoning"]
    assert summary["usage"]["proved_different"] == 4
    assert "4 settled by proof" in proc.stderr
    assert not any(a["kind"] == "linked_against_proof" for a in summary["alerts"])


def test_hybrid_leaves_a_candidate_proved_different_out_of_the_question(tmp_path):
    doc = {"doc_id": "d", "gold_facts": [fact("g1", "invoice_total", total="936.32 EUR", vendor="Acme")],
           "predicted_facts": [fact("p1", "invoice_total", total="936.33 EUR", vendor="Acme"),
                               fact("p2", "invoice_total", total="936.32", vendor="Acme Industrial")]}
    data = write_jsonl(tmp_path / "data.jsonl", [doc])
    with ScriptedServer(truth={("gold", "g1"): "p2", ("predicted", "p2"): "g1"}) as server:
        proc = run_cli("eval", data, "--judge", "hybrid", "--model", "m", "--base-url", server.base_url,
                       "-o", tmp_path / "out")
        gold_question = next(prompt_facts(r) for r in server.requests if prompt_facts(r)[0] == "gold")
    assert proc.returncode == 0, proc.stderr
    assert [c["id"] for c in gold_question[2]] == ["p2"]  # p1 differs in total: not shown
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    assert summary["usage"]["proof_left_out"] == 1 and summary["micro"]["tp_gold"] == 1


def test_a_few_candidates_proved_different_are_named_on_the_shared_prefix_and_never_linked(tmp_path):
    """Where the rules prove a few of many candidates different, the question keeps its direction's
    prefix, byte for byte the one every question of the direction shares and a provider caches
    (each question had a prefix of its own: 0% of the hybrid judge's prompt tokens cached), and
    names them in its own message. A model that links one anyway is asked again without them."""
    fillers = [fact(f"p{k}", "invoice_total", total="936.32 EUR", vendor=f"Vendor {k} Trading Company Limited, "
                    f"Industrial Estate {k}, Northern Business District") for k in range(3, 43)]
    doc = {"doc_id": "d", "gold_facts": [fact("g1", "invoice_total", total="936.32 EUR", vendor="Acme"),
                                         fact("g2", "invoice_total", total="936.32 EUR", vendor="Zenith")],
           "predicted_facts": [fact("p1", "invoice_total", total="936.33 EUR", vendor="Acme"),
                               fact("p2", "invoice_total", total="936.32", vendor="Acme Industrial"), *fillers]}

    def linker(body):  # links p1 whenever it is shown, else p2, and nothing for the rest
        direction, subject, candidates = prompt_facts(body)
        shown = {c["id"] for c in candidates}
        wanted = {"g1": "p1" if "p1" in shown else "p2", "p2": "g1"}.get(subject["id"])
        return answer(direction, subject["id"], wanted if wanted in shown else None)

    data = write_jsonl(tmp_path / "data.jsonl", [doc])
    with ScriptedServer(responder=linker) as server:
        proc = run_cli("eval", data, "--judge", "hybrid", "--model", "m", "--base-url", server.base_url,
                       "--concurrency", "1", "-o", tmp_path / "out")
        gold = [r for r in server.requests if prompt_facts(r)[0] == "gold"]
    assert proc.returncode == 0, proc.stderr
    first = {prompt_facts(r)[1]["id"]: r for r in reversed(gold)}  # each fact's first question
    # both gold questions on one prefix, all 42 candidates shown; g1's names p1 as proved
    assert first["g1"]["messages"][:-1] == first["g2"]["messages"][:-1]
    assert len(prompt_facts(first["g1"])[2]) == 42
    assert proved_ids(gold[0]) == ["p1"] and prompt_facts(gold[0])[1]["id"] == "g1"
    # the model linked p1: asked again without it, on a prefix of its own
    again = [r for r in gold if prompt_facts(r)[1]["id"] == "g1"][1]
    assert "p1" not in {c["id"] for c in prompt_facts(again)[2]} and proved_ids(again) == []
    results = json.loads((tmp_path / "out" / "results.jsonl").read_text(encoding="utf-8").splitlines()[0])
    g1 = verdict_of(next(f for f in results["gold_facts"] if f["id"] == "g1"))
    assert g1["status"] == "TP" and g1["matched_ids"] == ["p2"]
    assert "the first answer linked p1" in g1["description"]


def test_a_batch_line_leaves_the_proved_candidates_out_of_its_prompt(tmp_path):
    """A batch file's answer cannot be asked again, so its line never names the proved
    candidates on the shared prefix: they are left out, whatever the prefix's length."""
    fillers = [fact(f"p{k}", "invoice_total", total="936.32 EUR", vendor=f"Vendor {k} Trading Company Limited, "
                    f"Industrial Estate {k}, Northern Business District") for k in range(3, 43)]
    doc = {"doc_id": "d", "gold_facts": [fact("g1", "invoice_total", total="936.32 EUR", vendor="Acme")],
           "predicted_facts": [fact("p1", "invoice_total", total="936.33 EUR", vendor="Acme"), *fillers]}
    data = write_jsonl(tmp_path / "data.jsonl", [doc])
    proc = run_cli("eval", data, "--judge", "hybrid", "--model", "gpt-4o-mini", "-o", tmp_path / "out",
                   "--batch-export", tmp_path / "b.jsonl", cache_dir=tmp_path / "cache")
    assert proc.returncode == 0, proc.stderr
    bodies = [json.loads(line)["body"] for line in (tmp_path / "b.jsonl").read_text(encoding="utf-8").splitlines()]
    g1 = next(b for b in bodies if prompt_facts(b)[0] == "gold")
    assert len(prompt_facts(g1)[2]) == 40 and "p1" not in {c["id"] for c in prompt_facts(g1)[2]}
    assert proved_ids(g1) == []


def test_the_guard_is_switchable(tmp_path):
    proc, summary, results, asked = run(tmp_path, "hybrid", {"proof_guard": False})
    assert proc.returncode == 0, proc.stderr
    assert set(statuses(results).values()) == {"TP"}  # the yes-man decides, as before the guard
    assert "proved_different" not in summary["usage"]
    # the links against proof are shown even so
    assert any(a["kind"] == "linked_against_proof" for a in summary["alerts"])


def test_llm_links_against_proof_are_counted_warned_and_shown_as_a_banner(tmp_path):
    proc, summary, results, asked = run(tmp_path, "llm")
    assert proc.returncode == 0, proc.stderr
    assert set(statuses(results).values()) == {"TP"}  # the judge's verdicts are its own
    alert = next(a for a in summary["alerts"] if a["kind"] == "linked_against_proof")
    assert alert["message"].startswith("the LLM linked 2 pairs whose numbers and identifiers differ: "
                                       "total 936.32 EUR vs 936.33 EUR, invoice_number INV-0077 vs 2024-INV-0077")
    assert "warning: the LLM linked 2 pairs" in proc.stderr
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "the LLM linked 2 pairs whose numbers and identifiers differ" in html
    assert "936.32 EUR vs 936.33 EUR" in (tmp_path / "out" / "report.md").read_text(encoding="utf-8")


def test_rules_alone_raise_no_alert_about_their_own_links(tmp_path):
    proc, summary, _, _ = run(tmp_path, "rules")
    assert proc.returncode == 0, proc.stderr
    assert not any(a["kind"] == "linked_against_proof" for a in summary["alerts"])


def test_what_a_proof_is():
    from factjudge.judges.rules.proof import IDENTIFIER_NAME, pair_proof

    cfg = JudgeConfig()
    g = fact("g", "t", total="$1,200.00", when="2024-03-01", sku="AB-12 c", name="Acme")
    assert pair_proof(g, fact("p", "t", total="1.2k USD", when="2024-03-01", sku="ab12C", name="ACME Inc"),
                      ["total", "when", "sku", "name"], cfg) is None  # scale, currency, case, punctuation
    assert pair_proof(g, fact("p", "t", total="1201 USD"), ["total"], cfg).kind == "number"
    assert pair_proof(g, fact("p", "t", when="2024-03-02"), ["when"], cfg).kind == "date"
    at = fact("g", "t", when="2024-03-01T10:00:00Z")
    assert pair_proof(at, fact("p", "t", when="2024-03-01T10:30Z"), ["when"], cfg).kind == "date"
    assert pair_proof(at, fact("p", "t", when="2024-03-01T11:00+01:00"), ["when"], cfg) is None  # one instant
    assert pair_proof(at, fact("p", "t", when="2024-03-01T11:00"), ["when"], cfg) is None  # its offset unknown
    assert pair_proof(at, fact("p", "t", when="2024-03-01"), ["when"], cfg) is None  # no time: its day
    assert pair_proof(g, fact("p", "t", sku="AB-13c"), ["sku"], cfg).kind == "identifier"
    assert pair_proof(g, fact("p", "t", name="Zenith"), ["name"], cfg) is None  # text: the model's to judge
    assert pair_proof(g, fact("p", "t"), ["total"], cfg) is None  # missing proves nothing
    tol = JudgeConfig(tolerances={"total": {"absolute": 1}})
    assert pair_proof(g, fact("p", "t", total="1201 USD"), ["total"], tol) is None
    named = JudgeConfig(identifier_fields=["po"])
    assert pair_proof(fact("g", "t", po="A1"), fact("p", "t", po="A2"), ["po"], named).kind == "identifier"
    assert pair_proof(fact("g", "t", po="A1"), fact("p", "t", po="A2"), ["po"], cfg) is None
    assert all(IDENTIFIER_NAME.search(n) for n in ("invoice_number", "customer_id", "sku", "ticker", "iban",
                                                    "product_code", "po_no"))
    assert not any(IDENTIFIER_NAME.search(n) for n in ("name", "total", "identity", "number_of_items"))


IDENTIFIER_PAIRS = [  # (field, gold, predicted, config's identifier_fields, the same identifier)
    ("invoice_number", "ABCDEFGHIJKLMNOPQ", "ABCDEFGHIJKLMNOPX", [], False),  # similarity 94 linked them
    ("invoice_number", "INV-0077", "2024-INV-0077", [], False),
    ("customer_id", "00123", "123", [], False),  # leading zeros are part of a code
    ("swift_code", "DEUTDEFF", "DEUTDEFX", [], False),
    ("po", "ACMEORDERALPHA", "ACMEORDERALPHB", ["po"], False),  # named by the config
    ("invoice_number", "INV-0077", "inv 0077", [], True),  # case, spaces and punctuation left out
    ("customer_id", 123, "123", [], True),
    ("ticker", "brk.b", "BRK B", [], True),
]


@pytest.mark.parametrize(("name", "gold", "pred", "named", "same"), IDENTIFIER_PAIRS)
def test_the_rules_judge_links_no_pair_its_proof_calls_different(name, gold, pred, named, same):
    from factjudge import run_judge
    from factjudge.judges.rules.proof import pair_proof

    cfg = JudgeConfig(identifier_fields=named)
    g, p = fact("g", "t", amount="10", **{name: gold}), fact("p", "t", amount="10", **{name: pred})
    result = run_judge([g], [p], cfg)
    assert verdict_of(result.gold_facts[0])["status"] == ("TP" if same else "FN")
    assert (pair_proof(g, p, ["amount", name], cfg) is None) is same  # the judges agree on what is proved
    if not same:
        assert "different identifiers" in verdict_of(result.gold_facts[0])["reasoning"]


def test_a_field_not_named_as_an_identifier_is_still_compared_as_text():
    from factjudge import run_judge

    g, p = fact("g", "t", model="ABCDEFGHIJKLMNOPQ"), fact("p", "t", model="ABCDEFGHIJKLMNOPX")
    assert verdict_of(run_judge([g], [p], JudgeConfig()).gold_facts[0])["status"] == "TP"  # similar names
    named = JudgeConfig(identifier_fields=["model"])
    assert verdict_of(run_judge([g], [p], named).gold_facts[0])["status"] == "FN"


def test_the_judge_command_warns_of_llm_links_against_proof(tmp_path):
    gold = tmp_path / "gold.json"
    pred = tmp_path / "pred.json"
    gold.write_text(json.dumps(INVOICE["gold_facts"]), encoding="utf-8")
    pred.write_text(json.dumps(INVOICE["predicted_facts"]), encoding="utf-8")
    with ScriptedServer(responder=yes_man) as server:
        proc = run_cli("judge", gold, pred, "--judge", "llm", "--model", "m", "--base-url", server.base_url)
    assert proc.returncode == 0, proc.stderr
    assert "warning: the LLM linked 2 pairs whose numbers and identifiers differ" in proc.stderr
    assert any("the LLM linked 2 pairs" in w for w in json.loads(proc.stdout)["warnings"])
