"""factjudge.evaluation.calibrate: labels file loading, scoring (property-tested), judging, the bundled set."""
import asyncio
import json

import pytest
from hypo import examples
from hypothesis import given, settings
from hypothesis import strategies as st

import factjudge.evaluation.runner as runner
from factjudge import InputError, JudgeBase, RulesJudge, Verdict
from factjudge.evaluation.calibrate import (
    CalibrationReport,
    Decision,
    builtin_labels_path,
    calibrate,
    calibrate_async,
    confusion,
    format_report,
    load_labels,
    score,
)
from factjudge.io.config import parse_config

C = "Contoso Robotics Inc."


def line(i, gold, pred, match, category=None):
    rec = {"id": f"t{i}", "gold_fact": {"id": "g", **gold}, "predicted_fact": {"id": "p", **pred},
           "match": match}
    if category:
        rec["category"] = category
    return rec


# Eight hand-made labels and what the rules judge does with them:
#   t1 $12.5m = 12,500,000 USD            label match    judge links      -> tp
#   t2 12.5m vs 12.6m (no tolerance)       label no       judge no link    -> tn
#   t3 Jensen vs Jen-Hsun Huang            label match    judge no link    -> fn (different given names)
#   t4 author vs penned                    label match    judge no link    -> fn
#   t5 daniel vs daniela okafor            label no       judge links      -> fp (similarity >= 90; not
#                                                                               written as a name)
#   t6 FY23 = fiscal year 2023             label match    judge links      -> tp
#   t7 EUR vs USD                          label no       judge no link    -> tn
#   t8 Apple Inc. = apple                  label match    judge links      -> tp
# tp=3 fp=1 fn=2 tn=2, n=8
# accuracy  = (3+2)/8 = 0.625
# precision = 3/(3+1) = 0.75
# recall    = 3/(3+2) = 0.6
# kappa: p_o = 5/8; judge links 4/8, labels match 5/8;
#        p_e = (4*5 + 4*3)/64 = 0.5; kappa = (0.625-0.5)/(1-0.5) = 0.25
# name_variants (t3 fn, t5 fp): accuracy 0, precision 0, recall 0,
#        p_o = 0, p_e = (1*1 + 1*1)/4 = 0.5, kappa = -1
# fact_type revenue (t1 tp, t2 tn, t6 tp, t7 tn): accuracy 1, kappa = (1-0.5)/(1-0.5) = 1
SMALL = [
    line(1, {"fact_type": "revenue", "value": "$12.5m"},
         {"fact_type": "revenue", "value": "12,500,000 USD"}, True, "numbers_and_scales"),
    line(2, {"fact_type": "revenue", "value": "12.5m"},
         {"fact_type": "revenue", "value": "12.6m"}, False, "near_misses"),
    line(3, {"fact_type": "ceo", "entity": "NVIDIA", "name": "Jensen Huang"},
         {"fact_type": "ceo", "entity": "NVIDIA", "name": "Jen-Hsun Huang"}, True, "name_variants"),
    line(4, {"fact_type": "triple", "subject": "A_Severed_Wasp", "property": "author",
             "object": "Madeleine_L'Engle"},
         # a synonym no list holds (writer = author is read since issue #37's relations family)
         {"fact_type": "triple", "subject": "A_Severed_Wasp", "property": "penned",
          "object": "Madeleine_L'Engle"}, True, "synonymous_relations"),
    line(5, {"fact_type": "cfo", "entity": C, "name": "daniel okafor"},
         {"fact_type": "cfo", "entity": C, "name": "daniela okafor"}, False, "name_variants"),
    line(6, {"fact_type": "revenue", "period": "FY23", "value": "1.2"},
         {"fact_type": "revenue", "period": "fiscal year 2023", "value": "1.20"}, True,
         "dates_and_fiscal_periods"),
    line(7, {"fact_type": "revenue", "value": "€12.5m"},
         {"fact_type": "revenue", "value": "$12.5m"}, False, "currencies"),
    line(8, {"fact_type": "headquarters", "entity": "Apple Inc.", "location": "Cupertino"},
         {"fact_type": "headquarters", "entity": "apple", "location": "Cupertino"}, True,
         "company_names"),
]


@pytest.fixture
def small_labels(write_json):
    return write_json("labels.jsonl", SMALL)


def test_calibrate_small_file_with_rules_judge(small_labels):
    labels = load_labels(small_labels)
    report = calibrate(labels, None, RulesJudge(), concurrency=2)
    o = report.overall
    assert (o.n, o.tp, o.fp, o.fn, o.tn) == (8, 3, 1, 2, 2)
    assert o.accuracy == pytest.approx(0.625)
    assert o.precision == pytest.approx(0.75)
    assert o.recall == pytest.approx(0.6)
    assert o.f1 == pytest.approx(2 * 0.75 * 0.6 / 1.35)
    assert o.kappa == pytest.approx(0.25)
    assert report.labels == 8 and report.errors == 0 and report.judge == "rules"
    assert report.usage is None  # no LLM asked

    nv = report.by_category["name_variants"]
    assert (nv.n, nv.tp, nv.fp, nv.fn, nv.tn) == (2, 0, 1, 1, 0)
    assert (nv.accuracy, nv.precision, nv.recall) == (0, 0, 0)
    assert nv.kappa == pytest.approx(-1)
    near = report.by_category["near_misses"]  # one true negative: P, R, kappa undefined
    assert (near.accuracy, near.precision, near.recall, near.kappa) == (1, None, None, None)
    rev = report.by_fact_type["revenue"]
    assert (rev.n, rev.tp, rev.tn, rev.accuracy, rev.kappa) == (4, 2, 2, 1, pytest.approx(1))
    assert set(report.by_fact_type) == {"revenue", "ceo", "triple", "cfo", "headquarters"}

    assert [d.id for d in report.disagreements] == ["t3", "t4", "t5"]
    t3 = report.disagreements[0]
    assert (t3.label, t3.predicted, t3.category, t3.fact_type) == (True, False, "name_variants", "ceo")
    assert "different given names" in t3.gold_reasoning and "different given names" in t3.predicted_reasoning
    assert t3.gold_fact["name"] == "Jensen Huang" and t3.predicted_fact["name"] == "Jen-Hsun Huang"

    text = format_report(report)
    head = text.splitlines()[0]
    assert "8 labels" in head and "accuracy 0.625" in head and "precision 0.750" in head
    assert "recall 0.600" in head and "kappa 0.250" in head
    for needle in ("by category", "by fact_type", "name_variants", "disagreements (3)",
                   "- t3 [name_variants, ceo]: label match, judge did not link",
                   "- t5 [name_variants, cfo]: label no match, judge linked", "gold pass:"):
        assert needle in text
    data = json.loads(report.to_json())
    assert data == report.to_dict()
    assert data["overall"]["kappa"] == pytest.approx(0.25)
    assert CalibrationReport.model_validate(data) == report


def test_async_twin_and_default_judge(small_labels):
    labels = load_labels(small_labels)
    report = asyncio.run(calibrate_async(labels, {}, concurrency=1))
    assert report.overall.kappa == pytest.approx(0.25) and report.judge == "rules"


def test_sync_wrapper_inside_a_running_loop(small_labels):
    labels = load_labels(small_labels)

    async def notebook_cell():
        return calibrate(labels)

    assert asyncio.run(notebook_cell()).overall.kappa == pytest.approx(0.25)


def test_the_gold_fields_decide_what_is_compared(write_json):
    # the compared fields follow the gold fact: an extra field on the prediction is metadata,
    # a gold field the prediction lacks is a difference (docs/reference/config.md: fields)
    gold = {"fact_type": "net_income", "value": "87.4"}
    labels = load_labels(write_json("l.jsonl", [
        line(1, gold, {**gold, "entity": C}, True),
        line(2, {**gold, "segment": "Services"}, gold, False),
    ]))
    report = calibrate(labels)
    assert (report.overall.tp, report.overall.tn, report.overall.fn, report.overall.fp) == (1, 1, 0, 0)
    # with fields given, every listed field is compared both ways: the reconciliation decides
    both = calibrate(labels, {"fields": ["value", "entity", "segment"]})
    assert (both.overall.fn, both.overall.fp) == (1, 0)
    assert "(none)" in report.by_category


class FailingJudge(JudgeBase):
    """The rules judge, but the question about one line's gold fact fails."""

    name = "failing"

    def __init__(self):
        self.rules = RulesJudge()

    async def judge(self, task):
        if task.direction == "gold" and task.subject.get("name") == "Timothy Cook":
            return Verdict(fact_id=task.subject_id, status="ERROR", note="server said no")
        return await self.rules.judge(task)


def test_error_lines_are_counted_and_listed(write_json):
    rows = [dict(r) for r in SMALL]
    rows[2] = line(3, {"fact_type": "ceo", "name": "Timothy Cook"},
                   {"fact_type": "ceo", "name": "Tim Cook"}, True, "name_variants")
    report = calibrate(load_labels(write_json("l.jsonl", rows)), None, FailingJudge())
    assert report.labels == 8 and report.errors == 1 and report.overall.n == 7
    assert [(e.id, e.category, e.fact_type) for e in report.error_lines] == [
        ("t3", "name_variants", "ceo")]
    assert "ERROR" in report.error_lines[0].error and "server said no" in report.error_lines[0].error
    assert "t3" not in {d.id for d in report.disagreements}
    assert "not scored (1)" in format_report(report)


def test_out_of_scope_lines_are_not_scored(small_labels):
    report = calibrate(load_labels(small_labels), {"entity_types": ["revenue"]})
    assert report.overall.n == 4 and report.errors == 4
    assert all("out of scope" in e.error for e in report.error_lines)


def test_lines_in_flight_are_bounded(monkeypatch, write_json):
    rows = [line(i, {"fact_type": "revenue", "value": str(i)},
                 {"fact_type": "revenue", "value": str(i)}, True) for i in range(60)]
    labels = load_labels(write_json("l.jsonl", rows))
    real = runner.judge_checked  # calibrate runs its lines through eval's document runner
    active = peak = 0
    limiters = set()

    async def counting(*args, **kwargs):
        nonlocal active, peak
        limiters.add(id(kwargs["limiter"]))
        active += 1
        peak = max(peak, active)
        try:
            await asyncio.sleep(0.001)
            return await real(*args, **kwargs)
        finally:
            active -= 1

    monkeypatch.setattr(runner, "judge_checked", counting)
    seen = []
    report = calibrate(labels, concurrency=3, progress=lambda done, total: seen.append((done, total)))
    assert report.overall.tp == 60
    assert 3 < peak <= 6  # concurrent, and at most 2 x concurrency lines in flight
    assert len(limiters) == 1  # one pool shared by all lines
    assert seen[-1] == (60, 60) and len(seen) == 60


# --------------------------------------------------------------------------- loading errors


G = {"id": "g", "fact_type": "x"}
P = {"id": "p", "fact_type": "x"}
OK = {"id": "a", "gold_fact": G, "predicted_fact": P, "match": True}


def jsonl(*records):
    return "".join(json.dumps(r) + "\n" for r in records)


def without(record, key):
    return {k: v for k, v in record.items() if k != key}


@pytest.mark.parametrize("text, message", [
    (jsonl(OK) + '{"id": "b", "gold_fact": \n', "line 2 column 26: invalid JSON"),
    (jsonl(without(OK, "match")), "line 1 (id 'a'): missing 'match' (true or false)"),
    (jsonl({**OK, "match": "yes"}),
     "line 1 (id 'a'): 'match' must be true or false, got string \"yes\""),
    (jsonl({**OK, "match": 1}), "'match' must be true or false, got number 1"),
    (jsonl({**OK, "match": None}), "'match' must be true or false, got null"),
    (jsonl({**OK, "gold_fact": {"id": "g"}}),
     "line 1: gold_fact (id 'g'): missing or empty 'fact_type'"),
    (jsonl({**OK, "predicted_fact": {"fact_type": "x"}}),
     "line 1: predicted_fact: missing or empty 'id'"),
    (jsonl({**OK, "gold_fact": {**G, "factjudge": "TP"}}),
     "line 1: gold_fact (id 'g'): field 'factjudge' is reserved"),
    (jsonl({**OK, "gold_fact": []}), "line 1: gold_fact: a fact must be a JSON object, got array"),
    (jsonl(without(OK, "gold_fact")), "line 1 (id 'a'): missing 'gold_fact'"),
    (jsonl(without(OK, "id")), "line 1: missing or empty 'id'"),
    (jsonl({**OK, "id": ["a"]}), "line 1: 'id' must be a string or an integer, got array"),
    (jsonl(OK) + "\n" + jsonl({**OK, "match": False}),
     "line 3 (id 'a'): duplicate id, first seen at line 1"),
    (jsonl({**OK, "label": True}), "line 1 (id 'a'): unknown key 'label'"),
    (jsonl({**OK, "category": 3}), "'category' must be a non-empty string or null, got number 3"),
    (jsonl({**OK, "category": " "}), "'category' must be a non-empty string or null"),
    ("[1, 2]\n", "line 1: a label must be a JSON object, got array"),
    (jsonl(OK, {"_header": {}}), "line 2: a '_header' record may only be the first line"),
    (jsonl({"_header": {}, "id": "a"}), "line 1: a header line holds only '_header'"),
    ("", "no labels"),
    ("\n  \n", "no labels"),
    (jsonl({"_header": {"description": "only a header"}}), "no labels"),
])
def test_bad_labels_file(tmp_path, text, message):
    path = tmp_path / "labels.jsonl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_labels(path)
    assert str(info.value).startswith(f"{path}: ")
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_raw_line_separators_inside_a_string_do_not_split_a_line(tmp_path):
    # U+2028, U+2029 and NEL are legal raw inside a JSON string: only \n ends a JSON line (as in
    # load_facts); str.splitlines() would cut this valid file in the middle of the note
    path = tmp_path / "labels.jsonl"
    note = "first\u2028second\x85third\u2029fourth"
    path.write_text(json.dumps({**OK, "note": note}, ensure_ascii=False) + "\n"
                    + json.dumps({**OK, "id": "b", "gold_fact": {**G, "v": "x\u2028y"}},
                                 ensure_ascii=False) + "\n", encoding="utf-8")
    first, second = load_labels(path)
    assert (first.note, first.line) == (note, 1)
    assert (second.id, second.gold_fact["v"], second.line) == ("b", "x\u2028y", 2)


HOSTILE_LABELS = [
    ('"gold_fact": {"id": "g", "fact_type": "x", "v": ' + "7" * 5000 + "}",
     "line 2: field 'gold_fact.v': integer with more than 4300 digits"),
    ('"note": ' + "[" * 100_000 + "1" + "]" * 100_000, "line 2 column "),
    ('"id": "b\\ud800"', "line 2: field 'id': lone surrogate \\ud800"),
]
HOSTILE_IDS = ["int5000", "depth100000", "surrogate-id"]


def hostile_labels_file(tmp_path, field):
    path = tmp_path / "labels.jsonl"
    rest = {k: v for k, v in {**OK, "id": "b"}.items() if f'"{k}"' not in field}
    body = json.dumps(rest)[:-1] + ", " + field + "}"
    path.write_text(jsonl(OK) + body + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("field, message", HOSTILE_LABELS, ids=HOSTILE_IDS)
def test_unprocessable_values_get_the_answers_of_load_facts(tmp_path, field, message):
    path = hostile_labels_file(tmp_path, field)
    with pytest.raises(InputError) as info:
        load_labels(path)
    text = str(info.value)
    assert text.startswith(f"{path}: {message}") and "\n" not in text
    text.encode("utf-8")  # printable: no lone surrogate in the message itself
    if "depth" in message or "column" in message:
        assert text.endswith("nested deeper than 100 levels")


@pytest.mark.parametrize("field, message", HOSTILE_LABELS, ids=HOSTILE_IDS)
def test_calibrate_command_exits_2_with_one_line_on_unprocessable_labels(tmp_path, field, message):
    import subprocess
    import sys
    path = hostile_labels_file(tmp_path, field)
    proc = subprocess.run([sys.executable, "-m", "factjudge", "calibrate", str(path)],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(f"factjudge: error: {path}: {message}")
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="cannot read file"):
        load_labels(tmp_path / "nope.jsonl")


def test_header_is_skipped_and_integer_ids(tmp_path):
    path = tmp_path / "labels.jsonl"
    path.write_text(json.dumps({"_header": {"description": "x"}}) + "\n" + json.dumps(
        {"id": 7, "gold_fact": {"id": 1, "fact_type": "x", "v": 1},
         "predicted_fact": {"id": 1, "fact_type": "x", "v": 1}, "match": True, "category": None,
         "note": "same"}) + "\n", encoding="utf-8")
    (label,) = load_labels(path)
    assert (label.id, label.gold_fact["id"], label.predicted_fact["id"]) == ("7", "1", "1")
    assert (label.line, label.category, label.note, label.match) == (2, None, "same", True)


# --------------------------------------------------------------------------- the bundled set

CATEGORIES = {"numbers_and_scales", "percentages", "currencies", "dates_and_fiscal_periods",
              "company_names", "near_misses", "synonymous_relations", "name_variants",
              "missing_qualifiers", "title_variants", "place_variants", "approximate_numbers",
              "qualifier_traps", "clinical_shorthand", "units_and_data_sizes", "durations_and_periods",
              "bound_notations", "abbreviations", "job_and_results_vocabulary", "product_names",
              "document_names"}


def test_builtin_set_loads():
    path = builtin_labels_path()
    assert path.is_file() and path.name == "calibration.jsonl"
    header = json.loads(path.read_text(encoding="utf-8").splitlines()[0])["_header"]
    assert {"description", "guideline", "sources", "licence"} <= set(header)
    assert "MIT" in header["licence"]
    labels = load_labels(path)
    assert len(labels) >= 150
    assert all(label.category for label in labels)
    assert {label.category for label in labels} == CATEGORIES
    assert all(not label.match for label in labels if label.category == "near_misses")
    for category in CATEGORIES - {"near_misses"}:  # every other category has both answers
        assert {label.match for label in labels if label.category == category} == {True, False}, \
            category
    assert all(label.id.startswith("cal-") for label in labels)


def test_builtin_set_scores_with_rules_judge():
    report = calibrate(load_labels(builtin_labels_path()))
    o = report.overall
    assert report.errors == 0 and o.n >= 150
    # the rules judge is cautious: it rarely links what should not be linked
    assert o.precision > 0.85 and o.recall < o.precision
    assert report.by_category["near_misses"].fp == 0


# --------------------------------------------------------------------------- the pure part

pairs = st.lists(st.tuples(st.booleans(), st.booleans()), max_size=60)


def decisions_of(pairs_, categories=("a", "b", None)):
    return [Decision(id=str(i), label=label, predicted=pred, category=categories[i % len(categories)],
                     fact_type=f"t{i % 2}") for i, (label, pred) in enumerate(pairs_)]


@settings(max_examples=examples(300), deadline=None)
@given(pairs)
def test_score_properties(pairs_):
    report = score(decisions_of(pairs_))
    o = report.overall
    n = len(pairs_)
    assert o.n == n == o.tp + o.fp + o.fn + o.tn == report.labels
    assert o.tp == sum(1 for label, pred in pairs_ if label and pred)
    assert o.fp == sum(1 for label, pred in pairs_ if not label and pred)
    if n:
        assert o.accuracy == pytest.approx((o.tp + o.tn) / n)
    else:
        assert o.accuracy is None and o.kappa is None
    assert (o.precision is None) == (o.tp + o.fp == 0)
    assert (o.recall is None) == (o.tp + o.fn == 0)
    if o.kappa is not None:
        assert -1 <= o.kappa <= 1
    assert len(report.disagreements) == o.fp + o.fn
    assert all(d.label != d.predicted for d in report.disagreements)
    for groups in (report.by_category, report.by_fact_type):
        assert sum(c.n for c in groups.values()) == n
        for field in ("tp", "fp", "fn", "tn"):
            assert sum(getattr(c, field) for c in groups.values()) == getattr(o, field)


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=60))
def test_perfect_agreement(labels):
    o = score(decisions_of([(x, x) for x in labels])).overall
    assert o.accuracy == 1 and not score(decisions_of([(x, x) for x in labels])).disagreements
    if len(set(labels)) == 2:
        assert o.kappa == 1 and o.precision == 1 and o.recall == 1
    else:
        assert o.kappa is None  # one class only: chance agreement is 1, kappa undefined


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=60))
def test_total_disagreement_with_balanced_classes(labels):
    o = score(decisions_of([(x, not x) for x in labels])).overall
    assert o.accuracy == 0
    if labels.count(True) * 2 == len(labels):
        assert o.kappa == pytest.approx(-1)
    if o.kappa is not None:
        assert o.kappa <= 0


@settings(max_examples=examples(200), deadline=None)
@given(pairs)
def test_kappa_is_symmetric(pairs_):
    a = score(decisions_of(pairs_)).overall
    b = score(decisions_of([(pred, label) for label, pred in pairs_])).overall
    assert (a.kappa is None) == (b.kappa is None)
    if a.kappa is not None:
        assert a.kappa == pytest.approx(b.kappa)
    assert (a.precision, a.recall) == (b.recall, b.precision)


@settings(max_examples=examples(100), deadline=None)
@given(pairs, st.lists(st.booleans(), max_size=10))
def test_errors_are_not_scored(pairs_, failed):
    ok = decisions_of(pairs_)
    bad = [Decision(id=f"e{i}", label=label, predicted=None, error="ERROR: boom")
           for i, label in enumerate(failed)]
    report = score(ok + bad)
    assert report.overall == score(ok).overall
    assert report.errors == len(failed) and report.labels == len(pairs_) + len(failed)
    assert [e.id for e in report.error_lines] == [d.id for d in bad]


def test_confusion_known_values():
    c = confusion(tp=20, fp=5, fn=10, tn=15)
    # p_o = 35/50 = 0.7; p_e = (25*30 + 25*20)/2500 = 0.5; kappa = 0.2/0.5 = 0.4
    assert (c.accuracy, c.precision, c.recall) == (0.7, 0.8, pytest.approx(2 / 3))
    assert c.kappa == pytest.approx(0.4)
    assert confusion(0, 0, 0, 0).model_dump() == {
        "n": 0, "tp": 0, "fp": 0, "fn": 0, "tn": 0, "accuracy": None, "precision": None,
        "recall": None, "f1": None, "kappa": None}


def test_calibrate_command_prints_and_writes_the_report(tmp_path):
    import subprocess
    import sys
    out = tmp_path / "cal.json"
    proc = subprocess.run([sys.executable, "-m", "factjudge", "calibrate", "--builtin", "-o", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("calibration: ") and "disagreements" in proc.stdout
    data = json.loads(out.read_text())
    assert data["labels"] >= 150 and data["overall"]["n"] == data["labels"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "gold_fact": {"id": "g", "fact_type": "t"}}\n')
    proc = subprocess.run([sys.executable, "-m", "factjudge", "calibrate", str(bad)],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert proc.stderr.startswith(f"factjudge: error: {bad}: line 1 (id 'x'): missing 'match'")


def test_an_llm_calibration_reports_its_calls_and_tokens(small_labels, tmp_path):
    """What a calibration cost (calls, prompt and completion tokens) is in its JSON, as the
    scripted server counted them: two questions per line."""
    from evalkit import run_cli
    from scripted_server import ScriptedServer

    out = tmp_path / "cal.json"
    with ScriptedServer() as server:
        proc = run_cli("calibrate", small_labels, "--model", "m", "--base-url", server.base_url, "-o", out)
        requests = len(server.requests)
    assert proc.returncode == 0, proc.stderr
    usage = json.loads(out.read_text())["usage"]
    assert usage["llm_calls"] == requests == 16 and usage["cache_hits"] == 0
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    assert "16 calls" in proc.stderr and "cost" not in proc.stderr


def test_an_llm_calibration_prices_its_tokens_when_prices_are_given(small_labels, tmp_path):
    """--price-in/--price-out price a calibration as they price judge and eval (they were ignored)."""
    from evalkit import run_cli
    from scripted_server import ScriptedServer

    out = tmp_path / "cal.json"
    with ScriptedServer() as server:
        proc = run_cli("calibrate", small_labels, "--model", "m", "--base-url", server.base_url, "-o", out,
                       "--price-in", "2", "--price-out", "8", "--no-cache")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    u = report["usage"]
    assert report["cost"] == pytest.approx((u["prompt_tokens"] * 2 + u["completion_tokens"] * 8) / 1e6)
    assert report["prices"]["input"] == 2 and "| cost " in proc.stderr


class LenientPredictedPass(JudgeBase):
    """Links every pair in the predicted pass only: the gold pass says FN (the #23 case)."""

    name = "lenient"

    async def judge(self, task):
        if task.direction == "predicted":
            return Verdict(fact_id=task.subject_id, status="TP", matched_id=task.candidates[0]["id"])
        return Verdict(fact_id=task.subject_id, status="FN")


def test_link_policy_both_needs_both_passes(small_labels):
    labels = load_labels(small_labels)
    either = calibrate(labels, None, LenientPredictedPass())
    both = calibrate(labels, {"link_policy": "both"}, LenientPredictedPass())
    assert (either.overall.tp, either.overall.fp) == (5, 3)  # every pair linked
    assert (both.overall.tp, both.overall.fp, both.overall.tn) == (0, 0, 3)
    assert all("link_policy both" in d.description for d in both.disagreements)


def test_link_policy_is_checked():
    assert parse_config({}).link_policy == "either"
    with pytest.raises(InputError) as exc:
        parse_config({"link_policy": "strict"}, "cfg.yaml")
    assert str(exc.value) == "cfg.yaml: config key 'link_policy': Input should be 'either' or 'both'"
