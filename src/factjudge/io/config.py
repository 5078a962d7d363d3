"""Judge configs (``.json``, ``.yaml``/``.yml``, or a mapping in Python) validated into
:class:`~factjudge.models.JudgeConfig`, with one-line errors that name the key and suggest the
closest known one."""
from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from ..errors import InputError
from ..models import JudgeConfig
from .jsonl import check_json_value, json_type, parse_json, read_settings


def _tolerance_example(name: str, value: object) -> str:
    bound = value if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.01
    return json.dumps({name: {"relative": bound}})


def _model_at(loc: list[str]) -> type[BaseModel] | None:
    """The model whose keys are valid where ``loc`` ends (``tolerances.value.x``: a Tolerance's,
    ``aliases.0.x``: an alias group's), followed through the config's type hints: lists and
    mappings of models, optional ones."""
    hint: Any = JudgeConfig
    for part in loc[:-1]:
        if isinstance(hint, type) and issubclass(hint, BaseModel):
            field = hint.model_fields.get(part)
            if field is None:
                return None
            hint = field.annotation
        else:  # list[X] and dict[str, X] hold X at every index or key
            hint = get_args(hint)[-1] if get_origin(hint) in (list, dict) and get_args(hint) else None
        # Optional[X], Annotated[X, ...]: the model in it
        while get_origin(hint) in (Union, UnionType, Annotated):
            hint = next((a for a in get_args(hint) if get_origin(a) in (list, dict)
                         or isinstance(a, type) and issubclass(a, BaseModel)), None)
    return hint if isinstance(hint, type) and issubclass(hint, BaseModel) else None


def _unknown_key(source: str, loc: list[str]) -> InputError:
    model = _model_at(loc) or JudgeConfig
    known = list(model.model_fields)
    key = ".".join(loc)
    close = difflib.get_close_matches(loc[-1], known, n=1)
    hint = f"did you mean '{close[0]}'?" if close else f"known keys: {', '.join(known)}"
    return InputError(f"{source}: unknown config key '{key}' ({hint})")


def _located(data: object, loc: tuple[Any, ...]) -> tuple[list[str], Any]:
    """The parts of a pydantic error location present in the input, and the value there."""
    parts, node = [], data
    for part in loc:
        if isinstance(part, str) and "[" in part and not (isinstance(node, dict) and part in node):
            continue  # a union's branch ("list[str]" of fields: a list or a list per fact_type)
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        else:
            break
        parts.append(str(part))
    return parts, node


def _config_error(source: str, data: object, exc: ValidationError) -> InputError:
    # of a union's errors, the one that reaches deepest into the input is about its form
    errors = exc.errors()
    err = max(errors, key=lambda e: len(_located(data, e["loc"])[0]))
    parts, node = _located(data, err["loc"])
    loc = ".".join(parts) or "(top level)"
    if err["type"] == "extra_forbidden" and parts:
        return _unknown_key(source, parts)
    if parts[:1] == ["tolerances"] and len(parts) <= 2 and err["type"] in ("dict_type", "model_type"):
        got = f"got {json_type(node)} {json.dumps(node, default=str)[:40]}"
        if len(parts) == 1:
            return InputError(f"{source}: config key 'tolerances': expected an object of fields "
                              f"and their bounds, {got}: write {_tolerance_example('value', node)}")
        return InputError(f"{source}: config key '{loc}': a tolerance is an object naming its "
                          f"bound, {got}: write {_tolerance_example(parts[1], node)} "
                          "(or {\"absolute\": ...})")
    msg = err["msg"]
    if err["type"] == "value_error":  # our own validators' messages, without pydantic's prefix
        msg = str(err["ctx"]["error"])
    if err["type"] == "int_type" and any(e["type"] == "float_type" for e in errors if e is not err):
        msg = "Input should be a number"  # not just the first branch of int | float
    return InputError(f"{source}: config key '{loc}': {msg}")


def parse_config(data: object, source: str = "config", base: Path | None = None) -> JudgeConfig:
    """``base``: the folder an ``aliases_file`` is relative to (the config file's; else the
    current one)."""
    if data is None:
        data = {}
    if isinstance(data, JudgeConfig):
        return _fields_listed(data, source)
    if not isinstance(data, Mapping):
        raise InputError(f"{source}: the config must be a mapping of keys to values")
    data = dict(data)
    check_json_value(data, source, label="config key")
    try:
        config = JudgeConfig.model_validate(data)
    except ValidationError as exc:
        raise _config_error(source, data, exc) from None
    return _with_alias_file(_fields_listed(config, source), source, base)


def _with_alias_file(config: JudgeConfig, source: str, base: Path | None) -> JudgeConfig:
    """The groups of ``aliases_file`` added to ``aliases`` (read once: the key is then cleared,
    so a config passed on is never read twice and its identity holds the groups themselves)."""
    if config.aliases_file is None:
        return config
    from .aliases import read_alias_file

    path = Path(config.aliases_file)
    if not path.is_absolute() and base is not None:
        path = base / path
    if not path.is_file():
        raise InputError(f"{source}: config key 'aliases_file': no file {path}")
    groups = read_alias_file(path)
    return config.model_copy(update={"aliases": [*config.aliases, *groups], "aliases_file": None})


def _fields_listed(config: JudgeConfig, source: str) -> JudgeConfig:
    """``fields`` that compares nothing would make every pair of one fact_type match (an empty
    list turned recall 0.0 into 1.0): refused. ``fact_type`` alone is such a list too."""
    named = config.fields.items() if isinstance(config.fields, dict) else [("", config.fields)]
    for fact_type, names in named:
        if names is None or [f for f in names if f != "fact_type"]:
            continue
        where = f"fields of {fact_type!r}" if fact_type else "'fields'"
        raise InputError(f"{source}: config key {where}: {names!r} names no field to compare "
                         "(empty), so every pair of the same fact_type would match: list them, or leave "
                         "'fields' out to compare the fields the gold facts carry")
    return config


def load_config(path: str | Path | None) -> JudgeConfig:
    """Load a ``.json`` / ``.yaml`` / ``.yml`` judge config; ``None`` gives the defaults."""
    if path is None:
        return JudgeConfig()
    path = Path(path)
    text = read_settings(path, "a JSON or YAML config")
    suffix = path.suffix.lower()
    if suffix == ".json":
        data = parse_json(text, path)
    elif suffix in (".yaml", ".yml"):
        from .yaml_config import load_yaml  # PyYAML is imported only for a YAML config
        data = load_yaml(text, path)
    else:
        raise InputError(f"{path}: config must be a .json, .yaml or .yml file")
    return parse_config(data, str(path), base=path.parent)


