"""core/fields: field-level counts (issue 34 item 6), pure and property-tested: whatever the field
comparison answers, every gold value is counted once as correct, wrong or missing and every
predicted value once as correct, wrong or spurious; a linked pair's values are all correct."""
import copy
from collections import Counter

from hypo import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from factjudge.core.aggregate import DocStats, aggregate, doc_stats
from factjudge.core.fields import Match, align_facts, count_fields, field_counts, field_score
from factjudge.models import Analysis, NearMiss

FIELDS = ("a", "b", "items")

scalars = st.one_of(st.none(), st.integers(0, 3), st.sampled_from(["x", "y", "", " "]))
keys = st.sampled_from(["p", "q", "r"])
records = st.dictionaries(keys, st.one_of(scalars, st.lists(scalars, max_size=2), st.frozensets(scalars, max_size=2),
                                          st.dictionaries(keys, scalars, max_size=2)), max_size=3)
values = st.one_of(scalars, st.lists(st.one_of(scalars, records, st.lists(scalars, max_size=2)), max_size=4),
                   records, st.frozensets(scalars, max_size=3))
STATUSES = ("TP", "FN", "FP", "ERROR", "OUT_OF_SCOPE")


def _nothing(value):
    if isinstance(value, (list, frozenset)):
        return all(_nothing(v) for v in value)
    if isinstance(value, dict):
        return all(_nothing(v) for v in value.values())
    return value is None or value in ("", " ")


def walk(path, value, into):
    """The values of a fact at each path, counted independently of core/fields: null, a blank
    string and a list, set or record of no value are no value; a list's or set's items are at
    ``path[]``, a record's fields at ``path.key``."""
    if _nothing(value):
        return
    into[path] += 1
    if isinstance(value, (list, frozenset)):
        for item in value:
            walk(path + "[]", item, into)
    elif isinstance(value, dict):
        for key, x in value.items():
            walk(f"{path}.{key}", x, into)


def values_of(facts):
    out = Counter()
    for f in facts:
        if f["status"] in ("TP", "FN", "FP"):
            local = Counter()
            for name in FIELDS:
                walk(name, f.get(name), local)
            for path, n in local.items():
                out[(f["fact_type"], path)] += n
    return out


@st.composite
def documents(draw):
    def facts(prefix):
        n = draw(st.integers(0, 4))
        return [{"id": f"{prefix}{i}", "fact_type": draw(st.sampled_from(["t", "u"])),
                 "status": draw(st.sampled_from(STATUSES)),
                 **{k: draw(values) for k in FIELDS if draw(st.booleans())}} for i in range(n)]
    gold, predicted = facts("g"), facts("p")
    pred_ids = [p["id"] for p in predicted]
    for g in gold:  # links may name anything, even ids that are no TP prediction
        links = st.lists(st.sampled_from(pred_ids + ["nope"]), max_size=2)
        g["matched_ids"] = draw(links) if g["status"] == "TP" else []
    near = [NearMiss(fact_type="t", gold=g, predicted=p, score=50, agree=[], differ=[])
            for g, p in draw(st.lists(st.tuples(st.sampled_from([g["id"] for g in gold] + ["g9"]),
                                                st.sampled_from(pred_ids + ["p9"])), max_size=3))]
    return gold, predicted, Analysis(near_misses=near), draw(st.randoms(use_true_random=False))


def random_comparer(rng):
    """A field comparison answering anything: random verdicts, random (even invalid) alignments."""
    def match(g, p, depth=0):
        items = None
        if isinstance(g, list) and isinstance(p, list) and rng.random() < 0.8:
            pairs = [(rng.randrange(-1, len(g) + 1), rng.randrange(-1, len(p) + 1)) for _ in range(rng.randrange(4))]
            items = tuple((i, j, match(g[i] if 0 <= i < len(g) else None, p[j] if 0 <= j < len(p) else None,
                                       depth + 1)) for i, j in pairs)
        fields = {}
        if isinstance(g, dict) and isinstance(p, dict):
            fields = {k: match(g.get(k), p.get(k), depth + 1) for k in {*g, *p} if rng.random() < 0.7}
        return Match(rng.random() < 0.5, items=items, fields=fields)

    return lambda g, p, names: {n: match(g.get(n), p.get(n)) for n in names if rng.random() < 0.9}


@settings(max_examples=examples(400), deadline=None)
@given(documents())
def test_every_value_is_counted_once_whatever_the_comparison_says(doc):
    gold, predicted, analysis, rng = doc
    tally = count_fields(gold, predicted, analysis, lambda f: FIELDS, random_comparer(rng))
    gold_values, pred_values = values_of(gold), values_of(predicted)
    for key in {*gold_values, *pred_values, *((t, p) for t, paths in tally.items() for p in paths)}:
        c, w, m, s = tally.get(key[0], {}).get(key[1], [0, 0, 0, 0])
        assert c + w + m == gold_values[key], key
        assert c + w + s == pred_values[key], key


@settings(max_examples=examples(200), deadline=None)
@given(st.dictionaries(st.sampled_from(FIELDS), values, min_size=1), st.randoms(use_true_random=False))
def test_a_linked_pair_counts_every_value_correct(fields, rng):
    gold = {"id": "g", "fact_type": "t", "status": "TP", "matched_ids": ["p"], **fields}
    pred = {**copy.deepcopy(gold), "id": "p", "matched_ids": ["g"]}
    for name, value in fields.items():  # the items in another order: the comparison aligns them back
        if isinstance(value, list):
            order = list(range(len(value)))
            rng.shuffle(order)
            pred[name] = [value[i] for i in order]

    def aligning(g, p, names):  # aligns every item, says every one differs: a link overrides that
        out = {}
        for n in names:
            if not isinstance(g[n], list):  # a record or set: says it differs, fields and items by position
                out[n] = Match(False)
                continue
            back = {i: j for j, i in enumerate(order_of(g[n], p[n]))}
            out[n] = Match(False, items=tuple((i, back[i], Match(False)) for i in range(len(g[n]))))
        return out

    def order_of(g, p):
        left = list(range(len(g)))
        out = []
        for item in p:
            k = next(k for k in left if g[k] == item)
            left.remove(k)
            out.append(k)
        return out

    tally = count_fields([gold], [pred], Analysis(), lambda f: FIELDS, aligning)
    assert tally  # something was counted
    for paths in tally.values():
        for path, (c, w, m, s) in paths.items():
            assert (w, m, s) == (0, 0, 0) and c > 0, path


def test_facts_align_by_link_first_then_near_miss_one_to_one():
    gold = [{"id": "g1", "fact_type": "t", "status": "TP", "matched_ids": ["p1", "p2"]},
            {"id": "g2", "fact_type": "t", "status": "TP", "matched_ids": ["p1"]},  # p1 taken: unaligned
            {"id": "g3", "fact_type": "t", "status": "FN"},
            {"id": "g4", "fact_type": "t", "status": "ERROR"}]
    predicted = [{"id": "p1", "fact_type": "t", "status": "TP"}, {"id": "p2", "fact_type": "t", "status": "TP"},
                 {"id": "p3", "fact_type": "t", "status": "FP"}, {"id": "p4", "fact_type": "t", "status": "FP"}]
    near = Analysis(near_misses=[NearMiss(fact_type="t", gold="g3", predicted="p3", score=60, agree=[], differ=[])])
    pairs, alone_g, alone_p = align_facts(gold, predicted, near)
    assert [(g["id"], p["id"], linked) for g, p, linked in pairs] == [("g1", "p1", True), ("g3", "p3", False)]
    assert [g["id"] for g in alone_g] == ["g2"]
    assert [p["id"] for p in alone_p] == ["p2", "p4"]


def invoice(fid, status, items, **rest):
    return {"id": fid, "fact_type": "invoice", "status": status, "line_items": items, **rest}


def test_a_near_miss_invoice_counts_items_and_item_fields():
    gold = [invoice("g1", "FN", [{"sku": "A", "qty": 1}, {"sku": "B", "qty": 2}, {"sku": "C", "qty": 3}],
                    total=10, vendor="N")]
    pred = [invoice("p1", "FP", [{"sku": "B", "qty": 5}, {"sku": "A", "qty": 1}], total=11, vendor="N")]
    near = Analysis(near_misses=[NearMiss(fact_type="invoice", gold="g1", predicted="p1", score=60,
                                          agree=["vendor"], differ=["total", "line_items"])])

    def compare(g, p, names):  # item B's qty differs, item C has no partner
        return {"total": Match(False), "vendor": Match(True),
                "line_items": Match(False, items=((0, 1, Match(True)), (1, 0, Match(False, fields={
                    "sku": Match(True), "qty": Match(False)}))))}

    tally = count_fields(gold, pred, near, lambda f: ["vendor", "total", "line_items"], compare)
    assert tally == {"invoice": {
        "vendor": [1, 0, 0, 0], "total": [0, 1, 0, 0], "line_items": [0, 1, 0, 0],
        "line_items[]": [1, 1, 1, 0], "line_items[].sku": [2, 0, 1, 0], "line_items[].qty": [1, 1, 1, 0]}}


def test_a_field_named_like_a_path_is_counted_apart_from_that_path():
    """A column literally named ``line_items[].sku`` was summed into the skus of the items (its
    value counted as a third sku); so was an item's key ``tags[]`` into the items of its list
    ``tags``. Such a name is written as a JSON string, a path of its own."""
    items = [{"sku": "A", "tags": ["x"], "tags[]": "y"}, {"sku": "B"}]
    gold = [invoice("g1", "TP", items, matched_ids=["p1"], **{"line_items[].sku": "Z", '"q"': 1})]
    pred = [invoice("p1", "TP", copy.deepcopy(items), **{"line_items[].sku": "Z", '"q"': 1})]

    def compare(g, p, names):
        return {"line_items": Match(True, items=((0, 0, Match(True)), (1, 1, Match(True))))}

    fields = ["line_items", "line_items[].sku", '"q"']
    tally = count_fields(gold, pred, Analysis(), lambda f: fields, compare)
    assert tally == {"invoice": {
        "line_items": [1, 0, 0, 0], "line_items[]": [2, 0, 0, 0], "line_items[].sku": [2, 0, 0, 0],
        "line_items[].tags": [1, 0, 0, 0], "line_items[].tags[]": [1, 0, 0, 0],
        'line_items[]."tags[]"': [1, 0, 0, 0], '"line_items[].sku"': [1, 0, 0, 0], '"\\"q\\""': [1, 0, 0, 0]}}


def test_field_scores_over_a_run_with_intervals():
    lines = []
    for k in range(6):
        tally = {"invoice": {"total": [1, 0, 0, 0] if k % 2 else [0, 1, 0, 1]}}
        lines.append(DocStats(doc_id=str(k), counts=dict.fromkeys(
            ("tp_gold", "fn", "tp_predicted", "fp", "errors", "out_of_scope_gold", "out_of_scope_predicted"), 0),
            by_type={}, conflicts={}, usage={}, fields=tally))
    summary = aggregate(lines, resamples=200)
    total = summary.fields["invoice"]["total"]
    assert (total.correct, total.wrong, total.missing, total.spurious) == (3, 3, 0, 3)
    assert total.precision == 3 / 9 and total.recall == 3 / 6
    low, high = total.ci95["recall"]
    assert 0 <= low <= 0.5 <= high <= 1


def test_a_result_line_keeps_its_counts_and_an_old_line_has_none():
    stored = field_counts({"invoice": {"total": [1, 2, 3, 4]}})
    line = {"doc_id": "d", "metrics": {}, "analysis": Analysis(fields=stored).model_dump(mode="json")}
    assert doc_stats(line).fields == {"invoice": {"total": [1, 2, 3, 4]}}
    assert doc_stats({"doc_id": "d", "metrics": {}}).fields == {}


def test_undefined_ratios_are_none():
    only_missing = field_score([0, 0, 2, 0])
    assert only_missing.precision is None and only_missing.recall == 0.0 and only_missing.f1 is None


def naive_intervals(per_doc, resamples, seed):
    """Per path, the bootstrap the slow way: each resample's sums path by path."""
    import random as _random

    from factjudge.core.aggregate import _interval
    n = len(per_doc)
    rng = _random.Random(seed)
    paths = sorted({p for doc in per_doc for p in doc})
    samples = {p: {"precision": [], "recall": [], "f1": []} for p in paths}
    for _ in range(resamples):
        idx = rng.choices(range(n), k=n)
        for p in paths:
            c, w, m, s = (sum(per_doc[i].get(p, (0, 0, 0, 0))[k] for i in idx) for k in range(4))
            for name, v in zip(("precision", "recall", "f1"), field_score([c, w, m, s]).model_dump(
                    include={"precision", "recall", "f1"}).values(), strict=True):
                if v is not None:
                    samples[p][name].append(v)
    return {p: {k: _interval(v, 0.95) for k, v in r.items()} for p, r in samples.items()}


@settings(max_examples=examples(30), deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from([f"f{i}" for i in range(40)]),
                                st.tuples(*[st.integers(0, 6)] * 4), max_size=40), min_size=1, max_size=8))
def test_the_packed_field_bootstrap_is_the_naive_one(per_doc):
    # 40 paths: more than one packed integer per document (32 paths each)
    stats = [DocStats(doc_id=str(i), counts=dict.fromkeys(
        ("tp_gold", "fn", "tp_predicted", "fp", "errors", "out_of_scope_gold", "out_of_scope_predicted"), 0),
        by_type={}, conflicts={}, usage={}, fields={"t": {p: list(c) for p, c in doc.items()}})
        for i, doc in enumerate(per_doc)]
    summary = aggregate(stats, resamples=50, seed=3)
    got = {p: c.ci95 for p, c in summary.fields.get("t", {}).items()}
    assert got == naive_intervals(per_doc, 50, 3)


def test_a_document_s_field_counts_are_validated_at_once(monkeypatch):
    """Issue 39: the counts are validated as one value, not a FieldCounts(...) each (twice the
    cost); the same models, each holding its four counts as set."""
    from calls import count_calls

    from factjudge.models import FieldCounts

    built = count_calls(monkeypatch, FieldCounts, "__init__")
    out = field_counts({"revenue": {"value": [1, 0, 2, 0], "company": [3, 1, 0, 1]}, "ceo": {"person": [0, 0, 0, 4]}})
    assert built[0] == 0  # before: 3, one a path
    assert list(out) == ["ceo", "revenue"] and list(out["revenue"]) == ["company", "value"]
    assert out["revenue"]["company"] == FieldCounts(correct=3, wrong=1, missing=0, spurious=1)
    assert out["revenue"]["value"].model_fields_set == {"correct", "wrong", "missing", "spurious"}
