"""Real small and read-only filesystems for the storage reliability tests (tmpfs, root only).

The tests run as root in CI containers, where ``chmod`` does not stop a write. A tmpfs mounted
with a small ``size=`` is a real full disk (``ENOSPC``), and ``mount -o remount,ro`` a real
read-only disk (``EROFS``), which stop root too. Where mounting is not allowed the tests that
need it skip.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def tmpfs(folder: Path, size: str = "1m") -> Iterator[Path]:
    """Mount a tmpfs of ``size`` on ``folder`` for the duration (skips if mounting is not allowed)."""
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def remount(folder: Path, mode: str) -> None:
    """Remount the tmpfs on ``folder`` ``ro`` or ``rw``."""
    subprocess.run(["mount", "-o", f"remount,{mode}", str(folder)], check=True, capture_output=True)


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 300, **kw) -> subprocess.CompletedProcess:
    """Run ``python -m engine -q ARGS`` in a real process (this checkout first on the path)."""
    full_env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run([sys.executable, "-m", "engine", "-q", *args], capture_output=True, text=True,
                          env=full_env, timeout=timeout, **kw)


def info(project: Path) -> dict:
    """``info --json`` of a project, run in a real process (asserts exit 0)."""
    done = cli("info", str(project), "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    data.pop("project")
    return data


def big_csv(path: Path, rows: int, *, width: int = 60) -> Path:
    """A two-class CSV of ``rows`` rows of about ``width`` characters of text."""
    filler = ("lorem ipsum dolor sit amet " * (width // 27 + 1))[:width]
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write("text,label\n")
        for i in range(rows):
            f.write(f"row {i} {filler},{'pos' if i % 2 else 'neg'}\n")
    return path
