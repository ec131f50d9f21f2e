"""Corpus BLEU and self-BLEU, written out (sacrebleu is not a dependency).

BLEU (Papineni et al. 2002): the geometric mean of the clipped n-gram precisions for
``n = 1..max_n``, summed over the whole corpus before dividing, times the brevity penalty
``exp(1 - r / c)`` when the hypotheses' total length ``c`` is below the total length ``r`` of
the closest references. Self-BLEU (Zhu et al. 2018) scores every text of a set against all the
others as references: high means the texts repeat each other (low diversity).
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Sequence

__all__ = ["corpus_bleu", "ngrams", "self_bleu"]


def ngrams(tokens: Sequence[str], n: int) -> Counter:
    """Counts of the ``n``-grams of ``tokens`` (tuples)."""
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def _score(matches: Sequence[float], totals: Sequence[int], hyp_len: int, ref_len: int, smooth: float) -> float:
    if hyp_len == 0:
        return 0.0
    logs = []
    for m, t in zip(matches, totals):
        if t == 0:
            return 0.0
        if m == 0:
            if smooth <= 0:
                return 0.0
            m = smooth
        logs.append(math.log(m / t))
    bp = 1.0 if hyp_len >= ref_len else math.exp(1.0 - ref_len / hyp_len)
    return bp * math.exp(sum(logs) / len(logs))


def _closest(ref_lengths: Sequence[int], hyp_len: int) -> int:
    """The reference length closest to ``hyp_len`` (the shorter one on a tie)."""
    return min(ref_lengths, key=lambda r: (abs(r - hyp_len), r))


def corpus_bleu(
    hypotheses: Sequence[Sequence[str]],
    references: Sequence[Sequence[Sequence[str]]],
    *,
    max_n: int = 4,
    smooth: float = 0.0,
) -> float:
    """Corpus-level BLEU of tokenised hypotheses, each against its own references.

    Parameters
    ----------
    hypotheses
        One token list per hypothesis.
    references
        For each hypothesis, a list of reference token lists (at least one).
    max_n
        Highest n-gram order (4 for BLEU-4).
    smooth
        Used instead of a zero match count for an order with no match (0: such a corpus
        scores 0, as in the original BLEU).

    Returns
    -------
    float
        BLEU in [0, 1].

    Examples
    --------
    >>> corpus_bleu([["a", "b"]], [[["a", "b"]]], max_n=2)
    1.0
    """
    if len(hypotheses) != len(references):
        raise ValueError("one reference list per hypothesis is needed")
    matches = [0] * max_n
    totals = [0] * max_n
    hyp_len = ref_len = 0
    for hyp, refs in zip(hypotheses, references):
        if not refs:
            raise ValueError("every hypothesis needs at least one reference")
        hyp_len += len(hyp)
        ref_len += _closest([len(r) for r in refs], len(hyp))
        for n in range(1, max_n + 1):
            counts = ngrams(hyp, n)
            best: Counter = Counter()
            for ref in refs:
                best |= ngrams(ref, n)
            matches[n - 1] += sum(min(c, best[g]) for g, c in counts.items())
            totals[n - 1] += max(len(hyp) - n + 1, 0)
    return _score(matches, totals, hyp_len, ref_len, smooth)


def self_bleu(texts: Sequence[Sequence[str]], *, max_n: int = 4, smooth: float = 0.0) -> float:
    """Corpus BLEU of every text against all the other texts of the set as references.

    Equal to ``corpus_bleu(texts, [[others] for each text])`` but linear in the number of
    n-grams: for each n-gram only its two highest counts across texts are kept, which gives the
    maximum over "every text but this one".

    Parameters
    ----------
    texts
        Token lists (at least two).
    max_n, smooth
        As in :func:`corpus_bleu`.

    Returns
    -------
    float
        Self-BLEU in [0, 1]; higher means less diverse.

    Examples
    --------
    >>> self_bleu([["a", "b"], ["a", "b"]], max_n=2)
    1.0
    """
    if len(texts) < 2:
        raise ValueError("self-BLEU needs at least two texts")
    lengths = sorted(len(t) for t in texts)
    matches = [0] * max_n
    totals = [0] * max_n
    hyp_len = ref_len = 0
    per_order = []
    for n in range(1, max_n + 1):
        counts = [ngrams(t, n) for t in texts]
        top: dict[tuple, list] = {}  # gram -> [best count, index holding it, second best count]
        for i, c in enumerate(counts):
            for g, k in c.items():
                slot = top.get(g)
                if slot is None:
                    top[g] = [k, i, 0]
                elif k > slot[0]:
                    slot[2], slot[0], slot[1] = slot[0], k, i
                elif k > slot[2]:
                    slot[2] = k
        per_order.append((counts, top))
    for i, text in enumerate(texts):
        hyp_len += len(text)
        others = _without(lengths, len(text))
        ref_len += _closest_sorted(others, len(text))
        for n, (counts, top) in enumerate(per_order, start=1):
            hit = 0
            for g, k in counts[i].items():
                best, holder, second = top[g]
                hit += min(k, second if holder == i else best)
            matches[n - 1] += hit
            totals[n - 1] += max(len(text) - n + 1, 0)
    return _score(matches, totals, hyp_len, ref_len, smooth)


def _without(sorted_lengths: list[int], value: int) -> tuple[list[int], int]:
    """The sorted lengths with one occurrence of ``value`` removed (as list + index, no copy)."""
    return sorted_lengths, bisect.bisect_left(sorted_lengths, value)


def _closest_sorted(spec: tuple[list[int], int], hyp_len: int) -> int:
    lengths, removed = spec
    # candidates: neighbours of hyp_len's position, skipping the removed index
    pos = removed  # hyp_len itself sits at `removed`; its closest others are around it
    cands = []
    j = pos - 1
    if j >= 0:
        cands.append(lengths[j])
    j = pos + 1
    if j < len(lengths):
        cands.append(lengths[j])
    return _closest(cands, hyp_len)
