"""One way to build a judge: a :class:`JudgeSpec` says which judge (kind, models, jury, backend,
sampling, cache...), :func:`build_judge` makes it. The command line maps its flags to a spec; Ray
ships the spec to its workers, which build their judge from it.

Registries: a judge kind is one entry of :data:`JUDGE_KINDS` (its builder receives the spec and a
factory of the LLM judge of one seat; it declares the spec's settings it takes and its own options,
:mod:`.options`); a backend is one entry of :data:`~factjudge.judges.llm.backends.BACKENDS`. The
command line offers exactly their names, and a kind's own options as flags.
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InputError, JudgeSetupError
from ..models import JudgeConfig
from ..util.bounds import Bound, numbers_problem
from ..util.urls import redact_query, url_problem
from .base import Judge
from .llm.setup import MAX_TOKENS, RETRIES, TEMPERATURE, TIMEOUT  # the bounds alone: no client, no aiohttp
from .options import LLM_SETTINGS, SPEC_SETTINGS, KindOption, OptionValue

# The LLM judge, the hybrid and the jury (and with them aiohttp, about half of a rules run's
# imports) are imported in the functions that build them: a rules run never loads them.
if TYPE_CHECKING:
    from .hybrid import HybridJudge
    from .llm.cache import ResponseCache
    from .llm.judge import LLMJudge
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
    needs no API key. ``pin_id``: auto, always or never (``Sampling.pin_id``). ``args``: the
    chosen kind's own options (name -> value, as its :class:`~.options.KindOption` declares them;
    a dict is taken and held as sorted pairs), like Inspect AI's ``ScorerSpec(scorer, args)``."""

    kind: str | None = None
    models: tuple[str, ...] = ()
    base_url: str | None = None
    repeats: int = 1
    jury_rules: bool = False
    api_key_env: str | None = None
    backend: str = "http"
    structured_output: str | None = None
    timeout: float = 120.0
    #: Tries after the first of a request that failed in a way that may pass (429, 5xx, a timeout,
    #: a dropped connection): :attr:`~.llm.retry.RetryPolicy.retries`.
    retries: int = 4
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
    args: tuple[tuple[str, OptionValue], ...] = ()

    def __post_init__(self) -> None:
        # a list (as typed on a command line) or one name is held as a tuple: the spec stays hashable
        models = (self.models,) if isinstance(self.models, str) else tuple(self.models)
        object.__setattr__(self, "models", models)
        args = self.args.items() if isinstance(self.args, dict) else self.args
        object.__setattr__(self, "args", tuple(sorted((str(k), v) for k, v in args)))

    def option(self, option: KindOption) -> OptionValue:
        """The value of a kind's own option: as given in ``args``, else its default."""
        return dict(self.args).get(option.name, option.default)

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
        # args only when given: a spec of the built-in kinds reads as it always did
        shown = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "args" or self.args}
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
KindBuilder = Callable[[JudgeSpec, Callable[[], "LLMJudge"]], Judge]


@dataclass(frozen=True)
class JudgeKind:
    """One entry of :data:`JUDGE_KINDS`: how to build the kind from a spec, the spec's settings it
    takes (fields of :class:`JudgeSpec`: :data:`~.options.LLM_SETTINGS` for a kind that asks an
    LLM, none for one that does not), its own options (``JudgeSpec.args``, each declared here
    once: the command line makes its flag from it) and its few words in ``--judge``'s help. A
    setting or option the kind does not take is refused when given (``SpecSetting.refusal``)."""

    build: KindBuilder
    settings: frozenset[str] = frozenset()
    options: tuple[KindOption, ...] = ()
    help: str = ""

    @property
    def uses_llm(self) -> bool:
        """Asks an LLM: it takes ``models`` (and needs one)."""
        return "models" in self.settings


def _rules_judge() -> RulesJudge:
    from .rules.judge import RulesJudge  # only a run that uses it loads it (and its normaliser)
    return RulesJudge()


def _hybrid_judge(llm: Callable[[], LLMJudge]) -> HybridJudge:
    from .hybrid import HybridJudge  # the LLM judge's stack: only a run that asks an LLM loads it
    return HybridJudge(_rules_judge(), llm())


#: Judge kind name -> how to build it. The command line's ``--judge`` offers these names.
JUDGE_KINDS: dict[str, JudgeKind] = {
    "rules": JudgeKind(lambda spec, llm: _rules_judge(), help="offline, default"),
    "llm": JudgeKind(lambda spec, llm: llm(), LLM_SETTINGS, help="default when --model is given"),
    "hybrid": JudgeKind(lambda spec, llm: _hybrid_judge(llm), LLM_SETTINGS,
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
    _check_taken(spec, kind)
    if not kind.uses_llm:
        return kind.build(spec, _no_llm)
    from .jury import JuryJudge  # an LLM's run only (see the imports above)

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
        ("--repeats", REPEATS, spec.repeats), ("--max-tokens", MAX_TOKENS, spec.max_tokens),
        ("--retries", RETRIES, spec.retries)])
    if problem:
        raise InputError(problem)


#: Each field's default: a field that differs from it is given.
_DEFAULTS = {f.name: f.default for f in dataclasses.fields(JudgeSpec)}


def _check_taken(spec: JudgeSpec, kind: JudgeKind) -> None:
    """Refuse what the kind does not take, as its registry entry declares: a setting it has no
    use for (in :data:`~.options.SPEC_SETTINGS`' order, each with its own words), or an option
    of another kind; and check its own options' types and ranges."""
    for name, setting in SPEC_SETTINGS.items():
        if setting.refusal and name not in kind.settings and getattr(spec, name) != _DEFAULTS[name]:
            raise InputError(setting.refusal)
    own = {option.name: option for option in kind.options}
    for name, value in spec.args:
        option = own.get(name)
        if option is None:
            raise InputError(_not_taken(spec.resolved_kind, name))
        wanted = (int, float) if type(option.default) is float else (type(option.default),)
        if not isinstance(value, wanted) or isinstance(value, bool) and not isinstance(option.default, bool):
            raise InputError(f"{option.flag}: {value!r} is not a {type(option.default).__name__}")
        problem = numbers_problem([(option.flag, option.bound, value)]) if option.bound else None
        if problem:
            raise InputError(problem)


def _not_taken(kind_name: str, name: str) -> str:
    """Why the option ``name`` of ``args`` is refused for ``kind_name``: the kinds that take it."""
    takers = {k: o for k, entry in JUDGE_KINDS.items() for o in entry.options if o.name == name}
    if not takers:
        return f"args {name!r}: no judge kind takes it (--judge {kind_name} takes " + (
            ", ".join(o.name for o in JUDGE_KINDS[kind_name].options) or "none") + ")"
    flag = next(iter(takers.values())).flag
    return f"{flag} is for --judge {' or '.join(takers)}; drop it or use --judge {next(iter(takers))}"


def _seats(spec: JudgeSpec) -> list[tuple[str, str | None]]:
    """(model, its server) of each model, checked."""
    from .jury import split_model_spec

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
    import sqlite3

    from .llm.cache import ResponseCache

    try:
        return ResponseCache(spec.cache_dir)
    except (OSError, sqlite3.Error) as exc:
        raise InputError(f"cannot open the response cache in {spec.cache_dir or 'the default cache directory'}:"
                         f" {exc} (use --cache-dir DIR or --no-cache)") from None


def _llm_judge(spec: JudgeSpec, model: str, url: str | None, repeat: int, cache: ResponseCache | None,
               mode: str, notify: Callable[[str], None] | None) -> LLMJudge:
    from .jury import repeat_name
    from .llm.judge import LLMJudge
    from .llm.retry import RetryPolicy
    from .llm.settings import Sampling, Transport

    try:
        llm = LLMJudge(model, base_url=url or spec.base_url, api_key_env=spec.api_key_env,
                       api_key=_NO_KEY if spec.dry_run else None,  # a preview calls nothing
                       sampling=Sampling(spec.temperature, spec.max_tokens, mode, spec.reasoning_effort,
                                         pin_id=spec.pin_id),
                       transport=Transport(backend=spec.backend, timeout=spec.timeout,
                                           send_prompt_cache_key=spec.prompt_cache_key, warmup=spec.warmup,
                                           fit_slots=spec.fit_slots),
                       retry=RetryPolicy(retries=spec.retries), cache=cache, notify=notify)
    except JudgeSetupError as exc:
        # the judge names its Python arguments; a spec names the options
        raise JudgeSetupError(str(exc).replace("or pass api_key= ", "").replace("base_url=", "--base-url")) from None
    if repeat:  # its own identity and response-cache key: each repeat is really asked
        llm.name = repeat_name(llm.name, repeat)
    return llm
