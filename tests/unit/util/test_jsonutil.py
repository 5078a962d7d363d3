"""canonical_json: the bytes of every input hash, cache key and prompt. One encoder serves every
call (json.dumps built one a call: issue #39); the text must stay what json.dumps gave."""
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from factjudge.util.jsonutil import canonical_json

SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text()
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=5), inner, max_size=4), max_leaves=20)


def dumps(value):
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


@given(VALUES)
def test_the_text_is_json_dumps_with_the_same_settings(value):
    assert canonical_json(value) == dumps(value)


def test_what_it_cannot_write_fails_as_json_dumps_did():
    loop: list[object] = []
    loop.append(loop)
    for value in (loop, {"a": {1, 2}}, {1: "a", "b": 2}, object()):
        with pytest.raises((TypeError, ValueError)) as ours:
            canonical_json(value)
        with pytest.raises((TypeError, ValueError)) as theirs:
            dumps(value)
        assert (type(ours.value), str(ours.value)) == (type(theirs.value), str(theirs.value))
    # one call failing mid-way leaves nothing behind for the next
    assert canonical_json({"b": [1, "é"], "a": None}) == '{"a":null,"b":[1,"é"]}'
