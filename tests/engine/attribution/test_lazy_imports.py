"""The model and attribution packages import no heavy library until used."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def test_importing_models_and_attribution_pulls_in_no_torch() -> None:
    code = (
        "import sys, engine.models, engine.attribution, engine.text\n"
        "engine.models.available_backbones(); engine.attribution.available_methods()\n"
        "heavy = {'torch', 'transformers', 'captum', 'onnx', 'onnxruntime', 'safetensors', 'tokenizers', 'sklearn', 'PySide6'}\n"
        "print(','.join(sorted({m.split('.')[0] for m in sys.modules} & heavy)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == ""
