"""Counterfactual retrieval never returns an excerpt of the query's own label."""

from __future__ import annotations

import numpy as np
import pytest

from engine.retrieval.corpus import corpus_labels, label_corpus
from engine.retrieval.errors import LabelSpaceError, NotLabelledError
from engine.retrieval.retrieve import open_retriever, retrieve_for_examples
from engine.store import ExampleQuery

QUERIES = [
    ("An absolute joy from start to finish.", "Positive"),
    ("The acting was wooden and the plot made no sense.", "Negative"),
    ("I would happily watch it again.", "Positive"),
    ("A waste of two hours.", "Negative"),
    ("The photography is gorgeous.", "Positive"),
    ("Nothing in it works.", "Negative"),
]


def test_labels_are_stored_with_probabilities(labelled_project):
    labels = corpus_labels(labelled_project, "imdb", "judge")
    assert labels.labels == ("Negative", "Positive")
    assert np.allclose(labels.probs.sum(axis=1), 1.0, atol=1e-4)
    assert np.array_equal(labels.index, labels.probs.argmax(axis=1))
    assert 0 < (labels.index == 1).sum() < len(labels.index)   # both labels occur
    again = label_corpus(labelled_project, "imdb", "judge")
    assert again.labelled_now == 0 and again.total == len(labels.index)   # resumable: nothing left


@pytest.mark.parametrize("kind,params", [("flat", {}), ("ivf", {"nlist": 8, "nprobe": 2})])
def test_never_same_label(labelled_project, kind, params):
    from engine.retrieval.encoders import make_encoder
    from engine.retrieval.index import build_index

    build_index(labelled_project, "imdb", make_encoder("minilm-l6"), kind=kind, params=params)
    retriever = open_retriever(labelled_project, "imdb", "judge", kind=kind, params=params)
    labels = corpus_labels(labelled_project, "imdb", "judge")
    texts, own = [q for q, _ in QUERIES], [label for _, label in QUERIES]
    for k in (3, 40):                                           # 40 forces re-queries past the first fetch
        results = retriever.search(texts, own, k=k)
        for label, hits in zip(own, results, strict=True):
            assert hits and all(h.label != label for h in hits)
            assert all(labels.labels[labels.index[h.position]] == h.label for h in hits)
            scores = [h.score for h in hits]
            assert scores == sorted(scores, reverse=True)
            if kind == "flat":
                assert len(hits) == min(k, int((labels.index != labels.labels.index(label)).sum()))


def test_exhausted_corpus_returns_every_other_label_excerpt(labelled_project):
    retriever = open_retriever(labelled_project, "imdb", "judge", kind="flat")
    labels = corpus_labels(labelled_project, "imdb", "judge")
    positives = int((labels.index == 1).sum())
    hits = retriever.search(["A dreadful film."], ["Negative"], k=10_000)[0]
    assert len(hits) == positives and {h.label for h in hits} == {"Positive"}
    assert len({h.position for h in hits}) == positives
    with pytest.raises(LabelSpaceError):
        retriever.search(["x"], ["neutral"], k=2)


def test_dataset_retrieval_is_stored_and_resumes(labelled_project):
    retriever = open_retriever(labelled_project, "imdb", "judge", kind="flat")
    dataset = labelled_project.dataset("cad")
    ids = [int(i) for i in labelled_project.example_ids(ExampleQuery(dataset.id))[:4]]
    first = retrieve_for_examples(labelled_project, retriever, ids, k=3, per_sentence=True)
    assert first.computed > 4 and first.skipped == 0
    labels = {r["id"]: r["label"] for r in labelled_project.examples(ids)}
    for result in first.results:
        assert result["query_label"] == labels[result["example_id"]]
        assert len(result["hits"]) == 3 and all(h["label"] != result["query_label"] for h in result["hits"])
        assert result["keywords"] and all(w == w.lower() for w in result["keywords"])
    second = retrieve_for_examples(labelled_project, retriever, ids, k=3, per_sentence=True)
    assert (second.computed, second.skipped) == (0, first.computed)


def test_unlabelled_member_is_a_named_error(labelled_project, tmp_path):
    from engine.retrieval.corpus import import_corpus

    src = tmp_path / "new.txt"
    src.write_text("A sentence the judge has not seen yet.\n", encoding="utf-8")
    import_corpus(labelled_project, "imdb", src)
    with pytest.raises(NotLabelledError) as err:
        corpus_labels(labelled_project, "imdb", "judge")
    assert err.value.code == "CB956" and "--label-with judge" in err.value.hint


def test_labelling_resumes_after_cancel(labelled_project, tmp_path):
    from engine.errors import Cancelled
    from engine.progress import CancelToken
    from engine.retrieval.corpus import import_corpus

    src = tmp_path / "six.txt"
    src.write_text("Loved it. Hated it. A fine cast.\nA dull script. Great fun. Never again.\n", encoding="utf-8")
    assert import_corpus(labelled_project, "imdb", src).sentences_added == 6
    token = CancelToken()
    with pytest.raises(Cancelled):
        label_corpus(labelled_project, "imdb", "judge", chunk=2, progress=lambda f, m="": token.cancel(), cancel=token)
    rest = label_corpus(labelled_project, "imdb", "judge", chunk=2)
    assert rest.labelled_now == 4                     # the first chunk of two was kept
    assert len(corpus_labels(labelled_project, "imdb", "judge").index) == rest.total


def _mean_pairwise(vectors: np.ndarray) -> float:
    sims = vectors @ vectors.T
    n = len(vectors)
    return float((sims.sum() - np.trace(sims)) / (n * (n - 1)))


def test_diversity_picks_less_similar_excerpts_of_the_other_label(labelled_project, imdb_vectors):
    """Maximal marginal relevance: same first excerpt, never the query's label, less alike on average."""
    retriever = open_retriever(labelled_project, "imdb", "judge", kind="flat")
    texts, own = [q for q, _ in QUERIES], [label for _, label in QUERIES]
    nearest = retriever.search(texts, own, k=5)
    varied = retriever.search(texts, own, k=5, diversity=0.5)
    alike = {"nearest": [], "varied": []}
    for label, near, var in zip(own, nearest, varied, strict=True):
        assert len(var) == len(near) == 5 and all(h.label != label for h in var)
        assert var[0].position == near[0].position            # the most relevant is always picked first
        assert len({h.position for h in var}) == 5
        alike["nearest"].append(_mean_pairwise(imdb_vectors[[h.position for h in near]]))
        alike["varied"].append(_mean_pairwise(imdb_vectors[[h.position for h in var]]))
    assert np.mean(alike["varied"]) < np.mean(alike["nearest"])
    assert retriever.search(texts, own, k=5, diversity=0.0) == nearest
    with pytest.raises(ValueError):
        retriever.search(texts, own, k=5, diversity=1.5)


def test_mmr_select_doctest():
    import doctest

    from engine.retrieval import retrieve

    assert doctest.testmod(retrieve).failed == 0
