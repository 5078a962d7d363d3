"""Options shared by the commands that judge (``judge``, ``eval``, ``calibrate``), declared once,
and the judge they build."""
from __future__ import annotations

import functools
import inspect
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, fields
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from ..errors import JudgeSetupError
from ..judges import HybridJudge, Judge, JuryJudge, LLMJudge
from ..judges.jury import repeat_name, split_model_spec
from ..judges.llm.cache import ResponseCache
from ..models import JudgeConfig
from .app import fail, say

if TYPE_CHECKING:
    from ..judges.rules.judge import RulesJudge


class JudgeKind(str, Enum):
    rules = "rules"
    llm = "llm"
    hybrid = "hybrid"


class Backend(str, Enum):
    http = "http"
    openai_sdk = "openai-sdk"


class StructuredOutputMode(str, Enum):
    auto = "auto"
    json_schema = "json_schema"
    json_object = "json_object"
    none = "none"


CONFIG_OPT = typer.Option(None, "--config", "-c", help="Judge config (.json, .yaml, .yml).")
QUIET_OPT = typer.Option(False, "--quiet", "-q", help="No progress bar or summary on stderr.")


def output_opt(help: str, required: bool = False) -> Any:
    # one name on every command: -o, --output and --output-dir all work
    return typer.Option(... if required else None, "--output", "-o", "--output-dir", help=help)


def _rules_judge() -> RulesJudge:
    from ..judges.rules.judge import RulesJudge  # only a run that uses it loads it (and its normaliser)
    return RulesJudge()


@dataclass
class JudgeOptions:
    """The judge options of a command line, as typed."""

    judge: JudgeKind | None = None
    #: One name, or several (a jury); each may be ``NAME@URL`` (see :func:`split_model_spec`).
    model: list[str] | None = None
    base_url: str | None = None
    repeats: int = 1
    jury_rules: bool = False
    api_key_env: str | None = None
    backend: Backend = Backend.http
    structured_output: StructuredOutputMode | None = None
    timeout: float = 120.0
    concurrency: int = 8
    temperature: float = 0.0
    max_tokens: int | None = None
    cache_dir: Path | None = None
    no_cache: bool = False
    warmup: bool = True
    prompt_cache_key: bool = True
    dry_run: bool = False
    price_in: float | None = None
    price_out: float | None = None

    def build(self, config: JudgeConfig) -> Judge:
        """``--judge llm`` or ``--model`` selects the LLM judge; otherwise the offline rules judge.
        Several ``--model``, ``--repeats`` above 1 or ``--jury-rules`` make a jury of them."""
        models = [self.model] if isinstance(self.model, str) else list(self.model or [])
        kind = self.judge or (JudgeKind.llm if models else JudgeKind.rules)
        if kind is JudgeKind.rules:
            if models or self.base_url:
                raise fail("--model/--base-url are for the LLM judge; drop them or use --judge llm")
            if self.repeats > 1 or self.jury_rules:
                raise fail("--repeats and --jury-rules make a jury of LLM judges: add --model")
            if self.dry_run:
                raise fail("--dry-run previews LLM calls: add --model (and --judge llm or hybrid)")
            return _rules_judge()
        if not models:
            raise fail(f"--judge {kind.value} needs --model NAME")
        jury = len(models) > 1 or self.repeats > 1 or self.jury_rules
        if self.repeats > 1 and self.temperature <= 0:
            raise fail(f"--repeats {self.repeats} asks each model {self.repeats} times: give "
                       "--temperature above 0 (at 0 every repeat would give the same answer)")
        specs = [split_model_spec(m) for m in models]
        seen = [(name, url or self.base_url) for name, url in specs]
        twice = next((name for n, (name, url) in enumerate(seen) if (name, url) in seen[:n]), None)
        if twice is not None:  # the same juror twice would only read the other's cached answers
            raise fail(f"--model {twice} is given twice for the same server; to ask one model "
                       "several times use --repeats K (with --temperature above 0)")
        try:
            cache = None if self.no_cache else ResponseCache(self.cache_dir)
        except (OSError, sqlite3.Error) as exc:
            raise fail(f"cannot open the response cache in {self.cache_dir or 'the default cache directory'}:"
                       f" {exc} (use --cache-dir DIR or --no-cache)") from None
        mode = self.structured_output.value if self.structured_output else config.structured_output

        def one(model: str, url: str | None, repeat: int = 0) -> Judge:
            try:
                llm = LLMJudge(model, base_url=url or self.base_url, api_key_env=self.api_key_env,
                               api_key="unused: dry run" if self.dry_run else None,  # a preview calls nothing
                               temperature=self.temperature, max_tokens=self.max_tokens, cache=cache,
                               warmup=self.warmup, send_prompt_cache_key=self.prompt_cache_key,
                               backend=self.backend.value, timeout=self.timeout,
                               structured_output=mode, notify=say)
            except JudgeSetupError as exc:
                # the judge names its Python arguments; here the user typed flags
                raise fail(str(exc).replace("or pass api_key= ", "").replace("base_url=", "--base-url")) from None
            if repeat:  # its own identity and response-cache key: each repeat is really asked
                llm.name = repeat_name(llm.name, repeat)
            return HybridJudge(_rules_judge(), llm) if kind is JudgeKind.hybrid else llm

        if not jury:
            return one(*specs[0])
        jurors = [one(model, url, k if self.repeats > 1 else 0)
                  for model, url in specs for k in range(1, self.repeats + 1)]
        if self.jury_rules:
            jurors.append(_rules_judge())
        return JuryJudge(jurors)


_OPTIONS: dict[str, tuple[Any, Any]] = {  # name -> (annotation, typer option)
    "judge": (JudgeKind | None, typer.Option(None, "--judge", help="rules (offline, default), llm "
              "(default when --model is given) or hybrid (rules for exact matches, LLM for the rest).")),
    "model": (list[str] | None, typer.Option(None, "--model", metavar="NAME[@URL]",
              help="Model name for the LLM judge. "
              "NAME@URL gives the model its own server (qwen@http://localhost:8000/v1); a plain NAME "
              "uses --base-url. Repeat it for a jury (--model A --model B --model C): every question "
              "goes to each model and a strict majority decides.")),
    "base_url": (str | None, typer.Option(None, "--base-url", help="OpenAI-compatible base URL "
                 "(vLLM, Ollama, llama.cpp, Azure...) of every --model that does not name its own "
                 "(NAME@URL).")),
    "repeats": (int, typer.Option(1, "--repeats", min=1, help="Ask each --model K times (needs "
                "--temperature above 0; each repeat is asked and cached on its own) and let the "
                "majority decide: a jury of K samples.")),
    "jury_rules": (bool, typer.Option(False, "--jury-rules", help="Seat the offline rules judge on "
                   "the jury as one more juror.")),
    "api_key_env": (str | None, typer.Option(None, "--api-key-env", help="Environment variable "
                    "holding the API key (default OPENAI_API_KEY; a local server given by --base-url "
                    "needs none).")),
    "backend": (Backend, typer.Option(Backend.http, "--backend", help="How requests are sent: http "
                "(lean, default) or openai-sdk (pip install 'factjudge[openai]').")),
    "structured_output": (StructuredOutputMode | None, typer.Option(None, "--structured-output",
                          help="auto (default: json_schema, falling back to json_object, then none "
                          "when the server refuses it), json_schema, json_object (llama-cpp-python's "
                          "server) or none (the schema in the prompt).")),
    "timeout": (float, typer.Option(120.0, "--timeout", min=0.001, help="Seconds one LLM request may "
                "take; one question (all its tries) gets at most 3 times this.")),
    "concurrency": (int, typer.Option(8, "--concurrency", min=1, help="Judge questions in flight at "
                    "once (1 for single-slot servers such as llama-cpp-python's).")),
    "temperature": (float, typer.Option(0.0, "--temperature", min=0.0, help="Sampling temperature of "
                    "the LLM judge.")),
    "max_tokens": (int | None, typer.Option(None, "--max-tokens", min=1, help="Max completion "
                   "tokens per LLM call.")),
    "cache_dir": (Path | None, typer.Option(None, "--cache-dir", help="Response cache directory "
                  "(default: the user cache dir).")),
    "no_cache": (bool, typer.Option(False, "--no-cache", help="Do not read or write the response cache.")),
    "warmup": (bool, typer.Option(True, "--warmup/--no-warmup", help="Send each direction's first LLM "
               "call alone so the rest can hit the provider's prompt cache.")),
    "prompt_cache_key": (bool, typer.Option(True, "--prompt-cache-key/--no-prompt-cache-key",
                         help="Send OpenAI's prompt_cache_key (turn off for servers that reject it).")),
    "dry_run": (bool, typer.Option(False, "--dry-run", help="Print what the LLM calls would cost; call "
                "nothing.")),
    "price_in": (float | None, typer.Option(None, "--price-in", min=0, help="Price per million "
                 "prompt tokens (dry run).")),
    "price_out": (float | None, typer.Option(None, "--price-out", min=0, help="Price per million "
                  "completion tokens (dry run).")),
}
assert set(_OPTIONS) == {f.name for f in fields(JudgeOptions)}


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


#: Adds the judge options; the command receives them as ``opts``.
with_judge_options = inject_options("opts", _OPTIONS, lambda values: JudgeOptions(**values))
