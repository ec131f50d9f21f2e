"""One statistics run over a stored dataset version, kept with what the GUI needs to drill down.

:func:`analyse_dataset` computes the z-statistics like
:func:`~engine.stats.project_io.compute_project_stats` and also keeps the feature matrix and
the example ids, so a click on a feature can list the examples holding it. Each run is
recorded in the project's ``runs`` table (settings and the top biased features per label).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass

import numpy as np

from engine.progress import CancelToken, ProgressFn, no_progress, scaled
from engine.stats.config import StatsConfig
from engine.stats.features import FeatureMatrix
from engine.stats.project_io import Categorical, features_of, load_dataset_texts
from engine.stats.zstats import ZStatsResult, compute_zstats
from engine.store import DatasetInfo, Project
from engine.store.schema import now


@dataclass(frozen=True, eq=False)
class DatasetStats:
    """z-statistics of one dataset version plus the features behind them.

    Attributes
    ----------
    dataset
        The version analysed.
    result
        The z-statistics.
    features
        The examples × features matrix (rows in position order).
    example_ids
        Example id of each matrix row.
    config
        The settings used.
    run_id
        The ``runs`` row recording this analysis.
    """

    dataset: DatasetInfo
    result: ZStatsResult
    features: FeatureMatrix
    example_ids: np.ndarray
    config: StatsConfig
    run_id: int | None = None

    def examples_with(self, feature: str) -> list[int]:
        """Ids of the examples holding ``feature`` (empty if unknown)."""
        try:
            rows = self.features.examples_with(feature)
        except KeyError:
            return []
        return self.example_ids[rows].tolist()

    def summary(self, k: int = 10) -> dict:
        """Top-``k`` biased features per label with n and z (what the run record stores)."""
        r = self.result
        top = {}
        for j, label in enumerate(r.labels):
            top[label] = [
                {"feature": r.feature_names[i], "n": int(r.n[i]), "z": round(float(r.z[i, j]), 3)}
                for i in r.top_k_indices(label, k)
            ]
        return {
            "features": len(r.feature_names),
            "tested": int(r.tested.sum()),
            "z_threshold": round(float(r.z_threshold), 4),
            "significant": int(r.significant_mask.any(axis=1).sum()),
            "top": top,
        }


def analyse_dataset(
    project: Project,
    dataset_id: int,
    config: StatsConfig | None = None,
    *,
    categorical: Categorical | None = None,
    record: bool = True,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> DatasetStats:
    """Compute the z-statistics of a stored dataset version and keep the drill-down data.

    Parameters
    ----------
    project, dataset_id
        The dataset version.
    config
        Feature families and statistics settings.
    categorical
        Extra categorical features by example id (e.g. ``{"hyp_only_pred": {id: label}}``).
    record
        Write a ``runs`` row with the settings and the top features per label.
    progress, cancel
        Progress callback and cancel token.
    """
    config = config or StatsConfig()
    started = now()
    data = load_dataset_texts(project, dataset_id, progress=scaled(progress, 0, 0.3), cancel=cancel)
    features = features_of(
        data, config.features, categorical=categorical, progress=scaled(progress, 0.3, 0.9), cancel=cancel
    )
    result = compute_zstats(features, data.y, data.labels, config.zstats, progress=scaled(progress, 0.9, 1.0),
                            cancel=cancel)
    stats = DatasetStats(data.dataset, result, features, data.example_ids, config)
    if not record:
        return stats

    def write(conn: sqlite3.Connection) -> int:
        cursor = conn.execute(
            "INSERT INTO runs (kind, dataset_id, params, status, result, started_at, finished_at) "
            "VALUES ('stats', ?, ?, 'done', ?, ?, ?)",
            (dataset_id, json.dumps(config.to_dict()), json.dumps(stats.summary()), started, now()),
        )
        return int(cursor.lastrowid)

    run_id = project.writer.run(write)
    return DatasetStats(data.dataset, result, features, data.example_ids, config, run_id)


def hypothesis_only_categorical(
    project: Project,
    dataset_id: int,
    member: str = "auto",
    *,
    progress: ProgressFn | None = None,
    cancel: CancelToken | None = None,
) -> Categorical | None:
    """The ``hyp_only_pred`` feature column from a hypothesis-only member, or ``None``.

    Parameters
    ----------
    member
        ``"auto"``: the newest hypothesis-only member trained on this dataset (or its parent),
        ``None`` if there is none; ``"none"``: no feature; otherwise a member name.
    """
    if member == "none":
        return None
    from engine.models.predict import hypothesis_only_feature, hypothesis_only_members

    if member == "auto":
        found = hypothesis_only_members(project, dataset_id)
        if not found:
            return None
        member = found[-1]
    return {"hyp_only_pred": hypothesis_only_feature(project, member, dataset_id, progress=progress or no_progress,
                                                     cancel=cancel)}


def analyse_pair(
    project: Project,
    dataset_id: int,
    compare_id: int | None,
    config: StatsConfig,
    *,
    hyp_only: str = "auto",
    progress: ProgressFn | None = None,
    cancel: CancelToken | None = None,
) -> tuple[DatasetStats, DatasetStats | None]:
    """Statistics of a dataset and, optionally, of a second one to compare with.

    A hypothesis-only member trained on a dataset adds its ``hyp_only_pred`` feature (see
    :func:`hypothesis_only_categorical`). The GUI's *Compute* and the CLI's ``stats`` call this.

    Parameters
    ----------
    compare_id
        A second dataset version (its statistics are computed with the same ``config``), or ``None``.
    hyp_only
        ``"auto"``, ``"none"`` or a member name, as in :func:`hypothesis_only_categorical`.

    Returns
    -------
    tuple
        ``(stats of dataset_id, stats of compare_id or None)``.
    """
    progress = progress or no_progress

    def one(ds_id: int, lo: float, hi: float) -> DatasetStats:
        mid = lo + (hi - lo) / 2
        extra = hypothesis_only_categorical(project, ds_id, hyp_only, progress=scaled(progress, lo, mid), cancel=cancel)
        return analyse_dataset(project, ds_id, config, categorical=extra, progress=scaled(progress, mid, hi),
                               cancel=cancel)

    main = one(dataset_id, 0.0, 0.5 if compare_id is not None else 1.0)
    other = one(compare_id, 0.5, 1.0) if compare_id is not None else None
    return main, other
