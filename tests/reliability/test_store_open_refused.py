"""Issue 15, "A failed open of a project whose schema_version table was dropped writes an empty table
into the file": an open never writes to a file it refuses."""

from __future__ import annotations

import sqlite3

import pytest

from engine.errors import NotAProjectError, ProjectDamagedError, SchemaTooNewError
from engine.store import Project
from tests.reliability.storage_fs import cli


def _damaged(project: Project, sql: str) -> bytes:
    path = project.path
    project.close()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(sql)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path.read_bytes()


def test_open_of_a_project_without_schema_version_is_refused_and_leaves_the_file_byte_identical(project):
    before = _damaged(project, "DROP TABLE schema_version")
    with pytest.raises(ProjectDamagedError) as err:
        Project.open(project.path)
    assert err.value.code == "CB143" and "schema_version" in err.value.message and err.value.hint
    assert project.path.read_bytes() == before
    conn = sqlite3.connect(project.path)
    assert conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'schema_version'").fetchone() is None
    conn.close()


def test_cli_info_on_a_project_without_schema_version_exits_3_and_changes_nothing(project):
    before = _damaged(project, "DROP TABLE schema_version")
    done = cli("info", str(project.path))
    assert done.returncode == 3 and "[CB143]" in done.stderr, done.stderr
    assert project.path.read_bytes() == before


def test_open_of_a_project_missing_a_table_is_refused_unchanged(project):
    before = _damaged(project, "DROP TABLE imports")
    with pytest.raises(ProjectDamagedError, match="imports"):
        Project.open(project.path)
    assert project.path.read_bytes() == before


def test_open_of_a_newer_schema_is_refused_unchanged(project):
    before = _damaged(project, "INSERT INTO schema_version VALUES (99, 'future')")
    with pytest.raises(SchemaTooNewError):
        Project.open(project.path)
    assert project.path.read_bytes() == before


def test_open_of_a_foreign_sqlite_file_is_refused_unchanged(tmp_path):
    path = tmp_path / "other.cbproj"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with pytest.raises(NotAProjectError):
        Project.open(path)
    assert path.read_bytes() == before
