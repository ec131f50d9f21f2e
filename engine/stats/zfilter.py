"""z-filtering (Wu et al. 2022, Algorithm 1) and the Z-Aug / Par-Z / Seq-Z presets.

The input ``D'`` is read in batches. Before each batch the biased features ``B_Z(l)`` are
found on the dataset ``Z`` accepted so far; an instance with label ``l`` is accepted into
``Z`` only if none of its features is in ``B_Z(l)``, otherwise it is rejected and the
feature that caused it is recorded.

Choices, and where they come from
---------------------------------
* ``B_Z(l)`` is **the k features with the highest z for label l** (paper §3.1: "we select k
  features with the highest z-statistic"; k = 20 in its Table 7). The paper applies no
  significance test here, and its Table 10 confirms it: after Seq-Z the top features
  still have z ≈ 17, far above any Bonferroni threshold, i.e. the filter caps the top-k
  level rather than removing everything significant. So by default significance is *not*
  required (``significant_only=False``); set it to ``True`` to keep only features above
  the Bonferroni threshold of :mod:`engine.stats.zstats` (``m`` = features with
  ``n >= min_count`` in ``Z``; then nothing is rejected once ``Z`` has no significant
  feature). In both modes a feature needs ``n >= min_count`` in
  ``Z`` and ``z > 0`` (a feature that is not over-represented in ``l`` is not biased
  towards it; this only matters while ``Z`` is tiny). Ties are broken by column order.
* **First batch.** Algorithm 1 starts from ``Z = ∅`` (or the seed) and computes the
  statistics on ``Z`` before each batch; on an empty ``Z`` no feature has a count, so
  ``B_Z`` is empty and the whole first batch is accepted. With a seed, the seed's
  statistics filter the first batch.
* **Rejection reason.** When an instance holds several biased features, the reason
  recorded is the one with the highest z (first in ``B_Z(l)``).
* **Incremental counts.** Per-label counts of ``Z`` are updated by adding the accepted
  rows' feature vectors after each batch (``X_acc.T @ Y_acc``, computed as one ``bincount``
  over the accepted entries' (feature, label) keys), never recomputed. The
  ``mode="recompute"`` reference recounts ``Z`` from scratch before every batch; both
  give identical accepted sets (integer counts, same selection code).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress, scaled
from engine.stats.errors import LabelSetError, StatsConfigError
from engine.stats.matrix import FeatureMatrix
from engine.stats.zstats import (
    ZStatsConfig,
    ZStatsResult,
    bonferroni_threshold,
    label_counts,
    top_k_indices,
    z_scores,
    zstats_from_counts,
)

Mode = Literal["incremental", "recompute"]


@dataclass(frozen=True)
class ZFilterConfig:
    """Settings of z-filtering.

    Parameters
    ----------
    k
        Size of the biased-feature set ``B_Z(l)`` per label (paper: 20).
    batch_size
        Instances per batch; ``B_Z`` is refreshed before each batch.
    min_count
        A feature needs this many occurrences in ``Z`` before it can be biased.
    p0
        Null share of a label (``None``: ``1 / |labels|``).
    significant_only
        Also require ``z > z*`` (Bonferroni at ``alpha``); off in the paper.
    alpha
        Significance level used when ``significant_only``.
    """

    k: int = 20
    batch_size: int = 10_000
    min_count: int = 5
    p0: float | None = None
    significant_only: bool = False
    alpha: float = 0.01

    def __post_init__(self) -> None:
        if int(self.k) < 1:
            raise StatsConfigError(
                f"k = {self.k} biased features per label is below 1.", "Use k of 1 or more (paper: 20)."
            )
        if int(self.batch_size) < 1:
            raise StatsConfigError(f"Batch size {self.batch_size} is below 1.", "Use e.g. 10000.")
        if int(self.min_count) < 1:
            raise StatsConfigError(f"Minimum count {self.min_count} is below 1.", "Use 1 or more.")
        if self.p0 is not None and not 0 < self.p0 < 1:
            raise StatsConfigError(f"p0 = {self.p0} is not between 0 and 1.", "Leave it empty for 1/labels.")
        if not 0 < self.alpha < 1:
            raise StatsConfigError(f"Significance level {self.alpha} is not between 0 and 1.", "Use e.g. 0.01.")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ZFilterConfig:
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise StatsConfigError(f"Unknown z-filter settings {sorted(unknown)}.", f"Use only {sorted(known)}.")
        return cls(**data)


@dataclass(frozen=True)
class BatchRecord:
    """What happened to one batch.

    Attributes
    ----------
    start, stop
        Rows ``start:stop`` of the input.
    biased
        ``B_Z(l)`` used for this batch: per label, feature columns by decreasing z.
    n_accepted
        Instances of the batch accepted.
    """

    start: int
    stop: int
    biased: list[np.ndarray]
    n_accepted: int


@dataclass(frozen=True, eq=False)
class ZFilterResult:
    """Outcome of one z-filtering run over ``D'``.

    Attributes
    ----------
    accepted, rejected
        Row indices into ``D'`` (ascending, int64).
    reasons
        Feature column that caused each rejection (aligned with ``rejected``).
    counts
        Final per-label counts of ``Z`` (seed included), ``F × L`` int64.
    seed_counts
        Per-label counts of the seed (zeros without one).
    feature_names, kinds, labels
        Column names and kinds, label names.
    batches
        One :class:`BatchRecord` per batch.
    config, mode
        The settings used.
    """

    accepted: np.ndarray
    rejected: np.ndarray
    reasons: np.ndarray
    counts: np.ndarray
    seed_counts: np.ndarray
    feature_names: list[str]
    kinds: np.ndarray
    labels: list[str]
    batches: list[BatchRecord] = field(repr=False)
    config: ZFilterConfig = field(default_factory=ZFilterConfig)
    mode: str = "incremental"

    @property
    def n_input(self) -> int:
        return len(self.accepted) + len(self.rejected)

    def reason_names(self) -> list[str]:
        """Feature name of each rejection (aligned with ``rejected``)."""
        return [self.feature_names[j] for j in self.reasons.tolist()]

    def rejection_summary(self, top: int | None = 20) -> list[tuple[str, int]]:
        """``(feature, rejections)`` for the features that caused most rejections."""
        if not len(self.reasons):
            return []
        columns, n = np.unique(self.reasons, return_counts=True)
        order = np.lexsort((columns, -n))[:top]
        return [(self.feature_names[int(columns[i])], int(n[i])) for i in order]

    def zstats(self, config: ZStatsConfig | None = None) -> ZStatsResult:
        """z-statistics of the final ``Z`` (seed included)."""
        return zstats_from_counts(self.counts, self.feature_names, self.kinds, self.labels, config)


# ---------------------------------------------------------------------------- core


def biased_features(counts: np.ndarray, config: ZFilterConfig, p0: float) -> list[np.ndarray]:
    """``B_Z(l)`` for every label from the per-label counts of ``Z``.

    Parameters
    ----------
    counts
        (F × L) per-label feature counts of ``Z``.
    config
        ``k``, ``min_count``, ``significant_only`` and ``alpha``.
    p0
        Null share of a label.

    Returns
    -------
    list of numpy.ndarray
        Per label, up to ``k`` feature columns, highest z first.
    """
    n, _, z = z_scores(counts, p0)
    eligible = n >= max(config.min_count, 1)
    floor = 0.0
    if config.significant_only:
        floor = max(floor, bonferroni_threshold(config.alpha, int(eligible.sum())))
    out = []
    with np.errstate(invalid="ignore"):
        for j in range(counts.shape[1]):
            scores = np.where(eligible & (z[:, j] > floor), z[:, j], np.nan)
            out.append(top_k_indices(scores, config.k))
    return out


@dataclass
class _Batch:
    """Rows ``start:stop`` of a CSR matrix as views, with each entry's flat (feature, label) key."""

    indptr: np.ndarray  # local, starts at 0
    indices: np.ndarray
    data: np.ndarray
    keys: np.ndarray  # feature * n_labels + label of the entry's row

    @classmethod
    def of(cls, X: sp.csr_array, y: np.ndarray, start: int, stop: int, n_labels: int) -> _Batch:
        lo, hi = X.indptr[start], X.indptr[stop]
        indptr = X.indptr[start : stop + 1] - lo
        indices = X.indices[lo:hi]
        label_of_entry = np.repeat(y[start:stop], np.diff(indptr))
        return cls(indptr, indices, X.data[lo:hi], indices.astype(np.int64) * n_labels + label_of_entry)


def _first_biased(
    batch: _Batch, yb: np.ndarray, biased: list[np.ndarray], n_features: int
) -> np.ndarray:
    """Per row of the batch: the column of its highest-z feature in ``B_Z(its label)``, or -1."""
    k = max((len(b) for b in biased), default=0)
    n_labels = len(biased)
    out = np.full(len(yb), -1, dtype=np.int64)
    if k == 0 or len(batch.keys) == 0:
        return out
    rank = np.full(n_features * n_labels, k, dtype=np.int32)  # rank[f * L + l] = position of f in B(l)
    table = np.full((n_labels, k), -1, dtype=np.int64)  # table[l, r] = column of rank r in B(l)
    for j, cols in enumerate(biased):
        rank[cols * n_labels + j] = np.arange(len(cols), dtype=np.int32)
        table[j, : len(cols)] = cols
    entry_rank = rank[batch.keys]
    row_len = np.diff(batch.indptr)
    nonempty = np.flatnonzero(row_len)
    best = np.minimum.reduceat(entry_rank, batch.indptr[nonempty])
    hit = best < k
    rows = nonempty[hit]
    out[rows] = table[yb[rows], best[hit]]
    return out


def z_filter(
    features: FeatureMatrix,
    y: np.ndarray,
    labels: list[str],
    config: ZFilterConfig | None = None,
    *,
    seed_counts: np.ndarray | None = None,
    mode: Mode = "incremental",
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> ZFilterResult:
    """z-filter the instances of ``features`` (Algorithm 1), in row order.

    Parameters
    ----------
    features
        Feature matrix of ``D'``.
    y
        Label id of each row.
    labels
        The label set (its size gives the default ``p0``).
    config
        ``k``, batch size, minimum count, ``p0``, significance option.
    seed_counts
        (F × L) per-label counts of a seed dataset in the same columns: conditional
        z-filtering ``Z(D' | D_seed)``. See :func:`label_counts`.
    mode
        ``"incremental"`` (default) or ``"recompute"`` (reference: recount ``Z`` from scratch
        before every batch; same result, quadratic time).
    progress, cancel
        Reported / polled once per batch.

    Returns
    -------
    ZFilterResult
    """
    config = config or ZFilterConfig()
    token = ensure_token(cancel)
    if mode not in ("incremental", "recompute"):
        raise ValueError(f"unknown mode {mode!r}")
    if len(labels) < 2:
        raise LabelSetError(
            f"z-filtering needs at least two labels; this data has {len(labels)}.",
            "Choose a dataset with two or more labels.",
        )
    X = sp.csr_array(features.X)
    y = np.asarray(y, dtype=np.int64)
    n, n_features, n_labels = X.shape[0], X.shape[1], len(labels)
    if len(y) != n:
        raise ValueError(f"{len(y)} labels for {n} rows")
    if n and (y.min() < 0 or y.max() >= n_labels):
        raise LabelSetError("A label id is outside the label set.", f"Use ids 0..{n_labels - 1}.")
    if seed_counts is None:
        seed = np.zeros((n_features, n_labels), np.int64)
    else:
        seed = np.asarray(seed_counts, np.int64)
    if seed.shape != (n_features, n_labels):
        raise ValueError(f"seed counts have shape {seed.shape}, expected {(n_features, n_labels)}")
    p0 = config.p0 if config.p0 is not None else 1.0 / n_labels

    counts = seed.copy()
    flat_counts = counts.reshape(-1)  # a view: counts[f, l] is flat_counts[f * L + l]
    accepted = np.zeros(n, dtype=bool)
    reason = np.full(n, -1, dtype=np.int64)
    batches: list[BatchRecord] = []
    n_batches = max(1, -(-n // config.batch_size))
    for b, start in enumerate(range(0, n, config.batch_size)):
        token.raise_if_cancelled()
        stop = min(start + config.batch_size, n)
        if mode == "recompute":
            done = np.flatnonzero(accepted[:start])
            counts = seed + label_counts(X[done], y[done], n_labels)
        biased = biased_features(counts, config, p0)
        batch, yb = _Batch.of(X, y, start, stop, n_labels), y[start:stop]
        cause = _first_biased(batch, yb, biased, n_features)
        ok = cause < 0
        accepted[start:stop] = ok
        reason[start:stop] = cause
        if mode == "incremental" and ok.any():
            # add the accepted rows' feature vectors to the running per-label counts
            entry_ok = np.repeat(ok, np.diff(batch.indptr))
            added = np.bincount(
                batch.keys[entry_ok], weights=batch.data[entry_ok], minlength=flat_counts.size
            )
            flat_counts += added.astype(np.int64)  # float64 sums of integers: exact
        batches.append(BatchRecord(start=start, stop=stop, biased=biased, n_accepted=int(ok.sum())))
        progress((b + 1) / n_batches, f"z-filtering: batch {b + 1} of {n_batches}")
    if mode == "recompute":
        done = np.flatnonzero(accepted)
        counts = seed + label_counts(X[done], y[done], n_labels)
    rejected = np.flatnonzero(~accepted)
    return ZFilterResult(
        accepted=np.flatnonzero(accepted),
        rejected=rejected,
        reasons=reason[rejected],
        counts=counts,
        seed_counts=seed,
        feature_names=features.names,
        kinds=features.kinds,
        labels=list(labels),
        batches=batches,
        config=config,
        mode=mode,
    )


# ---------------------------------------------------------------------------- presets


@dataclass(frozen=True, eq=False)
class PresetResult:
    """A debiased dataset built from an original ``D0`` and an augmentation ``D'``.

    Attributes
    ----------
    preset
        ``"Z-Aug"``, ``"Par-Z"`` or ``"Seq-Z"``.
    original
        Rows of ``D0`` kept (all of them for Z-Aug).
    augmented
        Rows of ``D'`` kept.
    steps
        The z-filtering runs: ``"original"`` (Par-Z, Seq-Z) and ``"augmented"``.
    """

    preset: str
    original: np.ndarray
    augmented: np.ndarray
    steps: dict[str, ZFilterResult]


def _check_same_columns(a: FeatureMatrix, b: FeatureMatrix) -> None:
    if a.names is not b.names and list(a.names) != list(b.names):
        raise ValueError("D0 and D' must share feature columns: build the features once over both")


def z_aug(
    original: FeatureMatrix,
    y_original: np.ndarray,
    augmented: FeatureMatrix,
    y_augmented: np.ndarray,
    labels: list[str],
    config: ZFilterConfig | None = None,
    *,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> PresetResult:
    """Z-Aug, ``D0 ∪ Z(D' | D0)``: keep ``D0`` whole, add the ``D'`` rows z-filtering
    conditioned on ``D0`` accepts."""
    _check_same_columns(original, augmented)
    seed = original.label_counts(np.asarray(y_original), len(labels))
    step = z_filter(
        augmented, y_augmented, labels, config, seed_counts=seed, progress=progress, cancel=cancel
    )
    return PresetResult("Z-Aug", np.arange(original.n_examples), step.accepted, {"augmented": step})


def par_z(
    original: FeatureMatrix,
    y_original: np.ndarray,
    augmented: FeatureMatrix,
    y_augmented: np.ndarray,
    labels: list[str],
    config: ZFilterConfig | None = None,
    *,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> PresetResult:
    """Par-Z, ``Z(D0) ∪ Z(D')``: z-filter each dataset on its own and merge."""
    _check_same_columns(original, augmented)
    first = z_filter(
        original, y_original, labels, config, progress=scaled(progress, 0, 0.5), cancel=cancel
    )
    second = z_filter(
        augmented, y_augmented, labels, config, progress=scaled(progress, 0.5, 1), cancel=cancel
    )
    return PresetResult("Par-Z", first.accepted, second.accepted, {"original": first, "augmented": second})


def seq_z(
    original: FeatureMatrix,
    y_original: np.ndarray,
    augmented: FeatureMatrix,
    y_augmented: np.ndarray,
    labels: list[str],
    config: ZFilterConfig | None = None,
    *,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> PresetResult:
    """Seq-Z, ``Z(D' | Z(D0))``: z-filter ``D0``, then z-filter ``D'`` seeded with the result.

    The returned dataset is ``Z(D0)`` plus the accepted rows of ``D'``.
    """
    _check_same_columns(original, augmented)
    first = z_filter(
        original, y_original, labels, config, progress=scaled(progress, 0, 0.5), cancel=cancel
    )
    second = z_filter(
        augmented,
        y_augmented,
        labels,
        config,
        seed_counts=first.counts,
        progress=scaled(progress, 0.5, 1),
        cancel=cancel,
    )
    return PresetResult("Seq-Z", first.accepted, second.accepted, {"original": first, "augmented": second})


def rejection_reasons_by_id(result: ZFilterResult, example_ids: np.ndarray) -> dict[int, str]:
    """``{example_id: feature}`` for every rejected row, given the ids of the input rows."""
    ids = np.asarray(example_ids)[result.rejected].tolist()
    return dict(zip(ids, result.reason_names()))



def auto_batch_size(n_examples: int) -> int:
    """A batch size for datasets smaller than the paper's: about 20 batches, 100 to 10,000 rows.

    Z starts empty, so the first batch is always accepted whole; with the default 10,000 rows
    a dataset of a few thousand examples would pass unfiltered.
    """
    return int(min(10_000, max(100, n_examples // 20)))
