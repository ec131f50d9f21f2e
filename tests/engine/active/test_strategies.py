"""Selection strategies on small pools: random is seeded, cluster covers distinct clusters, counterfactual pairs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from engine.active.counterfactuals import StoredCounterfactuals
from engine.active.errors import CounterfactualSourceError, UnknownStrategyError
from engine.active.strategies import STRATEGIES, ClusterStrategy, Pool, RandomStrategy, make_strategy
from engine.io import ImportOptions, import_file
from engine.store import ExampleQuery, Project
from engine.store.schema import now


def _pool(n: int, vectors: np.ndarray | None = None) -> Pool:
    return Pool(tuple(range(100, 100 + n)), tuple((f"text {i}",) for i in range(n)),
                tuple("ab"[i % 2] for i in range(n)), vectors)


def test_registry_names_and_errors():
    assert STRATEGIES.names() == ["random", "cluster", "counterfactual", "counterfactual-cluster"]
    with pytest.raises(UnknownStrategyError, match="CB991|uncertainty"):
        make_strategy("uncertainty")
    with pytest.raises(CounterfactualSourceError):
        make_strategy("counterfactual")
    with pytest.raises(UnknownStrategyError):
        make_strategy("cluster", n_clusters=0)


def test_random_is_seeded_and_nested():
    pool = _pool(50)
    a = RandomStrategy().order(pool, 30, seed=3)
    assert a == RandomStrategy().order(pool, 30, seed=3)
    assert a != RandomStrategy().order(pool, 30, seed=4)
    assert len(set(a)) == 30 and all(0 <= i < 50 for i in a)
    assert RandomStrategy().order(pool, 10, seed=3) == a[:10]  # budgets of one seed are nested


def test_cluster_picks_the_centre_of_each_blob_first():
    rng = np.random.default_rng(0)
    centres = np.eye(4, 8) * 10
    sizes = [12, 9, 7, 5]
    blob = np.concatenate([np.full(s, k) for k, s in enumerate(sizes)])
    vectors = centres[blob] + rng.normal(0, 0.5, (len(blob), 8))
    # the example nearest each centre is planted exactly on it
    exact = [int(np.flatnonzero(blob == k)[2]) for k in range(4)]
    vectors[exact] = centres
    pool = _pool(len(blob), vectors)
    order = ClusterStrategy(n_clusters=4).order(pool, 8, seed=1)
    assert order[:4] == exact  # one per cluster, largest cluster first, most central example
    assert sorted(blob[order[4:8]]) == [0, 1, 2, 3]  # then the rotation goes round again
    assert order == ClusterStrategy(n_clusters=4).order(pool, 8, seed=1)
    assert len(set(ClusterStrategy(n_clusters=4).order(pool, len(blob), seed=2))) == len(blob)


def test_cluster_on_real_embeddings_covers_the_topics():
    from engine.active.learners import EmbedLogReg

    topics = {
        "food": ["The pasta was cooked perfectly and the sauce was rich.", "I ordered the soup and a fresh salad.",
                 "Dessert was a warm chocolate cake with ice cream.", "The bread at this bakery is baked daily."],
        "weather": ["Heavy rain is expected tomorrow with strong winds.", "It will be sunny and hot all weekend.",
                    "Snow storms closed the mountain roads overnight.", "The forecast says fog in the morning."],
        "football": ["The striker scored twice in the second half.", "The goalkeeper saved a late penalty.",
                     "The team won the league after a draw on Sunday.", "The coach changed three players at halftime."],
    }
    texts = [(t,) for ts in topics.values() for t in ts]
    topic_of = [k for k, ts in topics.items() for _ in ts]
    pool = Pool(tuple(range(len(texts))), tuple(texts), tuple(topic_of))
    pool.vectors = EmbedLogReg().features(pool.texts)
    first = ClusterStrategy(n_clusters=3).order(pool, 3, seed=0)
    assert sorted(topic_of[i] for i in first) == ["food", "football", "weather"]


@pytest.fixture
def stored(tmp_path):
    """A project with 4 examples and candidates of every status (one verified, one failing verification)."""
    csv = tmp_path / "d.csv"
    csv.write_text("text,label\na good film,pos\na bad film,neg\nfine acting,pos\ndull plot,neg\n", encoding="utf-8")
    path = tmp_path / "cf.cbproj"
    with Project.create(path) as p:
        dataset = import_file(p, csv, options=ImportOptions(name="d")).dataset
        ids = [int(i) for i in p.example_ids(ExampleQuery(dataset.id))]

        def write(conn):
            rows = [(ids[0], "neg", "a dreadful film", "proposed", {"passes": True}),
                    (ids[0], "neg", "a terrible film", "accepted", {}),
                    (ids[0], "neg", "a rejected film", "rejected", {}),
                    (ids[0], "neg", None, "failed", {}),
                    (ids[1], "pos", "a lovely film", "proposed", {"passes": False})]
            for ex, target, text, status, scores in rows:
                conn.execute("INSERT INTO candidates (example_id, method, target_label, text, scores, status, "
                             "created_at) VALUES (?, 'llm', ?, ?, ?, ?, ?)", (ex, target, text, json.dumps(scores),
                                                                              status, now()))

        p.writer.run(write)
    return path, ids


def test_stored_source_reads_usable_candidates(stored):
    path, ids = stored
    with Project.open(path) as p:
        found = StoredCounterfactuals(p)(ids)
        assert found == {ids[0]: [("a dreadful film", "neg"), ("a terrible film", "neg")],
                         ids[1]: [("a lovely film", "pos")]}
        assert StoredCounterfactuals(p, verified_only=True)(ids) == {ids[0]: [("a dreadful film", "neg")]}
        assert StoredCounterfactuals(p, statuses=["accepted"])(ids) == {ids[0]: [("a terrible film", "neg")]}
        assert StoredCounterfactuals(p, methods=["core"])(ids) == {}


def test_counterfactual_strategy_adds_pairs_with_target_labels(stored):
    path, ids = stored
    calls = []
    with Project.open(path) as p:
        source = StoredCounterfactuals(p)

        def counting(example_ids):
            calls.append(list(example_ids))
            return source(example_ids)

        strategy = make_strategy("counterfactual", counterfactuals=counting)
        pool = Pool(tuple(ids), tuple((t,) for t in ("a good film", "a bad film", "fine acting", "dull plot")),
                    ("pos", "neg", "pos", "neg"))
        order = strategy.order(pool, 4, seed=0)
        assert order == RandomStrategy().order(pool, 4, seed=0)  # selection as random with the same seed
        added = strategy.augment([ids[0], ids[2]])
        assert added == [(("a dreadful film",), "neg"), (("a terrible film",), "neg")]
        assert strategy.augment([ids[0], ids[1]]) == added + [(("a lovely film",), "pos")]
        assert calls == [[ids[0], ids[2]], [ids[1]]]  # each example is asked for once
