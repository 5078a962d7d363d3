"""factjudge.models usage: one sum (CallUsage.add) for a document's usage, a jury's verdict and
each juror's share."""
from hypo import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from factjudge.models import CallUsage, Usage

usages = st.builds(CallUsage, **{name: st.integers(0, 10**6) for name in CallUsage.model_fields})


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(usages, max_size=8))
def test_total_is_the_field_by_field_sum(parts):
    total = CallUsage.total(parts)
    for name in CallUsage.model_fields:
        assert getattr(total, name) == sum(getattr(u, name) for u in parts)
    doc = Usage(seconds=1.5, token_counter="estimate:x")
    for u in parts:
        doc.add(u)
    assert doc.model_dump(include=set(CallUsage.model_fields)) == total.model_dump()
    assert (doc.seconds, doc.token_counter) == (1.5, "estimate:x")  # only the counts are summed


def test_jurors_are_summed_per_name():
    doc = Usage()
    doc.add_jurors({"a": CallUsage(llm_calls=1, prompt_tokens=10), "b": CallUsage(cache_hits=1)})
    doc.add_jurors({"a": CallUsage(llm_calls=2, prompt_tokens=5)})
    assert doc.jurors == {"a": CallUsage(llm_calls=3, prompt_tokens=15), "b": CallUsage(cache_hits=1)}
