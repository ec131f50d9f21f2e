"""Map sub-word tokens onto canonical words with the tokenizer's character offsets.

A fast tokenizer called with ``return_offsets_mapping=True`` gives, for every token, the
``[start, end)`` character span it came from. A token *belongs to* every canonical word
(:func:`engine.text.words.segment`) whose span overlaps its own (``start < word.end and
word.start < end``). Special tokens (``[CLS]``, ``<s>``, ``[SEP]``, padding) and tokens with
an empty span (e.g. a lone byte-level ``Ġ``) belong to no word. No string-prefix heuristics
are used, so WordPiece ``##`` pieces, byte-level BPE ``Ġ`` pieces and SentencePiece ``▁``
pieces all align the same way.

Occasionally one token overlaps *several* canonical words: BERT keeps ``😀👍`` together as a
single ``[UNK]``, byte-level BPE may merge ``/><`` across two ``<br />`` tags. Such words are
put in one **group** (connected components of the word–token overlap graph). A group is the
unit a perturbation method switches on and off, and the unit scores are computed for; a
group's score is shared equally by its words. Almost every group holds a single word.

Aggregation (documented contract)
---------------------------------
``word score = (sum of the scores of the tokens in the word's group) / (words in the group)``.
For a one-word group that is the plain **sum of the sub-token attributions**, which keeps
Integrated Gradients' completeness: the word scores add up to the token scores that landed on
words, i.e. to ``f(x) - f(baseline)`` when non-word tokens are kept equal to the baseline.

Words no token overlaps (cut off by truncation, or made only of characters the tokenizer
drops) are *uncovered*: :attr:`Alignment.covered` is false for them and their score is NaN.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from engine.text.words import Word

__all__ = ["Alignment", "align_tokens", "group_to_word_scores", "token_to_word_scores"]


@dataclass(frozen=True)
class Alignment:
    """How the tokens of one encoded text relate to its canonical words.

    Attributes
    ----------
    words
        The canonical words of the text.
    token_group
        ``(n_tokens,)`` int array: the group each token belongs to, ``-1`` for special,
        empty-span, other-field and padding tokens.
    word_group
        ``(n_words,)`` int array: the group of each word, ``-1`` for uncovered words.
    n_groups
        Number of groups (ids ``0 .. n_groups-1``, in text order).
    group_size
        ``(n_groups,)`` int array: words per group.
    """

    words: tuple[Word, ...]
    token_group: np.ndarray
    word_group: np.ndarray
    n_groups: int
    group_size: np.ndarray

    @property
    def covered(self) -> np.ndarray:
        """``(n_words,)`` bool array: whether some token overlaps the word."""
        return self.word_group >= 0

    @property
    def content_tokens(self) -> np.ndarray:
        """``(n_tokens,)`` bool array: tokens that belong to some word."""
        return self.token_group >= 0

    @property
    def n_covered_prefix(self) -> int:
        """Number of leading words up to and including the last covered word."""
        idx = np.flatnonzero(self.word_group >= 0)
        return int(idx[-1]) + 1 if idx.size else 0


def align_tokens(
    words: Sequence[Word],
    offsets: Sequence[Sequence[int]] | np.ndarray,
    *,
    special_mask: Sequence[bool] | np.ndarray | None = None,
    sequence_ids: Sequence[int | None] | None = None,
    sequence: int = 0,
) -> Alignment:
    """Align one encoded text's tokens to its canonical words.

    Parameters
    ----------
    words
        :func:`engine.text.words.segment` of the text the offsets refer to.
    offsets
        ``(n_tokens, 2)`` character spans from ``return_offsets_mapping=True``.
    special_mask
        True for special tokens (``return_special_tokens_mask=True``); they never align.
    sequence_ids
        For a text pair, the encoding's ``sequence_ids()``; only tokens whose id equals
        ``sequence`` are aligned (the others belong to the other text). ``None`` entries
        (special tokens) never align.
    sequence
        Which text of the pair ``words`` belongs to (0 or 1).

    Returns
    -------
    Alignment
    """
    offs = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
    n_tokens, n_words = len(offs), len(words)
    eligible = offs[:, 1] > offs[:, 0]
    if special_mask is not None:
        eligible &= ~np.asarray(special_mask, dtype=bool)
    if sequence_ids is not None:
        eligible &= np.array([s == sequence for s in sequence_ids], dtype=bool)

    starts = np.array([w.start for w in words], dtype=np.int64)
    ends = np.array([w.end for w in words], dtype=np.int64)
    parent = list(range(n_words))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    token_first_word = np.full(n_tokens, -1, dtype=np.int64)
    word_hit = np.zeros(n_words, dtype=bool)
    for t in np.flatnonzero(eligible):
        a, b = offs[t]
        # words are sorted and disjoint: the overlapping ones form a contiguous run
        lo = int(np.searchsorted(ends, a, side="right"))
        hi = int(np.searchsorted(starts, b, side="left"))
        if lo >= hi:
            continue
        token_first_word[t] = lo
        word_hit[lo:hi] = True
        root = find(lo)
        for w in range(lo + 1, hi):
            r = find(w)
            if r != root:
                parent[r] = root

    word_group = np.full(n_words, -1, dtype=np.int64)
    root_to_group: dict[int, int] = {}
    for w in range(n_words):
        if word_hit[w]:
            word_group[w] = root_to_group.setdefault(find(w), len(root_to_group))
    n_groups = len(root_to_group)
    token_group = np.where(token_first_word >= 0, word_group[np.maximum(token_first_word, 0)], -1)
    group_size = np.bincount(word_group[word_group >= 0], minlength=n_groups).astype(np.int64)
    return Alignment(tuple(words), token_group, word_group, n_groups, group_size)


def token_to_word_scores(alignment: Alignment, token_scores: Sequence[float] | np.ndarray) -> np.ndarray:
    """Per-word scores from per-token scores (sum per group, shared by the group's words).

    Parameters
    ----------
    alignment
        From :func:`align_tokens` for the same encoding.
    token_scores
        ``(n_tokens,)`` scores (e.g. IG attributions summed over the embedding dimension).

    Returns
    -------
    numpy.ndarray
        ``(n_words,)`` float64; NaN for uncovered words.
    """
    scores = np.asarray(token_scores, dtype=np.float64).reshape(-1)
    if scores.shape[0] != alignment.token_group.shape[0]:
        raise ValueError(f"{scores.shape[0]} token scores for {alignment.token_group.shape[0]} tokens")
    mask = alignment.token_group >= 0
    group_scores = np.bincount(alignment.token_group[mask], weights=scores[mask], minlength=alignment.n_groups)
    return group_to_word_scores(alignment, group_scores)


def group_to_word_scores(alignment: Alignment, group_scores: Sequence[float] | np.ndarray) -> np.ndarray:
    """Per-word scores from per-group scores (a group's score is split equally).

    Returns
    -------
    numpy.ndarray
        ``(n_words,)`` float64; NaN for uncovered words.
    """
    g = np.asarray(group_scores, dtype=np.float64).reshape(-1)[: alignment.n_groups]
    out = np.full(len(alignment.words), np.nan)
    covered = alignment.word_group >= 0
    groups = alignment.word_group[covered]
    out[covered] = g[groups] / alignment.group_size[groups]
    return out
