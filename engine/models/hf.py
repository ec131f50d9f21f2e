"""Small helpers around Hugging Face ``transformers``: quiet loading and a usable fast tokenizer.

``transformers`` is imported inside the functions, never at module import time.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from engine.models.errors import BackboneUnavailableError, require

__all__ = ["load_fast_tokenizer", "quiet_transformers"]


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
        tok = AutoTokenizer.from_pretrained(str(folder))
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
