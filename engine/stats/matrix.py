"""The examples × features count matrix, stored factored by distinct rows.

Datasets repeat a lot: an NLI premise is reused for several hypotheses, a length bucket
is shared by thousands of examples. A :class:`FeatureMatrix` therefore keeps each feature
family as a :class:`FeatureBlock`: a small sparse matrix over *distinct* rows plus the
distinct row of every example. Mathematically block ``b`` of the full matrix is
``G_b @ M_b`` with ``G_b`` the one-hot (examples × distinct rows) matrix of ``inverse``.

* :attr:`FeatureMatrix.X` assembles the full ``scipy.sparse.csr_array`` (n_examples ×
  n_features) on first use, in row chunks, with no Python loop per row or feature.
* :meth:`FeatureMatrix.label_counts` computes ``X.T @ Y`` (``Y`` the one-hot labels) as
  ``Σ_b M_b.T @ (G_b.T @ Y)`` without building ``X``: ``G_b.T @ Y`` is one ``bincount``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from engine.stats.names import FeatureNames

COUNT_DTYPE = np.int32
_CHUNK_ROWS = 32_768  # rows assembled at a time (keeps temporaries small)


@dataclass(frozen=True, eq=False)
class FeatureBlock:
    """Some feature columns over distinct rows.

    Attributes
    ----------
    matrix
        ``csr_array`` or ``csc_array`` (distinct rows × source columns) of int32 counts,
        sorted indices, no duplicates. N-gram blocks are CSC, the order they are counted in,
        and the blocks of the premise and the hypothesis share one matrix of all distinct
        texts; the statistics only need ``matrix.T @ …`` (as fast either way), and
        :attr:`csr` gives the row-major form (for assembling ``X``) when it is first needed.
    inverse
        Distinct row of each example (int64).
    columns
        The block's columns among ``matrix``'s, increasing (``None``: all of them).
    """

    matrix: sp.csr_array | sp.csc_array
    inverse: np.ndarray
    columns: np.ndarray | None = None

    @property
    def n_columns(self) -> int:
        return int(self.matrix.shape[1]) if self.columns is None else len(self.columns)

    @functools.cached_property
    def csr(self) -> sp.csr_array:
        """The block's columns as a ``csr_array`` with sorted indices (built once)."""
        matrix = self.matrix
        if self.columns is not None:
            matrix = matrix[:, self.columns]  # a gather of whole columns when CSC
        if matrix.format == "csr":
            matrix = sp.csr_array(matrix)
            matrix.sort_indices()
            return matrix
        return matrix.tocsr()  # a counting sort: sorted indices, linear time

    def with_inverse(self, inverse: np.ndarray) -> FeatureBlock:
        """The same columns for other examples (sharing the matrix and its CSR form)."""
        block = FeatureBlock(self.matrix, inverse, self.columns)
        if "csr" in self.__dict__:
            block.__dict__["csr"] = self.__dict__["csr"]
        return block

    def source_column(self, j: int) -> int:
        """Column of ``matrix`` holding the block's column ``j``."""
        return int(j) if self.columns is None else int(self.columns[j])

    def row_lengths(self) -> np.ndarray:
        """Stored entries of each example in this block."""
        if self.columns is None and self.matrix.format == "csc":
            per_row = np.bincount(self.matrix.indices, minlength=self.matrix.shape[0])
        else:
            per_row = np.diff(self.csr.indptr)
        return per_row[self.inverse]

    def column_totals(self) -> np.ndarray:
        """Sum of each column over the examples (int64)."""
        return transposed_product(self, np.bincount(self.inverse, minlength=self.matrix.shape[0]))

    def select_columns(self, keep: np.ndarray) -> FeatureBlock:
        """The block restricted to its columns ``keep`` (increasing; nothing is copied)."""
        if len(keep) == self.n_columns:
            return self
        keep = np.asarray(keep, dtype=np.int64)
        return FeatureBlock(self.matrix, self.inverse, keep if self.columns is None else self.columns[keep])

    def per_row_labels(self, y: np.ndarray, n_labels: int) -> np.ndarray:
        """(distinct rows × labels) number of examples of each label in each row: ``G.T @ Y``."""
        n_rows = self.matrix.shape[0]
        return np.bincount(self.inverse * n_labels + y, minlength=n_rows * n_labels).reshape(n_rows, n_labels)

    def label_counts(self, y: np.ndarray, n_labels: int) -> np.ndarray:
        """(columns × labels) counts: ``M.T @ (G.T @ Y)``."""
        return transposed_product(self, self.per_row_labels(y, n_labels))


def transposed_product(block: FeatureBlock, vectors: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``block.matrix.T @ vectors`` on the block's columns, as int64 (written to ``out`` if given).

    ``vectors`` (distinct rows × k, or distinct rows) are non-negative integers whose
    columns sum to at most the block's number of examples. The product is computed in int32
    when no sum can reach 2**31 (each is at most ``max count × n examples``): scipy would
    otherwise copy the int32 counts to int64 first.
    """
    data = block.matrix.data
    bound = (int(data.max()) if data.size else 0) * max(len(block.inverse), 1)
    dtype = np.int32 if bound < np.iinfo(np.int32).max and data.dtype == np.int32 else np.int64
    full = np.asarray(block.matrix.T @ vectors.astype(dtype, copy=False))
    part = full if block.columns is None else full[block.columns]
    if out is None:
        return part.astype(np.int64)
    out[...] = part
    return out


@dataclass(frozen=True, eq=False)
class FeatureMatrix:
    """Examples × features counts with a name and a kind per column.

    Attributes
    ----------
    blocks
        Column blocks, left to right.
    names
        Feature name of each column (:class:`~engine.stats.names.FeatureNames`: a read-only
        sequence of ``str`` that spells large n-gram families only when read).
    kinds
        Feature kind of each column.
    n_examples
        Number of examples (rows).
    """

    blocks: tuple[FeatureBlock, ...]
    names: FeatureNames
    kinds: np.ndarray
    n_examples: int

    def __post_init__(self) -> None:
        if sum(b.n_columns for b in self.blocks) != len(self.names) or len(self.names) != len(self.kinds):
            raise ValueError("blocks, names and kinds disagree on the number of features")
        if any(len(b.inverse) != self.n_examples for b in self.blocks):
            raise ValueError("every block needs one distinct-row index per example")

    @classmethod
    def from_csr(cls, X: sp.spmatrix | sp.sparray, names: Sequence[str], kinds: Sequence[str]) -> FeatureMatrix:
        """Wrap an existing (examples × features) sparse matrix."""
        X = sp.csr_array(X, dtype=COUNT_DTYPE)
        X.sum_duplicates()
        n = int(X.shape[0])
        return cls((FeatureBlock(X, np.arange(n, dtype=np.int64)),), FeatureNames.of(names), np.asarray(kinds), n)

    @property
    def n_features(self) -> int:
        return len(self.names)

    @functools.cached_property
    def X(self) -> sp.csr_array:
        """The full (n_examples × n_features) ``csr_array`` of int32 counts (built once)."""
        return assemble(self.blocks, self.n_examples)

    @functools.cached_property
    def _column(self) -> dict[str, int]:
        return {name: j for j, name in enumerate(self.names)}

    def column(self, name: str) -> int:
        """Column of feature ``name`` (``KeyError`` if absent)."""
        return self._column[name]

    def column_totals(self) -> np.ndarray:
        """``n`` of every feature: its column sum."""
        if not self.blocks:
            return np.zeros(0, np.int64)
        return np.concatenate([b.column_totals() for b in self.blocks])

    def label_counts(self, y: np.ndarray, n_labels: int) -> np.ndarray:
        """Per-label counts ``X.T @ Y`` (n_features × n_labels, int64), without building ``X``."""
        y = np.asarray(y, dtype=np.int64)
        out = np.empty((self.n_features, n_labels), np.int64)
        start = 0
        per_row: dict[int, np.ndarray] = {}  # G.T @ Y of each distinct inverse array (fields share them)
        for block in self.blocks:
            key = id(block.inverse)
            if key not in per_row:
                per_row[key] = block.per_row_labels(y, n_labels)
            transposed_product(block, per_row[key], out[start : start + block.n_columns])
            start += block.n_columns
        return out

    def rows(self, index: slice | Sequence[int] | np.ndarray) -> FeatureMatrix:
        """The same features over a subset of the examples (nothing is copied but indices)."""
        picked = np.arange(self.n_examples)[index]
        blocks = tuple(b.with_inverse(b.inverse[picked]) for b in self.blocks)
        return FeatureMatrix(blocks, self.names, self.kinds, len(picked))

    def features_of(self, row: int) -> list[str]:
        """Names of the features example ``row`` holds, in column order."""
        out: list[str] = []
        offset = 0
        for b in self.blocks:
            u = b.inverse[row]
            cols = b.csr.indices[b.csr.indptr[u] : b.csr.indptr[u + 1]]
            out.extend(self.names.take(cols + offset))
            offset += b.n_columns
        return out

    def examples_with(self, name: str) -> np.ndarray:
        """Rows (ascending) of the examples holding feature ``name``."""
        col = self.column(name)
        offset = 0
        for b in self.blocks:
            if col < offset + b.n_columns:
                holders = sp.csc_array(b.matrix[:, [b.source_column(col - offset)]]).indices
                return np.flatnonzero(np.isin(b.inverse, holders))
            offset += b.n_columns
        raise KeyError(name)


def assemble(blocks: Sequence[FeatureBlock], n: int) -> sp.csr_array:
    """Build the full CSR matrix of ``blocks`` side by side.

    Every entry's source and destination position are computed with ``np.repeat`` over a
    chunk of rows, then copied with one gather/scatter per block and chunk.
    """
    n_columns = sum(b.n_columns for b in blocks)
    lengths = [b.row_lengths() for b in blocks]
    indptr = np.zeros(n + 1, dtype=np.int64)
    if lengths:
        np.cumsum(np.sum(lengths, axis=0), out=indptr[1:])
    nnz = int(indptr[-1])
    indices = np.empty(nnz, dtype=np.int32)
    data = np.empty(nnz, dtype=COUNT_DTYPE)
    for r0 in range(0, n, _CHUNK_ROWS):
        r1 = min(r0 + _CHUNK_ROWS, n)
        filled = indptr[r0:r1].copy()  # next free slot of each row in the chunk
        offset = 0
        for block, block_lengths in zip(blocks, lengths):
            lens = block_lengths[r0:r1]
            k = int(lens.sum())
            if k:
                first = np.cumsum(lens) - lens
                within = np.arange(k, dtype=np.int64) - np.repeat(first, lens)
                matrix = block.csr
                src = np.repeat(matrix.indptr[block.inverse[r0:r1]], lens) + within
                dst = np.repeat(filled, lens) + within
                indices[dst] = matrix.indices[src] + offset
                data[dst] = matrix.data[src]
            filled += lens
            offset += block.n_columns
    X = sp.csr_array((data, indices, indptr), shape=(n, n_columns))
    X.has_sorted_indices = all(b.csr.has_sorted_indices for b in blocks)
    return X
