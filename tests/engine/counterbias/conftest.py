"""Fixtures: a project of ten CAD dev sentences with a tiny trained ensemble and a stored vote."""

from __future__ import annotations

import csv
import shutil

import pytest

from tests.engine.llm.conftest import smol_server, stub  # noqa: F401

TINY = ("tiny-distilbert", "tiny-roberta", "tiny-mpnet")


#: Ten sentences of CAD dev reviews (Kaushik et al. 2020), five of each label. SmolLM2-135M (the
#: tests' LLM) decomposes the first five into well-formed triples and mangles the other five (it
#: splits every word with "|"), so one run exercises both made and failed slots.
SENTENCES = (
    "I hate the movie.",
    "This is a truly atrocious film!!!!",
    "This movie is very good.",
    "I've watched this movie twice, and I plan to see it again.",
    "It is THE FIRM.",
    "I love the movie.",
    "This is a refreshing, enjoyable movie.",
    "This movie is not very good.",
    "One of the great classic comedies.",
    "One of the bad classic comedies.",
)


def short_reviews(shared_data):
    """:data:`SENTENCES` with the label of the CAD dev review each comes from, as ``(text, label)``."""
    from engine.text.sentences import split_sentences

    with open(shared_data / "cad/sentiment/combined/dev.tsv", newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t"))[1:]
    labels: dict[str, str] = {}
    for label, text in rows:
        for sentence in split_sentences(text):
            labels.setdefault(sentence, label)
    missing = [s for s in SENTENCES if s not in labels]
    assert not missing, f"not sentences of CAD dev reviews: {missing}"
    return [(s, labels[s]) for s in SENTENCES]


@pytest.fixture(scope="session")
def voted_project_template(tmp_path_factory):
    """A project file: 10 CAD dev sentences, 3 tiny members (1 epoch), IG vote on all 10. Built once."""
    from tests.conftest import SHARED_DATA

    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not beside this checkout")
    from engine.attribution import VoteSettings, find_principal_words
    from engine.io import ImportOptions, import_file
    from engine.models import EnsembleConfig, MemberSpec, train_ensemble, train_preset
    from engine.store import Project

    folder = tmp_path_factory.mktemp("cb-template")
    src = folder / "reviews.csv"
    with open(src, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["text", "label"])
        w.writerows(short_reviews(SHARED_DATA))
    path = folder / "p.cbproj"
    project = Project.create(path)
    try:
        ds = import_file(project, src, options=ImportOptions(name="reviews")).dataset
        train = train_preset("fast-cpu", epochs=1, max_length=64)
        config = EnsembleConfig(tuple(MemberSpec(f"r:{b}", b, {}, train) for b in TINY))
        train_ensemble(project, ds.id, config)
        find_principal_words(project, ds.id, [m.name for m in config.members], methods={"ig": {"n_steps": 8}},
                             vote=VoteSettings(k=3, rule="majority"), wordlists=("gender",))
    finally:
        project.close()
    return path


@pytest.fixture
def voted_project(voted_project_template, tmp_path):
    """A fresh copy of the template project (and its model folder), opened."""
    from engine.store import Project

    src = voted_project_template
    dst = tmp_path / src.name
    shutil.copy(src, dst)
    files = src.parent / f"{src.stem}_files"
    if files.exists():
        shutil.copytree(files, tmp_path / f"{src.stem}_files")
    project = Project.open(dst)
    yield project
    project.close()
