"""Feature matrix: families, names, namespaces, counting modes, factored storage."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.stats.errors import StatsConfigError
from engine.stats.features import FeatureConfig, FeatureMatrix, build_features, bucket_labels
from engine.stats.tokenize import tokenize


def _dense(fm: FeatureMatrix) -> dict[str, list[int]]:
    X = fm.X.toarray()
    return {name: X[:, j].tolist() for j, name in enumerate(fm.names)}


def test_single_text_names_and_counts():
    fm = build_features(["Very good, very good!", "bad"], config=FeatureConfig(length=False))
    cols = _dense(fm)
    assert cols["<null>"] == [1, 1]
    assert cols["very"] == [2, 0]
    assert cols["good"] == [2, 0]
    assert cols["very good"] == [2, 0]
    assert cols["good very"] == [1, 0]
    assert cols["bad"] == [0, 1]
    assert set(fm.kinds[[fm.column("very"), fm.column("bad")]]) == {"unigram"}
    assert fm.kinds[fm.column("very good")] == "bigram"
    assert fm.kinds[fm.column("<null>")] == "null"


def test_per_document_counts_each_feature_once():
    fm = build_features(["very good very good"], config=FeatureConfig(per_document=True, length=False))
    assert _dense(fm) == {"<null>": [1], "very": [1], "good": [1], "very good": [1], "good very": [1]}


def test_pair_namespaces_and_pair_features():
    premises = ["A man sleeps on the couch.", "A dog runs.", "Two kids play outside today ok"]
    hypotheses = ["A man is sleeping now", "A dog runs.", "Nobody is outside"]
    fm = build_features(premises=premises, hypotheses=hypotheses, categorical={"hyp_only_pred": ["e", None, "c"]})
    cols = _dense(fm)
    assert cols["man@premise"] == [1, 0, 0]
    assert cols["man@hypothesis"] == [1, 0, 0]
    assert cols["sleeping@hypothesis"] == [1, 0, 0]
    assert cols["is sleeping@hypothesis"] == [1, 0, 0]
    assert cols["man sleeps@premise"] == [1, 0, 0]
    assert "sleeps@hypothesis" not in cols
    # hypothesis lengths 5, 3, 3 tokens
    assert cols["len@hypothesis=4-5"] == [1, 0, 0]
    assert cols["len@hypothesis=0-3"] == [0, 1, 1]
    # length ratios 5/6 = 0.83, 3/3 = 1, 3/6 = 0.5
    assert cols["len_ratio=0.75-1"] == [1, 0, 0]
    assert cols["len_ratio=1-1.5"] == [0, 1, 0]
    assert cols["len_ratio=0.5-0.75"] == [0, 0, 1]
    # overlap: {a, man} of 5 = 0.4; 3 of 3 = full; {outside} of 3 = 0.33
    assert cols["overlap=0.4-0.6"] == [1, 0, 0]
    assert cols["overlap=0.9+"] == [0, 1, 0]
    assert cols["overlap=full"] == [0, 1, 0]
    assert cols["overlap=0.2-0.4"] == [0, 0, 1]
    assert cols["hyp_only_pred=e"] == [1, 0, 0]
    assert cols["hyp_only_pred=c"] == [0, 0, 1]
    assert cols["<null>"] == [1, 1, 1]
    kinds = {name: str(kind) for name, kind in zip(fm.names, fm.kinds)}
    assert kinds["len@hypothesis=4-5"] == "length"
    assert kinds["len_ratio=1-1.5"] == "length_ratio"
    assert kinds["overlap=full"] == "overlap"
    assert kinds["hyp_only_pred=e"] == "categorical"
    assert fm.features_of(1)[0] == "<null>"
    assert "overlap=full" in fm.features_of(1)
    assert fm.examples_with("a@hypothesis").tolist() == [0, 1]


def test_length_bucket_names():
    assert bucket_labels((0, 4, 6, 9, 13, 21), integer=True) == ["0-3", "4-5", "6-8", "9-12", "13-20", "21+"]
    assert bucket_labels((0, 1, 2), integer=True) == ["0", "1", "2+"]
    assert bucket_labels((0.0, 0.25, 1.5)) == ["0-0.25", "0.25-1.5", "1.5+"]
    fm = build_features(premises=["x"], hypotheses=["one two three four five six seven"])
    assert "len@hypothesis=6-8" in fm.names


def test_ngram_fields_and_families_can_be_chosen():
    cfg = FeatureConfig(ngram_fields=("hypothesis",), bigrams=False, length_ratio=False, overlap=False, null=False)
    fm = build_features(premises=["a b"], hypotheses=["c d e"], config=cfg)
    assert fm.names == ["c@hypothesis", "d@hypothesis", "e@hypothesis", "len@hypothesis=0-3"]


def test_min_count_drops_rare_features():
    fm = build_features(["a b", "a c", "a"], config=FeatureConfig(min_count=2, length=False, null=False))
    assert fm.names == ["a"]
    assert fm.X.toarray().ravel().tolist() == [1, 1, 1]


def test_empty_texts_and_missing_premise():
    fm = build_features(premises=["", "p"], hypotheses=["h", ""])
    cols = _dense(fm)
    assert cols["<null>"] == [1, 1]
    assert not any(n.startswith("len_ratio") and cols[n][0] for n in cols)  # no ratio without a premise
    assert not any(n.startswith("overlap") and cols[n][1] for n in cols)  # no overlap without a hypothesis


@pytest.mark.parametrize(
    "kwargs",
    [
        {"unigrams": False, "bigrams": False, "length": False, "length_ratio": False, "overlap": False, "null": False},
        {"min_count": 0},
        {"ngram_fields": ("text",)},
        {"length_buckets": (1, 4)},
        {"ratio_buckets": (0.0, 0.5, 0.5)},
        {"overlap_buckets": (0.0, 1.5)},
    ],
)
def test_bad_config_is_a_named_error(kwargs):
    with pytest.raises(StatsConfigError):
        FeatureConfig(**kwargs)


def test_config_round_trip():
    cfg = FeatureConfig(per_document=True, ngram_fields=("hypothesis",))
    assert FeatureConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(StatsConfigError):
        FeatureConfig.from_dict({"nope": 1})


def test_factored_label_counts_and_rows_match_full_matrix():
    rng = np.random.default_rng(3)
    words = ["a", "b", "c", "d"]
    prem = [" ".join(rng.choice(words, rng.integers(0, 5))) for _ in range(40)]
    hyp = [" ".join(rng.choice(words, rng.integers(0, 4))) for _ in range(40)]
    fm = build_features(premises=prem, hypotheses=hyp)
    y = rng.integers(0, 3, 40)
    Y = np.eye(3, dtype=np.int64)[y]
    np.testing.assert_array_equal(fm.label_counts(y, 3), fm.X.T @ Y)
    np.testing.assert_array_equal(fm.column_totals(), fm.X.sum(axis=0))
    sub = fm.rows(np.array([5, 1, 30]))
    np.testing.assert_array_equal(sub.X.toarray(), fm.X.toarray()[[5, 1, 30]])
    again = FeatureMatrix.from_csr(sp.csr_array(fm.X), fm.names, fm.kinds)
    np.testing.assert_array_equal(again.label_counts(y, 3), fm.label_counts(y, 3))


# ---------------------------------------------------------------------------- naive reference


def _naive_pair_features(p: str, h: str, cfg: FeatureConfig) -> Counter:
    """Straightforward per-example feature counts, written independently of the engine."""
    pt, ht = tokenize(p), tokenize(h)
    feats: Counter = Counter({"<null>": 1})
    for field, toks in (("premise", pt), ("hypothesis", ht)):
        grams = [f"{w}@{field}" for w in toks] + [f"{a} {b}@{field}" for a, b in zip(toks, toks[1:])]
        feats.update(set(grams) if cfg.per_document else grams)

    def bucket(v, edges, integer):
        labels = bucket_labels(edges, integer=integer)
        i = max(j for j, e in enumerate(edges) if v >= e)
        return labels[i]

    feats[f"len@hypothesis={bucket(len(ht), cfg.length_buckets, True)}"] += 1
    if pt:
        feats[f"len_ratio={bucket(len(ht) / len(pt), cfg.ratio_buckets, False)}"] += 1
    if ht:
        shared = sum(1 for w in ht if w in set(pt))
        feats[f"overlap={bucket(shared / len(ht), cfg.overlap_buckets, False)}"] += 1
        if shared == len(ht):
            feats["overlap=full"] += 1
    return feats


_words = st.sampled_from(["a", "the", "dog", "Dog!", "no", "isn't", "cat,", "runs"])
_sentence = st.lists(_words, max_size=7).map(" ".join)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_sentence, _sentence), min_size=1, max_size=15), st.booleans(), st.booleans())
def test_matrix_equals_naive_counts(pairs, per_document, dedupe):
    cfg = FeatureConfig(per_document=per_document)
    fm = build_features(premises=[p for p, _ in pairs], hypotheses=[h for _, h in pairs], config=cfg, dedupe=dedupe)
    X = fm.X.toarray()
    for i, (p, h) in enumerate(pairs):
        got = {fm.names[j]: int(X[i, j]) for j in np.flatnonzero(X[i])}
        assert got == dict(_naive_pair_features(p, h, cfg))
    assert len(set(fm.names)) == len(fm.names)
    assert (fm.X.sum(axis=0) > 0).all()
