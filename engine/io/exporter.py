"""Export a dataset version as CSV or JSONL with provenance columns.

Columns: ``example_id`` (id in the project), ``id`` (the id column of the imported file, if
any), the text field(s), ``label``, ``split``, then provenance: ``source``
(original/augmented), ``method``, ``parent_id`` (the ``example_id`` an augmented row was made
from), ``target_label``, ``created_at`` and ``provenance`` (JSON: judge scores, backend,
model…). CSV cells are neutralised for spreadsheets by :mod:`engine.io.escaping`; JSONL is
written verbatim. The file is written to a temporary name and renamed when complete.
"""

from __future__ import annotations

import csv
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.errors import ExportError
from engine.io.escaping import escape_cell
from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress
from engine.store import Project

EXPORT_FORMATS = ("csv", "jsonl")
PROVENANCE = ("source", "method", "parent_id", "target_label", "created_at", "provenance")


@dataclass(frozen=True)
class ExportResult:
    """What an export wrote."""

    path: Path
    rows: int
    columns: list[str]


def export_columns(task: str) -> list[str]:
    """Column order of an export for a ``single`` or ``pair`` dataset."""
    texts = ["premise", "hypothesis"] if task == "pair" else ["text"]
    return ["example_id", "id", *texts, "label", "split", *PROVENANCE]


def _row(example: dict[str, Any], columns: list[str]) -> dict[str, Any]:
    out = {}
    for column in columns:
        if column == "example_id":
            value = example["id"]
        elif column == "id":
            value = example["ext_id"]
        elif column == "provenance":
            value = example["meta"]
        else:
            value = example[column]
        out[column] = value
    return out


def export_dataset(
    project: Project,
    dataset: int | str,
    path: str | Path,
    *,
    format: str | None = None,
    bom: bool = True,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> ExportResult:
    """Write every example of a dataset version to ``path``.

    Parameters
    ----------
    project
        The open project.
    dataset
        Dataset id or name.
    path
        Output file; ``.csv`` or ``.jsonl`` (or give ``format``).
    format
        ``"csv"`` or ``"jsonl"``; ``None`` takes it from the extension.
    bom
        Start a CSV with a UTF-8 byte-order mark so that spreadsheet programs read it as UTF-8.
    progress, cancel
        Progress callback and cancel token (checked every 5,000 rows).

    Raises
    ------
    ExportError
        Unknown format or unwritable path. A partial file is never left behind.
    engine.errors.Cancelled
        If cancelled; no file is written.
    """
    path = Path(path)
    cancel = ensure_token(cancel)
    info = project.dataset(dataset)
    fmt = (format or path.suffix.lstrip(".")).lower()
    if fmt not in EXPORT_FORMATS:
        raise ExportError(
            f"Cannot export to {path.name!r}: unknown format {fmt!r}.",
            "Use a .csv or .jsonl file name, or choose the format explicitly.",
        )
    columns = export_columns(info.task)
    total = max(info.row_count, 1)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    except OSError as exc:
        raise ExportError(f"Cannot write to {path.parent}: {exc.strerror}.", "Choose a folder you can write to.") from exc
    rows = 0
    try:
        encoding = "utf-8-sig" if (bom and fmt == "csv") else "utf-8"
        with os.fdopen(fd, "w", encoding=encoding, newline="") as handle:
            if fmt == "csv":
                writer = csv.writer(handle, lineterminator="\r\n")
                writer.writerow(columns)
            for example in project.iter_examples(info.id):
                row = _row(example, columns)
                if fmt == "csv":
                    writer.writerow(["" if v is None else escape_cell(str(v)) for v in row.values()])
                else:
                    if row["provenance"]:
                        row["provenance"] = json.loads(row["provenance"])
                    handle.write(json.dumps(row, ensure_ascii=False) + "\n")
                rows += 1
                if rows % 5000 == 0:
                    cancel.raise_if_cancelled()
                    progress(rows / total, f"Wrote {rows:,} rows")
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    progress(1.0, f"Exported {rows:,} rows to {path.name}")
    return ExportResult(path=path, rows=rows, columns=columns)
