"""Statistics and z-filtering on datasets stored in a project."""

from __future__ import annotations

import numpy as np
import pytest

from engine.errors import Cancelled, DatasetNameTakenError, DatasetNotFoundError
from engine.progress import CancelToken
from engine.stats.config import StatsConfig
from engine.stats.errors import DatasetMismatchError, EmptyDatasetError, LabelSetError
from engine.stats.features import FeatureConfig
from engine.stats.project_io import compute_project_stats, load_dataset_texts, zfilter_project
from engine.stats.zfilter import ZFilterConfig
from engine.stats.zstats import ZStatsConfig
from engine.store import insert_dataset
from engine.store.schema import now

UNIGRAMS = FeatureConfig(bigrams=False, length=False, null=False)


def add_dataset(project, name, rows, *, task="single", labels=("pos", "neg")):
    """Insert ``rows`` (text, label) or (premise, hypothesis, label) as a new original dataset."""

    def write(conn):
        dataset_id = insert_dataset(conn, name=name, kind="original", task=task, labels=list(labels))
        first = conn.execute("SELECT COALESCE(MAX(id), 0) FROM examples").fetchone()[0] + 1
        for pos, row in enumerate(rows):
            text, premise, hypothesis = (row[0], None, None) if task == "single" else (None, row[0], row[1])
            conn.execute(
                "INSERT INTO examples (id, dataset_id, ext_id, text, premise, hypothesis, label, split, source, "
                "method, parent_id, target_label, created_at, meta) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, 'train', 'original', NULL, NULL, NULL, ?, NULL)",
                (first + pos, dataset_id, str(pos), text, premise, hypothesis, row[-1], now()),
            )
            conn.execute("INSERT INTO dataset_members VALUES (?, ?, ?)", (dataset_id, pos, first + pos))
        conn.execute("UPDATE datasets SET row_count = ? WHERE id = ?", (len(rows), dataset_id))
        return dataset_id

    return project.writer.run(write)


ROWS = [("good", "pos")] * 3 + [("bad", "neg")] + [
    ("good film", "pos"),
    ("good film", "neg"),
    ("bad", "neg"),
    ("film", "pos"),
]


def test_load_dataset_texts(project):
    ds = add_dataset(project, "reviews", ROWS)
    data = load_dataset_texts(project, ds)
    assert data.task == "single" and data.labels == ["pos", "neg"]
    assert data.texts == [t for t, _ in ROWS]
    assert data.y.tolist() == [0, 0, 0, 1, 0, 1, 1, 0]
    assert len(data.example_ids) == 8 and len(set(data.example_ids.tolist())) == 8
    pair = add_dataset(project, "nli", [("A man sleeps", "A man is sleeping", "e"), ("A dog", "", "c")],
                       task="pair", labels=("e", "n", "c"))
    data = load_dataset_texts(project, pair)
    assert data.premises == ["A man sleeps", "A dog"] and data.hypotheses == ["A man is sleeping", ""]
    assert data.texts is None and data.y.tolist() == [0, 2]
    res = compute_project_stats(project, pair, StatsConfig(zstats=ZStatsConfig(min_count=1)))
    assert {"man@hypothesis", "man@premise", "a man@hypothesis", "<null>", "overlap=0.4-0.6"} <= set(res.feature_names)
    assert res.labels == ["e", "n", "c"] and res.p0 == pytest.approx(1 / 3)


def test_compute_project_stats(project):
    ds = add_dataset(project, "reviews", ROWS)
    seen = []
    res = compute_project_stats(
        project,
        ds,
        StatsConfig(features=UNIGRAMS, zstats=ZStatsConfig(min_count=1)),
        progress=lambda f, m="": seen.append(f),
    )
    good = res.feature_names.index("good")
    assert res.n[good] == 5 and res.counts[good].tolist() == [4, 1]
    assert res.z[good, 0] == pytest.approx((4 / 5 - 0.5) / np.sqrt(0.25 / 5))
    assert seen[-1] == 1.0 and all(b >= a - 1e-9 for a, b in zip(seen, seen[1:]))


def test_categorical_feature_by_example_id(project):
    ds = add_dataset(project, "reviews", ROWS)
    ids = load_dataset_texts(project, ds).example_ids.tolist()
    preds = {i: ("pos" if k % 2 else "neg") for k, i in enumerate(ids)}
    res = compute_project_stats(
        project, ds, StatsConfig(features=UNIGRAMS, zstats=ZStatsConfig(min_count=1)),
        categorical={"hyp_only_pred": preds},
    )
    assert {"hyp_only_pred=pos", "hyp_only_pred=neg"} <= set(res.feature_names)
    assert res.n[res.feature_names.index("hyp_only_pred=pos")] == 4


def test_zfilter_project_saves_a_filtered_version(project):
    ds = add_dataset(project, "reviews", ROWS)
    ids = load_dataset_texts(project, ds).example_ids
    out = zfilter_project(
        project, ds, ZFilterConfig(k=1, batch_size=4, min_count=1), features=UNIGRAMS, name="reviews z"
    )
    info = out.dataset
    assert info.kind == "filtered" and info.parent_id == ds and info.name == "reviews z"
    assert info.row_count == 6
    members = [r["id"] for r in project.iter_examples(info.id)]
    assert members == ids[[0, 1, 2, 3, 5, 7]].tolist()
    params = info.params
    assert params["accepted"] == 6 and params["rejected"] == 2
    assert params["rejection_summary"] == [["good", 1], ["bad", 1]]  # ties: column order
    assert params["rejection_reasons"] == {str(ids[4]): "good", str(ids[6]): "bad"}
    assert params["settings"]["zfilter"]["k"] == 1
    assert params["settings"]["features"]["bigrams"] is False
    assert params["conditional_on"] is None
    # default name is made unique
    again = zfilter_project(project, ds, ZFilterConfig(k=1, batch_size=4, min_count=1), features=UNIGRAMS)
    assert again.dataset.name == "reviews (z-filtered)"
    third = zfilter_project(project, ds, ZFilterConfig(k=1, batch_size=4, min_count=1), features=UNIGRAMS)
    assert third.dataset.name == "reviews (z-filtered) (2)"


def test_conditional_zfilter_project(project):
    seed = add_dataset(project, "seed", [("bad movie", "neg")] * 5 + [("fine", "pos")])
    ds = add_dataset(project, "new", [("bad idea", "neg"), ("bad", "pos")], labels=("neg", "pos"))
    out = zfilter_project(project, ds, ZFilterConfig(k=1, min_count=1), features=UNIGRAMS, seed_dataset_id=seed)
    assert out.result.rejected.tolist() == [0]
    assert out.result.reason_names() == ["bad"]
    assert out.dataset.params["conditional_on"] == seed
    assert out.dataset.row_count == 1


def test_project_errors(project):
    ds = add_dataset(project, "reviews", ROWS)
    with pytest.raises(DatasetNameTakenError):
        zfilter_project(project, ds, name="reviews")
    with pytest.raises(DatasetNotFoundError):
        compute_project_stats(project, 999)
    empty = add_dataset(project, "empty", [])
    with pytest.raises(EmptyDatasetError):
        compute_project_stats(project, empty)
    odd = add_dataset(project, "odd", [("x", "pos"), ("y", "maybe")])
    with pytest.raises(LabelSetError):
        load_dataset_texts(project, odd)
    other = add_dataset(project, "three", [("x", "a")], labels=("a", "b", "c"))
    with pytest.raises(DatasetMismatchError):
        zfilter_project(project, ds, seed_dataset_id=other)
    pair = add_dataset(project, "pairs", [("p", "h", "pos")], task="pair")
    with pytest.raises(DatasetMismatchError):
        zfilter_project(project, ds, seed_dataset_id=pair)
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        zfilter_project(project, ds, cancel=token)
    assert [d.name for d in project.datasets()] == ["reviews", "empty", "odd", "three", "pairs"]
