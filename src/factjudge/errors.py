"""The one error tree of factjudge.

Every error meant for a user derives from :class:`FactJudgeError`; its message is one line that
names the file, the record or the server, so the CLI prints it and exits 2 without a traceback.
"""
from __future__ import annotations


class FactJudgeError(Exception):
    """Root of factjudge's errors."""


class InputError(FactJudgeError):
    """Bad user input: a file, a record, an option or a config value that cannot be used."""


class JudgeSetupError(FactJudgeError):
    """The judge cannot be used as configured (no API key, a key, model or request format the
    server refuses, a server never reached): it stops the run instead of failing every fact."""


class FactJudgeWarning(UserWarning):
    """A likely mistake in the inputs or a run (the ``warnings`` of a result or summary), issued
    through Python's :mod:`warnings` by the library calls (``run_judge``, ``evaluate_dataset``):
    filter it with ``warnings.simplefilter("ignore", FactJudgeWarning)``."""


class InvalidAnswer(FactJudgeError):
    """A judge's answer breaks the schema or the rules; the message is told back to the model."""


class PromptTooLarge(FactJudgeError):
    """Not even one candidate fits the prompt budget."""


class OptionalDependencyError(ImportError, InputError):
    """An optional dependency is not installed. An ``ImportError`` for Python callers and an
    ``InputError`` for the CLI (a one-line message, exit 2)."""


def missing_dependency(what: str, exc: ImportError, package: str) -> OptionalDependencyError:
    """The error for an optional dependency that failed to import; when it is installed but
    broken (say, built for another numpy), the import error is kept in the message."""
    if (exc.name or "").split(".")[0] != package:
        what += f" (importing {package} failed: {' '.join(str(exc).split())})"
    return OptionalDependencyError(what)
