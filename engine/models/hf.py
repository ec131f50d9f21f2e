"""Small helpers around Hugging Face ``transformers``: quiet loading and a usable fast tokenizer.

``transformers`` is imported inside the functions, never at module import time.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from engine.models.errors import (
    BackboneUnavailableError,
    InvalidWeightsError,
    RemoteCodeError,
    UnsafeWeightsError,
    require,
)

__all__ = ["check_model_folder", "load_fast_tokenizer", "quiet_transformers"]

#: Weight files that are pickles (loading one can run code): never loaded.
PICKLED = ("*.bin", "*.pt", "*.pth", "*.ckpt", "*.pkl")


def load_fast_tokenizer(folder: Path) -> Any:
    """Load the fast tokenizer in ``folder`` and check it is usable.

    Raises
    ------
    BackboneUnavailableError
        If only a slow tokenizer exists or every token maps to the unknown token.
    """
    require("transformers")
    from transformers import AutoTokenizer

    with quiet_transformers():
        tok = AutoTokenizer.from_pretrained(str(folder), trust_remote_code=False)
    if not getattr(tok, "is_fast", False):
        raise BackboneUnavailableError(
            f"The tokenizer in {folder} is not a fast tokenizer; word alignment needs offsets.",
            "Provide a tokenizer.json in the model folder.",
        )
    probe = tok("the movie", add_special_tokens=False)["input_ids"]
    if not probe or all(i == tok.unk_token_id for i in probe):
        raise BackboneUnavailableError(
            f"The tokenizer in {folder} maps every word to the unknown token.",
            "Copy tokenizer.json and vocab.txt from a working model instead of building the tokenizer.",
        )
    return tok


@contextlib.contextmanager
def quiet_transformers() -> Iterator[None]:
    """Silence transformers' expected "newly initialized" and similar reports."""
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)
        if bars:
            hf_logging.enable_progress_bar()


def check_model_folder(folder: Path, *, what: str = "") -> list[Path]:
    """Check a Hugging Face model folder before anything in it is loaded; return its safetensors files.

    Reads ``config.json`` and the first bytes of each ``.safetensors`` file only.

    Parameters
    ----------
    folder
        The model folder.
    what
        How to name it in messages (default: the folder).

    Raises
    ------
    RemoteCodeError
        ``config.json`` has an ``auto_map`` (custom Python code shipped with the model): CB511.
    UnsafeWeightsError
        No ``.safetensors`` weights but pickled ones (``.bin``, ``.pt``, ...): CB508.
    BackboneUnavailableError
        No ``config.json`` or no weights at all: CB502.
    InvalidWeightsError
        A ``.safetensors`` file is empty, truncated or not safetensors: CB510.
    """
    import json

    folder = Path(folder)
    name = what or str(folder)
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BackboneUnavailableError(
            f"{name} is not a Hugging Face model folder (no config.json).",
            "Choose the folder that holds config.json, the weights and the tokenizer files.",
        ) from None
    except (OSError, ValueError) as exc:
        raise BackboneUnavailableError(f"The config.json of {name} cannot be read ({exc}).",
                                       "Save the model again (model.save_pretrained(folder)).") from None
    if isinstance(config, dict) and config.get("auto_map"):
        raise RemoteCodeError(
            f"{name} asks for custom model code (config.json 'auto_map': {sorted(config['auto_map'])}); "
            "code shipped with a model is never run.",
            "Use a model of an architecture transformers knows (BERT, RoBERTa, DeBERTa, MPNet, ...) without "
            "'auto_map', or save it again with its standard class.",
        )
    weights = sorted(folder.glob("*.safetensors"))
    if not weights:
        if any(p for pattern in PICKLED for p in folder.glob(pattern)):
            raise UnsafeWeightsError(
                f"{name} holds only pickled weights (.bin/.pt), which are never loaded.",
                "Convert the weights to safetensors (model.save_pretrained(..., safe_serialization=True)).",
            )
        raise BackboneUnavailableError(f"{name} holds no .safetensors weights.", "Save the model with safetensors.")
    for file in weights:
        problem = _safetensors_problem(file)
        if problem:
            raise InvalidWeightsError(
                f"{file} is not usable safetensors weights: {problem}.",
                "Copy or save the weights again (model.save_pretrained(folder)); a .bin beside it is never used.",
            )
    return weights


def _safetensors_problem(file: Path) -> str | None:
    """Why ``file`` is not a safetensors file (its 8-byte header length and JSON header), else ``None``."""
    import json

    try:
        size = file.stat().st_size
        with open(file, "rb") as f:
            head = f.read(8)
            if size == 0:
                return "the file is empty"
            if len(head) < 8:
                return f"the file is {size} bytes long, shorter than a safetensors header"
            length = int.from_bytes(head, "little")
            if length < 2 or length > min(size - 8, 100_000_000):
                return "its header length does not fit the file"
            header = json.loads(f.read(length).decode("utf-8"))
    except OSError as exc:
        return f"it cannot be read ({exc.strerror or exc})"
    except (ValueError, UnicodeDecodeError):
        return "its header is not JSON"
    if not isinstance(header, dict):
        return "its header is not a JSON object"
    return None
