"""Vote rules: how per-member, per-method word scores become principal words (registered by name).

Every rule is a function ``rule(words, scores, settings, context) -> RuleOutcome`` registered in
:data:`VOTE_RULES`; :attr:`engine.attribution.vote.VoteSettings.rule` stores its name.
``scores[member][method]`` holds one score per token; ``context`` is a
:class:`~engine.attribution.vote.VoteContext`. Built-in rules:

``majority`` (default)
    CoBA's vote: a member votes for a word most of its methods rank in their top K; a word
    voted for by ``tau = (|M| + 1) / 2`` members is principal.
``weighted-majority``
    The same with each member's vote weighted (``context.member_weights``, e.g. dev accuracy
    above chance): principal when the voting members hold ``tau / |M|`` of the total weight.
``rank-mean``
    Score aggregation: every (member, method) ranks the word types (``n`` of them); a word's
    score is the mean of ``(n - rank) / n`` over the lists (rank 0 is the best; tied values share
    their mean rank; a zero score earns nothing), members weighted as above; the K best are
    principal.
``score-mean``
    Score aggregation: each (member, method)'s word-type scores divided by their largest value
    (so methods on different scales count alike), averaged; the K best are principal.
``margin``
    The majority vote on the attribution of the label margin, ``scores - context.contrast``
    (the runner-up class's scores). For the methods that are linear in their target (IG,
    KernelSHAP, LIME) and two classes whose probabilities sum to one, the runner-up's scores are
    the negated scores, so the margin ranks words exactly as the probability does.
``z-prior``
    ``rank-mean`` blended with the word's ``|z|`` (``context.prior``, normalised by the largest
    in the text) with weight ``settings.prior_weight``; the K best are principal.
``z-tiebreak``
    The majority vote, with words of equal (weighted) votes ranked by ``|z|`` instead of text
    order: W_p is unchanged, the ranking (precision at K) may change.

Spurious words (W_s) are, for every rule, the words some member put in its top K that are not
principal.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np

from engine.attribution.errors import VoteConfigError
from engine.attribution.vote import VoteContext, VoteSettings, majority_vote, type_scores
from engine.attribution.vote_registry import VOTE_RULES, RuleOutcome, VoteRule, available_vote_rules

__all__ = ["VOTE_RULES", "RuleOutcome", "VoteRule", "available_vote_rules"]

Scores = Mapping[str, Mapping[str, Sequence[float] | np.ndarray]]


def _majority_outcome(words: Sequence[str], scores: Scores, settings: VoteSettings,
                      weights: Mapping[str, float] | None = None,
                      prior: Mapping[str, float] | None = None) -> RuleOutcome:
    principal, spurious, votes, member_words, weighted = majority_vote(words, scores, settings, weights)
    ranking = principal + spurious
    if prior is not None:
        order = {w: i for i, w in enumerate(ranking)}
        ranking = sorted(ranking, key=lambda w: (-weighted[w], -abs(float(prior.get(w, 0.0))), order[w]))
    return RuleOutcome(principal, spurious, ranking, votes, member_words)


@VOTE_RULES.register("majority")
def majority(words: Sequence[str], scores: Scores, settings: VoteSettings, context: VoteContext) -> RuleOutcome:
    """CoBA's majority of top-K (the default)."""
    return _majority_outcome(words, scores, settings)


@VOTE_RULES.register("weighted-majority")
def weighted_majority(words: Sequence[str], scores: Scores, settings: VoteSettings, context: VoteContext) -> RuleOutcome:
    """The majority vote with members weighted by ``context.member_weights``."""
    return _majority_outcome(words, scores, settings, context.member_weights)


@VOTE_RULES.register("z-tiebreak")
def z_tiebreak(words: Sequence[str], scores: Scores, settings: VoteSettings, context: VoteContext) -> RuleOutcome:
    """The majority vote, ties of votes ranked by ``|z|``."""
    return _majority_outcome(words, scores, settings, prior=context.prior or {})


@VOTE_RULES.register("margin")
def margin(words: Sequence[str], scores: Scores, settings: VoteSettings, context: VoteContext) -> RuleOutcome:
    """The majority vote on ``scores - context.contrast`` (attribution of the label margin)."""
    if context.contrast is None:
        raise VoteConfigError("The margin vote needs the runner-up class's attributions.",
                              "Attribute the runner-up class too, or use another vote rule.")
    diff: dict[str, dict[str, np.ndarray]] = {}
    for member, per_method in scores.items():
        for method, values in per_method.items():
            a = np.asarray(values, dtype=np.float64)
            b = np.asarray(context.contrast[member][method], dtype=np.float64)
            n = min(len(a), len(b))
            diff.setdefault(member, {})[method] = a[:n] - b[:n]
    return _majority_outcome(words, diff, settings)


def _aggregate(words: Sequence[str], scores: Scores, settings: VoteSettings, context: VoteContext, how: str,
               members: Sequence[str] | None = None) -> tuple[dict[str, float], dict[str, int]]:
    """``(aggregate score, first position)`` per word type over the (member, method) lists."""
    weights = context.member_weights or {}
    total: dict[str, float] = {}
    first: dict[str, int] = {}
    mass = 0.0
    for member in members if members is not None else list(scores):
        weight = float(weights.get(member, 1.0))
        for values in scores[member].values():
            typed = type_scores(words, values, rank_by=settings.rank_by)
            if not typed:
                continue
            mass += weight
            if how == "rank":
                n = len(typed)
                values_sorted = sorted((v for v, _ in typed.values()), reverse=True)
                # rank of a value: the mean of the positions it holds (ties share); zero scores earn nothing
                first_at: dict[float, float] = {}
                for r, v in enumerate(values_sorted):
                    first_at.setdefault(v, r)
                count = Counter(values_sorted)
                part = {w: ((n - (first_at[v] + (count[v] - 1) / 2)) / n if v > 0 else 0.0) for w, (v, _) in typed.items()}
            else:
                top = max(v for v, _ in typed.values())
                part = {w: (v / top if top > 0 else 0.0) for w, (v, _) in typed.items()}
            for w, value in part.items():
                total[w] = total.get(w, 0.0) + weight * value
            for w, (_, pos) in typed.items():
                first[w] = min(first.get(w, pos), pos)
    return ({w: v / mass for w, v in total.items()} if mass else {}), first


def _from_aggregate(words: Sequence[str], scores: Scores, settings: VoteSettings, context: VoteContext,
                    how: str, prior_weight: float = 0.0) -> RuleOutcome:
    def combined(members: Sequence[str] | None) -> list[str]:
        agg, first = _aggregate(words, scores, settings, context, how, members)
        if prior_weight > 0 and agg:
            prior = context.prior or {}
            top = max((abs(float(prior.get(w, 0.0))) for w in agg), default=0.0)
            agg = {w: (1 - prior_weight) * v + prior_weight * (abs(float(prior.get(w, 0.0))) / top if top > 0 else 0.0)
                   for w, v in agg.items()}
        return sorted(agg, key=lambda w: (-agg[w], first[w]))

    ranking = combined(None)
    principal = ranking[: settings.k]
    member_words = {m: tuple(combined([m])[: settings.k]) for m in scores}
    votes = Counter(w for ws in member_words.values() for w in ws)
    spurious = [w for w in ranking if votes.get(w) and w not in principal]
    return RuleOutcome(principal, spurious, ranking, dict(votes), member_words)


@VOTE_RULES.register("rank-mean")
def rank_mean(words: Sequence[str], scores: Scores, settings: VoteSettings, context: VoteContext) -> RuleOutcome:
    """Rank averaging across members and methods; the K best are principal."""
    return _from_aggregate(words, scores, settings, context, "rank")


@VOTE_RULES.register("score-mean")
def score_mean(words: Sequence[str], scores: Scores, settings: VoteSettings, context: VoteContext) -> RuleOutcome:
    """Normalised-score averaging across members and methods; the K best are principal."""
    return _from_aggregate(words, scores, settings, context, "score")


@VOTE_RULES.register("z-prior")
def z_prior(words: Sequence[str], scores: Scores, settings: VoteSettings, context: VoteContext) -> RuleOutcome:
    """Rank averaging blended with the words' normalised ``|z|``; the K best are principal."""
    return _from_aggregate(words, scores, settings, context, "rank", prior_weight=settings.prior_weight)
