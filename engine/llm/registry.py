"""String-keyed registry of LLM backends (configs name a backend, never hold one).

A backend is a factory ``factory(config) -> ChatBackend`` (usually the backend class).
The built-ins are declared by module path and imported on first lookup, so ``openai`` and
``xllamacpp`` stay unimported until a backend is created.

Examples
--------
>>> from engine.llm.registry import backend_names
>>> sorted(backend_names())
['local', 'openai']
"""

from __future__ import annotations

from collections.abc import Callable

from engine.llm.base import ChatBackend
from engine.llm.config import LLMConfig
from engine.llm.errors import BackendNotFoundError
from engine.registry import Registry

__all__ = ["BACKENDS", "BackendFactory", "backend_names", "create_backend", "get_backend_factory", "register_backend"]

BackendFactory = Callable[[LLMConfig], ChatBackend]

#: Every LLM backend by name.
BACKENDS: Registry[BackendFactory] = Registry(
    "LLM backend",
    BackendNotFoundError,
    builtins={"openai": "engine.llm.openai_backend", "local": "engine.llm.local_backend"},
)


def register_backend(name: str) -> Callable[[BackendFactory], BackendFactory]:
    """Class decorator: make ``factory(config)`` available as backend ``name``."""
    return BACKENDS.register(name)


def backend_names() -> list[str]:
    """Every registered backend name (built-ins included), sorted."""
    return sorted(BACKENDS.names())


def get_backend_factory(name: str) -> BackendFactory:
    """The factory registered under ``name``.

    Raises
    ------
    BackendNotFoundError
    """
    return BACKENDS.get(name)


def create_backend(config: LLMConfig) -> ChatBackend:
    """Build the backend ``config`` names (nothing is sent or loaded yet)."""
    return BACKENDS.create(config.backend, config)
