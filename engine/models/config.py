"""Training and ensemble configurations: plain, frozen, JSON round-trippable data.

A configuration holds backbone *names* and parameters, never model objects, so it can be
stored in the project (``models.params``) and compared: :meth:`MemberSpec.config_hash` is the
identity used to skip an already-trained member and to resume an interrupted one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.models.errors import EnsembleConfigError

__all__ = [
    "CONFIG_VERSION",
    "DEFAULT_MEMBERS",
    "PRESETS",
    "PRESET_HELP",
    "SIZED_PRESETS",
    "SMALL_BACKBONE_COST",
    "EnsembleConfig",
    "MemberSpec",
    "TrainConfig",
    "STRATEGIES",
    "default_ensemble",
    "hypothesis_only_member",
    "preset_names",
    "train_preset",
]

CONFIG_VERSION = 1

#: Fields of :class:`TrainConfig` that say *where* training runs, not *what* it learns; they
#: are left out of the config hash so a member trained on a GPU is reused on a laptop.
RUNTIME_FIELDS = frozenset({"device", "mixed_precision"})

#: How a member learns: ``fine-tune`` trains every weight; ``cached-head`` encodes the dataset
#: once with the frozen encoder (features cached in the project) and trains the classification
#: head on the cached features (:mod:`engine.models.quick`); ``cached-top`` runs the frozen lower
#: layers once and trains the top ``tune_layers`` layers and the head on their cached inputs
#: (:mod:`engine.models.top`).
STRATEGIES = ("fine-tune", "cached-head", "cached-top")

#: Strategies whose members explain by default (:mod:`engine.attribution.explainers`): the whole
#: network was trained. :func:`engine.models.train.train_ensemble` trains these members first.
EXPLAINING_STRATEGIES = frozenset({"fine-tune"})

#: Fields added after version 1: left out of the config hash while they hold their default, so
#: the members trained before they existed keep their identity.
_LATER_FIELDS = {"strategy": "fine-tune", "tune_layers": 1}


@dataclass(frozen=True)
class TrainConfig:
    """How one member is fine-tuned.

    Parameters
    ----------
    preset
        Name of the preset the values came from (informational).
    max_length
        Tokens per input (longer inputs are truncated; pairs truncate the longer text first).
    epochs
        Maximum epochs; the epoch with the best dev accuracy is kept.
    batch_size, learning_rate, weight_decay, warmup_ratio
        AdamW with linear warm-up then linear decay; gradients clipped at ``max_grad_norm``.
    patience
        Stop after this many epochs without a dev improvement (``None``: never stop early).
    seed
        Seeds initialisation, data order, dropout, sub-sampling and the dev hold-out.
    dev_fraction
        Share of the train split held out for model selection when the dataset has no dev
        split.
    max_train_rows, max_dev_rows
        Seeded sub-sample sizes (``None``: all rows).
    eval_batch_size
        Batch size for dev evaluation.
    device
        ``"auto"`` (cuda, then mps, then cpu) or a torch device string.
    mixed_precision
        ``"auto"`` (bf16 on CUDA when supported else fp16; fp16 on MPS; off on CPU), ``"bf16"``,
        ``"fp16"`` or ``"no"``. Never used on CPU.
    strategy
        ``"fine-tune"`` (every weight), ``"cached-head"`` (frozen encoder, features cached,
        head trained on them; ``epochs``/``batch_size``/``learning_rate`` then apply to the head)
        or ``"cached-top"`` (lower layers frozen and run once, the top ``tune_layers`` layers and
        the head trained on their cached inputs).
    tune_layers
        ``cached-top``: how many of the top transformer layers are trained (default 1).
    """

    preset: str = "fast-cpu"
    max_length: int = 128
    epochs: int = 2
    batch_size: int = 16
    learning_rate: float = 5e-5
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1
    max_grad_norm: float = 1.0
    patience: int | None = None
    seed: int = 13
    dev_fraction: float = 0.1
    max_train_rows: int | None = None
    max_dev_rows: int | None = None
    eval_batch_size: int = 64
    device: str = "auto"
    mixed_precision: str = "auto"
    strategy: str = "fine-tune"
    tune_layers: int = 1

    def __post_init__(self) -> None:
        if self.max_length < 8:
            raise EnsembleConfigError(f"max_length {self.max_length} is too short.", "Use at least 8 tokens.")
        if self.epochs < 1 or self.batch_size < 1:
            raise EnsembleConfigError("epochs and batch_size must be positive.", "Use e.g. the 'fast-cpu' preset.")
        if not 0.0 < self.dev_fraction < 0.9:
            raise EnsembleConfigError(f"dev_fraction {self.dev_fraction} is out of range.", "Use a value such as 0.1.")
        if self.mixed_precision not in {"auto", "bf16", "fp16", "no"}:
            raise EnsembleConfigError(
                f"Unknown mixed_precision {self.mixed_precision!r}.", "Use auto, bf16, fp16 or no."
            )
        if self.strategy not in STRATEGIES:
            raise EnsembleConfigError(f"Unknown strategy {self.strategy!r}.", f"Use one of: {', '.join(STRATEGIES)}.")
        if self.tune_layers < 1:
            raise EnsembleConfigError(f"tune_layers {self.tune_layers} is not positive.", "Train at least 1 layer.")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrainConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise EnsembleConfigError(f"Unknown training options: {sorted(unknown)}.", f"Use only: {sorted(known)}.")
        return cls(**dict(data))

    def identity(self) -> dict[str, Any]:
        """The options that change what is learnt (everything but device and precision)."""
        return {
            k: v
            for k, v in self.to_dict().items()
            if k not in RUNTIME_FIELDS and not (k in _LATER_FIELDS and v == _LATER_FIELDS[k])
        }


#: Named presets. ``top-cpu`` runs each backbone's lower layers once and trains its top layer and
#: head on their output (minutes per member on 2 cores; the default without a GPU, see
#: :func:`engine.models.device.default_preset`); ``quick-cpu`` encodes the dataset once per backbone
#: and trains only the head on the cached features (fastest); ``fast-cpu`` fine-tunes every weight
#: for 2 epochs; ``paper`` follows the CoBA set-up (AdamW 5e-5, batch 32, 300 tokens, up to 15
#: epochs, best on dev).
PRESETS: dict[str, dict[str, Any]] = {
    "quick-cpu": {
        "strategy": "cached-head",
        "max_length": 128,
        "epochs": 60,
        "batch_size": 256,
        "learning_rate": 3e-3,
        "warmup_ratio": 0.05,
        "patience": None,
    },
    "top-cpu": {
        "strategy": "cached-top",
        "tune_layers": 1,
        "max_length": 128,
        "epochs": 2,
        "batch_size": 32,
        "learning_rate": 3e-4,
        "warmup_ratio": 0.06,
        "patience": None,
    },
    "fast-cpu": {"max_length": 128, "epochs": 2, "batch_size": 16, "learning_rate": 1e-4, "patience": None},
    "paper": {"max_length": 300, "epochs": 15, "batch_size": 32, "learning_rate": 5e-5, "patience": 3},
}

#: ``config.model_type`` values whose layers the ``cached-top`` strategy (:mod:`engine.models.top`) can run on
#: their own.
TOP_TYPES = ("bert", "roberta", "electra", "mpnet", "distilbert")

#: A backbone whose training cost per token (:meth:`engine.models.backbone.Backbone.relative_cost`,
#: MiniLM-L6 = 1) is at most this is *small* for :data:`SIZED_PRESETS` (MiniLM-L6 and -L3); a
#: costlier one is *large* (MPNet: 4).
SMALL_BACKBONE_COST = 1.5

#: Presets whose values depend on the member's backbone: ``small`` for a small backbone, ``large``
#: for the rest (see :data:`SMALL_BACKBONE_COST`). ``sample-cpu`` (the default without a GPU)
#: trains each member on a seeded sample of the train rows, so its minutes stop growing with the
#: dataset. A small backbone is fully fine-tuned on 800 rows: its word importance is far more like
#: human edits than with frozen lower layers (P@5 against the CAD editors' words, MiniLM-L6: 0.410
#: against 0.259 for ``top-cpu`` on all 1,707 rows, at 1.3 points less dev accuracy; 208 s on 2
#: cores). A large one trains its top layer and head on up to 3,000 rows: MPNet's full fine-tuning
#: takes a quarter of an hour per 800 rows on 2 cores, and its top layer needs rows (dev accuracy on
#: the demo: 81.4 % from 1,000 rows, 84.5 % from 1,700, 87.1 % from all 3,414). A large backbone
#: whose architecture the top-layer strategy does not know (a local DeBERTa folder) gets the small
#: backbones' values instead of an error.
SIZED_PRESETS: dict[str, dict[str, dict[str, Any]]] = {
    "sample-cpu": {
        "small": {**PRESETS["fast-cpu"], "max_train_rows": 800},
        "large": {**PRESETS["top-cpu"], "max_train_rows": 3000},
    },
}

#: One line per preset, for pickers and ``--help``.
PRESET_HELP: dict[str, str] = {
    "sample-cpu": "each member on a sample of the train rows: small backbones fully fine-tuned on 800, large ones "
                  "(MPNet) their top layer on up to 3,000 (minutes on a CPU, bounded whatever the dataset's size)",
    "quick-cpu": "frozen encoder, cached features, head trained (fastest; least accurate)",
    "top-cpu": "lower layers frozen and run once, top layer + head trained (minutes on a CPU; word importance "
               "less like human edits than fast-cpu's, even fast-cpu's on 800 sampled rows)",
    "fast-cpu": "full fine-tuning, 2 epochs, 128 tokens",
    "paper": "full fine-tuning as in CoBA: 300 tokens, up to 15 epochs",
}


def preset_names() -> tuple[str, ...]:
    """Every preset's name: :data:`SIZED_PRESETS`, then :data:`PRESETS`."""
    return (*SIZED_PRESETS, *PRESETS)


def backbone_size(backbone: str, backbone_params: Mapping[str, Any] | None = None) -> str:
    """``"small"`` or ``"large"`` for :data:`SIZED_PRESETS`, from the backbone's cost per token (no model loaded).

    Raises
    ------
    UnknownBackboneError
        For a backbone name that is not registered.
    """
    from engine.models.registry import get_backbone

    cost = get_backbone(backbone, **dict(backbone_params or {})).relative_cost()
    return "small" if cost <= SMALL_BACKBONE_COST else "large"


def _top_supported(backbone: str, backbone_params: Mapping[str, Any] | None, values: Mapping[str, Any]) -> bool:
    """Whether a preset's ``values`` can train ``backbone``: the top-layer strategy knows only some
    architectures (:data:`TOP_TYPES`); an unknown architecture is given the benefit of the doubt."""
    if values.get("strategy") != "cached-top":
        return True
    from engine.models.registry import get_backbone

    kind = get_backbone(backbone, **dict(backbone_params or {})).architecture()
    return kind is None or kind in TOP_TYPES


def train_preset(
    name: str = "fast-cpu",
    backbone: str | None = None,
    backbone_params: Mapping[str, Any] | None = None,
    **overrides: Any,
) -> TrainConfig:
    """A :class:`TrainConfig` from a preset, with ``overrides`` applied.

    Parameters
    ----------
    name
        A preset of :data:`PRESETS` or :data:`SIZED_PRESETS`.
    backbone, backbone_params
        The member's backbone; needed by a preset of :data:`SIZED_PRESETS` (ignored by the others).
    **overrides
        :class:`TrainConfig` fields that win over the preset's.

    Raises
    ------
    EnsembleConfigError
        For an unknown preset or option, or a sized preset without a backbone.
    """
    if name in SIZED_PRESETS:
        if backbone is None:
            raise EnsembleConfigError(f"Preset {name!r} depends on the member's backbone, and none was given.",
                                      "Pass the backbone name, or use a preset such as 'top-cpu'.")
        size = backbone_size(backbone, backbone_params)
        if size == "large" and not _top_supported(backbone, backbone_params, SIZED_PRESETS[name][size]):
            size = "small"  # e.g. a local DeBERTa folder: fine-tuned on the small sample rather than refused
        values = SIZED_PRESETS[name][size]
    elif name in PRESETS:
        values = PRESETS[name]
    else:
        raise EnsembleConfigError(f"No training preset {name!r}.", f"Use one of: {', '.join(preset_names())}.")
    return TrainConfig.from_dict({"preset": name, **values, **overrides})


#: What a member reads: ``auto`` = the dataset's text fields (``text``, or premise + hypothesis);
#: ``hypothesis`` = the hypothesis only (a hypothesis-only baseline for NLI artefacts).
INPUTS = ("auto", "hypothesis")


@dataclass(frozen=True)
class MemberSpec:
    """One ensemble member: a name, a backbone (by name), and how to train it.

    Parameters
    ----------
    name
        Unique model name in the project (``models.name``); also its folder name.
    backbone
        Registry name (:func:`engine.models.available_backbones`).
    backbone_params
        JSON parameters for the backbone (e.g. ``{"path": ...}`` for ``local-dir``).
    train
        Training options.
    inputs
        ``"auto"`` or ``"hypothesis"`` (see :data:`INPUTS`).
    """

    name: str
    backbone: str
    backbone_params: Mapping[str, Any] = field(default_factory=dict)
    train: TrainConfig = field(default_factory=TrainConfig)
    inputs: str = "auto"

    def __post_init__(self) -> None:
        if not self.name or self.name.strip() != self.name or "/" in self.name or "\\" in self.name:
            raise EnsembleConfigError(
                f"Invalid member name {self.name!r}.", "Use a non-empty name without slashes or outer spaces (members are "
                "named '<prefix><backbone>', the prefix by default the dataset's name: give another with --prefix)."
            )
        if self.inputs not in INPUTS:
            raise EnsembleConfigError(f"Unknown inputs {self.inputs!r}.", f"Use one of: {', '.join(INPUTS)}.")

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "backbone": self.backbone,
            "backbone_params": dict(self.backbone_params),
            "train": self.train.to_dict(),
            "inputs": self.inputs,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MemberSpec:
        return cls(
            name=data["name"],
            backbone=data["backbone"],
            backbone_params=dict(data.get("backbone_params") or {}),
            train=TrainConfig.from_dict(data.get("train") or {}),
            inputs=data.get("inputs", "auto"),
        )

    def config_hash(self, dataset_id: int) -> str:
        """Stable identity of (what is trained, on which dataset), 16 hex digits."""
        payload = {
            "v": CONFIG_VERSION,
            "dataset_id": int(dataset_id),
            "backbone": self.backbone,
            "backbone_params": dict(self.backbone_params),
            "train": self.train.identity(),
            "inputs": self.inputs,
        }
        raw = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class EnsembleConfig:
    """An odd number of members whose top-K words are majority-voted.

    The vote threshold is ``tau = (|M| + 1) / 2`` (CoBA): a word in the top-K of at least
    ``tau`` members is principal.
    """

    members: tuple[MemberSpec, ...]
    version: int = CONFIG_VERSION

    def __post_init__(self) -> None:
        object.__setattr__(self, "members", tuple(self.members))
        if not self.members:
            raise EnsembleConfigError("An ensemble needs at least one member.", "Add members (default: 3).")
        if len(self.members) % 2 == 0:
            raise EnsembleConfigError(
                f"An ensemble needs an odd number of members for a majority vote, got {len(self.members)}.",
                "Add or remove one member.",
            )
        names = [m.name for m in self.members]
        if len(set(names)) != len(names):
            raise EnsembleConfigError(f"Member names repeat: {names}.", "Give every member its own name.")

    @property
    def threshold(self) -> int:
        """``tau = (|M| + 1) / 2``."""
        return (len(self.members) + 1) // 2

    @property
    def names(self) -> list[str]:
        return [m.name for m in self.members]

    def to_dict(self) -> dict[str, Any]:
        return {"version": self.version, "members": [m.to_dict() for m in self.members]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EnsembleConfig:
        return cls(members=tuple(MemberSpec.from_dict(m) for m in data["members"]), version=int(data.get("version", 1)))


#: The default members: two real BERT-family sizes and one MPNet.
DEFAULT_MEMBERS = ("minilm-l6", "minilm-l3", "mpnet-base")


def default_ensemble(
    prefix: str = "",
    *,
    backbones: Sequence[str] = DEFAULT_MEMBERS,
    preset: str = "fast-cpu",
    **train_overrides: Any,
) -> EnsembleConfig:
    """The default 3-member ensemble, members named ``f"{prefix}{backbone}"``.

    Parameters
    ----------
    prefix
        Prepended to every member name (e.g. the dataset name and a dash).
    backbones
        Backbone names, one member each (odd count).
    preset, **train_overrides
        Passed to :func:`train_preset` for every member (with its backbone).
    """
    return EnsembleConfig(tuple(MemberSpec(f"{prefix}{b}", b, {}, train_preset(preset, b, **train_overrides))
                                for b in backbones))


def hypothesis_only_member(
    name: str = "hypothesis-only", backbone: str = "minilm-l6", *, preset: str = "fast-cpu", **train_overrides: Any
) -> MemberSpec:
    """A member trained on the hypothesis field only (NLI annotation-artefact baseline)."""
    return MemberSpec(name, backbone, {}, train_preset(preset, backbone, **train_overrides), inputs="hypothesis")
