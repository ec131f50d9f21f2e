"""The vote rule on hand-made scores."""

from __future__ import annotations

import numpy as np
import pytest

from engine.attribution import (
    ExampleVote,
    VoteConfigError,
    VoteSettings,
    combine_methods,
    summarize_votes,
    top_k_words,
    vote_example,
)

WORDS = ["The", "film", "was", "great", ",", "the", "acting", "superb", "!"]


def test_top_k_ranks_word_types_and_skips_punctuation() -> None:
    scores = [0.1, 0.3, 0.0, 0.9, 5.0, -0.8, 0.2, 0.5, 4.0]
    # "the" occurs twice: its best occurrence (|-0.8|) counts; "," and "!" never count
    assert top_k_words(WORDS, scores, 3) == ["great", "the", "superb"]
    assert top_k_words(WORDS, scores, 3, rank_by="positive") == ["great", "superb", "film"]


def test_top_k_handles_truncated_and_nan_scores() -> None:
    assert top_k_words(WORDS, [0.1, np.nan, 0.5], 5) == ["was", "the"]
    assert top_k_words(WORDS, [], 5) == []


def test_ties_keep_text_order() -> None:
    assert top_k_words(["b", "a", "c"], [1.0, 1.0, 1.0], 2) == ["b", "a"]


@pytest.mark.parametrize(
    ("rule", "expected"),
    [("any", ["great", "film", "acting", "superb"]), ("majority", ["great", "film"]), ("all", ["great"])],
)
def test_combine_methods(rule: str, expected: list[str]) -> None:
    tops = {"ig": ["great", "film", "acting"], "lime": ["great", "superb", "film"], "shapley": ["great"]}
    assert combine_methods(tops, rule) == expected


def test_majority_of_two_methods_means_both() -> None:
    assert combine_methods({"ig": ["a", "b"], "lime": ["b", "c"]}, "majority") == ["b"]
    assert combine_methods({"ig": ["a", "b"]}, "majority") == ["a", "b"]


def test_principal_needs_tau_members() -> None:
    scores = {
        "m1": {"ig": [0, 0.9, 0, 0.8, 0, 0, 0.1, 0, 0]},
        "m2": {"ig": [0, 0, 0, 0.7, 0, 0, 0.9, 0, 0]},
        "m3": {"ig": [0, 0.2, 0, 0.6, 0, 0, 0, 0.9, 0]},
    }
    vote = vote_example(WORDS, scores, VoteSettings(k=2, rule="majority"))
    assert vote.votes == {"film": 1, "great": 3, "acting": 1, "superb": 1}
    assert vote.principal == ("great",)
    assert set(vote.spurious) == {"film", "acting", "superb"}
    assert vote.member_words["m2"] == ("acting", "great")
    # threshold 1: every voted word is principal
    assert set(vote_example(WORDS, scores, VoteSettings(k=2, threshold=1, rule="majority")).principal) == {"great", "film", "acting", "superb"}
    # five members: tau = 3
    five = {**scores, "m4": {"ig": [0, 0.9, 0, 0, 0, 0, 0, 0, 0]}, "m5": {"ig": [0, 0.9, 0, 0, 0, 0, 0, 0, 0]}}
    assert set(vote_example(WORDS, five, VoteSettings(k=2, rule="majority")).principal) == {"great", "film"}


def test_methods_combine_inside_each_member_before_the_vote() -> None:
    scores = {
        "m1": {"ig": [0, 0.9, 0, 0.8, 0, 0, 0, 0, 0], "lime": [0, 0, 0, 0.8, 0, 0, 0.9, 0, 0], "shapley": [0, 0.1, 0, 0.9, 0, 0, 0, 0, 0]},
        "m2": {"ig": [0, 0.9, 0, 0.8, 0, 0, 0, 0, 0], "lime": [0, 0.9, 0, 0.8, 0, 0, 0, 0, 0], "shapley": [0, 0.0, 0, 0.9, 0, 0, 0.1, 0, 0]},
        "m3": {"ig": [0, 0, 0, 0.8, 0, 0, 0.9, 0, 0], "lime": [0, 0, 0, 0.8, 0, 0, 0.9, 0, 0], "shapley": [0, 0, 0, 0.9, 0, 0, 0.1, 0, 0]},
    }
    majority = vote_example(WORDS, scores, VoteSettings(k=2, combine="majority", rule="majority"))
    assert majority.member_words == {"m1": ("film", "great"), "m2": ("film", "great"), "m3": ("acting", "great")}
    assert majority.principal == ("great", "film") and majority.spurious == ("acting",)
    strict = vote_example(WORDS, scores, VoteSettings(k=2, combine="all", rule="majority"))
    assert strict.member_words == {"m1": ("great",), "m2": ("great",), "m3": ("acting", "great")}
    assert strict.principal == ("great",) and strict.spurious == ("acting",)


def test_user_words_join_spurious_and_leave_principal() -> None:
    words = ["He", "is", "a", "great", "actor", "."]
    scores = {m: {"ig": [0.9, 0, 0, 0.8, 0.1, 0]} for m in ("a", "b", "c")}
    vote = vote_example(words, scores, VoteSettings(k=2, rule="majority"), user_words={"he", "actor", "she"})
    assert vote.principal == ("great",)
    assert vote.spurious == ("actor", "he") and vote.user_words == ("actor", "he")
    assert vote.category("He") == "spurious" and vote.category("GREAT") == "principal"
    assert vote.spans("He is a great actor.") == [(0, 2, "spurious"), (8, 13, "principal"), (14, 19, "spurious")]


def test_settings_are_validated() -> None:
    with pytest.raises(VoteConfigError):
        VoteSettings(k=0)
    with pytest.raises(VoteConfigError):
        VoteSettings(combine="most")
    with pytest.raises(VoteConfigError):
        VoteSettings(rank_by="random")
    assert VoteSettings().tau(3) == 2 and VoteSettings().tau(5) == 3 and VoteSettings(threshold=3).tau(3) == 3
    assert VoteSettings().tau(2) == 2 and VoteSettings().tau(4) == 3  # a strict majority of an even number


def test_dataset_tables_count_examples_per_label() -> None:
    votes = [
        (ExampleVote(("great", "superb"), ("film",)), "pos"),
        (ExampleVote(("great",), ("film", "he")), "pos"),
        (ExampleVote(("awful",), ("film",)), "neg"),
    ]
    summary = summarize_votes(votes)
    assert summary.n_examples == 3
    assert [(r.word, r.examples) for r in summary.principal] == [("great", 2), ("awful", 1), ("superb", 1)]
    assert summary.spurious[0].word == "film" and summary.spurious[0].by_label == {"neg": 1, "pos": 2}
    assert len(summarize_votes(votes, top=1).principal) == 1
    assert summary.to_dict()["principal"][0] == {"word": "great", "examples": 2, "by_label": {"pos": 2}}
