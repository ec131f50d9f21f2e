"""Fixtures of the retrieval tests: real IMDb sentences, real MiniLM embeddings, a real labelling member.

The expensive objects are built once per session (memoised in a module global, as in
``tests/engine/models/fixtures.py``): a project holding 179 short CAD reviews, a MiniLM-L6 member
trained on them with the quick-cpu preset (frozen encoder, head trained), and a corpus of the
sentences of the first IMDb test reviews, labelled by that member and embedded. Tests that change
a corpus make their own project.
"""

from __future__ import annotations

import csv
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.engine.models import fixtures as _model_fixtures

#: The session's models cache (quick-cpu features), shared with the model tests.
models_cache = _model_fixtures.models_cache

#: ``../shared/data`` beside the checkout (``COUNTERBIAS_SHARED_DATA`` overrides it, e.g. for a git worktree).
SHARED_DATA = Path(os.environ.get("COUNTERBIAS_SHARED_DATA") or Path(__file__).resolve().parents[3].parent / "shared" / "data")
IMDB_TEST = SHARED_DATA / "imdb_maas" / "test.tsv.gz"
CAD_TRAIN = SHARED_DATA / "cad" / "sentiment" / "combined" / "train.tsv"
#: IMDb test reviews whose sentences form the shared corpus (about 300 sentences).
CORPUS_DOCS = 28

_MEMO: dict[str, Any] = {}


def need_data() -> None:
    if not (IMDB_TEST.is_file() and CAD_TRAIN.is_file()):
        pytest.skip("../shared/data (imdb_maas, cad) is not beside this checkout")


def need_faiss() -> None:
    pytest.importorskip("faiss", reason="faiss-cpu (the ml extra) is not installed")


def short_cad_reviews(folder: Path, max_words: int = 60) -> Path:
    """CAD sentiment train reviews (originals and revisions) of at most ``max_words`` words, as a TSV."""
    with open(CAD_TRAIN, newline="", encoding="utf-8") as f:
        rows = [r for r in list(csv.reader(f, delimiter="\t"))[1:] if len(r[1].split()) <= max_words]
    path = folder / "short_cad.tsv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, delimiter="\t")
        w.writerow(["label", "text"])
        w.writerows(rows)
    return path


@pytest.fixture(scope="session")
def labelled_template(tmp_path_factory: pytest.TempPathFactory, models_cache: Path) -> Path:
    """A closed project file: dataset ``cad`` (179 short reviews), member ``judge``, corpus ``imdb`` labelled + flat index."""
    need_data()
    need_faiss()
    if "template" not in _MEMO:
        from engine.io.importer import ImportOptions, import_file
        from engine.models import MemberSpec, train_member, train_preset
        from engine.retrieval.corpus import import_corpus, label_corpus
        from engine.retrieval.encoders import make_encoder
        from engine.retrieval.index import build_index
        from engine.store import Project

        folder = tmp_path_factory.mktemp("retrieval-template")
        path = folder / "t.cbproj"
        with Project.create(path) as project:
            ds = import_file(project, short_cad_reviews(folder), options=ImportOptions(name="cad")).dataset
            spec = MemberSpec("judge", "minilm-l6", {}, train_preset("quick-cpu", max_length=64, epochs=25))
            train_member(project, ds.id, spec)
            import_corpus(project, "imdb", IMDB_TEST, limit_docs=CORPUS_DOCS)
            label_corpus(project, "imdb", "judge")
            build_index(project, "imdb", make_encoder("minilm-l6"), kind="flat")
        _MEMO["template"] = path
    return _MEMO["template"]


@pytest.fixture
def labelled_project(labelled_template: Path, tmp_path: Path):
    """An open copy of :func:`labelled_template` (its files folder included)."""
    from engine.store import Project

    src = labelled_template
    dst = tmp_path / src.name
    shutil.copy2(src, dst)
    shutil.copytree(src.with_name(src.stem + "_files"), tmp_path / (src.stem + "_files"))
    project = Project.open(dst)
    yield project
    project.close()


@pytest.fixture(scope="session")
def imdb_vectors(labelled_template: Path) -> Any:
    """Real MiniLM embeddings (unit rows) of the shared corpus's sentences, ``(n, 384)`` float32."""
    if "vectors" not in _MEMO:
        from engine.retrieval.vectors import open_vectors
        from engine.store import Project

        with Project.open(labelled_template) as project:
            _MEMO["vectors"] = open_vectors(project, "imdb", "minilm-l6-len64").vectors.copy()
    return _MEMO["vectors"]
