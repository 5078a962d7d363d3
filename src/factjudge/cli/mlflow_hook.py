"""``eval --mlflow``: log a finished run to MLflow (the ``mlflow`` extra).

The run goes where MLflow's own settings say: ``MLFLOW_TRACKING_URI`` (a folder, a database or a
tracking server) and ``MLFLOW_EXPERIMENT_NAME``. It gets the parameters that tell runs apart (judge,
model, config hash, dataset), the figures (micro and macro P/R/F1, the 95% intervals, per fact
type, ERROR facts, usage and cost) and the report and summary as artifacts. Logged at the end of
every way of running eval (live, batch, Ray: :func:`.evalrun.finish` calls :func:`after_run`),
from ``summary.json`` as written. mlflow is imported only then: it takes 2.5 s to import (measured,
mlflow-skinny 3.17.2), which no run without ``--mlflow`` pays.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import re
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import typer

from ..errors import FactJudgeError, InputError
from ..io.runfolder import FACTS_CSV, REPORT_HTML, REPORT_MD, REVIEW_HTML, RUN, SUMMARY
from ..reports.text import RATIO_KEYS, config_hash, in_scope_facts, judge_label
from .app import say
from .options import inject_options

INSTALL = "pip install 'factjudge[mlflow]' (or pip install mlflow-skinny)"
# help is Rich markup: [mlflow] would be a tag, and vanish, without its backslash
_INSTALL_MARKUP = INSTALL.replace("[", r"\[")
MLFLOW_OPT = typer.Option(False, "--mlflow", help="Also log the run to MLflow: parameters, metrics, the "
                          "report and summary (MLFLOW_TRACKING_URI and MLFLOW_EXPERIMENT_NAME say where). "
                          f"Needs the mlflow extra: {_INSTALL_MARKUP}.")

#: Adds ``--mlflow``; the command receives it as ``mlflow``.
with_mlflow = inject_options("mlflow", {"mlflow": (bool, MLFLOW_OPT)}, lambda values: bool(values["mlflow"]))

#: Set while an eval command that asked for ``--mlflow`` runs (see :func:`tracking`).
_WANTED: ContextVar[bool] = ContextVar("factjudge_mlflow", default=False)
#: MLflow keeps letters, digits and ``_ - . / space`` in a metric or parameter name (and ``:``
#: except on Windows): mlflow/utils/validation.py, ``validate_param_and_metric_name``.
_UNSAFE = re.compile(r"[^\w\-. /]")
#: In a fact type's part of a metric name, ``/`` is replaced too: MLflow's ``_validate_metric_name``
#: also refuses a name that ``posixpath.normpath`` changes (``path_not_unique``: ``a//b``, ``rate/``,
#: ``.``, ``..``, ``x/../y``, a leading ``/``), as names may become file paths in its stores.
_UNSAFE_IN_TYPE = re.compile(r"[^\w\-. ]")
#: The suffix of a fact type's renamed part: ``-`` and 8 hex digits of the name's SHA-256.
_HASHED = re.compile(r"-[0-9a-f]{8}\Z")
#: MLflow's longest metric name (``MAX_ENTITY_KEY_LENGTH``, 250) less ``type/``, ``/tp_predicted``
#: and the hash suffix.
_TYPE_CHARS = 250 - len("type/") - len("/tp_predicted") - 9
#: The artifact mapping each fact type to its part of the metric names.
FACT_TYPES_ARTIFACT = "fact_types.json"
#: ``user:password@`` in a tracking URI that an MLflow error message repeats
_CREDENTIALS = re.compile(r"//[^/@\s]+@")
#: MLflow's limit on a parameter value (6000 characters since 2.x; 500 before).
PARAM_MAX = 500
#: What factjudge waits for MLflow at most, after the outputs are written.
DEADLINE_SECONDS = 60.0
#: MLflow's HTTP settings where the user has not set them (MLflow's defaults: 120 s, 7 retries):
#: a silent tracking server is given up on in about 25 s, one answering 503 in about 3 s.
HTTP_DEFAULTS = {"MLFLOW_HTTP_REQUEST_TIMEOUT": "10", "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1"}
COUNT_KEYS = ("tp_gold", "fn", "tp_predicted", "fp", "errors", "out_of_scope_gold", "out_of_scope_predicted")
USAGE_KEYS = ("llm_calls", "cache_hits", "retries", "prompt_tokens", "completion_tokens", "cached_prompt_tokens",
              "seconds", "cost")


@contextlib.contextmanager
def tracking(wanted: bool) -> Iterator[None]:
    """Within it, a finished eval run is logged to MLflow when ``wanted``. Checks first that mlflow
    can be imported: without the extra ``--mlflow`` is one line and exit 2, before any call."""
    if wanted and importlib.util.find_spec("mlflow") is None:
        raise InputError(f"--mlflow needs MLflow, which is not installed: {INSTALL}")
    token = _WANTED.set(wanted)
    try:
        yield
    finally:
        _WANTED.reset(token)


def after_run(output_dir: Path, quiet: bool, code: int) -> int:
    """Log the finished run in ``output_dir`` when ``--mlflow`` asked for it; the exit code.
    Logging that fails is one line (the outputs are kept) and exit 2 for a run that had passed; a
    run's own non-zero ``code`` (1: ERROR facts, 3: below a gate) is kept, as CI reads it."""
    if not _WANTED.get():
        return code
    try:
        run_id = log_run(output_dir)
    except FactJudgeError as exc:
        say(f"factjudge: error: {exc}")
        return code or 2
    if not quiet:
        say(f"logged to MLflow: run {run_id}")
    return code


def _name(text: str) -> str:
    return _UNSAFE.sub("_", text)


def type_metric_names(fact_types: Iterable[str]) -> dict[str, str]:
    """Each fact type's part of its metric names (``type/PART/f1``): the name itself where MLflow
    takes it as it is, else the name made safe and shortened, with ``-`` and 8 hex digits of its
    hash. Distinct types get distinct parts: a kept name never ends like a hash suffix (one that
    does is renamed too), and two renamed ones differ in their hash (``revenue (USD)`` and
    ``revenue [USD]`` were both ``revenue _USD_`` and one's figures hid the other's)."""
    names = {}
    for fact_type in fact_types:
        part = _UNSAFE_IN_TYPE.sub("_", fact_type)
        if part != fact_type or part in ("", ".", "..") or len(part) > _TYPE_CHARS or _HASHED.search(part):
            digest = hashlib.sha256(fact_type.encode("utf-8", "surrogatepass")).hexdigest()
            part = f"{part[:_TYPE_CHARS]}-{digest[:8]}"
        names[fact_type] = part
    return names


def run_params(summary: Mapping[str, Any]) -> dict[str, str]:
    """What tells runs apart: the judge and its settings, the config's hash, the dataset."""
    judge = summary.get("judge") or {}
    prov = summary.get("provenance") or {}
    boot = summary.get("bootstrap") or {}
    params = {"judge": str(judge.get("name", "?")), "model": str(judge.get("model", "")),
              "judge_label": judge_label(judge), "config_hash": config_hash(summary.get("config")),
              "dataset": ", ".join(str(p) for p in prov.get("inputs") or []) or "?",
              "factjudge": str(prov.get("factjudge", "?")), "documents": str(summary.get("documents", 0)),
              "bootstrap_resamples": str(boot.get("resamples", "?")), "bootstrap_seed": str(boot.get("seed", "?"))}
    params.update({_name(f"judge.{k}"): v if isinstance(v, str) else json.dumps(v, sort_keys=True)
                   for k, v in judge.items() if k not in ("name", "model")})
    return {k: v if len(v) <= PARAM_MAX else v[:PARAM_MAX - 1] + "\u2026" for k, v in params.items()}


def _ratios(prefix: str, figures: Mapping[str, Any]) -> dict[str, float]:
    return {f"{prefix}{k}": float(figures[k]) for k in RATIO_KEYS if figures.get(k) is not None}


def run_metrics(summary: Mapping[str, Any]) -> dict[str, float]:
    """Micro and macro P/R/F1 with the 95% intervals, counts, the ERROR share, usage and cost, and
    per fact type P/R/F1 and counts (``type/NAME/f1``, NAME from :func:`type_metric_names`). An
    undefined figure is left out (MLflow takes numbers only)."""
    micro, ci = summary.get("micro") or {}, summary.get("ci95") or {}
    metrics = {**_ratios("micro_", micro), **_ratios("macro_", summary.get("macro") or {})}
    for k in RATIO_KEYS:
        if ci.get(k):
            metrics[f"micro_{k}_ci95_low"], metrics[f"micro_{k}_ci95_high"] = map(float, ci[k])
    metrics.update({k: float(micro.get(k) or 0) for k in COUNT_KEYS})
    total = in_scope_facts(micro)
    metrics["error_share"] = micro.get("errors", 0) / total if total else 0.0
    usage = summary.get("usage") or {}
    metrics.update({f"usage_{k}": float(usage[k]) for k in USAGE_KEYS if isinstance(usage.get(k), (int, float))})
    by_type = {str(t): c for t, c in (summary.get("by_fact_type") or {}).items()}
    for fact_type, part in type_metric_names(by_type).items():
        c, prefix = by_type[fact_type], f"type/{part}/"
        metrics.update(_ratios(prefix, c))
        metrics.update({prefix + k: float(c.get(k) or 0) for k in ("tp_gold", "fn", "tp_predicted", "fp", "errors")})
    return metrics


@contextlib.contextmanager
def _http_bounds() -> Iterator[None]:
    """MLflow's HTTP settings bounded where the user has not set them: by default it waits 120 s
    for an answer and retries 7 times with backoff (a silent tracking server kept eval running
    over 20 minutes, one answering 503 took 248 s)."""
    added = {k: v for k, v in HTTP_DEFAULTS.items() if k not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for k in added:
            os.environ.pop(k, None)


def log_run(output_dir: Path) -> str:
    """Log the eval run in ``output_dir`` (its ``summary.json``) as one MLflow run; its id. Gives
    up after :data:`DEADLINE_SECONDS` whatever MLflow does: the logging runs in a daemon thread,
    left behind (the process exits without waiting for it)."""
    import mlflow  # only with --mlflow: see the module's docstring

    outcome: list[str | BaseException] = []

    def work() -> None:
        try:
            outcome.append(_log(mlflow, output_dir))
        except BaseException as exc:  # noqa: BLE001  (handed to the waiting thread below)
            outcome.append(exc)

    where = _CREDENTIALS.sub("//***@", mlflow.get_tracking_uri())
    kept = f"the outputs are kept in {output_dir}"
    with _http_bounds():
        thread = threading.Thread(target=work, name="factjudge-mlflow", daemon=True)
        thread.start()
        thread.join(DEADLINE_SECONDS)
    if not outcome:
        raise FactJudgeError(f"--mlflow: MLflow did not finish within {DEADLINE_SECONDS:g} s logging to {where} "
                             f"(given up; the MLflow run may be left unfinished); {kept}")
    result = outcome[0]
    if isinstance(result, (mlflow.exceptions.MlflowException, OSError)):
        first = " ".join(str(result).split())[:400]  # MLflow's messages run to 600 characters
        raise FactJudgeError(f"--mlflow: logging to MLflow at {where} failed: "
                             f"{_CREDENTIALS.sub('//***@', first)}; {kept}") from None
    if isinstance(result, BaseException):
        raise result
    return result


def _log(mlflow: Any, output_dir: Path) -> str:
    summary = json.loads((output_dir / SUMMARY).read_text(encoding="utf-8"))
    artifacts = [output_dir / n for n in (SUMMARY, REPORT_HTML, REPORT_MD, REVIEW_HTML, RUN, FACTS_CSV)]
    inputs = (summary.get("provenance") or {}).get("inputs") or ["?"]
    name = f"{judge_label(summary.get('judge') or {})} on {Path(str(inputs[0])).name}"
    with mlflow.start_run(run_name=name) as run:
        mlflow.log_params(run_params(summary))
        mlflow.log_metrics(run_metrics(summary))
        # the fact type of each type/NAME/ metric (NAME differs where MLflow cannot take the name)
        mlflow.log_dict(type_metric_names(str(t) for t in summary.get("by_fact_type") or {}), FACT_TYPES_ARTIFACT)
        for path in artifacts:
            if path.exists():
                mlflow.log_artifact(str(path))
        return str(run.info.run_id)
