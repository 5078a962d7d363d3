"""One way to build a judge: a :class:`JudgeSpec` says which judge (kind, models, jury, backend,
sampling, cache...), :func:`build_judge` makes it. The command line maps its flags to a spec; Ray
ships the spec to its workers, which build their judge from it.

Registries: a judge kind is one entry of :data:`JUDGE_KINDS` (its builder receives the spec and a
factory of the LLM judge of one seat); a backend is one entry of
:data:`~factjudge.judges.llm.backends.BACKENDS`. The command line offers exactly their names.
"""
from __future__ import annotations

import dataclasses
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InputError, JudgeSetupError
from ..models import JudgeConfig
from ..util.bounds import Bound, numbers_problem
from ..util.urls import redact_query, url_problem
from .base import Judge
from .hybrid import HybridJudge
from .jury import JuryJudge, repeat_name, split_model_spec
from .llm.cache import ResponseCache
from .llm.judge import MAX_TOKENS, TEMPERATURE, TIMEOUT, LLMJudge
from .llm.retry import RetryPolicy
from .llm.settings import Sampling, Transport

if TYPE_CHECKING:
    from .rules.judge import RulesJudge

#: The key a judge built for a dry run or an export holds: it sends nothing.
_NO_KEY = "unused: dry run"
#: ``user:password@`` of a URL, for reprs; a base URL without a scheme has it in front.
_USERINFO = re.compile(r"(?<=://)[^/@\s]*@")
_LEADING_USERINFO = re.compile(r"^[^/@\s]*@")


@dataclass(frozen=True)
class JudgeSpec:
    """Which judge to build, as plain data (picklable: Ray sends it to its workers). It holds no
    secret: the API key is read from the environment variable ``api_key_env`` (default
    ``OPENAI_API_KEY``) where the judge is built, and credentials in a URL are hidden by
    ``repr``. Messages name the options as the command line spells them (``--model``...).

    ``kind`` is a name of :data:`JUDGE_KINDS` (default: ``llm`` when ``models`` are given, else
    ``rules``). ``models`` are ``NAME`` or ``NAME@URL`` (a server of its own; a plain name uses
    ``base_url``); several models, ``repeats`` above 1 (each model asked K times, at a temperature
    above 0) or ``jury_rules`` (the rules judge as one more juror) make a jury. ``structured_output``
    None takes the config's. ``cache`` off, or ``cache_dir`` (default: the user cache directory),
    for the response cache. ``max_tokens`` None is the judge's default budget, 0 no bound.
    ``dry_run``: the judge only previews or exports questions, so it
    needs no API key. ``pin_id``: auto, always or never (``Sampling.pin_id``)."""

    kind: str | None = None
    models: tuple[str, ...] = ()
    base_url: str | None = None
    repeats: int = 1
    jury_rules: bool = False
    api_key_env: str | None = None
    backend: str = "http"
    structured_output: str | None = None
    timeout: float = 120.0
    temperature: float = 0.0
    max_tokens: int | None = None
    reasoning_effort: str | None = None
    cache: bool = True
    cache_dir: Path | None = None
    warmup: bool = True
    #: A self-hosted server: ask at most as many questions at once as it has slots (off when the
    #: concurrency is given: --concurrency).
    fit_slots: bool = True
    prompt_cache_key: bool = True
    dry_run: bool = False
    pin_id: str = "auto"

    def __post_init__(self) -> None:
        # a list (as typed on a command line) or one name is held as a tuple: the spec stays hashable
        models = (self.models,) if isinstance(self.models, str) else tuple(self.models)
        object.__setattr__(self, "models", models)

    @property
    def resolved_kind(self) -> str:
        return self.kind or ("llm" if self.models else "rules")

    def for_another_process(self) -> JudgeSpec:
        """The same spec with a relative ``cache_dir`` made absolute: another process (a Ray
        worker) does not run in this one's folder."""
        if self.cache_dir is None:
            return self
        return dataclasses.replace(self, cache_dir=self.cache_dir.expanduser().resolve())

    def __repr__(self) -> str:
        shown = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        shown["base_url"] = _hide_userinfo(self.base_url and _LEADING_USERINFO.sub("***@", self.base_url))
        shown["models"] = tuple(_hide_userinfo(m) for m in self.models)
        return "JudgeSpec(" + ", ".join(f"{k}={v!r}" for k, v in shown.items()) + ")"


def _hide_userinfo(text: str | None) -> str | None:
    """``text`` (a URL, or ``model@URL``) without its userinfo or credential-like query values."""
    if text is None:
        return None
    head, mark, query = _USERINFO.sub("***@", text).partition("?")
    return head + mark + redact_query(query)


#: A judge kind's builder: the spec, and a factory of the LLM judge of one seat (a kind that asks
#: no LLM never calls it).
KindBuilder = Callable[[JudgeSpec, Callable[[], LLMJudge]], Judge]


@dataclass(frozen=True)
class JudgeKind:
    """One entry of :data:`JUDGE_KINDS`: how to build the kind from a spec, whether it asks an
    LLM, and its few words in ``--judge``'s help."""

    build: KindBuilder
    #: Asks an LLM: needs ``models``; without one, ``models``, ``repeats`` and ``jury_rules`` are refused.
    uses_llm: bool
    help: str = ""


def _rules_judge() -> RulesJudge:
    from .rules.judge import RulesJudge  # only a run that uses it loads it (and its normaliser)
    return RulesJudge()


#: Judge kind name -> how to build it. The command line's ``--judge`` offers these names.
JUDGE_KINDS: dict[str, JudgeKind] = {
    "rules": JudgeKind(lambda spec, llm: _rules_judge(), uses_llm=False, help="offline, default"),
    "llm": JudgeKind(lambda spec, llm: llm(), uses_llm=True, help="default when --model is given"),
    "hybrid": JudgeKind(lambda spec, llm: HybridJudge(_rules_judge(), llm()), uses_llm=True,
                        help="rules for exact matches, LLM for the rest"),
}


def build_judge(spec: JudgeSpec, config: JudgeConfig | None = None, *,
                notify: Callable[[str], None] | None = None) -> Judge:
    """The judge ``spec`` describes. Raises :class:`InputError` for options that do not go
    together and :class:`JudgeSetupError` for a judge that cannot work (no API key, a backend
    whose package is missing). ``config`` gives the default structured-output mode; ``notify``
    receives the LLM judge's one-line notices (default: stderr)."""
    kind_name = spec.resolved_kind
    kind = JUDGE_KINDS.get(kind_name)
    if kind is None:
        raise InputError(f"--judge {kind_name}: not one of " + ", ".join(JUDGE_KINDS))
    _check_numbers(spec)
    if not kind.uses_llm:
        _check_no_llm(spec)
        return kind.build(spec, _no_llm)
    seats = _seats(spec)
    cache = _open_cache(spec)
    mode = spec.structured_output or (config or JudgeConfig()).structured_output

    def seat(model: str, url: str | None, repeat: int) -> Judge:
        return kind.build(spec, lambda: _llm_judge(spec, model, url, repeat, cache, mode, notify))

    jurors = [seat(model, url, k if spec.repeats > 1 else 0)
              for model, url in seats for k in range(1, spec.repeats + 1)]
    if len(jurors) == 1 and not spec.jury_rules:
        return jurors[0]
    if spec.jury_rules:
        jurors.append(_rules_judge())
    return JuryJudge(jurors)


def _no_llm() -> LLMJudge:
    raise InputError("this judge kind asks no LLM")


#: How many times one model may be asked the same question (``--repeats``).
REPEATS = Bound(1, 1000, whole=True)


def _check_numbers(spec: JudgeSpec) -> None:
    """The spec's numbers, named as the command line spells them (the CLI checks its options the
    same way; this is for a spec built in Python)."""
    problem = numbers_problem([
        ("--timeout", TIMEOUT, spec.timeout), ("--temperature", TEMPERATURE, spec.temperature),
        ("--repeats", REPEATS, spec.repeats), ("--max-tokens", MAX_TOKENS, spec.max_tokens)])
    if problem:
        raise InputError(problem)


def _check_no_llm(spec: JudgeSpec) -> None:
    if spec.models or spec.base_url:
        raise InputError("--model/--base-url are for the LLM judge; drop them or use --judge llm")
    if spec.repeats > 1 or spec.jury_rules:
        raise InputError("--repeats and --jury-rules make a jury of LLM judges: add --model")
    if spec.dry_run:
        raise InputError("--dry-run previews LLM calls: add --model (and --judge llm or hybrid)")


def _seats(spec: JudgeSpec) -> list[tuple[str, str | None]]:
    """(model, its server) of each model, checked."""
    if not spec.models:
        raise InputError(f"--judge {spec.resolved_kind} needs --model NAME")
    if spec.repeats > 1 and spec.temperature <= 0:
        raise InputError(f"--repeats {spec.repeats} asks each model {spec.repeats} times: give "
                         "--temperature above 0 (at 0 every repeat would give the same answer)")
    seats = [split_model_spec(m) for m in spec.models]
    _check_url(spec.base_url, "--base-url")
    for name, url in seats:
        _check_url(url, f"--model {name}@URL")
    seen = [(name, url or spec.base_url) for name, url in seats]
    twice = next((name for n, (name, url) in enumerate(seen) if (name, url) in seen[:n]), None)
    if twice is not None:  # the same juror twice would only read the other's cached answers
        raise InputError(f"--model {twice} is given twice for the same server; to ask one model "
                         "several times use --repeats K (with --temperature above 0)")
    return seats


def _check_url(url: str | None, option: str) -> None:
    """A base URL that cannot work, refused before anything is sent, without repeating it (it may
    hold a password): sent as it is, a URL without a scheme failed every question."""
    problem = url_problem(url) if url else None
    if problem:
        raise InputError(f"{option}: the URL {problem}")


def _open_cache(spec: JudgeSpec) -> ResponseCache | None:
    if not spec.cache:
        return None
    try:
        return ResponseCache(spec.cache_dir)
    except (OSError, sqlite3.Error) as exc:
        raise InputError(f"cannot open the response cache in {spec.cache_dir or 'the default cache directory'}:"
                         f" {exc} (use --cache-dir DIR or --no-cache)") from None


def _llm_judge(spec: JudgeSpec, model: str, url: str | None, repeat: int, cache: ResponseCache | None,
               mode: str, notify: Callable[[str], None] | None) -> LLMJudge:
    try:
        llm = LLMJudge(model, base_url=url or spec.base_url, api_key_env=spec.api_key_env,
                       api_key=_NO_KEY if spec.dry_run else None,  # a preview calls nothing
                       sampling=Sampling(spec.temperature, spec.max_tokens, mode, spec.reasoning_effort,
                                         pin_id=spec.pin_id),
                       transport=Transport(backend=spec.backend, timeout=spec.timeout,
                                           send_prompt_cache_key=spec.prompt_cache_key, warmup=spec.warmup,
                                           fit_slots=spec.fit_slots),
                       retry=RetryPolicy(), cache=cache, notify=notify)
    except JudgeSetupError as exc:
        # the judge names its Python arguments; a spec names the options
        raise JudgeSetupError(str(exc).replace("or pass api_key= ", "").replace("base_url=", "--base-url")) from None
    if repeat:  # its own identity and response-cache key: each repeat is really asked
        llm.name = repeat_name(llm.name, repeat)
    return llm
