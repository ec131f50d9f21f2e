"""Issue 15, "Read-only project file": reading works, writing is a named error, the file is untouched."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path

import pytest

from engine.errors import ProjectReadOnlyError, ReadOnlyMigrationError
from engine.store import Project, schema
from tests.reliability.storage_fs import big_csv, cli, remount, tmpfs


def _digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def _project_with_data(folder: Path, tmp_path: Path) -> Path:
    project = folder / "p.cbproj"
    assert cli("init", str(project)).returncode == 0
    done = cli("import", str(project), str(big_csv(tmp_path / "small.csv", 50)), "--name", "small")
    assert done.returncode == 0, done.stderr
    return project


def test_read_only_folder_info_and_export_work_import_is_a_named_error(tmp_path):
    """A real read-only disk (tmpfs remounted ro): EROFS stops root too."""
    with tmpfs(tmp_path / "disk", "8m") as disk:
        project = _project_with_data(disk, tmp_path)
        remount(disk, "ro")
        try:
            before = _digest(disk)

            shown = cli("info", str(project))
            assert shown.returncode == 0, shown.stderr
            assert "small" in shown.stdout and "50 rows" in shown.stdout

            out = tmp_path / "out.csv"
            exported = cli("export", str(project), "small", str(out))
            assert exported.returncode == 0, exported.stderr
            assert len(out.read_text(encoding="utf-8-sig").splitlines()) == 51

            imported = cli("import", str(project), str(tmp_path / "small.csv"), "--name", "again")
            assert imported.returncode == 3, imported.stderr
            assert "[CB140]" in imported.stderr and "read-only" in imported.stderr
            assert "copy it" in imported.stderr.lower() or "Copy the project" in imported.stderr
            assert "Traceback" not in imported.stderr
            assert _digest(disk) == before
        finally:
            remount(disk, "rw")


def test_read_only_project_file_as_another_user(tmp_path):
    """chmod does not stop root, so run the CLI as user 'nobody' on a 0444 file in a 0555 folder."""
    if os.geteuid() != 0:
        pytest.skip("needs root to switch to another user")
    folder = tmp_path / "ro"
    folder.mkdir()
    project = _project_with_data(folder, tmp_path)
    data = tmp_path / "small.csv"
    for p in (tmp_path, data):
        p.chmod(0o755 if p.is_dir() else 0o644)
    for p in folder.rglob("*"):
        p.chmod(0o555 if p.is_dir() else 0o444)
    folder.chmod(0o555)
    before = _digest(folder)
    as_nobody = {"preexec_fn": lambda: (os.setgid(65534), os.setuid(65534))}
    try:
        probe = cli("--version", **as_nobody)
    except (PermissionError, OSError) as exc:  # pragma: no cover
        pytest.skip(f"cannot run as nobody: {exc}")
    if probe.returncode != 0:
        pytest.skip(f"the environment is not readable by 'nobody': {probe.stderr[-200:]}")

    shown = cli("info", str(project), **as_nobody)
    assert shown.returncode == 0, shown.stderr
    imported = cli("import", str(project), str(data), "--name", "again", **as_nobody)
    assert imported.returncode == 3 and "[CB140]" in imported.stderr, imported.stderr
    assert _digest(folder) == before


def test_forced_read_only_open_refuses_writes(project, tmp_path):
    project.close()
    before = project.path.read_bytes()
    with Project.open(project.path, readonly=True) as ro:
        assert ro.readonly
        assert ro.datasets() == []
        with pytest.raises(ProjectReadOnlyError) as err:
            ro.writer
        assert err.value.code == "CB140" and err.value.hint
    assert project.path.read_bytes() == before


def test_read_only_file_that_needs_a_migration_is_a_named_error(tmp_path):
    path = tmp_path / "old.cbproj"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA application_id = 1128420145")  # 'CBS1'
    conn.execute("PRAGMA journal_mode = wal")
    conn.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)")
    for version in (1, 2):
        for statement in schema._split_sql(schema.MIGRATIONS[version - 1]):
            conn.execute(statement)
        conn.execute("INSERT INTO schema_version VALUES (?, ?)", (version, schema.now()))
    conn.close()
    before = path.read_bytes()
    with pytest.raises(ReadOnlyMigrationError) as err:
        Project.open(path, readonly=True)
    assert err.value.code == "CB144" and "schema 2" in err.value.message
    assert path.read_bytes() == before
