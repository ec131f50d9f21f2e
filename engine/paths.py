"""Per-user folders (data, config), overridable with ``COUNTERBIAS_HOME``."""

from __future__ import annotations

import os
from pathlib import Path


def user_data_dir() -> Path:
    """Where the demo project and caches live.

    ``$COUNTERBIAS_HOME`` if set, else ``$XDG_DATA_HOME/counterbias-studio`` (Linux),
    ``~/Library/Application Support/Counterbias Studio`` (macOS) or ``%APPDATA%``.
    """
    home = os.environ.get("COUNTERBIAS_HOME")
    if home:
        folder = Path(home)
    elif os.name == "nt":
        folder = Path(os.environ.get("APPDATA", Path.home())) / "Counterbias Studio"
    elif os.uname().sysname == "Darwin":
        folder = Path.home() / "Library" / "Application Support" / "Counterbias Studio"
    else:
        folder = Path(os.environ.get("XDG_DATA_HOME", Path.home() / ".local" / "share")) / "counterbias-studio"
    folder.mkdir(parents=True, exist_ok=True)
    return folder
