"""Issue 15, "Full disk: export (OSError Errno 28)" and "Killing an export leaves hidden .part files":
a named error with exit 3 and no partial output; stale part files of the same target are removed."""

from __future__ import annotations

import fcntl
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from engine.errors import DiskFullError
from engine.io import export_dataset, import_file
from engine.io.exporter import remove_stale_parts
from engine.store import Project
from tests.reliability.storage_fs import REPO, big_csv, cli, tmpfs


@pytest.fixture
def big_project(tmp_path) -> Path:
    path = tmp_path / "p.cbproj"
    with Project.create(path) as project:
        import_file(project, big_csv(tmp_path / "big.csv", 60_000, width=120))
    return path


def test_full_disk_export_is_a_named_error_with_no_partial_file(big_project, tmp_path):
    with tmpfs(tmp_path / "disk", "1m") as disk:
        done = cli("export", str(big_project), "1", str(disk / "out.csv"))
        assert done.returncode == 3, done.stderr
        assert "[CB141]" in done.stderr and "writing the export" in done.stderr
        assert "more were needed" in done.stderr
        assert "Traceback" not in done.stderr and "Errno 28" not in done.stderr
        assert list(disk.iterdir()) == []  # neither out.csv nor a .part file


def _limit_file_size() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (256 * 1024, 256 * 1024))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit then fails with EFBIG


def test_file_size_limit_export_is_a_named_error_with_no_partial_file(big_project, tmp_path):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    done = cli("export", str(big_project), "1", str(out_dir / "out.jsonl"), preexec_fn=_limit_file_size)
    assert done.returncode == 3, done.stderr
    assert "[CB141]" in done.stderr and "file-size limit" in done.stderr
    assert list(out_dir.iterdir()) == []


def test_disk_full_in_process_raises_disk_full(big_project, tmp_path):
    with tmpfs(tmp_path / "disk", "256k") as disk, Project.open(big_project) as project:
        with pytest.raises(DiskFullError) as err:
            export_dataset(project, 1, disk / "out.csv")
        assert err.value.code == "CB141" and "No partial file" in err.value.hint
        assert list(disk.iterdir()) == []


_SLOW_EXPORT = """
import sys
sys.path.insert(0, sys.argv[1])
from engine.io import export_dataset
from engine.store import Project

def progress(fraction, message=""):
    print("progress", flush=True)

with Project.open(sys.argv[2]) as project:
    for _ in range(100):  # the parent kills us during the first export
        export_dataset(project, 1, sys.argv[3], progress=progress)
"""


def _killed_export(big_project: Path, out: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", _SLOW_EXPORT, str(REPO), str(big_project), str(out)],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "progress"  # 5,000 rows written: a part file exists
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait()


def test_killed_exports_leave_part_files_that_the_next_export_removes(big_project, tmp_path):
    out = tmp_path / "out" / "out.csv"
    out.parent.mkdir()
    for _ in range(3):
        _killed_export(big_project, out)
    parts = sorted(out.parent.glob(".out.csv.*.part"))
    assert len(parts) >= 1  # what a kill -9 leaves behind (nothing can run in the killed process)

    done = cli("export", str(big_project), "1", str(out))
    assert done.returncode == 0, done.stderr
    assert f"removed {len(parts)} unfinished part file" in done.stdout
    assert sorted(p.name for p in out.parent.iterdir()) == ["out.csv"]


def test_a_running_exports_part_file_is_not_removed(tmp_path):
    out = tmp_path / "out.csv"
    live = tmp_path / ".out.csv.abc123.part"
    stale = tmp_path / ".out.csv.def456.part"
    other = tmp_path / ".other.csv.xyz.part"
    for p in (live, stale, other):
        p.write_text("partial")
    fd = os.open(live, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # as a running export holds its part file
        assert remove_stale_parts(out) == 1
        assert live.exists() and not stale.exists() and other.exists()
    finally:
        os.close(fd)
