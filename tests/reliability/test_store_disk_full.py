"""Issue 15, "Full disk: import (database or disk is full)": a named error, exit 3, project unchanged."""

from __future__ import annotations

import sqlite3
import subprocess

import pytest

from engine.errors import DiskFullError
from engine.store import Project
from engine.store.failures import named_storage_error
from tests.reliability.storage_fs import big_csv, cli, info, tmpfs


def test_full_disk_import_is_a_named_error_and_leaves_the_project_unchanged(tmp_path):
    source = big_csv(tmp_path / "big.csv", 40_000)  # ~3 MB of text: more than the 1 MiB disk holds
    small = big_csv(tmp_path / "small.csv", 200)
    with tmpfs(tmp_path / "disk", "1m") as disk:
        project = disk / "p.cbproj"
        assert cli("init", str(project)).returncode == 0
        assert cli("import", str(project), str(small), "--name", "before").returncode == 0
        before = info(project)

        done = cli("import", str(project), str(source), "--name", "too-big")

        assert done.returncode == 3, done.stderr
        assert "[CB141]" in done.stderr and "disk is full" in done.stderr
        assert "What to do: Free some space" in done.stderr and "The project is unchanged" in done.stderr
        last = done.stderr.strip().splitlines()
        assert any(line.startswith("error: [CB141]") for line in last), done.stderr
        after = info(project)
        assert after["datasets"] == before["datasets"]  # the failed import is not visible
        # With room again, the next open removes the hidden rows too: every table as before.
        subprocess.run(["mount", "-o", "remount,size=16m", str(disk)], check=True)
        assert info(project) == before
        with sqlite3.connect(project) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_sqlite_full_maps_to_disk_full(tmp_path):
    exc = sqlite3.OperationalError("database or disk is full")
    exc.sqlite_errorcode = 13  # SQLITE_FULL
    named = named_storage_error(exc, tmp_path / "p.cbproj", "writing to the project")
    assert isinstance(named, DiskFullError) and named.code == "CB141"
    assert "free there" in named.message


@pytest.mark.parametrize("errno_name", ["ENOSPC", "EFBIG"])
def test_os_disk_full_errnos_map_to_disk_full(tmp_path, errno_name):
    import errno

    exc = OSError(getattr(errno, errno_name), "no room")
    assert isinstance(named_storage_error(exc, tmp_path / "out.csv", "writing the export"), DiskFullError)


def test_a_write_on_a_full_disk_raises_disk_full_from_the_writer(tmp_path):
    with tmpfs(tmp_path / "disk", "512k") as disk:
        with Project.create(disk / "p.cbproj") as project:

            def fill(conn: sqlite3.Connection) -> None:
                conn.execute("CREATE TABLE IF NOT EXISTS filler (x BLOB)")
                for _ in range(64):
                    conn.execute("INSERT INTO filler VALUES (zeroblob(65536))")

            with pytest.raises(DiskFullError):
                project.writer.run(fill)
            assert "filler" not in {r[0] for r in project.db.execute("SELECT name FROM sqlite_master")}
