"""A word prior from the labels: how strongly each word's presence goes with one label (z-statistics).

For every lexical word type (normalised as the vote normalises words) the examples holding it
are counted per gold label; its prior is the largest z-statistic over the labels of the share
of examples with that label against the label's overall share (Gardner et al. 2021: the
same statistic the *Bias statistics* tab plots, on word presence). For two labels it is the
word's ``|z|``. A word the data ties to one label this strongly ("best", "worst", "boring")
carries the label — or a spurious correlation the data holds ("horror" and "romantic" rank as
high on CAD sentiment reviews): the prior alone cannot tell them apart, the vote rules use it
as a tie-breaker or a blend (``z-tiebreak``, ``z-prior``).

Computed from the dataset's ``train`` split when it has one (else every labelled row), once
per dataset version and text field per process. The same rows say which label goes with
which end of a rating scale (:func:`label_rating_sides`, :mod:`engine.text.ratings`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.text import segment

if TYPE_CHECKING:
    from engine.store.project import Project

__all__ = ["label_rating_sides", "label_word_prior", "label_word_z", "word_prior_from_texts", "word_z_by_label"]

_CACHE: dict[tuple[Any, ...], Any] = {}
_LOCK = threading.Lock()


def word_z_by_label(texts: Sequence[str], labels: Sequence[str], *, min_count: int = 3) -> dict[str, dict[str, float]]:
    """Label -> word -> z of the label's share among the texts holding the word (signed: > 0 goes with it).

    Words in fewer than ``min_count`` texts are left out (their z says little).

    Examples
    --------
    >>> texts = ["great film", "great cast", "great plot", "dull film", "dull cast", "dull plot"]
    >>> z = word_z_by_label(texts, ["pos"] * 3 + ["neg"] * 3)
    >>> round(z["pos"]["great"], 2), round(z["pos"]["dull"], 2), round(z["neg"]["film"], 2)
    (1.73, -1.73, 0.0)
    """
    from engine.stats.zstats import z_scores

    names = sorted({str(label) for label in labels})
    if len(names) < 2 or not texts:
        return {}
    column = {name: i for i, name in enumerate(names)}
    counts: dict[str, np.ndarray] = {}
    totals = np.zeros(len(names), dtype=np.int64)
    for text, label in zip(texts, labels, strict=True):
        j = column[str(label)]
        totals[j] += 1
        for key in {w.key for w in segment(text or "") if w.is_lexical}:
            row = counts.get(key)
            if row is None:
                row = counts[key] = np.zeros(len(names), dtype=np.int64)
            row[j] += 1
    words = [w for w, c in counts.items() if c.sum() >= min_count]
    if not words:
        return {}
    matrix = np.stack([counts[w] for w in words])
    share = totals / totals.sum()
    out: dict[str, dict[str, float]] = {}
    for j, p0 in enumerate(share):
        if not 0.0 < p0 < 1.0:
            continue
        two = np.stack([matrix.sum(axis=1) - matrix[:, j], matrix[:, j]], axis=1)
        _, _, z = z_scores(two, float(p0))
        out[names[j]] = {w: float(z[i, 1]) for i, w in enumerate(words) if np.isfinite(z[i, 1])}
    return out


def word_prior_from_texts(texts: Sequence[str], labels: Sequence[str], *, min_count: int = 3) -> dict[str, float]:
    """Word -> the largest z over labels of its label share (:func:`word_z_by_label`).

    Examples
    --------
    >>> texts = ["great film", "great cast", "great plot", "dull film", "dull cast", "dull plot"]
    >>> prior = word_prior_from_texts(texts, ["pos"] * 3 + ["neg"] * 3)
    >>> round(prior["great"], 2), round(prior["film"], 2)
    (1.73, 0.0)
    """
    return _largest(word_z_by_label(texts, labels, min_count=min_count))


def label_word_z(project: Project, dataset_id: int, *, field: str | None = None) -> dict[str, dict[str, float]]:
    """:func:`word_z_by_label` of a dataset version's train split (else every labelled row), cached per process.

    Parameters
    ----------
    project
        The open project.
    dataset_id
        The dataset version whose labels define the statistics.
    field
        The text field (default: the dataset's last text field: ``text`` or ``hypothesis``).
    """
    return _from_labelled(project, dataset_id, field, "word z", word_z_by_label)


def label_rating_sides(project: Project, dataset_id: int, *, field: str | None = None) -> dict[str, str]:
    """Which label goes with the high and the low end of a rating scale in a dataset version's train split
    (:func:`engine.text.ratings.rating_sides`; empty when its texts carry too few ratings), cached per process."""
    from engine.text.ratings import rating_sides

    return _from_labelled(project, dataset_id, field, "rating sides", rating_sides)


def label_vocabulary(project: Project, dataset_id: int, *, field: str | None = None) -> frozenset[str]:
    """The words of at least two texts of a dataset version's train split (:func:`engine.text.lexicon.corpus_words`;
    the ``coined-word`` check's own words), cached per process."""
    from engine.text.lexicon import corpus_words

    return _from_labelled(project, dataset_id, field, "vocabulary", lambda texts, labels: corpus_words(texts))


def _from_labelled(project: Project, dataset_id: int, field: str | None, kind: str,
                   compute: Callable[[list[str], list[str]], Any]) -> Any:
    """``compute(texts, labels)`` over the train split's labelled rows (else every labelled row), cached."""
    from engine.store import ExampleQuery

    info = project.dataset(dataset_id)
    field = field or info.text_fields[-1]
    splits: tuple[str, ...] = ("train",)
    ids = project.example_ids(ExampleQuery(dataset_id, splits=splits))
    if len(ids) == 0:
        splits = ()
        ids = project.example_ids(ExampleQuery(dataset_id))
    key = (kind, str(project.path), int(dataset_id), field, splits, len(ids))
    with _LOCK:
        if key in _CACHE:
            return _CACHE[key]
    texts, labels = [], []
    for start in range(0, len(ids), 2000):
        for row in project.examples(ids[start:start + 2000]):
            if row.get("label") not in (None, ""):
                texts.append(str(row.get(field) or ""))
                labels.append(str(row["label"]))
    value = compute(texts, labels)
    with _LOCK:
        _CACHE[key] = value
    return value


def label_word_prior(project: Project, dataset_id: int, *, field: str | None = None) -> dict[str, float]:
    """The word prior of a dataset version (see the module doc): each word's largest z over the labels."""
    return _largest(label_word_z(project, dataset_id, field=field))


def _largest(by_label: dict[str, dict[str, float]]) -> dict[str, float]:
    """Word -> its largest z over the labels."""
    best: dict[str, float] = {}
    for per_word in by_label.values():
        for w, z in per_word.items():
            if z > best.get(w, -np.inf):
                best[w] = z
    return best
