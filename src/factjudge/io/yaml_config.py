"""Reading a YAML judge config safely (kept apart so PyYAML is imported only when one is read)."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from ..errors import InputError
from .jsonl import MAX_INT_DIGITS, MAX_JSON_DEPTH


class _AliasRefused(yaml.YAMLError):
    def __init__(self, name: str, mark: Any) -> None:
        super().__init__(f"YAML alias '*{name}' refused: aliases can expand a small file into "
                         "gigabytes; write the value out")
        self.problem_mark = mark


class _ConfigLoader(yaml.SafeLoader):
    """SafeLoader without aliases and with bounded nesting: nine nested aliases in 300 bytes
    expand to hundreds of megabytes, and deep nesting overflows the recursive composer."""

    _depth = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        # (types-PyYAML leaves Parser.peek_event unannotated)
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise _AliasRefused(event.anchor, event.start_mark)
        if self._depth >= MAX_JSON_DEPTH and self.check_event(yaml.CollectionStartEvent):
            raise yaml.composer.ComposerError(
                None, None, f"nested deeper than {MAX_JSON_DEPTH} levels",
                self.peek_event().start_mark)  # type: ignore[no-untyped-call]
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        """PyYAML keeps the last of two equal keys silently (``one_to_one: true`` then
        ``one_to_one: false`` gave False without a word): the second is refused at its line."""
        seen: set[tuple[str, str]] = set()
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                key = (key_node.tag, key_node.value)
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key_node.value!r}: write each key once",
                        key_node.start_mark)
                seen.add(key)
        return super().construct_mapping(node, deep)


def _guarded(construct: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def wrapper(loader: Any, node: Any) -> Any:
        value = str(node.value)
        if node.tag.endswith(":int") and sum(ch.isdigit() for ch in value) > MAX_INT_DIGITS:
            problem = f"integer with more than {MAX_INT_DIGITS} digits"
        else:
            try:
                return construct(loader, node)
            except ValueError as exc:  # an impossible date such as 2023-02-30
                shown = value if len(value) <= 40 else value[:37] + "..."
                problem = f"cannot read {shown!r}: {exc}"
        raise yaml.constructor.ConstructorError(None, None, problem, node.start_mark)
    return wrapper


for _tag in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:timestamp"):
    _ConfigLoader.add_constructor(_tag, _guarded(yaml.SafeLoader.yaml_constructors[_tag]))


def load_yaml(text: str, path: Path) -> Any:
    """A YAML config's data, read without aliases, with bounded nesting and integer size."""
    loader = _ConfigLoader(text)
    try:
        return loader.get_single_data()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        if isinstance(exc, _AliasRefused):
            raise InputError(f"{path}: {where}{exc}") from None
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise InputError(f"{path}: {where}invalid YAML: {problem}") from None
    except RecursionError:  # the depth bound above should prevent it; the reader's line stays
        raise InputError(f"{path}: line {loader.get_mark().line + 1}: nested deeper than "
                         f"{MAX_JSON_DEPTH} levels") from None
    finally:
        loader.dispose()
