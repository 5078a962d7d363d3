"""The rules judge: labelled cases, normalisation units, index correctness, pipeline use."""
import asyncio
import json
import warnings
from decimal import Decimal

import pytest
from evalkit import ROOT
from hypo import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from factjudge import JudgeBase, JudgeConfig, Verdict, run_judge
from factjudge.io.config import parse_config
from factjudge.judges.base import JudgeTask, negative_status
from factjudge.judges.rules.compare import compare_facts, finish_facts, normalized
from factjudge.judges.rules.judge import RulesJudge
from factjudge.judges.rules.normalize import (
    MISSING,
    Items,
    Other,
    Period,
    Quantity,
    Text,
    Unit,
    normalize_fact,
    normalize_text,
    normalize_value,
    parse_number,
    parse_period,
    parse_unit,
    text_similarity,
)

LABELLED = json.loads((ROOT / "tests" / "data" / "rules_labelled.json")
                      .read_text(encoding="utf-8"))["cases"]


def task(subject, candidates, direction="gold", config=None):
    return JudgeTask(direction, subject, candidates, parse_config(config))


# --------------------------------------------------------------------------- labelled set


@pytest.mark.parametrize("case", LABELLED, ids=[c["name"] for c in LABELLED])
def test_labelled_case(case):
    verdict, exact = RulesJudge().decide(
        task(case["subject"], case["candidates"], case["direction"], case.get("config")))
    want = case["expected"]
    assert (verdict.status, verdict.matched_id) == (want["status"], want["matched_id"]), \
        verdict.reasoning
    if "exact" in want:
        assert exact is want["exact"], verdict.reasoning
    assert verdict.fact_id == case["subject"]["id"]
    assert verdict.usage.llm_calls == 0


def test_labelled_set_is_well_formed_and_covers_every_rule():
    assert len(LABELLED) >= 40
    assert len({c["name"] for c in LABELLED}) == len(LABELLED)
    groups = {c["rule"].split("/")[0] for c in LABELLED}
    assert {"number", "unit", "year", "text", "period", "structure", "odd"} <= groups
    for c in LABELLED:
        ids = [x["id"] for x in c["candidates"]]
        negative = "FN" if c["direction"] == "gold" else "FP"
        assert c["expected"]["status"] in ("TP", negative)
        assert (c["expected"]["matched_id"] in ids) == (c["expected"]["status"] == "TP")
        JudgeConfig.model_validate(c.get("config", {}))
    # both outcomes of most rules are labelled, so near misses are covered
    statuses = {(c["rule"], c["expected"]["status"] == "TP") for c in LABELLED}
    for rule in ("number/tolerance", "number/currency", "number/percent", "number/negative",
                 "text/fuzzy", "text/suffix", "period/fiscal", "period/date", "period/quarter",
                 "unit", "year/number", "structure/fact_type", "structure/missing", "odd/json"):
        assert {(rule, True), (rule, False)} <= statuses, rule


# --------------------------------------------------------------------------- normalize


@pytest.mark.parametrize("text, value, currency, percent", [
    ("$12.5m", "12500000", "USD", False),
    ("12,500,000 USD", "12500000", "USD", False),
    ("USD 12.5 million", "12500000", "USD", False),
    ("€3bn", "3000000000", "EUR", False),
    ("12.5 million euros", "12500000", "EUR", False),
    ("GBP 3,200 million", "3200000000", "GBP", False),
    ("¥1.5 trillion", "1500000000000", "JPY", False),
    ("US$ 7k", "7000", "USD", False),
    ("(1,234)", "-1234", None, False),
    ("$(1,234)", "-1234", "USD", False),
    ("($5.2) million", "-5200000", "USD", False),
    ("−42", "-42", None, False),
    ("12 500 000", "12500000", None, False),
    ("1.2e6", "1200000", None, False),
    ("12.5%", "12.5", None, True),
    ("12.5 percent", "12.5", None, True),
    ("12.5 per cent", "12.5", None, True),
    ("25 bps", "0.25", None, True),
    (".5", "0.5", None, False),
    ("12.5 USD million", "12500000", "USD", False),
    ("3.1 EUR bn", "3100000000", "EUR", False),
])
def test_parse_number(text, value, currency, percent):
    q = parse_number(text)
    assert q is not None
    assert (q.value, q.currency, q.percent) == (Decimal(value), currency, percent)


@pytest.mark.parametrize("text", ["Apple", "12.5x", "$12 EUR", "", "-", "1.2.3",
                                  "5 apples", "12.5 musd", "$12.5 EUR million"])
def test_parse_number_rejects(text):
    assert parse_number(text) is None


def test_plain_digits_are_marked_plain_only_without_any_formatting():
    assert parse_number("2023").plain
    assert not parse_number("2,023").plain
    assert not parse_number("-2023").plain
    assert not parse_number("$2023").plain


@pytest.mark.parametrize("text, key", [
    ("2023-03-05", "2023-03-05"), ("2023/3/5", "2023-03-05"), ("March 5, 2023", "2023-03-05"),
    ("Mar. 5 2023", "2023-03-05"), ("5 Mar 2023", "2023-03-05"),
    ("5th of March 2023", "2023-03-05"),
    ("03/05/2023", "2023-03-05"), ("05.03.2023", "2023-03-05"), ("25/12/2023", "2023-12-25"),
    ("2023-03-05T10:30:00Z", "2023-03-05"), ("March 2023", "2023-03"), ("2023-03", "2023-03"),
    ("2023", "2023"), ("CY2023", "2023"), ("calendar year 2023", "2023"),
    ("FY2023", "FY2023"), ("FY 2023", "FY2023"), ("FY23", "FY2023"), ("fy'23", "FY2023"),
    ("fiscal 2023", "FY2023"), ("Fiscal Year 2023", "FY2023"), ("2023 fiscal year", "FY2023"),
    ("FY99", "FY1999"), ("Q1 2023", "2023-Q1"), ("1Q23", "2023-Q1"), ("2023Q4", "2023-Q4"),
    ("Q3-2023", "2023-Q3"), ("first quarter of 2023", "2023-Q1"), ("Q1 FY2023", "FY2023-Q1"),
    ("FY23 Q2", "FY2023-Q2"), ("first quarter of fiscal 2023", "FY2023-Q1"),
    ("H1 2023", "2023-H1"), ("2H23", "2023-H2"), ("30_March_2007", "2007-03-30"),
])
def test_parse_period(text, key):
    assert parse_period(text) == key


@pytest.mark.parametrize("text", ["2023-02-30", "13/13/2023", "1850", "23", "Q5 2023", "12.5",
                                  "2023-24", "March", "FY2023/24", "Apple"])
def test_parse_period_rejects(text):
    assert parse_period(text) is None


def test_bare_year_can_be_switched_off_for_amounts():
    assert parse_period("2023", bare_year=False) is None
    assert parse_period("FY2023", bare_year=False) == "FY2023"


@pytest.mark.parametrize("text, currency, scale, percent, rest", [
    ("USD million", "USD", 10 ** 6, False, None),
    ("millions of US dollars", "USD", 10 ** 6, False, None),
    ("$m", "USD", 10 ** 6, False, None),
    ("EURbn", "EUR", 10 ** 9, False, None),
    ("USD '000", "USD", 10 ** 3, False, None),
    ("in thousands", None, 10 ** 3, False, None),
    ("%", None, None, True, None),
    ("million shares", None, 10 ** 6, False, "shares"),
    ("tonnes", None, None, False, "tonnes"),
])
def test_parse_unit(text, currency, scale, percent, rest):
    u = parse_unit(text)
    assert (u.currency, u.scale, u.percent) == (currency, None if scale is None else Decimal(scale),
                                                percent)
    assert (u.rest.norm if u.rest else None) == rest


@pytest.mark.parametrize("raw, suffixes, norm", [
    ("Apple Inc.", True, "apple"),
    ("Apple Inc.", False, "apple inc"),
    ("The Walt Disney Company", True, "walt disney"),
    ("Pty Ltd", True, "pty"),  # never strips the last word
    ("AG", True, "ag"),
    ("  Foo,\tBar;  BAZ ", False, "foo bar baz"),
    ("AT&T", False, "at and t"),
    ("McDonald’s", False, "mcdonalds"),
    ("U.S. Steel", False, "us steel"),
    ("revenue of 1,234.5 m", False, "revenue of 1234.5 m"),
    ("ＡＢＣ", False, "abc"),
    ("María González", False, "maria gonzalez"),
    ("Søren Łukasz Æbelø", False, "soren lukasz aebelo"),
    ("STRASSE", False, "strasse"),
    ("Straße", False, "strasse"),  # casefold, not lower
])
def test_normalize_text(raw, suffixes, norm):
    assert normalize_text(raw, ignore_company_suffixes=suffixes) == norm


def test_text_similarity_is_token_sorted_ratio():
    assert text_similarity("Cook, Tim", "Tim Cook") == 100
    assert text_similarity("Apple", "Applied") < 90
    assert text_similarity("Apple Inc.", "apple", ignore_company_suffixes=True) == 100


def test_normalize_value_kinds():
    assert normalize_value(None) is MISSING
    assert isinstance(normalize_value(True), Other)  # a bool is not the number 1
    assert isinstance(normalize_value([1, 2]), Items)  # compared as a multiset (issue 34 item 1)
    nested = normalize_value([1, [2]])  # a list of lists or of records and values: a multiset too
    assert isinstance(nested, Items) and nested.mixed and isinstance(nested.items[1].values[""], Items)
    assert isinstance(normalize_value([1, float("nan")]), Other)  # a NaN equals nothing: one JSON value
    assert isinstance(normalize_value(float("nan")), Other)
    assert isinstance(normalize_value("2023"), Period)
    assert isinstance(normalize_value("2023", amount=True), Quantity)
    assert isinstance(normalize_value("2,023"), Quantity)
    assert isinstance(normalize_value("hello"), Text)
    assert isinstance(normalize_value(10 ** 5000), Other)  # too large to be an amount
    assert isinstance(normalize_value("1e999999m"), Text)


def test_normalize_fact_folds_the_unit_into_the_amount_only():
    skip = frozenset({"id", "fact_type"})
    v = normalize_fact({"id": "a", "fact_type": "t", "value": "12.5", "unit": "USD million",
                        "year": "2023", "note": "restated"}, skip=skip)
    assert (v["value"].value, v["value"].currency) == (Decimal("12500000"), "USD")
    assert v["year"] == Period(key="2023", raw="2023")  # not scaled, still a year
    assert isinstance(v["unit"], Unit) and isinstance(v["note"], Text)
    # a value with its own scale keeps it; the unit's currency fills in
    v = normalize_fact({"value": "3bn", "unit": "EUR million"}, skip=skip)
    assert (v["value"].value, v["value"].currency) == (Decimal("3000000000"), "EUR")
    # <name>_unit applies to <name> only
    v = normalize_fact({"price": "5", "price_unit": "USD thousand", "volume": "7"}, skip=skip)
    assert v["price"].value == 5000 and v["volume"].value == 7
    # without value/amount fields a generic unit applies to every numeric field
    v = normalize_fact({"low": "1", "high": "2", "unit": "m", "when": "FY23"}, skip=skip)
    assert (v["low"].value, v["high"].value) == (10 ** 6, 2 * 10 ** 6)
    assert v["when"].key == "FY2023"


# --------------------------------------------------------------------------- judge behaviour


REV = {"id": "g1", "fact_type": "revenue", "company": "Apple Inc.", "period": "FY23",
       "value": "12.5", "unit": "USD million"}


def test_tp_reasoning_names_candidate_and_every_field():
    cands = [{"id": "p1", "fact_type": "revenue", "company": "apple", "period": "fiscal 2023",
              "value": "$12,500,000", "unit": "USD"}]
    verdict, exact = RulesJudge().decide(task(REV, cands))
    assert (verdict.status, verdict.matched_id, exact) == ("TP", "p1", True)
    r = verdict.reasoning
    assert "p1" in r
    for name in ("company", "period", "value", "unit"):
        assert f"{name}:" in r
    assert "12500000 USD" in r


def test_negative_reasoning_names_closest_candidate_and_failed_field():
    cands = [{"id": "p1", "fact_type": "revenue", "company": "Apple", "period": "FY2023",
              "value": "$99m"},
             {"id": "p2", "fact_type": "revenue", "company": "Zeta Bank", "period": "FY2019",
              "value": "$1m"}]
    verdict, exact = RulesJudge().decide(task(REV, cands, direction="predicted"))
    assert (verdict.status, verdict.matched_id, exact) == ("FP", None, False)
    assert "Closest: p1" in verdict.reasoning
    assert "value:" in verdict.reasoning and "differ" in verdict.reasoning
    assert "company:" not in verdict.reasoning.split("Agrees on")[0]  # only failures detailed


def test_negative_reasoning_when_no_candidate_has_the_fact_type():
    cands = [{"id": "p1", "fact_type": "ceo", "company": "Apple"}]
    verdict, _ = RulesJudge().decide(task(REV, cands))
    assert verdict.status == "FN" and "fact_type 'revenue'" in verdict.reasoning


def test_exact_flag_needs_exactly_one_equal_candidate():
    subject = {"id": "s", "fact_type": "t", "value": "100"}
    one = [{"id": "a", "fact_type": "t", "value": 100}]
    two = one + [{"id": "b", "fact_type": "t", "value": "100.0"}]
    near = [{"id": "a", "fact_type": "t", "value": 100.2}]
    tol = {"tolerances": {"value": {"absolute": 1}}}
    assert RulesJudge().decide(task(subject, one))[1] is True
    assert RulesJudge().decide(task(subject, two))[1] is False
    assert RulesJudge().decide(task(subject, near, config=tol))[0].status == "TP"
    assert RulesJudge().decide(task(subject, near, config=tol))[1] is False
    fuzzy = [{"id": "a", "fact_type": "t", "name": "Berkshire Hathway"}]
    v, exact = RulesJudge().decide(task({"id": "s", "fact_type": "t", "name": "Berkshire Hathaway"},
                                        fuzzy))
    assert v.status == "TP" and exact is False


def test_judge_is_the_async_face_of_decide():
    cands = [{"id": "p1", "fact_type": "revenue", "value": "$12.5m"}]
    subject = {"id": "g", "fact_type": "revenue", "value": "12,500,000 USD"}
    judge = RulesJudge()
    verdict = asyncio.run(judge.judge(task(subject, cands)))
    assert verdict == judge.decide(task(subject, cands))[0]
    assert judge.name == "rules"


def test_index_is_built_once_per_direction_and_freed_with_it():
    import gc
    import weakref

    from factjudge.judges.base import JudgePass

    cands = [{"id": "p1", "fact_type": "t", "value": "1"}, {"id": "p2", "fact_type": "t", "value": "2"}]
    judge = RulesJudge()
    opened = judge.open(JudgePass("gold", cands, parse_config({}), doc_id="doc"))
    first = opened.index
    assert opened.decide({"id": "s", "fact_type": "t", "value": "1"})[0].matched_id == "p1"
    assert opened.decide({"id": "s2", "fact_type": "t", "value": "2"})[0].matched_id == "p2"
    assert opened.index is first  # reused, not rebuilt
    # another direction or document has its own index
    other = judge.open(JudgePass("gold", [{"id": "q", "fact_type": "t", "value": "2"}], parse_config({}), doc_id="d2"))
    assert other.decide({"id": "s", "fact_type": "t", "value": "2"})[0].matched_id == "q"
    gone = weakref.ref(first)
    del opened, first
    gc.collect()
    assert gone() is None  # the judge keeps nothing once the direction is done


def test_index_respects_company_suffix_setting_change():
    judge = RulesJudge()
    cands = [{"id": "p1", "fact_type": "t", "company": "Apple Inc."}]
    subject = {"id": "s", "fact_type": "t", "company": "apple"}
    assert judge.decide(task(subject, cands))[0].status == "TP"
    off = {"ignore_company_suffixes": False}
    assert judge.decide(task(subject, cands, config=off))[0].status == "FN"


# --------------------------------------------------------------------------- index correctness


VALUES = ["$12.5m", "12,500,000", "12.6m", "12.5", 12.5, 12.56, 2023, "2023", "2,023", "FY23",
          "fiscal 2023", "Q1 2023", "2023-03-05", "March 5, 2023", "Apple Inc.", "apple", "Applied",
          "Apple Bank", "Route 66", "Route 67", None, True, [1], {"a": 1}, "12.5%", 0.125,
          "€12.5m",
          "(5)", -5, "", "n/a", "100", 100.4, "1e2"]
UNITS = ["USD million", "USD", "EUR", None, "shares", "%", "million shares"]
FIELDS = ["company", "value", "period"]


@st.composite
def facts(draw, prefix):
    out = []
    for i in range(draw(st.integers(0, 8))):
        fact = {"id": f"{prefix}{i}", "fact_type": draw(st.sampled_from(["a", "b"]))}
        for name in FIELDS:
            if draw(st.booleans()):
                fact[name] = draw(st.sampled_from(VALUES))
        if draw(st.booleans()):
            fact["unit"] = draw(st.sampled_from(UNITS))
        out.append(fact)
    return out


configs = st.fixed_dictionaries({
    "tolerances": st.sampled_from([{}, {"value": {"relative": 0.01}}, {"value": {"absolute": 0.5}},
                                   {"value": {"relative": 0.005, "absolute": 100}}]),
    "text_threshold": st.sampled_from([90, 60, 100, 0]),
    "fields": st.sampled_from([None, ["value"], ["company", "unit"], ["period", "missing"]]),
    "ignore_company_suffixes": st.booleans(),
})


def brute_force(subject, candidates, config):
    """The specification without any index: compare with every same-type candidate."""
    prepared_subject = normalized(subject, -1, config.ignore_company_suffixes)
    fields = JudgeTask("gold", subject, candidates, config).compared
    results = [compare_facts(prepared_subject, normalized(c, i, config.ignore_company_suffixes),
                             fields, config)
               for i, c in enumerate(candidates) if c["fact_type"] == subject["fact_type"]]
    matches = [r for r in results if r.ok]
    if not matches:
        return None, False
    best = max(matches, key=lambda r: (r.score, -r.candidate.position))
    return best.candidate.fact_id, len(matches) == 1 and best.exact


@pytest.mark.slow
@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(facts("g"), facts("p"), configs, st.sampled_from(["gold", "predicted"]))
def test_indexed_decision_equals_brute_force(subjects, candidates, config, direction):
    cfg = JudgeConfig.model_validate(config)
    judge = RulesJudge()
    for subject in subjects:
        verdict, exact = judge.decide(JudgeTask(direction, subject, candidates, cfg))
        want_id, want_exact = brute_force(subject, candidates, cfg)
        assert verdict.matched_id == want_id, verdict.reasoning
        assert verdict.status == ("TP" if want_id else ("FN" if direction == "gold" else "FP"))
        assert exact == want_exact


NEAR_NUMBERS = ["100", "101", "101.01", "101.0101", "99", "99.0099", "98.99", "100.5", "100.50001",
                "99.5", "-100", "-101.01", 100, 101.01, "$100", "100 EUR", "100%", "101.01%", "0",
                # fractions near those percentages: compared in percentage points
                "1", 1.0101, "0.995", "1.005", "0.99%", "-1.01", "0.5%"]
NEAR_TEXTS = ["Berkshire Hathaway", "Berkshire Hathway", "Berkshre Hathawy", "Berkshire Hath",
              "Hathaway Berkshire", "Berkshire Hathaway Inc.", "Berkshire", "Apple", "Applied",
              "Apple Bank", "appel", ""]


@st.composite
def near_facts(draw, prefix):
    out = []
    for i in range(draw(st.integers(0, 12))):
        fact = {"id": f"{prefix}{i}", "fact_type": "t"}
        if draw(st.booleans()):
            fact["value"] = draw(st.sampled_from(NEAR_NUMBERS))
        if draw(st.booleans()):
            fact["company"] = draw(st.sampled_from(NEAR_TEXTS))
        out.append(fact)
    return out


near_configs = st.fixed_dictionaries({
    "tolerances": st.sampled_from([{}, {"value": {"relative": 0.01}}, {"value": {"absolute": 1}},
                                   {"value": {"relative": 0.005}},
                                   {"value": {"relative": 0.5, "absolute": 0.5}}]),
    "text_threshold": st.sampled_from([90, 95, 85, 80, 60]),
    "fields": st.sampled_from([None, ["value"], ["company"]]),
})


@pytest.mark.slow
@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(near_facts("g"), near_facts("p"), near_configs)
def test_indexed_decision_equals_brute_force_near_the_thresholds(subjects, candidates, config):
    """Values straddling tolerance and similarity bounds: the shortlist must never cut a match."""
    cfg = JudgeConfig.model_validate(config)
    judge = RulesJudge()
    for subject in subjects:
        verdict, exact = judge.decide(JudgeTask("gold", subject, candidates, cfg))
        want = brute_force(subject, candidates, cfg)
        assert (verdict.matched_id, exact) == want, verdict.reasoning


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30)
    | st.sampled_from(VALUES[:20] + ["1e999999m", "(", ")", "$", "%", "Q", "FY", "  "]),
    lambda inner: (st.lists(inner, max_size=3)
                   | st.dictionaries(st.text(max_size=5), inner, max_size=3)),
    max_leaves=6)
field_names = st.sampled_from(["value", "unit", "currency", "x_unit", "x", "period", "name"])


@pytest.mark.slow
@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.dictionaries(field_names, json_values, max_size=4), min_size=1, max_size=5),
       st.lists(st.dictionaries(field_names, json_values, max_size=4), min_size=1, max_size=5),
       st.sampled_from([{}, {"tolerances": {"value": {"relative": 0.5}, "x": {"absolute": 1}}},
                        {"fields": ["value", "x_unit", "nope"]}]))
def test_odd_data_never_raises_and_gives_a_valid_verdict(subjects, candidates, config):
    cands = [{"id": f"p{i}", "fact_type": "t", **c} for i, c in enumerate(candidates)]
    judge = RulesJudge()
    for i, s in enumerate(subjects):
        subject = {"id": f"g{i}", "fact_type": "t", **s}
        verdict, exact = judge.decide(task(subject, cands, config=config))
        assert verdict.status in ("TP", "FN")
        assert (verdict.matched_id is not None) == (verdict.status == "TP")
        assert verdict.matched_id is None or verdict.matched_id in {c["id"] for c in cands}
        assert verdict.reasoning
        if exact:
            assert verdict.status == "TP"


def test_identical_facts_always_match_themselves():
    fact = {"id": "x", "fact_type": "t", "a": "$(12.5) bn", "b": "Q1 FY23", "c": "Société SA",
            "d": [1, {"k": None}], "unit": "EUR million", "e": None}
    verdict, exact = RulesJudge().decide(task(fact, [dict(fact)]))
    assert (verdict.status, exact) == ("TP", True)


# --------------------------------------------------------------------------- through run_judge


def test_run_judge_default_judge_is_rules_and_reconciles():
    gold = [
        {"id": "g1", "fact_type": "revenue", "company": "Apple Inc.", "period": "FY23",
         "value": "12.5", "unit": "USD million"},
        {"id": "g2", "fact_type": "revenue", "company": "Apple Inc.", "period": "FY22",
         "value": "10.1", "unit": "USD million"},
        {"id": "g3", "fact_type": "ceo", "company": "Apple", "person": "Tim Cook"},
        {"id": "g4", "fact_type": "segment", "name": "Services"},  # out of scope
    ]
    predicted = [
        {"id": "p1", "fact_type": "revenue", "company": "apple", "period": "fiscal year 2023",
         "value": "$12,500,000"},
        {"id": "p2", "fact_type": "revenue", "company": "APPLE", "period": "FY2023",
         "value": "USD 12.5 million"},  # a duplicate of p1
        {"id": "p3", "fact_type": "revenue", "company": "Apple", "period": "FY2022",
         "value": "€10.1m"},  # wrong currency
        {"id": "p4", "fact_type": "ceo", "company": "Apple Inc", "person": "Cook, Tim"},
    ]
    result = run_judge(gold, predicted, {"entity_types": ["revenue", "ceo"]})
    g = {f["id"]: f for f in result.gold_facts}
    p = {f["id"]: f for f in result.predicted_facts}
    assert (g["g1"]["factjudge"]["status"], g["g1"]["factjudge"]["matched_ids"]) == ("TP", ["p1"])
    assert g["g2"]["factjudge"]["status"] == "FN"
    assert (g["g3"]["factjudge"]["status"], g["g3"]["factjudge"]["matched_ids"]) == ("TP", ["p4"])
    assert g["g4"]["factjudge"]["status"] == "OUT_OF_SCOPE"
    assert (p["p1"]["factjudge"]["status"], p["p1"]["factjudge"]["matched_ids"]) == ("TP", ["g1"])
    # p2 also matches g1 on its own pass; reconciliation keeps one link per gold fact
    assert p["p2"]["factjudge"]["status"] == "FP" and "duplicate" in p["p2"]["factjudge"]["description"]
    assert p["p3"]["factjudge"]["status"] == "FP" and "EUR" in p["p3"]["factjudge"]["reasoning"]
    assert p["p4"]["factjudge"]["status"] == "TP"
    m = result.metrics
    assert (m.tp_gold, m.fn, m.tp_predicted, m.fp) == (2, 1, 2, 2)
    assert result.usage.llm_calls == 0
    assert any("duplicate" in n for n in result.dedup_notes)


def test_five_hundred_facts_per_side_all_match_across_formats():
    gold = [{"id": f"g{i}", "fact_type": f"t{i % 7}", "company": f"Company {i % 50} Inc.",
             "period": f"FY{2015 + i % 10}", "value": f"${i * 1.5:.1f}m"} for i in range(500)]
    predicted = [{"id": f"p{i}", "fact_type": f"t{i % 7}", "company": f"company {i % 50}",
                  "period": f"fiscal {2015 + i % 10}", "value": f"{i * 1_500_000:,} USD"}
                 for i in range(500)]
    # how long it takes is for benchmarks/rules_speed.py to print, not for a test to time
    result = run_judge(gold, predicted, {"tolerances": {"value": {"relative": 0.001}}})
    assert result.metrics.tp_gold == 500 and result.metrics.fp == 0


def test_a_percentage_is_its_number_over_100():
    q = parse_number("12.4 pct")
    assert (q.value, q.percent, q.number) == (Decimal("12.4"), True, Decimal("0.124"))
    assert parse_number("12.4").number == Decimal("12.4")
    assert normalize_fact({"value": "12.4", "unit": "percent"})["value"].number == Decimal("0.124")
    subject = {"id": "s", "fact_type": "t", "value": "12.4%"}
    for same in ("0.124", 0.124, "12.4 percent", "12.40%"):
        verdict, exact = RulesJudge().decide(task(subject, [{"id": "c", "fact_type": "t",
                                                              "value": same}]))
        assert (verdict.status, exact) == ("TP", True), verdict.reasoning
    for other in ("12.4", 12.4, "0.0124", "$0.124"):
        verdict, _ = RulesJudge().decide(task(subject, [{"id": "c", "fact_type": "t",
                                                         "value": other}]))
        assert verdict.status == "FN", verdict.reasoning


def test_an_absolute_tolerance_on_a_percentage_counts_points_against_fractions_too():
    tol = {"tolerances": {"value": {"absolute": 0.5}}}
    subject = {"id": "s", "fact_type": "t", "value": "9.9%"}
    for value, status in ((0.098, "TP"), (0.094, "TP"), (0.093, "FN"), ("9.4%", "TP"),
                          ("9.3%", "FN")):
        cands = [{"id": "c", "fact_type": "t", "value": value}]
        assert RulesJudge().decide(task(subject, cands, config=tol))[0].status == status, value
        # and the other way round: a fraction subject against a percentage candidate
        back = {"id": "s2", "fact_type": "t", "value": value}
        cand = [{"id": "c", "fact_type": "t", "value": "9.9%"}]
        assert RulesJudge().decide(task(back, cand, config=tol))[0].status == status, value


@pytest.mark.parametrize("value", [float("nan"), [1, float("nan")], {"a": float("nan")}])
def test_nan_never_matches_even_nan(value):
    subject = {"id": "s", "fact_type": "t", "value": value}
    verdict, exact = RulesJudge().decide(task(subject, [{"id": "c", "fact_type": "t",
                                                         "value": value}]))
    assert (verdict.status, exact) == ("FN", False)
    assert "NaN equals nothing" in verdict.reasoning
    inf = {"id": "s", "fact_type": "t", "value": float("inf")}
    assert RulesJudge().decide(task(inf, [dict(inf, id="c")]))[0].status == "TP"


def test_quoted_dates_and_numbers_are_still_dates_and_numbers():
    from factjudge.judges.rules.normalize import normalize_value
    assert normalize_value('"1923-11-18"').key == normalize_value("1923-11-18").key == "1923-11-18"
    assert normalize_value("\u201c448\u201d") == normalize_value("448")
    assert type(normalize_value('"448')).__name__ == "Text"  # unbalanced: left as text


def test_in_place_gives_the_same_result_into_the_callers_own_dicts():
    import copy

    gold = [{"id": "g1", "fact_type": "revenue", "company": "Apple", "value": "12.5", "unit": "USD million"},
            {"id": "g2", "fact_type": "revenue", "company": "Acme", "value": "3"},
            {"id": "g3", "fact_type": "other", "value": "1"}]
    pred = [{"id": "p1", "fact_type": "revenue", "company": "apple", "value": "$12,500,000"},
            {"id": "p2", "fact_type": "revenue", "company": "Acme", "value": "4"}]
    config = {"entity_types": ["revenue"]}
    copied = run_judge(copy.deepcopy(gold), copy.deepcopy(pred), config)
    mine_gold, mine_pred = copy.deepcopy(gold), copy.deepcopy(pred)
    in_place = run_judge(mine_gold, mine_pred, config, in_place=True)
    assert in_place.to_dict() == {**copied.to_dict(), "usage": in_place.to_dict()["usage"]}
    assert in_place.gold_facts[0] is mine_gold[0] and mine_gold[0]["factjudge"]["status"] == "TP"
    assert mine_gold[2]["factjudge"]["status"] == "OUT_OF_SCOPE" and mine_pred[1]["factjudge"]["status"] == "FP"
    copied_again = run_judge(gold, pred, config)  # without in_place the caller's dicts stay as given
    assert "status" not in gold[0] and copied_again.gold_facts[0] is not gold[0]


def test_the_rules_judge_indexes_each_direction_once(monkeypatch):
    """A judge opens each direction of a document once: the rules judge indexes the direction's
    candidates then, not once per question."""
    built = []
    index = RulesJudge.index

    def counted(candidates, config, forms=None):
        built.append([c["id"] for c in candidates])
        return index(candidates, config, forms)

    monkeypatch.setattr(RulesJudge, "index", staticmethod(counted))
    gold = [{"id": "g1", "fact_type": "t", "value": "1"}, {"id": "g2", "fact_type": "t", "value": "2"}]
    pred = [{"id": "p1", "fact_type": "t", "value": "1"}, {"id": "p2", "fact_type": "t", "value": "2"}]
    assert run_judge(gold, pred, {}, RulesJudge()).metrics.f1 == 1.0
    assert sorted(built) == [["g1", "g2"], ["p1", "p2"]]


def test_a_judge_of_ones_own_writes_one_method():
    seen = []

    class Mine(JudgeBase):
        async def judge(self, task):
            seen.append((task.direction, task.subject_id, task.candidate_ids))
            return Verdict(fact_id=task.subject_id, status=negative_status(task.direction))

    gold = [{"id": "g1", "fact_type": "t", "value": "1"}, {"id": "g2", "fact_type": "u", "value": "1"}]
    pred = [{"id": "p1", "fact_type": "t", "value": "1"}]
    result = run_judge(gold, pred, {}, Mine())
    # g2 has no candidate of its fact_type: decided without asking
    assert sorted(seen) == [("gold", "g1", ["p1"]), ("predicted", "p1", ["g1", "g2"])]
    assert result.metrics.f1 == 0.0


def test_a_candidate_is_compared_until_its_first_differing_field_and_finished_alike():
    """A match needs every field equal: _decide compares a candidate up to its first differing field
    (the other candidates of a TP are never read), and finishes the comparison only to explain a
    miss; finished, it is the full comparison."""
    config = JudgeConfig()
    subject = normalized({"id": "g1", "fact_type": "revenue", "company": "Apple", "period": "FY2023",
                          "value": "$12.5m", "unit": "USD"}, -1, False)
    other = normalized({"id": "p2", "fact_type": "revenue", "company": "Zeta Bank", "period": "FY2023",
                        "value": "$12.5m", "unit": "USD"}, 1, False)
    fields = ["company", "period", "value", "unit"]
    partial = compare_facts(subject, other, fields, config, until_miss=True)
    assert [f.name for f in partial.fields] == ["company"] and partial.rest == 1 and not partial.ok
    full = compare_facts(subject, other, fields, config)
    finished = finish_facts(partial, subject, fields, config)
    assert full.rest == finished.rest == 0
    assert [f[:5] for f in finished.fields] == [f[:5] for f in full.fields]
    assert (finished.ok, finished.exact, finished.score, finished.closeness) == (
        full.ok, full.exact, full.score, full.closeness)
    same = normalized({"id": "p1", "fact_type": "revenue", "company": "Apple", "period": "FY2023",
                       "value": "$12.5m", "unit": "USD"}, 0, False)
    matched = compare_facts(subject, same, fields, config, until_miss=True)
    assert matched.ok and matched.rest == 0 and len(matched.fields) == 4
    assert finish_facts(matched, subject, fields, config) is matched


@pytest.mark.parametrize(("gold", "pred", "status"), [
    ("+", "-", "FN"), ("✓", "✗", "FN"), ("€", "$", "FN"),  # every symbol was equal to every other
    ("+", " + ", "TP"), ("-", "—", "TP"), ("-", "\u2212", "TP"), ("...", "…", "TP"),
])
def test_values_of_symbols_alone_are_compared_as_written(gold, pred, status):
    """A value normalising to no word at all ("+" and "-" of a lab result, a check mark) is
    compared as written, any dash as one: "+" was equal to "-" after normalisation ('')."""
    result = run_judge([{"id": "g", "fact_type": "t", "grade": gold, "name": "x"}],
                       [{"id": "p", "fact_type": "t", "grade": pred, "name": "x"}])
    assert result.gold_facts[0]["factjudge"]["status"] == status


def _tp(gold, pred):
    result = run_judge([{"id": "g", "fact_type": "t", "v": gold}], [{"id": "p", "fact_type": "t", "v": pred}])
    verdict = result.gold_facts[0]["factjudge"]
    assert "np." not in verdict["reasoning"]
    return verdict["status"] == "TP"


def test_python_scalars_are_read_as_the_json_values_they_stand_for():
    """What a pydantic model's model_dump() hands over (Decimal, date): JSON values equal to
    nothing before ("not comparable")."""
    import datetime

    assert _tp(Decimal("12.50"), "12.5") and _tp(datetime.date(2024, 5, 13), "13/05/2024")
    assert _tp(datetime.datetime(2024, 5, 13, 10), "2024-05-13")
    assert not _tp(Decimal("12.50"), "12.6") and not _tp(datetime.date(2024, 5, 13), "2024-05-14")


@pytest.mark.parametrize(("gold", "pred", "same"), [
    ("2024-03-01T10:00:00", "2024-03-01T15:30:00", False),  # one day, another time: was TP
    ("2024-03-01 10:00", "2024-03-01T10:00:00.000", True),
    ("2024-03-01T10:00:00.5", "2024-03-01T10:00:00.25", False),
    ("2024-03-01T10:00Z", "2024-03-01T11:00:00+01:00", True),  # one instant at two offsets
    ("2024-03-01T23:30:00-05:00", "2024-03-02T04:30:00Z", True),  # ... the day another
    ("2024-03-01T10:00Z", "2024-03-01T10:00:00+01:00", False),
    ("2024-03-01T10:00Z", "2024-03-01T10:00", True),  # one offset unknown: the wall clock
    ("2024-03-01", "2024-03-01T09:00:00", True),  # no time: any time of its day
    ("2024-03-01T09:00:00Z", "2024-03-02", False),
    ("2024-03-01T25:00", "2024-03-01T10:00", False),  # no time of day: no date and time, compared as written
    ("2024-03-01T24:00", "2024-03-01", False),
])
def test_a_time_after_an_iso_date_counts(gold, pred, same):
    """Two date-times of one day were equal whatever their times (the time was ignored)."""
    assert _tp(gold, pred) is same and _tp(pred, gold) is same
    import datetime

    assert _tp(datetime.datetime(2024, 5, 13, 10), "2024-05-13T10:00") and not _tp(
        datetime.datetime(2024, 5, 13, 10), "2024-05-13T11:00")


def test_many_candidates_find_the_same_instant_at_another_offset():
    """Past SMALL_POOL candidates are looked up by their keys: the same instant is filed under its
    UTC time as well as its own day."""
    preds = [{"id": f"p{i}", "fact_type": "t", "v": f"2024-03-02T0{i}:00:00Z"} for i in range(10)]
    result = run_judge([{"id": "g", "fact_type": "t", "v": "2024-03-01T23:30:00-05:00"}], preds)
    assert result.gold_facts[0]["factjudge"]["status"] == "FN"
    preds[4]["v"] = "2024-03-02T04:30:00Z"
    verdict = run_judge([{"id": "g", "fact_type": "t", "v": "2024-03-01T23:30:00-05:00"}], preds).gold_facts[0]
    assert (verdict["factjudge"]["status"], verdict["factjudge"]["matched_ids"]) == ("TP", ["p4"])
    assert verdict["factjudge"]["reasoning"].startswith("TP: matches p4")  # its own pass, not reconciliation


def test_numpy_scalars_are_read_as_the_json_values_they_stand_for():
    """A pandas frame's values: numpy 2's float64 raised in Decimal (its repr is "np.float64(1.5)"),
    its int64 was a JSON value equal to nothing."""
    np = pytest.importorskip("numpy")
    assert _tp(np.float64(1.5), "1.5") and _tp(np.int64(3), "3") and _tp(np.float32(0.1), "0.1")
    assert _tp(np.str_("Acme"), "ACME") and not _tp(np.float64(1.5), "1.6")


@pytest.mark.parametrize(("gold", "pred", "config", "same"), [
    # a percentage ending in 0 was read as rounded to tens, a hedge as rounding up to 2x
    ("20%", "15%", {}, False), ("100%", "95%", {}, False), ("50 bps", "54 bps", {}, False),
    ("20%", "20.4%", {}, True), ("42%", "42.3%", {}, True),
    ("about 10,000", "5,000", {}, False), ("~1,000", "1,499", {}, False),
    ("around $200 million", "$150 million", {}, False), ("about 12,000", "11,950", {}, True),
    ("about 40", "38", {}, True), ("$1.25 billion", "$1,248 million", {}, True),
    # currency symbols, joined numbers, month names and time zones a text's normal form lost
    ("$2.50 per share", "€2.50 per share", {}, False), ("1,2 Mio. €", "1,2 Mio. $", {}, False),
    ("$2.50 per share", "2.50 per share", {}, True),  # a mark on one side only
    ("3/5/24", "5/3/24", {}, False), ("2:1", "1:2", {}, False), ("10:00-15:30", "15:30-10:00", {}, False),
    ("15. Juni 2024", "15. Juli 2024", {}, False), ("5 juin 2024", "5 juil. 2024", {}, False),
    ("June 2024 results", "July 2024 results", {}, False),
    ("2024-03-05T10:00 CET", "2024-03-05T10:00 EST", {}, False),
    ("2024-03-05T10:00 CET", "2024-03-05T10:00 cet", {}, True),
    # numbers in a text read with the config's decimal comma; crore and lakh too
    ("Preis: 1,234 EUR", "Preis: 1234 EUR", {"decimal_separator": ","}, False),
    ("Preis: 1,234 EUR", "Preis: 1234 EUR", {}, True),
    ("₹1,5 crore", "₹15 crore", {}, False), ("1,5 lakh", "15 lakh", {"decimal_separator": ","}, False),
    ("₹15,000 crore", "₹150 billion", {}, True), ("1,50,000 lakh", "15 billion", {}, True),
])
def test_what_a_review_found_linked_wrongly(gold, pred, config, same):
    """Each pair was a TP (but the controls): two different values linked as equal."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run_judge([{"id": "g", "fact_type": "t", "v": gold}], [{"id": "p", "fact_type": "t", "v": pred}],
                           config)
    verdict = result.gold_facts[0]["factjudge"]
    assert (verdict["status"] == "TP") is same, verdict["reasoning"]
