"""Public names a package loads on first use (PEP 562): importing the package stays cheap, and a
run loads only the modules of the names it uses (a rules run never the LLM stack)."""
from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, homes: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of the package named ``package``: a name of ``homes``
    is imported from its module (relative to the package) when first asked for, then kept in the
    package's namespace; any other name is an AttributeError."""

    def __getattr__(name: str) -> Any:
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f".{homes[name]}", package), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        namespace = vars(sys.modules[package])
        return sorted({*namespace, *namespace.get("__all__", ())})

    return __getattr__, __dir__
