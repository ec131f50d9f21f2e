"""Rows a member trains and selects on: train split, dev split (or a seeded hold-out).

Pure data assembly over the project store; no torch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from engine.models.config import MemberSpec, TrainConfig
from engine.models.errors import EnsembleConfigError, TrainingDataError
from engine.store import DatasetInfo, Project

__all__ = ["DEV_SPLITS", "TRAIN_SPLITS", "Example", "TrainingData", "input_fields", "split_sizes", "training_data"]

TRAIN_SPLITS = frozenset({"train", "training"})
DEV_SPLITS = frozenset({"dev", "validation", "valid", "val"})


@dataclass(frozen=True)
class Example:
    """One labelled input: the example id, its field texts and the label index."""

    id: int
    texts: tuple[str, ...]
    label: int


@dataclass(frozen=True)
class TrainingData:
    """The rows of one training run.

    Attributes
    ----------
    labels
        Label names; ``label`` indices point into it.
    fields
        Example columns the member reads, in order.
    train, dev
        The examples.
    dev_source
        ``"split"`` when the dataset's dev split was used, ``"held-out"`` for a seeded hold-out.
    """

    labels: tuple[str, ...]
    fields: tuple[str, ...]
    train: tuple[Example, ...]
    dev: tuple[Example, ...]
    dev_source: str


def input_fields(dataset: DatasetInfo, inputs: str) -> tuple[str, ...]:
    """Example columns a member with ``inputs`` reads from ``dataset``.

    Raises
    ------
    EnsembleConfigError
        For a hypothesis-only member on a single-text dataset.
    """
    if inputs == "hypothesis":
        if dataset.task != "pair":
            raise EnsembleConfigError(
                f"A hypothesis-only member needs a premise/hypothesis dataset; {dataset.name!r} has single texts.",
                "Use inputs='auto' for this dataset.",
            )
        return ("hypothesis",)
    return dataset.text_fields


def example_texts(row: dict, fields: Sequence[str]) -> tuple[str, ...]:
    """The field texts of an ``examples`` row (``None`` becomes ``""``)."""
    return tuple(row.get(f) or "" for f in fields)


def training_data(project: Project, dataset_id: int, spec: MemberSpec) -> TrainingData:
    """Assemble the train and dev examples of ``spec`` on a dataset version.

    The train split is every row whose split is ``train`` (or every row when no row has a
    split at all). The dev split is the rows whose split is ``dev``/``validation``; when there
    are none, a seeded, label-stratified ``dev_fraction`` of the train rows is held out.

    Raises
    ------
    TrainingDataError
        When there are no train rows or fewer than two labels among them.
    """
    dataset = project.dataset(dataset_id)
    fields = input_fields(dataset, spec.inputs)
    cfg = spec.train
    label_index = {name: i for i, name in enumerate(dataset.labels)}
    train: list[Example] = []
    dev: list[Example] = []
    untagged: list[Example] = []
    splits_seen: set[str | None] = set()
    for row in project.iter_examples(dataset.id):
        split = (row["split"] or "").strip().lower() or None
        splits_seen.add(split)
        ex = Example(int(row["id"]), example_texts(row, fields), label_index[row["label"]])
        if split in TRAIN_SPLITS:
            train.append(ex)
        elif split in DEV_SPLITS:
            dev.append(ex)
        elif split is None:
            untagged.append(ex)
    if not train and untagged:
        train = untagged
    if not train:
        raise TrainingDataError(
            f"Dataset {dataset.name!r} has no train rows (splits found: {sorted(s or '-' for s in splits_seen)}).",
            "Import the training file with split 'train', or rows without a split column.",
        )
    rng = np.random.default_rng(cfg.seed)
    dev_source = "split"
    if not dev:
        train, dev = _hold_out(train, cfg, rng)
        dev_source = "held-out"
    train = _subsample(train, cfg.max_train_rows, rng)
    dev = _subsample(dev, cfg.max_dev_rows, rng)
    if len({e.label for e in train}) < 2:
        raise TrainingDataError(
            f"The train rows of {dataset.name!r} hold a single label.", "A classifier needs at least two labels."
        )
    return TrainingData(tuple(dataset.labels), fields, tuple(train), tuple(dev), dev_source)


def _hold_out(rows: list[Example], cfg: TrainConfig, rng: np.random.Generator) -> tuple[list[Example], list[Example]]:
    """Split off a label-stratified ``dev_fraction`` (at least one row per label when possible)."""
    keep: list[Example] = []
    held: list[Example] = []
    by_label: dict[int, list[Example]] = {}
    for ex in rows:
        by_label.setdefault(ex.label, []).append(ex)
    for label in sorted(by_label):
        group = by_label[label]
        order = rng.permutation(len(group))
        n = int(round(len(group) * cfg.dev_fraction))
        n = min(max(n, 1), len(group) - 1) if len(group) > 1 else 0
        held.extend(group[i] for i in order[:n])
        keep.extend(group[i] for i in order[n:])
    keep.sort(key=lambda e: e.id)
    held.sort(key=lambda e: e.id)
    return keep, held


def _subsample(rows: list[Example], n: int | None, rng: np.random.Generator) -> list[Example]:
    if n is None or len(rows) <= n:
        return rows
    pick = np.sort(rng.choice(len(rows), size=n, replace=False))
    return [rows[i] for i in pick]


def split_sizes(counts: Mapping[str | None, int], cfg: TrainConfig) -> tuple[int, int]:
    """How many train and dev rows :func:`training_data` will use, from a dataset's split counts alone (a held-out
    dev fraction is rounded once, not per label).

    Parameters
    ----------
    counts
        Examples per split (:meth:`engine.store.project.Project.split_counts`).
    cfg
        The member's training options (``dev_fraction``, ``max_train_rows``, ``max_dev_rows``).

    Examples
    --------
    >>> from engine.models.config import TrainConfig
    >>> split_sizes({"train": 3414, "dev": 490}, TrainConfig(max_train_rows=800))
    (800, 490)
    >>> split_sizes({None: 1000}, TrainConfig(dev_fraction=0.1))
    (900, 100)
    """
    splits = {(str(k).strip().lower() if k else None): 0 for k in counts}
    for split, n in counts.items():
        splits[(str(split).strip().lower() if split else None)] += int(n)
    train = sum(n for split, n in splits.items() if split in TRAIN_SPLITS) or splits.get(None, 0)
    dev = sum(n for split, n in splits.items() if split in DEV_SPLITS)
    if not dev:
        dev = int(round(train * cfg.dev_fraction))
        train -= dev
    if cfg.max_train_rows is not None:
        train = min(train, int(cfg.max_train_rows))
    if cfg.max_dev_rows is not None:
        dev = min(dev, int(cfg.max_dev_rows))
    return train, dev
