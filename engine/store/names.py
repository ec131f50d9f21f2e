"""What a dataset may be called, and how names are shown where they could mislead.

A dataset name is typed on command lines (``counterbias train P NAME``), prefixes the names of the
members trained on it (``NAME:minilm-l6``, where ``/`` and ``\\`` are not allowed), and is printed to
terminals. So a new name may not

* be empty or begin or end with white space,
* contain ``/`` or ``\\``,
* contain a control character (``\\x1b`` starts terminal escape sequences; tabs and newlines break
  listings) or a bidirectional override (text that reads differently than it is stored),
* consist of digits only: the CLI takes a dataset "by id or name", and ``1`` is read as an id.

:func:`check_dataset_name` refuses such a name with a named error; :func:`default_name` turns any
text (a file name) into an allowed name; :func:`shown` escapes what a terminal would interpret in a
name stored before these rules (or in a path).
"""

from __future__ import annotations

import re
import unicodedata

from engine.errors import DatasetNameError

__all__ = ["check_dataset_name", "default_name", "name_problem", "shown"]

#: Bidirectional embeddings, overrides and isolates (category Cf, but they reorder what is shown).
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _unsafe(ch: str) -> bool:
    """Whether ``ch`` is a control, separator-of-lines, surrogate or bidi character."""
    return unicodedata.category(ch) in ("Cc", "Cs", "Zl", "Zp") or ch in _BIDI


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a dataset (``None``: it can).

    Examples
    --------
    >>> name_problem("sst2-train") is None
    True
    >>> name_problem("sst2/train")
    "it contains '/'"
    """
    if not name or not name.strip():
        return "it is empty"
    if name.strip() != name:
        return "it begins or ends with white space"
    for ch in ("/", "\\"):
        if ch in name:
            return f"it contains {ch!r}"
    bad = sorted({ch for ch in name if _unsafe(ch)})
    if bad:
        return "it contains control characters (" + ", ".join(ascii(ch) for ch in bad) + ")"
    if name.isdigit():
        return "it consists of digits only, which the command line reads as a dataset id"
    return None


def check_dataset_name(name: str) -> None:
    """Refuse a name a new dataset cannot have (see the module doc).

    Raises
    ------
    DatasetNameError
        Saying what is wrong with the name.
    """
    problem = name_problem(name)
    if problem is not None:
        raise DatasetNameError(
            f"The dataset name {name!r} cannot be used: {problem}.",
            "Choose a name without '/', '\\' or control characters that is not only digits "
            "(e.g. 'sst2-train'); on the command line give it with --name.",
        )


def default_name(text: str) -> str:
    """An allowed name made from ``text``: unsafe characters and slashes become ``-``.

    Examples
    --------
    >>> default_name("sst2/train"), default_name("2019"), default_name("a\\x1b[31mb")
    ('sst2-train', 'dataset 2019', 'a-[31mb')
    """
    out = "".join("-" if ch in "/\\" or _unsafe(ch) else ch for ch in text)
    out = re.sub(r"-{2,}", "-", out).strip().strip("-").strip() or "dataset"
    return f"dataset {out}" if out.isdigit() else out


def shown(text: str) -> str:
    """``text`` with control, bidi and line-separator characters escaped as ``\\x1b``/``\\u202e``, for printing.

    Examples
    --------
    >>> shown("red\\x1b[31m name")
    'red\\\\x1b[31m name'
    """
    if not any(_unsafe(ch) for ch in text):
        return text
    return "".join(ascii(ch)[1:-1] if _unsafe(ch) else ch for ch in text)
