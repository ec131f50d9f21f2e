"""String-keyed registry of classifier backbones.

Configurations store a backbone *name* and its JSON *params*, never objects; the registry turns
them back into a :class:`~engine.models.backbone.Backbone` (spaCy/catalogue style)::

    @register_backbone("my-encoder")
    class MyEncoder(Backbone):
        def prepare(self) -> Path: ...

    backbone = get_backbone("my-encoder", **params)

The built-ins (:mod:`engine.models.backbones`) are declared by module path and imported on
the first lookup of any of them.

Examples
--------
>>> from engine.models.registry import BACKBONES, get_backbone
>>> "minilm-l6" in BACKBONES
True
>>> get_backbone("local-dir", path="/models/my-bert")
LocalDir(name='local-dir', params={'path': '/models/my-bert'})
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from engine.models.backbone import Backbone
from engine.models.errors import UnknownBackboneError
from engine.registry import Registry

__all__ = ["BACKBONES", "TINY_ARCHS", "available_backbones", "backbone_class", "get_backbone", "register_backbone"]

B = TypeVar("B", bound="type[Backbone]")

_BUILTIN = "engine.models.backbones"
#: Architectures of the ``tiny-<arch>`` test backbones.
TINY_ARCHS = ("distilbert", "roberta", "deberta-v2", "electra", "albert", "mpnet")


def _set_name(name: str, cls: type[Backbone]) -> None:
    cls.name = name


#: Every backbone class by name.
BACKBONES: Registry[type[Backbone]] = Registry(
    "backbone",
    UnknownBackboneError,
    builtins={
        **{name: _BUILTIN for name in ("minilm-l6", "minilm-l3", "mpnet-base", "local-dir")},
        **{f"tiny-{arch}": _BUILTIN for arch in TINY_ARCHS},
    },
    on_register=_set_name,
)


def register_backbone(name: str) -> Callable[[B], B]:
    """Class decorator registering a :class:`Backbone` subclass under ``name`` (sets ``cls.name``)."""
    return BACKBONES.register(name)


def backbone_class(name: str) -> type[Backbone]:
    """The class registered under ``name``.

    Raises
    ------
    UnknownBackboneError
    """
    return BACKBONES.get(name)


def get_backbone(name: str, **params: Any) -> Backbone:
    """Instantiate the backbone registered under ``name`` with ``params``.

    Raises
    ------
    UnknownBackboneError
    """
    return BACKBONES.create(name, **params)


def available_backbones() -> dict[str, str]:
    """Registered backbone names and their descriptions, sorted by name (imports the built-ins)."""
    classes = BACKBONES.load_all()
    return {n: classes[n].description for n in sorted(classes)}
