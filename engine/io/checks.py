"""Warnings about data that imports but is probably not what the user meant.

An import does not fail for these; it fixes what can be fixed safely and says so:

=======  ===================================================================================
code     warning
=======  ===================================================================================
CB250    the header names a column more than once (read as ``name``, ``name.1``, …)
CB251    labels held invisible characters (zero-width, bidi controls) or decomposed accents;
         labels are NFC-normalised with such characters removed, so ``pos`` and
         ``pos`` + U+200B are one class
CB252    JSON ``NaN``/``Infinity`` values were read as empty (a NaN label is a missing label)
CB253    NUL bytes in text, labels or ids were removed
CB254    the id column holds duplicate ids
CB255    the label column has very many distinct values (perhaps the wrong column)
=======  ===================================================================================

Each warning is a :class:`DataWarning` with a count and the first data-row numbers, part
of the import's result (:class:`engine.io.ImportResult`) and of the wizard's preview.
"""

from __future__ import annotations

import unicodedata
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

#: More distinct labels than this draws a CB255 warning.
MANY_CLASSES = 100
#: Sample row numbers kept per warning.
SAMPLE_ROWS = 5


@dataclass(frozen=True)
class DataWarning:
    """One warning about an imported file.

    Parameters
    ----------
    code
        ``CB250``–``CB259`` (see the module docstring).
    message
        What was found, where, and what the import did about it.
    count
        How many rows (or columns, for a header warning) it concerns.
    rows
        The first data-row numbers concerned (1-based, as in error messages).
    """

    code: str
    message: str
    count: int = 0
    rows: tuple[int, ...] = ()

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "count": self.count, "rows": list(self.rows)}


def _rows_text(rows: Iterable[int], count: int) -> str:
    rows = list(rows)
    if not rows:
        return ""
    more = ", …" if count > len(rows) else ""
    return f" (data row{'s' if count > 1 else ''} {', '.join(str(r) for r in rows)}{more})"


class _Tally:
    """A count with the first few row numbers."""

    def __init__(self) -> None:
        self.count = 0
        self.rows: list[int] = []

    def add(self, row: int) -> None:
        self.count += 1
        if len(self.rows) < SAMPLE_ROWS:
            self.rows.append(row)


_INVISIBLE_CATEGORIES = ("Cf", "Cc")


def clean_label(raw: str) -> str:
    """A label NFC-normalised, without invisible characters or surrounding space.

    Invisible means Unicode categories Cf (zero-width space/joiners, bidi controls such as
    U+202E, soft hyphen, BOM) and Cc (control characters such as NUL).

    Examples
    --------
    >>> clean_label("pos\\u200b"), clean_label("\\u202eneg "), clean_label("cafe\\u0301")
    ('pos', 'neg', 'café')
    """
    value = raw
    if not value.isascii():
        value = unicodedata.normalize("NFC", value)
        value = "".join(c for c in value if unicodedata.category(c) not in _INVISIBLE_CATEGORIES)
    elif "\x00" in value or not value.isprintable():
        value = "".join(c for c in value if unicodedata.category(c) not in _INVISIBLE_CATEGORIES)
    return value.strip()


@dataclass
class HeaderInfo:
    """Duplicate column names found in a header, and what they were renamed to."""

    duplicates: dict[str, list[int]] = field(default_factory=dict)  # name -> 1-based column positions
    renamed: dict[str, list[str]] = field(default_factory=dict)  # name -> names used, in order

    def warning(self, mapping: dict[str, str | None] | None = None) -> DataWarning | None:
        """The CB250 warning, naming the column each mapped role uses (``mapping``: role -> column)."""
        if not self.duplicates:
            return None
        parts = []
        for name, cols in self.duplicates.items():
            names = self.renamed[name]
            used = [
                f"the {role} column is {column!r} (column {cols[names.index(column)]})"
                for role, column in (mapping or {}).items() if column in names
            ]
            parts.append(
                f"{name!r} {len(cols)} times (columns {', '.join(map(str, cols))}, read as "
                f"{', '.join(repr(n) for n in names)})" + (": " + ", ".join(used) if used else "")
            )
        return DataWarning(
            "CB250",
            "the header names " + "; ".join(parts) + ". The plain name means the first of them; "
            "map a renamed column to use another one.",
            count=sum(len(c) for c in self.duplicates.values()),
        )


def dedupe_header(header: list[str]) -> tuple[list[str], HeaderInfo]:
    """Rename repeated column names ``name``, ``name.1``, ``name.2`` (as pandas does).

    Examples
    --------
    >>> dedupe_header(["text", "text", "label"])[0]
    ['text', 'text.1', 'label']
    """
    info = HeaderInfo()
    seen: dict[str, int] = {}
    taken = set(header)
    out: list[str] = []
    positions: dict[str, list[int]] = {}
    for i, name in enumerate(header, start=1):
        positions.setdefault(name, []).append(i)
        if name not in seen:
            seen[name] = 0
            out.append(name)
            continue
        k = seen[name]
        new = name
        while new in taken:
            k += 1
            new = f"{name}.{k}"
        seen[name] = k
        taken.add(new)
        out.append(new)
    for name, cols in positions.items():
        if len(cols) > 1:
            info.duplicates[name] = cols
            info.renamed[name] = [out[c - 1] for c in cols]
    return out, info


class RowChecks:
    """Accumulates the row-level warnings (CB251–CB255) over one import or preview.

    Parameters
    ----------
    label_column
        Name of the mapped label column (for messages).
    id_column
        Name of the mapped id column, or ``None``.
    """

    def __init__(self, label_column: str | None = None, id_column: str | None = None) -> None:
        self.label_column = label_column
        self.id_column = id_column
        self.nul = _Tally()
        self.nul_columns: dict[str, int] = {}
        self.nonfinite = _Tally()
        self.nonfinite_columns: dict[str, int] = {}
        self.relabelled = _Tally()
        self.label_changes: dict[tuple[str, str], int] = {}
        self._id_hashes = array("q")
        self._id_rows = array("q")

    # ---------------------------------------------------------------- per value
    def strip_nul(self, value: str, row: int, column: str) -> str:
        """``value`` without NUL bytes (counted)."""
        if "\x00" not in value:
            return value
        self.nul.add(row)
        self.nul_columns[column] = self.nul_columns.get(column, 0) + 1
        return value.replace("\x00", "")

    def note_nonfinite(self, row: int, columns: Iterable[str]) -> None:
        """Record that ``columns`` of ``row`` held JSON NaN/Infinity (read as empty)."""
        columns = list(columns)
        if columns:
            self.nonfinite.add(row)
            for c in columns:
                self.nonfinite_columns[c] = self.nonfinite_columns.get(c, 0) + 1

    def label(self, raw: str, cleaned: str, row: int) -> None:
        """Record a label whose cleaning did more than strip surrounding space."""
        if cleaned != raw.strip():
            self.relabelled.add(row)
            key = (raw, cleaned)
            if key in self.label_changes or len(self.label_changes) < 50:
                self.label_changes[key] = self.label_changes.get(key, 0) + 1

    def ext_id(self, value: str, row: int) -> None:
        """Remember an id (as a 64-bit hash) to find duplicates at the end."""
        self._id_hashes.append(hash(value))
        self._id_rows.append(row)

    # ---------------------------------------------------------------- results
    def duplicate_ids(self) -> tuple[int, list[tuple[int, int]], list[int]]:
        """``(extra rows, [(first row, repeated row)...], [write index of each repeated row])``.

        Rows are compared by a 64-bit hash of the id; ``extra rows`` counts every row whose
        id appeared on an earlier row.
        """
        n = len(self._id_hashes)
        if n < 2:
            return 0, [], []
        import numpy as np

        hashes = np.frombuffer(self._id_hashes, dtype=np.int64)
        order = np.argsort(hashes, kind="stable")
        ordered = hashes[order]
        repeat = np.zeros(n, dtype=bool)
        repeat[1:] = ordered[1:] == ordered[:-1]
        extra = int(repeat.sum())
        if not extra:
            return 0, [], []
        # First occurrence of each group: the start of its run in the sorted order.
        starts = np.maximum.accumulate(np.where(~repeat, np.arange(n), 0))
        repeated_idx = order[repeat]
        first_idx = order[starts[repeat]]
        pick = np.argsort(repeated_idx, kind="stable")[:SAMPLE_ROWS]
        rows = np.frombuffer(self._id_rows, dtype=np.int64)
        pairs = [(int(rows[first_idx[k]]), int(rows[repeated_idx[k]])) for k in pick]
        return extra, pairs, [int(repeated_idx[k]) for k in pick]

    def warnings(self, labels: dict[str, int] | None = None, rows: int = 0,
                 id_values: list[str] | None = None) -> list[DataWarning]:
        """The warnings found, in code order.

        Parameters
        ----------
        labels
            Final ``{label: count}`` (for CB255).
        rows
            Rows read (for CB255's message).
        id_values
            The id values of the sample duplicate rows, if known (for CB254's message).
        """
        out: list[DataWarning] = []
        if self.relabelled.count:
            changes = ", ".join(
                f"{raw!r} → {clean!r} ({n:,} row{'s' if n > 1 else ''})"
                for (raw, clean), n in list(self.label_changes.items())[:6]
            )
            out.append(DataWarning(
                "CB251",
                f"{self.relabelled.count:,} label{'s' if self.relabelled.count > 1 else ''} held invisible "
                f"characters (zero-width or bidi control) or decomposed accents: {changes}. Labels are "
                "NFC-normalised and such characters removed, so spellings that look the same are one class"
                f"{_rows_text(self.relabelled.rows, self.relabelled.count)}.",
                count=self.relabelled.count, rows=tuple(self.relabelled.rows),
            ))
        if self.nonfinite.count:
            cols = ", ".join(repr(c) for c in self.nonfinite_columns)
            label_note = ""
            if self.label_column in self.nonfinite_columns:
                label_note = " A NaN label is a missing label."
            out.append(DataWarning(
                "CB252",
                f"{self.nonfinite.count:,} row{'s' if self.nonfinite.count > 1 else ''} hold JSON NaN or Infinity "
                f"in {cols}{_rows_text(self.nonfinite.rows, self.nonfinite.count)}; such values are read as "
                f"empty.{label_note}",
                count=self.nonfinite.count, rows=tuple(self.nonfinite.rows),
            ))
        if self.nul.count:
            cols = ", ".join(repr(c) for c in self.nul_columns)
            out.append(DataWarning(
                "CB253",
                f"{self.nul.count:,} row{'s' if self.nul.count > 1 else ''} held NUL bytes (\\x00) in {cols}; they "
                f"were removed{_rows_text(self.nul.rows, self.nul.count)}. NUL bytes usually mean a damaged "
                "file or a binary column.",
                count=self.nul.count, rows=tuple(self.nul.rows),
            ))
        extra, pairs, _ = self.duplicate_ids()
        if extra:
            shown = []
            for k, (first, again) in enumerate(pairs):
                value = f"{id_values[k]!r} " if id_values and k < len(id_values) else ""
                shown.append(f"id {value}on data rows {first} and {again}")
            out.append(DataWarning(
                "CB254",
                f"{extra:,} row{'s' if extra > 1 else ''} repeat an id used on an earlier row "
                f"(column {self.id_column!r}): {'; '.join(shown)}{', …' if extra > len(pairs) else ''}. "
                "All rows were imported; if ids should be unique, remove the duplicates or map no id column.",
                count=extra, rows=tuple(again for _, again in pairs),
            ))
        if labels is not None and len(labels) > MANY_CLASSES:
            first = ", ".join(repr(k) for k in list(labels)[:5])
            out.append(DataWarning(
                "CB255",
                f"the label column {self.label_column!r} has {len(labels):,} distinct values in {rows:,} rows "
                f"({first}, …): it may be the wrong column (an id or a text column?). Check the mapping.",
                count=len(labels),
            ))
        return out
