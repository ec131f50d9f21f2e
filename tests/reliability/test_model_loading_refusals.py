"""Issue 52, items 11, 12 and 14 (parts): what a model folder may hold, devices, weight file modes.

* 11: a trained retriever with pickled weights is refused (CB508), as members are;
* 12: ``--local-model`` counts towards the odd number of members; an empty or invalid
  ``.safetensors`` (CB510) and a ``config.json`` with ``auto_map`` (custom code, CB511) are refused
  by name before anything is trained;
* 14: ``--device banana`` is refused by name (CB512), listing the valid devices; trained weights
  get the mode the umask gives (``0o644`` under ``022``), not ``0o600``.

Every refusal is checked in a real process: exit 3, the code in stderr, no traceback, and the
project and the files beside it (the local model folder included) unchanged.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from tests.reliability.integrity import assert_unchanged, snapshot
from tests.reliability.storage_fs import cli
from tests.reliability.test_stored_paths import MEMBER, TRAIN, refused, write_dataset

TINY = ("--epochs", "1", "--max-length", "16", "--preset", "fast-cpu")


@pytest.fixture(scope="module")
def models_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("models-cache")
    os.environ["COUNTERBIAS_MODELS_CACHE"] = str(folder)  # the in-process local model below shares it
    return {"COUNTERBIAS_MODELS_CACHE": str(folder), "HF_HUB_OFFLINE": "1"}


@pytest.fixture(scope="module")
def local_model(tmp_path_factory: pytest.TempPathFactory, models_env: dict[str, str]) -> Path:
    """A real local Hugging Face folder: a tiny DistilBERT saved with safetensors and a fast tokenizer."""
    from engine.models.registry import get_backbone

    folder = tmp_path_factory.mktemp("local") / "tiny-local"
    backbone = get_backbone("tiny-distilbert")
    model = backbone.build_model(2, {0: "neg", 1: "pos"})
    model.save_pretrained(str(folder))
    backbone.load_tokenizer().save_pretrained(str(folder))
    return folder


def new_project(tmp_path: Path) -> Path:
    project = tmp_path / "proj" / "p.cbproj"
    project.parent.mkdir()
    assert cli("init", str(project)).returncode == 0
    done = cli("import", str(project), str(write_dataset(tmp_path / "d.csv")), "--name", "d")
    assert done.returncode == 0, done.stderr
    return project


def copy_local(local_model: Path, folder: Path) -> Path:
    shutil.copytree(local_model, folder)
    return folder


# --------------------------------------------------------------------------- item 12: --local-model


def test_item12_local_model_counts_towards_the_odd_number_of_members(tmp_path, models_env, local_model):
    """Two backbones + one local model are three members (was refused as 'got 2')."""
    project = new_project(tmp_path)
    done = cli("train", str(project), "d", "--backbones", "tiny-distilbert,tiny-roberta",
               "--local-model", str(local_model), *TINY, env=models_env)
    assert done.returncode == 0, done.stderr
    trained = json.loads(done.stdout)
    assert trained["threshold"] == 2
    assert [m["name"] for m in trained["members"]] == ["d:tiny-distilbert", "d:tiny-roberta", "d:tiny-local"]


@pytest.mark.parametrize("backbones", ["tiny-distilbert", "tiny-distilbert,tiny-roberta,tiny-mpnet"])
def test_item12_even_count_with_local_model_is_refused_by_name(tmp_path, models_env, local_model, backbones):
    """One or three backbones + one local model: refused before anything, the count explained."""
    project = new_project(tmp_path)
    before = snapshot(project, root=tmp_path)
    done = cli("train", str(project), "d", "--backbones", backbones, "--local-model", str(local_model), *TINY,
               env=models_env)
    refused(done, "CB504")
    assert "1 --local-model folder make" in done.stderr and "got" not in done.stderr
    assert_unchanged(before, snapshot(project, root=tmp_path))


def test_item12_readme_default_plus_local_model_is_refused_with_the_fix_named(tmp_path, models_env, local_model):
    """The README's old line (the 3 default members + one local) makes 4: refused, the hint says what to do."""
    project = new_project(tmp_path)
    before = snapshot(project, root=tmp_path)
    done = cli("train", str(project), "d", "--local-model", str(local_model), env=models_env)
    refused(done, "CB504")
    assert "3 backbones (minilm-l6, minilm-l3, mpnet-base) + 1 --local-model folder make 4" in done.stderr
    assert "--backbones minilm-l6,minilm-l3" in done.stderr
    assert_unchanged(before, snapshot(project, root=tmp_path))


def test_item12_empty_safetensors_beside_a_bin_is_refused(tmp_path, models_env, local_model):
    project = new_project(tmp_path)
    local = copy_local(local_model, tmp_path / "local")
    (local / "model.safetensors").write_bytes(b"")
    (local / "pytorch_model.bin").write_bytes(b"\x80\x04K\x01.")  # a pickle: never opened
    before = snapshot(project, root=tmp_path)
    done = cli("train", str(project), "d", "--backbones", "tiny-distilbert,tiny-roberta", "--local-model", str(local),
               *TINY, env=models_env)
    refused(done, "CB510")
    assert "empty" in done.stderr and "model.safetensors" in done.stderr
    assert_unchanged(before, snapshot(project, root=tmp_path))


def test_item12_invalid_safetensors_is_refused(tmp_path, models_env, local_model):
    project = new_project(tmp_path)
    local = copy_local(local_model, tmp_path / "local")
    (local / "model.safetensors").write_bytes(b"\xff" * 64)
    before = snapshot(project, root=tmp_path)
    done = cli("train", str(project), "d", "--backbones", "tiny-distilbert,tiny-roberta", "--local-model", str(local),
               *TINY, env=models_env)
    refused(done, "CB510")
    assert_unchanged(before, snapshot(project, root=tmp_path))


def test_item12_auto_map_custom_code_is_refused(tmp_path, models_env, local_model):
    project = new_project(tmp_path)
    local = copy_local(local_model, tmp_path / "local")
    config = json.loads((local / "config.json").read_text())
    config["auto_map"] = {"AutoModelForSequenceClassification": "evil.EvilModel"}
    (local / "config.json").write_text(json.dumps(config))
    (local / "evil.py").write_text("open('PWNED', 'w').write('ran')\n")
    before = snapshot(project, root=tmp_path)
    done = cli("train", str(project), "d", "--backbones", "tiny-distilbert,tiny-roberta", "--local-model", str(local),
               *TINY, env=models_env, cwd=tmp_path)
    refused(done, "CB511")
    assert "auto_map" in done.stderr
    assert_unchanged(before, snapshot(project, root=tmp_path))
    assert not (tmp_path / "PWNED").exists()


def test_item12_pickled_only_local_model_is_refused(tmp_path, models_env, local_model):
    project = new_project(tmp_path)
    local = copy_local(local_model, tmp_path / "local")
    (local / "model.safetensors").unlink()
    (local / "pytorch_model.bin").write_bytes(b"\x80\x04K\x01.")
    before = snapshot(project, root=tmp_path)
    done = cli("train", str(project), "d", "--backbones", "tiny-distilbert,tiny-roberta", "--local-model", str(local),
               *TINY, env=models_env)
    refused(done, "CB508")
    assert_unchanged(before, snapshot(project, root=tmp_path))


# --------------------------------------------------------------------------- item 11: the trained retriever


@pytest.mark.parametrize("weights", ["pickle", "empty", "auto_map"])
def test_item11_trained_retriever_with_unsafe_weights_is_refused(tmp_path, models_env, local_model, weights):
    """A shared project's retriever folder: pickles (CB508), empty safetensors (CB510), custom code (CB511)."""
    project = new_project(tmp_path)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("A good film. A bad film.\nThe plot was dull. The cast was superb.\n")
    done = cli("corpus", str(project), "c", str(corpus))
    assert done.returncode == 0, done.stderr
    folder = copy_local(local_model, project.with_name("p_files") / "retrievers" / "shared")
    (folder / "retriever.json").write_text(json.dumps({"kind": "cf-dpr", "base": "minilm-l6"}))
    if weights == "pickle":
        (folder / "model.safetensors").unlink()
        (folder / "pytorch_model.bin").write_bytes(b"\x80\x04K\x01.")
        code = "CB508"
    elif weights == "empty":
        (folder / "model.safetensors").write_bytes(b"")
        code = "CB510"
    else:
        config = json.loads((folder / "config.json").read_text())
        config["auto_map"] = {"AutoModel": "evil.EvilModel"}
        (folder / "config.json").write_text(json.dumps(config))
        code = "CB511"
    before = snapshot(project, root=tmp_path)
    done = cli("index", str(project), "c", "--retriever", "shared", env=models_env)
    refused(done, code)
    assert_unchanged(before, snapshot(project, root=tmp_path))


# --------------------------------------------------------------------------- item 14: device, file modes


@pytest.mark.parametrize("device", ["banana", "cuda:x", "gpu"])
def test_item14_unknown_device_is_refused_by_name(tmp_path, models_env, device):
    project = new_project(tmp_path)
    before = snapshot(project, root=tmp_path)
    done = cli("train", str(project), "d", *TRAIN, "--device", device, env=models_env)
    refused(done, "CB512")
    assert f"Unknown device {device!r}" in done.stderr
    assert all(name in done.stderr for name in ("auto", "cpu", "cuda", "cuda:N", "mps"))
    assert_unchanged(before, snapshot(project, root=tmp_path))


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o027, 0o640)])
def test_item14_weights_respect_the_umask(tmp_path, models_env, umask, mode):
    project = new_project(tmp_path)
    done = cli("train", str(project), "d", *TRAIN, env=models_env, preexec_fn=lambda: os.umask(umask))
    assert done.returncode == 0, done.stderr
    folder = project.with_name("p_files") / "models" / "d_tiny-distilbert"
    files = sorted(p for p in folder.iterdir() if p.is_file())
    assert folder / "model.safetensors" in files
    assert {p.name: oct(stat.S_IMODE(p.stat().st_mode)) for p in files} == {p.name: oct(mode) for p in files}
    assert MEMBER in done.stdout
