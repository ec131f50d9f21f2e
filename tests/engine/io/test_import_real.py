"""Imports of the real public datasets in ../shared/data: row counts and label sets."""

from __future__ import annotations

import csv

from engine.io import ImportOptions, ReadOptions, import_file


def _count_rows(path, **kw) -> int:
    with open(path, newline="", encoding="utf-8") as f:
        return sum(1 for _ in csv.reader(f, delimiter="\t", **kw)) - 1


def test_cad_sentiment_combined_train(project, shared_data):
    path = shared_data / "cad/sentiment/combined/train.tsv"
    result = import_file(project, path)
    assert result.rows == 3414 == _count_rows(path)
    assert result.dataset.task == "single"
    assert result.dataset.labels == ["Negative", "Positive"]
    assert result.label_counts == {"Negative": 1707, "Positive": 1707}
    assert project.label_counts(result.dataset.id) == {"Negative": 1707, "Positive": 1707}
    # Text survives byte for byte (40% of these reviews start with a quote character).
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t"))[1:]
    stored = [e["text"] for e in project.iter_examples(result.dataset.id)]
    assert stored == [r[1] for r in rows]


def test_cad_nli_pairs(project, shared_data):
    result = import_file(project, shared_data / "cad/NLI/original/train.tsv")
    assert result.dataset.task == "pair"
    assert result.rows == 1666
    assert result.label_counts == {"contradiction": 550, "entailment": 562, "neutral": 554}
    first = next(project.iter_examples(result.dataset.id))
    assert first["premise"].startswith("A man is riding a red motorcycle")
    assert first["hypothesis"] == "A man rides his motorcyle with his won."
    assert first["text"] is None


def test_sst2_dev_without_quoting(project, shared_data):
    result = import_file(project, shared_data / "sst2_glue/dev.tsv", read_options=ReadOptions(quoting="none"))
    assert result.rows == 872
    assert result.label_counts == {"0": 428, "1": 444}
    assert result.dataset.labels == ["0", "1"]


def test_imdb_test_gz_25k(project, shared_data):
    result = import_file(project, shared_data / "imdb_maas/test.tsv.gz")
    assert result.rows == 25_000
    assert result.label_counts == {"neg": 12_500, "pos": 12_500}
    first = next(project.iter_examples(result.dataset.id))
    assert first["ext_id"] == "pos/0_10"
    assert first["text"].startswith("I went and saw this movie last night")


def test_append_dev_split_to_train(project, shared_data):
    train = import_file(project, shared_data / "cad/sentiment/combined/train.tsv", options=ImportOptions(name="cad"))
    dev = import_file(
        project,
        shared_data / "cad/sentiment/combined/dev.tsv",
        options=ImportOptions(append_to=train.dataset.id, split="dev"),
    )
    assert dev.dataset.id == train.dataset.id
    assert dev.dataset.row_count == 3414 + 490
    assert project.split_counts(train.dataset.id) == {"dev": 490, "train": 3414}
