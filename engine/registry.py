"""One registry shape for every named, pluggable part (catalogue style).

LLM backends, classifier backbones, attribution methods and the CLI verbs are each a
:class:`Registry`: string keys, built-ins *declared* by module path and imported only when
one of them is first looked up (so their heavy dependencies stay lazy and the registry
imports none of its entries: no import circles), a :meth:`Registry.register` decorator for
third-party and test additions, and a named :class:`~engine.errors.CounterbiasError` for an
unknown name that lists the valid ones. Configurations store a *name*, never an object.

Examples
--------
>>> from engine.errors import CounterbiasError
>>> numbers = Registry("number type", CounterbiasError, builtins={"fraction": "fractions:Fraction"})
>>> numbers.names()
['fraction']
>>> numbers.create("fraction", 1, 3)
Fraction(1, 3)
>>> @numbers.register("pair")
... def pair(a, b):
...     return (a, b)
>>> numbers.names(), numbers.create("pair", 1, 2)
(['fraction', 'pair'], (1, 2))
>>> numbers.get("complex")
Traceback (most recent call last):
...
engine.errors.CounterbiasError: [CB000] No number type called 'complex'.
What to do: Use one of: fraction, pair.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

from engine.errors import CounterbiasError

__all__ = ["DuplicateNameError", "Registry"]

T = TypeVar("T")


class DuplicateNameError(ValueError):
    """A second, different entry was registered under a name already taken (a programming error)."""


class Registry(Generic[T]):
    """Entries of one kind under string names; built-ins are imported on first lookup.

    Parameters
    ----------
    kind
        What an entry is, for messages (``"LLM backend"``, ``"backbone"``).
    error
        The named error raised for an unknown name; built as ``error(message, hint)``, the
        hint listing every valid name.
    builtins
        ``name -> "package.module"`` (importing the module registers ``name`` with
        :meth:`register`) or ``name -> "package.module:attribute"`` (the attribute is the
        entry). Nothing is imported until a built-in is looked up. :meth:`names` lists
        built-ins in this order, then other entries in registration order.
    on_register
        Called as ``on_register(name, entry)`` when an entry is stored (e.g. to set the
        class attribute ``name``).

    Notes
    -----
    A built-in name can only be registered by an entry defined in its declared module
    (``entry.__module__``); any other entry under a taken name raises
    :class:`DuplicateNameError`. Registering the same object twice is harmless.
    Lookups are thread-safe.

    Examples
    --------
    >>> from engine.errors import CounterbiasError
    >>> codecs_ = Registry("codec", CounterbiasError, builtins={"json": "json:dumps"})
    >>> "json" in codecs_, codecs_.get("json")([1])
    (True, '[1]')
    """

    def __init__(
        self,
        kind: str,
        error: type[CounterbiasError],
        *,
        builtins: Mapping[str, str] | None = None,
        on_register: Callable[[str, T], None] | None = None,
    ) -> None:
        self.kind = kind
        self.error = error
        self._builtins: dict[str, str] = dict(builtins or {})
        self._on_register = on_register
        self._entries: dict[str, T] = {}
        self._lock = threading.RLock()
        for name, spec in self._builtins.items():
            if not name or not spec or spec.startswith(":") or spec.endswith(":"):
                raise ValueError(f"bad built-in {kind} declaration {name!r}: {spec!r}")

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, names={self.names()!r})"

    # ------------------------------------------------------------------ adding
    def register(self, name: str, entry: T | None = None) -> Any:
        """Store ``entry`` under ``name``; without ``entry``, a decorator that does so.

        Parameters
        ----------
        name
            The key configurations and users refer to.
        entry
            The object to store (a class, a factory, a function).

        Returns
        -------
        object
            ``entry`` itself, or a decorator returning the decorated object unchanged.

        Raises
        ------
        DuplicateNameError
            ``name`` is taken by another entry, or is a built-in declared in another module.
        """
        if not isinstance(name, str) or not name:
            raise ValueError(f"a {self.kind} name must be a non-empty string, not {name!r}")
        if entry is None:

            def decorate(obj: T) -> T:
                self._store(name, obj)
                return obj

            return decorate
        self._store(name, entry)
        return entry

    def _store(self, name: str, entry: T) -> None:
        with self._lock:
            current = self._entries.get(name)
            if current is entry:
                return
            if current is not None:
                raise DuplicateNameError(
                    f"{self.kind} {name!r} is already registered ({_describe(current)}); "
                    f"refusing {_describe(entry)}"
                )
            declared = self._builtins.get(name)
            if declared is not None and getattr(entry, "__module__", None) != declared.partition(":")[0]:
                raise DuplicateNameError(
                    f"{self.kind} {name!r} is a built-in of {declared}; refusing {_describe(entry)}"
                )
            self._entries[name] = entry
            if self._on_register is not None:
                self._on_register(name, entry)

    # ------------------------------------------------------------------ looking up
    def names(self) -> list[str]:
        """Every name: built-ins (declared order), then the others (registration order); imports nothing."""
        with self._lock:
            return list(self._builtins) + [n for n in self._entries if n not in self._builtins]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in self._builtins or name in self._entries)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def get(self, name: str) -> T:
        """The entry registered as ``name``, importing its module first if it is a built-in.

        Raises
        ------
        CounterbiasError
            The registry's ``error`` class when no entry has that name; its hint lists the
            valid names.
        """
        entry = self._entries.get(name)
        if entry is not None:
            return entry
        if name in self._builtins:
            return self._load(name)
        raise self.error(f"No {self.kind} called {name!r}.", f"Use one of: {', '.join(sorted(self.names()))}.")

    def create(self, name: str, /, *args: Any, **kwargs: Any) -> Any:
        """Call the entry ``name`` (a class or factory) with ``args`` and ``kwargs``."""
        factory: Any = self.get(name)
        return factory(*args, **kwargs)

    def load_all(self) -> dict[str, T]:
        """Every entry by name, in :meth:`names` order (imports every built-in)."""
        return {name: self.get(name) for name in self.names()}

    def _load(self, name: str) -> T:
        spec = self._builtins[name]
        module_name, _, attribute = spec.partition(":")
        # Not under the lock: the module's own ``register`` calls take it, and Python's
        # import lock already makes a module run once even when threads race here.
        module = importlib.import_module(module_name)
        with self._lock:
            if attribute and name not in self._entries:
                self._store(name, getattr(module, attribute))
            if name not in self._entries:
                raise ImportError(f"{module_name} was imported but did not register the {self.kind} {name!r}")
            return self._entries[name]


def _describe(entry: object) -> str:
    module = getattr(entry, "__module__", None)
    qualname = getattr(entry, "__qualname__", None) or type(entry).__qualname__
    return f"{module}.{qualname}" if module else qualname
