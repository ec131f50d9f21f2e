"""Shared test set-up: offscreen Qt, isolated settings and project folders."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
SHARED_DATA = SHARED / "data"


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"


@pytest.fixture(autouse=True)
def _isolated_user_dirs(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point QSettings and the app's data folder at a temporary directory."""
    home = tmp_path_factory.mktemp("user")
    monkeypatch.setenv("COUNTERBIAS_HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))


@pytest.fixture
def shared_data() -> Path:
    """``../shared/data`` beside the checkout (skips when it is absent)."""
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not beside this checkout")
    return SHARED_DATA


@pytest.fixture
def project(tmp_path: Path):
    """A fresh, empty project in a temporary folder."""
    from engine.store import Project

    proj = Project.create(tmp_path / "test.cbproj")
    yield proj
    proj.close()
