"""The per-user folder where converted or unpacked backbones are built once.

``$COUNTERBIAS_MODELS_CACHE`` if set, else ``engine.paths.user_data_dir() / "models-cache"``.
Entries are built in a temporary sibling folder and renamed into place, so a crash never
leaves a half-written entry and two processes building the same entry do not clash.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from engine.paths import user_data_dir

#: Written last into a finished entry; an entry without it is rebuilt.
DONE_MARKER = ".complete"


def models_cache_dir() -> Path:
    """The cache root (created on demand)."""
    override = os.environ.get("COUNTERBIAS_MODELS_CACHE")
    folder = Path(override) if override else user_data_dir() / "models-cache"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def cached_entry(name: str, build: Callable[[Path], None]) -> Path:
    """Return ``<cache>/<name>``, building it with ``build(tmp_folder)`` first if needed.

    Parameters
    ----------
    name
        Entry folder name (a backbone name plus a version tag).
    build
        Writes the entry's files into the empty folder it is given.
    """
    root = models_cache_dir()
    final = root / name
    if (final / DONE_MARKER).is_file():
        return final
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=root))
    try:
        build(tmp)
        (tmp / DONE_MARKER).write_text("ok\n", encoding="utf-8")
        if (final / DONE_MARKER).is_file():  # built meanwhile by another process
            shutil.rmtree(tmp, ignore_errors=True)
            return final
        if final.exists():
            shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final
