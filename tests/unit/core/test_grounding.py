"""core/grounding: a fact's evidence in its text (span, else every value found), the pieces the
document view marks, the counts of summary.json's ``source`` (issue #35 item 3). The search is
injected: here plain substring search, so the rules of this module are tested on their own."""
from factjudge.core.grounding import FOUND, NOT_FOUND, SourceCounts, ground, searchable_values, segments


def plain(text):
    def find(value):
        out, i = [], text.find(value)
        while i >= 0:
            out.append((i, i + len(value)))
            i = text.find(value, i + 1)
        return out
    return find


TEXT = "aspirin 100 mg, then aspirin again"


def test_a_span_the_extractor_gives_is_the_evidence_and_no_search_is_made():
    fact = {"id": "p1", "fact_type": "drug", "text": "not searched", "evidence": {"start": 0, "end": 7}}
    g = ground(fact, TEXT, lambda v: (_ for _ in ()).throw(AssertionError("searched")))
    assert (g.found, g.spans, g.ungrounded, g.tag) == (True, ((0, 7),), False, FOUND)


def test_a_span_outside_the_text_is_not_trusted_the_values_are_searched():
    fact = {"id": "p1", "fact_type": "drug", "name": "aspirin", "evidence": {"start": 30, "end": 99}}
    assert ground(fact, TEXT, plain(TEXT)).spans == ((0, 7), (21, 28))


def test_a_value_found_twice_is_marked_twice_and_every_value_must_be_found():
    fact = {"id": "p1", "fact_type": "drug", "name": "aspirin", "dose": "100 mg"}
    g = ground(fact, TEXT, plain(TEXT))
    assert g.found and g.spans == ((0, 7), (8, 14), (21, 28))
    half = {"id": "p2", "fact_type": "drug", "name": "aspirin", "dose": "500 mg"}
    g = ground(half, TEXT, plain(TEXT))
    assert (g.found, g.tag) == (False, NOT_FOUND) and g.spans == ((0, 7), (21, 28))  # what is there is marked


def test_a_value_not_found_and_a_fact_without_values_are_not_found():
    assert not ground({"id": "p", "fact_type": "drug", "name": "ibuprofen"}, TEXT, plain(TEXT)).found
    assert not ground({"id": "p", "fact_type": "drug", "flag": True, "name": None}, TEXT, plain(TEXT)).found


def test_an_extraction_without_a_span_is_ungrounded_even_when_its_value_is_found():
    fact = {"id": "p", "fact_type": "drug", "name": "aspirin", "evidence": {"extraction_index": 2}}
    g = ground(fact, TEXT, plain(TEXT))
    assert g.ungrounded and g.found


def test_searched_values_are_the_compared_ones_numbers_and_list_items_included():
    fact = {"id": "x", "fact_type": "t", "status": "FP", "reasoning": "r", "evidence": {"start": 1},
            "a": "one", "b": 2.5, "c": ["one", "three", True], "d": "  ", "e": False}
    assert searchable_values(fact) == ["one", "2.5", "three"]


def test_overlapping_spans_cut_the_text_into_pieces_marked_by_each_fact_that_covers_them():
    assert segments("abcdefgh", [((1, 5), "g0"), ((3, 7), "p1"), ((3, 5), "p2")]) == [
        ("a", []), ("bc", ["g0"]), ("de", ["g0", "p1", "p2"]), ("fg", ["p1"]), ("h", [])]
    # the same span twice, a span past the end, an empty span
    assert segments("abc", [((0, 1), "g0"), ((0, 1), "g0"), ((2, 9), "p0"), ((1, 1), "p1")]) == [
        ("a", ["g0"]), ("b", []), ("c", ["p0"])]


def test_pieces_are_cut_by_code_points_and_join_to_the_text_whatever_its_script():
    text = "😀 María 東京 aspirin"
    start = text.index("aspirin")  # 12 code points in, 13 UTF-16 units: the page never sees offsets
    pieces = segments(text, [((start, start + 7), "p0"), ((2, 7), "g0")])
    assert "".join(p for p, _ in pieces) == text
    assert [p for p, keys in pieces if keys] == ["María", "aspirin"]


def test_source_counts_count_per_type_and_list_the_fp_found_as_possible_gold_omissions():
    counts = SourceCounts("inputs")
    made = []

    def find(text):
        made.append(text)
        return plain(text)

    facts = [{"id": "p1", "fact_type": "drug", "name": "aspirin", "status": "TP"},
             {"id": "p2", "fact_type": "drug", "name": "aspirin", "status": "FP"},
             {"id": "p3", "fact_type": "dose", "v": "9 mg", "status": "FP", "evidence": {"extraction_index": 1}},
             {"id": "p4", "fact_type": "dose", "v": "100 mg", "status": "OUT_OF_SCOPE"}]
    out = counts.add("d1", facts, TEXT, find)
    counts.add("d2", facts, None, find)
    s = counts.summary
    assert (s.documents, s.documents_without_text) == (1, 1)
    assert s.found.by_fact_type == {"drug": 2} and s.not_found.by_fact_type == {"dose": 1}
    assert s.possible_gold_omissions.model_dump() == {"total": 1, "by_fact_type": {"drug": 1}}
    assert s.ungrounded.model_dump() == {"total": 1, "by_fact_type": {"dose": 1}}
    assert counts.omission_keys == {("d1", "p2")} and [f["id"] for _, f in counts.omissions] == ["p2"]
    assert set(out) == {"p1", "p2", "p3"} and made == [TEXT]  # one finder per document
