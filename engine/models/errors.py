"""Named errors of the classifier ensemble (codes CB5xx)."""

from __future__ import annotations

from engine.errors import CounterbiasError


class ModelError(CounterbiasError):
    """Base class of classifier and ensemble errors."""

    code = "CB500"


class UnknownBackboneError(ModelError):
    """A configuration names a backbone that is not registered."""

    code = "CB501"


class BackboneUnavailableError(ModelError):
    """A registered backbone cannot be loaded here (package or folder missing)."""

    code = "CB502"


class DependencyMissingError(ModelError):
    """torch, transformers, captum or safetensors is not installed."""

    code = "CB503"


class EnsembleConfigError(ModelError):
    """An ensemble configuration is invalid (even size, duplicate names, bad preset)."""

    code = "CB504"


class TrainingDataError(ModelError):
    """The dataset cannot train a classifier (no rows in the train split, one label only)."""

    code = "CB505"


class ModelNotFoundError(ModelError):
    """No trained model of that name exists in the project."""

    code = "CB506"


class ModelConfigMismatchError(ModelError):
    """A model of that name exists but was trained with another configuration."""

    code = "CB507"


class UnsafeWeightsError(ModelError):
    """A model folder holds only pickled weights, which are never loaded."""

    code = "CB508"


class CachedHeadError(ModelError):
    """A quick (cached-head) member does not compute what its head was trained on."""

    code = "CB509"


def require(module: str) -> None:
    """Import ``module`` or raise :class:`DependencyMissingError` with the pip line to run."""
    import importlib

    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise DependencyMissingError(
            f"The model features need the Python package {module!r}, which is not installed ({exc}).",
            "Install the model extra: pip install 'counterbias-studio[models]' "
            "(torch must be installed first: pip install torch==2.13.0).",
        ) from exc


class InvalidWeightsError(ModelError):
    """A ``.safetensors`` file of a model folder is empty or not safetensors at all."""

    code = "CB510"


class RemoteCodeError(ModelError):
    """A model folder's ``config.json`` asks for custom code (``auto_map``), which is never run."""

    code = "CB511"


class UnknownDeviceError(ModelError):
    """A device name that is not ``auto``, ``cpu``, ``cuda``, ``cuda:N`` or ``mps``."""

    code = "CB512"


class DeviceUnavailableError(ModelError):
    """A valid device name whose device is not present here (no CUDA GPU, no such GPU index, no MPS)."""

    code = "CB513"
