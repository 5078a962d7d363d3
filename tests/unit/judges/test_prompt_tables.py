"""Facts are written in prompts as tables (prompt format 4, issue #25): the field names once per
fact_type, values bare where they cannot be misread. Read back by the scripted server's own parser,
the tables give back the facts exactly: ids, missing fields vs nulls, numbers vs strings, values
holding the separator, quotes or line breaks."""
from __future__ import annotations

import json

from hypo import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from scripted_server import describe, prompt_facts, read_tables

from factjudge.judges.base import JudgeTask
from factjudge.judges.llm.prompts import (
    CELL_NOTES,
    CELL_SEPARATOR,
    Asked,
    candidates_message,
    cell_notes,
    direction_prefix,
    fact_tables,
    subject_message,
)
from factjudge.models import JudgeConfig
from factjudge.util.jsonutil import canonical_json

# text likely to collide with the format: separators, quotes, brackets, JSON literals, the table head
tricky = st.sampled_from(["", " ", "|", " | ", "a | b", '"', '"x"', "[", "{}", "[1]", "12", "-0.5", "1e5", "true",
                          "null", "NaN", "fact_type: x", "fact_type:", "id", "\n", "a\nb", "\t", " x", "x ",
                          "é", "\u2028",
                          "01", "1.", "-", "-0", "1E+5", "-Infinity", "Infinity", "\u0663", "\x7f", "truex"])
text = st.one_of(tricky, st.text(max_size=12), st.text(alphabet="ab |\"'[]{}:\\\n0123.-e", max_size=8))
scalar = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12),
                   st.floats(allow_nan=False, allow_infinity=False), text)
value = st.recursive(scalar, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                     st.dictionaries(text, inner, max_size=3)), max_leaves=4)
field_name = text.filter(lambda k: k not in ("id", "fact_type"))


@st.composite
def fact_lists(draw):
    types = draw(st.lists(st.one_of(text, st.none()), min_size=1, max_size=3))
    facts = []
    for i in range(draw(st.integers(0, 8))):
        fact = {"id": draw(st.one_of(text, st.just(f"c{i}")))}
        fact_type = draw(st.sampled_from(types))
        if fact_type is not None:  # None here: a fact without any fact_type
            fact["fact_type"] = fact_type
        fact.update(draw(st.dictionaries(field_name, value, max_size=4)))
        facts.append(fact)
    return facts


def grouped(facts):
    """The facts in the order the tables show them: by fact_type in order of first appearance."""
    order = {}
    for f in facts:
        order.setdefault(canonical_json(f.get("fact_type")) if "fact_type" in f else None, len(order))
    return sorted(facts, key=lambda f: order[canonical_json(f.get("fact_type")) if "fact_type" in f else None])


@settings(max_examples=examples(150), deadline=None)
@given(fact_lists())
def test_tables_read_back_as_the_facts_they_were_written_from(facts):
    written = fact_tables(facts)
    assert read_tables(written) == grouped(facts)
    # one line per fact and two per table: a value never breaks a line
    assert len(written.split("\n")) == (len(facts) + 2 * len({canonical_json(f.get("fact_type", [None]))
                                                              for f in facts}) if facts else 1)


@settings(max_examples=examples(50), deadline=None)
@given(fact_lists(), fact_lists())
def test_different_facts_are_written_differently(a, b):
    if grouped(a) != grouped(b):
        assert fact_tables(a) != fact_tables(b)


def test_field_names_are_written_once_per_fact_type_and_values_bare_where_they_can_be():
    cands = [{"id": "p1", "fact_type": "revenue", "entity": "Contoso", "value": "1,200", "year": 2023},
             {"id": "p2", "fact_type": "ceo", "entity": "Fabrikam", "person": "A | B"},
             {"id": "p3", "fact_type": "revenue", "entity": "Contoso", "value": None, "year": "2023"},
             {"id": "p4", "fact_type": "revenue", "entity": "Northwind"}]
    assert candidates_message("gold", cands) == "\n".join([
        "In the tables, an empty cell is a missing field; a quoted cell is a JSON string; null, true, false and "
        "numbers are JSON.",
        "PREDICTED facts (candidates):",
        "fact_type: revenue",
        "id | entity | value | year",
        "p1 | Contoso | 1,200 | 2023",          # the number 2023
        'p3 | Contoso | null | "2023"',         # null, and the string "2023"
        "p4 | Northwind |  | ",                 # no value, no year
        "fact_type: ceo",
        "id | entity | person",
        'p2 | Fabrikam | "A | B"'])
    assert subject_message("predicted", cands[1]) == ('PREDICTED fact to judge (a quoted cell is a JSON string):\n'
                                                      'fact_type: ceo\nid | entity | person\np2 | Fabrikam | "A | B"')
    assert CELL_SEPARATOR == " | "


def test_a_judge_request_reads_back_through_the_scripted_server():
    cfg = JudgeConfig()
    cands = [{"id": "12", "fact_type": "t", "v": 12}, {"id": "p | 2", "fact_type": "t", "v": "x"}]
    subject = {"id": "fact_type: g", "fact_type": "t", "v": "12"}
    task = Asked(JudgeTask("gold", subject, cands, cfg), direction_prefix("gold", cands, cfg))
    body = {"messages": task.messages()}
    assert prompt_facts(body) == ("gold", subject, cands)
    assert describe(body) == ("gold", "fact_type: g", ["12", "p | 2"])
    # how to read them: the candidates' cells in the shared prefix, the subject's with the subject
    assert task.messages()[1]["content"].startswith(
        "In the tables, a quoted cell is a JSON string; null, true, false and numbers are JSON.\n")
    assert task.messages()[2]["content"].startswith("GOLD fact to judge (a quoted cell is a JSON string):\n")


def test_a_prompt_explains_only_the_kinds_of_cell_its_tables_hold():
    """Half of WebNLG's documents hold only bare strings: their prompts carry no legend at all."""
    bare = [{"id": "t1", "fact_type": "triple", "subject": "Alan_Bean", "object": "Wheeler,_Texas"}]
    assert cell_notes(bare) == ""
    assert candidates_message("gold", bare).startswith("PREDICTED facts (candidates):\n")
    assert subject_message("gold", bare[0]).startswith("GOLD fact to judge:\n")
    assert cell_notes([{"id": "t1", "fact_type": "triple", "object": "1995"}]) == "a quoted cell is a JSON string"
    assert cell_notes([{"id": "t1", "fact_type": "triple", "object": 1995}]) == "null, true, false and numbers are JSON"
    assert cell_notes([{"id": "t1", "fact_type": "t", "a": "x"}, {"id": "t2", "fact_type": "t", "b": "y"}]) == (
        "an empty cell is a missing field")  # t1 has no b, t2 no a
    assert cell_notes([{"id": "t1", "a": "x"}]) == "an empty cell is a missing field"  # no fact_type: an empty cell
    assert cell_notes([{"id": "t1", "fact_type": "t", "a b |": "x"}]) == "a quoted cell is a JSON string"  # the head
    # a field that is not compared is not shown, nor explained
    assert cell_notes([{"id": "t1", "fact_type": "t", "a": "x", "page": 3}], {"t": ("a",)}) == ""


def _cells(line):
    """A table row's cells as a reader splits them: a cell opening with '"', '[' or '{' is JSON and
    ends where its value does (it may hold " | " itself: hypothesis found {"k": " | "}); any other
    cell is a bare string, which never holds "|"."""
    cells, i = [], 0
    while True:
        end = _json_end(line, i) if line[i:i + 1] in ('"', "[", "{") else line.find(" | ", i)
        end = len(line) if end == -1 else end
        cells.append(line[i:end])
        if not line.startswith(" | ", end):
            return cells
        i = end + 3


def _json_end(line, i):
    """Where the JSON value opening at ``i`` ends (one past its last character)."""
    depth, in_string, escaped = 0, False, False
    for k in range(i, len(line)):
        ch = line[k]
        if in_string:
            escaped, in_string = (False, True) if escaped else (ch == "\\", ch != '"')
            if not in_string and depth == 0:
                return k + 1
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
            if depth == 0:
                return k + 1
    return len(line)


def test_cells_are_split_outside_json():
    assert _cells('a | {"k":" | "} | "x | y" | ab"c | [1, "]"] | ') == [
        "a", '{"k":" | "}', '"x | y"', 'ab"c', '[1, "]"]', ""]


def _kind_of(cell):
    """The CELL_NOTES kind a written cell needs, read from the cell alone ("" for a bare string:
    one that is not JSON)."""
    if cell == "" or cell.startswith('"'):
        return "empty" if cell == "" else "quoted"
    try:
        json.loads(cell)
    except ValueError:
        return ""
    return "json"


@settings(max_examples=examples(100), deadline=None)
@given(fact_lists())
def test_the_notes_name_exactly_the_kinds_of_cell_the_tables_hold(facts):
    """Every cell that is not a bare string is explained, and nothing else (the tables and their
    notes are written in one pass: prompts.written_facts)."""
    lines = fact_tables(facts).split("\n") if facts else []
    held = {_kind_of(c) for line in lines for c in _cells(line.removeprefix("fact_type: "))}
    assert cell_notes(facts) == "; ".join(note for kind, note in CELL_NOTES.items() if kind in held)


def test_answers_and_finished_documents_of_another_prompt_format_are_not_reused(server, tmp_path, monkeypatch):
    """The format version is part of the response-cache key and of eval's input hash: an answer
    given to a prompt written the old way is never taken for the new prompt's."""
    import factjudge.judges.llm.judge as llm_judge
    from factjudge import LLMJudge, ResponseCache, run_judge
    from factjudge.evaluation.runner import input_salt
    from factjudge.judges.llm import RetryPolicy

    gold = [{"id": "g1", "fact_type": "t", "v": "a"}]
    pred = [{"id": "p1", "fact_type": "t", "v": "a"}]
    server.truth = {("gold", "g1"): "p1", ("predicted", "p1"): "g1"}
    cache = ResponseCache(tmp_path / "c")

    def judge():
        return LLMJudge("m", base_url=server.base_url, retry=RetryPolicy(backoff=0.01), cache=cache)

    assert run_judge(gold, pred, {}, judge()).usage.llm_calls == 2
    assert run_judge(gold, pred, {}, judge()).usage.cache_hits == 2
    salt = input_salt(JudgeConfig(), judge())
    monkeypatch.setattr(llm_judge, "PROMPT_FORMAT_VERSION", "3")
    assert run_judge(gold, pred, {}, judge()).usage.llm_calls == 2
    import factjudge.evaluation.runner as runner
    monkeypatch.setattr(runner, "PROMPT_FORMAT_VERSION", "3")
    assert input_salt(JudgeConfig(), judge()) != salt


def test_a_prompt_shows_the_compared_fields_in_the_gold_facts_order_and_no_metadata():
    """Format 5: the columns of a fact_type are the fields compared (the gold facts', in their
    order), so a prediction's metadata (``confidence``, ``page``) costs no tokens and the prompt
    needs no list of fields to compare; with ``fields`` set, every field is shown and the list is."""
    from factjudge.evaluation.pipeline import questions

    gold = [{"id": "g1", "fact_type": "triple", "subject": "Ada", "property": "birthPlace", "object": "London"}]
    pred = [{"id": "p1", "fact_type": "triple", "object": "London", "confidence": 0.9, "subject": "Ada",
             "property": "born in", "page": 3},
            {"id": "p2", "fact_type": "person", "name": "Ada", "page": 4}]  # a type no gold fact has
    def messages(questions, subject):
        prefix = direction_prefix(questions.direction, questions.candidates, questions.config, "", questions.fields)
        return Asked(questions.task(subject), prefix).messages()

    asked = {q.direction: messages(q, subjects[0]) for q, subjects in questions(gold, pred, JudgeConfig())}
    gold_side, pred_side = asked["gold"], asked["predicted"]
    assert gold_side[1]["content"].split("\n")[2:] == [
        "fact_type: triple", "id | subject | property | object", "p1 | Ada | born in | London",
        "fact_type: person", "id | name | page", "p2 | Ada | 4"]
    assert pred_side[2]["content"] == ("PREDICTED fact to judge:\nfact_type: triple\n"
                                       "id | subject | property | object\np1 | Ada | born in | London")
    assert all("confidence" not in m["content"] and "Fields to compare" not in m["content"]
               for m in gold_side + pred_side)

    explicit = JudgeConfig(fields=["object", "subject"])
    [(q, subjects), _] = questions(gold, pred, explicit)
    system, candidates, _ = messages(q, subjects[0])
    assert system["content"].endswith("Fields to compare: object, subject")
    assert "id | confidence | object | page | property | subject" in candidates["content"]
