"""Issue 15, runs: one LLM run per (dataset, step) at a time, across real processes; killed runs.

Two ``triples`` runs on one project used to send 220 of 258 requests twice, and a killed run
stayed ``running`` forever. Each test starts real ``python -m engine`` processes against a
loopback stub server that counts requests.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.engine.counterbias.scripted_llm import scripted_reply
from tests.engine.llm.conftest import stub  # noqa: F401
from tests.reliability.test_llm_spend import N_EXAMPLES, cache_rows, project_path  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]


def engine(*args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "engine", "-q", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_run_in_lock(project: Path, step: str, timeout: float = 60) -> dict:
    """The lock file's content once a run id is in it (the first run has started)."""
    folder = project.with_name(project.stem + "_files") / "locks"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for lock in folder.glob(f"{step}-*.lock") if folder.exists() else []:
            try:
                info = json.loads(lock.read_text() or "{}")
            except ValueError:
                continue
            if info.get("run_id") is not None:
                return info
        time.sleep(0.05)
    raise AssertionError("the first run never took its lock")


def runs(project: Path) -> list[tuple[int, str]]:
    with sqlite3.connect(project) as conn:
        return [tuple(r) for r in conn.execute("SELECT id, status FROM runs WHERE kind='triples' ORDER BY id")]


def triples_args(project: Path, base_url: str) -> list[str]:
    return ["triples", str(project), "d", "--backend", "openai", "--base-url", base_url, "--model", "stub",
            "--concurrency", "2"]


def test_two_triples_runs_at_once_the_second_refuses(project_path, stub):  # noqa: F811
    server = stub(latency=0.3, reply=scripted_reply)  # 20 requests, 2 at a time: the first run lasts about 3 s
    first = engine(*triples_args(project_path, server.base_url))
    info = wait_for_run_in_lock(project_path, "triples")
    second = engine(*triples_args(project_path, server.base_url))
    out2, err2 = second.communicate(timeout=120)
    out1, err1 = first.communicate(timeout=120)
    assert first.returncode == 0, err1
    assert second.returncode == 3, err2
    assert "[CB770]" in err2 and "already running" in err2
    assert f"run {info['run_id']}" in err2 and info["started_at"] in err2 and str(first.pid) in err2
    assert server.count == N_EXAMPLES  # no request sent twice (was 220 of 258)
    assert cache_rows(project_path) == N_EXAMPLES
    assert [s for _, s in runs(project_path)] == ["done"]  # the refused run recorded nothing


def test_killed_triples_run_is_marked_interrupted_and_resumes(project_path, stub):  # noqa: F811
    server = stub(latency=0.3, reply=scripted_reply)
    first = engine(*triples_args(project_path, server.base_url))
    info = wait_for_run_in_lock(project_path, "triples")
    while cache_rows(project_path) < 4:
        time.sleep(0.05)
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=30)
    answered = cache_rows(project_path)
    assert runs(project_path) == [(info["run_id"], "running")]  # nobody could finish the row
    sent_before = server.count
    # the lock of the dead process is taken over, the row is marked interrupted on open,
    # and the new run continues with the cached answers
    second = engine(*triples_args(project_path, server.base_url))
    out, err = second.communicate(timeout=120)
    assert second.returncode == 0, err
    assert runs(project_path) == [(info["run_id"], "interrupted"), (info["run_id"] + 1, "done")]
    result = json.loads(out)
    assert result["cache_hits"] >= answered
    assert server.count - sent_before == N_EXAMPLES - answered
    assert cache_rows(project_path) == N_EXAMPLES
    with sqlite3.connect(project_path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_open_keeps_a_live_run_running(project_path, stub):  # noqa: F811
    # An open in another process while a run is going must not mark it interrupted.
    from engine.store import Project

    server = stub(latency=0.3, reply=scripted_reply)
    first = engine(*triples_args(project_path, server.base_url))
    info = wait_for_run_in_lock(project_path, "triples")
    Project.open(project_path).close()
    assert runs(project_path) == [(info["run_id"], "running")]
    _, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    assert runs(project_path) == [(info["run_id"], "done")]


def test_lock_of_a_dead_process_is_taken_over(project_path, stub):  # noqa: F811
    # A stale lock file (content of a process that is gone) does not refuse the next run.
    folder = project_path.with_name(project_path.stem + "_files") / "locks"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "triples-1.lock").write_text(json.dumps({"pid": 999999, "host": "x", "started_at": "then",
                                                       "run_id": 77}))
    server = stub(reply=scripted_reply)
    proc = engine(*triples_args(project_path, server.base_url))
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert server.count == N_EXAMPLES


@pytest.mark.parametrize("status", ["running"])
def test_rows_from_before_runs_recorded_their_process_are_interrupted(project_path, status):  # noqa: F811
    from engine.store import Project

    with sqlite3.connect(project_path) as conn:
        conn.execute("INSERT INTO runs (kind, status, started_at) VALUES ('triples', ?, '2026-01-01T00:00:00')",
                     (status,))
    Project.open(project_path).close()
    assert runs(project_path)[-1][1] == "interrupted"


def test_an_open_that_refuses_the_file_marks_nothing(project_path):  # noqa: F811
    # A stale 'running' row in a file the open refuses (written by a newer build) stays as it is:
    # an open never writes to a file it refuses.
    from engine.errors import SchemaTooNewError
    from engine.store import Project

    with sqlite3.connect(project_path) as conn:
        conn.execute("INSERT INTO runs (kind, status, started_at) VALUES ('triples', 'running', 't')")
        conn.execute("INSERT INTO schema_version VALUES (999, 't')")
        conn.commit()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    before = project_path.read_bytes()
    with pytest.raises(SchemaTooNewError):
        Project.open(project_path)
    assert project_path.read_bytes() == before
    assert runs(project_path)[-1][1] == "running"
