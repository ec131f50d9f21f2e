"""Counting unigrams and bigrams of distinct texts with sorts of packed integers.

Every occurrence of an n-gram is one integer key: its word id, or ``first * V + second``
for a bigram over a vocabulary of ``V`` words. Packing ``(key, row)`` into one int64 and
sorting it once (``np.sort``, SIMD) groups the occurrences by n-gram and, within an
n-gram, by text: equal neighbours are counted, a change of key starts a new column. The
result, :class:`NgramCounts`, is a column-major (CSC) count matrix whose columns are in
key order. :func:`ngram_blocks` gives each field a
:class:`~engine.stats.matrix.FeatureBlock` that views the columns it keeps (those whose
total over the field's examples reaches the minimum count); nothing loops over texts or
n-grams in Python, and nothing is copied per field.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from engine.stats.matrix import COUNT_DTYPE, FeatureBlock
from engine.stats.tokenize import TokenizedTexts

__all__ = ["NgramCounts", "bigram_counts", "count_keys", "ngram_blocks", "token_rows", "unigram_counts"]


@dataclass(frozen=True, eq=False)
class NgramCounts:
    """Distinct texts × n-grams counts, column-major.

    Attributes
    ----------
    keys
        N-gram key of each column, increasing (int64).
    indptr
        Column ``c`` holds entries ``indptr[c]:indptr[c + 1]`` (int64, length ``n_columns + 1``).
    rows
        Text (distinct row) of each entry, increasing within a column (int32).
    counts
        Occurrences of the column's n-gram in the entry's text (int32, ≥ 1).
    n_rows
        Number of distinct texts.
    """

    keys: np.ndarray
    indptr: np.ndarray
    rows: np.ndarray
    counts: np.ndarray
    n_rows: int

    @property
    def n_columns(self) -> int:
        return len(self.keys)

    def to_csr(self) -> sp.csr_array:
        """The (texts × n-grams) CSR matrix with sorted indices."""
        return _csc(self.counts, self.rows, self.indptr, (self.n_rows, self.n_columns)).tocsr()


def _csc(data: np.ndarray, rows: np.ndarray, indptr: np.ndarray, shape: tuple[int, int]) -> sp.csc_array:
    index_dtype = np.int32 if max(len(rows), *shape) < np.iinfo(np.int32).max else np.int64
    matrix = sp.csc_array(
        (data, rows.astype(index_dtype, copy=False), indptr.astype(index_dtype, copy=False)), shape=shape
    )
    matrix.has_sorted_indices = True
    return matrix


def _runs(values: np.ndarray) -> np.ndarray:
    """Start of every run of equal neighbours in ``values``."""
    change = np.empty(len(values), dtype=bool)
    change[:1] = True
    np.not_equal(values[1:], values[:-1], out=change[1:])
    return np.flatnonzero(change)


def count_keys(keys: np.ndarray, rows: np.ndarray, n_rows: int) -> NgramCounts:
    """Count the occurrences of each (row, key) pair.

    Parameters
    ----------
    keys
        Non-negative n-gram key of each occurrence.
    rows
        Row (text) of each occurrence, ``0 <= rows < n_rows``.
    n_rows
        Number of rows.

    Returns
    -------
    NgramCounts
    """
    if len(keys) == 0:
        return _empty_counts(n_rows)
    row_bits = _row_bits(n_rows)
    if max(int(keys.max()).bit_length(), 1) + row_bits <= 63:
        packed = keys.astype(np.int64)  # a new array: packed in place
        packed <<= row_bits
        packed |= rows
        return _count_packed(packed, row_bits, n_rows)
    # keys too wide to pack with the row: sort the pairs
    order = np.lexsort((rows, keys))
    sorted_keys, sorted_rows = keys[order].astype(np.int64), rows[order]
    del order
    change = np.empty(len(keys), dtype=bool)
    change[:1] = True
    change[1:] = (sorted_keys[1:] != sorted_keys[:-1]) | (sorted_rows[1:] != sorted_rows[:-1])
    start = np.flatnonzero(change)
    return _counts_of(sorted_keys[start], sorted_rows[start].astype(np.int32), start, len(keys), n_rows)


def _empty_counts(n_rows: int) -> NgramCounts:
    empty = np.zeros(0, np.int64)
    return NgramCounts(empty, np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, COUNT_DTYPE), n_rows)


def _row_bits(n_rows: int) -> int:
    return max(int(n_rows - 1).bit_length(), 1)


def _count_packed(packed: np.ndarray, row_bits: int, n_rows: int) -> NgramCounts:
    """Count ``(key << row_bits) | row`` int64 values (sorted here, in place)."""
    n = len(packed)
    packed.sort()
    start = _runs(packed)
    distinct = packed[start]
    del packed
    entry_rows = np.empty(len(distinct), np.int32)
    np.bitwise_and(distinct, (1 << row_bits) - 1, out=entry_rows, casting="unsafe")
    distinct >>= row_bits  # now the keys
    return _counts_of(distinct, entry_rows, start, n, n_rows)


def _counts_of(entry_keys: np.ndarray, entry_rows: np.ndarray, start: np.ndarray, n: int, n_rows: int) -> NgramCounts:
    """Counts from the sorted distinct (key, row) entries starting at ``start`` of ``n`` occurrences."""
    counts = np.empty(len(start), COUNT_DTYPE)
    np.subtract(start[1:], start[:-1], out=counts[:-1], casting="unsafe")
    counts[-1] = n - start[-1]
    column_start = _runs(entry_keys)
    indptr = np.empty(len(column_start) + 1, np.int64)
    indptr[:-1] = column_start
    indptr[-1] = len(entry_keys)
    return NgramCounts(entry_keys[column_start], indptr, entry_rows, counts, n_rows)


def token_rows(tok: TokenizedTexts) -> np.ndarray:
    """Distinct row of every token of ``tok`` (int32)."""
    return np.repeat(np.arange(tok.n_unique, dtype=np.int32), tok.unique_lengths)


def unigram_counts(tok: TokenizedTexts, rows: np.ndarray) -> NgramCounts:
    """Word counts of the distinct texts (column keys are word ids)."""
    return count_keys(tok.ids, rows, tok.n_unique)


def bigram_counts(tok: TokenizedTexts, rows: np.ndarray) -> NgramCounts:
    """Counts of consecutive word pairs within each distinct text (keys ``first * V + second``)."""
    same = rows[:-1] == rows[1:]
    pair_rows = rows[:-1][same]
    if not len(pair_rows):
        return _empty_counts(tok.n_unique)
    n_words = len(tok.vocab)
    row_bits = _row_bits(tok.n_unique)
    packed = tok.ids[:-1][same].astype(np.int64)
    packed *= n_words
    packed += tok.ids[1:][same]
    if max(int(n_words * n_words - 1).bit_length(), 1) + row_bits > 63:
        return count_keys(packed, pair_rows, tok.n_unique)
    packed <<= row_bits
    packed |= pair_rows
    del same, pair_rows
    return _count_packed(packed, row_bits, tok.n_unique)


def ngram_blocks(
    counts: NgramCounts, inverses: list[np.ndarray], *, per_document: bool, min_count: int
) -> list[tuple[FeatureBlock, np.ndarray]]:
    """Each field's block: the n-grams whose total over the field's examples reaches ``min_count``.

    Parameters
    ----------
    counts
        N-gram counts of all distinct texts.
    inverses
        For each field, the distinct row of each of its examples.
    per_document
        Count each n-gram at most once per example.
    min_count
        Minimum total count (at least 1: n-grams a field never holds are dropped).

    Returns
    -------
    list of (FeatureBlock, numpy.ndarray)
        Per field: its block (a column view of one CSC matrix of all distinct texts, shared by
        the fields, so nothing is copied) and the columns of ``counts`` it keeps, increasing.
    """
    values = np.ones(len(counts.counts), COUNT_DTYPE) if per_document else counts.counts
    matrix = _csc(values, counts.rows, counts.indptr, (counts.n_rows, counts.n_columns))
    out = []
    for inverse in inverses:
        block = FeatureBlock(matrix, inverse)
        kept = np.flatnonzero(block.column_totals() >= max(int(min_count), 1))
        out.append((block.select_columns(kept), kept))
    return out
