"""mkdocs hook: the reference pages' generated parts, rendered from the code at build time so they
cannot drift from it.

- ``{{ cli_reference }}``: every command of the Typer app, its usage, arguments and options with
  their help and defaults, as typer's own ``typer ... utils docs`` renders them.
- ``{{ config_keys }}``: the config keys of ``JudgeConfig.model_json_schema()`` with their type and
  default, beside the meaning written in the page's hand-written table (which the marker follows).
  A key of the schema without a meaning there, or a meaning for a key the schema lacks, fails the
  build: a new config key cannot ship undocumented.
- ``{{ python_api }}``: one mkdocstrings block per public name of ``factjudge.__all__``.
"""
from __future__ import annotations

import json
import re
from typing import Any

CONFIG_ROW = re.compile(r"^\| `(\w+)` \| (.*) \|$")


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if "{{ cli_reference }}" in markdown:
        markdown = markdown.replace("{{ cli_reference }}", cli_reference())
    if "{{ config_keys }}" in markdown:
        markdown = config_keys(markdown, page.file.src_path)
    if "{{ python_api }}" in markdown:
        markdown = markdown.replace("{{ python_api }}", python_api())
    return markdown


# -- the command line ------------------------------------------------------------------------------

def cli_reference() -> str:
    import typer
    from typer.cli import get_docs_for_click  # what `typer MODULE utils docs` writes

    from factjudge.cli import app, register_commands

    register_commands()  # all of them: a run registers only the command it runs
    group = typer.main.get_command(app)
    ctx = typer.Context(group, info_name="factjudge")
    # indent 1: the page's own title is the only h1, each command an h3 under "factjudge"
    return get_docs_for_click(obj=group, ctx=ctx, name="factjudge", indent=1).strip() + "\n"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


# -- the config keys -------------------------------------------------------------------------------

def config_keys(markdown: str, where: str) -> str:
    from factjudge.models import JudgeConfig

    schema = JudgeConfig.model_json_schema()
    # from the fields, not from JudgeConfig().model_dump(): its serializer leaves out keys at their
    # default (so run hashes stay as they were), which would show them as null here
    defaults = {name: _json_default(field.get_default(call_default_factory=True))
                for name, field in JudgeConfig.model_fields.items()}
    lines = markdown.splitlines()
    meanings: dict[str, str] = {}
    kept = []
    for line in lines:
        match = CONFIG_ROW.match(line)
        if match:
            meanings[match[1]] = match[2]
        elif line.strip() not in ("| key | meaning |", "| --- | --- |"):
            kept.append(line)
    keys = list(schema["properties"])
    undocumented = [k for k in keys if k not in meanings]
    unknown = [k for k in meanings if k not in keys]
    if undocumented or unknown:
        raise ValueError(f"{where}: config keys without a meaning in the table: {undocumented}; "
                         f"meanings for keys JudgeConfig does not have: {unknown}")
    rows = ["| key | type | default | meaning |", "| --- | --- | --- | --- |"]
    for key in keys:
        prop = schema["properties"][key]
        default = json.dumps(defaults[key], ensure_ascii=False)
        rows.append(f"| `{key}` | {_schema_type(prop)} | `{default}` | {meanings[key]} |")
    parts = ["\n".join(rows), ""]
    for name, sub in schema.get("$defs", {}).items():
        parts.append(f"**{name}** ({_cell(sub.get('description', ''))}):\n")
        parts.append("| key | type | default |\n| --- | --- | --- |")
        for key, prop in sub["properties"].items():
            default = json.dumps(prop["default"]) if "default" in prop else "required"
            parts.append(f"| `{key}` | {_schema_type(prop)} | `{default}` |")
        parts.append("")
    return "\n".join(kept).replace("{{ config_keys }}", "\n".join(parts))


def _json_default(value: Any) -> Any:
    """A default in JSON form, a model's with every one of its fields (its own serializer may leave
    some out at their default)."""
    from pydantic import BaseModel
    from pydantic_core import to_jsonable_python

    if isinstance(value, BaseModel):
        return {name: _json_default(getattr(value, name)) for name in type(value).model_fields}
    return to_jsonable_python(value)


def _schema_type(prop: dict[str, Any]) -> str:
    return _type_of(prop).replace("|", "\\|")


def _type_of(prop: dict[str, Any]) -> str:
    if "$ref" in prop:
        return prop["$ref"].rsplit("/", 1)[-1]
    if "enum" in prop:
        return " | ".join(f"`{v}`" for v in prop["enum"])
    if "anyOf" in prop:
        kinds = [_type_of(p) for p in prop["anyOf"]]
        if kinds[:2] == ["integer", "number"]:
            kinds = ["number", *kinds[2:]]
        text = " | ".join(dict.fromkeys(kinds))
    else:
        kind = prop.get("type", "any")
        if kind == "array":
            text = f"list of {_type_of(prop.get('items', {}))}"
        elif kind == "object" and isinstance(prop.get("additionalProperties"), dict):
            text = f"map of string to {_type_of(prop['additionalProperties'])}"
        else:
            text = {"object": "mapping"}.get(kind, kind)
    bounds = [f"{sign} {prop[k]}" for k, sign in (("minimum", ">="), ("ge", ">="), ("maximum", "<="), ("le", "<="))
              if k in prop]
    return text + (f" ({', '.join(bounds)})" if bounds else "")


# -- the Python API --------------------------------------------------------------------------------

def python_api() -> str:
    import factjudge

    homes: dict[str, str] = factjudge._HOMES  # the one list of public names and their modules
    return "\n".join(f"::: factjudge.{homes[name]}.{name}\n" for name in factjudge.__all__)
