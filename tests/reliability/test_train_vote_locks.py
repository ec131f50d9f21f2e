"""Issue 52, item 10: two ``train``s of the same members, or two ``vote``s of the same rows, at once.

The second run used to fail with a traceback (a half-written safetensors file; a UNIQUE
``vote_key``). Now each holds a lock while it runs (:func:`engine.store.locks.member_lock`,
:func:`engine.store.locks.vote_lock`), and the second is refused with a named error naming the
holder; nothing it would have written is written, and the first run finishes normally.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.reliability.integrity import assert_unchanged, snapshot
from tests.reliability.storage_fs import REPO, cli
from tests.reliability.test_stored_paths import MEMBER, TRAIN, copy_project, refused, write_dataset

VOTE = ("--members", MEMBER, "--limit", "4", "--ig-steps", "4", "-k", "2")


@pytest.fixture(scope="module")
def models_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return {"COUNTERBIAS_MODELS_CACHE": str(tmp_path_factory.mktemp("models-cache")), "HF_HUB_OFFLINE": "1"}


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory, models_env: dict[str, str]) -> Path:
    """Dataset ``d``, member ``d:tiny-distilbert`` and one stored vote over 4 rows (copied per test)."""
    folder = tmp_path_factory.mktemp("trained")
    project = folder / "p.cbproj"
    assert cli("init", str(project)).returncode == 0
    assert cli("import", str(project), str(write_dataset(folder / "d.csv")), "--name", "d").returncode == 0
    done = cli("train", str(project), "d", *TRAIN, env=models_env)
    assert done.returncode == 0, done.stderr
    done = cli("vote", str(project), "d", *VOTE, env=models_env)
    assert done.returncode == 0, done.stderr
    return project


def _forget_votes(project: Path) -> None:
    """The stored vote removed again (its attributions stay), so that ``vote`` computes it anew."""
    conn = sqlite3.connect(project)
    with conn:
        conn.execute("DELETE FROM word_votes")
        conn.execute("DELETE FROM vote_sets")
    conn.close()


def _lock_info(path: Path) -> dict:
    try:
        return json.loads(path.read_text() or "{}")
    except (OSError, ValueError):
        return {}


def test_item10_train_of_members_in_training_is_refused(tmp_path, models_env):
    """The test holds the members' lock (as a running train does); the CLI train is refused, then runs."""
    from engine.store import Project
    from engine.store.locks import member_lock

    project = tmp_path / "p.cbproj"
    assert cli("init", str(project)).returncode == 0
    assert cli("import", str(project), str(write_dataset(tmp_path / "d.csv")), "--name", "d").returncode == 0
    with Project.open(project) as opened, member_lock(opened, [MEMBER]) as locks:
        locks[0].set_run(4242)
        before = snapshot(project, root=tmp_path)
        done = cli("train", str(project), "d", *TRAIN, env=models_env)
        refused(done, "CB771")
        assert MEMBER in done.stderr and "run 4242" in done.stderr and f"process {os.getpid()}" in done.stderr
        assert_unchanged(before, snapshot(project, root=tmp_path))
    done = cli("train", str(project), "d", *TRAIN, env=models_env)  # the lock is free again
    assert done.returncode == 0, done.stderr


def test_item10_two_trains_of_the_same_members_at_once(tmp_path, models_env):
    """Two real processes: the second is refused while the first holds the lock; the first finishes."""
    project = tmp_path / "p.cbproj"
    assert cli("init", str(project)).returncode == 0
    assert cli("import", str(project), str(write_dataset(tmp_path / "d.csv")), "--name", "d").returncode == 0
    env = {**os.environ, "PYTHONPATH": str(REPO), **models_env}
    slow = [a if a != "1" else "40" for a in TRAIN]  # 40 epochs: the first is in its run a while
    first = subprocess.Popen([sys.executable, "-m", "engine", "-q", "train", str(project), "d", *slow], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    locks = project.with_name("p_files") / "locks"
    try:
        deadline = time.monotonic() + 240
        held = None
        while held is None and time.monotonic() < deadline and first.poll() is None:
            for lock in locks.glob("train-*.lock") if locks.is_dir() else ():
                if _lock_info(lock).get("pid") == first.pid:
                    held = lock
            time.sleep(0.02)
        assert held is not None, "the first train never took its lock"
        first.send_signal(signal.SIGSTOP)  # stays inside its run (and holds the lock) until continued
        try:
            fd = os.open(held, os.O_RDWR)
            try:  # the lock is provably held by the first process now
                with pytest.raises(BlockingIOError):
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            finally:
                os.close(fd)
            second = cli("train", str(project), "d", *TRAIN, env=models_env)
        finally:
            first.send_signal(signal.SIGCONT)
        refused(second, "CB771")
        assert f"process {first.pid}" in second.stderr
        out, err = first.communicate(timeout=300)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, err
    assert json.loads(out)["members"][0]["name"] == MEMBER
    models = project.with_name("p_files") / "models" / "d_tiny-distilbert"
    assert (models / "model.safetensors").is_file() and not (models / "checkpoint").exists()


def test_item10_vote_of_rows_being_voted_is_refused(tmp_path, trained, models_env):
    """The vote's own lock held (as a running vote holds it): the same vote is refused; then it runs."""
    project = copy_project(trained, tmp_path / "proj")
    _forget_votes(project)
    [lock] = list((project.with_name("p_files") / "locks").glob("vote-*.lock"))
    before = snapshot(project, root=tmp_path)
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": 777, "host": "elsewhere", "started_at": "then", "run_id": 9}).encode(), 0)
        done = cli("vote", str(project), "d", *VOTE, env=models_env)
        refused(done, "CB772")
        assert "run 9" in done.stderr and "process 777 on elsewhere" in done.stderr
        assert_unchanged(before, snapshot(project, root=tmp_path))
        other = cli("vote", str(project), "d", *VOTE[:-1], "3", env=models_env)  # another vote is not held up
        assert other.returncode == 0, other.stderr
    finally:
        os.close(fd)
    done = cli("vote", str(project), "d", *VOTE, env=models_env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["reused"] is False
