"""String-keyed registry of word-attribution methods and their settings.

A method is a class with a frozen :class:`MethodSettings` dataclass and a
:meth:`AttributionMethod.group_scores` that, for an :class:`~engine.attribution.batch.EncodedBatch`,
returns one score per word group of every example. Configurations store the method *name*
and its settings as JSON; :func:`settings_key` is the stable hash used as the cache key.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, TypeVar

from engine.attribution.errors import MethodSettingsError, UnknownMethodError

__all__ = [
    "ALGORITHM_VERSION",
    "AttributionMethod",
    "MethodSettings",
    "available_methods",
    "get_method",
    "register_method",
    "resolve_settings",
    "settings_key",
]

#: Bumped when a change to the shared code (alignment, baseline) changes stored scores.
ALGORITHM_VERSION = 1

_REGISTRY: dict[str, type[AttributionMethod]] = {}
M = TypeVar("M", bound="type[AttributionMethod]")


@dataclasses.dataclass(frozen=True)
class MethodSettings:
    """Base of every method's settings.

    Parameters
    ----------
    output
        Explain the target's softmax probability (``"prob"``) or its logit (``"logit"``).
    """

    output: str = "prob"

    #: Fields that only change speed or memory, not the scores; left out of the cache key.
    PERFORMANCE_FIELDS: ClassVar[frozenset[str]] = frozenset()

    def __post_init__(self) -> None:
        if self.output not in ("prob", "logit"):
            raise MethodSettingsError(f"Unknown output {self.output!r}.", "Use 'prob' or 'logit'.")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def identity(self) -> dict[str, Any]:
        """The settings that change the scores."""
        return {k: v for k, v in self.to_dict().items() if k not in self.PERFORMANCE_FIELDS}


class AttributionMethod:
    """A word-attribution method (see :mod:`engine.attribution.ig` for an example)."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    Settings: ClassVar[type[MethodSettings]] = MethodSettings
    #: Whether the method returns IG-style convergence deltas.
    has_delta: ClassVar[bool] = False

    def group_scores(self, forward: Any, batch: Any, targets: Any, settings: Any, *, seed_ids: list[int]) -> tuple[list[Any], list[float] | None]:
        """Scores per word group for every example of ``batch``.

        Parameters
        ----------
        forward
            :class:`~engine.attribution.forward.ClassifierForward`.
        batch
            :class:`~engine.attribution.batch.EncodedBatch`.
        targets
            ``(B,)`` long tensor of class indices to explain.
        settings
            An instance of :attr:`Settings`.
        seed_ids
            One integer per example (its id) for per-example random seeds.

        Returns
        -------
        scores, deltas
            ``scores[i]`` is a ``(batch.n_groups[i],)`` array; ``deltas`` (IG only) are the
            completeness errors ``sum(attributions) - (f(x) - f(baseline))``.
        """
        raise NotImplementedError


def register_method(name: str) -> Callable[[M], M]:
    """Class decorator registering an :class:`AttributionMethod` under ``name``."""

    def deco(cls: M) -> M:
        if name in _REGISTRY and _REGISTRY[name] is not cls:
            raise ValueError(f"attribution method {name!r} is already registered")
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return deco


def _ensure_builtins() -> None:
    import engine.attribution.ig  # noqa: F401
    import engine.attribution.lime  # noqa: F401
    import engine.attribution.shapley  # noqa: F401


def get_method(name: str) -> AttributionMethod:
    """An instance of the method registered as ``name``.

    Raises
    ------
    UnknownMethodError
    """
    _ensure_builtins()
    try:
        return _REGISTRY[name]()
    except KeyError:
        raise UnknownMethodError(f"No attribution method {name!r}.", f"Use one of: {', '.join(sorted(_REGISTRY))}.") from None


def available_methods() -> dict[str, str]:
    """Registered method names and descriptions."""
    _ensure_builtins()
    return {n: _REGISTRY[n].description for n in sorted(_REGISTRY)}


def resolve_settings(method: str, settings: MethodSettings | Mapping[str, Any] | None = None) -> MethodSettings:
    """Settings object for ``method`` from an instance, a dict of options, or ``None`` (defaults).

    Raises
    ------
    MethodSettingsError
        Unknown option names or values of the wrong kind.
    """
    cls = get_method(method).Settings
    if settings is None:
        return cls()
    if isinstance(settings, cls):
        return settings
    if isinstance(settings, MethodSettings):
        raise MethodSettingsError(f"{type(settings).__name__} are not settings of {method!r}.", f"Pass {cls.__name__}.")
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = set(settings) - known
    if unknown:
        raise MethodSettingsError(f"Unknown {method} options: {sorted(unknown)}.", f"Use only: {sorted(known)}.")
    try:
        return cls(**dict(settings))
    except TypeError as exc:
        raise MethodSettingsError(f"Invalid {method} settings: {exc}.", "Check the option values.") from exc


def settings_key(method: str, settings: MethodSettings, *, target: str, max_length: int) -> str:
    """Stable 16-hex-digit hash of everything that determines stored scores.

    Covers the method name, its score-changing settings, the target rule, the truncation
    length and :data:`ALGORITHM_VERSION`; not batch sizes or other performance options.
    """
    payload = {
        "v": ALGORITHM_VERSION,
        "method": method,
        "settings": settings.identity(),
        "target": target,
        "max_length": int(max_length),
    }
    raw = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:16]
