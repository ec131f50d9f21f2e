"""String-keyed registry of LLM backends (configs name a backend, never hold one).

Built-in backends register themselves when their module is imported; the registry
imports those modules on first lookup (their heavy dependencies stay lazy).

Examples
--------
>>> from engine.llm.registry import backend_names
>>> sorted(backend_names())
['local', 'openai']
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from engine.llm.base import ChatBackend
from engine.llm.config import LLMConfig
from engine.llm.errors import BackendNotFoundError

BackendFactory = Callable[[LLMConfig], ChatBackend]

_FACTORIES: dict[str, BackendFactory] = {}
_BUILTIN_MODULES = {"openai": "engine.llm.openai_backend", "local": "engine.llm.local_backend"}


def register_backend(name: str) -> Callable[[BackendFactory], BackendFactory]:
    """Class decorator: make ``factory(config)`` available as backend ``name``."""

    def decorate(factory: BackendFactory) -> BackendFactory:
        _FACTORIES[name] = factory
        return factory

    return decorate


def backend_names() -> list[str]:
    """Every registered backend name (built-ins included)."""
    return sorted(set(_FACTORIES) | set(_BUILTIN_MODULES))


def get_backend_factory(name: str) -> BackendFactory:
    """The factory registered under ``name``.

    Raises
    ------
    BackendNotFoundError
    """
    if name not in _FACTORIES and name in _BUILTIN_MODULES:
        importlib.import_module(_BUILTIN_MODULES[name])
    try:
        return _FACTORIES[name]
    except KeyError:
        raise BackendNotFoundError(
            f"No LLM backend called {name!r}.", f"Use one of: {', '.join(backend_names())}."
        ) from None


def create_backend(config: LLMConfig) -> ChatBackend:
    """Build the backend ``config`` names (nothing is sent or loaded yet)."""
    return get_backend_factory(config.backend)(config)
