"""String-keyed registry of word-attribution methods, and settings resolution by method name.

The built-in methods (``ig``, ``lime``, ``shapley``) are declared by module path and imported
on first lookup; each registers its :class:`~engine.attribution.method.AttributionMethod`
subclass with :func:`register_method`. The method interface itself lives in
:mod:`engine.attribution.method`, so a method module imports this registry and never the
other way round.

Examples
--------
>>> from engine.attribution.registry import available_methods, resolve_settings
>>> sorted(available_methods())
['ig', 'lime', 'shapley']
>>> resolve_settings("ig", {"n_steps": 20}).n_steps
20
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from engine.attribution.errors import MethodSettingsError, UnknownMethodError
from engine.attribution.method import AttributionMethod, MethodSettings, default_budget
from engine.registry import Registry

__all__ = ["METHODS", "available_methods", "get_method", "register_method", "resolve_settings"]

M = TypeVar("M", bound="type[AttributionMethod]")


def _set_name(name: str, cls: type[AttributionMethod]) -> None:
    cls.name = name


#: Every attribution method class by name.
METHODS: Registry[type[AttributionMethod]] = Registry(
    "attribution method",
    UnknownMethodError,
    builtins={
        "ig": "engine.attribution.ig",
        "lime": "engine.attribution.lime",
        "shapley": "engine.attribution.shapley",
    },
    on_register=_set_name,
)


def register_method(name: str) -> Callable[[M], M]:
    """Class decorator registering an :class:`AttributionMethod` under ``name`` (sets ``cls.name``)."""
    return METHODS.register(name)


def get_method(name: str) -> AttributionMethod:
    """An instance of the method registered as ``name``.

    Raises
    ------
    UnknownMethodError
    """
    return METHODS.create(name)


def available_methods() -> dict[str, str]:
    """Registered method names and descriptions, sorted by name (imports the built-ins)."""
    methods = METHODS.load_all()
    return {n: methods[n].description for n in sorted(methods)}


def resolve_settings(method: str, settings: MethodSettings | Mapping[str, Any] | None = None) -> MethodSettings:
    """Settings object for ``method`` from an instance, a dict of options, or ``None`` (defaults).

    A dict without ``"budget"``, or ``None``, gets :func:`~engine.attribution.method.default_budget`
    (``"fast"`` on a CPU, ``"full"`` with a GPU); an instance is taken as it is.

    Raises
    ------
    UnknownMethodError
        No method is called ``method``.
    MethodSettingsError
        Unknown option names or values of the wrong kind.
    """
    cls = METHODS.get(method).Settings
    if settings is None:
        settings = {}
    if isinstance(settings, cls):
        return settings
    if isinstance(settings, MethodSettings):
        raise MethodSettingsError(f"{type(settings).__name__} are not settings of {method!r}.", f"Pass {cls.__name__}.")
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = set(settings) - known
    if unknown:
        raise MethodSettingsError(f"Unknown {method} options: {sorted(unknown)}.", f"Use only: {sorted(known)}.")
    options = dict(settings)
    if "budget" not in options:
        options["budget"] = default_budget()
    try:
        return cls(**options)
    except TypeError as exc:
        raise MethodSettingsError(f"Invalid {method} settings: {exc}.", "Check the option values.") from exc
