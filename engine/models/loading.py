"""Load a trained member for inference (safetensors only), with a small in-process cache."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from engine.models.errors import ModelNotFoundError, UnsafeWeightsError, require
from engine.models.store import ModelInfo, get_model
from engine.store import Project

__all__ = ["LoadedMember", "clear_cache", "load_member"]

_CACHE: OrderedDict[tuple, LoadedMember] = OrderedDict()
_LOCK = threading.Lock()
CACHE_SIZE = 4


@dataclass(frozen=True)
class LoadedMember:
    """A trained member ready for inference: eval mode, parameters frozen.

    Attributes
    ----------
    info
        The stored model.
    model
        The ``AutoModelForSequenceClassification``.
    tokenizer
        Its fast tokenizer.
    device
        The ``torch.device`` the model is on.
    lock
        Held while the model runs: attribution hooks into the model, so two jobs must not use
        the same loaded member at once.
    """

    info: ModelInfo
    model: Any
    tokenizer: Any
    device: Any
    lock: Any = field(default_factory=threading.RLock, compare=False, repr=False)


def load_member(project: Project, name: str | int, *, device: str = "auto") -> LoadedMember:
    """Load a trained member (cached by project, name and creation time).

    Parameters are frozen (``requires_grad=False``): attribution needs gradients with respect
    to the input embeddings only, which makes backward passes cheaper.

    Raises
    ------
    ModelNotFoundError
        No such model, or its folder is gone.
    UnsafeWeightsError
        The folder holds no safetensors weights.
    engine.models.errors.InvalidWeightsError, engine.models.errors.RemoteCodeError
        Empty or invalid safetensors; a config asking for custom code.
    engine.errors.StoredPathError, engine.errors.StoredLinkError
        The stored folder lies outside the project.
    """
    info = get_model(project, name)
    key = (str(project.path), info.name, info.created_at, device)
    with _LOCK:
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return _CACHE[key]
    require("torch")
    require("transformers")
    from transformers import AutoModelForSequenceClassification

    from engine.models.device import resolve_device
    from engine.models.hf import check_model_folder, load_fast_tokenizer, quiet_transformers

    folder = info.folder  # refused (CB150/CB151) when the project stores a path outside itself
    if not (folder / "config.json").is_file():
        raise ModelNotFoundError(
            f"The files of model {info.name!r} are missing ({folder}).", "Train the member again."
        )
    if not (folder / "model.safetensors").is_file():
        raise UnsafeWeightsError(
            f"Model {info.name!r} has no model.safetensors in {folder}.", "Train the member again."
        )
    check_model_folder(folder, what=f"the folder of model {info.name!r} ({folder})")  # CB508, CB510, CB511
    dev = resolve_device(device)
    with quiet_transformers():
        model = AutoModelForSequenceClassification.from_pretrained(str(folder), use_safetensors=True,
                                                                   trust_remote_code=False)
    model.to(dev).eval()
    model.requires_grad_(False)
    loaded = LoadedMember(info, model, load_fast_tokenizer(folder), dev)
    with _LOCK:
        _CACHE[key] = loaded
        while len(_CACHE) > CACHE_SIZE:
            _CACHE.popitem(last=False)
    return loaded


def clear_cache() -> None:
    """Forget every loaded member (frees their memory)."""
    with _LOCK:
        _CACHE.clear()
