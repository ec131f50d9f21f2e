"""The corpus's sentence embeddings: one memory-mapped float32 ``.npy`` in the project's files folder.

Row ``i`` of ``vectors.npy`` is the sentence at position ``i`` of the corpus. The file lives in
``<name>_files/retrieval/corpus-<id>/<encoder key>/`` beside ``vectors.json``, which records how many
rows are done. :func:`build_vectors` encodes the rows not yet done in chunks, flushing the file
and then the record after each chunk, so a cancelled or killed build resumes at the first row
not recorded. When the corpus has grown (new imports append positions), the file is grown
(the rows done are copied) and only the new sentences are encoded.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress
from engine.retrieval.corpus import CorpusInfo, get_corpus, sentence_range
from engine.retrieval.errors import CorpusEmptyError, IndexNotBuiltError

if TYPE_CHECKING:
    from engine.retrieval.encoders import Encoder
    from engine.store import Project

__all__ = ["VectorStore", "build_vectors", "corpus_folder", "encoded_prefix", "open_vectors"]

VECTORS = "vectors.npy"
RECORD = "vectors.json"


def corpus_folder(project: Project, corpus: CorpusInfo, encoder_key: str) -> Path:
    """``<name>_files/retrieval/corpus-<id>/<encoder key>/`` (created).

    Raises
    ------
    engine.errors.StoredPathError, engine.errors.StoredLinkError
        The folder would lie outside the project (an encoder key with ``..``; a symbolic link out).
    """
    from engine.store.paths import derived_folder

    folder = derived_folder(project, "retrieval", f"corpus-{corpus.id}", encoder_key,
                            what=f"the embeddings folder of corpus {corpus.name!r}")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@dataclass(frozen=True)
class VectorStore:
    """The embeddings of a corpus under one encoder.

    Attributes
    ----------
    vectors
        ``(rows, dimension)`` float32, memory-mapped read-only; unit-length rows.
    encoded_now
        Rows encoded by the call that returned this (0 when opened).
    """

    folder: Path
    encoder_key: str
    corpus_id: int
    corpus_version: int
    vectors: np.ndarray
    encoded_now: int = 0

    @property
    def rows(self) -> int:
        return int(self.vectors.shape[0])


def _read_record(folder: Path) -> dict[str, Any]:
    try:
        return json.loads((folder / RECORD).read_text())
    except (OSError, ValueError):
        return {}


def _write_record(folder: Path, record: dict[str, Any]) -> None:
    tmp = folder / (RECORD + ".tmp")
    tmp.write_text(json.dumps(record))
    os.replace(tmp, folder / RECORD)


def _open_for_writing(folder: Path, rows: int, dimension: int, done: int) -> np.memmap:
    """``vectors.npy`` with room for ``rows`` rows; the first ``done`` rows kept from the old file."""
    path = folder / VECTORS
    if path.exists() and done:
        old = np.load(path, mmap_mode="r")
        if old.shape[1] == dimension and old.shape[0] == rows:
            return np.load(path, mmap_mode="r+")
        tmp = folder / (VECTORS + ".grow")
        new = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float32, shape=(rows, dimension))
        keep = min(done, old.shape[0], rows)
        for start in range(0, keep, 65536):
            new[start : min(keep, start + 65536)] = old[start : min(keep, start + 65536)]
        new.flush()
        del old, new
        os.replace(tmp, path)
        return np.load(path, mmap_mode="r+")
    return np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(rows, dimension))


def build_vectors(
    project: Project,
    name: str,
    encoder: Encoder,
    *,
    chunk: int = 2048,
    limit: int | None = None,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> VectorStore | None:
    """Encode every sentence of the corpus not encoded yet; resumable.

    Parameters
    ----------
    name
        The corpus.
    encoder
        A sentence encoder (:func:`engine.retrieval.encoders.make_encoder`).
    chunk
        Sentences encoded, written and recorded at a time (the most a killed build loses).
    limit
        Encode only the first ``limit`` sentences (a benchmark's prefix; read it with
        :func:`encoded_prefix`); returns ``None`` when that leaves the corpus unfinished.
    progress, cancel
        Reported and checked per encoder batch.

    Raises
    ------
    CorpusEmptyError, engine.errors.Cancelled
    """
    cancel = ensure_token(cancel)
    corpus = get_corpus(project, name)
    if corpus.sentence_count == 0:
        raise CorpusEmptyError(f"Corpus {name!r} holds no sentences.", "Import a file into it first.")
    folder = corpus_folder(project, corpus, encoder.key)
    record = _read_record(folder)
    rows = corpus.sentence_count
    done = int(record.get("rows_done", 0)) if record.get("encoder") == encoder.key else 0
    done = min(done, rows)
    if done >= rows and record.get("rows") == rows:
        return open_vectors(project, name, encoder.key)
    matrix = _open_for_writing(folder, rows, encoder.dimension, done)
    record = {"encoder": encoder.key, "dimension": encoder.dimension, "corpus_id": corpus.id, "rows": rows,
              "rows_done": done, "corpus_version": corpus.version}
    _write_record(folder, record)
    first = done
    stop_at = rows if limit is None else min(rows, int(limit))
    try:
        for start in range(done, stop_at, chunk):
            cancel.raise_if_cancelled()
            stop = min(stop_at, start + chunk)
            texts = sentence_range(project, corpus.id, start, stop)

            def sub(fraction: float, message: str = "", start: int = start, size: int = stop - start) -> None:
                at = start + fraction * size
                progress((at - first) / max(1, stop_at - first), f"embedded {int(at):,}/{stop_at:,} sentences")

            matrix[start:stop] = encoder.encode(texts, progress=sub, cancel=cancel)
            matrix.flush()
            record["rows_done"] = stop
            _write_record(folder, record)
    finally:
        del matrix
    progress(1.0, f"embedded {stop_at:,} sentences")
    if stop_at < rows:
        return None
    store = open_vectors(project, name, encoder.key)
    return VectorStore(store.folder, store.encoder_key, store.corpus_id, store.corpus_version, store.vectors,
                       rows - first)


def open_vectors(project: Project, name: str, encoder_key: str) -> VectorStore:
    """The finished embeddings of the corpus under ``encoder_key``, memory-mapped read-only.

    Raises
    ------
    IndexNotBuiltError
        When they are missing, unfinished or older than the corpus.
    """
    corpus = get_corpus(project, name)
    folder = corpus_folder(project, corpus, encoder_key)
    record = _read_record(folder)
    rows = corpus.sentence_count
    if record.get("rows_done") != rows or not (folder / VECTORS).exists():
        raise IndexNotBuiltError(
            f"The {encoder_key} embeddings of corpus {name!r} cover {record.get('rows_done', 0):,} of {rows:,} "
            "sentences.", f"Build them: counterbias index PROJECT {name}.")
    vectors = np.load(folder / VECTORS, mmap_mode="r")
    if vectors.shape[0] != rows:
        raise IndexNotBuiltError(f"The embeddings file of corpus {name!r} has {vectors.shape[0]:,} rows, the corpus "
                                 f"{rows:,}.", f"Build them again: counterbias index PROJECT {name}.")
    return VectorStore(folder, encoder_key, corpus.id, corpus.version, vectors)


def encoded_prefix(project: Project, name: str, encoder_key: str) -> np.ndarray:
    """The rows encoded so far (finished or not), memory-mapped read-only: ``(rows done, dimension)``."""
    corpus = get_corpus(project, name)
    folder = corpus_folder(project, corpus, encoder_key)
    done = int(_read_record(folder).get("rows_done", 0))
    if not done or not (folder / VECTORS).exists():
        return np.zeros((0, 0), dtype=np.float32)
    return np.load(folder / VECTORS, mmap_mode="r")[:done]
