"""Adapting to what a server refuses, before it has answered once: a refused parameter or system
role changes the request for the rest of the run, refused schema keywords are left out, and
``structured_output: auto`` falls back to the next weaker mode. Each change is said once, and
becomes a part of every later plan's key (:mod:`.request`)."""
from __future__ import annotations

import json
import re
from collections.abc import Callable

from ...errors import JudgeSetupError
from .backends import BackendError
from .prompts import STRUCTURED_OUTPUT_MODES, refused_keywords
from .request import COMPLETION_TOKENS, NO_TEMPERATURE, SYSTEM_IN_USER, Plan, budget
from .settings import Sampling

#: A server error body naming these refused the structured-output request, not the question.
_NAMES_RESPONSE_FORMAT = re.compile(r"response_format|json_schema|json_object", re.IGNORECASE)
_ROLE_PARAM = re.compile(r"^messages\[\d+\]\.role$")
#: A refusal says so; without ``param`` (a proxy, another server) its message names what it refuses.
#: vLLM's "'max_tokens' or 'max_completion_tokens' is too large" names a parameter it takes.
#: Other wordings: Anthropic's "`temperature` may only be set to 1 when thinking is enabled.",
#: "This model only accepts temperature=1 (got 0).", pydantic's "extra fields not permitted" (422),
#: "max_tokens is deprecated for this model, use max_completion_tokens".
_REFUSES = re.compile(r"unsupported|not supported|does not support|not allowed|unrecognized|unknown"
                      r"|not permitted|\bonly\b|deprecated|extra (?:fields|inputs)", re.IGNORECASE)
#: The request fields a refusal may name other than structured output's. A 400 or 422 naming one
#: of them and nothing of structured output refused that field: falling back to a weaker
#: structured-output mode would change nothing and blame the wrong thing.
_PARAMETERS = re.compile(r"\b(temperature|max_completion_tokens|max_tokens|reasoning_effort|"
                         r"prompt_cache_key|top_p|top_k|thinking)\b")
_NAMES_STRUCTURED = re.compile(r"response_format|json_schema|json_object|output_config|output_format|"
                               r"structured|schema|tool", re.IGNORECASE)
#: What the user can change for each field the judge cannot adapt by itself.
_OPTION_FOR = {"temperature": "--temperature", "max_tokens": "--max-tokens",
               "max_completion_tokens": "--max-tokens", "reasoning_effort": "--reasoning-effort",
               "prompt_cache_key": "--no-prompt-cache-key"}
_NAMED = ((re.compile(r"\bmax_tokens\b"), COMPLETION_TOKENS),
          (re.compile(r"\btemperature\b", re.IGNORECASE), NO_TEMPERATURE),
          (re.compile(r"\bsystem\b.{0,60}\brole\b|\brole\b.{0,60}\bsystem\b", re.IGNORECASE | re.DOTALL),
           SYSTEM_IN_USER))
_ADAPTED_TO = {NO_TEMPERATURE: "sending no temperature (the model's default)",
               COMPLETION_TOKENS: "sending the budget as max_completion_tokens",
               SYSTEM_IN_USER: "putting the system message at the head of the first user message"}


def refused_parameter(body: str) -> str | None:
    """The adaptation a server's error body asks for (:data:`NO_TEMPERATURE`...): by its
    ``error.param`` when it has one, else by the parameter its message says it refuses; None when
    it names nothing the judge can send otherwise."""
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    err = data.get("error") if isinstance(data, dict) else None
    err = err if isinstance(err, dict) else {}
    param, message = err.get("param"), str(err.get("message") or body)
    if not _REFUSES.search(message):  # OpenAI's "max_tokens is too large: ..." has param max_tokens too
        return None
    if isinstance(param, str) and param:
        if _ROLE_PARAM.match(param):
            return SYSTEM_IN_USER if "system" in message else None
        return {"max_tokens": COMPLETION_TOKENS, "temperature": NO_TEMPERATURE}.get(param)
    return next((what for pattern, what in _NAMED if pattern.search(message)), None)


def refused_field(body: str) -> str | None:
    """The request field a refusal names when it names one and nothing of structured output (then
    the structured-output mode is not to blame), else None."""
    if _NAMES_STRUCTURED.search(body):
        return None
    found = _PARAMETERS.search(body)
    return found.group(1) if found else None


def sends(plan: Plan, what: str) -> bool:
    """Whether ``plan``'s request (not yet adapted to ``what``) has what ``what`` changes:
    a temperature is always sent, ``max_tokens`` unless there is no bound."""
    if what == SYSTEM_IN_USER:
        return bool(plan.prefix) and plan.prefix[0].get("role") == "system"
    return what == NO_TEMPERATURE or plan.budget is not None


class Adaptation:
    """How the requests are sent now: the structured-output mode, what was adapted and the schema
    keywords left out. ``say`` tells the user of a change (redacted by the caller), ``stop`` makes
    the error that ends a run."""

    def __init__(self, sampling: Sampling, host: str, say: Callable[[str], None],
                 stop: Callable[[str], JudgeSetupError]) -> None:
        mode = sampling.structured_output
        self.modes = list(STRUCTURED_OUTPUT_MODES) if mode == "auto" else [mode]
        self.mode_index = 0
        self.sampling, self.host, self.say, self.stop = sampling, host, say, stop
        #: What the server refused and how requests were adapted, in order (refused_parameter).
        self.adapted: tuple[str, ...] = ()
        #: Schema keywords the server refused by name, left out for the rest of the run
        self.drop: frozenset[str] = frozenset()

    @property
    def mode(self) -> str:
        return self.modes[self.mode_index]

    def now(self) -> tuple[str, tuple[str, ...], frozenset[str]]:
        """What a plan made now is made of: (mode, adapted, drop)."""
        return self.mode, self.adapted, self.drop

    def outdated(self, plan: Plan) -> bool:
        """Whether ``plan`` was made before another question changed how requests are sent."""
        return (plan.mode, plan.adapted, plan.drop) != self.now()

    def retry_refused(self, plan: Plan, exc: BackendError) -> bool:
        """Before any answer: whether a refusal of ``plan``'s request changed how requests are sent
        (or another question's already did), so it goes again."""
        return self.adapt(plan, exc) or self.drop_keywords(plan, exc) or self.switch_mode(plan.mode, exc)

    def switch_mode(self, used: str, exc: BackendError) -> bool:
        """``auto``: fall back to the next structured-output mode when the server refuses this one
        before answering anything. True when the request should be sent again."""
        status = exc.status or 0
        if len(self.modes) == 1 or exc.kind != "status" or not (
                status in (400, 422) or (status >= 500 and _NAMES_RESPONSE_FORMAT.search(exc.body))):
            return False
        if used != self.mode:  # another question already switched
            return True
        field = refused_field(exc.body) if status in (400, 422) else None
        if field is not None:
            option = _OPTION_FOR.get(field)
            hint = f"; change {option} or " if option else "; "
            raise self.stop(f"the server at {self.host} refused the request's {field} "
                            f"({exc.message}){hint}check that the model is the one meant")
        if self.mode_index + 1 >= len(self.modes):
            return False
        self.mode_index += 1
        self.say(f"factjudge: the server at {self.host} refused structured "
                 f"output {used!r} ({exc.message}); using {self.mode!r} from now on")
        return True

    def adapt(self, plan: Plan, exc: BackendError) -> bool:
        """Before the server has answered once, a 400 refusing a parameter or the system role
        changes the request for the rest of the run (each adaptation once, said once). True when
        the request should be sent again."""
        if exc.kind != "status" or exc.status not in (400, 422):
            return False
        what = refused_parameter(exc.body)
        if what is None or what in plan.adapted or not sends(plan, what):
            return False  # sent adapted and still refused: nothing more to change
        if what not in self.adapted:  # else another question already adapted
            self.adapted = (*self.adapted, what)
            bound = budget(self.sampling, self.adapted)
            tail = (f" ({bound} tokens: reasoning counts against it)"
                    if what == COMPLETION_TOKENS and bound else "")
            self.say(f"factjudge: the server at {self.host} refused a request "
                     f"({exc.message}); {_ADAPTED_TO[what]}{tail} from now on")
        return True

    def drop_keywords(self, plan: Plan, exc: BackendError) -> bool:
        """A refusal naming schema keywords the server does not know (Gemini's OpenAI-compatible
        endpoint: ``additionalProperties``) leaves them out for the rest of the run, before any
        fallback to a weaker structured-output mode. True when the request should be sent again."""
        if exc.kind != "status" or exc.status != 400 or plan.mode == "none":
            return False
        refused = refused_keywords(exc.body)
        if not refused or refused <= plan.drop:
            return False
        if plan.drop != self.drop:  # another question already dropped them
            return True
        self.drop |= refused  # a part of every plan's key: the next plan leaves them out
        self.say(f"factjudge: the server at {self.host} refused the schema "
                 f"keyword(s) {', '.join(sorted(refused))}; leaving them out from now on")
        return True
