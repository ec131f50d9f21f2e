"""Epoch checkpoints in safetensors only: weights, optimizer moments, and a JSON state file.

Nothing is ever unpickled: model weights go through ``safetensors.torch.save_model`` /
``load_model`` (which handle tied weights), the optimizer's tensors are flattened into a
safetensors file (``state.<param index>.<name>``) and its scalar settings into its metadata.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from engine.io.output import new_file_mode

__all__ = [
    "TrainState",
    "load_optimizer",
    "load_weights",
    "publish_files",
    "save_optimizer",
    "save_weights",
]

STATE_FILE = "train_state.json"


@dataclass
class TrainState:
    """Progress of one member's training, rewritten after every epoch.

    Attributes
    ----------
    config_hash
        :meth:`engine.models.config.MemberSpec.config_hash`; a checkpoint with another hash is
        discarded.
    epochs_done
        Completed epochs (the checkpoint holds the weights after this many).
    step
        Optimizer steps taken.
    best_epoch, best_accuracy
        Best dev accuracy so far and the (1-based) epoch it came from.
    history
        Per epoch: ``{"epoch", "train_loss", "dev_accuracy", "seconds"}``.
    """

    config_hash: str
    epochs_done: int = 0
    step: int = 0
    best_epoch: int = 0
    best_accuracy: float = -1.0
    history: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def read(cls, folder: Path) -> TrainState | None:
        path = folder / STATE_FILE
        if not path.is_file():
            return None
        try:
            return cls(**json.loads(path.read_text(encoding="utf-8")))
        except (ValueError, TypeError):
            return None

    def write(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=1), encoding="utf-8")
        os.replace(tmp, folder / STATE_FILE)


def save_weights(model: Any, path: Path) -> None:
    """Write the model's weights to ``path`` (safetensors, atomically)."""
    from safetensors.torch import save_model

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    save_model(model, str(tmp))
    os.chmod(tmp, new_file_mode())  # safetensors writes 0o600 whatever the umask
    os.replace(tmp, path)


def load_weights(model: Any, path: Path) -> None:
    """Load safetensors weights saved by :func:`save_weights` into ``model``."""
    from safetensors.torch import load_model

    load_model(model, str(path), strict=True, device=str(next(model.parameters()).device))


def save_optimizer(optimizer: Any, path: Path) -> None:
    """Write an optimizer's state (tensors + JSON scalars) to one safetensors file."""
    import torch
    from safetensors.torch import save_file

    sd = optimizer.state_dict()
    tensors: dict[str, Any] = {}
    scalars: dict[str, Any] = {}
    for idx, state in sd["state"].items():
        for key, value in state.items():
            if isinstance(value, torch.Tensor):
                tensors[f"state.{idx}.{key}"] = value.detach().cpu().contiguous()
            else:
                scalars[f"{idx}.{key}"] = value
    meta = {"param_groups": json.dumps(sd["param_groups"]), "scalars": json.dumps(scalars)}
    tmp = path.with_suffix(".tmp")
    save_file(tensors, str(tmp), metadata=meta)
    os.chmod(tmp, new_file_mode())
    os.replace(tmp, path)


def load_optimizer(optimizer: Any, path: Path) -> None:
    """Restore an optimizer written by :func:`save_optimizer`."""
    from safetensors import safe_open

    state: dict[int, dict[str, Any]] = {}
    device = optimizer.param_groups[0]["params"][0].device
    with safe_open(str(path), framework="pt", device="cpu") as f:
        meta = f.metadata() or {}
        for key in f.keys():
            _, idx, name = key.split(".", 2)
            value = f.get_tensor(key)
            state.setdefault(int(idx), {})[name] = value if name == "step" else value.to(device)
    for key, value in json.loads(meta.get("scalars", "{}")).items():
        idx, name = key.split(".", 1)
        state.setdefault(int(idx), {})[name] = value
    groups = json.loads(meta["param_groups"])
    optimizer.load_state_dict({"state": state, "param_groups": groups})


def publish_files(folder: Path) -> None:
    """Give the files directly in ``folder`` the mode a new file gets (``0o666`` less the umask).

    ``safetensors`` writes its files ``0o600`` whatever the umask; the weights of a project are
    ordinary files that whoever may read the project may read too.
    """
    mode = new_file_mode()
    for path in folder.iterdir():
        if path.is_file() and not path.is_symlink():
            os.chmod(path, mode)
