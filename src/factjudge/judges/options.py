"""What a judge kind takes: the settings of :class:`~.factory.JudgeSpec` each kind declares in its
registry entry (:data:`~.factory.JUDGE_KINDS`), and the options a kind adds of its own.

As Inspect AI's ``ScorerSpec(scorer, args)`` re-creates a scorer from its name and its own
arguments, a spec is a kind's name, the settings every LLM judge shares (its fields) and the kind's
own options (``JudgeSpec.args``). A kind's own option is declared once, as a :class:`KindOption` in
its registry entry: the command line makes its flag from it, the factory checks it against its
range, and a kind that does not declare it refuses it.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..util.bounds import Bound

#: The value of a kind's own option: what a flag gives and pickles for Ray.
OptionValue = str | int | float | bool


@dataclass(frozen=True)
class KindOption:
    """An option of one judge kind: its key in ``JudgeSpec.args`` (a Python name), its flag and
    help on the command line, its default (whose type is the option's type) and, for a number,
    its range."""

    name: str
    flag: str
    help: str
    default: OptionValue
    bound: Bound | None = None


@dataclass(frozen=True)
class SpecSetting:
    """A field of ``JudgeSpec`` only some kinds take, and the one line a kind that does not take
    it answers when the field is given (differs from its default). ``refusal`` None: a setting
    of the LLM a kind without one ignores (the defaults every run carries, which a config or a
    shell alias may set for every kind)."""

    refusal: str | None = None


_NO_LLM = "--model/--base-url are for the LLM judge; drop them or use --judge llm"
_NO_JURY = "--repeats and --jury-rules make a jury of LLM judges: add --model"

#: The fields of ``JudgeSpec`` a kind takes or not, in the order they are checked; ``kind`` is
#: every kind's. A kind's entry names those it takes (:data:`LLM_SETTINGS` for a kind asking an LLM).
SPEC_SETTINGS: dict[str, SpecSetting] = {
    "models": SpecSetting(_NO_LLM),
    "base_url": SpecSetting(_NO_LLM),
    "repeats": SpecSetting(_NO_JURY),
    "jury_rules": SpecSetting(_NO_JURY),
    "dry_run": SpecSetting("--dry-run previews LLM calls: add --model (and --judge llm or hybrid)"),
    **{name: SpecSetting() for name in (
        "api_key_env", "backend", "structured_output", "timeout", "retries", "temperature", "max_tokens",
        "reasoning_effort", "cache", "cache_dir", "warmup", "prompt_cache_key", "pin_id", "fit_slots")},
}
#: What a kind that asks an LLM (a seat per model, a jury of them) takes: every setting.
LLM_SETTINGS = frozenset(SPEC_SETTINGS)
