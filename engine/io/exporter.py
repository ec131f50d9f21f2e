"""Export a dataset version as CSV or JSONL with provenance columns.

Columns: ``example_id`` (id in the project), ``id`` (the id column of the imported file, if
any), the text field(s), ``label``, ``split``, then provenance: ``source``
(original/augmented), ``method``, ``parent_id`` (the ``example_id`` an augmented row was made
from), ``target_label``, ``created_at`` and ``provenance`` (JSON text: judge scores, backend,
model…; a string in JSONL too, so that every field is flat and the file can be imported again).

Two CSV styles (:data:`CSV_STYLES`): ``"spreadsheet"`` (the default) neutralises cells that a
spreadsheet would run as a formula (:mod:`engine.io.escaping`: ``=1+1`` and ``-1`` are written
``'=1+1`` and ``'-1``) and starts the file with a UTF-8 byte-order mark; ``"raw"`` writes every
value as it is, for programs (pandas, R, ``csv``), with no mark. JSONL is always written verbatim.

Round trips are stable: a row that came from an earlier export keeps the provenance it was
exported with (its original ``created_at``, ``parent_id`` and ``provenance``) instead of
nesting it one level deeper on each cycle, so import -> export -> import -> export writes the
same bytes (into a fresh project, where ``example_id`` s are the same too).

The target is checked by :func:`engine.io.output.check_output_path` (never the project, its side
files or ``_files`` folder, never a device, FIFO, folder or, unless asked, a link) and the file
is written by :func:`engine.io.output.pending_output`: to a hidden ``.<name>.<random>.part`` file
beside the target, renamed when complete, with the umask's permissions. The exporting process
holds a lock on its part file; part files of the same target whose lock is free (left by a
killed export) are removed by the next export. A full disk raises
:class:`~engine.errors.DiskFullError`, any other write failure :class:`ExportError`; in
both cases no partial file is left.
"""

from __future__ import annotations

import csv
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.errors import CounterbiasError, ExportError
from engine.io.escaping import escape_cell
from engine.io.output import check_output_path, glob_escape, pending_output, remove_stale_parts
from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress
from engine.store import Project
from engine.store.failures import DISK_FULL_ERRNOS, disk_full_error

__all__ = ["CSV_STYLES", "EXPORT_FORMATS", "ExportResult", "export_columns", "export_dataset", "glob_escape",
           "remove_stale_parts"]

EXPORT_FORMATS = ("csv", "jsonl")
#: ``spreadsheet``: formula cells neutralised, UTF-8 BOM; ``raw``: values as they are, for programs.
CSV_STYLES = ("spreadsheet", "raw")
PROVENANCE = ("source", "method", "parent_id", "target_label", "created_at", "provenance")


@dataclass(frozen=True)
class ExportResult:
    """What an export wrote."""

    path: Path
    rows: int
    columns: list[str]
    #: The CSV style written (``None`` for JSONL).
    csv_style: str | None = None
    #: Stale part files of earlier, killed exports of this target that were removed.
    removed_parts: int = 0

    def describe(self) -> str:
        """One line for the user: rows, file and what kind of CSV it is."""
        line = f"wrote {self.rows:,} rows to {self.path}"
        if self.csv_style == "spreadsheet":
            line += " (CSV for spreadsheets: cells starting with = + - @ are prefixed with ')"
        elif self.csv_style == "raw":
            line += " (raw CSV for programs: values as they are, not safe to open in a spreadsheet)"
        if self.removed_parts:
            line += f"; removed {self.removed_parts} unfinished part file(s) of earlier exports"
        return line


def export_columns(task: str) -> list[str]:
    """Column order of an export for a ``single`` or ``pair`` dataset."""
    texts = ["premise", "hypothesis"] if task == "pair" else ["text"]
    return ["example_id", "id", *texts, "label", "split", *PROVENANCE]


def _row(example: dict[str, Any], columns: list[str]) -> dict[str, Any]:
    out = {}
    carried = _carried_provenance(example["meta"])
    for column in columns:
        if column == "example_id":
            value = example["id"]
        elif column == "id":  # the source file's id; a row that came without one keeps its example id
            value = example["ext_id"] if example["ext_id"] not in (None, "") else str(example["id"])
        elif column == "provenance":
            value = example["meta"] if carried is None else carried.get("provenance")
        elif column in ("created_at", "parent_id") and carried is not None and carried.get(column):
            value = carried[column]
            if column == "parent_id" and isinstance(value, str) and value.isdigit():
                value = int(value)
        else:
            value = example[column]
        out[column] = value
    return out


def _carried_provenance(meta: str | None) -> dict[str, Any] | None:
    """The provenance an earlier export gave a row, if the row was imported from one.

    The importer keeps an exported file's ``parent_id``, ``created_at`` and ``provenance``
    cells as ``{"imported_provenance": {...}}``; exporting them as they were (not that wrapper)
    keeps the round trip stable.
    """
    if not meta or '"imported_provenance"' not in meta:
        return None
    try:
        data = json.loads(meta)
    except ValueError:
        return None
    if not isinstance(data, dict) or set(data) != {"imported_provenance"}:
        return None
    inner = data["imported_provenance"]
    return inner if isinstance(inner, dict) else None


def export_dataset(
    project: Project,
    dataset: int | str,
    path: str | Path,
    *,
    format: str | None = None,
    csv_style: str = "spreadsheet",
    bom: bool | None = None,
    follow_symlinks: bool = False,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> ExportResult:
    """Write every example of a dataset version to ``path``.

    Parameters
    ----------
    project
        The open project (read-only is fine).
    dataset
        Dataset id or name.
    path
        Output file; ``.csv`` or ``.jsonl`` (or give ``format``).
    format
        ``"csv"`` or ``"jsonl"``; ``None`` takes it from the extension.
    csv_style
        ``"spreadsheet"`` (formula cells neutralised) or ``"raw"`` (values as they are); see
        :data:`CSV_STYLES`. Ignored for JSONL.
    bom
        Start a CSV with a UTF-8 byte-order mark so that spreadsheet programs read it as UTF-8;
        ``None``: for the spreadsheet style only.
    follow_symlinks
        When ``path`` is a symbolic link, replace the file it points to (the link stays a link);
        without it a link is refused.
    progress, cancel
        Progress callback and cancel token (checked every 5,000 rows).

    Raises
    ------
    ExportError
        Unknown format or style, or an unwritable path. A partial file is never left behind.
    engine.errors.OutputPathError
        ``path`` is the project, its side files or ``_files`` folder (or inside it), another
        project, a folder, a device, FIFO or socket, or a link (without ``follow_symlinks``); see
        :func:`engine.io.output.check_output_path`. Checked whatever ``format`` says.
    engine.errors.DiskFullError
        The disk (or a file-size limit) ran out; the message says about how much was needed.
    engine.errors.Cancelled
        If cancelled; no file is written.
    """
    path = Path(path)
    cancel = ensure_token(cancel)
    check_output_path(path, project=project.path, follow_symlinks=follow_symlinks)  # whatever the format says
    info = project.dataset(dataset)
    fmt = (format or path.suffix.lstrip(".")).lower()
    if fmt not in EXPORT_FORMATS:
        raise ExportError(
            f"Cannot export to {path.name!r}: unknown format {fmt!r}.",
            "Use a .csv or .jsonl file name, or choose the format explicitly.",
        )
    if csv_style not in CSV_STYLES:
        raise ExportError(
            f"Unknown CSV style {csv_style!r}.",
            "Use 'spreadsheet' (safe to open in Excel/LibreOffice) or 'raw' (values as they are, for programs).",
        )
    escape = escape_cell if csv_style == "spreadsheet" else str
    if bom is None:
        bom = csv_style == "spreadsheet"
    columns = export_columns(info.task)
    total = max(info.row_count, 1)
    rows = 0

    def failed(exc: OSError, target: Path, part: Path | None) -> CounterbiasError:
        return _write_error(exc, path, _size(part) if part is not None else 0, rows, total)

    encoding = "utf-8-sig" if (bom and fmt == "csv") else "utf-8"
    with pending_output(path, project=project.path, follow_symlinks=follow_symlinks, make_parents=True,
                        what="the export", on_error=failed) as pending:
        with os.fdopen(os.dup(pending.fd), "w", encoding=encoding, newline="") as handle:
            if fmt == "csv":
                writer = csv.writer(handle, lineterminator="\r\n")
                writer.writerow(columns)
            for example in project.iter_examples(info.id):
                row = _row(example, columns)
                if fmt == "csv":
                    writer.writerow(["" if v is None else escape(str(v)) for v in row.values()])
                else:
                    handle.write(json.dumps(row, ensure_ascii=False) + "\n")
                rows += 1
                if rows % 5000 == 0:
                    cancel.raise_if_cancelled()
                    progress(rows / total, f"Wrote {rows:,} rows")
    progress(1.0, f"Exported {rows:,} rows to {path.name}")
    return ExportResult(path=path, rows=rows, columns=columns, csv_style=csv_style if fmt == "csv" else None,
                        removed_parts=pending.removed_parts)


def _size(name: str | Path) -> int:
    try:
        return os.path.getsize(name)
    except OSError:
        return 0


def _write_error(exc: OSError, path: Path, written: int, rows: int, total: int) -> CounterbiasError:
    """The named error for a failed write of the export (full disk, or not allowed)."""
    if exc.errno in DISK_FULL_ERRNOS:
        needed = None
        if rows:
            needed = max(0, int(written / rows * total) - written)
        return disk_full_error(path, "writing the export", needed=needed, kind="file")
    return ExportError(
        f"Cannot write the export {path}: {exc.strerror or exc}.",
        "Choose a file in a folder you can write to (and that is not read-only).",
    )
