"""core/analysis: near misses, categories, merges and splits (pure, property-tested)."""
from collections.abc import Mapping, Sequence
from typing import Any

from hypo import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from factjudge.core.analysis import (
    Closeness,
    FieldCheck,
    analyse,
    count_categories,
    pair_near_misses,
    total_categories,
)
from factjudge.core.metrics import compute_metrics
from factjudge.core.reconcile import PassVerdict as V
from factjudge.core.reconcile import reconcile
from factjudge.models import fact_category

FIELDS = ("a", "b", "c")


def equal_fields(subjects: Sequence[Mapping[str, Any]], candidates: Sequence[Mapping[str, Any]]
                 ) -> list[list[tuple[int, Closeness]]]:
    """A ranker comparing fields by equality (100 or 0), every candidate."""
    out = []
    for s in subjects:
        row = [(i, Closeness(tuple(FieldCheck(f, s.get(f) == c.get(f), 100.0 if s.get(f) == c.get(f) else 0.0)
                                   for f in FIELDS))) for i, c in enumerate(candidates)]
        row.sort(key=lambda o: (-o[1].key[0], -o[1].key[1], o[0]))
        out.append(row)
    return out


def judged(gold: list[dict[str, Any]], predicted: list[dict[str, Any]], gv: dict[str, V], pv: dict[str, V],
           one_to_one: bool = False) -> tuple[dict[str, Any], Any]:
    """A result line from facts and pass verdicts, as the pipeline assembles it."""
    rec = reconcile([f["id"] for f in gold], [f["id"] for f in predicted], gv, pv, one_to_one=one_to_one)
    out = {}
    for side, facts, outcomes in (("gold", gold, rec.gold), ("predicted", predicted, rec.predicted)):
        out[f"{side}_facts"] = [{**f, "status": outcomes[f["id"]].status,
                                 "matched_ids": outcomes[f["id"]].matched_ids} for f in facts]
    out["analysis"] = analyse(out["gold_facts"], out["predicted_facts"], rec.dropped, equal_fields).model_dump()
    return out, rec


def fact(i: str, t: str = "role", **fields: Any) -> dict[str, Any]:
    return {"id": i, "fact_type": t, **fields}


def test_a_fact_differing_in_one_field_is_a_near_miss_counted_once():
    gold = [fact("g1", a="Jane", b="CEO", c="Acme")]
    predicted = [fact("p1", a="Jane", b="CFO", c="Acme")]
    line, _ = judged(gold, predicted, {"g1": V("FN")}, {"p1": V("FP")})
    [near] = line["analysis"]["near_misses"]
    assert (near["gold"], near["predicted"], near["differ"], near["agree"]) == ("g1", "p1", ["b"], ["a", "c"])
    counts = count_categories(line)["role"]
    assert (counts.near_miss, counts.missing, counts.spurious) == (1, 0, 0)
    assert counts.near_miss_fields == {"b": 1} == counts.one_field


def test_agreeing_on_less_than_half_the_fields_is_missing_and_spurious():
    gold = [fact("g1", a="Jane", b="CEO", c="Acme")]
    predicted = [fact("p1", a="Jane", b="CFO", c="Initech")]
    line, _ = judged(gold, predicted, {"g1": V("FN")}, {"p1": V("FP")})
    assert line["analysis"]["near_misses"] == []
    counts = count_categories(line)["role"]
    assert (counts.near_miss, counts.missing, counts.spurious) == (0, 1, 1)


def test_near_misses_pair_closest_first_and_each_fact_once():
    gold = [fact("g1", a="x", b="y", c="z"), fact("g2", a="x", b="y", c="w")]
    predicted = [fact("p1", a="x", b="q", c="q2"), fact("p2", a="x", b="y", c="w2")]
    line, _ = judged(gold, predicted, {"g1": V("FN"), "g2": V("FN")}, {"p1": V("FP"), "p2": V("FP")})
    pairs = [(n["gold"], n["predicted"]) for n in line["analysis"]["near_misses"]]
    # g1-p2 and g2-p2 both agree on 2 fields: the earlier gold fact takes p2; p1 agrees with
    # g2 on one field of three only, not a near miss
    assert pairs == [("g1", "p2")]


def test_split_and_duplicate():
    gold = [fact("g1", a="x", b="y", c="z")]
    predicted = [fact("p1", a="x", b="y", c="z"), fact("p2", a="x", b="y", c="z")]
    line, _ = judged(gold, predicted, {"g1": V("TP", "p1")}, {"p1": V("TP", "g1"), "p2": V("TP", "g1")})
    assert line["analysis"]["splits"] == [{"fact_type": "role", "gold": "g1", "kept": "p1", "dropped": ["p2"]}]
    counts = count_categories(line)["role"]
    assert (counts.correct, counts.duplicate, counts.spurious, counts.splits) == (1, 1, 0, 1)


def test_merge_with_and_without_one_to_one():
    gold = [fact("g1", a="x"), fact("g2", a="x")]
    predicted = [fact("p1", a="x")]
    gv, pv = {"g1": V("TP", "p1"), "g2": V("TP", "p1")}, {"p1": V("TP", "g1")}
    for one_to_one in (False, True):
        line, _ = judged(gold, predicted, gv, pv, one_to_one)
        assert line["analysis"]["merges"] == [{"fact_type": "role", "predicted": "p1", "gold": ["g1", "g2"]}]
        assert count_categories(line)["role"].merges == 1


# --------------------------------------------------------------------------- properties

values = st.sampled_from(["x", "y"])
facts = st.fixed_dictionaries({"fact_type": st.sampled_from(["t1", "t2"]), "a": values, "b": values, "c": values})


@st.composite
def documents(draw: Any) -> tuple[Any, ...]:
    gold = [{"id": f"g{i}", **f} for i, f in enumerate(draw(st.lists(facts, max_size=6)))]
    predicted = [{"id": f"p{i}", **f} for i, f in enumerate(draw(st.lists(facts, max_size=6)))]

    def verdicts(subjects: list[dict[str, Any]], others: list[dict[str, Any]], negative: str) -> dict[str, V]:
        out = {}
        for s in subjects:
            same = [o["id"] for o in others if o["fact_type"] == s["fact_type"]]
            choice = draw(st.sampled_from([negative, "ERROR", *same]))
            out[s["id"]] = V(choice) if choice in (negative, "ERROR") else V("TP", choice)
        return out

    return (gold, predicted, verdicts(gold, predicted, "FN"), verdicts(predicted, gold, "FP"),
            draw(st.booleans()))


@settings(max_examples=examples(300), deadline=None)
@given(documents())
def test_categories_partition_the_facts_and_add_up_to_the_metrics(doc):
    """Identities, per fact type: correct = TP gold; near_miss + missing = FN; near_miss +
    spurious + duplicate = FP; every fact has exactly one category; a near miss pairs an FN gold
    fact and an FP prediction of one type, each fact in one pair at most."""
    gold, predicted, gv, pv, one_to_one = doc
    line, _ = judged(gold, predicted, gv, pv, one_to_one)
    metrics = compute_metrics(((f["fact_type"], f["status"]) for f in line["gold_facts"]),
                              ((f["fact_type"], f["status"]) for f in line["predicted_facts"]))
    by_type = count_categories(line)
    for t, m in metrics.by_fact_type.items():
        c = by_type.get(t)
        got = (0, 0, 0) if c is None else (c.correct, c.near_miss + c.missing, c.near_miss + c.spurious + c.duplicate)
        assert got == (m.tp_gold, m.fn, m.fp)
    total = total_categories(by_type)
    assert (total.correct, total.near_miss + total.missing) == (metrics.tp_gold, metrics.fn)
    statuses = {("gold", f["id"]): f for f in line["gold_facts"]} | {
        ("predicted", f["id"]): f for f in line["predicted_facts"]}
    seen: set[tuple[str, str]] = set()
    for n in line["analysis"]["near_misses"]:
        g, p = statuses[("gold", n["gold"])], statuses[("predicted", n["predicted"])]
        assert (g["status"], p["status"], g["fact_type"]) == ("FN", "FP", p["fact_type"])
        assert not {("gold", n["gold"]), ("predicted", n["predicted"])} & seen
        seen |= {("gold", n["gold"]), ("predicted", n["predicted"])}
        assert n["differ"] and len(n["agree"]) >= len(n["differ"])
    from factjudge.models import Analysis
    marks = Analysis.model_validate(line["analysis"]).marks()
    for (side, fid), f in statuses.items():
        category = fact_category(side, f["status"], marks.get((side, fid)))
        expected = {"TP": {"correct"}, "ERROR": {"error"}, "FN": {"near_miss", "missing"},
                    "FP": {"near_miss", "spurious", "duplicate"}}[f["status"]]
        assert category in expected


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 3)), max_size=5), max_size=5))
def test_pairing_is_maximal(rows):
    """No FN and FP left unpaired that could still pair up (the greedy pairing misses none)."""
    ranked = [[(c, Closeness(tuple(FieldCheck(str(k), k < agree, 100.0 * (k < agree)) for k in range(3))))
               for c, agree in dict(row).items()] for row in rows]
    pairs = pair_near_misses(ranked)
    subjects, cands = {s for s, _, _ in pairs}, {c for _, c, _ in pairs}
    assert len(subjects) == len(cands) == len(pairs)
    for s, row in enumerate(ranked):
        for c, near in row:
            if near.pairs_up:
                assert s in subjects or c in cands


def test_the_aggregator_sums_the_categories_without_a_model_a_document(monkeypatch: Any) -> None:
    """The run's categories are each document's summed, and the finishing pass makes no
    CategoryCounts while it sums them (it made two per fact type and document, 0.1 ms each
    document): only the summary does, once per fact type."""
    from factjudge.core.aggregate import Aggregator, doc_stats
    from factjudge.models import CategoryCounts

    near = judged([fact("g1", a="Jane", b="CEO", c="Acme"), fact("g9", "org", a="x")],
                  [fact("p1", a="Jane", b="CFO", c="Acme"), fact("p9", "org", a="y", b="z")],
                  {"g1": V("FN"), "g9": V("FN")}, {"p1": V("FP"), "p9": V("FP")})[0]
    split = judged([fact("g1", a="x", b="y", c="z")], [fact("p1", a="x", b="y", c="z"), fact("p2", a="x", b="y")],
                   {"g1": V("TP", "p1")}, {"p1": V("TP", "g1"), "p2": V("TP", "g1")})[0]
    merge = judged([fact("g1", a="x"), fact("g2", a="x")], [fact("p1", a="x")],
                   {"g1": V("TP", "p1"), "g2": V("TP", "p1")}, {"p1": V("TP", "g1")})[0]
    lines = [{**line, "doc_id": f"d{i}", "metrics": {}} for i, line in enumerate([near, split, merge, near])]
    expected: dict[str, CategoryCounts] = {}
    for line in lines:
        for t, c in count_categories(line).items():
            expected.setdefault(t, CategoryCounts()).add(c)
    made: list[object] = []
    init = CategoryCounts.__init__

    def counted(self: CategoryCounts, **data: Any) -> None:
        made.append(self)
        init(self, **data)

    monkeypatch.setattr(CategoryCounts, "__init__", counted)
    agg = Aggregator()
    for line in lines:
        agg.add(doc_stats(line))
    assert made == []
    summary = agg.summary(10, 0)
    assert summary.categories_by_fact_type == {t: expected[t] for t in ("org", "role")}
    assert summary.categories_by_fact_type["role"].near_miss_fields == {"b": 2}
    assert (summary.categories.near_miss, summary.categories.duplicate, summary.categories.merges,
            summary.categories.splits) == (2, 1, 1, 1)


def test_a_closeness_crosses_to_another_process_as_its_constructor_s_call(monkeypatch: Any) -> None:
    """Issue 39: a worker pickles each document's closest facts for the parent. Read back, a
    closeness is the same; it is built by its constructor, not by a frozen dataclass's __setstate__
    (a Python loop of object.__setattr__ per object: 126 -> 45 ms for 2,000 documents)."""
    import pickle

    from calls import count_calls

    near = Closeness((FieldCheck("a", True, 100.0), FieldCheck("b", False, 37.5)))
    states = count_calls(monkeypatch, FieldCheck, "__setstate__")
    states_c = count_calls(monkeypatch, Closeness, "__setstate__")
    back = pickle.loads(pickle.dumps({("gold", "g1"): ("p2", near)}, protocol=pickle.HIGHEST_PROTOCOL))
    assert back == {("gold", "g1"): ("p2", near)} and back[("gold", "g1")][1].key == near.key
    assert states[0] == states_c[0] == 0  # before: 2 and 1
