"""Compare the z-statistics of two datasets (e.g. original vs augmented or filtered)."""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.stats.errors import DatasetMismatchError
from engine.stats.zstats import ZStatsResult

COMPARE_KEYS = (
    "feature",
    "kind",
    "label",
    "n_before",
    "n_after",
    "z_before",
    "z_after",
    "delta_z",
    "significant_before",
    "significant_after",
)


def compare_zstats(before: ZStatsResult, after: ZStatsResult, *, tested_only: bool = True) -> list[dict[str, Any]]:
    """Δz = z_after − z_before for every (feature, label) of ``before``.

    Parameters
    ----------
    before, after
        Statistics of the first dataset (e.g. the original) and the second (e.g. augmented).
        Their label sets must agree (order may differ).
    tested_only
        Only features of ``before`` that pass its minimum count.

    Returns
    -------
    list of dict
        Keys :data:`COMPARE_KEYS`, sorted by largest reduction of z first (most negative
        ``delta_z``); features absent from ``after`` have ``n_after = 0``, NaN ``z_after`` and
        ``delta_z`` and come last.

    Raises
    ------
    DatasetMismatchError
        If the label sets differ.
    """
    if set(before.labels) != set(after.labels):
        raise DatasetMismatchError(
            f"The label sets differ: {before.labels} vs {after.labels}.",
            "Compare versions of the same dataset (same labels).",
        )
    label_map = np.array([after.labels.index(label) for label in before.labels])
    position = {name: i for i, name in enumerate(after.feature_names)}
    rows = np.flatnonzero(before.tested) if tested_only else np.arange(before.n_features)
    other = np.fromiter((position.get(before.feature_names[i], -1) for i in rows.tolist()), np.int64, len(rows))
    present = other >= 0

    n_labels = len(before.labels)
    z_before = before.z[rows]
    z_after = np.full_like(z_before, np.nan)
    n_after = np.zeros(len(rows), np.int64)
    z_after[present] = after.z[other[present]][:, label_map]
    n_after[present] = after.n[other[present]]
    sig_before = before.significant_mask[rows]
    sig_after = np.zeros_like(sig_before)
    sig_after[present] = after.significant_mask[other[present]][:, label_map]
    delta = z_after - z_before

    flat_delta = delta.ravel()
    key = np.where(np.isnan(flat_delta), np.inf, flat_delta)
    order = np.lexsort((np.arange(len(key)), key))
    out = []
    for flat in order.tolist():
        r, j = divmod(flat, n_labels)
        i = int(rows[r])
        out.append(
            {
                "feature": before.feature_names[i],
                "kind": str(before.kinds[i]),
                "label": before.labels[j],
                "n_before": int(before.n[i]),
                "n_after": int(n_after[r]),
                "z_before": float(z_before[r, j]),
                "z_after": float(z_after[r, j]),
                "delta_z": float(delta[r, j]),
                "significant_before": bool(sig_before[r, j]),
                "significant_after": bool(sig_after[r, j]),
            }
        )
    return out
