"""Task-independent features of examples, as one sparse count matrix.

Following Wu et al. (2022, Table 9) and Gardner et al. (2021), the features are:

========================  =====================  ===========================================
family (``kind``)         name                   value
========================  =====================  ===========================================
``null``                  ``<null>``             1 in every example
``unigram``               ``great``              token count (single-text task)
                          ``no@hypothesis``      token count in one field (pair task)
``bigram``                ``very good``          count of two consecutive tokens
                          ``is sleeping@hypothesis``
``length``                ``len=100-199``        token-length bucket of the text (single)
                          ``len@hypothesis=6-8`` token-length bucket of the hypothesis (pair)
``length_ratio``          ``len_ratio=0.5-0.75`` bucket of len(hypothesis) / len(premise)
``overlap``               ``overlap=0.8-0.9``    bucket of the fraction of hypothesis tokens
                                                 that occur in the premise
                          ``overlap=full``       every hypothesis token occurs in the premise
``categorical``           ``hyp_only_pred=neutral``  an externally supplied per-example value
========================  =====================  ===========================================

Bucket ``a-b`` holds values ``a <= v < b`` (integers: ``a <= v <= b``), the last bucket ``a+``
everything from ``a`` up. The matrix is built without a Python loop per feature, per example
or per token: each distinct text is tokenized once (:func:`~engine.stats.tokenize.tokenize_many`),
word and bigram occurrences are counted over distinct texts with one packed-integer sort each
(:mod:`engine.stats.ngrams`), and every family is a :class:`~engine.stats.matrix.FeatureBlock`
(distinct rows + the distinct row of each example); :attr:`FeatureMatrix.X` assembles the
full CSR matrix on first use. Bigram names are spelled when read
(:class:`~engine.stats.names.FeatureNames`): a large dataset has millions of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np
import scipy.sparse as sp

from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress, scaled
from engine.stats.errors import StatsConfigError
from engine.stats.matrix import COUNT_DTYPE, FeatureBlock, FeatureMatrix
from engine.stats.names import FeatureNames, NgramNames
from engine.stats.ngrams import NgramCounts, bigram_counts, ngram_blocks, token_rows, unigram_counts
from engine.stats.tokenize import tokenize_many

NULL_FEATURE = "<null>"
FULL_OVERLAP = "overlap=full"

KIND_NULL = "null"
KIND_UNIGRAM = "unigram"
KIND_BIGRAM = "bigram"
KIND_LENGTH = "length"
KIND_RATIO = "length_ratio"
KIND_OVERLAP = "overlap"
KIND_CATEGORICAL = "categorical"

#: Every feature kind, in column order.
KINDS = (KIND_NULL, KIND_UNIGRAM, KIND_BIGRAM, KIND_LENGTH, KIND_RATIO, KIND_OVERLAP, KIND_CATEGORICAL)

PAIR_FIELDS = ("premise", "hypothesis")
SINGLE_FIELDS = ("text",)

__all__ = ["FeatureConfig", "FeatureMatrix", "build_features", "bucket_labels"]


@dataclass(frozen=True)
class FeatureConfig:
    """Which feature families to build, and how to count them.

    Parameters
    ----------
    unigrams, bigrams
        Build n-gram features (per field for pair tasks).
    length
        Length bucket of the hypothesis (pair) or of the text (single).
    length_ratio, overlap
        Hypothesis/premise length ratio and lexical-overlap buckets plus ``overlap=full``
        (pair tasks only; ignored for single-text tasks).
    null
        The ``<null>`` feature present in every example (it catches label imbalance).
    per_document
        Count each feature at most once per example instead of every occurrence.
    min_count
        Drop features whose total count over the dataset is below this.
    ngram_fields
        Fields whose n-grams are built for pair tasks (``None``: premise and hypothesis).
    length_buckets
        Lower bounds of the hypothesis-length buckets (tokens), increasing, from 0.
    text_length_buckets
        Lower bounds of the text-length buckets of single-text tasks.
    ratio_buckets
        Lower bounds of the length-ratio buckets, increasing, from 0.
    overlap_buckets
        Lower bounds of the overlap buckets, increasing, from 0, below or at 1.
    """

    unigrams: bool = True
    bigrams: bool = True
    length: bool = True
    length_ratio: bool = True
    overlap: bool = True
    null: bool = True
    per_document: bool = False
    min_count: int = 1
    ngram_fields: tuple[str, ...] | None = None
    length_buckets: tuple[int, ...] = (0, 4, 6, 9, 13, 21)
    text_length_buckets: tuple[int, ...] = (0, 10, 20, 50, 100, 200, 500)
    ratio_buckets: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5)
    overlap_buckets: tuple[float, ...] = (0.0, 0.2, 0.4, 0.6, 0.8, 0.9)

    def __post_init__(self) -> None:
        if not any((self.unigrams, self.bigrams, self.length, self.length_ratio, self.overlap, self.null)):
            raise StatsConfigError("No feature family is selected.", "Choose at least one feature family.")
        if int(self.min_count) < 1:
            raise StatsConfigError(
                f"Minimum feature count {self.min_count} is below 1.", "Use a minimum count of 1 or more."
            )
        if self.ngram_fields is not None:
            bad = [f for f in self.ngram_fields if f not in PAIR_FIELDS]
            if bad or not self.ngram_fields:
                raise StatsConfigError(
                    f"Unknown n-gram fields {list(self.ngram_fields)}.",
                    "Use 'premise', 'hypothesis' or both.",
                )
        for name in ("length_buckets", "text_length_buckets", "ratio_buckets", "overlap_buckets"):
            edges = tuple(getattr(self, name))
            if not edges or edges[0] != 0 or any(b <= a for a, b in zip(edges, edges[1:])):
                raise StatsConfigError(
                    f"{name} {list(edges)} must start at 0 and increase.",
                    "Give increasing lower bounds starting at 0, e.g. 0, 4, 6, 9.",
                )
        if self.overlap_buckets[-1] > 1:
            raise StatsConfigError(
                f"Overlap buckets {list(self.overlap_buckets)} go above 1.", "Use bounds between 0 and 1."
            )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready settings (for dataset params and project configs)."""
        out = asdict(self)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FeatureConfig:
        """Settings from :meth:`to_dict` (unknown keys are an error)."""
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise StatsConfigError(f"Unknown feature settings {sorted(unknown)}.", f"Use only {sorted(known)}.")
        kwargs = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
        return cls(**kwargs)


# ---------------------------------------------------------------------------- building

_Block = tuple[FeatureBlock, Sequence[str], str]


def build_features(
    texts: Sequence[str | None] | None = None,
    *,
    premises: Sequence[str | None] | None = None,
    hypotheses: Sequence[str | None] | None = None,
    config: FeatureConfig | None = None,
    categorical: Mapping[str, Sequence[object]] | None = None,
    dedupe: bool = True,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> FeatureMatrix:
    """Build the feature matrix of a single-text or a premise/hypothesis dataset.

    Parameters
    ----------
    texts
        Texts of a single-text task; or leave ``None`` and give ``premises`` and ``hypotheses``.
    premises, hypotheses
        Fields of a pair task, aligned.
    config
        Feature families and counting mode (defaults: :class:`FeatureConfig`).
    categorical
        Extra per-example categorical columns, e.g. ``{"hyp_only_pred": predictions}``; each
        becomes features ``name=value`` (kind ``categorical``). ``None`` or ``""`` values give
        no feature for that example.
    dedupe
        Tokenize and count each distinct text once (default). Off only for benchmarks: the
        result is the same.
    progress, cancel
        Progress callback and cancel token.

    Returns
    -------
    FeatureMatrix
        Columns ordered by kind (:data:`KINDS`), then by field, then by first occurrence.
        ``.X`` is the (n_examples × n_features) CSR count matrix.
    """
    config = config or FeatureConfig()
    token = ensure_token(cancel)
    if texts is not None:
        if premises is not None or hypotheses is not None:
            raise ValueError("give either texts or premises and hypotheses, not both")
        fields_in: dict[str, Sequence[str | None]] = {"text": texts}
        pair = False
    else:
        if premises is None or hypotheses is None:
            raise ValueError("give texts, or both premises and hypotheses")
        if len(premises) != len(hypotheses):
            raise ValueError("premises and hypotheses differ in length")
        fields_in = {"premise": premises, "hypothesis": hypotheses}
        pair = True
    n = len(next(iter(fields_in.values())))
    for name, values in (categorical or {}).items():
        if len(values) != n:
            raise ValueError(f"categorical column {name!r} has {len(values)} values for {n} examples")

    all_texts: list[str | None] = []
    for values in fields_in.values():
        all_texts.extend(values)
    tok = tokenize_many(all_texts, dedupe=dedupe, progress=scaled(progress, 0.0, 0.5), cancel=token)
    del all_texts
    token.raise_if_cancelled()
    inverse = {f: tok.inverse[i * n : (i + 1) * n] for i, f in enumerate(fields_in)}
    rows = token_rows(tok)
    words = unigram_counts(tok, rows)
    m = config.min_count
    blocks: list[_Block] = []

    if config.null:
        blocks.append(_indicator_block(np.ones(n, bool), np.zeros(n, np.int64), [NULL_FEATURE], KIND_NULL, m))

    ngram_fields = (config.ngram_fields or PAIR_FIELDS) if pair else SINGLE_FIELDS
    progress(0.6, "Counting words")
    if config.unigrams:
        blocks.extend(_field_blocks(words, tok.vocab, None, inverse, ngram_fields, pair, KIND_UNIGRAM, config))
    progress(0.7, "Counting bigrams")
    token.raise_if_cancelled()
    if config.bigrams:
        bigrams = bigram_counts(tok, rows)
        first, second = np.divmod(bigrams.keys, max(len(tok.vocab), 1))
        blocks.extend(_field_blocks(bigrams, tok.vocab, (first, second), inverse, ngram_fields, pair, KIND_BIGRAM,
                                    config))
        del bigrams, first, second
    del rows
    progress(0.85, "Length and overlap features")
    token.raise_if_cancelled()
    lengths = tok.unique_lengths
    if pair:
        len_p = lengths[inverse["premise"]]
        len_h = lengths[inverse["hypothesis"]]
        if config.length:
            blocks.append(
                _bucket_block(len_h, None, config.length_buckets, "len@hypothesis", KIND_LENGTH, m, integer=True)
            )
        if config.length_ratio:
            has = len_p > 0
            ratio = np.divide(len_h, len_p, out=np.zeros(n), where=has)
            blocks.append(_bucket_block(ratio, has, config.ratio_buckets, "len_ratio", KIND_RATIO, m))
        if config.overlap:
            shared = _overlap_counts(words.to_csr(), inverse["premise"], inverse["hypothesis"])
            has = len_h > 0
            frac = np.divide(shared, len_h, out=np.zeros(n), where=has)
            blocks.append(_bucket_block(frac, has, config.overlap_buckets, "overlap", KIND_OVERLAP, m))
            full = has & (shared == len_h)
            blocks.append(_indicator_block(full, np.zeros(n, np.int64), [FULL_OVERLAP], KIND_OVERLAP, m))
    elif config.length:
        blocks.append(
            _bucket_block(
                lengths[inverse["text"]], None, config.text_length_buckets, "len", KIND_LENGTH, m, integer=True
            )
        )
    for name, values in (categorical or {}).items():
        blocks.append(_categorical_block(name, values, m))

    blocks = [b for b in blocks if b[0].n_columns]
    names = FeatureNames(b[1] for b in blocks)
    kinds = np.repeat(np.array([b[2] for b in blocks], dtype="<U12"), [len(b[1]) for b in blocks])
    progress(1.0, "Features built")
    return FeatureMatrix(tuple(b[0] for b in blocks), names, kinds, n)


# ---------------------------------------------------------------------------- helpers


def _unique_inverse(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(keys, return_inverse=True)`` for non-negative int64 keys, faster.

    When key and position fit together in 63 bits they are packed into one int64 and
    sorted with ``np.sort`` (SIMD, several times faster than ``argsort``); otherwise one
    ``argsort`` is used.
    """
    n = len(keys)
    position_bits = max(int(n - 1).bit_length(), 1)
    key_bits = max(int(keys.max()).bit_length(), 1) if n else 1
    if key_bits + position_bits <= 63:
        packed = np.sort((keys << position_bits) | np.arange(n, dtype=np.int64))
        order = packed & ((1 << position_bits) - 1)
        ordered = packed >> position_bits
    else:
        order = np.argsort(keys)
        ordered = keys[order]
    new = np.empty(n, dtype=bool)
    new[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    inverse = np.empty(n, dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    return ordered[new], inverse


def _compact(block: FeatureBlock, names: list[str], kind: str, min_count: int) -> _Block:
    """Keep the columns whose total count reaches ``min_count`` (and is not zero)."""
    keep = np.flatnonzero(block.column_totals() >= max(min_count, 1))
    return block.select_columns(keep), [names[j] for j in keep.tolist()], kind


def _field_blocks(
    counts: NgramCounts,
    vocab: list[str],
    bigram_words: tuple[np.ndarray, np.ndarray] | None,
    inverse: Mapping[str, np.ndarray],
    fields: Sequence[str],
    pair: bool,
    kind: str,
    config: FeatureConfig,
) -> list[_Block]:
    """Each field's n-gram block, named in the field's namespace (``word@field``).

    Unigram names are spelled at once; bigram names (millions on a large dataset) only
    when read (:class:`~engine.stats.names.NgramNames`).
    """
    found = ngram_blocks(counts, [inverse[f] for f in fields], per_document=config.per_document,
                         min_count=config.min_count)
    out: list[_Block] = []
    for field, (block, kept) in zip(fields, found):
        suffix = f"@{field}" if pair else ""
        if bigram_words is None:
            names: Sequence[str] = NgramNames(vocab, counts.keys[kept], None, suffix).tolist()
        else:
            names = NgramNames(vocab, bigram_words[0][kept], bigram_words[1][kept], suffix)
        out.append((block, names, kind))
    return out


def _indicator_block(
    has: np.ndarray, codes: np.ndarray, names: list[str], kind: str, min_count: int
) -> _Block:
    """Example ``i`` holds column ``codes[i]`` once where ``has[i]`` (an identity over the columns
    plus one empty row for the examples without the feature)."""
    k = len(names)
    indptr = np.append(np.arange(k + 1), k)
    matrix = sp.csr_array((np.ones(k, COUNT_DTYPE), np.arange(k, dtype=np.int32), indptr), shape=(k + 1, k))
    inverse = np.where(has, codes, k).astype(np.int64)
    return _compact(FeatureBlock(matrix, inverse), names, kind, min_count)


def bucket_labels(edges: Sequence[float], *, integer: bool = False) -> list[str]:
    """Names of the buckets whose lower bounds are ``edges`` (``0-3``, …, ``21+``)."""
    labels = []
    for i, low in enumerate(edges):
        if i + 1 == len(edges):
            labels.append(f"{low:g}+")
        elif integer:
            high = edges[i + 1] - 1
            labels.append(f"{low:g}" if high == low else f"{low:g}-{high:g}")
        else:
            labels.append(f"{low:g}-{edges[i + 1]:g}")
    return labels


def _bucket_block(
    values: np.ndarray,
    has: np.ndarray | None,
    edges: Sequence[float],
    prefix: str,
    kind: str,
    min_count: int,
    *,
    integer: bool = False,
) -> _Block:
    if has is None:
        has = np.ones(len(values), bool)
    codes = np.maximum(np.searchsorted(np.asarray(edges, dtype=float), values, side="right") - 1, 0)
    names = [f"{prefix}={label}" for label in bucket_labels(edges, integer=integer)]
    return _indicator_block(has, codes, names, kind, min_count)


def _overlap_counts(words: sp.csr_array, inv_p: np.ndarray, inv_h: np.ndarray) -> np.ndarray:
    """Hypothesis tokens (occurrences) whose word occurs in the premise, per example.

    Computed once per distinct (premise, hypothesis) pair as a row-wise dot product of
    the hypothesis counts with the premise's binary word vector.
    """
    n_unique = words.shape[0]
    pair_keys, pair_of_example = _unique_inverse(inv_p * n_unique + inv_h)
    p_rows, h_rows = np.divmod(pair_keys, n_unique)
    premise_has = sp.csr_array(words[p_rows])
    premise_has.data[:] = 1
    shared = np.asarray(sp.csr_array(words[h_rows]).multiply(premise_has).sum(axis=1)).ravel()
    return shared.astype(np.int64)[pair_of_example]


def _categorical_block(name: str, values: Sequence[object], min_count: int) -> _Block:
    text = np.array(["" if v is None else str(v) for v in values], dtype=object)
    has = text != ""
    levels, codes_present = np.unique(text[has].astype(str), return_inverse=True)
    codes = np.zeros(len(text), np.int64)
    codes[has] = codes_present
    names = [f"{name}={level}" for level in levels.tolist()]
    return _indicator_block(has, codes, names, KIND_CATEGORICAL, min_count)
