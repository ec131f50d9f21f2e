"""z-filtering (Wu et al. 2022, Algorithm 1) and its presets."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from engine.errors import Cancelled
from engine.progress import CancelToken
from engine.stats.errors import LabelSetError, StatsConfigError
from engine.stats.features import FeatureConfig, build_features
from engine.stats.zfilter import ZFilterConfig, par_z, rejection_reasons_by_id, seq_z, z_aug, z_filter

UNIGRAMS = FeatureConfig(bigrams=False, length=False, null=False)
LABELS = ["pos", "neg"]


def _data(rows):
    fm = build_features([t for t, _ in rows], config=UNIGRAMS)
    return fm, np.array([LABELS.index(label) for _, label in rows])


def test_hand_worked_batches():
    rows = [("good", "pos")] * 3 + [("bad", "neg")]  # batch 1: Z is empty, all accepted
    rows += [("good film", "pos"), ("good film", "neg"), ("bad", "neg"), ("film", "pos")]
    rows += [("good", "pos"), ("film", "neg")]
    fm, y = _data(rows)
    res = z_filter(fm, y, LABELS, ZFilterConfig(k=1, batch_size=4, min_count=1))
    name = lambda cols: [fm.names[c] for c in cols]  # noqa: E731
    assert name(res.batches[0].biased[0]) == [] and name(res.batches[0].biased[1]) == []
    # before batch 2: good (3 pos, 0 neg) z = 0.5 / sqrt(0.25 / 3) = 1.73; bad (0, 1) z(neg) = 1
    assert name(res.batches[1].biased[0]) == ["good"]
    assert name(res.batches[1].biased[1]) == ["bad"]
    # before batch 3: good (3, 1) z(pos) = 1; film (1, 1) z = 0 is not biased; bad z(neg) = 1
    assert name(res.batches[2].biased[0]) == ["good"]
    assert name(res.batches[2].biased[1]) == ["bad"]
    assert res.accepted.tolist() == [0, 1, 2, 3, 5, 7, 9]
    assert res.rejected.tolist() == [4, 6, 8]
    assert res.reason_names() == ["good", "bad", "good"]
    assert res.rejection_summary() == [("good", 2), ("bad", 1)]
    assert [b.n_accepted for b in res.batches] == [4, 2, 1]
    assert rejection_reasons_by_id(res, np.arange(100, 110)) == {104: "good", 106: "bad", 108: "good"}
    # final counts: Z = accepted rows only
    counts = {fm.names[j]: res.counts[j].tolist() for j in range(fm.n_features)}
    assert counts == {"good": [3, 1], "bad": [0, 1], "film": [1, 2]}


def test_conditional_filtering_uses_the_seed_from_the_first_batch():
    rows = [("bad movie", "neg")] * 5 + [("fine", "pos")] + [("bad idea", "neg"), ("bad", "pos")]
    fm, y = _data(rows)
    seed, data = fm.rows(slice(0, 6)), fm.rows(slice(6, 8))
    seed_counts = seed.label_counts(y[:6], 2)
    res = z_filter(data, y[6:], LABELS, ZFilterConfig(k=1, min_count=1), seed_counts=seed_counts)
    assert res.rejected.tolist() == [0]  # "bad idea" (neg) holds B(neg) of the seed
    assert res.reason_names() == ["bad"]
    assert res.accepted.tolist() == [1]  # "bad" is not biased towards pos
    np.testing.assert_array_equal(res.seed_counts, seed_counts)
    assert res.counts[fm.column("bad")].tolist() == [1, 5]


def test_significant_only_stops_when_nothing_is_significant():
    rows = [("good", "pos")] * 3 + [("bad", "neg")] + [("good", "pos")] * 4
    fm, y = _data(rows)
    loose = z_filter(fm, y, LABELS, ZFilterConfig(k=2, batch_size=4, min_count=1))
    strict = z_filter(fm, y, LABELS, ZFilterConfig(k=2, batch_size=4, min_count=1, significant_only=True))
    assert loose.rejected.tolist() == [4, 5, 6, 7]  # good (z = 1.73) is in the top-k
    assert strict.rejected.tolist() == []  # 1.73 < z* = 2.58 (alpha 0.01, 2 features)


# ---------------------------------------------------------------------------- property test


def _naive_biased(counts: dict[int, list[int]], n_labels: int, cfg: ZFilterConfig) -> list[list[int]]:
    """B_Z(l) from per-feature label counts, with plain Python arithmetic."""
    p0 = 1 / n_labels
    eligible = {f: c for f, c in counts.items() if sum(c) >= cfg.min_count}
    floor = 0.0
    if cfg.significant_only:
        floor = NormalDist().inv_cdf(1 - cfg.alpha / len(eligible)) if eligible else math.inf
    out = []
    for label in range(n_labels):
        scored = []
        for f, c in eligible.items():
            n = sum(c)
            z = (c[label] / n - p0) / math.sqrt(p0 * (1 - p0) / n)
            if z > floor:
                scored.append((-z, f))
        out.append([f for _, f in sorted(scored)[: cfg.k]])
    return out


_doc = st.lists(st.sampled_from(["a", "b", "c", "d", "e", "f"]), max_size=4).map(" ".join)
_rows = st.lists(st.tuples(_doc, st.integers(0, 2)), min_size=1, max_size=60)


@settings(max_examples=200, deadline=None)
@given(
    rows=_rows,
    seed_rows=st.lists(st.tuples(_doc, st.integers(0, 2)), max_size=10),
    batch_size=st.integers(1, 8),
    k=st.integers(1, 4),
    min_count=st.integers(1, 3),
    significant_only=st.booleans(),
    null=st.booleans(),
)
def test_no_accepted_instance_holds_a_biased_feature(rows, seed_rows, batch_size, k, min_count, significant_only, null):
    n_labels = 3
    cfg = ZFilterConfig(k=k, batch_size=batch_size, min_count=min_count, significant_only=significant_only)
    all_rows = seed_rows + rows
    fm = build_features([t for t, _ in all_rows], config=FeatureConfig(bigrams=False, length=False, null=null))
    y_all = np.array([label for _, label in all_rows])
    n_seed = len(seed_rows)
    data, y = fm.rows(slice(n_seed, None)), y_all[n_seed:]
    seed_counts = fm.rows(slice(0, n_seed)).label_counts(y_all[:n_seed], n_labels) if seed_rows else None
    labels = ["x", "y", "z"]
    res = z_filter(data, y, labels, cfg, seed_counts=seed_counts)
    recomputed = z_filter(data, y, labels, cfg, seed_counts=seed_counts, mode="recompute")
    event("some rejected" if len(res.rejected) else "none rejected")

    X = data.X.toarray()
    feats = [set(np.flatnonzero(X[i]).tolist()) for i in range(len(rows))]
    counts: dict[int, list[int]] = {}
    if seed_rows:
        Xs = fm.rows(slice(0, n_seed)).X.toarray()
        for i in range(n_seed):
            for f in np.flatnonzero(Xs[i]).tolist():
                counts.setdefault(f, [0] * n_labels)[y_all[i]] += int(Xs[i, f])
    accepted = set(res.accepted.tolist())
    reasons = dict(zip(res.rejected.tolist(), res.reasons.tolist()))
    assert len(res.batches) == -(-len(rows) // batch_size)
    for batch in res.batches:
        biased = _naive_biased(counts, n_labels, cfg)  # B_Z(l) just before this batch
        assert [b.tolist() for b in batch.biased] == biased
        for i in range(batch.start, batch.stop):
            hits = feats[i] & set(biased[y[i]])
            if i in accepted:
                assert not hits
            else:
                assert hits and reasons[i] in hits
                assert reasons[i] == next(f for f in biased[y[i]] if f in hits)  # highest z first
        for i in range(batch.start, batch.stop):  # then Z grows by the accepted rows
            if i in accepted:
                for f in feats[i]:
                    counts.setdefault(f, [0] * n_labels)[y[i]] += int(X[i, f])
    final = {f: res.counts[f].tolist() for f in range(data.n_features) if res.counts[f].any()}
    assert final == {f: c for f, c in counts.items() if any(c)}
    np.testing.assert_array_equal(res.accepted, recomputed.accepted)
    np.testing.assert_array_equal(res.reasons, recomputed.reasons)
    np.testing.assert_array_equal(res.counts, recomputed.counts)


def test_incremental_equals_recompute_on_a_larger_random_set():
    rng = np.random.default_rng(7)
    vocab = [f"w{i}" for i in range(40)]
    texts = [" ".join(rng.choice(vocab, rng.integers(1, 8))) for _ in range(3000)]
    y = rng.integers(0, 3, 3000)
    y[[i for i, t in enumerate(texts) if "w1 " in t]] = 2  # plant a bias
    fm = build_features(texts)
    cfg = ZFilterConfig(k=5, batch_size=200, min_count=3)
    a = z_filter(fm, y, ["e", "n", "c"], cfg)
    b = z_filter(fm, y, ["e", "n", "c"], cfg, mode="recompute")
    assert 0 < len(a.rejected) < 3000
    np.testing.assert_array_equal(a.accepted, b.accepted)
    np.testing.assert_array_equal(a.reasons, b.reasons)
    np.testing.assert_array_equal(a.counts, b.counts)
    assert [x.biased[j].tolist() for x in a.batches for j in range(3)] == [
        x.biased[j].tolist() for x in b.batches for j in range(3)
    ]


# ---------------------------------------------------------------------------- presets


def _two_sets():
    rows0 = [("no dog", "neg")] * 6 + [("a cat", "pos")] * 6 + [("no cat", "pos")]
    rows1 = [("no bird", "neg"), ("a bird", "pos"), ("no", "pos"), ("dog", "neg"), ("a dog", "pos")]
    fm, y = _data(rows0 + rows1)
    return fm.rows(slice(0, 13)), y[:13], fm.rows(slice(13, None)), y[13:]


def test_presets():
    cfg = ZFilterConfig(k=1, batch_size=4, min_count=1)
    d0, y0, d1, y1 = _two_sets()
    aug = z_aug(d0, y0, d1, y1, LABELS, cfg)
    assert aug.preset == "Z-Aug"
    assert aug.original.tolist() == list(range(13))
    alone = z_filter(d1, y1, LABELS, cfg, seed_counts=d0.label_counts(y0, 2))
    np.testing.assert_array_equal(aug.augmented, alone.accepted)

    par = par_z(d0, y0, d1, y1, LABELS, cfg)
    np.testing.assert_array_equal(par.original, z_filter(d0, y0, LABELS, cfg).accepted)
    np.testing.assert_array_equal(par.augmented, z_filter(d1, y1, LABELS, cfg).accepted)

    seq = seq_z(d0, y0, d1, y1, LABELS, cfg)
    first = z_filter(d0, y0, LABELS, cfg)
    np.testing.assert_array_equal(seq.original, first.accepted)
    np.testing.assert_array_equal(seq.augmented, z_filter(d1, y1, LABELS, cfg, seed_counts=first.counts).accepted)
    np.testing.assert_array_equal(seq.steps["augmented"].seed_counts, first.counts)


def test_presets_need_shared_columns():
    a, ya = _data([("x", "pos"), ("y", "neg")])
    b, yb = _data([("z", "pos")])
    with pytest.raises(ValueError):
        z_aug(a, ya, b, yb, LABELS)


# ---------------------------------------------------------------------------- plumbing


def test_progress_and_cancel():
    fm, y = _data([("a", "pos"), ("b", "neg")] * 10)
    seen = []
    z_filter(fm, y, LABELS, ZFilterConfig(batch_size=5), progress=lambda f, m="": seen.append(f))
    assert seen == [0.25, 0.5, 0.75, 1.0]
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        z_filter(fm, y, LABELS, cancel=token)


def test_errors():
    fm, y = _data([("a", "pos")])
    with pytest.raises(LabelSetError):
        z_filter(fm, np.zeros(1, int), ["one"])
    with pytest.raises(LabelSetError):
        z_filter(fm, np.array([5]), LABELS)
    for bad in ({"k": 0}, {"batch_size": 0}, {"min_count": 0}, {"p0": 1.5}, {"alpha": 2}):
        with pytest.raises(StatsConfigError):
            ZFilterConfig(**bad)
    assert ZFilterConfig.from_dict(ZFilterConfig(k=3).to_dict()) == ZFilterConfig(k=3)


def test_final_statistics_of_z():
    fm, y = _data([("good", "pos")] * 3 + [("bad", "neg")] + [("good", "pos")])
    res = z_filter(fm, y, LABELS, ZFilterConfig(k=1, batch_size=4, min_count=1))
    stats = res.zstats()
    assert stats.n[fm.column("good")] == 3  # the fifth "good" was rejected
