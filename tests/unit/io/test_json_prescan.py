"""``io.jsonl.needs_check``: the cheap scan that decides whether a parsed line is walked for what
JSON readers disagree on (NaN, Infinity, lone surrogates, numbers too large). It must find every
such line; it was one regular expression tried at every digit and every e (60 ms of 1,000 2-KB
lines, issue #39), now plain substring searches that find the same in ASCII text."""
import json
import re

from hypothesis import given
from hypothesis import strategies as st

from factjudge.io.jsonl import needs_check

# the expression it replaced: for ASCII text, the same answer
SUSPECT = re.compile(r"NaN|Infinity|\\u[dD][89a-fA-F]|\d{200}|[eE][+-]?0*[1-9]\d\d")
PIECES = st.sampled_from(["0", "1", "9", "00", "e", "E", "+", "-", ".", "NaN", "Infinity", "Inf", "\\u",
                          "\\ud8", "\\uD9", "\\udc", "d", "8", "a", " ", '"', "x", "1" * 50, "9" * 100, "e+0", "E-"])


@given(st.lists(PIECES, max_size=40))
def test_it_answers_as_the_expression_did_for_ascii_text(pieces):
    text = "".join(pieces)
    assert needs_check(text) == bool(SUSPECT.search(text))


def test_every_suspect_value_is_found():
    for text in ['{"v": NaN}', '{"v": -Infinity}', '{"v": 1e309}', '{"v": 1E+400}', '{"v": 1.5e-0400}',
                 '{"v": "\\ud800"}', json.dumps({"v": 10 ** 250}), '{"v": 1' + "0" * 199 + "}"]:
        assert needs_check(text), text
    assert not needs_check('{"v": 1e99, "w": "the 2nd e-mail", "n": 12345678901234567890}')


def _str_translating(text):
    """needs_check as it was before it translated the text's UTF-8 bytes (issue #39: 2 us of each
    150-byte fact line went to str.translate's lookups)."""
    if text.count("[") + text.count("{") > 100 or "NaN" in text or "Infinity" in text:
        return True
    if "\\u" in text and re.search(r"\\u[dD][89a-fA-F]", text):
        return True
    zeros = text.translate(str.maketrans("123456789", "000000000"))
    return "0" * 200 in zeros or (any(e in zeros for e in ("e0", "E0", "e+0", "E+0", "e-0", "E-0"))
                                  and bool(re.search(r"[eE][+-]?0*[1-9][0-9][0-9]", text)))


# any text: non-ASCII digits and letters, characters whose UTF-8 is several bytes, a lone surrogate
WIDE = PIECES | st.sampled_from(["\u0661\u0662\u0663", "\uff11" * 3, "\u00e9", "\u0415", "\ud800", "\U0001f600",
                                 "\u00c9", "\u2212", "\uff45"]) | st.text(max_size=3)


@given(st.lists(WIDE, max_size=60))
def test_translating_the_bytes_answers_as_translating_the_text_did(pieces):
    text = "".join(pieces)
    assert needs_check(text) == _str_translating(text)


def test_a_digit_run_or_an_exponent_among_wide_characters_is_still_found():
    assert needs_check('{"v": "\u00e9\u00e9", "n": ' + "7" * 200 + "}")
    assert needs_check('{"\u0415": 1E-400}') and needs_check('{"\U0001f600": 2e+0300}')
    assert not needs_check('{"v": "' + "\u0661" * 10 + '", "w": 1e99}')
