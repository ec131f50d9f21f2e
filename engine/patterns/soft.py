"""Soft matchers: which words a ``(word)`` element accepts besides the word's own forms.

Registered by name in :data:`SOFT_MATCHERS`:

``embedding`` (default)
    Words whose bundled MiniLM-L6 embedding has cosine similarity of at least ``threshold``
    (0.55) with the word's. Word vectors are cached for the process. Related words are accepted
    whatever their polarity (``(pricey)`` takes *expensive* and *cheap* alike): a soft match
    names a topic, which is what a counterfactual must keep while its label changes.
``forms``
    No words besides the word's forms (a ``(word)`` element then behaves as ``[word]``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import Protocol

import numpy as np

from engine.patterns.errors import UnknownSoftMatcherError
from engine.registry import Registry

__all__ = ["SOFT_MATCHERS", "EmbeddingSoftMatcher", "FormsSoftMatcher", "SoftMatcher", "make_soft_matcher"]


class SoftMatcher(Protocol):
    """Decides which words soft-match a word."""

    name: str

    def related(self, word: str, candidates: Iterable[str]) -> set[str]:
        """The ``candidates`` (lower-case words) that soft-match ``word``."""
        ...

    def synonyms(self, word: str, vocabulary: Sequence[str], limit: int = 10) -> list[str]:
        """Up to ``limit`` words of ``vocabulary`` that soft-match ``word``, best first."""
        ...


SOFT_MATCHERS: Registry[type] = Registry(
    "soft matcher", UnknownSoftMatcherError,
    builtins={"embedding": "engine.patterns.soft:EmbeddingSoftMatcher", "forms": "engine.patterns.soft:FormsSoftMatcher"},
)


def make_soft_matcher(name: str = "embedding", **options: object) -> SoftMatcher:
    """The soft matcher registered as ``name``, built with ``options``."""
    return SOFT_MATCHERS.create(name, **options)


class FormsSoftMatcher:
    """Accepts nothing beyond the word's forms."""

    name = "forms"

    def related(self, word: str, candidates: Iterable[str]) -> set[str]:
        return set()

    def synonyms(self, word: str, vocabulary: Sequence[str], limit: int = 10) -> list[str]:
        return []


class EmbeddingSoftMatcher:
    """Words whose MiniLM embeddings are close to the word's.

    Parameters
    ----------
    threshold
        Smallest cosine similarity accepted.
    """

    name = "embedding"
    _vectors: dict[str, np.ndarray] = {}
    _lock = threading.Lock()

    def __init__(self, threshold: float = 0.55) -> None:
        self.threshold = float(threshold)

    def _encode(self, words: Iterable[str]) -> None:
        missing = [w for w in dict.fromkeys(words) if w not in self._vectors]
        if not missing:
            return
        from engine.retrieval.encoders import make_encoder

        vectors = make_encoder("minilm-l6", max_length=16, batch_size=256).encode(missing)
        with self._lock:
            for word, vector in zip(missing, vectors, strict=True):
                self._vectors[word] = vector

    def similarity(self, word: str, candidates: Sequence[str]) -> np.ndarray:
        """Cosine similarity of ``word`` with each candidate."""
        self._encode([word, *candidates])
        if not candidates:
            return np.zeros(0, dtype=np.float32)
        matrix = np.stack([self._vectors[c] for c in candidates])
        return matrix @ self._vectors[word]

    def related(self, word: str, candidates: Iterable[str]) -> set[str]:
        pool = [c for c in dict.fromkeys(candidates) if c != word]
        scores = self.similarity(word, pool)
        return {c for c, s in zip(pool, scores, strict=True) if s >= self.threshold}

    def synonyms(self, word: str, vocabulary: Sequence[str], limit: int = 10) -> list[str]:
        pool = [c for c in dict.fromkeys(vocabulary) if c != word]
        scores = self.similarity(word, pool)
        order = np.argsort(-scores, kind="stable")
        return [pool[i] for i in order[:limit] if scores[i] >= self.threshold]
