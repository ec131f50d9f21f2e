"""The CoBA majority vote: principal words W_p and spurious words W_s (pure functions).

For one example (one text field):

1. **Top-K per member and method.** A method's scores are ranked over the example's *word
   types* (canonical words compared case-insensitively with :func:`engine.text.normalize`; a
   type's score is its best occurrence), punctuation and markup excluded. ``rank_by="abs"``
   (default) ranks by magnitude (important for or against the explained class),
   ``"positive"`` only by support for it. The K best types are kept (ties: earlier word first).
2. **Combining methods within a member** (:attr:`VoteSettings.combine`): a member *votes* for a
   word if the word is in its top-K under ``"any"`` of its enabled methods, a ``"majority"``
   of them (more than half; the default: one noisy method cannot add a word on its own, and
   with a single method it is the same as ``"any"``), or ``"all"`` of them.
3. **Across members**: a word voted for by at least ``tau = (|M| + 1) / 2`` members is
   **principal** (W_p); every other word some member voted for is **spurious** (W_s).
4. **User words**: words of the user's lists (e.g. the bundled gender lists) that occur in the
   example join W_s, and leave W_p if they were there (the user's designation wins).

Steps 2–3 are CoBA's vote rule, ``"majority"``. Other rules (score aggregation across
methods, members weighted by dev accuracy, the label margin, a z-statistics prior) are
registered by name in :data:`engine.attribution.vote_registry.VOTE_RULES`;
:attr:`VoteSettings.rule` names the one to use. The default is ``"z-prior"`` (rank averaging
across members and methods blended with the labels' word z-statistics): chosen by
``benchmarks/principal_words.py`` on all 231 usable CAD dev pairs, where it found more of the
words human editors changed than the majority vote, every single member and the z-statistics
lexicon (P@5 0.420 against 0.395, 0.397 and 0.300 with IG; see the README's "Word importance").

Dataset-level tables count, per word, the examples in which it is principal / spurious (and
per gold label). Everything here works on plain lists, dicts and numpy arrays.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from engine.attribution.errors import VoteConfigError
from engine.attribution.vote_registry import VOTE_RULES
from engine.text import normalize, segment
from engine.text.words import LEXICAL_KINDS

__all__ = [
    "COMBINE_RULES",
    "ExampleVote",
    "VoteContext",
    "VoteSettings",
    "VoteSummary",
    "WordCount",
    "combine_methods",
    "is_lexical_token",
    "summarize_votes",
    "top_k_words",
    "vote_example",
]

COMBINE_RULES = ("any", "majority", "all")
RANK_RULES = ("abs", "positive")


@dataclass(frozen=True)
class VoteSettings:
    """How top-K lists become principal and spurious words.

    Parameters
    ----------
    k
        Words per member and method (CoBA: 5).
    combine
        How a member's methods combine: ``"any"``, ``"majority"`` (default) or ``"all"``.
    rank_by
        ``"abs"`` (default) or ``"positive"``.
    threshold
        Members needed for a principal word; ``None`` means a strict majority,
        ``tau = floor(|M| / 2) + 1`` (CoBA's ``(|M| + 1) / 2`` for an odd number of members; both
        of two members, the default explainers when a third member only judges).
    rule
        The vote rule's name in :data:`engine.attribution.vote_registry.VOTE_RULES` (default
        ``"z-prior"``, see the module doc; ``"majority"`` is CoBA's vote, steps 2–3).
    prior_weight
        Weight of the z-statistics prior for the rules that use one (0–1).
    """

    k: int = 5
    combine: str = "majority"
    rank_by: str = "abs"
    threshold: int | None = None
    rule: str = "z-prior"
    prior_weight: float = 0.3

    def __post_init__(self) -> None:
        if self.k < 1:
            raise VoteConfigError(f"K must be at least 1, got {self.k}.", "Use e.g. K = 5.")
        if self.combine not in COMBINE_RULES:
            raise VoteConfigError(f"Unknown combine rule {self.combine!r}.", f"Use one of: {', '.join(COMBINE_RULES)}.")
        if self.rank_by not in RANK_RULES:
            raise VoteConfigError(f"Unknown ranking {self.rank_by!r}.", f"Use one of: {', '.join(RANK_RULES)}.")
        if self.threshold is not None and self.threshold < 1:
            raise VoteConfigError(f"threshold must be at least 1, got {self.threshold}.", "Leave it unset for a strict majority.")
        if not 0.0 <= self.prior_weight <= 1.0:
            raise VoteConfigError(f"prior_weight must be between 0 and 1, got {self.prior_weight}.", "Use e.g. 0.3.")
        VOTE_RULES.get(self.rule)  # an unknown name raises VoteConfigError listing the valid ones

    def tau(self, n_members: int) -> int:
        """The member threshold for ``n_members`` members."""
        return self.threshold if self.threshold is not None else n_members // 2 + 1

    def to_dict(self) -> dict:
        out = {"k": self.k, "combine": self.combine, "rank_by": self.rank_by, "threshold": self.threshold}
        if self.rule != "majority":  # the majority rule keeps the keys of votes stored before rules existed
            out.update(rule=self.rule, prior_weight=self.prior_weight)
        return out


@dataclass(frozen=True)
class VoteContext:
    """What some vote rules need besides the scores.

    Attributes
    ----------
    member_weights
        Member -> weight (e.g. dev accuracy above chance), for ``"weighted-majority"`` and the
        aggregation rules; missing members weigh 1.
    prior
        Normalised word -> z-statistic (or any word prior; its magnitude is used), for
        ``"z-prior"`` and ``"z-tiebreak"``.
    contrast
        ``contrast[member][method]``: scores of the runner-up class, for ``"margin"`` (the
        margin's attribution is the difference, for the methods that are linear in their target).
    """

    member_weights: Mapping[str, float] | None = None
    prior: Mapping[str, float] | None = None
    contrast: Mapping[str, Mapping[str, Sequence[float] | np.ndarray]] | None = None


def is_lexical_token(token: str) -> bool:
    """Whether a canonical token (as stored) is a word, number or emoji."""
    parts = segment(token)
    return len(parts) == 1 and parts[0].kind in LEXICAL_KINDS


def top_k_words(words: Sequence[str], scores: Sequence[float] | np.ndarray, k: int = 5, *, rank_by: str = "abs") -> list[str]:
    """The ``k`` best word types (normalised), best first.

    Parameters
    ----------
    words
        Canonical tokens of the text (punctuation and markup are skipped).
    scores
        One score per token; may be shorter than ``words`` (the rest were truncated) and may
        hold NaN (ignored).
    k
        How many.
    rank_by
        ``"abs"`` or ``"positive"`` (non-positive scores are then never selected).
    """
    ordered = sorted(type_scores(words, scores, rank_by=rank_by).items(), key=lambda kv: (-kv[1][0], kv[1][1]))
    return [key for key, _ in ordered[:k]]


def type_scores(words: Sequence[str], scores: Sequence[float] | np.ndarray, *, rank_by: str = "abs") -> dict[str, tuple[float, int]]:
    """``{word type: (ranking value, first position)}`` of a text's lexical words (see :func:`top_k_words`).

    The ranking value is the best occurrence's ``|score|`` (``rank_by="abs"``) or score
    (``"positive"``; types without a positive score are left out).
    """
    best: dict[str, tuple[float, int]] = {}
    values = np.asarray(scores, dtype=np.float64)
    for i, word in enumerate(words[: len(values)]):
        value = values[i]
        if not np.isfinite(value) or not is_lexical_token(word):
            continue
        rank = abs(value) if rank_by == "abs" else value
        if rank_by == "positive" and rank <= 0:
            continue
        key = normalize(word)
        if key not in best or rank > best[key][0]:
            best[key] = (rank, best[key][1] if key in best else i)
    return best


def combine_methods(tops: Mapping[str, Sequence[str]], rule: str = "majority") -> list[str]:
    """A member's voted words from its per-method top-K lists.

    Parameters
    ----------
    tops
        Method name -> top-K words.
    rule
        ``"any"``, ``"majority"`` (more than half of the methods) or ``"all"``.

    Returns
    -------
    list of str
        Words in order of first appearance across the methods' lists.
    """
    if rule not in COMBINE_RULES:
        raise VoteConfigError(f"Unknown combine rule {rule!r}.", f"Use one of: {', '.join(COMBINE_RULES)}.")
    n = len(tops)
    need = {"any": 1, "majority": n // 2 + 1, "all": n}[rule]
    counts = Counter(w for words in tops.values() for w in dict.fromkeys(words))
    order = list(dict.fromkeys(w for words in tops.values() for w in words))
    return [w for w in order if counts[w] >= need]


@dataclass(frozen=True)
class ExampleVote:
    """The vote on one example field.

    Attributes
    ----------
    principal
        W_p, normalised words in order of votes (then first appearance).
    spurious
        W_s, likewise (user-list words included).
    votes
        Word -> number of members that voted for it.
    member_words
        Member -> its voted words.
    user_words
        Words of W_s that came from the user's lists.
    ranking
        Every candidate word, most important first, as the rule ranks them (for precision at K;
        not stored: empty for votes read back from a project, then W_p followed by W_s).
    """

    principal: tuple[str, ...]
    spurious: tuple[str, ...]
    votes: dict[str, int] = field(default_factory=dict)
    member_words: dict[str, tuple[str, ...]] = field(default_factory=dict)
    user_words: tuple[str, ...] = ()
    ranking: tuple[str, ...] = field(default=(), compare=False)

    def ranked(self) -> tuple[str, ...]:
        """:attr:`ranking`, or W_p then W_s when there is none (user-list words left out)."""
        if self.ranking:
            return self.ranking
        return tuple(w for w in (*self.principal, *self.spurious) if w not in self.user_words)

    def category(self, word: str) -> str | None:
        """``"principal"``, ``"spurious"`` or ``None`` for a (raw or normalised) word."""
        key = normalize(word)
        if key in self.principal:
            return "principal"
        if key in self.spurious:
            return "spurious"
        return None

    def spans(self, text: str) -> list[tuple[int, int, str]]:
        """``(start, end, category)`` of every occurrence of a W_p / W_s word in ``text`` (for highlighting)."""
        out = []
        for w in segment(text):
            cat = self.category(w.text) if w.is_lexical else None
            if cat:
                out.append((w.start, w.end, cat))
        return out

    def to_dict(self) -> dict:
        return {
            "principal": list(self.principal),
            "spurious": list(self.spurious),
            "votes": dict(self.votes),
            "member_words": {m: list(w) for m, w in self.member_words.items()},
            "user_words": list(self.user_words),
        }


def vote_example(
    words: Sequence[str],
    scores: Mapping[str, Mapping[str, Sequence[float] | np.ndarray]],
    settings: VoteSettings | None = None,
    *,
    user_words: Iterable[str] = (),
    context: VoteContext | None = None,
) -> ExampleVote:
    """Principal and spurious words of one example field.

    Parameters
    ----------
    words
        The field's canonical tokens (:func:`engine.text.words_of` of the text, or the words
        stored with an attribution).
    scores
        ``scores[member][method]``: one score per token (may be shorter than ``words``).
    settings
        K, the method-combination rule, ranking and threshold (default :class:`VoteSettings`).
    user_words
        Normalised words that always count as spurious when present.
    context
        Member weights, a word prior or contrast scores, for the rules that use them.

    Examples
    --------
    >>> words = "a truly great and moving film".split()
    >>> s = {"m1": {"ig": [0, .1, .9, 0, .5, .2]}, "m2": {"ig": [0, 0, .8, 0, .1, .6]},
    ...      "m3": {"ig": [.3, 0, .7, 0, 0, 0]}}
    >>> v = vote_example(words, s, VoteSettings(k=2, rule="majority"))
    >>> v.principal, v.spurious
    (('great',), ('moving', 'film', 'a'))
    """
    settings = settings if settings is not None else VoteSettings()
    outcome = VOTE_RULES.get(settings.rule)(words, scores, settings, context or VoteContext())
    present = {normalize(w) for w in words if is_lexical_token(w)}
    users = [w for w in sorted(set(user_words) & present)]
    principal = [w for w in outcome.principal if w not in users]
    spurious = [w for w in outcome.spurious if w not in users and w not in principal] + users
    ranking = [w for w in outcome.ranking if w not in users]
    return ExampleVote(tuple(principal), tuple(spurious), dict(outcome.votes), dict(outcome.member_words),
                       tuple(users), tuple(ranking))


def majority_vote(
    words: Sequence[str],
    scores: Mapping[str, Mapping[str, Sequence[float] | np.ndarray]],
    settings: VoteSettings,
    weights: Mapping[str, float] | None = None,
) -> tuple[list[str], list[str], dict[str, int], dict[str, tuple[str, ...]], dict[str, float]]:
    """Steps 1–3 of the module doc: ``(principal, spurious, votes, member_words, weighted votes)``.

    With ``weights``, a word is principal when the weight of the members voting for it reaches
    ``tau / |M|`` of the total weight (equal weights: the plain vote); words are ranked by
    weighted votes, then first appearance.
    """
    member_words: dict[str, tuple[str, ...]] = {}
    for member, per_method in scores.items():
        tops = {m: top_k_words(words, s, settings.k, rank_by=settings.rank_by) for m, s in per_method.items()}
        member_words[member] = tuple(combine_methods(tops, settings.combine))
    votes = Counter(w for ws in member_words.values() for w in ws)
    weight = {m: (1.0 if weights is None else float(weights.get(m, 1.0))) for m in member_words}
    weighted: dict[str, float] = {}
    for member, ws in member_words.items():
        for w in ws:
            weighted[w] = weighted.get(w, 0.0) + weight[member]
    first_seen = {w: i for i, w in enumerate(dict.fromkeys(w for ws in member_words.values() for w in ws))}
    tau = settings.tau(len(scores))
    need = sum(weight.values()) * tau / max(len(scores), 1) - 1e-9
    ranked = sorted(votes, key=lambda w: (-weighted[w], first_seen[w]))
    principal = [w for w in ranked if weighted[w] >= need]
    spurious = [w for w in ranked if weighted[w] < need]
    return principal, spurious, dict(votes), member_words, weighted


@dataclass(frozen=True)
class WordCount:
    """One row of a dataset-level table: a word, the examples it was counted in, and per label."""

    word: str
    examples: int
    by_label: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class VoteSummary:
    """Dataset-level tables of the most frequent principal and spurious words."""

    principal: tuple[WordCount, ...]
    spurious: tuple[WordCount, ...]
    n_examples: int

    def to_dict(self) -> dict:
        def rows(items: Sequence[WordCount]) -> list[dict]:
            return [{"word": r.word, "examples": r.examples, "by_label": dict(r.by_label)} for r in items]

        return {"n_examples": self.n_examples, "principal": rows(self.principal), "spurious": rows(self.spurious)}


def summarize_votes(votes: Iterable[tuple[ExampleVote, str | None]], *, top: int | None = 50) -> VoteSummary:
    """Count, per word, the examples in which it is principal / spurious.

    Parameters
    ----------
    votes
        ``(vote, gold label or None)`` per example field.
    top
        Keep the ``top`` most frequent words of each table (``None``: all).
    """
    counts = {"p": Counter(), "s": Counter()}
    labels: dict[str, dict[str, Counter]] = {"p": {}, "s": {}}
    n = 0
    for vote, label in votes:
        n += 1
        for tag, words in (("p", vote.principal), ("s", vote.spurious)):
            for w in set(words):
                counts[tag][w] += 1
                if label is not None:
                    labels[tag].setdefault(w, Counter())[label] += 1

    def table(tag: str) -> tuple[WordCount, ...]:
        items = sorted(counts[tag].items(), key=lambda kv: (-kv[1], kv[0]))
        if top is not None:
            items = items[:top]
        return tuple(WordCount(w, c, dict(sorted(labels[tag].get(w, {}).items()))) for w, c in items)

    return VoteSummary(table("p"), table("s"), n)
