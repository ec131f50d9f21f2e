"""Diversity metrics and the seed interval against values worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.evaluation.bleu import corpus_bleu, self_bleu
from engine.evaluation.diversity import (
    distinct_n,
    flip_rate,
    label_change_rate,
    levenshtein,
    paired_cosine,
    tokenize,
    top_pc_variance_share,
    word_edit_distance,
)
from engine.evaluation.experiment import score
from engine.evaluation.intervals import mean_ci


def test_self_bleu_two_texts():
    # A=a b c vs B=a b d: unigrams 2/3 each way, bigrams 1/2 each way, equal lengths
    assert self_bleu([["a", "b", "c"], ["a", "b", "d"]], max_n=2) == pytest.approx(math.sqrt(4 / 6 * 2 / 4))


def test_self_bleu_brevity_penalty_and_max_over_references():
    # A, B match fully (2/2 each); C=c matches nothing (0/1): p1 = 4/5.
    # closest reference lengths: A->2, B->2, C->2, so r = 6 > c = 5: BP = exp(1 - 6/5)
    texts = [["a", "b"], ["a", "b"], ["c"]]
    expected = 0.8 * math.exp(-0.2)
    assert self_bleu(texts, max_n=1) == pytest.approx(expected)
    refs = [[t for j, t in enumerate(texts) if j != i] for i in range(len(texts))]
    assert corpus_bleu(texts, refs, max_n=1) == pytest.approx(expected)


def test_self_bleu_equals_corpus_bleu_on_random_texts():
    rng = np.random.default_rng(3)
    texts = [[str(w) for w in rng.integers(0, 6, rng.integers(3, 9))] for _ in range(12)]
    refs = [[t for j, t in enumerate(texts) if j != i] for i in range(len(texts))]
    for n in (1, 2, 4):
        assert self_bleu(texts, max_n=n, smooth=0.1) == pytest.approx(corpus_bleu(texts, refs, max_n=n, smooth=0.1))


def test_bleu_clips_repeated_words_and_zero_order():
    assert corpus_bleu([["a", "a", "a"]], [[["a", "b", "c"]]], max_n=1) == pytest.approx(1 / 3)
    assert corpus_bleu([["a", "b"]], [[["a", "c"]]], max_n=2) == 0.0  # no bigram match, no smoothing


def test_distinct_n():
    texts = [["a", "b", "a"], ["a", "c"]]
    assert distinct_n(texts, 1) == pytest.approx(3 / 5)
    assert distinct_n(texts, 2) == pytest.approx(3 / 3)
    assert math.isnan(distinct_n([["a"]], 2))


def test_word_edit_distance():
    assert levenshtein(["a", "b", "c"], ["a", "c"]) == 1
    assert word_edit_distance(tokenize("The film was good"), tokenize("the film was not good")) == pytest.approx(1 / 5)
    assert word_edit_distance(["a", "b"], ["c", "d", "e"]) == 1.0
    assert word_edit_distance([], []) == 0.0


def test_embedding_measures():
    assert paired_cosine(np.array([[3.0, 4.0]]), np.array([[4.0, 3.0]]))[0] == pytest.approx(24 / 25)
    # variance 1 along x, 0.25 along y: the top component holds 1 / 1.25
    points = np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 1.0], [2.0, 1.0]])
    assert top_pc_variance_share(points, k=1) == pytest.approx(0.8)
    assert top_pc_variance_share(points, k=2) == pytest.approx(1.0)


def test_flip_rates_and_scores():
    assert flip_rate(["pos", "neg", "pos", "pos"], ["pos", "pos", "pos", "neg"]) == 0.5
    assert label_change_rate(["pos", "neg"], ["neg", "neg"]) == 0.5
    accuracy, f1 = score(["a", "a", "b", "b"], ["a", "b", "b", "b"])
    assert accuracy == 0.75 and f1 == pytest.approx((2 / 3 + 4 / 5) / 2)


def test_mean_ci_t_interval():
    r = mean_ci([0.8, 0.9])
    # t_{0.975, 1} = 12.7062; s = 0.070711; half width = t * s / sqrt(2)
    assert r.mean == pytest.approx(0.85)
    assert r.half_width == pytest.approx(12.7062047 * 0.0707106781 / math.sqrt(2), rel=1e-6)
    r3 = mean_ci([1.0, 2.0, 3.0])
    assert r3.half_width == pytest.approx(4.30265273 / math.sqrt(3), rel=1e-6)
    assert math.isnan(mean_ci([0.5]).half_width) and mean_ci([0.5]).format() == "50.0"
    assert mean_ci([0.7, 0.7, 0.7]).half_width == 0.0
    assert r.format() == "85.0 ± 63.5"
