"""Issue 39: report.md written faster, the same bytes: md_escape by str.replace instead of
str.translate, each repeated cell escaped once; a report's fields of a fact (shown_fields) in one
pass."""
from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from factjudge.models import QUOTE_LIMIT, cut_text, own_fields
from factjudge.reports import markdown
from factjudge.reports.markdown import md_escape
from factjudge.reports.rows import shown_fields
from factjudge.reports.text import fact_json, other_text

#: md_escape as it was written first (str.translate, a pattern starting with a lookbehind): the
#: specification the faster one must agree with, character for character.
_INERT = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "\0": "\ufffd", "\r": " ", "\n": " ",
                        **{ch: "\\" + ch for ch in "\\`*[]()|~$"}})
_UNDERSCORE = re.compile(r"(?<![^\W_])_|_(?![^\W_])")


def _reference(text: str) -> str:
    return _UNDERSCORE.sub(r"\\_", text.replace("\r\n", " ").translate(_INERT))


@given(st.text(alphabet=st.sampled_from(list("ab1é_ .,:;&<>\0\r\n\\`*[]()|~$\"'{}#-")), max_size=60))
def test_md_escape_is_the_translate_it_replaced(text: str) -> None:
    assert md_escape(text) == _reference(text)


def test_md_escape_of_the_characters_each_replacement_adds() -> None:
    # a replacement must not be replaced again: the backslash, & and ; of what came before
    for text in ("\\&<", "&lt;", "\\_\\", "a\\`b", "_\\_", "x__y", "é_1", "\r\n\r\n_"):
        assert md_escape(text) == _reference(text), text


_KEYS = st.sampled_from(["id", "fact_type", "factjudge", "status", "reasoning", "name", "value", "matched_ids"])
_VALUES = st.one_of(st.text(max_size=3), st.integers(), st.none(), st.just("x" * (QUOTE_LIMIT + 1)),
                    st.dictionaries(st.just("status"), st.just("TP")))


@settings(deadline=None)  # its first example may import the rules judge's modules
@given(st.dictionaries(_KEYS, _VALUES))
def test_shown_fields_is_the_two_passes_it_replaced(fact: dict[str, object]) -> None:
    # either layout: the verdict under "factjudge" (a dict there) or beside the fact's own fields
    expected = {k: cut_text(v, QUOTE_LIMIT) if isinstance(v, str) else v
                for k, v in own_fields(fact).items() if k not in ("id", "fact_type")}
    shown = shown_fields(fact)
    assert shown == expected
    assert list(shown) == list(expected)


def test_report_md_rows_escape_each_repeated_text_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # a document's rows repeat its doc_id, and sides, statuses, fact types and reasonings repeat
    # row after row: each distinct text is escaped once, the same table written
    fact = {"name": "a_b | c"}
    rows = [{"doc_id": "d_1", "side": "gold", "id": f"g{i}", "fact_type": "ceo", "status": "FN", "fact": fact,
             "linked": [], "closest": None, "reasoning": "no match (2 of *that* type)", "note": ""}
            for i in range(3)] + [{"doc_id": 7, "side": "predicted", "id": 1, "fact_type": "ceo", "status": "FP",
                                   "fact": fact, "linked": [], "closest": None, "reasoning": "", "note": "n"}]
    expected = markdown._md_table(
        ["doc_id", "side", "id", "fact_type", "status", "fact", "linked / closest", "reasoning", "note"],
        [[r["doc_id"], r["side"], r["id"], r["fact_type"], r["status"], fact_json(r["fact"]), other_text(r),
          r["reasoning"], r["note"]] for r in rows])
    asked: list[object] = []
    monkeypatch.setattr(markdown, "md_escape", lambda value: asked.append(value) or md_escape(value))
    assert markdown._md_rows(rows) == expected
    assert asked.count("d_1") == asked.count("no match (2 of *that* type)") == asked.count("ceo") == 1
    assert asked.count(7) == 1


def test_compile_templates_compiles_the_run_pages_and_all_they_use_and_no_other_page():
    """What a run compiles while its workers judge or its LLM's answers are awaited (a fresh
    process: this one's environment may have compiled some already): every template report.html
    and review.html reach (extends, include, import: found by jinja2's own parser), nothing of
    the other commands' pages."""
    import subprocess
    import sys

    from jinja2 import meta

    from factjudge.reports.html import RUN_PAGES, environment

    code = ("from factjudge.reports.html import compile_templates, environment\n"
            "list(compile_templates())\n"
            "print(sorted(t.name for t in environment().cache.values()))")
    compiled = set(eval(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                       check=True).stdout))
    env, reached, todo = environment(), set(), list(RUN_PAGES)
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            source = env.loader.get_source(env, name)[0]
            todo += [t for t in meta.find_referenced_templates(env.parse(source)) if t is not None]
    assert reached <= compiled
    assert not compiled & {"agree.html.j2", "compare.html.j2", "notebook.html.j2"}