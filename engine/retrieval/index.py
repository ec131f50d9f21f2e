"""The corpus's FAISS index, persisted beside its embeddings and reopened without rebuilding.

:func:`build_index` encodes the sentences not yet encoded (:func:`engine.retrieval.vectors.build_vectors`),
then builds the index of the chosen kind (``auto``: exact ``flat`` up to :data:`AUTO_EXACT_MAX`
sentences, ``hnsw`` above) and writes it to ``index-<kind>.faiss`` with ``index-<kind>.json``
recording its key: the corpus id and version, the row count, the encoder key, the kind and its
build settings. When the stored key matches, the stored index is read instead (``built`` is
false); a corpus that grew, or other build settings, rebuild it. Search settings (``nprobe``,
``ef_search``) are applied to the opened index and never force a rebuild.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress, scaled
from engine.retrieval.corpus import get_corpus
from engine.retrieval.errors import IndexNotBuiltError, IndexSettingsError
from engine.retrieval.index_kinds import IndexKind, faiss_module
from engine.retrieval.vectors import build_vectors, open_vectors

if TYPE_CHECKING:
    from engine.retrieval.encoders import Encoder
    from engine.store import Project

__all__ = ["AUTO_APPROXIMATE", "AUTO_EARLIER", "AUTO_EXACT_MAX", "CorpusIndex", "build_index", "make_kind", "open_index", "resolve_kind"]

#: Largest corpus that ``kind="auto"`` indexes exactly.
AUTO_EXACT_MAX = 50_000
#: What ``kind="auto"`` builds above :data:`AUTO_EXACT_MAX`. HNSW, chosen by
#: ``benchmarks/retrieval.py`` on 593,716 IMDb sentences: recall@10 0.964 at 10x exact search
#: (ef_search 256), where IVF (nlist 4096) needed nprobe > 128 for 0.95 and was then ~4x.
AUTO_APPROXIMATE = "hnsw"
#: Kinds ``auto`` built above :data:`AUTO_EXACT_MAX` in earlier versions: a current index of one of
#: them is reopened under ``auto`` instead of being rebuilt.
AUTO_EARLIER = ("ivf",)


def resolve_kind(kind: str, rows: int) -> str:
    """``"auto"`` -> ``"flat"`` (up to :data:`AUTO_EXACT_MAX` rows) or :data:`AUTO_APPROXIMATE`; others unchanged."""
    if kind == "auto":
        return "flat" if rows <= AUTO_EXACT_MAX else AUTO_APPROXIMATE
    return kind


def make_kind(kind: str, rows: int, params: dict[str, Any] | None = None) -> IndexKind:
    """The registered index kind (``auto`` resolved for ``rows``) with ``params``."""
    from engine.retrieval.registry import INDEX_KINDS

    return INDEX_KINDS.create(resolve_kind(kind, rows), **(params or {}))


@dataclass
class CorpusIndex:
    """An open index over a corpus.

    Attributes
    ----------
    index
        The FAISS index; ids are corpus positions.
    key
        What it was built from (corpus id and version, rows, encoder key, kind, build settings).
    built
        Whether this call built it (false: read from disk).
    seconds
        Time to build (or to read) it.
    """

    index: Any
    kind: IndexKind
    key: dict[str, Any]
    path: Path
    built: bool
    seconds: float
    search: dict[str, Any] = field(default_factory=dict)
    #: The corpus embeddings (memory-mapped), for kinds that re-rank exactly (``rerank`` > 1).
    exact: np.ndarray | None = None

    @property
    def rows(self) -> int:
        return int(self.index.ntotal)

    def set_search(self, **params: Any) -> None:
        """Change search settings (``nprobe``, ``ef_search``) of the open index."""
        merged = {**self.kind.params, **{k: v for k, v in params.items() if v is not None}}
        self.kind = type(self.kind)(**merged)
        self.kind.configure(self.index, self.rows)
        self.search = self.kind.search_params(self.rows)

    def query(self, vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """``(scores, ids)``, each ``(len(vectors), k)``; id -1 where fewer than k were found."""
        k = max(1, min(int(k), self.rows))
        if hasattr(self.index, "hnsw"):  # the graph search keeps at most efSearch candidates
            self.index.hnsw.efSearch = max(int(self.search.get("ef_search", 0)), k)
        queries = np.ascontiguousarray(vectors, dtype=np.float32)
        rerank = int(self.search.get("rerank", 1))
        if rerank <= 1 or self.exact is None:
            return self.index.search(queries, k)
        _, ids = self.index.search(queries, min(self.rows, k * rerank))
        return exact_rerank(queries, ids, self.exact, k)


def exact_rerank(queries: np.ndarray, ids: np.ndarray, vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The best ``k`` of each query's candidate ``ids`` by exact inner product with ``vectors`` (rows read in
    ascending order, so a memory-mapped file is read forwards); ``-1`` ids stay last.

    Examples
    --------
    >>> vectors = np.array([[1, 0], [0.6, 0.8], [0, 1]], dtype=np.float32)
    >>> exact_rerank(np.array([[0, 1]], dtype=np.float32), np.array([[0, 1, 2, -1]]), vectors, 2)[1].tolist()
    [[2, 1]]
    """
    wanted = np.unique(ids[ids >= 0])
    rows = np.asarray(vectors[wanted], dtype=np.float32) if len(wanted) else np.zeros((0, queries.shape[1]), np.float32)
    where = np.searchsorted(wanted, np.clip(ids, 0, None))
    scores = np.einsum("qd,qkd->qk", queries, rows[where]) if len(wanted) else np.zeros(ids.shape, np.float32)
    scores = np.where(ids >= 0, scores, -np.inf).astype(np.float32)
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    top_ids = np.take_along_axis(ids, order, axis=1)
    top_scores = np.take_along_axis(scores, order, axis=1)
    return np.where(top_ids >= 0, top_scores, -np.inf).astype(np.float32), top_ids


def _key(corpus_id: int, version: int, rows: int, encoder_key: str, kind: IndexKind) -> dict[str, Any]:
    return {"corpus_id": corpus_id, "corpus_version": version, "rows": rows, "encoder": encoder_key,
            "kind": kind.name, "build": kind.build_params(rows)}


def _paths(folder: Path, kind_name: str) -> tuple[Path, Path]:
    return folder / f"index-{kind_name}.faiss", folder / f"index-{kind_name}.json"


def build_index(
    project: Project,
    name: str,
    encoder: Encoder,
    *,
    kind: str = "auto",
    params: dict[str, Any] | None = None,
    seed: int = 0,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> CorpusIndex:
    """Embed what is missing and build (or reopen) the corpus's index of ``kind``.

    Parameters
    ----------
    name
        The corpus.
    encoder
        The sentence encoder (:func:`engine.retrieval.encoders.make_encoder`).
    kind
        ``auto``, ``flat``, ``ivf``, ``hnsw`` or another registered kind.
    params
        Build and search settings of the kind (``nlist``, ``nprobe``, ``train_size``, ``m``, ...).
    seed
        Seeds the training sample and the k-means.
    progress, cancel
        Embedding takes the first 90 % of the progress, indexing the rest. A cancelled build
        keeps the sentences already embedded; the index is written only when complete.

    Raises
    ------
    engine.retrieval.errors.CorpusEmptyError, IndexKindError, IndexSettingsError, FaissUnavailableError
    engine.errors.Cancelled
    """
    cancel = ensure_token(cancel)
    faiss = faiss_module()
    vectors = build_vectors(project, name, encoder, progress=scaled(progress, 0.0, 0.9), cancel=cancel)
    assert vectors is not None  # no limit: every sentence is encoded
    try:
        index_kind = make_kind(kind, vectors.rows, params)
    except IndexSettingsError:  # auto with IVF settings: the IVF index an earlier auto built, if current
        opened = None if kind != "auto" else _reopen_earlier_auto(
            vectors.folder, vectors.corpus_id, vectors.corpus_version, vectors.rows, encoder.key, params,
            vectors.vectors)
        if opened is None:
            raise
        progress(1.0, f"{opened.kind.name} index of {vectors.rows:,} sentences reopened")
        return opened
    key = _key(vectors.corpus_id, vectors.corpus_version, vectors.rows, encoder.key, index_kind)
    path, record = _paths(vectors.folder, index_kind.name)
    opened = _read_if_current(path, record, key, index_kind, vectors.vectors)
    if opened is None and kind == "auto":
        opened = _reopen_earlier_auto(vectors.folder, vectors.corpus_id, vectors.corpus_version, vectors.rows,
                                      encoder.key, params, vectors.vectors)
    if opened is not None:
        progress(1.0, f"{index_kind.name} index of {vectors.rows:,} sentences reopened")
        return opened
    started = time.perf_counter()
    index = index_kind.build(vectors.vectors, seed=seed, progress=scaled(progress, 0.9, 1.0), cancel=cancel)
    seconds = time.perf_counter() - started
    tmp = path.with_suffix(".faiss.tmp")
    faiss.write_index(index, str(tmp))
    os.replace(tmp, path)
    record_tmp = record.with_suffix(".json.tmp")
    record_tmp.write_text(json.dumps({**key, "search": index_kind.search_params(vectors.rows),
                                      "build_seconds": round(seconds, 3)}))
    os.replace(record_tmp, record)
    progress(1.0, f"{index_kind.name} index of {vectors.rows:,} sentences built in {seconds:.1f} s")
    return CorpusIndex(index, index_kind, key, path, True, seconds, index_kind.search_params(vectors.rows),
                       vectors.vectors)


def _stored_settings(folder: Path, kind_name: str) -> dict[str, Any]:
    """The build and search settings the stored index of ``kind_name`` records (empty when none)."""
    try:
        stored = json.loads(_paths(folder, kind_name)[1].read_text())
    except (OSError, ValueError):
        return {}
    return {**(stored.get("build") or {}), **(stored.get("search") or {})}


def _reopen_earlier_auto(folder: Path, corpus_id: int, version: int, rows: int, encoder_key: str,
                         params: dict[str, Any] | None, exact: np.ndarray | None) -> CorpusIndex | None:
    """A current index of a kind ``auto`` built in earlier versions (:data:`AUTO_EARLIER`), or None.

    A large corpus indexed before ``auto`` meant :data:`AUTO_APPROXIMATE` keeps its index instead of
    being rebuilt; the given settings that the earlier kind has override its stored ones.
    """
    from engine.retrieval.registry import INDEX_KINDS

    if rows <= AUTO_EXACT_MAX:
        return None
    for name in AUTO_EARLIER:
        stored = _stored_settings(folder, name)
        if not stored:
            continue
        earlier = INDEX_KINDS.create(name)
        names = set(earlier.build_names) | set(earlier.search_names)
        kind = INDEX_KINDS.create(name, **{**stored, **{k: v for k, v in (params or {}).items() if k in names}})
        path, record = _paths(folder, name)
        opened = _read_if_current(path, record, _key(corpus_id, version, rows, encoder_key, kind), kind, exact)
        if opened is not None:
            return opened
    return None


def _read_if_current(path: Path, record: Path, key: dict[str, Any], kind: IndexKind,
                     exact: np.ndarray | None = None) -> CorpusIndex | None:
    try:
        stored = json.loads(record.read_text())
    except (OSError, ValueError):
        return None
    if {k: stored.get(k) for k in key} != key or not path.exists():
        return None
    started = time.perf_counter()
    index = faiss_module().read_index(str(path))
    kind.configure(index, key["rows"])
    return CorpusIndex(index, kind, key, path, False, time.perf_counter() - started, kind.search_params(key["rows"]),
                       exact)


def open_index(
    project: Project,
    name: str,
    encoder_key: str,
    *,
    kind: str = "auto",
    params: dict[str, Any] | None = None,
) -> CorpusIndex:
    """The stored, current index of the corpus (never builds).

    Raises
    ------
    IndexNotBuiltError
        When the embeddings or the index are missing or older than the corpus.
    """
    corpus = get_corpus(project, name)
    vectors = open_vectors(project, name, encoder_key)
    resolved = resolve_kind(kind, corpus.sentence_count)
    # settings not given: those the stored index was built with
    params = {**_stored_settings(vectors.folder, resolved), **(params or {})}
    try:
        index_kind = make_kind(resolved, corpus.sentence_count, params)
    except IndexSettingsError:  # e.g. auto with nprobe: settings of the IVF index an earlier auto built
        opened = None if kind != "auto" else _reopen_earlier_auto(
            vectors.folder, corpus.id, corpus.version, corpus.sentence_count, encoder_key, params, vectors.vectors)
        if opened is None:
            raise
        return opened
    key = _key(corpus.id, corpus.version, corpus.sentence_count, encoder_key, index_kind)
    path, record = _paths(vectors.folder, index_kind.name)
    opened = _read_if_current(path, record, key, index_kind, vectors.vectors)
    if opened is None and kind == "auto":
        opened = _reopen_earlier_auto(vectors.folder, corpus.id, corpus.version, corpus.sentence_count,
                                      encoder_key, params, vectors.vectors)
    if opened is None:
        raise IndexNotBuiltError(
            f"Corpus {name!r} has no current {index_kind.name} index for {encoder_key} with {key['build']}.",
            f"Build it: counterbias index PROJECT {name} --kind {index_kind.name}.")
    return opened
