"""The shape of the code, kept: short functions (the one exception is ``reconcile``, whose numbered
steps mirror its docstring)."""
import ast

from evalkit import ROOT

LONGEST = 60
EXCEPTIONS = {("core/reconcile.py", "reconcile")}


def test_no_function_is_over_60_lines():
    package = ROOT / "src" / "factjudge"
    long = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                where = (path.relative_to(package).as_posix(), node.name)
                if lines > LONGEST and where not in EXCEPTIONS:
                    long.append(f"{where[0]}:{node.lineno} {node.name} ({lines} lines)")
    assert not long, long
