"""String-keyed registry of classifier backbones.

Configurations store a backbone *name* and its JSON *params*, never objects; the registry turns
them back into a :class:`Backbone` (spaCy/catalogue style)::

    @register_backbone("my-encoder")
    class MyEncoder(Backbone):
        def prepare(self) -> Path: ...

    backbone = get_backbone("my-encoder", **params)

A backbone knows where its pre-trained files are (building them once in the models cache if
they must be converted or unpacked), loads its fast tokenizer and builds a sequence
classifier with a new head. Nothing here imports torch at module import time.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from engine.models.errors import BackboneUnavailableError, UnknownBackboneError, require

__all__ = [
    "Backbone",
    "available_backbones",
    "backbone_class",
    "get_backbone",
    "quiet_transformers",
    "register_backbone",
]

_REGISTRY: dict[str, type[Backbone]] = {}
B = TypeVar("B", bound="type[Backbone]")


class Backbone:
    """A pre-trained (or randomly initialised) encoder that can become a classifier.

    Parameters
    ----------
    **params
        JSON-serialisable options, stored in configurations as they are given.

    Notes
    -----
    Subclasses implement :meth:`prepare` (a folder with ``config.json``, safetensors weights
    and tokenizer files) and may override :meth:`tokenizer_dir` when the tokenizer can be had
    more cheaply than the weights, or :meth:`build_model` (e.g. random initialisation).
    """

    #: Registry name, set by :func:`register_backbone`.
    name: ClassVar[str] = ""
    #: One line for pickers in the GUI.
    description: ClassVar[str] = ""

    def __init__(self, **params: Any) -> None:
        self.params = dict(params)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, params={self.params!r})"

    # ------------------------------------------------------------------ files
    def prepare(self) -> Path:
        """Return a local HF model folder for this backbone (building it once if needed)."""
        raise NotImplementedError

    def tokenizer_dir(self) -> Path:
        """Folder holding the tokenizer files (default: :meth:`prepare`)."""
        return self.prepare()

    def is_available(self) -> bool:
        """Whether the files this backbone needs are installed (cheap check, no loading)."""
        return True

    # ------------------------------------------------------------------ objects
    def load_tokenizer(self) -> Any:
        """The fast tokenizer (offsets are required for word alignment)."""
        return load_fast_tokenizer(self.tokenizer_dir())

    def build_model(self, num_labels: int, id2label: dict[int, str], *, seed: int = 0) -> Any:
        """A ``AutoModelForSequenceClassification`` with a new ``num_labels`` head."""
        require("torch")
        require("transformers")
        import torch
        from transformers import AutoModelForSequenceClassification

        folder = self.prepare()
        torch.manual_seed(seed)
        with quiet_transformers():
            return AutoModelForSequenceClassification.from_pretrained(
                str(folder),
                num_labels=num_labels,
                id2label={int(k): v for k, v in id2label.items()},
                label2id={v: int(k) for k, v in id2label.items()},
                use_safetensors=True,
            )


def register_backbone(name: str) -> Callable[[B], B]:
    """Class decorator registering a :class:`Backbone` subclass under ``name``."""

    def deco(cls: B) -> B:
        if name in _REGISTRY and _REGISTRY[name] is not cls:
            raise ValueError(f"backbone {name!r} is already registered by {_REGISTRY[name].__name__}")
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return deco


def backbone_class(name: str) -> type[Backbone]:
    """The class registered under ``name``.

    Raises
    ------
    UnknownBackboneError
    """
    _ensure_builtins()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownBackboneError(
            f"No backbone called {name!r}.", f"Use one of: {', '.join(sorted(_REGISTRY))}."
        ) from None


def get_backbone(name: str, **params: Any) -> Backbone:
    """Instantiate the backbone registered under ``name`` with ``params``."""
    return backbone_class(name)(**params)


def available_backbones() -> dict[str, str]:
    """Registered backbone names and their descriptions, sorted by name."""
    _ensure_builtins()
    return {n: _REGISTRY[n].description for n in sorted(_REGISTRY)}


def _ensure_builtins() -> None:
    import engine.models.backbones  # noqa: F401  (registers the built-in backbones)


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
