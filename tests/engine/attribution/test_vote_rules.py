"""The vote rules (engine.attribution.vote_rules) on hand-made scores."""

from __future__ import annotations

import numpy as np
import pytest

from engine.attribution import VOTE_RULES, VoteConfigError, VoteContext, VoteSettings, available_vote_rules, vote_example

WORDS = ["the", "plot", "was", "dull", "but", "the", "cast", "shines"]
#                 0       1       2       3       4       5       6        7
SCORES = {
    # m1: IG says dull > shines > plot; LIME says dull > cast > shines
    "m1": {"ig": [0, 0.5, 0, 0.9, 0, 0, 0.1, 0.7], "lime": [0, 0.1, 0, 0.8, 0, 0, 0.6, 0.5]},
    # m2: plot > dull > cast; shines > dull > cast
    "m2": {"ig": [0, 0.9, 0, 0.8, 0, 0, 0.3, 0.0], "lime": [0, 0.0, 0, 0.5, 0, 0, 0.2, 0.7]},
    # m3: a weak member that likes "was" and "but"
    "m3": {"ig": [0, 0, 0.9, 0.1, 0.8, 0, 0, 0], "lime": [0, 0, 0.7, 0.2, 0.9, 0, 0, 0]},
}


def vote(rule: str, k: int = 2, context: VoteContext | None = None, **kwargs):
    return vote_example(WORDS, SCORES, VoteSettings(k=k, combine="any", rule=rule, **kwargs), context=context)


def test_every_rule_is_registered_by_name_and_stored_in_the_settings():
    assert available_vote_rules() == ["majority", "weighted-majority", "rank-mean", "score-mean", "margin",
                                      "z-prior", "z-tiebreak"]
    assert VoteSettings(rule="rank-mean").to_dict()["rule"] == "rank-mean"
    assert "rule" not in VoteSettings(rule="majority").to_dict()  # keeps the keys of votes stored before rules
    assert VoteSettings().to_dict()["rule"] == "z-prior"  # the default, chosen by benchmarks/principal_words.py
    with pytest.raises(VoteConfigError, match="No vote rule called 'best'"):
        VoteSettings(rule="best")


def test_majority_is_unchanged():
    # top-2 per method, combine=any: m1 {dull, shines, cast}, m2 {plot, dull, shines}, m3 {was, but}
    v = vote("majority")
    assert v.votes == {"dull": 2, "shines": 2, "plot": 1, "cast": 1, "was": 1, "but": 1}
    assert v.principal == ("dull", "shines")
    assert v.ranked()[:2] == ("dull", "shines")
    assert vote_example(WORDS, SCORES, VoteSettings(k=2, combine="any", rule="majority")) == v


def test_weighted_majority_follows_the_accurate_members():
    # m3 is nearly at chance: its words cannot win; with equal weights it is the plain vote
    equal = vote("weighted-majority", context=VoteContext(member_weights={"m1": 1, "m2": 1, "m3": 1}))
    assert equal.principal == vote("majority").principal
    # m1 alone holds more than 2/3 of the weight: its three words are principal
    heavy = vote("weighted-majority", context=VoteContext(member_weights={"m1": 0.9, "m2": 0.2, "m3": 0.1}))
    assert set(heavy.principal) == {"dull", "shines", "cast"}
    assert "plot" in heavy.spurious


def test_rank_mean_aggregates_ranks_across_members_and_methods():
    v = vote("rank-mean")
    # rank points (7 types, 7 for the best) summed over the six lists: dull 7+7+6+6+5+5 = 36,
    # cast 4+6+5+5 = 20, shines 6+5+7 = 18, plot 5+4+7 = 16; zero scores earn nothing
    assert v.principal == ("dull", "cast")
    assert v.ranked()[:4] == ("dull", "cast", "shines", "plot")
    assert set(v.member_words) == {"m1", "m2", "m3"} and v.member_words["m3"] == ("was", "but")  # 13 points each: text order


def test_score_mean_normalises_each_method_before_averaging():
    # scaling one method by 1000 must not change the result
    scaled = {m: {meth: np.asarray(s) * (1000 if (m, meth) == ("m3", "ig") else 1) for meth, s in per.items()}
              for m, per in SCORES.items()}
    a = vote("score-mean")
    b = vote_example(WORDS, scaled, VoteSettings(k=2, rule="score-mean"))
    assert a.principal == b.principal == ("dull", "shines")
    # raw averaging would be swamped by the scaled method; normalised averaging is not
    assert a.ranked() == b.ranked()


def test_margin_needs_contrast_scores_and_equals_majority_for_two_classes():
    with pytest.raises(VoteConfigError, match="runner-up"):
        vote("margin")
    negated = {m: {meth: -np.asarray(s) for meth, s in per.items()} for m, per in SCORES.items()}
    assert vote("margin", context=VoteContext(contrast=negated)).principal == vote("majority").principal
    # a runner-up that shares the "shines" evidence leaves "dull" as the one margin word
    shared = {m: {meth: np.where(np.arange(8) == 7, np.asarray(s), 0.0) for meth, s in per.items()}
              for m, per in SCORES.items()}
    v = vote("margin", context=VoteContext(contrast=shared))
    assert "shines" not in v.principal and "dull" in v.principal


def test_z_prior_blends_the_lexicon_into_the_ranking():
    prior = {"plot": 0.5, "dull": 3.0, "cast": 0.2, "shines": 0.1, "was": 4.0, "but": 0.1}
    none = vote("z-prior", prior_weight=0.0, context=VoteContext(prior=prior))
    assert none.principal == vote("rank-mean").principal
    strong = vote("z-prior", prior_weight=0.9, context=VoteContext(prior=prior))
    assert strong.principal == ("was", "dull")  # |z| dominates at weight 0.9


def test_z_tiebreak_orders_equal_votes_by_z_and_keeps_the_principal_words():
    prior = {"shines": 5.0, "dull": 1.0, "but": 4.0}
    v = vote("z-tiebreak", context=VoteContext(prior=prior))
    assert v.principal == ("dull", "shines")  # same set as the majority vote ...
    assert v.ranked()[:2] == ("shines", "dull")  # ... ranked by |z| among equal votes
    assert v.ranked()[2] == "but"  # the one-vote words: "but" has the largest |z|


def test_user_words_leave_every_rule_s_principal_words():
    for rule in ("majority", "rank-mean", "score-mean", "z-prior"):
        v = vote_example(WORDS, SCORES, VoteSettings(k=2, rule=rule), user_words=["dull"],
                         context=VoteContext(prior={}))
        assert "dull" not in v.principal and "dull" in v.spurious and "dull" not in v.ranked()


def test_a_third_party_rule_can_be_registered():
    from engine.attribution.vote_rules import RuleOutcome

    @VOTE_RULES.register("first-words")
    def first_words(words, scores, settings, context):
        keys = list(dict.fromkeys(w for w in words))[: settings.k]
        return RuleOutcome(keys, [], keys)

    try:
        assert vote_example(WORDS, SCORES, VoteSettings(k=2, rule="first-words")).principal == ("the", "plot")
    finally:
        VOTE_RULES._entries.pop("first-words", None)
