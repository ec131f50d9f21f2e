"""Bias statistics and z-filtering on datasets stored in a project.

Reads go through :meth:`Project.iter_examples`; the only write is
:meth:`Project.add_derived_dataset` at the end of :func:`zfilter_project`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress, scaled
from engine.stats.config import StatsConfig
from engine.stats.errors import DatasetMismatchError, EmptyDatasetError, LabelSetError
from engine.stats.features import FeatureConfig, build_features
from engine.stats.matrix import FeatureMatrix
from engine.stats.zfilter import ZFilterConfig, ZFilterResult, rejection_reasons_by_id, z_filter
from engine.stats.zstats import ZStatsResult, compute_zstats
from engine.store import DatasetInfo, Project

#: Per-example categorical columns: ``{column name: {example id: value}}``.
Categorical = Mapping[str, Mapping[int, object]]


@dataclass(frozen=True, eq=False)
class DatasetTexts:
    """The texts and labels of one dataset version, in position order.

    Attributes
    ----------
    dataset
        The version.
    example_ids
        Example id of each row (int64).
    y
        Label id of each row (index into ``dataset.labels``).
    texts
        Texts of a single-text task (``None`` for pairs).
    premises, hypotheses
        Fields of a pair task (``None`` for single-text tasks).
    """

    dataset: DatasetInfo
    example_ids: np.ndarray
    y: np.ndarray
    texts: list[str] | None = None
    premises: list[str] | None = None
    hypotheses: list[str] | None = None

    @property
    def task(self) -> str:
        return self.dataset.task

    @property
    def labels(self) -> list[str]:
        return list(self.dataset.labels)

    def __len__(self) -> int:
        return len(self.example_ids)


def load_dataset_texts(
    project: Project,
    dataset_id: int,
    *,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> DatasetTexts:
    """Read the texts, labels and example ids of a dataset version.

    Raises
    ------
    DatasetNotFoundError
        If there is no such version.
    EmptyDatasetError
        If it holds no examples.
    LabelSetError
        If an example's label is not in the version's label set.
    """
    token = ensure_token(cancel)
    info = project.dataset(dataset_id)
    label_id = {label: i for i, label in enumerate(info.labels)}
    pair = info.task == "pair"
    ids: list[int] = []
    ys: list[int] = []
    first: list[str] = []
    second: list[str] = []
    total = max(info.row_count, 1)
    for i, row in enumerate(project.iter_examples(info.id)):
        if i % 5000 == 0:
            token.raise_if_cancelled()
            progress(min(i / total, 1.0), "Reading examples")
        label = row["label"]
        if label not in label_id:
            raise LabelSetError(
                f"Example {row['id']} of {info.name!r} has label {label!r}, which is not in the "
                f"dataset's label set {info.labels}.",
                "Re-import the dataset so that its label set covers every label.",
            )
        ids.append(row["id"])
        ys.append(label_id[label])
        if pair:
            first.append(row["premise"] or "")
            second.append(row["hypothesis"] or "")
        else:
            first.append(row["text"] or "")
    if not ids:
        raise EmptyDatasetError(f"Dataset {info.name!r} has no examples.", "Choose a dataset with examples.")
    progress(1.0, "Examples read")
    common = {"dataset": info, "example_ids": np.array(ids, np.int64), "y": np.array(ys, np.int64)}
    if pair:
        return DatasetTexts(premises=first, hypotheses=second, **common)
    return DatasetTexts(texts=first, **common)


def features_of(
    data: DatasetTexts,
    config: FeatureConfig | None = None,
    *,
    categorical: Categorical | None = None,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> FeatureMatrix:
    """Feature matrix of loaded texts; ``categorical`` values are looked up by example id."""
    extra = None
    if categorical:
        ids = data.example_ids.tolist()
        extra = {name: [values.get(i) for i in ids] for name, values in categorical.items()}
    if data.task == "pair":
        return build_features(
            premises=data.premises,
            hypotheses=data.hypotheses,
            config=config,
            categorical=extra,
            progress=progress,
            cancel=cancel,
        )
    return build_features(data.texts, config=config, categorical=extra, progress=progress, cancel=cancel)


def compute_project_stats(
    project: Project,
    dataset_id: int,
    config: StatsConfig | None = None,
    *,
    categorical: Categorical | None = None,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> ZStatsResult:
    """z-statistics of every feature of a stored dataset version.

    Parameters
    ----------
    project
        The open project.
    dataset_id
        The dataset version.
    config
        Feature families and statistics settings (defaults: :class:`StatsConfig`).
    categorical
        Extra categorical features by example id, e.g. ``{"hyp_only_pred": {id: label}}``.
    progress, cancel
        Progress callback and cancel token.
    """
    config = config or StatsConfig()
    data = load_dataset_texts(project, dataset_id, progress=scaled(progress, 0, 0.3), cancel=cancel)
    features = features_of(
        data, config.features, categorical=categorical, progress=scaled(progress, 0.3, 0.9), cancel=cancel
    )
    return compute_zstats(
        features, data.y, data.labels, config.zstats, progress=scaled(progress, 0.9, 1.0), cancel=cancel
    )


@dataclass(frozen=True, eq=False)
class ProjectZFilterResult:
    """A stored z-filtered version and the run that made it.

    Attributes
    ----------
    dataset
        The new ``filtered`` version (accepted examples, in their original order).
    result
        The z-filtering outcome (rows index the parent's examples in position order).
    example_ids
        Example id of each row of the parent.
    """

    dataset: DatasetInfo
    result: ZFilterResult
    example_ids: np.ndarray


def zfilter_project(
    project: Project,
    dataset_id: int,
    config: ZFilterConfig | None = None,
    *,
    features: FeatureConfig | None = None,
    seed_dataset_id: int | None = None,
    name: str | None = None,
    categorical: Categorical | None = None,
    summary_size: int = 20,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> ProjectZFilterResult:
    """z-filter a stored dataset version and save the accepted examples as a new version.

    Parameters
    ----------
    project
        The open project.
    dataset_id
        The dataset ``D'`` to filter (the new version's parent).
    config
        z-filter settings (defaults: :class:`ZFilterConfig`).
    features
        Feature families (defaults: :class:`FeatureConfig`).
    seed_dataset_id
        Conditional z-filtering ``Z(D' | D_seed)``: ``Z`` starts from this dataset's counts.
        It must have the same task and label set.
    name
        Name of the new version (default: ``"<parent> (z-filtered)"``, made unique).
    categorical
        Extra categorical features by example id (e.g. hypothesis-only predictions).
    summary_size
        Number of features listed in the stored rejection summary.
    progress, cancel
        Progress callback and cancel token (nothing is written if cancelled).

    Returns
    -------
    ProjectZFilterResult

    Raises
    ------
    DatasetNameTakenError
        If ``name`` is taken (checked before any work).
    DatasetMismatchError
        If the seed's task or label set differs.
    """
    config = config or ZFilterConfig()
    features = features or FeatureConfig()
    token = ensure_token(cancel)
    if name is not None:
        project.check_name_free(name)
    data = load_dataset_texts(project, dataset_id, progress=scaled(progress, 0, 0.1), cancel=token)
    seed: DatasetTexts | None = None
    if seed_dataset_id is not None:
        seed = load_dataset_texts(project, seed_dataset_id, progress=scaled(progress, 0.1, 0.2), cancel=token)
        _check_compatible(seed, data)
        seed = _relabel(seed, data.labels)
    combined = _concat(seed, data) if seed is not None else data
    fm = features_of(combined, features, categorical=categorical, progress=scaled(progress, 0.2, 0.5), cancel=token)
    n_seed = len(seed) if seed is not None else 0
    seed_counts = None
    if seed is not None:
        seed_counts = fm.rows(slice(0, n_seed)).label_counts(seed.y, len(data.labels))
        fm = fm.rows(slice(n_seed, None))
    result = z_filter(
        fm, data.y, data.labels, config, seed_counts=seed_counts, progress=scaled(progress, 0.5, 0.95), cancel=token
    )
    token.raise_if_cancelled()
    parent = data.dataset
    params: dict[str, Any] = {
        "method": "z-filter",
        "conditional_on": seed_dataset_id,
        "accepted": int(len(result.accepted)),
        "rejected": int(len(result.rejected)),
        "settings": {"zfilter": config.to_dict(), "features": features.to_dict()},
        "rejection_summary": [[f, c] for f, c in result.rejection_summary(summary_size)],
        "rejection_reasons": {
            str(i): f for i, f in rejection_reasons_by_id(result, data.example_ids).items()
        },
    }
    progress(0.95, "Saving the filtered dataset")
    info = project.add_derived_dataset(
        name or project.unique_dataset_name(f"{parent.name} (z-filtered)"),
        kind="filtered",
        parent_id=parent.id,
        example_ids=data.example_ids[result.accepted].tolist(),
        params=params,
    )
    progress(1.0, "z-filtering done")
    return ProjectZFilterResult(dataset=info, result=result, example_ids=data.example_ids)


def _check_compatible(seed: DatasetTexts, data: DatasetTexts) -> None:
    if seed.task != data.task:
        raise DatasetMismatchError(
            f"The seed {seed.dataset.name!r} is a {seed.task} task but {data.dataset.name!r} is a {data.task} task.",
            "Choose a seed dataset of the same task.",
        )
    if set(seed.labels) != set(data.labels):
        raise DatasetMismatchError(
            f"The seed's labels {seed.labels} differ from {data.labels}.",
            "Choose a seed dataset with the same label set.",
        )


def _relabel(data: DatasetTexts, labels: list[str]) -> DatasetTexts:
    """The same rows with label ids in the order of ``labels``."""
    mapping = np.array([labels.index(label) for label in data.labels], np.int64)
    return DatasetTexts(
        dataset=data.dataset,
        example_ids=data.example_ids,
        y=mapping[data.y],
        texts=data.texts,
        premises=data.premises,
        hypotheses=data.hypotheses,
    )


def _concat(first: DatasetTexts, second: DatasetTexts) -> DatasetTexts:
    """Rows of ``first`` then ``second`` (same task, same label ids), for joint features."""

    def join(a: list[str] | None, b: list[str] | None) -> list[str] | None:
        return None if a is None or b is None else a + b

    return DatasetTexts(
        dataset=second.dataset,
        example_ids=np.concatenate([first.example_ids, second.example_ids]),
        y=np.concatenate([first.y, second.y]),
        texts=join(first.texts, second.texts),
        premises=join(first.premises, second.premises),
        hypotheses=join(first.hypotheses, second.hypotheses),
    )
