"""Δz between two datasets' statistics."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.stats.compare import COMPARE_KEYS, compare_zstats
from engine.stats.errors import DatasetMismatchError
from engine.stats.features import FeatureConfig, build_features
from engine.stats.zstats import ZStatsConfig, compute_zstats

UNIGRAMS = FeatureConfig(bigrams=False, length=False, null=False)
CFG = ZStatsConfig(min_count=1)


def stats(rows, labels=("pos", "neg")):
    fm = build_features([t for t, _ in rows], config=UNIGRAMS)
    return compute_zstats(fm, np.array([labels.index(label) for _, label in rows]), list(labels), CFG)


def test_delta_z_sorted_by_largest_reduction():
    before = stats([("good", "pos")] * 4 + [("bad", "neg")] * 2 + [("only", "pos")])
    # augmented: counterfactuals flip "good" to negative examples, "bad" stays
    after = stats([("good", "pos")] * 4 + [("good", "neg")] * 3 + [("bad", "neg")] * 2, labels=("neg", "pos"))
    rows = compare_zstats(before, after)
    assert set(rows[0]) == set(COMPARE_KEYS)
    first = rows[0]
    assert (first["feature"], first["label"]) == ("good", "pos")
    z_before = (1 - 0.5) / math.sqrt(0.25 / 4)  # 2.0
    z_after = (4 / 7 - 0.5) / math.sqrt(0.25 / 7)  # 0.378
    assert first["z_before"] == pytest.approx(z_before)
    assert first["z_after"] == pytest.approx(z_after)
    assert first["delta_z"] == pytest.approx(z_after - z_before)
    assert first["n_before"] == 4 and first["n_after"] == 7
    deltas = [r["delta_z"] for r in rows if not math.isnan(r["delta_z"])]
    assert deltas == sorted(deltas)
    # a feature missing from the second dataset comes last, with NaN
    assert {r["feature"] for r in rows[-2:]} == {"only"}
    assert math.isnan(rows[-1]["z_after"]) and rows[-1]["n_after"] == 0
    bad = next(r for r in rows if r["feature"] == "bad" and r["label"] == "neg")
    assert bad["delta_z"] == pytest.approx(0.0)


def test_label_sets_must_agree():
    with pytest.raises(DatasetMismatchError):
        compare_zstats(stats([("a", "pos"), ("b", "neg")]), stats([("a", "x"), ("b", "y")], labels=("x", "y")))
