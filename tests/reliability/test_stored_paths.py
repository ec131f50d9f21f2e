"""Issue 52, item 2: a path stored in a project never reaches outside it (nothing deleted there).

A member's folder is stored in ``models.path`` relative to ``<name>_files/``. A crafted project
(``../../victim``, an absolute path, a symbolic link to elsewhere) made ``train`` and
``delete_model`` delete that folder and its contents. Every test here runs the real command on a
real project with a real trained tiny member, and checks that the project's content and every
file beside it (a victim folder included) are exactly as before.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from engine.errors import RemoveOutsideError, StoredLinkError, StoredPathError
from tests.reliability.integrity import assert_unchanged, snapshot
from tests.reliability.storage_fs import cli

MEMBER = "d:tiny-distilbert"
TRAIN = ("--backbones", "tiny-distilbert", "--epochs", "1", "--max-length", "16", "--preset", "fast-cpu")


def write_dataset(path: Path, rows: int = 40) -> Path:
    """A two-class CSV whose label follows its opinion word."""
    pos, neg = ["good", "great", "lovely", "fine", "superb"], ["bad", "awful", "poor", "dull", "boring"]
    lines = ["text,label"]
    for i in range(rows):
        words = pos if i % 2 else neg
        lines.append(f"the film was {words[i % 5]} and {words[(i + 2) % 5]},{'pos' if i % 2 else 'neg'}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def models_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """One models cache for the module's processes (the tiny tokenizer is built once)."""
    return {"COUNTERBIAS_MODELS_CACHE": str(tmp_path_factory.mktemp("models-cache")), "HF_HUB_OFFLINE": "1"}


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory, models_env: dict[str, str]) -> Path:
    """A project with dataset ``d`` and the trained member ``d:tiny-distilbert`` (copied per test)."""
    folder = tmp_path_factory.mktemp("trained")
    project = folder / "p.cbproj"
    assert cli("init", str(project)).returncode == 0
    done = cli("import", str(project), str(write_dataset(folder / "d.csv")), "--name", "d")
    assert done.returncode == 0, done.stderr
    done = cli("train", str(project), "d", *TRAIN, env=models_env)
    assert done.returncode == 0, done.stderr
    return project


def copy_project(trained: Path, folder: Path) -> Path:
    """A copy of the trained project in ``folder`` (file and files folder)."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy2(trained, folder / trained.name)
    shutil.copytree(trained.with_name("p_files"), folder / "p_files", symlinks=True)
    return folder / trained.name


def make_victim(folder: Path) -> Path:
    """A folder of someone's files that no command may touch."""
    (folder / "sub").mkdir(parents=True)
    (folder / "notes.txt").write_text("precious\n")
    (folder / "sub" / "data.bin").write_bytes(os.urandom(256))
    return folder


def store_path(project: Path, path: str) -> None:
    """What a crafted project holds: the member's folder rewritten to ``path``."""
    conn = sqlite3.connect(project)
    with conn:
        conn.execute("UPDATE models SET path = ? WHERE name = ?", (path, MEMBER))
    conn.close()


def refused(done, code: str) -> None:
    assert done.returncode == 3, (done.returncode, done.stderr)
    assert f"[{code}]" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr, done.stderr


# --------------------------------------------------------------------------- train


@pytest.mark.parametrize("stored", ["../../victim", "models/../../../victim"])
def test_item02_model_path_with_dotdot_deletes_nothing(tmp_path, trained, models_env, stored):
    victim = make_victim(tmp_path / "victim")
    project = copy_project(trained, tmp_path / "proj")
    store_path(project, stored)
    before = snapshot(project, root=tmp_path)
    done = cli("train", str(project), "d", *TRAIN, env=models_env)
    refused(done, "CB150")
    assert "'..'" in done.stderr
    assert_unchanged(before, snapshot(project, root=tmp_path))
    assert (victim / "notes.txt").read_text() == "precious\n"


def test_item02_absolute_model_path_deletes_nothing(tmp_path, trained, models_env):
    victim = make_victim(tmp_path / "victim")
    project = copy_project(trained, tmp_path / "proj")
    store_path(project, str(victim))
    before = snapshot(project, root=tmp_path)
    done = cli("train", str(project), "d", *TRAIN, "--overwrite", env=models_env)
    refused(done, "CB150")
    assert "absolute" in done.stderr
    assert_unchanged(before, snapshot(project, root=tmp_path))


def test_item02_empty_model_path_deletes_nothing(tmp_path, trained, models_env):
    project = copy_project(trained, tmp_path / "proj")
    store_path(project, "")
    before = snapshot(project, root=tmp_path)
    done = cli("train", str(project), "d", *TRAIN, env=models_env)
    refused(done, "CB150")
    assert_unchanged(before, snapshot(project, root=tmp_path))


def test_item02_symlinked_model_folder_to_outside_is_refused(tmp_path, trained, models_env):
    victim = make_victim(tmp_path / "victim")
    project = copy_project(trained, tmp_path / "proj")
    member = project.with_name("p_files") / "models" / "d_tiny-distilbert"
    shutil.rmtree(member)
    member.symlink_to(victim, target_is_directory=True)
    before = snapshot(project, root=tmp_path)
    for extra in ((), ("--overwrite",)):
        done = cli("train", str(project), "d", *TRAIN, *extra, env=models_env)
        refused(done, "CB151")
        assert_unchanged(before, snapshot(project, root=tmp_path))


def test_item02_symlinked_models_folder_to_outside_is_refused(tmp_path, trained, models_env):
    """``<name>_files/models`` itself a link elsewhere: a new member is not written (or cleared) there."""
    victim = make_victim(tmp_path / "victim")
    project = copy_project(trained, tmp_path / "proj")
    models = project.with_name("p_files") / "models"
    shutil.rmtree(models)
    models.symlink_to(victim, target_is_directory=True)
    before = snapshot(project, root=tmp_path)
    done = cli("train", str(project), "d", *TRAIN, "--prefix", "other:", env=models_env)
    refused(done, "CB151")
    assert_unchanged(before, snapshot(project, root=tmp_path))


def test_item02_symlinked_model_folder_inside_is_replaced_not_followed(tmp_path, trained, models_env):
    """A link that stays inside the project is removed itself when the member is retrained (exit 0)."""
    project = copy_project(trained, tmp_path / "proj")
    files = project.with_name("p_files")
    keep = files / "kept"
    make_victim(keep)
    member = files / "models" / "d_tiny-distilbert"
    shutil.rmtree(member)
    member.symlink_to(keep, target_is_directory=True)
    before = snapshot(project, root=keep)
    done = cli("train", str(project), "d", *TRAIN, env=models_env)
    assert done.returncode == 0, done.stderr
    assert member.is_dir() and not member.is_symlink() and (member / "model.safetensors").is_file()
    assert before.files == snapshot(project, root=keep).files  # the link's target was not touched


# --------------------------------------------------------------------------- delete_model, opening


@pytest.mark.parametrize("stored", ["../../victim", "ABSOLUTE"])
def test_item02_delete_model_with_outside_path_deletes_nothing(tmp_path, trained, stored):
    from engine.models import delete_model
    from engine.store import Project

    victim = make_victim(tmp_path / "victim")
    project = copy_project(trained, tmp_path / "proj")
    with Project.open(project) as opened:
        # crafted while open (another process wrote it): opening a project that holds it is refused already
        store_path(project, str(victim) if stored == "ABSOLUTE" else stored)
        before = snapshot(project, root=tmp_path)
        with pytest.raises(StoredPathError) as caught:
            delete_model(opened, MEMBER)
    assert caught.value.code == "CB150" and "Nothing was read, written or deleted" in caught.value.message
    assert_unchanged(before, snapshot(project, root=tmp_path))


def test_item02_delete_model_through_link_to_outside_deletes_nothing(tmp_path, trained):
    from engine.models import delete_model
    from engine.store import Project

    victim = make_victim(tmp_path / "victim")
    project = copy_project(trained, tmp_path / "proj")
    member = project.with_name("p_files") / "models" / "d_tiny-distilbert"
    shutil.rmtree(member)
    with Project.open(project) as opened:
        member.symlink_to(victim, target_is_directory=True)  # linked out while open
        before = snapshot(project, root=tmp_path)
        with pytest.raises(StoredLinkError) as caught:
            delete_model(opened, MEMBER)
    assert caught.value.code == "CB151"
    assert_unchanged(before, snapshot(project, root=tmp_path))


def test_item02_delete_model_removes_its_own_folder(tmp_path, trained):
    from engine.models import delete_model, list_models
    from engine.store import Project

    project = copy_project(trained, tmp_path / "proj")
    member = project.with_name("p_files") / "models" / "d_tiny-distilbert"
    with Project.open(project) as opened:
        delete_model(opened, MEMBER)
        assert list_models(opened) == []
    assert not member.exists()


def test_item02_check_stored_paths_refuses_a_crafted_project(tmp_path, trained):
    from engine.store.paths import check_stored_paths

    project = copy_project(trained, tmp_path / "proj")
    conn = sqlite3.connect(f"file:{project}?mode=ro", uri=True)
    try:
        check_stored_paths(conn, project)  # the trained project is fine
    finally:
        conn.close()
    store_path(project, "../../victim")
    before = snapshot(project, root=tmp_path)
    conn = sqlite3.connect(f"file:{project}?mode=ro", uri=True)
    try:
        with pytest.raises(StoredPathError) as caught:
            check_stored_paths(conn, project)
    finally:
        conn.close()
    assert caught.value.code == "CB150" and MEMBER in caught.value.message
    assert_unchanged(before, snapshot(project, root=tmp_path))


def test_item02_a_member_with_an_outside_path_is_not_loaded(tmp_path, trained, models_env):
    """Using the member (attribute) is refused as well: nothing is read from outside the project."""
    victim = make_victim(tmp_path / "victim")
    project = copy_project(trained, tmp_path / "proj")
    store_path(project, "../../victim")
    before = snapshot(project, root=tmp_path)
    done = cli("attribute", str(project), "d", "--members", MEMBER, "--limit", "2", "--ig-steps", "4",
               env=models_env)
    refused(done, "CB150")
    assert_unchanged(before, snapshot(project, root=tmp_path))
    assert victim.is_dir()


# --------------------------------------------------------------------------- safe_remove


def test_item02_safe_remove_refuses_dotdot_absolute_and_outside_links(tmp_path, project):
    from engine.store.paths import safe_remove

    victim = make_victim(tmp_path / "victim")
    files = project.files_dir
    (files / "models").mkdir(exist_ok=True)
    link = files / "models" / "link"
    link.symlink_to(victim, target_is_directory=True)
    (files / "out").symlink_to(tmp_path, target_is_directory=True)
    before = snapshot(project.path, root=tmp_path)
    for path in (files / ".." / "victim", victim, files, files / "models" / "link" / "notes.txt",
                 files / "out" / "victim", files / ".."):
        with pytest.raises(RemoveOutsideError) as caught:
            safe_remove(project, path)
        assert caught.value.code == "CB152" and "Nothing was deleted" in caught.value.message
    assert_unchanged(before, snapshot(project.path, root=tmp_path))
    # a link inside is removed itself, its target stays
    assert safe_remove(project, link) is True
    assert not link.exists() and not link.is_symlink() and (victim / "notes.txt").read_text() == "precious\n"
    assert safe_remove(project, link) is False  # already gone


def test_item02_safe_remove_removes_a_folder_inside_but_not_what_its_links_point_at(tmp_path, project):
    from engine.store.paths import safe_remove

    victim = make_victim(tmp_path / "victim")
    cache = project.files_dir / "features" / "x"
    cache.mkdir(parents=True)
    (cache / "part.bin").write_bytes(b"1234")
    (cache / "escape").symlink_to(victim, target_is_directory=True)
    before = snapshot(project.path, root=victim)
    assert safe_remove(project, cache) is True
    assert not cache.exists()
    assert before.files == snapshot(project.path, root=victim).files


@pytest.mark.parametrize("verb", [("info",), ("export", "d", "out.csv"), ("import", "more.csv", "--name", "more")])
def test_item02_a_crafted_project_is_refused_on_open_by_every_verb(tmp_path, trained, verb):
    victim = make_victim(tmp_path / "victim")
    project = copy_project(trained, tmp_path / "proj")
    store_path(project, "../../victim")
    (tmp_path / "more.csv").write_text("text,label\na,pos\nb,neg\n", encoding="utf-8")
    before = snapshot(project, root=tmp_path)
    args = [a if a not in ("out.csv", "more.csv") else str(tmp_path / a) for a in verb]
    done = cli(args[0], str(project), *args[1:])
    assert done.returncode == 3 and "[CB150]" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not (tmp_path / "out.csv").exists()
    assert_unchanged(before, snapshot(project, root=tmp_path))
    assert victim.is_dir() and any(victim.iterdir())
