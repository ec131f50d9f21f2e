"""GUI preferences: typed defaults over QSettings, versioned, rejecting unknown keys."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from PySide6.QtCore import QByteArray, QSettings

from widgets.llm_dialog import DEFAULT_VALUES as LLM_DEFAULTS

#: Bump when a default changes meaning; :meth:`Settings.migrate` then resets or converts keys.
SETTINGS_VERSION = 1

DEFAULTS: dict[str, Any] = {
    "settings_version": SETTINGS_VERSION,
    "recent_projects": [],
    "max_recent": 10,
    "last_dir": "",
    "window_geometry": QByteArray(),
    "window_state": QByteArray(),
    "search_debounce_ms": 250,
    # Counterbias tab: after accept or reject, the next candidate becomes current
    "review_advance": True,
    # LLM used for counterbias generation (never an API key: only the NAME of its variable): the LLM dialog's
    # values, whose generation options take the defaults declared in engine.counterbias.settings
    **{f"llm_{key}": value for key, value in LLM_DEFAULTS.items()},
}


class UnknownSettingError(KeyError):
    """A key that is not in :data:`DEFAULTS` (a typo would otherwise be silently stored)."""


class Settings:
    """Typed access to the user's preferences.

    Stored in ``$COUNTERBIAS_HOME/settings.ini`` when that variable is set (tests, portable
    installs), else in the platform's usual place.
    """

    def __init__(self, qsettings: QSettings | None = None) -> None:
        if qsettings is None:
            home = os.environ.get("COUNTERBIAS_HOME")
            if home:
                qsettings = QSettings(str(Path(home) / "settings.ini"), QSettings.Format.IniFormat)
            else:
                qsettings = QSettings("Counterbias Studio", "Counterbias Studio")
        self._q = qsettings
        self.migrate()

    def get(self, key: str) -> Any:
        """The stored value of ``key`` converted to its default's type (or the default)."""
        if key not in DEFAULTS:
            raise UnknownSettingError(key)
        default = DEFAULTS[key]
        value = self._q.value(key, default)
        if isinstance(default, bool):
            return value in (True, "true", "1", 1)
        if isinstance(default, float):
            try:
                return float(value)
            except (TypeError, ValueError):
                return default
        if isinstance(default, int):
            try:
                return int(value)
            except (TypeError, ValueError):
                return default
        if isinstance(default, list):
            if value is None or value == "":
                return []
            return list(value) if isinstance(value, (list, tuple)) else [value]
        if isinstance(default, QByteArray):
            return value if isinstance(value, QByteArray) else QByteArray()
        return value if value is not None else default

    def set(self, key: str, value: Any) -> None:
        """Store ``value`` under ``key``."""
        if key not in DEFAULTS:
            raise UnknownSettingError(key)
        self._q.setValue(key, value)

    def sync(self) -> None:
        self._q.sync()

    def migrate(self) -> None:
        """Bring older stored settings up to :data:`SETTINGS_VERSION`; drop unknown keys."""
        stored = int(self._q.value("settings_version", 0) or 0)
        if stored > SETTINGS_VERSION:
            return  # written by a newer build: leave it alone
        for key in self._q.allKeys():
            if key not in DEFAULTS:
                self._q.remove(key)
        self._q.setValue("settings_version", SETTINGS_VERSION)

    # ------------------------------------------------------------------ recent projects
    def recent_projects(self) -> list[str]:
        """Recent project paths that still exist, most recent first."""
        return [p for p in self.get("recent_projects") if Path(p).is_file()]

    def add_recent_project(self, path: str | Path) -> None:
        path = str(Path(path).resolve())
        recent = [p for p in self.get("recent_projects") if p != path]
        self.set("recent_projects", [path, *recent][: self.get("max_recent")])
