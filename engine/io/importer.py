"""Import a CSV/TSV/JSONL file into a project as a dataset, all or nothing.

The file is parsed on the calling thread and streamed in batches to the project's writer
(:func:`engine.store.write_stream`), so a 500k-row file is never held in memory twice. The
rows are committed in short slices (about 10 ms of writing each) so that other writes, such
as a review decision from the GUI, run in between; until the import finishes, its dataset
(or the rows it appends to an existing one) is hidden from every read, and a failed or
cancelled import deletes what it wrote (:mod:`engine.store.staging`): the project is left
exactly as it was. An import killed mid-way is removed the next time the project is opened.
"""

from __future__ import annotations

import json
import logging
import re
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.errors import (
    DatasetNameTakenError,
    DuplicateColumnError,
    EmptyTextError,
    Location,
    MissingLabelError,
    ProjectError,
    SingleClassError,
)
from engine.io.checks import DataWarning, HeaderInfo, RowChecks, clean_label
from engine.io.escaping import unescape_cell
from engine.io.mapping import ColumnMapping, detect_mapping
from engine.io.readers import ReadOptions, TableReader
from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress
from engine.store import DatasetInfo, Project, insert_dataset, staging, write_stream
from engine.store.names import check_dataset_name, default_name
from engine.store.schema import now

log = logging.getLogger(__name__)

BATCH_ROWS = 5000
#: Rows parsed between two looks for other writes waiting (see :func:`_batches`).
PAUSE_EVERY = 64
#: Columns written by :mod:`engine.io.exporter`; a header holding all of them marks our own export.
PROVENANCE_COLUMNS = ("source", "method", "parent_id", "target_label", "created_at")


@dataclass(frozen=True)
class ImportOptions:
    """What to do with rows that cannot be used, and where they go.

    Parameters
    ----------
    name
        Name of the new dataset (default: folder and file name, :func:`default_dataset_name`); see
        :func:`engine.store.names.check_dataset_name` for what it may hold. Ignored with ``append_to``.
    split
        Split given to rows without a split column value (default ``"train"``).
    append_to
        Id of an existing original dataset to add the rows to (e.g. the dev file after the
        train file); ``None`` creates a new dataset.
    skip_empty_text, skip_missing_labels
        Skip such rows (counted in the result) instead of failing.
    unescape_formulas
        Undo the export's spreadsheet escaping; ``None`` does so when the header carries our
        provenance columns.
    labels
        The task's label set for a new dataset whose file may hold only some of them (a set of
        counterfactuals that all flip toward one label); without it a file with one class is refused.
    """

    name: str | None = None
    split: str = "train"
    append_to: int | None = None
    skip_empty_text: bool = False
    skip_missing_labels: bool = False
    unescape_formulas: bool | None = None
    labels: tuple[str, ...] = ()


@dataclass
class ImportResult:
    """What an import wrote.

    ``warnings`` lists what imported but probably is not what was meant (duplicate header
    names, labels with invisible characters, NaN labels, NUL bytes, duplicate ids, very many
    classes): see :mod:`engine.io.checks`.
    """

    dataset: DatasetInfo
    rows: int
    skipped_empty_text: int = 0
    skipped_missing_label: int = 0
    label_counts: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    warnings: list[DataWarning] = field(default_factory=list)


@dataclass(frozen=True)
class Preview:
    """The first rows of a file with the detected options and mapping (for the import wizard).

    ``warnings`` are those found in the first ``scan_rows`` rows with the detected mapping;
    :meth:`check` recomputes them for another mapping. ``problem`` is a named error met
    after the displayed rows (the import would stop there), or ``None``.
    """

    header: list[str]
    rows: list[dict[str, Any]]
    options: ReadOptions
    mapping: ColumnMapping
    warnings: list[DataWarning] = field(default_factory=list)
    problem: Exception | None = None
    header_info: HeaderInfo = field(default_factory=HeaderInfo)
    sample: list[tuple[int, dict[str, Any], tuple[str, ...]]] = field(default_factory=list, repr=False)

    def check(self, mapping: ColumnMapping) -> list[DataWarning]:
        """The warnings the scanned rows give with ``mapping`` (duplicate header names included)."""
        return _scan_warnings(self.header_info, self.sample, mapping)


def preview_file(path: str | Path, options: ReadOptions | None = None, *, n_rows: int = 50,
                 scan_rows: int = 5000) -> Preview:
    """Read the header and up to ``n_rows`` rows and guess the column mapping.

    Up to ``scan_rows`` rows are read to look for warnings (:mod:`engine.io.checks`). Raises
    the same named errors as :func:`import_file` for problems in the displayed rows; one
    further down is returned as ``Preview.problem``.
    """
    from engine.errors import CounterbiasError

    with TableReader(path, options) as reader:
        rows: list[dict[str, Any]] = []
        sample: list[tuple[int, dict[str, Any], tuple[str, ...]]] = []
        problem: Exception | None = None
        records = reader.records()
        while len(sample) < max(scan_rows, n_rows):
            try:
                item = next(records, None)
            except CounterbiasError as exc:
                if len(rows) < n_rows:
                    raise
                problem = exc
                break
            if item is None:
                break
            row_no, _, record = item
            sample.append((row_no, record, reader.row_nonfinite))
            if len(rows) < n_rows:
                rows.append(record)
        mapping = detect_mapping(reader.header)
        return Preview(reader.header, rows, reader.options, mapping,
                       warnings=_scan_warnings(reader.header_info, sample, mapping), problem=problem,
                       header_info=reader.header_info, sample=sample)


def _scan_warnings(header_info: HeaderInfo, sample: list[tuple[int, dict[str, Any], tuple[str, ...]]],
                   mapping: ColumnMapping) -> list[DataWarning]:
    """Warnings for rows already read (the preview's): same checks as the import's."""
    out = [w for w in [header_info.warning(mapping.as_dict())] if w]
    checks = RowChecks(mapping.label, mapping.id)
    labels = _LabelSet(checks=checks)
    for row_no, record, nonfinite in sample:
        checks.note_nonfinite(row_no, nonfinite)
        for column in {*mapping.text_columns.values(), mapping.label, mapping.id, mapping.split}:
            value = record.get(column) if column else None
            if isinstance(value, str):
                checks.strip_nul(value, row_no, column)  # type: ignore[arg-type]
        raw = record.get(mapping.label) if mapping.label else None
        if isinstance(raw, str) and raw.strip():
            labels.normalise(raw.replace("\x00", ""), row_no)
        if mapping.id and record.get(mapping.id):
            checks.ext_id(record[mapping.id], row_no)
    return out + checks.warnings(labels.counts, len(sample))


class _LabelSet:
    """Labels normalised: NFC, invisible characters and surrounding space dropped (see
    :func:`engine.io.checks.clean_label`); spellings differing only in case merge."""

    def __init__(self, existing: list[str] | None = None, checks: RowChecks | None = None) -> None:
        self.canonical: dict[str, str] = {}
        self.counts: dict[str, int] = {}
        self.checks = checks
        self._cache: dict[str, str] = {}
        for label in existing or []:
            self.canonical.setdefault(label.casefold(), label)

    def normalise(self, raw: str, row: int = 0) -> str:
        value = self._cache.get(raw)
        if value is None:
            value = clean_label(raw)
            if len(self._cache) < 100_000:
                self._cache[raw] = value
        if self.checks is not None and value != raw and value != raw.strip():
            self.checks.label(raw, value, row)
        label = self.canonical.setdefault(value.casefold(), value)
        self.counts[label] = self.counts.get(label, 0) + 1
        return label

    def ordered(self) -> list[str]:
        labels = list(dict.fromkeys(self.canonical.values()))
        return sorted(labels, key=_label_sort_key)


def default_dataset_name(path: Path) -> str:
    """``folder-file`` without its extensions, e.g. ``combined-train`` for ``combined/train.tsv.gz``.

    Never holds ``/``, control characters, or only digits (:func:`engine.store.names.default_name`).
    """
    stem = path.name[:-3] if path.name.lower().endswith(".gz") else path.name
    stem = re.sub(r"\.(csv|tsv|txt|jsonl|json|ndjson)$", "", stem, flags=re.IGNORECASE) or stem
    return default_name(f"{path.parent.name}-{stem}" if path.parent.name else stem)


def _label_sort_key(label: str) -> tuple[int, float | str]:
    try:
        return (0, float(label))
    except ValueError:
        return (1, label.casefold())


def import_file(
    project: Project,
    path: str | Path,
    mapping: ColumnMapping | None = None,
    read_options: ReadOptions | None = None,
    options: ImportOptions | None = None,
    *,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> ImportResult:
    """Import ``path`` into ``project`` as a new dataset (or append to one).

    Parameters
    ----------
    project
        The open project.
    path
        CSV, TSV or JSONL file, optionally ``.gz``.
    mapping
        Which columns hold what; ``None`` detects it from the header.
    read_options, options
        How to read the file; what to do with unusable rows.
    progress, cancel
        Progress callback and cancel token (checked every batch).

    Returns
    -------
    ImportResult

    Raises
    ------
    engine.errors.ImportDataError
        A named subclass saying which file, row and column is wrong and what to do. The
        project is left unchanged.
    engine.errors.Cancelled
        If ``cancel`` was set; the project is left unchanged.
    """
    started = time.perf_counter()
    path = Path(path)
    options = options or ImportOptions()
    cancel = ensure_token(cancel)
    target: DatasetInfo | None = project.dataset(options.append_to) if options.append_to is not None else None
    if target is not None and target.kind != "original":
        raise ProjectError(
            f"Rows can only be appended to an imported (original) dataset; {target.name!r} is {target.kind}.",
            "Import into a new dataset instead.",
        )
    name = None
    if target is None:
        if options.name:
            name = options.name
            check_dataset_name(name)
            project.check_name_free(name)
        else:
            name = project.unique_dataset_name(default_dataset_name(path))

    progress(0.0, f"Reading {path.name}")
    with TableReader(path, read_options) as reader:
        if mapping is None:
            mapping = detect_mapping(reader.header)
            check_unambiguous(mapping, reader.header_info, path.name)
        mapping.validate(reader.header, path.name)
        reader.mapping = mapping
        if target is not None and target.task != mapping.task:
            raise ProjectError(
                f"{target.name!r} is a {target.task} dataset but the mapping describes a {mapping.task} task.",
                "Map the same kind of text columns as the dataset has, or import into a new dataset.",
            )
        unescape = options.unescape_formulas
        if unescape is None:
            unescape = reader.options.format != "jsonl" and all(c in reader.header for c in PROVENANCE_COLUMNS)
        checks = RowChecks(mapping.label, mapping.id)
        labels = _LabelSet(target.labels if target else list(options.labels) or None, checks)
        counters = {"empty": 0, "missing": 0}
        batches = _batches(reader, mapping, options, labels, counters, unescape, cancel, progress,
                           project.writer.wait_for_ordinary, checks)
        params = {
            "file": str(path),
            "mapping": mapping.as_dict(),
            "read_options": {
                "format": reader.options.format,
                "delimiter": reader.options.delimiter,
                "quoting": reader.options.quoting,
                "encoding": reader.options.encoding,
            },
        }
        with staging.import_lock(project.import_lock_path):
            staged = project.writer.run(_begin, task=mapping.task, name=name, target=target, params=params,
                                        source=str(path))
            try:
                rows = write_stream(project.writer, _RowWriter(staged), batches)
                _check_classes(labels, rows, path, mapping)
                _, _, repeated = checks.duplicate_ids()
                id_values = project.writer.run(_ext_ids_at, staged, repeated) if repeated else None
                warnings = reader.warnings + checks.warnings(labels.counts, rows, id_values)
                project.writer.run(_finish, staged, target=target, labels=labels, params=params, rows=rows)
            except BaseException:
                _discard(project, staged)
                raise
    progress(1.0, f"Imported {rows:,} rows")
    return ImportResult(
        dataset=project.dataset(staged.dataset_id),
        rows=rows,
        skipped_empty_text=counters["empty"],
        skipped_missing_label=counters["missing"],
        label_counts=dict(sorted(labels.counts.items())),
        seconds=time.perf_counter() - started,
        warnings=warnings,
    )


def check_unambiguous(mapping: ColumnMapping, header_info: HeaderInfo, file: str,
                      roles: tuple[str, ...] = ("text", "premise", "hypothesis", "label", "id", "split")) -> None:
    """Refuse a *detected* mapping that uses a column name the header repeats.

    With ``text,text,label`` it is unclear which ``text`` column holds the text, so the
    import stops and says how to choose (the columns are read as ``text`` and ``text.1``).
    A mapping the user chose explicitly is used as given (the CB250 warning says which).

    Raises
    ------
    DuplicateColumnError
    """
    chosen = mapping.as_dict()
    for role in roles:
        column = chosen.get(role)
        if column and column in header_info.duplicates:
            if role == "text" and mapping.task == "pair":
                continue
            cols = header_info.duplicates[column]
            names = header_info.renamed[column]
            options = " or ".join(f"{n!r} (column {c})" for n, c in zip(names, cols))
            raise DuplicateColumnError(
                f"the header names {column!r} {len(cols)} times (columns {', '.join(map(str, cols))}) "
                f"and it is the detected {role} column, so which one holds the {role} is ambiguous.",
                f"Choose it explicitly: {options} (CLI: --{role}-col {names[-1]!r}; GUI: the {role.title()} "
                "column), or rename the columns in the file.",
                location=Location(file, line=1, column=column),
            )


def _batches(
    reader: TableReader,
    mapping: ColumnMapping,
    options: ImportOptions,
    labels: _LabelSet,
    counters: dict[str, int],
    unescape: bool,
    cancel: CancelToken,
    progress: ProgressFn,
    pause: Callable[[], None],
    checks: RowChecks,
) -> Iterator[list[tuple]]:
    """Validated example tuples in batches of :data:`BATCH_ROWS` (runs on the caller's thread).

    Every :data:`PAUSE_EVERY` rows it calls ``pause``, which blocks while another write (a
    review decision from the GUI, say) waits for the writer, so that write does not compete
    with the parsing for the interpreter lock.
    """
    text_columns = mapping.text_columns
    file = reader.path.name
    created = now()
    batch: list[tuple] = []
    fix = unescape_cell if unescape else (lambda s: s)
    has_provenance = all(c in reader.header for c in PROVENANCE_COLUMNS)
    for row_no, line_no, record in reader.records():
        if not row_no % PAUSE_EVERY:
            pause()
        texts: dict[str, str | None] = {"text": None, "premise": None, "hypothesis": None}
        skip = False
        if reader.row_nonfinite:
            checks.note_nonfinite(row_no, reader.row_nonfinite)
        for fld, column in text_columns.items():
            value = record.get(column)
            if value is not None and "\x00" in value:
                value = checks.strip_nul(value, row_no, column)
            if value is None or not value.strip():
                if options.skip_empty_text:
                    skip = True
                    break
                raise EmptyTextError(
                    "the text is empty" + (" (JSON NaN/Infinity)." if column in reader.row_nonfinite else "."),
                    "Fill in or remove the row, or tick 'Skip rows with empty text' (CLI: --skip-empty-text).",
                    location=Location(file, row=row_no, line=line_no, column=column),
                )
            texts[fld] = fix(value)
        if skip:
            counters["empty"] += 1
            continue
        raw_label = record.get(mapping.label)  # type: ignore[arg-type]
        if raw_label is not None and "\x00" in raw_label:
            raw_label = checks.strip_nul(raw_label, row_no, mapping.label)  # type: ignore[arg-type]
        if raw_label is None or not clean_label(raw_label):
            if options.skip_missing_labels:
                counters["missing"] += 1
                continue
            nan = mapping.label in reader.row_nonfinite
            raise MissingLabelError(
                "the label is missing" + (" (JSON NaN/Infinity is not a label)." if nan else "."),
                "Fill in or remove the row, or tick 'Skip rows without a label' (CLI: --skip-missing-labels).",
                location=Location(file, row=row_no, line=line_no, column=mapping.label),
            )
        label = labels.normalise(fix(raw_label), row_no)
        ext_id = fix(record[mapping.id]) if mapping.id and record.get(mapping.id) else None
        if ext_id is not None:
            if "\x00" in ext_id:
                ext_id = checks.strip_nul(ext_id, row_no, mapping.id)  # type: ignore[arg-type]
            checks.ext_id(ext_id, row_no)
        split = fix(record.get(mapping.split) or "").strip() if mapping.split else ""
        if "\x00" in split:
            split = checks.strip_nul(split, row_no, mapping.split).strip()  # type: ignore[arg-type]
        source, method, target_label, meta = "original", None, None, None
        if has_provenance:
            source, method, target_label, meta = _provenance(record, fix)
        batch.append(
            (ext_id, texts["text"], texts["premise"], texts["hypothesis"], label,
             split or options.split, source, method, target_label, created, meta)
        )
        if len(batch) >= BATCH_ROWS:
            cancel.raise_if_cancelled()
            progress(0.98 * reader.fraction_read(), f"Read {row_no:,} rows")
            yield batch
            batch = []
    cancel.raise_if_cancelled()
    if batch:
        yield batch


def _provenance(record: dict[str, Any], fix: Any) -> tuple[str, str | None, str | None, str | None]:
    """Provenance columns of a file we exported (kept on re-import)."""
    source = record.get("source") or "original"
    if source not in ("original", "augmented"):
        source = "original"
    meta = {k: fix(record[k]) for k in ("parent_id", "created_at") if record.get(k)}
    if record.get("provenance"):
        meta["provenance"] = fix(record["provenance"])
    return (
        source,
        fix(record["method"]) if record.get("method") else None,
        fix(record["target_label"]) if record.get("target_label") else None,
        json.dumps({"imported_provenance": meta}) if meta else None,
    )


def _begin(
    conn: sqlite3.Connection,
    *,
    task: str,
    name: str | None,
    target: DatasetInfo | None,
    params: dict[str, Any],
    source: str,
) -> staging.Staged:
    """Writer-thread start of an import: the hidden new dataset (or the target) and its record."""
    if target is None:
        name = name or source
        if conn.execute("SELECT 1 FROM datasets WHERE name = ?", (name,)).fetchone():  # taken since the check
            raise DatasetNameTakenError(f"A dataset called {name!r} already exists.", "Choose another name.")
        dataset_id = insert_dataset(conn, name=name, kind="original", task=task, labels=[],
                                    source=source, params={"imports": [params]}, state="importing")
    else:
        dataset_id = target.id
    return staging.begin(conn, dataset_id)


class _RowWriter:
    """Writes slices of example tuples as new examples and members of the staged dataset, in order."""

    def __init__(self, staged: staging.Staged) -> None:
        self.dataset_id = staged.dataset_id
        self.position = staged.first_position

    def __call__(self, conn: sqlite3.Connection, rows: list[tuple]) -> None:
        # Ids are taken per slice: other writes may add examples between two slices.
        first_id = conn.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM examples").fetchone()[0]
        ids = range(first_id, first_id + len(rows))
        dataset_id, position = self.dataset_id, self.position
        conn.executemany(
            "INSERT INTO examples (id, dataset_id, ext_id, text, premise, hypothesis, label, split, source, "
            "method, target_label, created_at, meta) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            ((i, dataset_id, *row) for i, row in zip(ids, rows)),
        )
        conn.executemany(
            "INSERT INTO dataset_members (dataset_id, position, example_id) VALUES (?, ?, ?)",
            ((dataset_id, position + k, i) for k, i in enumerate(ids)),
        )
        self.position = position + len(rows)


def _ext_ids_at(conn: sqlite3.Connection, staged: staging.Staged, indices: list[int]) -> list[str]:
    """The ids of the staged rows written ``indices``-th (0-based) by this import."""
    out = []
    for k in indices:
        row = conn.execute(
            "SELECT e.ext_id FROM dataset_members m JOIN examples e ON e.id = m.example_id "
            "WHERE m.dataset_id = ? AND m.position = ?",
            (staged.dataset_id, staged.first_position + k),
        ).fetchone()
        out.append(row[0] if row else "?")
    return out


def _check_classes(labels: _LabelSet, rows: int, path: Path, mapping: ColumnMapping) -> None:
    all_labels = labels.ordered()
    if len(all_labels) < 2:
        only = all_labels[0] if all_labels else "none"
        raise SingleClassError(
            f"the label column has a single class ({only!r}) in {rows:,} rows.",
            "A classification dataset needs at least two labels: check that the label column is mapped "
            "correctly, import a file that holds every class, or name the task's labels (Labels of the task in "
            "the import dialog, import --labels Negative,Positive) when the file holds some of them on purpose.",
            location=Location(path.name, column=mapping.label),
        )


def _finish(
    conn: sqlite3.Connection,
    staged: staging.Staged,
    *,
    target: DatasetInfo | None,
    labels: _LabelSet,
    params: dict[str, Any],
    rows: int,
) -> None:
    """Writer-thread end of an import: labels, counts and provenance, and the rows made visible."""
    dataset_id = staged.dataset_id
    if target is not None:
        stored = json.loads(conn.execute("SELECT params FROM datasets WHERE id = ?", (dataset_id,)).fetchone()[0])
        stored.setdefault("imports", []).append(params)
        conn.execute("UPDATE datasets SET params = ? WHERE id = ?", (json.dumps(stored), dataset_id))
    conn.execute(
        "UPDATE datasets SET labels = ?, row_count = row_count + ? WHERE id = ?",
        (json.dumps(labels.ordered()), rows, dataset_id),
    )
    staging.finish(conn, staged)


def _discard(project: Project, staged: staging.Staged) -> None:
    """Remove a failed import's rows; if that fails too, the next open of the project does it."""
    try:
        staging.discard(project.writer, staged)
    except Exception:  # the import's own error is the one to report
        # the named error of the import itself is what the user sees; the rows stay hidden and are
        # removed when the project is next opened
        log.warning("could not remove the rows of a failed import from %s yet (%s); they stay hidden and are "
                    "removed on the next open", project.path, sys.exc_info()[1])
