"""The registry of vote rules, and what a rule returns.

A rule is a function ``rule(words, scores, settings, context) -> RuleOutcome``; the built-in rules
live in :mod:`engine.attribution.vote_rules` and are imported on first lookup, so this module
imports neither them nor :mod:`engine.attribution.vote` (which looks rules up here).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from engine.attribution.errors import VoteConfigError
from engine.registry import Registry

__all__ = ["BUILTIN_RULES", "PRIOR_RULES", "VOTE_RULES", "RuleOutcome", "VoteRule", "available_vote_rules"]

#: Names of the built-in rules, in the order they are listed.
BUILTIN_RULES = ("majority", "weighted-majority", "rank-mean", "score-mean", "margin", "z-prior", "z-tiebreak")

#: Rules that read a word prior (``VoteContext.prior``); without one given, the vote computes the
#: dataset's label prior (:func:`engine.attribution.word_prior.label_word_prior`).
PRIOR_RULES = frozenset({"z-prior", "z-tiebreak"})


@dataclass(frozen=True)
class RuleOutcome:
    """What a rule decides for one text field (user-list words are handled by the caller)."""

    principal: list[str]
    spurious: list[str]
    ranking: list[str]
    votes: dict[str, int] = field(default_factory=dict)
    member_words: dict[str, tuple[str, ...]] = field(default_factory=dict)


#: ``rule(words, scores, settings: VoteSettings, context: VoteContext) -> RuleOutcome``.
VoteRule = Callable[..., RuleOutcome]

VOTE_RULES: Registry[VoteRule] = Registry(
    "vote rule",
    VoteConfigError,
    builtins={name: "engine.attribution.vote_rules" for name in BUILTIN_RULES},
)


def available_vote_rules() -> list[str]:
    """The registered rule names, built-ins first."""
    return VOTE_RULES.names()
