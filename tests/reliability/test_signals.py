"""Issue 52, item 14: a run stopped by Ctrl+C (SIGINT) or by SIGTERM is stored ``cancelled``, not
``failed: KeyboardInterrupt`` or left ``running``, and the process exits 130 / 143 without a traceback.

Each test runs ``triples`` in a real process against a loopback LLM stub that answers slowly, sends the
signal once the run's row says ``running``, and reads the row afterwards.
"""

from __future__ import annotations

import csv
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path


from tests.engine.llm.stub_server import StubServer
from tests.reliability.integrity import integrity
from tests.reliability.storage_fs import REPO, cli

#: Seconds the stub waits before each answer: the run lasts far longer than it takes to signal it.
LATENCY = 2.0


def _project(tmp_path: Path) -> Path:
    src = tmp_path / "d.csv"
    with open(src, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["text", "label"])
        w.writerows([(f"Review {i} says the film is {'good' if i % 2 else 'bad'}.", "pos" if i % 2 else "neg")
                     for i in range(40)])
    path = tmp_path / "p.cbproj"
    assert cli("init", str(path)).returncode == 0
    assert cli("import", str(path), str(src), "--name", "d").returncode == 0
    return path


def _runs(path: Path) -> list[tuple[int, str, str | None]]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT id, status, message FROM runs ORDER BY id").fetchall()
    finally:
        conn.close()


def _signalled_triples(tmp_path: Path, signum: int) -> tuple[subprocess.CompletedProcess, list]:
    path = _project(tmp_path)
    with StubServer(lambda body, attempt: "ok", latency=LATENCY) as server:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        proc = subprocess.Popen(
            [sys.executable, "-m", "engine", "-q", "triples", str(path), "d", "--backend", "openai",
             "--base-url", server.base_url, "--model", "stub", "--concurrency", "1"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
            # A shell's background job starts with SIGINT ignored; Ctrl+C reaches a foreground one.
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        try:
            deadline = time.monotonic() + 120  # a guard against hanging, not a measured time
            while not any(status == "running" for _, status, _ in _runs(path)):
                assert proc.poll() is None, proc.communicate()
                assert time.monotonic() < deadline, "the run was never recorded"
                time.sleep(0.1)
            proc.send_signal(signum)
            out, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), _runs(path)


def test_item14_sigint_stores_the_run_cancelled_not_failed(tmp_path):
    done, runs = _signalled_triples(tmp_path, signal.SIGINT)
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr and "cancelled" in done.stderr
    [(_, status, message)] = runs
    assert status == "cancelled", (status, message)
    assert "KeyboardInterrupt" not in (message or "") and "Ctrl+C" in message
    assert integrity(tmp_path / "p.cbproj") == "ok"
    assert cli("info", str(tmp_path / "p.cbproj")).returncode == 0
    assert [r[1] for r in _runs(tmp_path / "p.cbproj")] == ["cancelled"]  # not re-marked by the open


def test_item14_sigterm_stores_the_run_cancelled_before_exit(tmp_path):
    done, runs = _signalled_triples(tmp_path, signal.SIGTERM)
    assert done.returncode == 143, done.stderr
    assert "Traceback" not in done.stderr and "terminated" in done.stderr
    [(_, status, message)] = runs
    assert status == "cancelled", (status, message)
    assert "SIGTERM" in message
    assert integrity(tmp_path / "p.cbproj") == "ok"
    assert cli("info", str(tmp_path / "p.cbproj")).returncode == 0
    assert [r[1] for r in _runs(tmp_path / "p.cbproj")] == ["cancelled"]
