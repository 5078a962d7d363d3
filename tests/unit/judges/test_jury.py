"""The jury: every question to every juror (scripted servers with their own truth tables, the rules
judge, the same model asked K times), a strict majority decides, ties and failures as documented."""
import asyncio
import json
import os

import evalkit
import pytest
from scripted_server import Reply, ScriptedServer, answer, describe

from factjudge import LLMJudge, RulesJudge, run_judge
from factjudge.errors import InputError, JudgeSetupError
from factjudge.judges import JudgeBase, JudgePass, JuryJudge
from factjudge.judges.base import negative_status
from factjudge.judges.jury import default_labels, split_model_spec
from factjudge.judges.llm import RetryPolicy, Transport
from factjudge.judges.llm.batch_lines import batch_llm
from factjudge.models import CallUsage, JudgeConfig, Verdict

G = [{"id": "g1", "fact_type": "revenue", "value": 12}, {"id": "g2", "fact_type": "revenue", "value": 20},
     {"id": "g3", "fact_type": "ceo", "name": "Ann"}]
P = [{"id": "p1", "fact_type": "revenue", "value": 12}, {"id": "p2", "fact_type": "revenue", "value": 20},
     {"id": "p3", "fact_type": "ceo", "name": "Ann"}]


def truth(gold, predicted):
    return {**{("gold", k): v for k, v in gold.items()}, **{("predicted", k): v for k, v in predicted.items()}}


# three jurors, three truth tables:
#   g1: a p1, b p1, c p1 -> TP p1 (unanimous)     p1: a g1, b g1, c g1 -> TP g1 (unanimous)
#   g2: a p2, b FN, c p1 -> no majority: FN       p2: a g2, b FP, c FP -> FP (2 of 3)
#   g3: a p3, b p3, c FN -> TP p3 (2 of 3)        p3: a g3, b g3, c FP -> TP g3 (2 of 3)
TRUTH_A = truth({"g1": "p1", "g2": "p2", "g3": "p3"}, {"p1": "g1", "p2": "g2", "p3": "g3"})
TRUTH_B = truth({"g1": "p1", "g3": "p3"}, {"p1": "g1", "p3": "g3"})
TRUTH_C = truth({"g1": "p1", "g2": "p1"}, {"p1": "g1"})


@pytest.fixture
def servers():
    with ScriptedServer(TRUTH_A) as a, ScriptedServer(TRUTH_B) as b, ScriptedServer(TRUTH_C) as c:
        yield a, b, c


def llm(name, server, warmup=True):
    return LLMJudge(name, base_url=server.base_url, retry=RetryPolicy(backoff=0.01),
                    transport=Transport(warmup=warmup))


def facts(result):
    return {f["id"]: f for f in result.gold_facts + result.predicted_facts}


def task(direction="gold", subject=None):
    subject = subject or (G[0] if direction == "gold" else P[0])
    candidates = P if direction == "gold" else G
    return JudgePass(direction, candidates, JudgeConfig()).task(subject)


class Fixed(JudgeBase):
    """A juror with a fixed answer per subject id (None: the negative status); counts calls in
    flight in ``tracker`` to check the pool."""

    def __init__(self, name, answers=None, tracker=None, delay=0.0, model=None):
        self.name, self.answers, self.tracker, self.delay = name, answers or {}, tracker, delay
        self.model, self.closed, self.warmup = model, False, False

    def identity(self):
        return {"name": self.name, **({"model": self.model} if self.model else {})}

    async def judge(self, task):
        if self.tracker is not None:
            self.tracker["now"] += 1
            self.tracker["peak"] = max(self.tracker["peak"], self.tracker["now"])
            self.tracker["calls"] += 1
        await asyncio.sleep(self.delay)
        if self.tracker is not None:
            self.tracker["now"] -= 1
        matched = self.answers.get(task.subject_id)
        if matched == "ERROR":
            return Verdict(fact_id=task.subject_id, status="ERROR", note=f"{self.name} broke",
                           usage=CallUsage(llm_calls=1))
        return Verdict(fact_id=task.subject_id, status="TP" if matched else negative_status(task.direction),
                       matched_id=matched, reasoning=f"{self.name} says so", usage=CallUsage(llm_calls=1))

    async def aclose(self):
        self.closed = True


# --------------------------------------------------------------------------- through servers


def test_majority_ties_votes_agreement_and_per_juror_usage(servers):
    a, b, c = servers
    jury = JuryJudge([llm("a", a), llm("b", b), llm("c", c)])
    result = run_judge(G, P, {}, jury)
    f = facts(result)
    assert [(i, f[i]["factjudge"]["status"], f[i]["factjudge"]["matched_ids"]) for i in f] == [
        ("g1", "TP", ["p1"]), ("g2", "FN", []), ("g3", "TP", ["p3"]),
        ("p1", "TP", ["g1"]), ("p2", "FP", []), ("p3", "TP", ["g3"])]
    assert f["g1"]["factjudge"]["votes"] == {"a": "TP:p1", "b": "TP:p1", "c": "TP:p1"}
    assert f["g2"]["factjudge"]["votes"] == {"a": "TP:p2", "b": "FN", "c": "TP:p1"}
    assert f["p2"]["factjudge"]["votes"] == {"a": "TP:g2", "b": "FP", "c": "FP"}
    assert f["g2"]["factjudge"]["description"] == \
        "jury: no strict majority of 3 (a: TP:p2, b: FN, c: TP:p1): FN by default"
    assert f["g3"]["factjudge"]["description"] == "jury: 2 of 3 voted TP:p3 (dissent c: FN)"
    assert f["g1"]["factjudge"]["description"] == ""
    assert f["g1"]["factjudge"]["reasoning"] == "[a: TP:p1] scripted | [b: TP:p1] scripted | [c: TP:p1] scripted"
    # unanimous: g1 and p1 of 6 questions
    assert result.metrics.jury_agreement == pytest.approx(2 / 6)
    # every question to every juror, once
    for server in servers:
        assert sorted(server.subjects()) == ["g1", "g2", "g3", "p1", "p2", "p3"]
    u = result.usage
    assert u.llm_calls == 18 and set(u.jurors) == {"a", "b", "c"}
    assert all(j.llm_calls == 6 for j in u.jurors.values())
    assert u.prompt_tokens == sum(j.prompt_tokens for j in u.jurors.values()) > 0
    out = json.loads(result.to_json())
    assert out["metrics"]["jury_agreement"] == pytest.approx(1 / 3)
    assert out["usage"]["jurors"]["b"]["llm_calls"] == 6


def test_a_tie_of_two_is_the_negative_verdict_with_a_note(servers):
    a, b, _ = servers
    result = run_judge(G, P, {}, JuryJudge([llm("a", a), llm("b", b)]))
    f = facts(result)
    assert f["g2"]["factjudge"]["status"] == "FN" and f["p2"]["factjudge"]["status"] == "FP"
    assert f["g2"]["factjudge"]["votes"] == {"a": "TP:p2", "b": "FN"}
    assert f["p2"]["factjudge"]["description"] == "jury: no strict majority of 2 (a: TP:g2, b: FP): FP by default"
    assert f["g1"]["factjudge"]["status"] == "TP" and result.metrics.jury_agreement == pytest.approx(4 / 6)


def test_a_failed_juror_is_a_vote_for_nothing(servers):
    a, b, c = servers
    b.faults[("gold", "g1")] = [Reply(content="nonsense")] * 3     # b cannot answer g1
    b.faults[("gold", "g3")] = [Reply(content="nonsense")] * 3     # nor g3: a p3 vs c FN
    result = run_judge(G, P, {}, JuryJudge([llm("a", a, warmup=False), llm("b", b, warmup=False),
                                            llm("c", c, warmup=False)]))
    f = facts(result)
    # a and c agree: 2 of 3 decide whatever b would have said
    assert f["g1"]["factjudge"]["status"] == "TP"
    assert f["g1"]["factjudge"]["votes"] == {"a": "TP:p1", "b": "ERROR", "c": "TP:p1"}
    assert f["g1"]["factjudge"]["description"].startswith("jury: 2 of 3 voted TP:p1 (dissent b: ERROR); b failed: "
                                             "no valid answer after 3 tries")
    # a and c disagree: b's answer would have decided, so nothing is guessed
    assert f["g3"]["factjudge"]["status"] == "ERROR"
    assert "jury undecided: 1 of 3 juror(s) failed" in f["g3"]["factjudge"]["description"]
    assert result.metrics.errors == 1
    assert result.usage.jurors["b"].retries == 4 and result.metrics.jury_agreement == pytest.approx(1 / 6)


def test_a_jury_question_asks_each_juror_in_turn_within_one_slot_of_the_pool():
    tracker = {"now": 0, "peak": 0, "calls": 0}
    gold = [{"id": f"g{i}", "fact_type": "t", "v": i} for i in range(10)]
    pred = [{"id": f"p{i}", "fact_type": "t", "v": i} for i in range(10)]
    jurors = [Fixed(n, tracker=tracker, delay=0.005) for n in ("x", "y", "z")]
    run_judge(gold, pred, {}, JuryJudge(jurors), concurrency=2)
    assert tracker["calls"] == 3 * 20 and tracker["peak"] == 2  # calls in flight <= --concurrency
    tracker.update(peak=0, calls=0)
    run_judge(gold, pred, {}, JuryJudge(jurors), concurrency=5)
    assert tracker["calls"] == 60 and tracker["peak"] == 5


def test_the_rules_judge_can_sit_on_the_jury(servers):
    a, b, _ = servers   # a and b disagree on g2 and p2; the rules judge sees exact matches
    result = run_judge(G, P, {}, JuryJudge([llm("a", a), llm("b", b), RulesJudge()]))
    f = facts(result)
    assert f["g2"]["factjudge"]["status"] == "TP" and f["g2"]["factjudge"]["matched_ids"] == ["p2"]
    assert f["g2"]["factjudge"]["votes"] == {"a": "TP:p2", "b": "FN", "rules": "TP:p2"}
    assert set(result.usage.jurors) == {"a", "b", "rules"} and result.usage.jurors["rules"].llm_calls == 0


def test_decisions_by_hand():
    jury = JuryJudge([Fixed(n) for n in "abcde"])
    t = task()

    def v(status, matched=None):
        return Verdict(fact_id="g1", status=status, matched_id=matched, note="down" if status == "ERROR" else "")

    two_two_err = jury.decide(t, [v("TP", "p1"), v("TP", "p1"), v("FN"), v("FN"), v("ERROR")])
    assert two_two_err.status == "ERROR"  # the failed juror could have made 3 of 5
    split = jury.decide(t, [v("TP", "p1"), v("TP", "p2"), v("FN"), v("ERROR"), v("TP", "p3")])
    assert split.status == "FN" and split.matched_id is None and "d failed: down" in split.note
    three = jury.decide(t, [v("TP", "p1"), v("TP", "p1"), v("FN"), v("ERROR"), v("TP", "p1")])
    assert (three.status, three.matched_id) == ("TP", "p1")
    assert three.note == "jury: 3 of 5 voted TP:p1 (dissent c: FN, d: ERROR); d failed: down"
    negatives = jury.decide(t, [v("FN")] * 3 + [v("TP", "p1")] * 2)
    assert negatives.status == "FN" and negatives.matched_id is None
    pred = JuryJudge([Fixed("a"), Fixed("b")]).decide(task("predicted"), [
        Verdict(fact_id="p1", status="TP", matched_id="g1"), Verdict(fact_id="p1", status="FP")])
    assert pred.status == "FP" and pred.votes == {"a": "TP:g1", "b": "FP"}


def test_a_juror_that_breaks_the_contract_votes_error():
    jury = JuryJudge([Fixed("a", {"g1": "p1"}), Fixed("b", {"g1": "nope"}), Fixed("c", {"g1": "p1"})])
    verdict = asyncio.run(jury.judge(task()))
    assert verdict.status == "TP" and verdict.votes["b"] == "ERROR"
    assert "juror 'b' answered wrongly: TP names 'nope'" in verdict.note


def test_identity_warmup_labels_and_aclose():
    jurors = [Fixed("x", model="m"), Fixed("x", model="m"), Fixed("rules")]
    jury = JuryJudge(jurors)
    assert jury.names == ["m#1", "m#2", "rules"]
    ident = jury.identity()
    assert ident["name"] == "jury" and [j["juror"] for j in ident["jurors"]] == ["m#1", "m#2", "rules"]
    assert ident["jurors"][0] == {"juror": "m#1", "name": "x", "model": "m"}
    questions = JudgePass("gold", P, JudgeConfig())
    assert [s.warm for s in jury.open(questions).stages(G)] == [False]  # no juror warms up
    warm = JuryJudge([*jurors, LLMJudge("w", base_url="http://127.0.0.1:9/v1")])  # an LLM juror does
    assert [(s.warm, s.subjects) for s in warm.open(questions).stages(G)] == [(True, G)]
    asyncio.run(jury.aclose())
    assert all(j.closed for j in jurors)
    with pytest.raises(JudgeSetupError):
        JuryJudge([])
    with pytest.raises(JudgeSetupError):
        JuryJudge(jurors, names=["a", "a", "b"])


def test_default_labels_name_the_server_when_one_model_sits_on_several(servers):
    a, b, _ = servers
    labels = default_labels([llm("m", a), llm("m", b), llm("n", a)])
    assert labels == [f"m@127.0.0.1:{a.port}", f"m@127.0.0.1:{b.port}", "n"]


def test_identity_changes_with_the_jury_and_batch_export_is_refused(servers):
    a, b, _ = servers
    one, two = JuryJudge([llm("a", a), llm("b", b)]), JuryJudge([llm("a", a), llm("b", b), RulesJudge()])
    assert one.identity() != two.identity()
    assert one.identity()["jurors"][1] == {"juror": "b", **llm("b", b).identity()}
    with pytest.raises(InputError, match="needs an LLM judge"):  # a jury is no Batchable
        batch_llm(one)
    with pytest.raises(JudgeSetupError, match="a dry run previews one judge, not a jury"):
        one.open(JudgePass("gold", P, JudgeConfig())).estimate(G[0])


def test_an_input_field_named_votes_is_the_facts_own(servers):  # the jury's votes are in the verdict
    a, b, _ = servers
    result = run_judge([{**G[0], "votes": 3}], P, {}, JuryJudge([llm("a", a), llm("b", b)]))
    g1 = result.gold_facts[0]
    assert g1["votes"] == 3 and g1["factjudge"]["votes"] == {"a": "TP:p1", "b": "TP:p1"}
    with pytest.raises(InputError, match="field 'factjudge' is reserved"):
        run_judge([{**G[0], "factjudge": 3}], P, {}, JuryJudge([llm("a", a), llm("b", b)]))


@pytest.mark.parametrize("spec, parsed", [
    ("gpt-4o-mini", ("gpt-4o-mini", None)),
    ("qwen@http://localhost:8000/v1", ("qwen", "http://localhost:8000/v1")),
    ("m@HTTPS://h/v1", ("m", "HTTPS://h/v1")),
    ("claude@2024", ("claude@2024", None)),                       # an @ of the model's own
    ("x@http://user:pw@host/v1", ("x", "http://user:pw@host/v1")),
])
def test_model_specs(spec, parsed):
    assert split_model_spec(spec) == parsed


def test_a_model_spec_without_a_name_is_refused():
    with pytest.raises(InputError, match="give the model name before the @"):
        split_model_spec("@http://localhost:1/v1")


def test_a_model_spec_without_a_name_is_refused_without_repeating_the_urls_password():
    with pytest.raises(InputError) as exc:
        split_model_spec("@http://alice:pa55SECRET@localhost:1/v1")
    assert "give the model name before the @" in str(exc.value)
    assert "pa55SECRET" not in str(exc.value) and "alice" not in str(exc.value)


def test_a_url_given_as_the_model_is_refused_without_repeating_it(files, tmp_path):
    """--model 'http://alice:pw@host/v1' (NAME@ forgotten) was the model's name: sent to the
    server and written in run.json, summary.json and the reports, password and all (a review)."""
    with pytest.raises(InputError, match=r"give the model name before the URL \(NAME@URL\)"):
        split_model_spec("https://alice:pa55SECRET@localhost:1/v1")
    gold, pred = files
    proc = run_cli("judge", gold, pred, "--model", "http://alice:pa55SECRET@127.0.0.1:9/v1", "-o", tmp_path / "r.json")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "pa55SECRET" not in proc.stderr + proc.stdout and not (tmp_path / "r.json").exists()
    assert split_model_spec("ft:gpt-4o:org@x") == ("ft:gpt-4o:org@x", None)  # a name with an @ is a name


# --------------------------------------------------------------------------- the command line


def run_cli(*args):  # in this process; one response cache per test
    return evalkit.run_cli(*args, cache_dir=os.environ["FACTJUDGE_CACHE_DIR"], env={"OPENAI_BASE_URL": None})


@pytest.fixture
def files(write_json):
    return write_json("gold.json", G), write_json("pred.jsonl", P)


def test_cli_jury_of_three_servers(servers, files):
    a, b, c = servers
    proc = run_cli("judge", *files, "--model", f"a@{a.base_url}", "--model", f"b@{b.base_url}",
                   "--model", "c", "--base-url", c.base_url)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    f = {x["id"]: x for x in out["gold_facts"] + out["predicted_facts"]}
    assert f["g2"]["factjudge"]["status"] == "FN"
    assert f["g2"]["factjudge"]["votes"] == {"a": "TP:p2", "b": "FN", "c": "TP:p1"}
    assert f["g3"]["factjudge"]["status"] == "TP" and f["g3"]["factjudge"]["votes"]["c"] == "FN"
    assert out["metrics"]["jury_agreement"] == pytest.approx(1 / 3)
    assert {k: v["llm_calls"] for k, v in out["usage"]["jurors"].items()} == {"a": 6, "b": 6, "c": 6}
    assert out["usage"]["llm_calls"] == 18 and "18 calls" in proc.stderr
    assert [len(s.requests) for s in servers] == [6, 6, 6]


def test_cli_jury_rules(servers, files):
    a, b, _ = servers
    proc = run_cli("judge", *files, "--model", f"a@{a.base_url}", "--model", f"b@{b.base_url}",
                   "--jury-rules")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    g2 = out["gold_facts"][1]
    assert g2["factjudge"]["status"] == "TP" and g2["factjudge"]["votes"] == {"a": "TP:p2", "b": "FN", "rules": "TP:p2"}
    assert out["usage"]["jurors"]["rules"]["llm_calls"] == 0


def test_cli_repeats_asks_each_repeat_and_caches_each_apart(files):
    asked = {}

    def sampling(body):  # a model at temperature > 0: the 2nd sample of each question differs
        direction, subject, _ = describe(body)
        n = asked[(direction, subject)] = asked.get((direction, subject), 0) + 1
        right = {"g1": "p1", "g2": "p2", "g3": "p3", "p1": "g1", "p2": "g2", "p3": "g3"}[subject]
        wrong = n == 2 and subject in ("g2", "p2")
        return answer(direction, subject, None if wrong else right, reasoning=f"sample {n}")

    with ScriptedServer(responder=sampling) as server:
        args = ("judge", *files, "--model", "m", "--base-url", server.base_url, "--repeats", "3",
                "--temperature", "0.7")
        proc = run_cli(*args)
        assert proc.returncode == 0, proc.stderr
        out = json.loads(proc.stdout)
        assert len(server.requests) == 18 and set(asked.values()) == {3}  # no repeat from the cache
        assert {r["temperature"] for r in server.requests} == {0.7}
        g2 = out["gold_facts"][1]
        assert g2["factjudge"]["votes"] == {"m#1": "TP:p2", "m#2": "FN", "m#3": "TP:p2"}
        assert g2["factjudge"]["status"] == "TP"
        assert g2["factjudge"]["description"] == "jury: 2 of 3 voted TP:p2 (dissent m#2: FN)"
        assert out["metrics"]["jury_agreement"] == pytest.approx(4 / 6)
        assert set(out["usage"]["jurors"]) == {"m#1", "m#2", "m#3"}
        # the same command again: every repeat's answer comes from its own cache entry
        again = run_cli(*args)
        assert again.returncode == 0 and len(server.requests) == 18
        out2 = json.loads(again.stdout)
        assert out2["usage"]["cache_hits"] == 18 and out2["usage"]["llm_calls"] == 0
        assert [x["factjudge"]["votes"] for x in out2["gold_facts"]] == \
            [x["factjudge"]["votes"] for x in out["gold_facts"]]


def test_cli_eval_with_a_jury_writes_votes_per_document(servers, write_json, tmp_path):
    a, b, c = servers
    data = write_json("data.jsonl", [{"doc_id": "d1", "gold_facts": G, "predicted_facts": P}])
    out = tmp_path / "out"
    proc = run_cli("eval", data, "-o", out, "--model", f"a@{a.base_url}", "--model", f"b@{b.base_url}",
                   "--model", f"c@{c.base_url}", "-q")
    assert proc.returncode == 0, proc.stderr
    line = json.loads((out / "results.jsonl").read_text().splitlines()[0])
    assert line["gold_facts"][1]["factjudge"]["votes"] == {"a": "TP:p2", "b": "FN", "c": "TP:p1"}
    assert line["metrics"]["jury_agreement"] == pytest.approx(1 / 3)
    assert line["usage"]["jurors"]["c"]["llm_calls"] == 6
    summary = json.loads((out / "summary.json").read_text())
    assert [j["juror"] for j in summary["judge"]["jurors"]] == ["a", "b", "c"]
    assert summary["micro"]["fn"] == 1 and summary["usage"]["llm_calls"] == 18
    # the dataset's figures: agreement over every document's questions, usage per juror summed
    assert summary["jury_agreement"] == pytest.approx(1 / 3)
    assert summary["usage"]["jurors"]["c"]["llm_calls"] == 6


@pytest.mark.parametrize("extra, message", [
    (("--model", "m", "--model", "n", "--dry-run"), "a dry run previews one judge, not a jury"),
    (("--model", "m", "--model", "m"), "--model m is given twice for the same server"),
    (("--model", "m", "--repeats", "3"), "give --temperature above 0"),
    (("--jury-rules",), "--repeats and --jury-rules make a jury of LLM judges: add --model"),
    (("--model", "@http://127.0.0.1:9/v1", "--model", "n"), "give the model name before the @"),
])
def test_cli_jury_usage_errors(files, extra, message):
    proc = run_cli("judge", *files, "--base-url", "http://127.0.0.1:9/v1", *extra) if "--jury-rules" not in extra \
        else run_cli("judge", *files, *extra)
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], proc.stderr


def test_cli_factjudge_field_in_the_input_is_one_line(servers, write_json):
    a, b, _ = servers
    gold = write_json("gold.json", [{**G[0], "factjudge": 12}])
    pred = write_json("pred.jsonl", P)
    proc = run_cli("judge", gold, pred, "--model", f"a@{a.base_url}", "--model", f"b@{b.base_url}")
    assert proc.returncode == 2 and "field 'factjudge' is reserved for factjudge's verdict" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
