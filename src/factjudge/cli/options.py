"""Options shared by the commands that judge (``judge``, ``eval``, ``calibrate``), declared once,
and the judge they build."""
from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields
from enum import Enum
from pathlib import Path
from typing import Any, get_args

import typer

from ..errors import InputError, JudgeSetupError
from ..io.config import load_config
from ..judges import Judge
from ..judges.factory import JUDGE_KINDS, REPEATS, JudgeKind, JudgeSpec, build_judge
from ..judges.llm.backends import BACKENDS
from ..judges.llm.prompts import PIN_ID_CHOICES, REASONING_CHOICES, STRUCTURED_OUTPUT_MODES
from ..judges.llm.request import DEFAULT_MAX_TOKENS, REASONING_MAX_TOKENS
from ..judges.llm.setup import MAX_TOKENS, REASONING_EFFORTS, RETRIES, TEMPERATURE, TIMEOUT
from ..judges.options import KindOption
from ..models import JudgeConfig, Prices


def _choice(name: str, names: Iterable[str]) -> Any:
    """An enum of the names of a registry, for typer's choices (made at run time: the registry,
    not this file, lists them)."""
    return Enum(name, [(n, n) for n in names], type=str)


#: The choices of ``--judge``, ``--backend`` and ``--structured-output``, from the registries.
JudgeKindChoice = _choice("JudgeKindChoice", JUDGE_KINDS)
BackendChoice = _choice("BackendChoice", BACKENDS)
StructuredOutputChoice = _choice("StructuredOutputChoice", ("auto", *STRUCTURED_OUTPUT_MODES))
ReasoningEffortChoice = _choice("ReasoningEffortChoice", REASONING_EFFORTS)
PinIdChoice = _choice("PinIdChoice", PIN_ID_CHOICES)
ReasoningChoice = _choice("ReasoningChoice", REASONING_CHOICES)
CandidatesChoice = _choice("CandidatesChoice", get_args(JudgeConfig.model_fields["candidates"].annotation))


def _plain(value: object) -> Any:
    """A choice as the name it stands for."""
    return value.value if isinstance(value, Enum) else value


def _kinds_help(kinds: Mapping[str, JudgeKind]) -> str:
    """``rules (offline, default), llm (...) or hybrid (...).``: each kind with its help."""
    shown = [f"{name} ({kind.help})" if kind.help else name for name, kind in kinds.items()]
    return (", ".join(shown[:-1]) + " or " if len(shown) > 1 else "") + shown[-1] + "."


#: Highest price per million tokens taken: above it a dry run's cost was inf or NaN (not JSON).
MAX_PRICE = 1e9

CONFIG_OPT = typer.Option(None, "--config", "-c", help="Judge config (.json, .yaml, .yml).")
QUIET_OPT = typer.Option(False, "--quiet", "-q", help="No progress bar or summary on stderr.")


def output_opt(help: str, required: bool = False) -> Any:
    # one name on every command: -o, --output and --output-dir all work
    return typer.Option(... if required else None, "--output", "-o", "--output-dir", help=help)


@dataclass(frozen=True)
class JudgeOptions:
    """The judge options of a command line: the :class:`JudgeSpec` they declare, and what only
    the command line has (concurrency, prices, the config keys it overrides)."""

    spec: JudgeSpec = JudgeSpec()
    concurrency: int = 8
    #: The prices given, if any: the dry run's estimate and a live run's cost.
    prices: Prices | None = None
    #: Config keys given as options (``--reasoning``, ``--candidates``), over the config file's.
    overrides: tuple[tuple[str, str], ...] = ()

    def config(self, path: Path | None) -> JudgeConfig:
        """The config file (or the defaults), with what the command line overrides in it."""
        config = load_config(path)
        return config.model_copy(update=dict(self.overrides)) if self.overrides else config

    def build(self, config: JudgeConfig) -> Judge:
        """``--judge llm`` or ``--model`` selects the LLM judge; otherwise the offline rules judge.
        Several ``--model``, ``--repeats`` above 1 or ``--jury-rules`` make a jury of them."""
        return build_spec(self.spec, config)


def build_spec(spec: JudgeSpec, config: JudgeConfig) -> Judge:
    """:func:`build_judge` for a command: a judge that cannot be built is bad input (one line,
    exit 2), told before anything is written, so without what a command adds to setup errors
    met during a run."""
    try:
        return build_judge(spec, config)
    except JudgeSetupError as exc:
        raise InputError(str(exc)) from None


#: The judge options, declared once: name -> (annotation, typer option). A name is the field of
#: :class:`JudgeSpec` it sets, or the config key it overrides (:class:`JudgeConfig`), or one of
#: :data:`_COMMAND_LINE_ONLY`.
_OPTIONS: dict[str, tuple[Any, Any]] = {
    "kind": (JudgeKindChoice | None, typer.Option(None, "--judge", help=_kinds_help(JUDGE_KINDS))),
    "models": (list[str] | None, typer.Option(None, "--model", metavar="NAME[@URL]",
              help="Model name for the LLM judge. "
              "NAME@URL gives the model its own server (qwen@http://localhost:8000/v1); a plain NAME "
              "uses --base-url. Repeat it for a jury (--model A --model B --model C): every question "
              "goes to each model and a strict majority decides.")),
    "base_url": (str | None, typer.Option(None, "--base-url", help="OpenAI-compatible base URL "
                 "(vLLM, Ollama, llama.cpp, Azure...) of every --model that does not name its own "
                 "(NAME@URL).")),
    "repeats": (int, typer.Option(1, "--repeats", min=1, max=int(REPEATS.high), help="Ask each --model K times (needs "
                "--temperature above 0; each repeat is asked and cached on its own) and let the "
                "majority decide: a jury of K samples.")),
    "jury_rules": (bool, typer.Option(False, "--jury-rules", help="Seat the offline rules judge on "
                   "the jury as one more juror.")),
    "api_key_env": (str | None, typer.Option(None, "--api-key-env", help="Environment variable "
                    "holding the API key (default OPENAI_API_KEY, ANTHROPIC_API_KEY with --backend "
                    "anthropic; a local server given by --base-url "
                    "needs none).")),
    # help is Rich markup: [openai] would be a tag, and vanish, without its backslash
    "backend": (BackendChoice, typer.Option("http", "--backend", help="How requests are sent: http "
                "(lean, default), openai-sdk (pip install 'factjudge\\[openai]') or anthropic "
                "(Anthropic's Messages API, default base URL https://api.anthropic.com).")),
    "structured_output": (StructuredOutputChoice | None, typer.Option(None, "--structured-output",
                          help="auto (default: json_schema, falling back to json_object, then none "
                          "when the server refuses it), json_schema, json_object (llama-cpp-python's "
                          "server) or none (the schema in the prompt).")),
    "timeout": (float, typer.Option(120.0, "--timeout", min=0.001, max=TIMEOUT.high, help="Seconds one LLM request may "
                "take; one question (all its tries) gets at most 3 times this.")),
    "retries": (int, typer.Option(4, "--retries", min=0, max=int(RETRIES.high), help="Tries after the first "
                "of an LLM request that failed in a way that may pass (429, 5xx, a timeout, a dropped "
                "connection), waiting 1, 2, 4... s between them, or as the server's Retry-After says. "
                "0 fails such a fact (an ERROR verdict) at once.")),
    "concurrency": (int | None, typer.Option(None, "--concurrency", min=1, help="Judge questions in flight at "
                    "once (default 8; with llama.cpp's server on one's own machine, its slots, read from "
                    "its /props; 1 for single-slot servers such as llama-cpp-python's).")),
    "temperature": (float, typer.Option(0.0, "--temperature", min=0.0, max=TEMPERATURE.high,
                    help="Sampling temperature of the LLM judge.")),
    "max_tokens": (int | None, typer.Option(None, "--max-tokens", min=0, max=int(MAX_TOKENS.high),
                   help=f"Most tokens one LLM answer may take (default {DEFAULT_MAX_TOKENS}; "
                   f"{REASONING_MAX_TOKENS} once the server asks for max_completion_tokens, as reasoning "
                   "models do: their reasoning counts too). 0 sends no bound. An answer cut by it is "
                   "asked again once, for brevity.")),
    "reasoning_effort": (ReasoningEffortChoice | None, typer.Option(None, "--reasoning-effort",
                         help="Sent as OpenAI's reasoning_effort (reasoning models; a server that "
                         "does not take it refuses the run).")),
    "reasoning": (ReasoningChoice | None, typer.Option(None, "--reasoning", help="What the LLM judge's "
                  "answer explains (config key reasoning): full (default: field by field), brief (one "
                  "sentence) or none (no reasoning in the answer: fewest tokens, nothing to read in the "
                  "report).")),
    "candidates": (CandidatesChoice | None, typer.Option(None, "--candidates", help="Which candidates an LLM "
                   "question shows (config key candidates): all of the other side (default: one prompt "
                   "prefix per direction) or same_type, those of the judged fact's fact_type (fewer tokens "
                   "on documents of several types; one prefix per fact_type).")),
    "cache_dir": (Path | None, typer.Option(None, "--cache-dir", help="Response cache directory "
                  "(default: the user cache dir).")),
    "no_cache": (bool, typer.Option(False, "--no-cache", help="Do not read or write the response cache.")),
    "warmup": (bool, typer.Option(True, "--warmup/--no-warmup", help="Send each direction's first LLM "
               "call alone so the rest can hit the provider's prompt cache.")),
    "prompt_cache_key": (bool, typer.Option(True, "--prompt-cache-key/--no-prompt-cache-key",
                         help="Send OpenAI's prompt_cache_key (turn off for servers that reject it).")),
    "dry_run": (bool, typer.Option(False, "--dry-run", help="Print what the LLM calls would cost; call "
                "nothing.")),
    "pin_id": (PinIdChoice, typer.Option("auto", "--pin-id", help="Pin the judged fact's id in the "
               "response schema (a one-value enum, so the model cannot write another id there): "
               "auto (default: when the base URL is a self-hosted server, which compiles the schema "
               "per request: loopback, a private address or a name without a dot), always, or never "
               "(one schema per direction, which hosted providers cache with the prompt).")),
    "price_in": (float | None, typer.Option(None, "--price-in", min=0, max=MAX_PRICE, help="Price per million "
                 "prompt tokens: the dry run's estimate, and a live run's cost in its summary.")),
    "price_cached": (float | None, typer.Option(None, "--price-cached", min=0, max=MAX_PRICE, help="Price per "
                     "million cached prompt tokens (default: --price-in; providers discount them).")),
    "price_out": (float | None, typer.Option(None, "--price-out", min=0, max=MAX_PRICE, help="Price per million "
                  "completion tokens (dry run and live runs).")),
}


def _kind_option(option: KindOption) -> tuple[Any, Any]:
    """The typer option of a judge kind's own option, as its registry entry declares it."""
    low, high = (option.bound.low, option.bound.high) if option.bound else (None, None)
    return type(option.default), typer.Option(option.default, option.flag, help=option.help, min=low, max=high)


def _kinds_options(kinds: Mapping[str, JudgeKind]) -> dict[str, KindOption]:
    """The judge kinds' own options (``JudgeSpec.args``) by name: a kind declares them once, in
    its entry of the registry."""
    return {o.name: o for kind in kinds.values() for o in kind.options}


_KIND_OPTIONS = _kinds_options(JUDGE_KINDS)
_OPTIONS.update({name: _kind_option(option) for name, option in _KIND_OPTIONS.items()})
#: The options that are the command line's own: how it runs the judge and prices its usage;
#: ``--no-cache`` sets the spec's ``cache`` (off).
_COMMAND_LINE_ONLY = {"concurrency", "no_cache", "price_in", "price_cached", "price_out"}
_SPEC_FIELDS = {f.name for f in fields(JudgeSpec)}
# every field of a spec has its option (``cache`` through --no-cache, ``fit_slots`` through
# --concurrency), and every option a home
assert _SPEC_FIELDS - {"cache", "args", "fit_slots"} <= set(_OPTIONS)  # args: the kinds' own options, below
assert set(_OPTIONS) <= _SPEC_FIELDS | set(JudgeConfig.model_fields) | _COMMAND_LINE_ONLY | set(_KIND_OPTIONS)


def judge_options(values: dict[str, Any], kind_options: Mapping[str, KindOption] = _KIND_OPTIONS) -> JudgeOptions:
    """The options as typed (choices as their names) sorted to where they belong: the spec's
    fields, the config keys given, the command line's own, the kinds' own (``kind_options``)."""
    values = {name: _plain(value) for name, value in values.items()}
    # a kind's own option left at its default is not given (so not refused for another kind)
    args = tuple((n, values[n]) for n, option in kind_options.items() if values[n] != option.default)
    spec = JudgeSpec(**{**{n: v for n, v in values.items() if n in _SPEC_FIELDS},
                        "models": values["models"] or (), "cache": not values["no_cache"], "args": args,
                        "fit_slots": values["concurrency"] is None})
    prices = Prices(input=values["price_in"], cached=values["price_cached"], output=values["price_out"])
    overrides = tuple((n, v) for n, v in values.items()
                      if n in JudgeConfig.model_fields and n not in _SPEC_FIELDS and v is not None)
    return JudgeOptions(spec, values["concurrency"] or JudgeOptions.concurrency, prices if prices.given else None,
                        overrides)


def inject_options(name: str, options: dict[str, tuple[Any, Any]],
                   make: Callable[[dict[str, Any]], Any]) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Add ``options`` (param name -> (annotation, typer option)) to a command's signature; the
    command receives ``make(their values)`` as its keyword argument ``name``."""

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        params = [p for p in inspect.signature(command).parameters.values() if p.name != name]
        params += [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=o, annotation=a)
                   for n, (a, o) in options.items()]

        @functools.wraps(command)
        def wrapper(**kwargs: Any) -> None:
            command(**{name: make({n: kwargs.pop(n) for n in options})}, **kwargs)

        # what inspect.signature() and so typer read (through __dict__: mypy knows no attributes
        # of functions)
        wrapper.__dict__["__signature__"] = inspect.Signature(params)
        return wrapper

    return decorate


def judge_options_of(kinds: Mapping[str, JudgeKind]) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Adds the judge options, with the own options of ``kinds``; the command receives them as
    ``opts``."""
    own = _kinds_options(kinds)
    declared = {**_OPTIONS, **{name: _kind_option(option) for name, option in own.items()}}
    declared["kind"] = (_choice("JudgeKindChoice", kinds) | None,  # --judge offers these kinds
                        typer.Option(None, "--judge", help=_kinds_help(kinds)))
    return inject_options("opts", declared, functools.partial(judge_options, kind_options=own))


#: Adds the judge options of the registry's kinds; the command receives them as ``opts``.
with_judge_options = judge_options_of(JUDGE_KINDS)
