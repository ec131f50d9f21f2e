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
per dataset version and text field per process.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from engine.text import segment

if TYPE_CHECKING:
    from engine.store.project import Project

__all__ = ["label_word_prior", "word_prior_from_texts"]

_CACHE: dict[tuple[str, int, str, tuple[str, ...], int], dict[str, float]] = {}
_LOCK = threading.Lock()


def word_prior_from_texts(texts: Sequence[str], labels: Sequence[str], *, min_count: int = 3) -> dict[str, float]:
    """Word -> the largest z over labels of its label share (word presence per text).

    Words in fewer than ``min_count`` texts are left out (their z says little).

    Examples
    --------
    >>> texts = ["great film", "great cast", "great plot", "dull film", "dull cast", "dull plot"]
    >>> prior = word_prior_from_texts(texts, ["pos"] * 3 + ["neg"] * 3)
    >>> round(prior["great"], 2), round(prior["film"], 2)
    (1.73, 0.0)
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
    best = np.full(len(words), -np.inf)
    for j, p0 in enumerate(share):
        if not 0.0 < p0 < 1.0:
            continue
        two = np.stack([matrix.sum(axis=1) - matrix[:, j], matrix[:, j]], axis=1)
        _, _, z = z_scores(two, float(p0))
        best = np.maximum(best, np.nan_to_num(z[:, 1], nan=-np.inf))
    return {w: float(best[i]) for i, w in enumerate(words) if np.isfinite(best[i])}


def label_word_prior(project: Project, dataset_id: int, *, field: str | None = None) -> dict[str, float]:
    """The word prior of a dataset version (see the module doc), cached per process.

    Parameters
    ----------
    project
        The open project.
    dataset_id
        The dataset version whose labels define the prior.
    field
        The text field (default: the dataset's last text field: ``text`` or ``hypothesis``).
    """
    from engine.store import ExampleQuery

    info = project.dataset(dataset_id)
    field = field or info.text_fields[-1]
    splits: tuple[str, ...] = ("train",)
    ids = project.example_ids(ExampleQuery(dataset_id, splits=splits))
    if len(ids) == 0:
        splits = ()
        ids = project.example_ids(ExampleQuery(dataset_id))
    key = (str(project.path), int(dataset_id), field, splits, len(ids))
    with _LOCK:
        if key in _CACHE:
            return _CACHE[key]
    texts, labels = [], []
    for start in range(0, len(ids), 2000):
        for row in project.examples(ids[start:start + 2000]):
            if row.get("label") not in (None, ""):
                texts.append(str(row.get(field) or ""))
                labels.append(str(row["label"]))
    prior = word_prior_from_texts(texts, labels)
    with _LOCK:
        _CACHE[key] = prior
    return prior
