"""Issue 15, "A second writer while a long import runs" and "Two imports with the same default name at
once": writers of two processes wait for each other (visibly) and both finish; a writer whose lock
holder makes no progress gets a named "project busy" error, never a raw OperationalError."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from engine.errors import ProjectBusyError
from engine.store import writer as writer_module
from tests.reliability.storage_fs import REPO, big_csv, cli, info


def _import(project, source, *extra):
    return subprocess.Popen(
        [sys.executable, "-m", "engine", "-q", "import", str(project), str(source), *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def test_a_second_writer_while_a_long_import_runs_waits_and_both_imports_complete(tmp_path):
    project = tmp_path / "p.cbproj"
    assert cli("init", str(project)).returncode == 0
    first_file = big_csv(tmp_path / "first.csv", 150_000)
    second_file = big_csv(tmp_path / "second.csv", 100_000)

    first = _import(project, first_file, "--name", "first")
    time.sleep(1.0)  # the first import is streaming slices now
    second = _import(project, second_file, "--name", "second")
    out2, err2 = second.communicate(timeout=300)
    out1, err1 = first.communicate(timeout=300)

    assert first.returncode == 0, err1
    assert second.returncode == 0, err2
    assert "database is locked" not in err1 + err2 and "Traceback" not in err1 + err2
    assert json.loads(out1)["rows"] == 150_000 and json.loads(out2)["rows"] == 100_000
    shown = {d["name"]: d["rows"] for d in info(project)["datasets"]}
    assert shown == {"first": 150_000, "second": 100_000}


def test_two_imports_with_the_same_default_name_at_once_never_fail_with_integrity_error(tmp_path):
    project = tmp_path / "p.cbproj"
    assert cli("init", str(project)).returncode == 0
    source = big_csv(tmp_path / "same.csv", 60_000)
    runs = [_import(project, source) for _ in range(2)]
    results = [(p.wait(timeout=300), p.stdout.read(), p.stderr.read()) for p in runs]
    for code, _out, err in results:
        assert "IntegrityError" not in err and "Traceback" not in err, err
        # Either both get a dataset (the second under a unique name), or the loser is told why.
        assert code == 0 or (code == 3 and "[CB105]" in err), err
    names = [d["name"] for d in info(project)["datasets"]]
    assert len(names) == len(set(names)) == sum(code == 0 for code, _, _ in results) >= 1


_HOLDER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("holding", flush=True)
time.sleep(float(sys.argv[2]))
conn.execute("ROLLBACK")
"""


def test_a_writer_blocked_by_a_stalled_process_gets_project_busy_and_says_it_waits(project, monkeypatch):
    monkeypatch.setattr(writer_module, "BUSY_PATIENCE", 2.0)
    messages: list[str] = []
    project.on_wait = messages.append
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(project.path), "30"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        started = time.monotonic()
        with pytest.raises(ProjectBusyError) as err:
            project.writer.run(lambda conn: conn.execute("INSERT INTO meta VALUES ('k', 'v')"))
        assert 2.0 <= time.monotonic() - started < 15
        assert err.value.code == "CB142" and err.value.hint
        assert messages and messages[0].startswith("waiting for the project (another process is writing)")
    finally:
        holder.kill()
        holder.wait()
    # Once the other process is gone the same writer works again.
    project.writer.run(lambda conn: conn.execute("INSERT INTO meta VALUES ('k', 'v')"))


def test_a_writer_waits_for_a_process_that_holds_the_lock_briefly(project):
    messages: list[str] = []
    project.on_wait = messages.append
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(project.path), "1.5"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        project.writer.run(lambda conn: conn.execute("INSERT INTO meta VALUES ('k2', 'v')"))
    finally:
        holder.wait()
    assert messages, "the wait was not reported"
    assert project.db.execute("SELECT value FROM meta WHERE key = 'k2'").fetchone()[0] == "v"
