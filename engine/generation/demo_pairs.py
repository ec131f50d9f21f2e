"""The demonstration pairs of a dataset: human counterfactual pairs the analyst imports, and the candidates the
analyst accepted (as they stand after any edit in review).

A pair file is any CSV/TSV/JSONL whose rows name their pair: rows sharing a value of ``group_column`` form a pair,
the first of them the original (CAD's ``*_paired.tsv``: ``batch_id``), or each counterfactual row names its
original's ``id_column`` value in ``parent_column``. Each pair is stored once per dataset (``demo_pairs``, migration
11); importing the same file again adds nothing. Nothing here reads the dataset's own examples as pairs.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from engine.errors import CounterbiasError
from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress
from engine.store.schema import now

if TYPE_CHECKING:
    from engine.io.readers import ReadOptions
    from engine.store.project import Project

__all__ = ["DemoPairError", "ImportedPairs", "Pair", "accepted_pairs", "guess_pair_columns", "import_pairs",
           "imported_pairs", "pair_counts", "pair_file_header"]

#: Longest text of a pair kept (longer pairs are skipped: a demonstration is shown inside a prompt).
MAX_PAIR_CHARS = 20_000


class DemoPairError(CounterbiasError):
    """A demonstration pair file cannot be read as pairs."""

    code = "CB840"


@dataclass(frozen=True)
class Pair:
    """One original text and its counterfactual: ``ref`` names it (``pair:<id>``, ``candidate:<id>``)."""

    ref: str
    source: str
    original: str
    label: str
    revised: str
    target: str


@dataclass(frozen=True)
class ImportedPairs:
    """What :func:`import_pairs` did: pairs read, stored, and skipped (same label twice, same text, too long,
    a group of one, or already stored)."""

    read: int
    added: int
    skipped: int


def _key(original: str, revised: str) -> str:
    return hashlib.sha256(f"{original}\0{revised}".encode()).hexdigest()[:32]


def _rows(path: Path, options: ReadOptions | None, columns: tuple[str, ...]) -> Iterator[dict[str, str]]:
    from engine.io.readers import TableReader

    with TableReader(path, options) as reader:
        missing = [c for c in columns if c not in reader.header]
        if missing:
            raise DemoPairError(f"{path.name} has no column {', '.join(missing)} (its columns: "
                                f"{', '.join(reader.header[:12])}).", "Name the columns with --text-column, "
                                "--label-column and --group-column (or --parent-column with --id-column).")
        for _, _, record in reader.records():
            yield {c: "" if record.get(c) is None else str(record.get(c)) for c in columns}


def _grouped(rows: Iterator[dict[str, str]], text: str, label: str, group: str) -> Iterator[tuple[dict, dict] | None]:
    """Consecutive rows sharing ``group``: (first, second); ``None`` for a group that is not two rows."""
    current: list[dict[str, str]] = []
    for row in rows:
        if current and row[group] != current[0][group]:
            yield (current[0], current[1]) if len(current) == 2 else None
            current = []
        current.append(row)
    if current:
        yield (current[0], current[1]) if len(current) == 2 else None


def _parented(rows: Iterator[dict[str, str]], parent: str, ident: str) -> Iterator[tuple[dict, dict] | None]:
    by_id: dict[str, dict[str, str]] = {}
    children: list[dict[str, str]] = []
    for row in rows:
        if row[parent].strip():
            children.append(row)
        else:
            by_id[row[ident]] = row
    for child in children:
        original = by_id.get(child[parent])
        yield (original, child) if original is not None else None


def pair_file_header(path: str | Path, options: ReadOptions | None = None) -> list[str]:
    """The column names of a pair file (what the import dialog offers)."""
    from engine.io.readers import TableReader

    with TableReader(Path(path), options) as reader:
        return list(reader.header)


def guess_pair_columns(header: list[str]) -> dict[str, str | None]:
    """The likely ``text_column``, ``label_column``, ``group_column``, ``parent_column`` and ``id_column`` of a
    pair file's header (CAD's paired files: Text, Sentiment, batch_id); ``None`` where nothing fits."""
    lower = {h.lower(): h for h in header}

    def first(*names: str) -> str | None:
        return next((lower[n] for n in names if n in lower), None)

    parent = first("parent_id", "parent", "original_id", "source_id")
    return {"text_column": first("text", "sentence", "review", "content") or (header[0] if header else None),
            "label_column": first("label", "sentiment", "gold_label", "class", "target"),
            "group_column": None if parent else first("batch_id", "pair_id", "group", "group_id"),
            "parent_column": parent, "id_column": first("id", "ext_id", "example_id")}


def import_pairs(project: Project, dataset_id: int, path: str | Path, *, text_column: str = "text",
                 label_column: str = "label", group_column: str | None = None, parent_column: str | None = None,
                 id_column: str = "id", options: ReadOptions | None = None, progress: ProgressFn = no_progress,
                 cancel: CancelToken | None = None) -> ImportedPairs:
    """Store the counterfactual pairs of a file as demonstrations of dataset ``dataset_id``.

    Raises
    ------
    DemoPairError
        Neither or both of ``group_column`` and ``parent_column``, a missing column, or no pair at all.
    """
    token = ensure_token(cancel)
    path = Path(path)
    dataset = project.dataset(dataset_id)
    if dataset.task == "pair":
        raise DemoPairError(f"Dataset {dataset.name!r} holds premise/hypothesis pairs; demonstrations are edits of a "
                            "single text.", "Import pairs into a single-text dataset.")
    if bool(group_column) == bool(parent_column):
        raise DemoPairError("Say how the rows pair up: a group column or a parent column, not both, not neither.",
                            "Use --group-column batch_id (CAD's paired files), or --parent-column with --id-column.")
    if group_column:
        columns = (text_column, label_column, group_column)
        pairs = _grouped(_rows(path, options, columns), text_column, label_column, group_column)
    else:
        columns = (text_column, label_column, parent_column or "", id_column)
        pairs = _parented(_rows(path, options, columns), parent_column or "", id_column)
    labels = set(dataset.labels)
    stored: list[tuple[str, ...]] = []
    read = skipped = 0
    for pair in pairs:
        read += 1
        if read % 500 == 0:
            token.raise_if_cancelled()
            progress(0.0, f"demonstrations: {read} pairs read")
        if pair is None:
            skipped += 1
            continue
        first, second = pair
        original, revised = first[text_column].strip(), second[text_column].strip()
        label, target = first[label_column].strip(), second[label_column].strip()
        if (label == target or label not in labels or target not in labels or not original or not revised
                or original == revised or max(len(original), len(revised)) > MAX_PAIR_CHARS):
            skipped += 1
            continue
        stored.append((_key(original, revised), original, label, revised, target))
    if not stored:
        raise DemoPairError(f"{path.name}: no pair of two rows with two different labels of {dataset.name!r} "
                            f"({read} groups read).", f"Check the columns and that the labels are among "
                            f"{', '.join(dataset.labels)}.")
    source, stamp = path.name, now()

    def write(conn: sqlite3.Connection) -> int:
        before = conn.total_changes
        conn.executemany(
            "INSERT OR IGNORE INTO demo_pairs (dataset_id, pair_key, original, label, revised, target, source, "
            "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [(dataset_id, *row, source, stamp) for row in stored])
        return conn.total_changes - before

    added = project.writer.run(write)
    progress(1.0, f"demonstrations: {added} pairs added")
    return ImportedPairs(read=read, added=added, skipped=skipped + len(stored) - added)


def imported_pairs(project: Project, dataset_id: int) -> list[Pair]:
    rows = project.db.query("SELECT id, source, original, label, revised, target FROM demo_pairs "
                            "WHERE dataset_id = ? ORDER BY id", [dataset_id])
    return [Pair(f"pair:{r['id']}", "imported", r["original"], r["label"], r["revised"], r["target"]) for r in rows]


def accepted_pairs(project: Project, dataset_id: int) -> list[Pair]:
    """The dataset's accepted candidates (text as it stands after review) with their originals."""
    rows = project.db.query(
        "SELECT c.id, c.text, c.target_label, e.text AS original, e.label FROM candidates c "
        "JOIN examples e ON e.id = c.example_id "
        "WHERE c.status = 'accepted' AND c.text IS NOT NULL AND c.example_id IN "
        "(SELECT example_id FROM dataset_members WHERE dataset_id = ?) ORDER BY c.id", [dataset_id])
    return [Pair(f"candidate:{r['id']}", "accepted", r["original"] or "", str(r["label"]), r["text"],
                 r["target_label"]) for r in rows if r["original"] and r["text"] != r["original"]]


def pair_counts(project: Project, dataset_id: int) -> dict[str, int]:
    """``{"imported": n, "accepted": m}`` of dataset ``dataset_id``."""
    imported = project.db.execute("SELECT COUNT(*) FROM demo_pairs WHERE dataset_id = ?", [dataset_id]).fetchone()[0]
    return {"imported": int(imported), "accepted": len(accepted_pairs(project, dataset_id))}
