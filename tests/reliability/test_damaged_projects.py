"""Issue 52, item 9: a damaged project (a bad page mid-file, a missing column, bad JSON in
``datasets.labels`` or ``models.params``) is refused on open with a named error, by every verb, and
nothing is ever written to it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from engine.errors import ProjectColumnsError, ProjectCorruptError, StoredValueError
from engine.io import import_file
from engine.store import Project
from engine.store.health import expected_columns
from tests.reliability.integrity import assert_unchanged, files_digest, snapshot
from tests.reliability.storage_fs import big_csv, cli

PAGE = 4096


def _project_with_data(tmp_path: Path, rows: int = 3000) -> tuple[Path, Path]:
    """A project holding one imported dataset, its WAL folded into the main file; and the CSV."""
    csv = big_csv(tmp_path / "data.csv", rows)
    path = tmp_path / "p.cbproj"
    with Project.create(path) as project:
        import_file(project, csv)
    _sql(path)
    return path, csv


def _sql(path: Path, *statements: str) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    for statement in statements:
        conn.execute(statement)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def _every_verb(path: Path, csv: Path, tmp_path: Path) -> list[tuple[str, ...]]:
    return [
        ("info", str(path)),
        ("info", str(path), "--json"),
        ("export", str(path), "1", str(tmp_path / "out.csv")),
        ("import", str(path), str(csv), "--name", "again"),
    ]


def _assert_refused(done, code: str) -> None:
    assert done.returncode == 3, (done.returncode, done.stderr)
    assert f"[{code}]" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert "What to do:" in done.stderr


def test_item09_bad_page_mid_file_is_refused_and_not_written(tmp_path):
    path, csv = _project_with_data(tmp_path)
    data = bytearray(path.read_bytes())
    pages = len(data) // PAGE
    assert pages > 20
    middle = pages // 2
    data[middle * PAGE:(middle + 1) * PAGE] = b"\xde\xad\xbe\xef" * (PAGE // 4)
    path.write_bytes(bytes(data))
    before_bytes = path.read_bytes()
    before_files = files_digest(tmp_path, project=path)

    for args in _every_verb(path, csv, tmp_path):
        done = cli(*args)
        _assert_refused(done, "CB145")
        assert "damaged" in done.stderr and str(path) in done.stderr
        assert path.read_bytes() == before_bytes, args
        assert not Path(f"{path}-wal").exists() or Path(f"{path}-wal").stat().st_size == 0
    assert files_digest(tmp_path, project=path) == before_files  # no export, no other file written
    with pytest.raises(ProjectCorruptError):
        Project.open(path)
    assert path.read_bytes() == before_bytes


def test_item09_bad_page_is_found_by_quick_check_above_the_full_check_size(tmp_path, monkeypatch):
    from engine.store import health

    path, _ = _project_with_data(tmp_path)
    data = bytearray(path.read_bytes())
    middle = len(data) // PAGE // 2
    data[middle * PAGE:(middle + 1) * PAGE] = b"\x00\xff" * (PAGE // 2)
    path.write_bytes(bytes(data))
    before = path.read_bytes()
    monkeypatch.setattr(health, "FULL_CHECK_MAX_BYTES", 0)  # as for a file of hundreds of MB
    with pytest.raises(ProjectCorruptError, match="quick_check"):
        Project.open(path)
    assert path.read_bytes() == before


def test_item09_missing_column_is_refused_and_not_written(tmp_path):
    path, csv = _project_with_data(tmp_path, rows=50)
    _sql(path, "ALTER TABLE examples DROP COLUMN meta")
    before = snapshot(path, root=tmp_path)
    before_bytes = path.read_bytes()

    for args in _every_verb(path, csv, tmp_path):
        done = cli(*args)
        _assert_refused(done, "CB146")
        assert "examples (meta)" in done.stderr, done.stderr
    with pytest.raises(ProjectColumnsError, match=r"examples \(meta\)"):
        Project.open(path)
    assert path.read_bytes() == before_bytes
    assert_unchanged(before, snapshot(path, root=tmp_path))


def test_item09_missing_column_of_an_older_schema_is_checked_against_that_version(tmp_path):
    # Schema 3 added datasets.state; a version-2 file without it is sound, one at version 3 is not.
    assert "state" not in expected_columns(2)["datasets"]
    assert "state" in expected_columns(3)["datasets"]
    assert "splitter" in expected_columns(10)["triples"]


def test_item09_bad_json_in_dataset_labels_is_refused_and_not_written(tmp_path):
    path, csv = _project_with_data(tmp_path, rows=50)
    _sql(path, "UPDATE datasets SET labels = '[\"neg\", \"pos\"' WHERE id = 1")
    before = snapshot(path, root=tmp_path)

    for args in _every_verb(path, csv, tmp_path):
        done = cli(*args)
        _assert_refused(done, "CB147")
        assert "datasets.labels of row 1" in done.stderr, done.stderr
    assert_unchanged(before, snapshot(path, root=tmp_path))


def test_item09_dataset_labels_of_the_wrong_json_type_are_refused(tmp_path):
    path, csv = _project_with_data(tmp_path, rows=50)
    _sql(path, "UPDATE datasets SET labels = '{\"neg\": 1}' WHERE id = 1")
    before = snapshot(path, root=tmp_path)
    done = cli("info", str(path))
    _assert_refused(done, "CB147")
    assert "not a JSON array" in done.stderr
    assert_unchanged(before, snapshot(path, root=tmp_path))


def test_item09_bad_json_in_model_params_is_refused_and_not_written(tmp_path):
    path, csv = _project_with_data(tmp_path, rows=50)
    _sql(path, "INSERT INTO models (id, name, backbone, params, metrics, created_at) "
               "VALUES (7, 'm1', 'minilm-l6', '{\"spec\": ', '{}', '2024-01-01T00:00:00+00:00')")
    before = snapshot(path, root=tmp_path)

    for args in [*_every_verb(path, csv, tmp_path), ("models", str(path))]:
        done = cli(*args)
        _assert_refused(done, "CB147")
        assert "models.params of row 7" in done.stderr, done.stderr
    assert_unchanged(before, snapshot(path, root=tmp_path))


def test_item09_json_damaged_while_open_gives_a_named_error_naming_the_row(tmp_path):
    path, _ = _project_with_data(tmp_path, rows=50)
    with Project.open(path) as project:
        _sql(path, "UPDATE datasets SET params = 'not json' WHERE id = 1")
        with pytest.raises(StoredValueError, match=r"datasets\.params of row 1") as err:
            project.datasets()
        assert err.value.code == "CB147" and err.value.hint


def test_item09_a_sound_project_still_opens(tmp_path):
    path, _ = _project_with_data(tmp_path, rows=50)
    before = snapshot(path, root=tmp_path)
    done = cli("info", str(path))
    assert done.returncode == 0, done.stderr
    assert_unchanged(before, snapshot(path, root=tmp_path))
