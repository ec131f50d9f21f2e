"""Diversity and closeness of a set of edits against their parents (one report per set).

:func:`pair_diversity` measures any list of (edit, parent) text pairs, e.g. the human revisions
of CAD; :func:`dataset_diversity` finds the pairs of an augmented dataset version through the
provenance of its generated rows (``examples.parent_id``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np

from engine.evaluation.bleu import self_bleu
from engine.evaluation.diversity import (
    distinct_n,
    flip_rate,
    paired_cosine,
    tokenize,
    top_pc_variance_share,
    word_edit_distance,
)
from engine.evaluation.errors import NoParentsError
from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress, scaled

if TYPE_CHECKING:
    from engine.store import Project

__all__ = ["DiversityReport", "dataset_diversity", "edit_pairs", "pair_diversity"]

#: ``judge(texts) -> predicted label names``.
Judge = Callable[[Sequence[str]], Sequence[str]]


@dataclass(frozen=True)
class DiversityReport:
    """Diversity of the edits and their closeness to the parents.

    Attributes
    ----------
    pairs
        Number of (edit, parent) pairs measured.
    self_bleu, parent_self_bleu
        Self-BLEU-4 of the edits, and of their parents for comparison.
    distinct_1, distinct_2
        Distinct-n of the edits.
    edit_distance
        Mean normalised word-level edit distance edit ↔ parent.
    cosine
        Mean MiniLM-L6 cosine edit ↔ parent (NaN when embeddings were not computed).
    pc_share
        Share of the edits' embedding variance on the top ``pc_k`` components.
    pc_k
        Components counted in ``pc_share``.
    flip_rate
        Share of edits a judge labels with their target label (NaN without a judge).
    """

    pairs: int
    self_bleu: float
    parent_self_bleu: float
    distinct_1: float
    distinct_2: float
    edit_distance: float
    cosine: float
    pc_share: float
    pc_k: int
    flip_rate: float

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


def pair_diversity(
    edits: Sequence[str],
    parents: Sequence[str],
    *,
    targets: Sequence[str] | None = None,
    judge: Judge | None = None,
    embeddings: bool = True,
    pc_k: int = 5,
    max_bleu_texts: int | None = 2000,
    seed: int = 0,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> DiversityReport:
    """Measure edits against their parents.

    Parameters
    ----------
    edits, parents
        Aligned texts: ``edits[i]`` was made from ``parents[i]``.
    targets
        The label each edit should express (for the flip rate).
    judge
        Predicts label names for texts (e.g. a trained member); with ``targets`` gives the flip rate.
    embeddings
        Compute the MiniLM cosine and principal-component share (loads the model).
    pc_k
        Components for the variance share.
    max_bleu_texts
        Self-BLEU on a seeded sample of at most this many texts (``None``: all).
    seed
        Seed of that sample.
    progress, cancel
        Progress callback and cancel token.

    Raises
    ------
    NoParentsError
        For fewer than two pairs.
    """
    cancel = ensure_token(cancel)
    if len(edits) != len(parents):
        raise ValueError("one parent per edit is needed")
    if len(edits) < 2:
        raise NoParentsError(
            f"Only {len(edits)} edit(s) with a parent: diversity needs at least two.",
            "Accept more candidates and build the augmented version again.",
        )
    progress(0.0, "tokenising")
    edit_tokens = [tokenize(t) for t in edits]
    parent_tokens = [tokenize(t) for t in parents]
    sample = np.arange(len(edits))
    if max_bleu_texts is not None and len(edits) > max_bleu_texts:
        sample = np.sort(np.random.default_rng(seed).choice(len(edits), max_bleu_texts, replace=False))
    sb = self_bleu([edit_tokens[i] for i in sample])
    psb = self_bleu([parent_tokens[i] for i in sample])
    cancel.raise_if_cancelled()
    progress(0.2, "edit distances")
    dist = float(np.mean([word_edit_distance(e, p) for e, p in zip(edit_tokens, parent_tokens)]))
    cos = share = float("nan")
    if embeddings:
        from engine.evaluation.embeddings import embed_texts

        both = embed_texts(list(edits) + list(parents), progress=scaled(progress, 0.3, 0.9), cancel=cancel)
        e, p = both[: len(edits)], both[len(edits) :]
        cos = float(np.nanmean(paired_cosine(e, p)))
        share = top_pc_variance_share(e, pc_k)
    flips = float("nan")
    if judge is not None and targets is not None:
        flips = flip_rate(list(judge(edits)), list(targets))
    progress(1.0, f"measured {len(edits):,} edits")
    return DiversityReport(
        pairs=len(edits),
        self_bleu=sb,
        parent_self_bleu=psb,
        distinct_1=distinct_n(edit_tokens, 1),
        distinct_2=distinct_n(edit_tokens, 2),
        edit_distance=dist,
        cosine=cos,
        pc_share=share,
        pc_k=pc_k,
        flip_rate=flips,
    )


def edit_pairs(project: Project, dataset_ref: int | str) -> tuple[list[str], list[str], list[str]]:
    """(edit texts, parent texts, target labels) of a dataset's rows that have a parent.

    Pair datasets are measured on the hypothesis field.

    Raises
    ------
    NoParentsError
        When no row of the dataset has a parent.
    """
    dataset = project.dataset(dataset_ref)
    field = "hypothesis" if dataset.task == "pair" else "text"
    rows = list(
        project.db.query(
            f"SELECT e.{field} AS edit, p.{field} AS parent, e.label AS label FROM dataset_members m "
            "JOIN examples e ON e.id = m.example_id JOIN examples p ON p.id = e.parent_id "
            "WHERE m.dataset_id = ? ORDER BY m.position",
            [dataset.id],
        )
    )
    if not rows:
        raise NoParentsError(
            f"Dataset {dataset.name!r} holds no generated rows with a parent.",
            "Choose an augmented version (built from accepted candidates), not an imported dataset.",
        )
    return [r["edit"] or "" for r in rows], [r["parent"] or "" for r in rows], [r["label"] for r in rows]


def dataset_diversity(
    project: Project,
    dataset_ref: int | str,
    *,
    judge: Judge | None = None,
    embeddings: bool = True,
    pc_k: int = 5,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> DiversityReport:
    """:func:`pair_diversity` of an augmented dataset's generated rows against their parents.

    Raises
    ------
    NoParentsError
        When the dataset has fewer than two rows with a parent.
    """
    edits, parents, targets = edit_pairs(project, dataset_ref)
    return pair_diversity(edits, parents, targets=targets, judge=judge, embeddings=embeddings, pc_k=pc_k,
                          progress=progress, cancel=cancel)
