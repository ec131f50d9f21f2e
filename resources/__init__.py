"""Bundled resources: demo data, word lists, prompts, icons (read with importlib.resources)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent


def path(*parts: str) -> Path:
    """Absolute path of a bundled resource, e.g. ``path("demo", "ATTRIBUTION.md")``."""
    return ROOT.joinpath(*parts)
