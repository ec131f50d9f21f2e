"""z-statistics against values computed by hand."""

from __future__ import annotations

import csv
import math
from statistics import NormalDist

import numpy as np
import pytest

from engine.stats.errors import EmptyDatasetError, LabelSetError, StatsConfigError
from engine.stats.features import FeatureConfig, build_features
from engine.stats.zstats import (
    ROW_KEYS,
    ZStatsConfig,
    bonferroni_threshold,
    compute_zstats,
    significance_curve,
    top_k_indices,
)

LABELS = ["e", "n", "c"]
UNIGRAMS = FeatureConfig(bigrams=False, length=False, null=False)


def tiny():
    """10 × "no dog" (c), "no cat" (e), 3 × "a cat" (e), 2 × "a dog" (n), "a bird" (n)."""
    rows = [("no dog", "c")] * 10 + [("no cat", "e")] + [("a cat", "e")] * 3 + [("a dog", "n")] * 2 + [("a bird", "n")]
    texts = [t for t, _ in rows]
    y = np.array([LABELS.index(label) for _, label in rows])
    return build_features(texts, config=UNIGRAMS), y


def test_hand_computed_n_p_hat_z_and_threshold():
    fm, y = tiny()
    res = compute_zstats(fm, y, LABELS, ZStatsConfig(alpha=0.01, min_count=2))
    row = {name: i for i, name in enumerate(res.feature_names)}
    p0 = 1 / 3
    sd = lambda n: math.sqrt(p0 * (1 - p0) / n)  # noqa: E731

    # "no": 11 occurrences, 10 in contradiction, 1 in entailment
    no = row["no"]
    assert res.n[no] == 11
    assert res.counts[no].tolist() == [1, 0, 10]
    assert res.p_hat[no, 2] == pytest.approx(10 / 11)
    assert res.z[no, 2] == pytest.approx((10 / 11 - 1 / 3) / sd(11))  # = 4.0508
    assert res.z[no, 2] == pytest.approx(4.0508, abs=1e-4)
    assert res.z[no, 1] == pytest.approx((0 - 1 / 3) / sd(11))

    # "dog": 12 = 10 (c) + 2 (n)
    dog = row["dog"]
    assert res.n[dog] == 12
    assert res.z[dog, 2] == pytest.approx((10 / 12 - 1 / 3) / sd(12))  # = 3.6742
    # "cat": 4, all entailment
    cat = row["cat"]
    assert res.z[cat, 0] == pytest.approx((1 - 1 / 3) / sd(4))  # = 2.8284
    # "a": 6 = 3 (e) + 3 (n)
    a = row["a"]
    assert res.z[a, 0] == pytest.approx((3 / 6 - 1 / 3) / sd(6))  # = 0.8660

    # "bird" (n = 1) is below the minimum count: 4 features tested
    assert not res.tested[row["bird"]]
    assert res.m == 4
    z_star = NormalDist().inv_cdf(1 - 0.01 / 4)  # = 2.807
    assert res.z_threshold == pytest.approx(z_star)
    sig = {(r["feature"], r["label"]) for r in res.significant()}
    assert sig == {("no", "c"), ("dog", "c"), ("cat", "e")}  # 4.05, 3.67, 2.83 > 2.807
    assert [r["feature"] for r in res.significant()] == ["no", "dog", "cat"]

    # top-k: B(c) = no, dog; B(e) = cat, a; B(n) = a
    assert [r["feature"] for r in res.top_k("c", 2)] == ["no", "dog"]
    assert [r["feature"] for r in res.top_k("e", 2)] == ["cat", "a"]
    assert [r["feature"] for r in res.top_k("n", 1)] == ["a"]
    top = res.top_k("c", 1)[0]
    assert top == {
        "feature": "no",
        "kind": "unigram",
        "label": "c",
        "n": 11,
        "count": 10,
        "p_hat": pytest.approx(10 / 11),
        "z": pytest.approx(4.0508, abs=1e-4),
        "significant": True,
    }
    assert res.label_totals.tolist() == [4, 3, 10]


def test_pairs_correction_and_p0_override():
    fm, y = tiny()
    res = compute_zstats(fm, y, LABELS, ZStatsConfig(min_count=2, correction="pairs"))
    assert res.m == 4 * 3
    assert res.z_threshold == pytest.approx(NormalDist().inv_cdf(1 - 0.01 / 12))
    res = compute_zstats(fm, y, LABELS, ZStatsConfig(min_count=2, p0=0.5))
    no = res.feature_names.index("no")
    assert res.z[no, 2] == pytest.approx((10 / 11 - 0.5) / math.sqrt(0.25 / 11))


def test_rows_and_csv(tmp_path):
    fm, y = tiny()
    res = compute_zstats(fm, y, LABELS, ZStatsConfig(min_count=2))
    rows = res.to_rows()
    assert len(rows) == 4 * 3
    assert set(rows[0]) == set(ROW_KEYS)
    assert len(res.to_rows(tested_only=False)) == 5 * 3
    path = res.to_csv(tmp_path / "z.csv")
    with path.open(newline="", encoding="utf-8") as f:
        read = list(csv.DictReader(f))
    assert len(read) == 12
    assert read[0]["feature"] == rows[0]["feature"]
    assert float(read[0]["z"]) == pytest.approx(rows[0]["z"])


def test_significance_curve_and_threshold():
    p0, z_star = 1 / 3, 3.0
    curve = significance_curve([1, 9, 100], p0, z_star)
    expected = [p0 + z_star * math.sqrt(p0 * (1 - p0) / n) for n in (1, 9, 100)]
    np.testing.assert_allclose(curve, expected)
    assert bonferroni_threshold(0.01, 1) == pytest.approx(NormalDist().inv_cdf(0.99))
    assert bonferroni_threshold(0.01, 0) == math.inf


def test_top_k_indices_breaks_ties_by_index():
    scores = np.array([1.0, 3.0, np.nan, 3.0, 2.0, 3.0])
    assert top_k_indices(scores, 2).tolist() == [1, 3]
    assert top_k_indices(scores, 4).tolist() == [1, 3, 5, 4]
    assert top_k_indices(scores, 10).tolist() == [1, 3, 5, 4, 0]
    assert top_k_indices(np.array([np.nan]), 3).tolist() == []


def test_user_errors_are_named():
    fm, y = tiny()
    with pytest.raises(LabelSetError):
        compute_zstats(fm, np.zeros(len(y), int), ["only"])
    with pytest.raises(LabelSetError):
        compute_zstats(fm, y, LABELS).top_k("x", 3)
    with pytest.raises(EmptyDatasetError):
        compute_zstats(build_features([], config=UNIGRAMS), np.zeros(0, int), LABELS)
    with pytest.raises(StatsConfigError):
        ZStatsConfig(alpha=0)
    with pytest.raises(StatsConfigError):
        ZStatsConfig(correction="holm")
