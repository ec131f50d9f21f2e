"""The embedding matrix and the FAISS indexes: incremental, persisted, reopened; IVF/HNSW against exact search."""

from __future__ import annotations

import numpy as np
import pytest

from engine.errors import Cancelled
from engine.progress import CancelToken
from engine.retrieval.corpus import get_corpus, import_corpus
from engine.retrieval.encoders import make_encoder
from engine.retrieval.errors import IndexKindError, IndexNotBuiltError, IndexSettingsError
from engine.retrieval.index import build_index, make_kind, open_index
from engine.retrieval.vectors import build_vectors, open_vectors
from tests.engine.retrieval.conftest import CORPUS_DOCS, IMDB_TEST, need_data, need_faiss

KEY = "minilm-l6-len64"


def recall_at(vectors: np.ndarray, kind: str, params: dict, k: int = 10, n_queries: int = 60) -> float:
    """Share of the exact top-k that the index's top-k finds, queries = corpus sentences."""
    exact = make_kind("flat", len(vectors)).build(vectors)
    index = make_kind(kind, len(vectors), params).build(vectors, seed=1)
    queries = vectors[np.random.default_rng(0).choice(len(vectors), n_queries, replace=False)]
    _, truth = exact.search(queries, k)
    _, found = index.search(queries, k)
    return float(np.mean([len(set(t) & set(f)) / k for t, f in zip(truth, found, strict=True)]))


def test_vectors_are_unit_rows_of_real_sentences(imdb_vectors):
    assert imdb_vectors.shape[1] == 384 and 250 <= imdb_vectors.shape[0] <= 400
    assert np.allclose(np.linalg.norm(imdb_vectors, axis=1), 1.0, atol=1e-4)
    # real sentence embeddings are far from uniform: a sentence's nearest other sentence is close
    sims = imdb_vectors @ imdb_vectors.T
    np.fill_diagonal(sims, -1)
    assert np.median(sims.max(axis=1)) > 0.45


def test_ivf_matches_exact_within_recall(imdb_vectors):
    need_faiss()
    full = recall_at(imdb_vectors, "ivf", {"nlist": 16, "nprobe": 16})
    assert full == pytest.approx(1.0)                      # every list probed: exact
    probed = recall_at(imdb_vectors, "ivf", {"nlist": 16, "nprobe": 6})
    assert probed >= 0.85
    assert recall_at(imdb_vectors, "ivf", {"nlist": 16, "nprobe": 1}) < probed  # fewer lists, lower recall
    assert recall_at(imdb_vectors, "hnsw", {"m": 16, "ef_search": 64}) >= 0.95


def test_index_persisted_and_reopened_without_rebuilding(labelled_project):
    need_faiss()
    encoder = make_encoder("minilm-l6")
    flat = open_index(labelled_project, "imdb", KEY, kind="flat")
    assert not flat.built and flat.rows == get_corpus(labelled_project, "imdb").sentence_count
    again = build_index(labelled_project, "imdb", encoder, kind="flat")
    assert not again.built                                   # current: read from disk
    ivf = build_index(labelled_project, "imdb", encoder, kind="ivf", params={"nlist": 8, "nprobe": 3})
    assert ivf.built and ivf.search == {"nprobe": 3}
    reopened = open_index(labelled_project, "imdb", KEY, kind="ivf")
    assert not reopened.built and reopened.key == ivf.key and reopened.search == {"nprobe": 3}
    q = open_vectors(labelled_project, "imdb", KEY).vectors[:5]
    assert np.array_equal(reopened.query(q, 5)[1], ivf.query(q, 5)[1])
    with pytest.raises(IndexNotBuiltError):
        open_index(labelled_project, "imdb", KEY, kind="hnsw")


def test_auto_builds_hnsw_above_the_exact_limit_and_keeps_an_earlier_auto_ivf(labelled_project, monkeypatch):
    import engine.retrieval.index as index_module

    need_faiss()
    encoder = make_encoder("minilm-l6")
    monkeypatch.setattr(index_module, "AUTO_EXACT_MAX", 50)   # the fixture corpus counts as large
    # an IVF index as an earlier version's auto built it: reopened under auto, not rebuilt as HNSW
    ivf = build_index(labelled_project, "imdb", encoder, kind="ivf", params={"nlist": 8, "nprobe": 3})
    assert open_index(labelled_project, "imdb", KEY).kind.name == "ivf"
    again = build_index(labelled_project, "imdb", encoder)
    assert not again.built and again.kind.name == "ivf" and again.key == ivf.key
    assert open_index(labelled_project, "imdb", KEY, params={"nprobe": 8}).search == {"nprobe": 8}
    assert not build_index(labelled_project, "imdb", encoder, params={"nprobe": 8}).built
    # without it, auto builds HNSW with the benchmark's search setting
    ivf.path.unlink()
    hnsw = build_index(labelled_project, "imdb", encoder)
    assert hnsw.built and hnsw.kind.name == "hnsw" and hnsw.search == {"ef_search": 256}
    reopened = open_index(labelled_project, "imdb", KEY)
    assert not reopened.built and reopened.kind.name == "hnsw"
    q = open_vectors(labelled_project, "imdb", KEY).vectors[:5]
    assert np.array_equal(reopened.query(q, 5)[1], hnsw.query(q, 5)[1])
    monkeypatch.setattr(index_module, "AUTO_EXACT_MAX", 10_000)  # small again: exact
    assert build_index(labelled_project, "imdb", encoder).kind.name == "flat"
    monkeypatch.setattr(index_module, "AUTO_EXACT_MAX", 50)
    with pytest.raises(IndexSettingsError, match="no setting nprobe"):   # no IVF index left to take it
        build_index(labelled_project, "imdb", encoder, params={"nprobe": 8})


def test_growing_corpus_encodes_only_new_sentences_and_rebuilds(project, tmp_path):
    need_data()
    need_faiss()
    encoder = make_encoder("minilm-l6")
    import_corpus(project, "g", IMDB_TEST, limit_docs=3)
    first = build_index(project, "g", encoder, kind="flat")
    rows = first.rows
    added = import_corpus(project, "g", IMDB_TEST, limit_docs=5).sentences_added
    assert added > 0
    with pytest.raises(IndexNotBuiltError):                 # the stored index is older than the corpus
        open_index(project, "g", encoder.key, kind="flat")
    token = CancelToken()
    with pytest.raises(Cancelled):
        build_vectors(project, "g", encoder, chunk=4, progress=lambda f, m="": token.cancel(), cancel=token)
    grown = build_vectors(project, "g", encoder, chunk=4)
    assert 0 < grown.encoded_now < added                    # the cancelled build kept its first chunk
    assert grown.rows == rows + added
    fresh = encoder.encode([r[0] for r in project.db.execute(
        "SELECT text FROM corpus_sentences ORDER BY position").fetchall()])
    assert np.allclose(grown.vectors, fresh, atol=1e-5)     # rows kept across growing and resuming
    rebuilt = build_index(project, "g", encoder, kind="flat")
    assert rebuilt.built and rebuilt.rows == rows + added


def test_named_errors_for_bad_settings(labelled_project):
    need_faiss()
    encoder = make_encoder("minilm-l6")
    with pytest.raises(IndexKindError) as err:
        build_index(labelled_project, "imdb", encoder, kind="annoy")
    assert err.value.code == "CB959" and "flat" in err.value.hint
    with pytest.raises(IndexSettingsError):
        build_index(labelled_project, "imdb", encoder, kind="ivf", params={"nlist": 10_000})
    with pytest.raises(IndexSettingsError):
        build_index(labelled_project, "imdb", encoder, kind="flat", params={"nprobe": 4})
    assert CORPUS_DOCS > 0


def test_ivfpq_rerank_recovers_exact_results_from_compressed_codes(labelled_project):
    """IVF-PQ keeps 4-bit codes (small enough to train on ~300 sentences); re-ranking its candidates exactly
    against the memory-mapped embeddings brings recall@10 back near exact search, persisted and reopened."""
    need_faiss()
    encoder = make_encoder("minilm-l6")
    vectors = open_vectors(labelled_project, "imdb", KEY).vectors
    queries = np.asarray(vectors[np.random.default_rng(0).choice(len(vectors), 60, replace=False)])
    exact = build_index(labelled_project, "imdb", encoder, kind="flat")
    truth = exact.query(queries, 10)[1]
    params = {"nlist": 4, "nprobe": 4, "codes": 48, "nbits": 4}
    pq = build_index(labelled_project, "imdb", encoder, kind="ivfpq", params={**params, "rerank": 1})

    def recall(index) -> float:
        found = index.query(queries, 10)[1]
        return float(np.mean([len(set(t) & set(f)) / 10 for t, f in zip(truth, found, strict=True)]))

    approximate = recall(pq)
    pq.set_search(rerank=8)
    reranked = recall(pq)
    assert reranked >= 0.95 and reranked > approximate, (approximate, reranked)
    scores, ids = pq.query(queries[:3], 5)
    assert np.allclose(scores, exact.query(queries[:3], 5)[0], atol=1e-5)   # exact scores after re-ranking
    reopened = open_index(labelled_project, "imdb", KEY, kind="ivfpq", params={"rerank": 8})
    assert not reopened.built and reopened.search == {"nprobe": 4, "rerank": 8}
    assert np.array_equal(reopened.query(queries, 10)[1], pq.query(queries, 10)[1])
    with pytest.raises(IndexSettingsError):
        build_index(labelled_project, "imdb", encoder, kind="ivfpq", params={**params, "codes": 50})
