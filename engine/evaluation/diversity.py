"""Diversity and closeness of generated texts: pure functions over tokens, embeddings and labels.

Diversity within a set of edits: :func:`~engine.evaluation.bleu.self_bleu` (higher = more alike),
:func:`distinct_n` (share of unique n-grams) and :func:`top_pc_variance_share` (share of the
embedding variance on the top principal components; higher = the edits vary along fewer
directions). Closeness of each edit to its parent: :func:`word_edit_distance` (normalised word-level
Levenshtein) and :func:`paired_cosine` (embedding cosine). Whether edits reach their target:
:func:`flip_rate` and :func:`label_change_rate` given a judge's predictions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from engine.evaluation.bleu import ngrams
from engine.text.distance import levenshtein

__all__ = [
    "distinct_n",
    "flip_rate",
    "label_change_rate",
    "levenshtein",
    "paired_cosine",
    "tokenize",
    "top_pc_variance_share",
    "word_edit_distance",
]

_TOKEN = re.compile(r"\w+(?:'\w+)?|[^\w\s]")
_TAG = re.compile(r"<br\s*/?>", re.IGNORECASE)


def tokenize(text: str) -> list[str]:
    """Lower-cased word and punctuation tokens; HTML line breaks (``<br />``) are dropped.

    Examples
    --------
    >>> tokenize("It's GOOD.<br />Really!")
    ["it's", 'good', '.', 'really', '!']
    """
    return _TOKEN.findall(_TAG.sub(" ", text or "").lower())


def distinct_n(texts: Sequence[Sequence[str]], n: int) -> float:
    """Distinct-n: unique n-grams over all n-grams of the set (Li et al. 2016).

    Parameters
    ----------
    texts
        Token lists.
    n
        n-gram order.

    Returns
    -------
    float
        In [0, 1]; NaN when the texts hold no n-gram.

    Examples
    --------
    >>> distinct_n([["a", "b", "a"], ["a", "c"]], 1)
    0.6
    """
    total = 0
    seen: set[tuple] = set()
    for tokens in texts:
        grams = ngrams(tokens, n)
        total += sum(grams.values())
        seen.update(grams)
    return len(seen) / total if total else float("nan")


def word_edit_distance(edited: Sequence[str], parent: Sequence[str]) -> float:
    """Word-level Levenshtein distance divided by the longer length (0 = same, 1 = all changed).

    Examples
    --------
    >>> word_edit_distance(["a", "good", "film"], ["a", "bad", "film"])
    0.3333333333333333
    """
    longest = max(len(edited), len(parent))
    return levenshtein(edited, parent) / longest if longest else 0.0


def paired_cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine similarity of two equally shaped embedding matrices.

    A zero row gives NaN.

    Examples
    --------
    >>> paired_cosine(np.array([[1.0, 0.0], [1.0, 1.0]]), np.array([[0.0, 2.0], [2.0, 2.0]])).round(3).tolist()
    [0.0, 1.0]
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"shapes differ: {a.shape} vs {b.shape}")
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(norms > 0, (a * b).sum(axis=1) / norms, np.nan)


def top_pc_variance_share(embeddings: np.ndarray, k: int = 5) -> float:
    """Share of the total variance of ``embeddings`` on their top ``k`` principal components.

    Parameters
    ----------
    embeddings
        ``(n, d)`` matrix, one row per text.
    k
        Number of components.

    Returns
    -------
    float
        In [0, 1]; 1 when the points spread along at most ``k`` directions. NaN for fewer
        than two rows or no variance.

    Examples
    --------
    >>> top_pc_variance_share(np.array([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]]), k=1)
    1.0
    """
    x = np.asarray(embeddings, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 2:
        return float("nan")
    x = x - x.mean(axis=0, keepdims=True)
    s2 = np.linalg.svd(x, compute_uv=False) ** 2
    total = float(s2.sum())
    return float(s2[:k].sum() / total) if total > 0 else float("nan")


def flip_rate(predicted: Sequence[str], target: Sequence[str]) -> float:
    """Share of edits that a judge labels with their target label.

    Examples
    --------
    >>> flip_rate(["pos", "neg", "pos"], ["pos", "pos", "pos"])
    0.6666666666666666
    """
    if len(predicted) != len(target):
        raise ValueError("one prediction per target is needed")
    return sum(p == t for p, t in zip(predicted, target)) / len(target) if target else float("nan")


def label_change_rate(predicted_edit: Sequence[str], predicted_parent: Sequence[str]) -> float:
    """Share of edits whose judged label differs from the judged label of their parent.

    Examples
    --------
    >>> label_change_rate(["pos", "neg"], ["neg", "neg"])
    0.5
    """
    if len(predicted_edit) != len(predicted_parent):
        raise ValueError("one parent prediction per edit is needed")
    pairs = list(zip(predicted_edit, predicted_parent))
    return sum(a != b for a, b in pairs) / len(pairs) if pairs else float("nan")
