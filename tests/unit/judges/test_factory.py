"""build_judge: one spec, one judge; the registries are what the command line offers."""
import pickle

import pytest
from typer.testing import CliRunner

from factjudge import HybridJudge, JuryJudge, LLMJudge, RulesJudge
from factjudge.cli import app, register_commands
from factjudge.errors import InputError, JudgeSetupError
from factjudge.judges.factory import JUDGE_KINDS, JudgeSpec, build_judge
from factjudge.judges.llm import RetryPolicy
from factjudge.judges.llm.backends import BACKENDS, BackendError, endpoint
from factjudge.judges.llm.batch_lines import Batchable

LOCAL = "http://127.0.0.1:9/v1"



def test_a_spec_builds_each_kind_and_a_jury(tmp_path):
    assert isinstance(build_judge(JudgeSpec()), RulesJudge)
    llm = build_judge(JudgeSpec(models=("m",), base_url=LOCAL, cache=False))
    assert isinstance(llm, LLMJudge) and llm.batch_llm() is llm and llm.cache is None
    hybrid = build_judge(JudgeSpec(kind="hybrid", models=("m",), base_url=LOCAL, cache_dir=tmp_path))
    assert isinstance(hybrid, HybridJudge) and hybrid.batch_llm() is hybrid.llm
    assert hybrid.llm.cache.path.parent == tmp_path
    jury = build_judge(JudgeSpec(models=("a", f"b@{LOCAL}"), base_url=LOCAL, repeats=2, temperature=0.5,
                                 jury_rules=True, cache=False))
    assert isinstance(jury, JuryJudge) and not isinstance(jury, Batchable)
    assert [j.name for j in jury.jurors] == ["llm#1", "llm#2", "llm#1", "llm#2", "rules"]
    assert not isinstance(build_judge(JudgeSpec()), Batchable)


def test_options_that_do_not_go_together_are_input_errors():
    for spec, words in [(JudgeSpec(models=("m",), kind="rules"), "--model/--base-url are for the LLM"),
                        (JudgeSpec(kind="llm"), "--judge llm needs --model NAME"),
                        (JudgeSpec(models=("m",), repeats=2), "give --temperature above 0"),
                        (JudgeSpec(models=("m", "m"), base_url=LOCAL), "--model m is given twice"),
                        (JudgeSpec(kind="nope"), "--judge nope: not one of rules, llm, hybrid")]:
        with pytest.raises(InputError, match=words):
            build_judge(spec)


def test_the_key_is_read_where_the_judge_is_built_and_never_shown(monkeypatch):
    spec = JudgeSpec(models=("m",), base_url="https://user:s3cret@example.com/v1", api_key_env="FJ_KEY",
                     cache=False)
    monkeypatch.delenv("FJ_KEY", raising=False)
    with pytest.raises(JudgeSetupError, match="the environment variable FJ_KEY is not set"):
        build_judge(spec)
    monkeypatch.setenv("FJ_KEY", "sk-hidden")
    judge = build_judge(spec)
    assert pickle.loads(pickle.dumps(spec)) == spec  # what Ray ships: names, never the key
    for text in (repr(spec), repr(judge.endpoint), repr(judge.transport), pickle.dumps(spec).decode("latin-1")):
        assert "sk-hidden" not in text
    assert "s3cret" not in repr(spec) and "***@example.com" in repr(spec)
    assert build_judge(JudgeSpec(models=("m",), dry_run=True, cache=False)).model == "m"  # a preview needs no key


def test_a_dry_run_of_a_judge_without_llm_is_refused():
    with pytest.raises(InputError, match="--dry-run previews LLM calls"):
        build_judge(JudgeSpec(dry_run=True))


def test_the_command_line_offers_the_registries():
    from factjudge.cli import options

    assert [c.value for c in options.JudgeKindChoice] == list(JUDGE_KINDS)
    assert [c.value for c in options.BackendChoice] == list(BACKENDS)
    register_commands(["judge"])
    result = CliRunner().invoke(app, ["judge", "--help"], env={"COLUMNS": "200"})
    assert "<rules|llm|hybrid>" in result.output and "<http|openai-sdk|anthropic>" in result.output


def test_one_retry_policy_for_live_calls_and_batches():
    policy = RetryPolicy(retries=2, backoff=1.0, max_backoff=5.0, jitter=False)
    busy = BackendError("status", "HTTP 429", status=429)
    assert [policy.wait(n, busy) for n in range(3)] == [1.0, 2.0, None]
    assert policy.wait(0, BackendError("status", "HTTP 429", status=429, retry_after=30)) == 5.0  # capped
    assert policy.wait(0, BackendError("status", "HTTP 400", status=400)) is None  # would repeat
    assert 0.5 <= RetryPolicy().wait(0, busy) <= 1.0  # jitter: from half the backoff to all of it
    assert "sk-x" not in repr(endpoint(LOCAL, "sk-x"))


def test_the_judge_says_whether_it_can_be_asked_in_a_batch(tmp_path):
    """No list of kinds or backends decides it: a judge is Batchable (the LLM, a hybrid's LLM) or
    not, and the LLM's backend says whether it speaks OpenAI's Batch API."""
    from factjudge.judges.llm import Transport
    from factjudge.judges.llm.batch_lines import batch_llm
    from factjudge.judges.llm.cache import ResponseCache

    cache = ResponseCache(tmp_path / "c")
    llm = LLMJudge("m", base_url=LOCAL, cache=cache)
    assert batch_llm(llm) is llm
    hybrid = build_judge(JudgeSpec(kind="hybrid", models=("m",), base_url=LOCAL, cache_dir=tmp_path))
    assert batch_llm(hybrid) is hybrid.llm
    for judge, why in [(RulesJudge(), "--batch needs an LLM judge"),
                       (JuryJudge([llm, RulesJudge()]), "--batch needs an LLM judge"),
                       (LLMJudge("m", base_url=LOCAL), "needs the response cache"),
                       (LLMJudge("m", base_url=LOCAL, api_key="k", cache=cache,
                                 transport=Transport(backend="anthropic")), "--backend anthropic asks live only")]:
        with pytest.raises(InputError, match=why):
            batch_llm(judge, "--batch")


def _echo_kind():
    """A judge kind of one's own with an option of its own, as a plugin would declare it."""
    from factjudge.judges.factory import JudgeKind
    from factjudge.judges.options import KindOption
    from factjudge.util.bounds import Bound

    threshold = KindOption("threshold", "--threshold", "How close a match must be.", 0.5, Bound(0, 1))
    built = []

    def build(spec, llm):
        built.append(spec.option(threshold))
        return RulesJudge()

    return JudgeKind(build, options=(threshold,), help="a test kind"), built


def test_a_kind_declares_its_own_options_once_and_others_refuse_them(monkeypatch):
    kind, built = _echo_kind()
    monkeypatch.setitem(JUDGE_KINDS, "echo", kind)
    assert isinstance(build_judge(JudgeSpec(kind="echo", args={"threshold": 0.75})), RulesJudge)
    build_judge(JudgeSpec(kind="echo"))
    assert built == [0.75, 0.5]  # as given, else the declared default
    spec = JudgeSpec(kind="echo", args={"threshold": 0.75})
    assert spec.args == (("threshold", 0.75),) and pickle.loads(pickle.dumps(spec)) == spec
    assert "args=(('threshold', 0.75),)" in repr(spec) and "args" not in repr(JudgeSpec())
    for bad, words in [(JudgeSpec(kind="rules", args={"threshold": 0.75}),
                        "--threshold is for --judge echo; drop it or use --judge echo"),
                       (JudgeSpec(kind="echo", args={"threshold": 2.0}), "--threshold must be"),
                       (JudgeSpec(kind="echo", args={"threshold": "high"}), "--threshold: 'high' is not a float"),
                       (JudgeSpec(kind="echo", args={"nope": 1}), "args 'nope': no judge kind takes it"),
                       # what the entry does not take is refused with the setting's own words
                       (JudgeSpec(kind="echo", models=("m",)), "--model/--base-url are for the LLM judge"),
                       (JudgeSpec(kind="echo", dry_run=True), "--dry-run previews LLM calls")]:
        with pytest.raises(InputError, match=words):
            build_judge(bad)


def test_the_settings_a_kind_refuses_come_from_its_entry(monkeypatch):
    from factjudge.judges.factory import JudgeKind
    from factjudge.judges.options import LLM_SETTINGS

    no_jury = JudgeKind(lambda spec, llm: llm(), LLM_SETTINGS - {"repeats", "jury_rules"})
    monkeypatch.setitem(JUDGE_KINDS, "single", no_jury)
    assert isinstance(build_judge(JudgeSpec(kind="single", models=("m",), base_url=LOCAL, cache=False)), LLMJudge)
    with pytest.raises(InputError, match="--repeats and --jury-rules make a jury of LLM judges"):
        build_judge(JudgeSpec(kind="single", models=("m",), base_url=LOCAL, jury_rules=True, cache=False))


def test_the_command_line_makes_a_kinds_own_option_a_flag(monkeypatch):
    import typer

    from factjudge.cli.options import judge_options_of

    kind, built = _echo_kind()
    monkeypatch.setitem(JUDGE_KINDS, "echo", kind)
    seen = []
    app_ = typer.Typer()

    @app_.command()
    @judge_options_of(JUDGE_KINDS)  # what the commands are decorated with, made from the registry
    def run(opts) -> None:
        seen.append(opts.spec)
        build_judge(opts.spec)

    runner = CliRunner()
    assert "--threshold" in runner.invoke(app_, ["--help"], env={"COLUMNS": "200"}).output
    assert runner.invoke(app_, ["--judge", "echo", "--threshold", "0.25"]).exit_code == 0
    assert seen[-1].args == (("threshold", 0.25),) and built == [0.25]
    assert runner.invoke(app_, ["--judge", "echo"]).exit_code == 0 and seen[-1].args == ()
    result = runner.invoke(app_, ["--threshold", "0.25"])  # the rules judge takes no --threshold
    assert isinstance(result.exception, InputError) and "--threshold is for --judge echo" in str(result.exception)
    assert runner.invoke(app_, ["--judge", "echo", "--threshold", "3"]).exit_code == 2  # its range
