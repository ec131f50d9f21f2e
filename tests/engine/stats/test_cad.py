"""The statistics find the known sentiment words of CAD (Kaushik et al. 2020)."""

from __future__ import annotations

import csv

import numpy as np

from engine.stats.features import FeatureConfig, build_features
from engine.stats.zstats import ZStatsConfig, compute_zstats

NEGATIVE = ("bad", "worst", "terrible", "boring")
POSITIVE = ("great", "best")


def test_cad_sentiment_top_features(shared_data):
    path = shared_data / "cad" / "sentiment" / "combined" / "train.tsv"
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.reader(f, delimiter="\t")
        header = next(reader)
        rows = list(reader)
    assert header[:2] == ["Sentiment", "Text"]
    labels = ["Negative", "Positive"]
    y = np.array([labels.index(r[0]) for r in rows])
    texts = [r[1] for r in rows]
    unigrams = FeatureConfig(bigrams=False, length=False, null=False)
    result = compute_zstats(build_features(texts, config=unigrams), y, labels, ZStatsConfig(min_count=10))

    top_neg = [r["feature"] for r in result.top_k("Negative", 20)]
    top_pos = [r["feature"] for r in result.top_k("Positive", 20)]
    print(f"\nCAD sentiment combined/train: {len(rows)} reviews, {result.m} unigrams with n >= 10, "
          f"Bonferroni z* = {result.z_threshold:.3f} (alpha 0.01)")
    for label, words, top in (("Negative", NEGATIVE, top_neg), ("Positive", POSITIVE, top_pos)):
        j = labels.index(label)
        for word in words:
            i = result.feature_names.index(word)
            rank = top.index(word) + 1 if word in top else None
            print(f"  {label:8s} {word:9s} n={result.n[i]:5d}  count={result.counts[i, j]:5d}  "
                  f"p_hat={result.p_hat[i, j]:.3f}  z={result.z[i, j]:6.2f}  rank={rank}")
    assert set(NEGATIVE) <= set(top_neg)
    assert set(POSITIVE) <= set(top_pos)
    for word in NEGATIVE + POSITIVE:
        i = result.feature_names.index(word)
        assert result.significant_mask[i].any()
