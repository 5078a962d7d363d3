"""Issue 39: report.md and report.html written faster, the same bytes: md_escape by str.replace
instead of str.translate, a fact's fields by a Python filter instead of a template macro."""
from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from factjudge.reports.html import environment, facts_row_html, fields_html
from factjudge.reports.markdown import md_escape

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


def test_the_fields_filter_writes_what_the_macro_wrote_and_escapes_everything() -> None:
    fact = {"name<>": 'Ann "<b>" & \'co\'', "n": 3, "list": ["<i>", 1.5], "none": None}
    macro = environment().from_string(
        '<dl class="fields">{% for k, v in fact.items() %}<dt>{{ k }}</dt><dd>{{ v|setting }}</dd>'
        "{% endfor %}</dl>")
    assert fields_html(fact) == macro.render(fact=fact)
    assert "<b>" not in fields_html(fact) and "&lt;i&gt;" in fields_html(fact)
    page = environment().from_string('{% from "macros.html.j2" import fields %}{{ fields(fact) }}')
    assert page.render(fact=fact) == fields_html(fact)


#: The facts table's row as the template wrote it (with the doc_anchor and fields macros): the
#: specification of html.facts_row_html.
_ROW_TEMPLATE = (
    '{% macro doc_anchor(doc_id) -%}\n'
    '{% if doc_id|string in embedded %}<a href="#doc={{ doc_id|urlquote }}" class="doclink">{{ doc_id }}'
    '</a>\n'
    '{%- else %}{{ doc_id }}{% endif %}\n'
    '{%- endmacro %}\n'
    '{% macro fields(fact) -%}\n'
    '<dl class="fields">{% for k, v in fact.items() %}<dt>{{ k }}</dt><dd>{{ v|setting }}'
    '</dd>{% endfor %}</dl>\n'
    '{%- endmacro %}\n'
    '<tr data-type="{{ r.fact_type }}" data-status="{{ r.status }}" data-doc="{{ r.doc_id }}'
    '"{% if r.status == "TP" %} hidden{% endif %}>\n'
    '{#- #}<td>{{ doc_anchor(r.doc_id) }}</td><td class="status-{{ r.status }}">{{ r.status }}</td>\n'
    '{#- #}<td><div class="fhead"><span class="fid">{{ r.id }}</span> {{ r.fact_type }}'
    ' <span class="muted">{{ r.side }}</span></div>{{ fields(r.fact) }}</td><td class="other">\n'
    '{%- if r.linked %}\n'
    '{%- for x in r.linked %}<div>linked <b>{{ x.id }}</b> <span class="status-{{ x.status }}">'
    '{{ x.status }}</span>{{ fields(x.fact) }}</div>{% endfor %}\n'
    '{%- elif r.closest %}\n'
    '{%- set near = r.closest %}<div>closest <b>{{ near.id }}</b> <span class="status-{{ near.status }}">'
    '{{ near.status }}</span>\n'
    '{#- #} <span class="muted">(closeness {{ near.score|compact }}\n'
    '{%- if near.differ %}; differs in: {{ near.differ|join(", ") }}{% endif %})</span>'
    '{{ fields(near.fact) }}</div>\n'
    '{%- endif %}</td><td>{{ r.reasoning }}\n'
    '{%- if r.reasoning and r.note %}<br>{% endif %}{% if r.note %}<span class="muted">note: {{ r.note }}'
    '</span>{% endif %}</td></tr>'
)

_HOSTILE = '<script>alert("x")</script> & \'q\''
_VALUES = st.one_of(st.text(alphabet=st.sampled_from(list("a1 <>&\"'/é\\")), max_size=8), st.integers(), st.none(),
                    st.just(_HOSTILE), st.lists(st.text(max_size=3), max_size=2))
_FACTS = st.dictionaries(st.text(alphabet=st.sampled_from(list("ab<&\"")), min_size=1, max_size=4), _VALUES, max_size=3)


@given(st.fixed_dictionaries({
    "doc_id": st.one_of(st.sampled_from(["d1", _HOSTILE, "a b/c"]), st.integers()),
    "side": st.sampled_from(["gold", "predicted"]),
    "id": st.one_of(st.just(_HOSTILE), st.integers(), st.text(max_size=3)),
    "fact_type": st.sampled_from(["revenue", _HOSTILE]), "status": st.sampled_from(["FN", "FP", "ERROR", "TP"]),
    "fact": _FACTS, "matched_ids": st.just([]),
    "linked": st.lists(st.fixed_dictionaries({"id": st.sampled_from(["p1", _HOSTILE]),
                                              "status": st.sampled_from(["TP", _HOSTILE]), "fact": _FACTS}),
                       max_size=2),
    "closest": st.one_of(st.none(), st.fixed_dictionaries({
        "id": st.sampled_from(["p2", _HOSTILE]), "status": st.sampled_from(["FP", "TP"]), "fact": _FACTS,
        "score": st.sampled_from([0, 92.3, 100.0, 1e-7]), "differ": st.lists(st.sampled_from(["value", _HOSTILE]))})),
    "reasoning": st.sampled_from(["", "FN: no match", _HOSTILE]), "note": st.sampled_from(["", _HOSTILE])}),
    st.booleans())
def test_a_facts_table_row_is_what_the_template_wrote(row: dict, embedded: bool) -> None:
    shown = frozenset({str(row["doc_id"])}) if embedded else frozenset()
    want = environment().from_string(_ROW_TEMPLATE).render(r=row, embedded=shown)
    assert facts_row_html(row, shown) == want
    assert "<script>" not in facts_row_html(row, shown)
