"""z-statistics of features against labels (Gardner et al. 2021; Wu et al. 2022, eq. 2).

For a feature ``x`` and a label ``l``::

    n        = count(x)                      (column sum of the feature matrix)
    p_hat    = count(x, l) / n
    z(x, l)  = (p_hat - p0) / sqrt(p0 * (1 - p0) / n)

with ``p0 = 1 / |labels|`` unless set. Under the null hypothesis "the label does not depend
on the feature" ``count(x, l)`` is Binomial(n, p0) and ``z`` is approximately standard
normal.

Significance
------------
A feature is *significant for a label* when ``z > z*`` (one-sided: we look for features
that over-predict a label). ``z* = Φ⁻¹(1 − α/m)`` is the Bonferroni-corrected threshold,
``α = 0.01`` by default, and ``m`` is the number of *features* tested, i.e. those whose
count passes the minimum-count filter — as in Gardner et al.'s plots, where one
threshold curve serves all labels. Set ``ZStatsConfig(correction="pairs")`` to count every
(feature, label) pair instead (``m = features × labels``, a slightly stricter threshold).

Counting is vectorized: per-label counts are ``X.T @ Y`` with ``Y`` the one-hot label
matrix (:func:`label_counts`; :meth:`FeatureMatrix.label_counts` computes the same product
block by block over distinct rows).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp
from scipy.special import ndtri

from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress
from engine.stats.errors import EmptyDatasetError, LabelSetError, StatsConfigError
from engine.stats.matrix import FeatureMatrix

ROW_KEYS = ("feature", "kind", "label", "n", "count", "p_hat", "z", "significant")


@dataclass(frozen=True)
class ZStatsConfig:
    """Settings of the z-statistics.

    Parameters
    ----------
    alpha
        Family-wise significance level before the Bonferroni correction.
    min_count
        Features with fewer occurrences (``n``) are not tested and get no z.
    p0
        Expected share of each label under the null (``None``: ``1 / |labels|``).
    correction
        ``"features"``: ``m`` = features tested; ``"pairs"``: ``m`` = features × labels.
    """

    alpha: float = 0.01
    min_count: int = 5
    p0: float | None = None
    correction: Literal["features", "pairs"] = "features"

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 1:
            raise StatsConfigError(f"Significance level {self.alpha} is not between 0 and 1.", "Use e.g. 0.01.")
        if int(self.min_count) < 1:
            raise StatsConfigError(f"Minimum count {self.min_count} is below 1.", "Use 1 or more.")
        if self.p0 is not None and not 0 < self.p0 < 1:
            raise StatsConfigError(f"p0 = {self.p0} is not between 0 and 1.", "Leave it empty for 1/labels.")
        if self.correction not in ("features", "pairs"):
            raise StatsConfigError(
                f"Unknown multiple-testing correction {self.correction!r}.", "Use 'features' or 'pairs'."
            )

    def resolve_p0(self, n_labels: int) -> float:
        """``p0``, defaulting to ``1 / n_labels``."""
        return float(self.p0) if self.p0 is not None else 1.0 / n_labels

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ZStatsConfig:
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise StatsConfigError(f"Unknown statistics settings {sorted(unknown)}.", f"Use only {sorted(known)}.")
        return cls(**data)


# ---------------------------------------------------------------------------- pure functions


def one_hot(y: np.ndarray, n_labels: int) -> np.ndarray:
    """Dense (n, n_labels) int64 one-hot matrix of label ids ``y``."""
    Y = np.zeros((len(y), n_labels), dtype=np.int64)
    Y[np.arange(len(y)), y] = 1
    return Y


def label_counts(X: sp.csr_array | sp.spmatrix, y: np.ndarray, n_labels: int) -> np.ndarray:
    """Per-label feature counts ``X.T @ Y`` as a dense (n_features, n_labels) int64 array."""
    if X.shape[0] == 0:
        return np.zeros((X.shape[1], n_labels), dtype=np.int64)
    return np.asarray(X.T @ one_hot(np.asarray(y), n_labels), dtype=np.int64)


def z_scores(counts: np.ndarray, p0: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n``, ``p_hat`` and ``z`` from per-label counts (rows with ``n == 0`` get NaN)."""
    n = counts.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        p_hat = counts / n[:, None]
        # the standard error depends on n only: one square root per feature, not per label
        se = np.sqrt(p0 * (1.0 - p0) / n)
        z = p_hat - p0
        z /= se[:, None]
    return n, p_hat, z


def bonferroni_threshold(alpha: float, m: int) -> float:
    """One-sided Bonferroni z threshold ``Φ⁻¹(1 − α/m)`` (``inf`` when nothing is tested)."""
    if m <= 0:
        return math.inf
    return float(-ndtri(alpha / m))


def significance_curve(n_values: np.ndarray | Sequence[float], p0: float, z_star: float) -> np.ndarray:
    """The ``p_hat`` above which a feature seen ``n`` times is significant.

    ``p0 + z* · sqrt(p0 (1 − p0) / n)`` — the curve drawn on the (n, p_hat) plot.
    """
    n = np.asarray(n_values, dtype=float)
    with np.errstate(divide="ignore"):
        return p0 + z_star * np.sqrt(p0 * (1.0 - p0) / n)


def top_k_indices(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest finite ``scores``, highest first.

    Ties are broken by the lower index, so the result is fully deterministic. Runs in
    O(len(scores)) plus a sort of the ``k`` chosen.
    """
    valid = np.isfinite(scores)
    if k <= 0 or not valid.any():
        return np.zeros(0, dtype=np.int64)
    s = np.where(valid, scores, -np.inf)
    n_valid = int(valid.sum())
    if n_valid <= k:
        chosen = np.flatnonzero(valid)
    else:
        kth = np.partition(s, len(s) - k)[len(s) - k]  # k-th largest value
        above = np.flatnonzero(s > kth)
        ties = np.flatnonzero(s == kth)[: k - len(above)]
        chosen = np.concatenate([above, ties])
    order = np.lexsort((chosen, -s[chosen]))
    return chosen[order].astype(np.int64)


# ---------------------------------------------------------------------------- result


@dataclass(frozen=True, eq=False)
class ZStatsResult:
    """z-statistics of every feature for every label.

    Attributes
    ----------
    feature_names, kinds
        Name and kind of each feature (length ``F``). The names are a read-only sequence
        of ``str`` (:class:`~engine.stats.names.FeatureNames` when they come from
        :func:`~engine.stats.features.build_features`): read a few with ``[i]`` or ``.take``.
    labels
        Label names (length ``L``).
    n
        Occurrences of each feature (``F``).
    counts
        Occurrences of each feature in examples of each label (``F × L``).
    p_hat, z
        ``count / n`` and the z-statistic (``F × L``; NaN where ``n == 0``).
    tested
        Features whose ``n`` passes the minimum count (``F``); only they can be significant.
    p0, alpha, z_threshold
        Null share, significance level and Bonferroni-corrected threshold ``z*``.
    m
        Number of hypotheses the threshold corrects for.
    min_count
        The minimum count applied.
    label_totals
        Examples per label.
    """

    feature_names: Sequence[str]
    kinds: np.ndarray
    labels: list[str]
    n: np.ndarray
    counts: np.ndarray
    p_hat: np.ndarray
    z: np.ndarray
    tested: np.ndarray
    p0: float
    alpha: float
    z_threshold: float
    m: int
    min_count: int
    label_totals: np.ndarray

    @property
    def n_features(self) -> int:
        return len(self.feature_names)

    @property
    def significant_mask(self) -> np.ndarray:
        """(F × L) booleans: tested and ``z > z*``."""
        with np.errstate(invalid="ignore"):
            return self.tested[:, None] & (self.z > self.z_threshold)

    def label_index(self, label: str) -> int:
        """Column of ``label`` in the arrays."""
        try:
            return self.labels.index(label)
        except ValueError:
            raise LabelSetError(f"No label {label!r} in these statistics.", f"Use one of {self.labels}.") from None

    def top_k_indices(self, label: str, k: int = 20) -> np.ndarray:
        """Feature indices of B(label): the ``k`` tested features with the highest z."""
        j = self.label_index(label)
        scores = np.where(self.tested, self.z[:, j], np.nan)
        return top_k_indices(scores, k)

    def top_k(self, label: str, k: int = 20) -> list[dict[str, Any]]:
        """Rows (see :meth:`to_rows`) of the ``k`` tested features with the highest z for ``label``."""
        j = self.label_index(label)
        return [self._row(i, j) for i in self.top_k_indices(label, k).tolist()]

    def significant(self) -> list[dict[str, Any]]:
        """Rows of every significant (feature, label), by decreasing z."""
        rows_i, cols_j = np.nonzero(self.significant_mask)
        order = np.lexsort((rows_i, -self.z[rows_i, cols_j]))
        return [self._row(int(i), int(j)) for i, j in zip(rows_i[order], cols_j[order])]

    def to_rows(self, *, tested_only: bool = True) -> list[dict[str, Any]]:
        """One dict per (feature, label) with keys :data:`ROW_KEYS`, in column order."""
        index = np.flatnonzero(self.tested) if tested_only else np.arange(self.n_features)
        return [self._row(int(i), j) for i in index for j in range(len(self.labels))]

    def to_csv(self, path: str | Path, *, tested_only: bool = True, project: str | Path | None = None) -> Path:
        """Write :meth:`to_rows` as a CSV file (UTF-8, header row) and return its path.

        Written atomically by :func:`engine.io.output.open_output`, which refuses ``project``
        (the open project file), its side files and folder, any other project, a folder, a
        device, FIFO or link (:class:`~engine.errors.OutputPathError`).
        """
        from engine.io.output import open_output

        path = Path(path)
        with open_output(path, project=project, what="the statistics CSV", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=ROW_KEYS)
            writer.writeheader()
            writer.writerows(self.to_rows(tested_only=tested_only))
        return path

    def _row(self, i: int, j: int) -> dict[str, Any]:
        z = float(self.z[i, j])
        return {
            "feature": self.feature_names[i],
            "kind": str(self.kinds[i]),
            "label": self.labels[j],
            "n": int(self.n[i]),
            "count": int(self.counts[i, j]),
            "p_hat": float(self.p_hat[i, j]),
            "z": z,
            "significant": bool(self.tested[i] and z > self.z_threshold),
        }


# ---------------------------------------------------------------------------- entry points


def zstats_from_counts(
    counts: np.ndarray,
    feature_names: Sequence[str],
    kinds: np.ndarray,
    labels: Sequence[str],
    config: ZStatsConfig | None = None,
    *,
    label_totals: np.ndarray | None = None,
) -> ZStatsResult:
    """z-statistics from an (F × L) per-label count array (e.g. a z-filter's final counts)."""
    config = config or ZStatsConfig()
    labels = list(labels)
    if len(labels) < 2:
        raise LabelSetError(
            f"The statistics need at least two labels; this data has {len(labels)}.",
            "Choose a dataset with two or more labels.",
        )
    counts = np.asarray(counts, dtype=np.int64)
    p0 = config.resolve_p0(len(labels))
    n, p_hat, z = z_scores(counts, p0)
    tested = n >= config.min_count
    m = int(tested.sum()) * (len(labels) if config.correction == "pairs" else 1)
    return ZStatsResult(
        feature_names=feature_names,
        kinds=kinds,
        labels=labels,
        n=n,
        counts=counts,
        p_hat=p_hat,
        z=z,
        tested=tested,
        p0=p0,
        alpha=config.alpha,
        z_threshold=bonferroni_threshold(config.alpha, m),
        m=m,
        min_count=int(config.min_count),
        label_totals=np.zeros(len(labels), np.int64) if label_totals is None else np.asarray(label_totals),
    )


def compute_zstats(
    features: FeatureMatrix,
    y: np.ndarray | Sequence[int],
    labels: Sequence[str],
    config: ZStatsConfig | None = None,
    *,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> ZStatsResult:
    """z-statistics of every feature of ``features`` against the labels ``y``.

    Parameters
    ----------
    features
        The feature matrix (rows = examples).
    y
        Label id of each example (index into ``labels``).
    labels
        The label set; its size sets the default ``p0``.
    config
        Significance level, minimum count, ``p0``, correction.
    progress, cancel
        Progress callback and cancel token.

    Raises
    ------
    EmptyDatasetError
        If there are no examples.
    LabelSetError
        If there are fewer than two labels or a label id is out of range.
    """
    ensure_token(cancel).raise_if_cancelled()
    y = np.asarray(y, dtype=np.int64)
    if features.n_examples == 0:
        raise EmptyDatasetError("The dataset has no examples.", "Import or choose a dataset with examples.")
    if len(y) != features.n_examples:
        raise ValueError(f"{len(y)} labels for {features.n_examples} examples")
    if len(labels) and (y.min() < 0 or y.max() >= len(labels)):
        raise LabelSetError("A label id is outside the label set.", f"Use ids 0..{len(labels) - 1}.")
    progress(0.0, "Counting features per label")
    counts = features.label_counts(y, len(labels))
    result = zstats_from_counts(
        counts,
        features.names,
        features.kinds,
        labels,
        config,
        label_totals=np.bincount(y, minlength=len(labels)),
    )
    progress(1.0, "Statistics done")
    return result
