"""FAISS index kinds over unit-length vectors (inner product = cosine), registered in
:data:`engine.retrieval.registry.INDEX_KINDS`.

``flat``
    Exact search (``IndexFlatIP``): every query scores every vector. Right for small corpora and
    the reference the others are measured against.
``ivf``
    Inverted file (``IndexIVFFlat``): k-means with ``nlist`` centroids, trained on a seeded random
    sample of the vectors; a query scans the ``nprobe`` nearest lists only. ``nprobe`` is a search
    setting (changed without rebuilding).
``ivfpq``
    Inverted file with product-quantised lists (``IndexIVFPQ``): each vector is stored as ``m``
    codes of ``nbits`` bits (48 bytes for 384-d MiniLM at the defaults, against 1,536 as float32),
    so ten million excerpts fit in about half a gigabyte. The approximate scores are re-ranked
    exactly: ``rerank`` × k candidates are re-scored against the stored embeddings, which stay
    memory-mapped on disk (only the rows read are paged in). ``nprobe`` and ``rerank`` are search
    settings.
``hnsw``
    Graph search (``IndexHNSWFlat``, ``m`` links per node, ``ef_construction``); ``ef_search`` is a
    search setting.

Each kind has ``build_params`` (they shape the stored index and are part of its key) and
``search_params`` (applied to an opened index).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress
from engine.retrieval.errors import FaissUnavailableError, IndexSettingsError

__all__ = ["ADD_CHUNK", "FlatKind", "HNSWKind", "IVFKind", "IVFPQKind", "IndexKind", "faiss_module"]

#: Vectors added to an index at a time (between two cancel checks).
ADD_CHUNK = 16384


def faiss_module() -> Any:
    """The ``faiss`` module (imported lazily).

    Raises
    ------
    FaissUnavailableError
    """
    try:
        import faiss
    except ImportError as exc:
        raise FaissUnavailableError("The faiss-cpu package is not installed.",
                                    "Install it: pip install 'faiss-cpu>=1.8' (part of the ml extra).") from exc
    return faiss


class IndexKind:
    """A way of indexing unit vectors for inner-product search.

    Parameters
    ----------
    **params
        Build and search settings of the kind (unknown names are refused).
    """

    name: ClassVar[str] = ""
    build_names: ClassVar[tuple[str, ...]] = ()
    search_names: ClassVar[tuple[str, ...]] = ()

    def __init__(self, **params: Any) -> None:
        unknown = sorted(set(params) - set(self.build_names) - set(self.search_names))
        if unknown:
            known = ", ".join(self.build_names + self.search_names) or "none"
            raise IndexSettingsError(f"Index kind {self.name!r} has no setting {', '.join(unknown)}.",
                                     f"Its settings: {known}.")
        self.params = {k: v for k, v in params.items() if v is not None}

    def build_params(self, rows: int) -> dict[str, Any]:
        """The settings that shape the stored index, defaults filled in for ``rows`` vectors."""
        return {}

    def search_params(self, rows: int) -> dict[str, Any]:
        """The settings applied to an opened index before searching."""
        return {}

    def create(self, dimension: int, rows: int) -> Any:
        """An empty FAISS index for ``rows`` vectors."""
        raise NotImplementedError

    def train(self, index: Any, vectors: np.ndarray, *, seed: int = 0) -> None:
        """Train ``index`` on (a sample of) ``vectors`` when it needs training."""

    def configure(self, index: Any, rows: int) -> None:
        """Apply :meth:`search_params` to ``index``."""

    def build(self, vectors: np.ndarray, *, seed: int = 0, progress: ProgressFn = no_progress,
              cancel: CancelToken | None = None) -> Any:
        """A trained index holding every row of ``vectors`` (added in chunks; progress and cancel per chunk)."""
        cancel = ensure_token(cancel)
        rows, dimension = vectors.shape
        index = self.create(dimension, rows)
        progress(0.0, f"{self.name}: training")
        self.train(index, vectors, seed=seed)
        for start in range(0, rows, ADD_CHUNK):
            cancel.raise_if_cancelled()
            index.add(np.ascontiguousarray(vectors[start : start + ADD_CHUNK], dtype=np.float32))
            done = min(rows, start + ADD_CHUNK)
            progress(done / rows, f"{self.name}: {done:,}/{rows:,} vectors added")
        self.configure(index, rows)
        return index


class FlatKind(IndexKind):
    """Exact inner-product search."""

    name = "flat"

    def create(self, dimension: int, rows: int) -> Any:
        return faiss_module().IndexFlatIP(dimension)


class IVFKind(IndexKind):
    """Inverted file with flat lists.

    Parameters
    ----------
    nlist
        Clusters (default ``4 * sqrt(rows)``, rounded to a power of two, at most ``rows / 39``).
    nprobe
        Clusters scanned per query (default ``nlist / 8``, at least 1).
    train_size
        Vectors the k-means is trained on (default ``64 * nlist``, all if fewer).
    """

    name = "ivf"
    build_names = ("nlist", "train_size")
    search_names = ("nprobe",)

    def build_params(self, rows: int) -> dict[str, Any]:
        nlist = self.params.get("nlist")
        if nlist is None:
            nlist = 2 ** max(0, round(math.log2(max(1.0, 4 * math.sqrt(rows)))))
            nlist = max(1, min(nlist, rows // 39 or 1))
        nlist = int(nlist)
        if nlist < 1 or nlist > rows:
            raise IndexSettingsError(f"nlist {nlist} does not fit {rows:,} vectors.",
                                     "Use 1 <= nlist <= the corpus size (about 4·√n is usual), or the flat index.")
        train_size = int(self.params.get("train_size") or min(rows, 64 * nlist))
        if train_size < nlist:
            raise IndexSettingsError(f"train_size {train_size} is below nlist {nlist}.",
                                     "Train on at least nlist vectors (39·nlist or more is better).")
        return {"nlist": nlist, "train_size": min(train_size, rows)}

    def search_params(self, rows: int) -> dict[str, Any]:
        nlist = self.build_params(rows)["nlist"]
        nprobe = int(self.params.get("nprobe") or max(1, nlist // 8))
        if nprobe < 1:
            raise IndexSettingsError(f"nprobe {nprobe} is not positive.", "Use nprobe >= 1.")
        return {"nprobe": min(nprobe, nlist)}

    def create(self, dimension: int, rows: int) -> Any:
        faiss = faiss_module()
        quantizer = faiss.IndexFlatIP(dimension)
        return faiss.IndexIVFFlat(quantizer, dimension, self.build_params(rows)["nlist"], faiss.METRIC_INNER_PRODUCT)

    def train(self, index: Any, vectors: np.ndarray, *, seed: int = 0) -> None:
        rows = vectors.shape[0]
        size = self.build_params(rows)["train_size"]
        pick = np.sort(np.random.default_rng(seed).choice(rows, size=size, replace=False)) if size < rows else None
        sample = np.ascontiguousarray(vectors[pick] if pick is not None else vectors[:], dtype=np.float32)
        index.cp.seed = seed
        index.train(sample)

    def configure(self, index: Any, rows: int) -> None:
        index.nprobe = self.search_params(rows)["nprobe"]


class IVFPQKind(IVFKind):
    """Inverted file with product-quantised vectors, re-ranked exactly from the stored embeddings.

    Parameters
    ----------
    nlist, nprobe
        As :class:`IVFKind`.
    train_size
        Vectors the k-means and the codebooks are trained on (default ``64 * nlist``, at least
        ``39 * 2**nbits``, all if fewer).
    codes
        Sub-quantisers (codes) per vector (default 48; must divide the dimension).
    nbits
        Bits per code (default 8).
    rerank
        Candidates re-scored exactly per wanted result (default 4; 1: the approximate scores).
    """

    name = "ivfpq"
    build_names = ("nlist", "train_size", "codes", "nbits")
    search_names = ("nprobe", "rerank")

    def build_params(self, rows: int) -> dict[str, Any]:
        nbits = int(self.params.get("nbits", 8))
        codes = int(self.params.get("codes", 48))
        if not 1 <= nbits <= 16 or codes < 1:
            raise IndexSettingsError(f"codes {codes} / nbits {nbits} cannot quantise.",
                                     "Use codes >= 1 and 1 <= nbits <= 16.")
        base = IVFKind(**{k: v for k, v in self.params.items() if k in ("nlist", "nprobe")}).build_params(rows)
        wanted = self.params.get("train_size") or max(64 * base["nlist"], 39 * 2**nbits)
        return {**base, "train_size": int(min(rows, wanted)), "codes": codes, "nbits": nbits}

    def search_params(self, rows: int) -> dict[str, Any]:
        rerank = int(self.params.get("rerank", 4))
        if rerank < 1:
            raise IndexSettingsError(f"rerank {rerank} is not positive.", "Use rerank >= 1 (1: no exact re-ranking).")
        return {**super().search_params(rows), "rerank": rerank}

    def create(self, dimension: int, rows: int) -> Any:
        faiss = faiss_module()
        built = self.build_params(rows)
        if dimension % built["codes"]:
            raise IndexSettingsError(f"codes {built['codes']} does not divide the dimension {dimension}.",
                                     f"Use a divisor of {dimension}, e.g. {dimension // 8}.")
        quantizer = faiss.IndexFlatIP(dimension)
        return faiss.IndexIVFPQ(quantizer, dimension, built["nlist"], built["codes"], built["nbits"],
                                faiss.METRIC_INNER_PRODUCT)


class HNSWKind(IndexKind):
    """Hierarchical navigable small-world graph.

    Parameters
    ----------
    m
        Links per node (default 32).
    ef_construction
        Candidate list while building (default 80).
    ef_search
        Candidate list while searching (default 256: recall@10 0.964 at 10x exact search on
        593,716 IMDb sentences, where 128 gave 0.947 at 22x and 64 less; raised to k when k is
        larger).
    """

    name = "hnsw"
    build_names = ("m", "ef_construction")
    search_names = ("ef_search",)

    def build_params(self, rows: int) -> dict[str, Any]:
        m = int(self.params.get("m", 32))
        ef = int(self.params.get("ef_construction", 80))
        if m < 2 or ef < 1:
            raise IndexSettingsError(f"m {m} / ef_construction {ef} cannot build a graph.", "Use m >= 2, ef >= 1.")
        return {"m": m, "ef_construction": ef}

    def search_params(self, rows: int) -> dict[str, Any]:
        ef = int(self.params.get("ef_search", 256))
        if ef < 1:
            raise IndexSettingsError(f"ef_search {ef} is not positive.", "Use ef_search >= 1.")
        return {"ef_search": ef}

    def create(self, dimension: int, rows: int) -> Any:
        faiss = faiss_module()
        params = self.build_params(rows)
        index = faiss.IndexHNSWFlat(dimension, params["m"], faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = params["ef_construction"]
        return index

    def configure(self, index: Any, rows: int) -> None:
        index.hnsw.efSearch = self.search_params(rows)["ef_search"]
