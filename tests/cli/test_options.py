"""The judge options: parsed by the real Typer app, each lands in the one field of the spec (or
the config key) it names, and the command line's defaults are the spec's."""
from pathlib import Path

import pytest
import typer

from factjudge.cli import register_commands
from factjudge.cli.app import app
from factjudge.cli.options import _OPTIONS, JudgeOptions, judge_options
from factjudge.judges.factory import JudgeSpec
from factjudge.models import Prices

# every option given, each with a value other than its default
EVERY_FLAG = ["--judge", "hybrid", "--model", "a", "--model", "b@http://127.0.0.1:1/v1",
              "--base-url", "http://127.0.0.1:2/v1", "--repeats", "3", "--jury-rules",
              "--api-key-env", "FJ_KEY", "--backend", "openai-sdk", "--structured-output", "json_object",
              "--timeout", "7.5", "--concurrency", "3", "--temperature", "0.5", "--max-tokens", "99",
              "--reasoning-effort", "low", "--reasoning", "brief", "--candidates", "same_type",
              "--cache-dir", "cache", "--no-cache", "--no-warmup", "--no-prompt-cache-key", "--dry-run",
              "--pin-id", "never", "--price-in", "1", "--price-cached", "0.5", "--price-out", "2"]


def parsed(command: str, args: list[str]) -> JudgeOptions:
    """The options of ``factjudge COMMAND ARGS`` as the command receives them."""
    register_commands([command])
    group = typer.main.get_command(app)
    cmd = group.get_command(group.make_context("factjudge", [command]), command)  # type: ignore[attr-defined]
    ctx = cmd.make_context(command, ["gold.json", "pred.json", *args] if command == "judge" else args)
    return judge_options({name: ctx.params[name] for name in _OPTIONS})


@pytest.mark.parametrize("command", ["judge", "eval", "calibrate"])
def test_the_defaults_of_the_command_line_are_the_specs(command):
    args = ["-o", "out"] if command == "eval" else []
    assert parsed(command, args) == JudgeOptions(JudgeSpec(), concurrency=8, prices=None, overrides=())


def test_every_flag_lands_in_its_field_of_the_spec():
    opts = parsed("eval", ["-o", "out", *EVERY_FLAG])
    assert opts.spec == JudgeSpec(
        kind="hybrid", models=("a", "b@http://127.0.0.1:1/v1"), base_url="http://127.0.0.1:2/v1", repeats=3,
        jury_rules=True, api_key_env="FJ_KEY", backend="openai-sdk", structured_output="json_object",
        timeout=7.5, temperature=0.5, max_tokens=99, reasoning_effort="low", cache=False,
        cache_dir=Path("cache"), warmup=False, prompt_cache_key=False, dry_run=True, pin_id="never",
        fit_slots=False)  # --concurrency given: a local server's slots do not set it (#36)
    assert opts.concurrency == 3
    assert parsed("eval", ["-o", "out"]).spec.fit_slots and parsed("eval", ["-o", "out"]).concurrency == 8
    assert opts.prices == Prices(input=1.0, cached=0.5, output=2.0)
    assert dict(opts.overrides) == {"reasoning": "brief", "candidates": "same_type"}


def test_config_keys_given_as_flags_override_the_file_and_the_rest_is_kept(tmp_path):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("entity_types: [revenue]\nreasoning: none\n", encoding="utf-8")
    config = parsed("eval", ["-o", "out", "--candidates", "same_type"]).config(cfg)
    assert (config.entity_types, config.reasoning, config.candidates) == (["revenue"], "none", "same_type")


def test_a_spec_takes_one_model_name_or_a_list_as_a_tuple():
    assert JudgeSpec(models=["a", "b"]).models == ("a", "b")  # type: ignore[arg-type]
    assert JudgeSpec(models="a").models == ("a",)  # type: ignore[arg-type]
    assert hash(JudgeSpec(models=["a"])) == hash(JudgeSpec(models=("a",)))  # type: ignore[arg-type]
