"""``factjudge eval --ray [--ray-address ADDRESS]``: judge the documents on Ray workers (the ``ray``
extra) instead of in this process; the output folder is the same as a live run's.

The option parser of Typer takes no option with an optional value, so the address has an option
of its own: ``--ray`` alone starts a local Ray (or joins ``RAY_ADDRESS`` when it is set, as
``ray.init`` does); ``--ray-address auto`` joins the cluster running on this machine,
``--ray-address ray://HEAD:10001`` a remote one (and implies ``--ray``).
"""
from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from ..errors import FactJudgeError
from ..judges.factory import JudgeSpec
from ..judges.llm.backends import provider_of
from ..models import JudgeResult
from .app import say
from .evalrun import EvalRequest, finish, prepare, print_dry_run, progress_bar
from .options import inject_options


@dataclass(frozen=True)
class RaySettings:
    """``--ray`` / ``--ray-address`` as typed."""

    enabled: bool = False
    address: str | None = None

    @property
    def on(self) -> bool:
        return self.enabled or self.address is not None


RAY_OPTS: dict[str, tuple[Any, Any]] = {
    "ray": (bool, typer.Option(False, "--ray", help="Judge the documents on Ray workers (the ray extra "
            "of factjudge), each with its own pool of --concurrency calls. Alone: a local Ray (or "
            "RAY_ADDRESS when set).")),
    "ray_address": (str | None, typer.Option(None, "--ray-address", help="The Ray cluster to judge "
                    "on (implies --ray): auto (the one running on this machine), ray://HEAD:10001 "
                    "(Ray Client) or HEAD:6379.")),
}

#: The settings of the command being run, for :func:`ray_active` (the command's own signature is not
#: changed: the option travels beside it).
_CURRENT: contextvars.ContextVar[RaySettings] = contextvars.ContextVar(
    "factjudge_ray", default=RaySettings())  # noqa: B039  (frozen: cannot be mutated)


def with_ray(command: Callable[..., None]) -> Callable[..., None]:
    """Adds ``--ray`` and ``--ray-address`` to a command; :func:`ray_active` tells, while it runs,
    whether they were given."""

    @functools.wraps(command)
    def keep(*, ray: RaySettings, **kwargs: Any) -> None:
        token = _CURRENT.set(ray)
        try:
            command(**kwargs)
        finally:
            _CURRENT.reset(token)

    keep.__signature__ = inspect.signature(command)  # type: ignore[attr-defined]
    return inject_options("ray", RAY_OPTS, lambda v: RaySettings(v["ray"], v["ray_address"]))(keep)


def ray_active() -> RaySettings | None:
    """The ``--ray`` settings of the running command, or None when it runs without Ray."""
    settings = _CURRENT.get()
    return settings if settings.on else None


def _worker_env(spec: JudgeSpec) -> dict[str, str]:
    """What a judge reads from the environment, for the workers of a cluster started elsewhere
    (a local Ray's workers inherit this environment). Sent with the workers' arguments, not as
    the job's ``runtime_env``, which Ray shows on every worker's command line and in its logs."""
    provider = provider_of(spec.backend)  # ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL for anthropic
    names = [spec.api_key_env or provider.key_env, provider.url_env, "FACTJUDGE_CACHE_DIR"]
    return {n: os.environ[n] for n in names if os.environ.get(n)}


@contextlib.contextmanager
def ray_messages_to_log() -> Iterator[Path]:
    """Ray's C++ core writes some messages to file descriptor 2, past Python's logging: while Ray
    runs, descriptor 2 is a log file, and ``sys.stderr`` (the summary line, the progress bar), when
    it is descriptor 2, a copy of the real one. The log is deleted unless Ray itself failed: then
    it is named."""
    fd, name = tempfile.mkstemp(prefix="factjudge-ray-", suffix=".log")
    log = Path(name)
    before = sys.stderr
    try:
        ours = before.fileno() == 2
    except (AttributeError, OSError, ValueError):  # a StringIO (a test runner's capture)
        ours = False
    before.flush()
    real = os.dup(2)
    if ours:
        sys.stderr = open(os.dup(real), "w", encoding=getattr(before, "encoding", None) or "utf-8",
                          errors="backslashreplace", buffering=1)
    os.dup2(fd, 2)
    os.close(fd)
    ok = False
    try:
        yield log
        ok = True
    except (FactJudgeError, KeyboardInterrupt):
        ok = True  # factjudge's own one line says it all
        raise
    finally:
        sys.stderr.flush()
        os.dup2(real, 2)
        os.close(real)
        if ours:
            sys.stderr.close()
            sys.stderr = before
        if ok or not log.stat().st_size:
            log.unlink(missing_ok=True)
        else:
            say(f"factjudge: Ray's own messages are in {log}")


def eval_on_ray(req: EvalRequest) -> int:
    """``factjudge eval`` with ``--ray``: the same checks, files, summary line and exit code as
    the live run, the documents judged by Ray workers."""
    # only --ray runs load the Ray runner (and through it ray)
    from ..runners.ray_data import RayHooks, RayInput, RayPool, evaluate_ray, import_ray, init_ray

    judge, problems = prepare(req)
    if req.spec.dry_run:  # a preview makes no call: nothing for Ray to do
        return print_dry_run(req, judge)
    import_ray()  # before any Ray output: a missing extra is one line
    if "FACTJUDGE_CACHE_DIR" in os.environ:  # the workers' folder is not this one's
        os.environ["FACTJUDGE_CACHE_DIR"] = str(Path(os.environ["FACTJUDGE_CACHE_DIR"]).expanduser().resolve())
    ray_settings = ray_active() or RaySettings(enabled=True)
    started = time.perf_counter()
    progress = progress_bar(req, judge)

    def document_done(info: Any, result: JudgeResult) -> None:
        # the bar counts questions as they are answered; here they come a document at a time
        n = info.questions
        progress.on_answers(n, min(n, result.usage.cache_hits), min(n, result.metrics.errors))
        progress.on_document(info.doc_id)

    with ray_messages_to_log(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Ray's deprecation notes are not for factjudge's users
        try:
            joining = ray_settings.address is not None or bool(os.environ.get("RAY_ADDRESS"))
            init_ray(ray_settings.address)
            with progress:
                # the workers build their own judge from the spec (and their environment's API key)
                outcome = evaluate_ray(req.data, req.config, req.spec, req.output_dir, judge=judge,
                                       pool=RayPool(concurrency=req.judge.concurrency),
                                       settings=req.settings, source=RayInput(skipped=problems),
                                       overwrite=req.overwrite,
                                       hooks=RayHooks(on_start=progress.on_start, on_result=document_done),
                                       worker_env=_worker_env(req.spec) if joining else None)
        finally:
            asyncio.run(judge.aclose())
            ray = sys.modules.get("ray")
            if ray is not None and ray.is_initialized():
                ray.shutdown()
    return finish(req, outcome, problems, started)
