"""What a classifier backbone is: where its files are, its tokenizer, a model with a new head.

Configurations store a backbone *name* and its JSON *params*, never objects;
:mod:`engine.models.registry` turns them back into a :class:`Backbone`. The built-ins are in
:mod:`engine.models.backbones`. Nothing here imports torch at module import time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from engine.models.errors import require
from engine.models.hf import load_fast_tokenizer, quiet_transformers

__all__ = ["Backbone"]


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

    #: Registry name, set by :func:`engine.models.registry.register_backbone`.
    name: ClassVar[str] = ""
    #: One line for pickers in the GUI.
    description: ClassVar[str] = ""
    #: Training cost per token relative to MiniLM-L6 (1.0), for honest progress and ETAs
    #: (measured on a 2-core CPU for the built-ins; see :meth:`relative_cost`).
    cost_per_token: ClassVar[float] = 1.0
    #: Cost of an inference-mode forward pass over a row (the cached presets' encode pass, a dev evaluation) as a
    #: share of one fine-tuning epoch over it, for the same progress and ETAs (see :meth:`forward_share`).
    encode_share: ClassVar[float] = 0.15
    #: Transformer layers (for the top-layer preset's cost); ``None``: unknown, counted as 6.
    num_layers: ClassVar[int | None] = None
    #: Hugging Face ``model_type`` (``"bert"``, ``"mpnet"``, ...); ``None``: unknown until loaded.
    model_type: ClassVar[str | None] = None

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

    def relative_cost(self) -> float:
        """Training cost per token relative to MiniLM-L6, without loading the model.

        The class attribute :attr:`cost_per_token` by default; backbones whose size is only known
        from their files (a local folder) estimate it from ``config.json``.
        """
        return float(self.cost_per_token)

    def forward_share(self) -> float:
        """A forward pass as a share of a fine-tuning epoch (:attr:`encode_share`)."""
        return float(self.encode_share)

    def layers(self) -> int:
        """Transformer layers, without loading the model (:attr:`num_layers`, else 6)."""
        return int(self.num_layers or 6)

    def architecture(self) -> str | None:
        """The Hugging Face ``model_type``, without loading the model (:attr:`model_type`; ``None``: unknown)."""
        return self.model_type

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
                trust_remote_code=False,
            )
