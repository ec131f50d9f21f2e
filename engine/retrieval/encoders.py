"""Sentence encoders for the corpus index (registered in :data:`engine.retrieval.registry.ENCODERS`).

An encoder turns texts into L2-normalised float32 vectors, so that the inner product of two is
their cosine. Its :attr:`Encoder.key` names the weights and every setting that changes the
vectors: stored embeddings and indexes are keyed by it. The built-in ``minilm-l6`` is the bundled
all-MiniLM-L6-v2 bi-encoder with sentence-transformers mean pooling, computed by
:func:`engine.evaluation.embeddings.embed_texts` (the one place the engine loads it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from engine.progress import CancelToken, ProgressFn, no_progress

__all__ = ["Encoder", "MiniLMEncoder", "encode_queries", "make_encoder", "normalise_rows"]


class Encoder(Protocol):
    """What the index needs of a sentence encoder."""

    name: str
    dimension: int

    @property
    def key(self) -> str:
        """Names the weights and settings (``"minilm-l6-len64"``): a file-name-safe string."""
        ...

    def encode(self, texts: Sequence[str], *, progress: ProgressFn = no_progress,
               cancel: CancelToken | None = None) -> np.ndarray:
        """``(len(texts), dimension)`` float32, each row of unit length."""
        ...


def normalise_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), as float32.

    Examples
    --------
    >>> normalise_rows(np.array([[3.0, 4.0], [0.0, 0.0]])).tolist()
    [[0.6000000238418579, 0.800000011920929], [0.0, 0.0]]
    """
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0)


class MiniLMEncoder:
    """The bundled all-MiniLM-L6-v2 bi-encoder (384-d, mean pooling), normalised.

    Parameters
    ----------
    max_length
        Tokens per text (longer texts are truncated); 64 covers nearly every review sentence.
    batch_size
        Texts per forward pass (default: 64 on a CPU, 512 on a GPU).
    """

    name = "minilm-l6"
    dimension = 384

    def __init__(self, max_length: int = 64, batch_size: int | None = None) -> None:
        self.max_length = int(max_length)
        self.batch_size = None if batch_size is None else int(batch_size)

    @property
    def key(self) -> str:
        return f"{self.name}-len{self.max_length}"

    def encode(self, texts: Sequence[str], *, progress: ProgressFn = no_progress,
               cancel: CancelToken | None = None) -> np.ndarray:
        from engine.evaluation.embeddings import embed_texts

        # Batches of similar length pad less: encode in length order, return in the given order.
        order = np.argsort([len(t) for t in texts], kind="stable")
        vectors = embed_texts([texts[i] for i in order], batch_size=self.batch_size, max_length=self.max_length,
                              progress=progress, cancel=cancel)
        out = np.empty_like(vectors)
        out[order] = vectors
        return normalise_rows(out)


def encode_queries(encoder: Encoder, texts: Sequence[str], *, progress: ProgressFn = no_progress,
                   cancel: CancelToken | None = None) -> np.ndarray:
    """Query vectors: ``encoder.encode_queries`` where the encoder reads queries apart from passages
    (a trained retriever, :class:`engine.retrieval.dpr.TrainedEncoder`), else ``encoder.encode``."""
    method = getattr(encoder, "encode_queries", None) or encoder.encode
    return method(list(texts), progress=progress, cancel=cancel)


def make_encoder(name: str = "minilm-l6", **options: object) -> Encoder:
    """The encoder registered as ``name``, built with ``options``.

    Raises
    ------
    engine.retrieval.errors.EncoderError
        For an unknown name (the hint lists the known ones).
    """
    from engine.retrieval.registry import ENCODERS

    return ENCODERS.create(name, **options)
