"""Issue 52, item 13: dataset names. The default import name holds no ``/``; names with ``/``, control
characters or only digits are refused; ``info`` escapes control characters; hints quote shell arguments;
the member-prefix error names ``--prefix``."""

from __future__ import annotations

import shlex
import sqlite3
from pathlib import Path

import pytest

from engine.errors import DatasetNameError
from engine.io import ImportOptions, import_file
from engine.io.importer import default_dataset_name
from engine.store import Project
from engine.store.names import check_dataset_name, shown
from tests.reliability.integrity import assert_unchanged, snapshot
from tests.reliability.storage_fs import cli


def _sst2(tmp_path: Path) -> Path:
    folder = tmp_path / "sst2"
    folder.mkdir()
    path = folder / "train.tsv"
    path.write_text("sentence\tlabel\ngood film\t1\nbad film\t0\nfine acting\t1\ndull plot\t0\n", encoding="utf-8")
    return path


def _project(tmp_path: Path, name: str = "p.cbproj") -> Path:
    path = tmp_path / name
    Project.create(path).close()
    return path


def _rename_stored(path: Path, dataset_id: int, name: str) -> None:
    """Give a dataset a name stored before the rules (an older project), straight in SQLite."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("UPDATE datasets SET name = ? WHERE id = ?", (name, dataset_id))
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def _refused(done, code: str) -> None:
    assert done.returncode == 3, (done.returncode, done.stderr)
    assert f"[{code}]" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_item13_default_import_name_of_sst2_train_tsv_has_no_slash(tmp_path):
    project, data = _project(tmp_path), _sst2(tmp_path)
    done = cli("import", str(project), str(data), "--quoting", "none")
    assert done.returncode == 0, done.stderr
    with Project.open(project) as p:
        names = [d.name for d in p.datasets()]
    assert names == ["sst2-train"]
    assert default_dataset_name(Path("combined/dev.tsv.gz")) == "combined-dev"
    assert default_dataset_name(Path("2019.csv")) == "dataset 2019"
    assert "/" not in default_dataset_name(Path("a\\b/c\x1b.jsonl"))


def test_item13_default_member_prefix_of_the_default_name_is_valid(tmp_path):
    from engine.models.config import default_ensemble

    config = default_ensemble(f"{default_dataset_name(Path('sst2/train.tsv'))}:")
    assert all("/" not in m.name for m in config.members)


@pytest.mark.parametrize("name, why", [("sst2/train", "'/'"), ("a\\b", "'\\\\'"), ("1", "digits only"),
                                       ("red\x1b[31m", "control characters"), ("tab\there", "control characters"),
                                       ("evil\u202etxt.exe", "control characters"), (" padded", "white space")])
def test_item13_bad_dataset_names_are_refused_at_import_and_nothing_is_written(tmp_path, name, why):
    project, data = _project(tmp_path), _sst2(tmp_path)
    before = snapshot(project, root=tmp_path)
    done = cli("import", str(project), str(data), "--quoting", "none", "--name", name)
    _refused(done, "CB106")
    assert why in done.stderr and "--name" in done.stderr
    assert_unchanged(before, snapshot(project, root=tmp_path))
    with Project.open(project) as p, pytest.raises(DatasetNameError):
        import_file(p, data, options=ImportOptions(name=name))
    assert_unchanged(before, snapshot(project, root=tmp_path))


def test_item13_ordinary_names_are_accepted(tmp_path):
    for name in ("sst2-train", "CAD sentiment (demo)", "snli+cad v2", "ภาพยนตร์", "1a", "2019 reviews"):
        check_dataset_name(name)


def test_item13_info_escapes_ansi_escapes_in_stored_names(tmp_path):
    project, data = _project(tmp_path), _sst2(tmp_path)
    assert cli("import", str(project), str(data), "--quoting", "none").returncode == 0
    _rename_stored(project, 1, "red\x1b[31m\x1b]0;owned\x07 name")
    before = snapshot(project, root=tmp_path)
    done = cli("info", str(project))
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    assert "red\\x1b[31m\\x1b]0;owned\\x07 name" in done.stdout
    assert shown("plain name") == "plain name"
    assert_unchanged(before, snapshot(project, root=tmp_path))


def test_item13_cb090_hint_quotes_the_shell_command_built_from_names(tmp_path):
    project, data = _project(tmp_path, "my project.cbproj"), _sst2(tmp_path)
    name = "reviews; touch pwned"
    assert cli("import", str(project), str(data), "--quoting", "none", "--name", name).returncode == 0
    before = snapshot(project, root=tmp_path)
    done = cli("attribute", str(project), name)
    _refused(done, "CB090")
    assert f"counterbias train {shlex.quote(str(project))} {shlex.quote(name)}" in done.stderr, done.stderr
    hint = done.stderr.split("Run: ", 1)[1].strip()
    assert shlex.split(hint) == ["counterbias", "train", str(project), name]
    assert_unchanged(before, snapshot(project, root=tmp_path))


def test_item13_member_prefix_error_of_an_old_slash_name_mentions_prefix(tmp_path):
    project, data = _project(tmp_path), _sst2(tmp_path)
    assert cli("import", str(project), str(data), "--quoting", "none").returncode == 0
    _rename_stored(project, 1, "sst2/train.tsv")  # the default name of older builds
    before = snapshot(project, root=tmp_path)
    done = cli("train", str(project), "sst2/train.tsv")
    _refused(done, "CB504")
    assert "--prefix" in done.stderr
    assert_unchanged(before, snapshot(project, root=tmp_path))


def test_item13_derived_names_of_an_old_slash_name_are_made_allowed(tmp_path):
    path = _project(tmp_path)
    with Project.open(path) as project:
        src = tmp_path / "d.csv"
        src.write_text("text,label\ngood,pos\nbad,neg\n", encoding="utf-8")
        ds = import_file(project, src, options=ImportOptions(name="d")).dataset
    _rename_stored(path, ds.id, "sst2/train")
    with Project.open(path) as project:
        derived = project.unique_dataset_name("sst2/train (z-filtered)")
        assert derived == "sst2-train (z-filtered)"
        project.check_name_free(derived)  # a name a new dataset may have


@pytest.mark.parametrize("name", ["a/b", "12", "red\x1b[31m"])
def test_item13_every_new_dataset_name_is_checked(project, name):
    # check_name_free is what augment, z-filter and presets call before they create a dataset
    with pytest.raises(DatasetNameError) as caught:
        project.check_name_free(name)
    assert caught.value.code == "CB106"
