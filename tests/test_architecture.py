"""Layering: the engine is headless and starts fast."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_engine_imports_no_qt_and_no_heavy_libraries():
    code = (
        "import sys, engine, engine.cli, engine.store, engine.io, engine.demo\n"
        "bad = sorted({m.split('.')[0] for m in sys.modules} & "
        "{'PySide6', 'pyqtgraph', 'app', 'widgets', 'torch', 'transformers', 'faiss', 'openai', 'captum'})\n"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == ""


def test_import_linter_contracts_hold():
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint)], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout
