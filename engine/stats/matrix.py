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
        ``csr_array`` or ``csc_array`` (distinct rows × columns) of int32 counts, sorted
        indices, no duplicates. N-gram blocks are CSC, the order they are counted in; the
        statistics only need ``matrix.T @ …``, which is as fast either way, and :attr:`csr`
        gives the row-major form (for assembling ``X``) when it is first needed.
    inverse
        Distinct row of each example (int64).
    """

    matrix: sp.csr_array | sp.csc_array
    inverse: np.ndarray

    @property
    def n_columns(self) -> int:
        return int(self.matrix.shape[1])

    @functools.cached_property
    def csr(self) -> sp.csr_array:
        """``matrix`` as a ``csr_array`` with sorted indices (converted once)."""
        if self.matrix.format == "csr":
            return self.matrix
        return self.matrix.tocsr()  # a counting sort: sorted indices, linear time

    def with_inverse(self, inverse: np.ndarray) -> FeatureBlock:
        """The same columns for other examples (sharing the matrix and its CSR form)."""
        block = FeatureBlock(self.matrix, inverse)
        if "csr" in self.__dict__:
            block.__dict__["csr"] = self.__dict__["csr"]
        return block

    def row_lengths(self) -> np.ndarray:
        """Stored entries of each example in this block."""
        if self.matrix.format == "csr":
            per_row = np.diff(self.matrix.indptr)
        else:
            per_row = np.bincount(self.matrix.indices, minlength=self.matrix.shape[0])
        return per_row[self.inverse]

    def _transposed_product(self, vectors: np.ndarray) -> np.ndarray:
        """``matrix.T @ vectors`` (int64) for non-negative integer ``vectors`` summing to ≤ n examples.

        Computed in int32 when no sum can reach 2**31 (every entry of the product is at most
        ``max count × n examples``): scipy would otherwise copy the int32 counts to int64 first.
        """
        data = self.matrix.data
        bound = (int(data.max()) if data.size else 0) * max(len(self.inverse), 1)
        dtype = np.int32 if bound < np.iinfo(np.int32).max and data.dtype == np.int32 else np.int64
        return np.asarray(self.matrix.T @ vectors.astype(dtype, copy=False), dtype=np.int64)

    def column_totals(self) -> np.ndarray:
        """Sum of each column over the examples (int64)."""
        return self._transposed_product(np.bincount(self.inverse, minlength=self.matrix.shape[0]))

    def select_columns(self, keep: np.ndarray) -> FeatureBlock:
        """The block restricted to columns ``keep``."""
        if len(keep) == self.n_columns:
            return self
        matrix = self.matrix[:, keep]
        matrix = sp.csc_array(matrix) if self.matrix.format == "csc" else sp.csr_array(matrix)
        matrix.sort_indices()
        return FeatureBlock(matrix, self.inverse)

    def label_counts(self, y: np.ndarray, n_labels: int) -> np.ndarray:
        """(columns × labels) counts: ``M.T @ (G.T @ Y)``."""
        n_rows = self.matrix.shape[0]
        per_row = np.bincount(self.inverse * n_labels + y, minlength=n_rows * n_labels)
        return self._transposed_product(per_row.reshape(n_rows, n_labels))


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
        if not self.blocks:
            return np.zeros((0, n_labels), np.int64)
        return np.concatenate([b.label_counts(y, n_labels) for b in self.blocks])

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
                holders = sp.csc_array(b.matrix[:, [col - offset]]).indices
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
