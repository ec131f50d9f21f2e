"""N-gram counting by packed sorts: counts, column order, the wide-key path and field blocks."""

from __future__ import annotations

from collections import Counter

import numpy as np

from engine.stats.ngrams import count_keys, ngram_blocks


def _as_counter(counts) -> Counter:
    out = Counter()
    for c in range(counts.n_columns):
        for e in range(counts.indptr[c], counts.indptr[c + 1]):
            out[(int(counts.rows[e]), int(counts.keys[c]))] += int(counts.counts[e])
    return out


def test_count_keys_matches_counter_for_packed_and_wide_keys():
    rng = np.random.default_rng(0)
    rows = np.sort(rng.integers(0, 50, 2000)).astype(np.int32)
    for keys in (rng.integers(0, 30, 2000), rng.integers(0, 30, 2000) + (1 << 60)):
        counts = count_keys(keys, rows, 50)
        assert _as_counter(counts) == Counter(zip(rows.tolist(), keys.tolist()))
        assert np.all(np.diff(counts.keys) > 0)  # one column per key, in key order
        for c in range(counts.n_columns):  # rows increase within a column
            assert np.all(np.diff(counts.rows[counts.indptr[c] : counts.indptr[c + 1]]) > 0)


def test_ngram_blocks_keep_the_columns_of_each_field():
    # rows: 0 "x x y", 1 "z", 2 "y"; field A uses rows 0, 0 and 2, field B row 1
    keys = np.array([7, 7, 8, 9, 8])
    rows = np.array([0, 0, 0, 1, 2], np.int32)
    counts = count_keys(keys, rows, 3)
    (a, kept_a), (b, kept_b) = ngram_blocks(counts, [np.array([0, 0, 2]), np.array([1])], per_document=False,
                                            min_count=1)
    assert counts.keys[kept_a].tolist() == [7, 8]  # key 9 only occurs in row 1, which field A never uses
    assert counts.keys[kept_b].tolist() == [9]
    assert a.matrix is b.matrix  # column views of one matrix
    assert a.column_totals().tolist() == [4, 3]
    assert a.csr.toarray().tolist() == [[2, 1], [0, 0], [0, 1]]
    assert a.row_lengths().tolist() == [2, 2, 1]
    ((a, kept_a),) = ngram_blocks(counts, [np.array([0, 0, 2])], per_document=True, min_count=3)
    assert counts.keys[kept_a].tolist() == [8]
    assert a.label_counts(np.array([0, 1, 1]), 2).tolist() == [[1, 2]]
