"""Spreadsheet formula neutralisation for exported CSV cells, and its exact inverse.

A spreadsheet evaluates a cell that begins with ``=``, ``+``, ``-``, ``@``, a tab or a
carriage return. Export therefore prefixes such a cell with one apostrophe (``'``), which
spreadsheets show as a literal-text marker. To keep the escaping reversible, a cell that
*already* begins with apostrophes followed by one of those characters gets one more
apostrophe. Re-import strips exactly one apostrophe from cells that match that rule, so
``unescape_cell(escape_cell(s)) == s`` for every string ``s``.

Examples
--------
>>> escape_cell("=SUM(A1)")
"'=SUM(A1)"
>>> escape_cell("'=x")
"''=x"
>>> escape_cell("fine")
'fine'
>>> unescape_cell(escape_cell("'-1"))
"'-1"
"""

from __future__ import annotations

TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def needs_escape(cell: str) -> bool:
    """Whether ``cell`` begins (after any apostrophes) with a formula trigger."""
    stripped = cell.lstrip("'")
    return bool(stripped) and stripped[0] in TRIGGERS


def escape_cell(cell: str) -> str:
    """Neutralise ``cell`` for spreadsheets (see the module docstring)."""
    return "'" + cell if needs_escape(cell) else cell


def unescape_cell(cell: str) -> str:
    """Undo :func:`escape_cell`."""
    if cell.startswith("'") and needs_escape(cell[1:]):
        return cell[1:]
    return cell
