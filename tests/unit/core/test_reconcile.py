import pytest
from hypo import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from factjudge.core.metrics import compute_metrics, f1_score
from factjudge.core.reconcile import PassVerdict as V
from factjudge.core.reconcile import reconcile


def test_mutual_match():
    r = reconcile(["g1"], ["p1"], {"g1": V("TP", "p1")}, {"p1": V("TP", "g1")})
    assert (r.gold["g1"].status, r.gold["g1"].matched_ids) == ("TP", ["p1"])
    assert (r.predicted["p1"].status, r.predicted["p1"].matched_ids) == ("TP", ["g1"])
    assert r.notes == []


def test_gold_only_link_dropped_when_predicted_says_fp():
    r = reconcile(["g1"], ["p1"], {"g1": V("TP", "p1")}, {"p1": V("FP")})
    assert r.gold["g1"].status == "FN" and r.predicted["p1"].status == "FP"
    assert r.gold["g1"].matched_ids == [] == r.predicted["p1"].matched_ids
    assert len(r.notes) == 1 and "predicted side decides" in r.notes[0]
    assert r.gold["g1"].notes == r.predicted["p1"].notes == r.notes


def test_gold_only_link_kept_when_predicted_matched_another_gold():
    r = reconcile(["g1", "g2"], ["p1"], {"g1": V("TP", "p1"), "g2": V("TP", "p1")},
                  {"p1": V("TP", "g2")})
    assert r.gold["g1"].status == r.gold["g2"].status == "TP"
    assert r.predicted["p1"].matched_ids == ["g1", "g2"]
    assert r.notes == []


def test_gold_only_link_kept_when_predicted_errored():
    r = reconcile(["g1"], ["p1"], {"g1": V("TP", "p1")}, {"p1": V("ERROR")})
    assert r.gold["g1"].status == "TP" and r.gold["g1"].matched_ids == ["p1"]
    assert r.predicted["p1"].status == "ERROR" and r.predicted["p1"].matched_ids == ["g1"]


def test_predicted_only_link_promotes_fn_gold():
    r = reconcile(["g1"], ["p1"], {"g1": V("FN")}, {"p1": V("TP", "g1")})
    assert r.gold["g1"].status == "TP" and r.predicted["p1"].status == "TP"
    assert "promoted" in r.gold["g1"].notes[0]
    assert r.conflicts == {"gold_promoted_by_predicted": 1}


def test_duplicate_predictions_keep_mutual():
    # g1 named p2; p1, p2, p3 all name g1: mutual (g1, p2) wins over earlier p1
    r = reconcile(["g1"], ["p1", "p2", "p3"], {"g1": V("TP", "p2")},
                  {"p1": V("TP", "g1"), "p2": V("TP", "g1"), "p3": V("TP", "g1")})
    assert r.gold["g1"].matched_ids == ["p2"]
    assert [r.predicted[p].status for p in ("p1", "p2", "p3")] == ["FP", "TP", "FP"]
    assert r.notes == ["predicted p1 dropped: duplicate of p2 for gold g1",
                       "predicted p3 dropped: duplicate of p2 for gold g1"]
    assert r.predicted["p1"].notes == ["predicted p1 dropped: duplicate of p2 for gold g1"]


def test_duplicate_predictions_keep_earliest_when_gold_named_none():
    r = reconcile(["g1"], ["p1", "p2"], {"g1": V("FN")}, {"p1": V("TP", "g1"), "p2": V("TP", "g1")})
    assert r.gold["g1"].matched_ids == ["p1"]
    assert r.predicted["p2"].status == "FP"
    assert "duplicate of p1 for gold g1" in r.predicted["p2"].notes[-1]


def test_duplicate_keeps_the_one_gold_named_when_not_mutual():
    # g1 named p2, but p2 matched g2 (kept because TP->another gold); p1 named g1
    r = reconcile(["g1", "g2"], ["p1", "p2"], {"g1": V("TP", "p2"), "g2": V("TP", "p2")},
                  {"p1": V("TP", "g1"), "p2": V("TP", "g2")})
    assert r.gold["g1"].matched_ids == ["p2"]
    assert r.predicted["p1"].status == "FP"


def test_one_to_one_keeps_one_gold_per_prediction():
    gv = {"g1": V("TP", "p1"), "g2": V("TP", "p1")}
    pv = {"p1": V("TP", "g2")}
    assert reconcile(["g1", "g2"], ["p1"], gv, pv).predicted["p1"].matched_ids == ["g1", "g2"]
    r = reconcile(["g1", "g2"], ["p1"], gv, pv, one_to_one=True)
    assert r.predicted["p1"].matched_ids == ["g2"]
    assert r.gold["g1"].status == "FN" and r.gold["g2"].status == "TP"
    assert r.notes == ["gold g1 dropped: duplicate of g2 for predicted p1"]


def test_error_claims_nothing_and_stays_error():
    r = reconcile(["g1"], ["p1"], {"g1": V("ERROR")}, {"p1": V("FP")})
    assert r.gold["g1"].status == "ERROR" and r.predicted["p1"].status == "FP"


def test_metrics_counts_and_ratios():
    m = compute_metrics([("a", "TP"), ("a", "FN"), ("b", "ERROR"), ("c", "OUT_OF_SCOPE")],
                        [("a", "TP"), ("b", "FP"), ("b", "FP"), ("a", "ERROR")])
    assert (m.tp_gold, m.fn, m.tp_predicted, m.fp, m.errors) == (1, 1, 1, 2, 2)
    assert (m.out_of_scope_gold, m.out_of_scope_predicted) == (1, 0)
    assert m.precision == 1 / 3 and m.recall == 0.5 and m.f1 == f1_score(1 / 3, 0.5)
    assert set(m.by_fact_type) == {"a", "b"}
    assert m.by_fact_type["b"].precision == 0.0 and m.by_fact_type["b"].recall is None
    empty = compute_metrics([], [])
    assert empty.precision is None and empty.recall is None and empty.f1 is None


@st.composite
def verdict_sets(draw):
    n_g = draw(st.integers(0, 6))
    n_p = draw(st.integers(0, 6))
    gold = [f"g{i}" for i in range(n_g)]
    pred = [f"p{i}" for i in range(n_p)]

    def verdicts(ids, others, negative):
        out = {}
        for i in ids:
            kind = draw(st.sampled_from(["TP", negative, "ERROR"] if others else [negative, "ERROR"]))
            out[i] = V("TP", draw(st.sampled_from(others))) if kind == "TP" else V(kind)
        return out

    return gold, pred, verdicts(gold, pred, "FN"), verdicts(pred, gold, "FP"), draw(st.booleans())


@pytest.mark.slow
@settings(max_examples=examples(400), deadline=None)
@given(verdict_sets())
def test_reconciliation_invariants(case):
    gold, pred, gv, pv, one_to_one = case
    r = reconcile(gold, pred, gv, pv, one_to_one)
    assert list(r.gold) == gold and list(r.predicted) == pred
    for g, o in r.gold.items():
        assert o.status in ({"ERROR"} if gv[g].status == "ERROR" else {"TP", "FN"})
        assert len(o.matched_ids) <= 1
        assert (o.status == "TP") == bool(o.matched_ids) or o.status == "ERROR"
    for p, o in r.predicted.items():
        assert o.status in ({"ERROR"} if pv[p].status == "ERROR" else {"TP", "FP"})
        assert (o.status == "TP") == bool(o.matched_ids) or o.status == "ERROR"
        if one_to_one:
            assert len(o.matched_ids) <= 1
        # a prediction judged FP never keeps a link it did not name
        if pv[p].status == "FP":
            assert o.matched_ids == []
    links_g = {(g, p) for g, o in r.gold.items() for p in o.matched_ids}
    links_p = {(g, p) for p, o in r.predicted.items() for g in o.matched_ids}
    assert links_g == links_p  # symmetric
    for g, p in links_g:  # every kept link was named by at least one side
        assert gv[g] == V("TP", p) or pv[p] == V("TP", g)
    for p in pred:  # a prediction's own TP claim survives unless a duplicate of a better link
        if pv[p].status == "TP" and not one_to_one:
            g = pv[p].matched_id
            assert (g, p) in links_g or any(
                "duplicate" in n for n in r.predicted[p].notes)
    again = reconcile(gold, pred, gv, pv, one_to_one)
    assert again == r  # deterministic


# --------------------------------------------------------------------------- link_policy "both"


def test_both_drops_a_predicted_only_link_instead_of_promoting():
    # the #23 case: the gold pass said FN (correctly), the predicted pass named it
    gv, pv = {"g1": V("FN")}, {"p1": V("TP", "g1")}
    assert reconcile(["g1"], ["p1"], gv, pv).gold["g1"].status == "TP"
    r = reconcile(["g1"], ["p1"], gv, pv, link_policy="both")
    assert (r.gold["g1"].status, r.predicted["p1"].status) == ("FN", "FP")
    assert r.gold["g1"].matched_ids == [] == r.predicted["p1"].matched_ids
    assert r.conflicts == {"one_sided_link_dropped": 1}
    assert r.gold["g1"].notes == r.predicted["p1"].notes == [
        "predicted p1 named gold g1 as its match, but gold g1 was judged FN; link_policy both "
        "needs both passes to name a link, link dropped"]


def test_both_drops_a_gold_only_link_kept_by_either():
    gv = {"g1": V("TP", "p1"), "g2": V("TP", "p1")}
    pv = {"p1": V("TP", "g2")}
    r = reconcile(["g1", "g2"], ["p1"], gv, pv, link_policy="both")
    assert r.gold["g1"].status == "FN" and r.gold["g2"].status == "TP"
    assert r.predicted["p1"].matched_ids == ["g2"]
    assert "judged TP -> g2" in r.gold["g1"].notes[0]


def test_both_drops_a_link_to_an_error_fact():
    r = reconcile(["g1"], ["p1"], {"g1": V("TP", "p1")}, {"p1": V("ERROR")}, link_policy="both")
    assert r.gold["g1"].status == "FN" and r.gold["g1"].matched_ids == []
    assert r.predicted["p1"].status == "ERROR" and r.predicted["p1"].matched_ids == []


def _tp(r):
    return (sum(o.status == "TP" for o in r.gold.values()),
            sum(o.status == "TP" for o in r.predicted.values()))


@pytest.mark.slow
@settings(max_examples=examples(400), deadline=None)
@given(verdict_sets())
def test_both_never_counts_more_tp_than_either(case):
    gold, pred, gv, pv, one_to_one = case
    either = reconcile(gold, pred, gv, pv, one_to_one)
    both = reconcile(gold, pred, gv, pv, one_to_one, link_policy="both")
    tp_e, tp_b = _tp(either), _tp(both)
    assert tp_b[0] <= tp_e[0] and tp_b[1] <= tp_e[1]
    links_e = {(g, p) for g, o in either.gold.items() for p in o.matched_ids}
    links_b = {(g, p) for g, o in both.gold.items() for p in o.matched_ids}
    assert links_b <= links_e
    assert all(gv[g] == V("TP", p) and pv[p] == V("TP", g) for g, p in links_b)  # mutual only
    one_sided = [(g, gv[g].matched_id) for g in gold if gv[g].status == "TP"
                 if pv[gv[g].matched_id] != V("TP", g)]
    one_sided += [(pv[p].matched_id, p) for p in pred if pv[p].status == "TP"
                  if gv[pv[p].matched_id] != V("TP", p)]
    if not one_sided:  # the passes agree: the policies give the very same outcome
        assert both == either
    else:
        assert sum(both.conflicts.get(k, 0) for k in ("one_sided_link_dropped",
                                                      "gold_link_rejected_by_predicted")) == len(one_sided)
