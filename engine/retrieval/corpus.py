"""An unlabeled text corpus in the project: sentences, deduplicated, and their labels under a member.

:func:`import_corpus` reads a CSV/TSV/JSONL file (optionally ``.gz``; one text column) or a plain
text file (one document per non-empty line), splits every document into sentences with the
engine's one splitter (:func:`engine.text.sentences.split_sentences`), drops sentences seen before
(the hash of their normalised text: NFC, case-folded, runs of spaces collapsed) and stores the
rest in ``corpus_sentences`` with a dense 0-based ``position`` (the sentence's row in the
embedding matrix, :mod:`engine.retrieval.vectors`). Each batch of documents is one transaction
that also records how many records of the source are done, so a cancelled or killed import
resumes where it stopped, and importing the same file again adds nothing. Several files can feed
one corpus.

:func:`label_corpus` labels every sentence with a trained member
(:func:`engine.models.predict.predict`), keeping its probabilities; it resumes with the sentences
still unlabelled.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress
from engine.retrieval.errors import (
    CorpusEmptyError,
    CorpusNameError,
    CorpusNotFoundError,
    CorpusSourceError,
    NotLabelledError,
)
from engine.store.schema import now

if TYPE_CHECKING:
    from engine.store import Project

__all__ = [
    "TEXT_COLUMNS",
    "CorpusImportResult",
    "CorpusInfo",
    "CorpusLabels",
    "LabelResult",
    "corpus_labels",
    "get_corpus",
    "import_corpus",
    "label_corpus",
    "list_corpora",
    "sentence_hash",
    "sentences_at",
]

#: Column names read as the text column, in order of preference, when none is given.
TEXT_COLUMNS = ("text", "sentence", "review", "content", "body", "document", "excerpt")
#: File name endings read as plain text (one document per non-empty line).
PLAIN_SUFFIXES = (".txt", ".text")

_SPACES = re.compile(r"\s+")


def sentence_hash(text: str) -> str:
    """The deduplication key of a sentence: a hash of its NFC, case-folded, space-collapsed text.

    Examples
    --------
    >>> sentence_hash("Great  film!") == sentence_hash("great film!")
    True
    """
    key = _SPACES.sub(" ", unicodedata.normalize("NFC", text).casefold()).strip()
    return hashlib.blake2b(key.encode("utf-8"), digest_size=12).hexdigest()


@dataclass(frozen=True)
class CorpusInfo:
    """A corpus as stored in ``corpora``.

    Attributes
    ----------
    version
        Bumped by every import batch that added sentences: embeddings and indexes are keyed by it.
    """

    id: int
    name: str
    sentence_count: int
    version: int
    params: dict[str, Any] = field(default_factory=dict)


def _info(row: dict[str, Any]) -> CorpusInfo:
    return CorpusInfo(int(row["id"]), row["name"], int(row["sentence_count"]), int(row["version"]),
                      json.loads(row["params"] or "{}"))


def list_corpora(project: Project) -> list[CorpusInfo]:
    """Every corpus of the project, oldest first."""
    return [_info(r) for r in project.db.query("SELECT * FROM corpora ORDER BY id")]


def get_corpus(project: Project, name: str | int) -> CorpusInfo:
    """The corpus called ``name`` (or with that id).

    Raises
    ------
    CorpusNotFoundError
    """
    column = "id" if isinstance(name, int) else "name"
    rows = list(project.db.query(f"SELECT * FROM corpora WHERE {column} = ?", [name]))
    if not rows:
        known = ", ".join(c.name for c in list_corpora(project)) or "none yet"
        raise CorpusNotFoundError(f"No corpus {name!r} in {project.path.name}.",
                                  f"Import one with 'counterbias corpus PROJECT NAME FILE', or use one of: {known}.")
    return _info(rows[0])


def _ensure_corpus(project: Project, name: str) -> CorpusInfo:
    if not name or not name.strip() or name != name.strip():
        raise CorpusNameError(f"Corpus name {name!r} is empty or has surrounding spaces.",
                              "Give the corpus a short name, e.g. 'imdb'.")

    def write(conn: sqlite3.Connection) -> None:
        stamp = now()
        conn.execute("INSERT OR IGNORE INTO corpora (name, params, created_at, updated_at) VALUES (?, ?, ?, ?)",
                     (name, json.dumps({"normalisation": "nfc-casefold-spaces"}), stamp, stamp))

    project.writer.run(write)
    return get_corpus(project, name)


def sentences_at(project: Project, corpus_id: int, positions: Sequence[int] | np.ndarray) -> list[str]:
    """The texts of the sentences at ``positions`` (in that order)."""
    wanted = [int(p) for p in positions]
    found: dict[int, str] = {}
    for start in range(0, len(wanted), 900):
        chunk = wanted[start : start + 900]
        marks = ",".join("?" * len(chunk))
        for row in project.db.execute(
            f"SELECT position, text FROM corpus_sentences WHERE corpus_id = ? AND position IN ({marks})",
            [corpus_id, *chunk],
        ).fetchall():
            found[int(row[0])] = row[1]
    return [found[p] for p in wanted]


def sentence_range(project: Project, corpus_id: int, start: int, stop: int) -> list[str]:
    """Texts of the sentences at positions ``start`` … ``stop - 1``, in order."""
    rows = project.db.execute(
        "SELECT text FROM corpus_sentences WHERE corpus_id = ? AND position >= ? AND position < ? ORDER BY position",
        [corpus_id, start, stop],
    ).fetchall()
    return [r[0] for r in rows]


# --------------------------------------------------------------------------- import


@dataclass(frozen=True)
class CorpusImportResult:
    """What :func:`import_corpus` did.

    Attributes
    ----------
    docs_read
        Records of the source read by this call (not counting those done by earlier calls).
    resumed_from
        Records already done by an earlier (cancelled or killed) call, skipped.
    sentences_added, duplicates
        Sentences stored by this call, and sentences dropped as already in the corpus.
    finished
        Whether the whole source has been read (else ``limit_docs`` stopped it).
    """

    corpus: CorpusInfo
    path: str
    docs_read: int
    resumed_from: int
    sentences_added: int
    duplicates: int
    finished: bool


def _source_key(path: Path, column: str | None) -> str:
    stat = path.stat()
    raw = json.dumps([str(path.resolve()), stat.st_size, int(stat.st_mtime), column])
    return hashlib.sha256(raw.encode()).hexdigest()[:24]


def _is_plain(path: Path) -> bool:
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    return bool(suffixes) and suffixes[-1] in PLAIN_SUFFIXES


def _plain_documents(path: Path) -> Iterator[tuple[str, float]]:
    """Non-empty lines of a plain text file (``.gz`` recognised by content) with the fraction read."""
    import io

    from engine.io.sources import open_input

    source = open_input(path)
    total = max(1, source.size)
    with source, io.TextIOWrapper(source.stream, encoding="utf-8-sig", errors="replace") as text:
        for line in text:
            if line.strip():
                yield line.strip(), min(1.0, source.tell_raw() / total)


def _table_documents(path: Path, text_column: str | None, options: Any) -> Iterator[tuple[str, float]]:
    from engine.io.readers import TableReader

    with TableReader(path, options) as reader:
        column = text_column
        for _row, _line, record in reader.records():
            if column is None:
                column = _pick_column(path, list(record))
            if column not in record:
                raise CorpusSourceError(f"{path.name} has no column {column!r} (columns: {', '.join(record)}).",
                                        "Name the text column with --text-col.")
            value = record[column]
            yield ("" if value is None else str(value)), reader.fraction_read()


def _pick_column(path: Path, columns: list[str]) -> str:
    lowered = {c.lower().strip(): c for c in columns}
    for name in TEXT_COLUMNS:
        if name in lowered:
            return lowered[name]
    if len(columns) == 1:
        return columns[0]
    raise CorpusSourceError(f"{path.name}: no text column among {', '.join(columns)}.",
                            f"Name it with --text-col (looked for {', '.join(TEXT_COLUMNS)}).")


def import_corpus(
    project: Project,
    name: str,
    path: str | Path,
    *,
    text_column: str | None = None,
    read_options: Any = None,
    batch_docs: int = 200,
    limit_docs: int | None = None,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> CorpusImportResult:
    """Add the sentences of a file to the corpus ``name`` (created if needed), deduplicated.

    Parameters
    ----------
    project
        The open project.
    name
        The corpus.
    path
        CSV/TSV/JSONL (optionally ``.gz``) with a text column, or plain text (``.txt``: one
        document per non-empty line).
    text_column
        The column holding the text (default: the first of :data:`TEXT_COLUMNS` present, or
        the only column).
    read_options
        :class:`engine.io.readers.ReadOptions` for delimited files (e.g. ``quoting="none"``).
    batch_docs
        Documents per transaction (and between two cancel checks).
    limit_docs
        Stop after this many records of the file (counting those done earlier).
    progress, cancel
        Reported and checked per batch. A cancelled import keeps what it committed; calling
        again resumes after the last committed batch.

    Returns
    -------
    CorpusImportResult

    Raises
    ------
    CorpusSourceError, CorpusNameError, engine.errors.ImportDataError
    engine.errors.Cancelled
    """
    from engine.text.sentences import split_sentences, splitter_name

    cancel = ensure_token(cancel)
    path = Path(path)
    plain = _is_plain(path)
    if not plain:
        from engine.io.sources import check_path

        check_path(path)
    corpus = _ensure_corpus(project, name)
    key = _source_key(path, None if plain else text_column)

    def open_source(conn: sqlite3.Connection) -> tuple[int, int, int]:
        stamp = now()
        conn.execute(
            "INSERT OR IGNORE INTO corpus_sources (corpus_id, source_key, path, text_column, started_at) "
            "VALUES (?, ?, ?, ?, ?)", (corpus.id, key, str(path), text_column, stamp))
        row = conn.execute("SELECT id, docs_done, finished FROM corpus_sources WHERE corpus_id = ? AND source_key = ?",
                           (corpus.id, key)).fetchone()
        conn.execute("UPDATE corpora SET params = json_set(params, '$.splitter', ?) WHERE id = ?",
                     (splitter_name(), corpus.id))
        return int(row[0]), int(row[1]), int(row[2])

    source_id, done_before, finished = project.writer.run(open_source)
    if finished or (limit_docs is not None and done_before >= limit_docs):
        return CorpusImportResult(get_corpus(project, corpus.id), str(path), 0, done_before, 0, 0, bool(finished))

    docs = _plain_documents(path) if plain else _table_documents(path, text_column, read_options)
    added = duplicates = read = 0
    doc_number = 0
    batch: list[tuple[int, str]] = []
    last_fraction = 0.0

    def flush(end_of_file: bool) -> None:
        nonlocal added, duplicates, batch
        pieces: list[tuple[int, str, str]] = []
        seen: set[str] = set()
        batch_dups = 0
        for number, text in batch:
            for sentence in split_sentences(text):
                digest = sentence_hash(sentence)
                if digest in seen:
                    batch_dups += 1
                    continue
                seen.add(digest)
                pieces.append((number, sentence, digest))
        last_doc = batch[-1][0] if batch else doc_number

        def write(conn: sqlite3.Connection) -> tuple[int, int]:
            position = int(conn.execute("SELECT sentence_count FROM corpora WHERE id = ?", (corpus.id,)).fetchone()[0])
            new = 0
            dups = batch_dups
            for number, sentence, digest in pieces:
                hit = conn.execute("SELECT 1 FROM corpus_sentences WHERE corpus_id = ? AND hash = ?",
                                   (corpus.id, digest)).fetchone()
                if hit:
                    dups += 1
                    continue
                conn.execute("INSERT INTO corpus_sentences (corpus_id, position, hash, text, source_id, doc) "
                             "VALUES (?, ?, ?, ?, ?, ?)", (corpus.id, position + new, digest, sentence, source_id, number))
                new += 1
            stamp = now()
            if new:
                conn.execute("UPDATE corpora SET sentence_count = sentence_count + ?, version = version + 1, "
                             "updated_at = ? WHERE id = ?", (new, stamp, corpus.id))
            conn.execute(
                "UPDATE corpus_sources SET docs_done = ?, sentences_added = sentences_added + ?, "
                "duplicates = duplicates + ?, finished = ?, finished_at = CASE WHEN ? THEN ? ELSE finished_at END "
                "WHERE id = ?", (last_doc, new, dups, int(end_of_file), int(end_of_file), stamp, source_id))
            return new, dups

        new, dups = project.writer.run_bulk(write)
        added += new
        duplicates += dups
        batch = []

    stopped_by_limit = False
    for text, fraction in docs:
        doc_number += 1
        if doc_number <= done_before:
            continue
        if limit_docs is not None and doc_number > limit_docs:
            stopped_by_limit = True
            break
        batch.append((doc_number, text))
        read += 1
        last_fraction = fraction
        if len(batch) >= batch_docs:
            cancel.raise_if_cancelled()
            flush(False)
            progress(last_fraction if limit_docs is None else min(1.0, doc_number / limit_docs),
                     f"{name}: {doc_number:,} documents, {added:,} new sentences, {duplicates:,} duplicates")
    cancel.raise_if_cancelled()
    end_of_file = not stopped_by_limit
    if batch or end_of_file:
        flush(end_of_file)
    progress(1.0, f"{name}: {doc_number:,} documents, {added:,} new sentences, {duplicates:,} duplicates")
    return CorpusImportResult(get_corpus(project, corpus.id), str(path), read, done_before, added, duplicates,
                              end_of_file)


# --------------------------------------------------------------------------- labels


@dataclass(frozen=True)
class LabelResult:
    """What :func:`label_corpus` did: sentences labelled now, in all, and the count per label."""

    model_name: str
    labelled_now: int
    total: int
    label_counts: dict[str, int]


@dataclass(frozen=True)
class CorpusLabels:
    """Every sentence's label under one member.

    Attributes
    ----------
    labels
        The member's labels (columns of ``probs``).
    index
        ``(n,)`` int label index of each position.
    probs
        ``(n, len(labels))`` float32 probabilities.
    """

    model_name: str
    model_id: int
    labels: tuple[str, ...]
    index: np.ndarray
    probs: np.ndarray


def label_corpus(
    project: Project,
    name: str,
    model_name: str,
    *,
    chunk: int = 512,
    batch_size: int = 64,
    max_length: int | None = 64,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> LabelResult:
    """Label every not yet labelled sentence of the corpus with a trained member.

    Parameters
    ----------
    name
        The corpus.
    model_name
        A trained single-text member (:mod:`engine.models.store`).
    chunk
        Sentences per transaction (and between two cancel checks).
    batch_size, max_length
        Passed to :func:`engine.models.predict.predict` (``max_length=None``: the member's).

    Raises
    ------
    CorpusNotFoundError, CorpusEmptyError, engine.models.errors.ModelNotFoundError, engine.models.errors.ModelError
    """
    from engine.models.predict import predict
    from engine.models.store import get_model

    cancel = ensure_token(cancel)
    corpus = get_corpus(project, name)
    if corpus.sentence_count == 0:
        raise CorpusEmptyError(f"Corpus {name!r} holds no sentences.", "Import a file into it first.")
    info = get_model(project, model_name)
    todo = [int(r[0]) for r in project.db.execute(
        "SELECT s.position FROM corpus_sentences s WHERE s.corpus_id = ? AND NOT EXISTS (SELECT 1 FROM corpus_labels l "
        "WHERE l.corpus_id = s.corpus_id AND l.model_id = ? AND l.position = s.position) ORDER BY s.position",
        [corpus.id, info.id]).fetchall()]
    for start in range(0, len(todo), chunk):
        cancel.raise_if_cancelled()
        positions = todo[start : start + chunk]
        texts = sentences_at(project, corpus.id, positions)
        probs = predict(project, model_name, texts, batch_size=batch_size, max_length=max_length, cancel=cancel)
        rows = [(corpus.id, info.id, p, int(np.argmax(pr)), np.asarray(pr, dtype=np.float32).tobytes())
                for p, pr in zip(positions, probs, strict=True)]
        project.writer.run_bulk(lambda conn, rows=rows: conn.executemany(
            "INSERT OR REPLACE INTO corpus_labels (corpus_id, model_id, position, label, probs) VALUES (?, ?, ?, ?, ?)",
            rows))
        progress((start + len(positions)) / len(todo), f"labelled {start + len(positions):,}/{len(todo):,} sentences")
    counts = {info.labels[int(r[0])] if int(r[0]) < len(info.labels) else str(r[0]): int(r[1])
              for r in project.db.execute("SELECT label, COUNT(*) FROM corpus_labels WHERE corpus_id = ? AND "
                                          "model_id = ? GROUP BY label", [corpus.id, info.id]).fetchall()}
    progress(1.0, f"{name}: {sum(counts.values()):,} sentences labelled by {model_name}")
    return LabelResult(model_name, len(todo), sum(counts.values()), counts)


def corpus_labels(project: Project, name: str, model_name: str) -> CorpusLabels:
    """Every sentence's label and probabilities under ``model_name``.

    Raises
    ------
    NotLabelledError
        When some sentence has no label from that member yet.
    """
    from engine.models.store import get_model

    corpus = get_corpus(project, name)
    info = get_model(project, model_name)
    n_labels = len(info.labels)
    index = np.full(corpus.sentence_count, -1, dtype=np.int64)
    probs = np.zeros((corpus.sentence_count, n_labels), dtype=np.float32)
    for position, label, blob in project.db.execute(
        "SELECT position, label, probs FROM corpus_labels WHERE corpus_id = ? AND model_id = ?", [corpus.id, info.id]
    ):
        if position < corpus.sentence_count:
            index[position] = label
            probs[position] = np.frombuffer(blob, dtype=np.float32, count=n_labels)
    missing = int((index < 0).sum())
    if missing:
        raise NotLabelledError(
            f"{missing:,} of {corpus.sentence_count:,} sentences of corpus {name!r} have no label from {model_name!r}.",
            f"Label them first: counterbias corpus PROJECT {name} --label-with {model_name}.")
    return CorpusLabels(model_name, info.id, tuple(info.labels), index, probs)
