"""Classifier ensemble: backbone registry, training, loading and prediction.

Importing this package is cheap: torch and transformers are imported inside the functions
that need them.
"""

from engine.models.config import (
    DEFAULT_MEMBERS,
    PRESETS,
    EnsembleConfig,
    MemberSpec,
    TrainConfig,
    default_ensemble,
    hypothesis_only_member,
    train_preset,
)
from engine.models.errors import (
    BackboneUnavailableError,
    DependencyMissingError,
    EnsembleConfigError,
    ModelConfigMismatchError,
    ModelError,
    ModelNotFoundError,
    TrainingDataError,
    UnknownBackboneError,
    UnsafeWeightsError,
)
from engine.models.loading import LoadedMember, clear_cache, load_member
from engine.models.predict import DatasetPredictions, predict, predict_dataset
from engine.models.backbone import Backbone
from engine.models.registry import available_backbones, get_backbone, register_backbone
from engine.models.store import ModelInfo, delete_model, get_model, list_models
from engine.models.train import EnsembleResult, MemberResult, train_ensemble, train_member

__all__ = [
    "DEFAULT_MEMBERS",
    "PRESETS",
    "Backbone",
    "BackboneUnavailableError",
    "DatasetPredictions",
    "DependencyMissingError",
    "EnsembleConfig",
    "EnsembleConfigError",
    "EnsembleResult",
    "LoadedMember",
    "MemberResult",
    "MemberSpec",
    "ModelConfigMismatchError",
    "ModelError",
    "ModelInfo",
    "ModelNotFoundError",
    "TrainConfig",
    "TrainingDataError",
    "UnknownBackboneError",
    "UnsafeWeightsError",
    "available_backbones",
    "clear_cache",
    "default_ensemble",
    "delete_model",
    "get_backbone",
    "get_model",
    "hypothesis_only_member",
    "list_models",
    "load_member",
    "predict",
    "predict_dataset",
    "register_backbone",
    "train_ensemble",
    "train_member",
    "train_preset",
]
