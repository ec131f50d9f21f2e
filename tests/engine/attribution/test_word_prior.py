"""The label word prior: z-statistics of word presence against the labels, used by the prior vote rules."""

from __future__ import annotations

import math

from engine.attribution import VoteSettings, find_principal_words, load_votes
from engine.attribution.word_prior import label_word_prior, word_prior_from_texts
from engine.io.importer import ImportOptions, import_file
from engine.models import EnsembleConfig, train_ensemble
from engine.store import ExampleQuery
from tests.engine.models.fixtures import tiny_spec


def test_prior_by_hand() -> None:
    texts = ["great film", "great cast", "great plot", "dull film", "dull cast", "dull plot"]
    prior = word_prior_from_texts(texts, ["pos"] * 3 + ["neg"] * 3, min_count=2)
    # "great": 3 of 3 texts positive, p0 = 0.5, n = 3 -> z = 0.5 / sqrt(0.25 / 3)
    assert math.isclose(prior["great"], 0.5 / math.sqrt(0.25 / 3))
    assert math.isclose(prior["dull"], prior["great"])  # the largest z over labels: |z| for two labels
    assert prior["film"] == 0.0
    assert "plot" in prior and set(word_prior_from_texts(texts, ["pos"] * 3 + ["neg"] * 3, min_count=3)) == {"great", "dull"}


def test_prior_of_three_labels_is_the_strongest_over_representation() -> None:
    texts = ["red a"] * 4 + ["green a"] * 4 + ["blue a"] * 4
    prior = word_prior_from_texts(texts, ["r"] * 4 + ["g"] * 4 + ["b"] * 4)
    # "red": 4 of 4 in label r, p0 = 1/3
    assert math.isclose(prior["red"], (1 - 1 / 3) / math.sqrt((1 / 3) * (2 / 3) / 4))
    assert prior["a"] == 0.0
    assert word_prior_from_texts(["x y"] * 3, ["one"] * 3) == {}  # one label: no prior


def test_dataset_prior_reads_the_train_split_and_feeds_the_prior_rules(project, tmp_path) -> None:
    rows = ["label\ttext\tsplit"]
    rows += [f"pos\tA superb film with a cast of {i}.\ttrain" for i in range(6)]
    rows += [f"neg\tA dreadful film with a cast of {i}.\ttrain" for i in range(6)]
    # dev rows tie "superb" to the other label: a prior read from them would differ
    rows += [f"neg\tA superb mess, cast {i}.\tdev" for i in range(8)]
    rows += [f"pos\tA dreadful joy, cast {i}.\tdev" for i in range(8)]
    path = tmp_path / "d.tsv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    dataset = import_file(project, path, options=ImportOptions(name="d")).dataset
    prior = label_word_prior(project, dataset.id)
    # train only: 6 of 6 positive, p0 = 0.5 (with the dev rows it would be 6 of 14)
    assert math.isclose(prior["superb"], 0.5 / math.sqrt(0.25 / 6)) and math.isclose(prior["dreadful"], prior["superb"])
    assert prior["film"] == 0.0

    members = train_ensemble(project, dataset.id, EnsembleConfig((tiny_spec("distilbert"),))).names
    ids = project.example_ids(ExampleQuery(dataset.id, splits=("dev",)))[:4].tolist()
    methods = {"ig": {"n_steps": 4}}
    plain = find_principal_words(project, dataset.id, members, methods=methods, vote=VoteSettings(k=1, rule="rank-mean"),
                                 example_ids=ids)
    z = find_principal_words(project, dataset.id, members, methods=methods,
                             vote=VoteSettings(k=1, rule="z-prior", prior_weight=1.0), example_ids=ids)
    # with all weight on the prior, the one principal word of each review is its strongest label word
    for vote in load_votes(project, z.vote_set_id).values():
        assert vote.principal[0] in {"superb", "dreadful"}
    assert z.vote_set_id != plain.vote_set_id
