"""Lazily spelled feature names behave like a read-only list of str."""

from __future__ import annotations

import numpy as np
import pytest

from engine.stats.features import FeatureConfig, build_features
from engine.stats.names import FeatureNames, NgramNames

VOCAB = ["a", "b", "c"]


def _names() -> FeatureNames:
    bigrams = NgramNames(VOCAB, np.array([0, 2]), np.array([1, 0]), "@premise")
    return FeatureNames([["<null>"], NgramNames(VOCAB, np.array([2, 0]), None, "@premise"), bigrams, ["len=0"]])


def test_reads_like_a_list():
    names = _names()
    expected = ["<null>", "c@premise", "a@premise", "a b@premise", "c a@premise", "len=0"]
    assert len(names) == 6
    assert names == expected and expected == names and names != expected[:-1]
    assert names == tuple(expected)
    assert [names[i] for i in range(6)] == expected
    assert names[-1] == "len=0" and names[3] == "a b@premise"
    assert names[1:4] == expected[1:4]
    assert names.take(np.array([4, 0, 3])) == ["c a@premise", "<null>", "a b@premise"]
    assert list(names) == expected
    assert "c a@premise" in names and "zz" not in names
    assert names.index("a b@premise") == 3
    assert names.count("len=0") == 1
    with pytest.raises(IndexError):
        names[6]
    with pytest.raises(IndexError):
        names.take([7])
    with pytest.raises(ValueError):
        names.index("zz")
    assert FeatureNames.of(expected) == names
    assert FeatureNames.of(names) is names
    assert FeatureNames() == []


def test_take_before_and_after_spelling_agree():
    names = _names()
    before = names.take([5, 2, 3])
    names.tolist()
    assert names.take([5, 2, 3]) == before


def test_build_features_names_are_the_spelled_names():
    fm = build_features(premises=["a b a b", "c"], hypotheses=["b a", "a"], config=FeatureConfig())
    assert isinstance(fm.names, FeatureNames)
    spelled = fm.names.take(np.arange(fm.n_features))
    assert spelled == list(fm.names)
    assert {"a b@premise", "b a@premise", "b a@hypothesis", "a@hypothesis"} <= set(spelled)
    assert len(set(spelled)) == len(spelled)
