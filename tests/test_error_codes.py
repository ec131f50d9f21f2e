"""Every ``CBnnn`` code names one error: no two error classes (or warnings) share a code."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PRODUCT = ("engine", "app", "widgets")


def _codes() -> dict[str, list[str]]:
    """Code -> the places that define it (``module:Class`` for ``code = "CBnnn"`` in a class body)."""
    found: dict[str, list[str]] = defaultdict(list)
    for package in PRODUCT:
        for path in sorted((REPO / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            rel = path.relative_to(REPO).as_posix()
            for node in ast.walk(tree):
                if not isinstance(node, ast.ClassDef):
                    continue
                for stmt in node.body:
                    if (isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "code"
                                                             for t in stmt.targets)
                            and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)):
                        found[stmt.value.value].append(f"{rel}:{node.name}")
    return found


def test_every_error_code_is_defined_once():
    codes = _codes()
    assert len(codes) > 100  # the scan finds the error classes at all
    shared = {code: where for code, where in codes.items() if len(where) > 1}
    assert not shared, f"codes defined more than once: {shared}"


def test_every_error_code_has_the_cb_form():
    bad = [code for code in _codes() if not (len(code) == 5 and code.startswith("CB") and code[2:].isdigit())]
    assert not bad, bad
