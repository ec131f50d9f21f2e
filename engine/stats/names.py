"""Feature names that are spelled out only when asked for.

A large dataset has millions of bigram features, most of them seen once or twice; the
statistics never look at their names, and spelling ``"first second@field"`` for every one
of them costs more than counting them. :class:`FeatureNames` is a read-only sequence of
strings built from parts: plain lists, and :class:`NgramNames`, which spells a name from
vocabulary ids when it is read. Reading one name (``names[i]``, :meth:`FeatureNames.take`)
spells just that name; anything that needs the whole list (iteration, ``in``, ``index``,
comparison) spells every name once and keeps the list.
"""

from __future__ import annotations

import bisect
import itertools
import operator
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

import numpy as np

__all__ = ["FeatureNames", "NgramNames"]


class NgramNames(Sequence[str]):
    """Names of n-gram columns from vocabulary ids: ``word@field`` or ``first second@field``.

    Parameters
    ----------
    vocab
        Word of each token id.
    first
        Token id of the (first) word of each column.
    second
        Token id of the second word of each bigram column, or ``None`` for unigrams.
    suffix
        Appended to every name (``"@premise"``, or ``""`` for single-text tasks).
    """

    def __init__(self, vocab: list[str], first: np.ndarray, second: np.ndarray | None, suffix: str) -> None:
        self._vocab = vocab
        self._first = np.asarray(first)
        self._second = None if second is None else np.asarray(second)
        self._suffix = suffix

    def __len__(self) -> int:
        return len(self._first)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return self.take(np.arange(len(self))[index])
        i = operator.index(index)
        vocab = self._vocab
        if self._second is None:
            return vocab[self._first[i]] + self._suffix
        return f"{vocab[self._first[i]]} {vocab[self._second[i]]}{self._suffix}"

    def take(self, index: np.ndarray | Sequence[int]) -> list[str]:
        """Names of the columns ``index`` (in that order)."""
        index = np.asarray(index, dtype=np.int64)
        vocab, suffix = self._vocab, self._suffix
        first = self._first[index].tolist()
        if self._second is None:
            return [vocab[a] + suffix for a in first]
        second = self._second[index].tolist()
        return [f"{vocab[a]} {vocab[b]}{suffix}" for a, b in zip(first, second)]

    def tolist(self) -> list[str]:
        """Every name."""
        return self.take(np.arange(len(self)))


class FeatureNames(Sequence[str]):
    """Read-only names of the feature columns, spelled lazily part by part.

    Behaves like a ``list`` of ``str`` for reading: ``len``, indexing, slicing, iteration,
    ``in``, :meth:`index`, and ``==`` against lists, tuples and other :class:`FeatureNames`.

    Parameters
    ----------
    parts
        Consecutive runs of names: lists of ``str`` or lazy parts such as :class:`NgramNames`
        (anything with ``len``, integer indexing and ``take``/``tolist`` or iteration).
    """

    __hash__ = None  # type: ignore[assignment]  # a sequence compared by value, like list

    def __init__(self, parts: Iterable[Sequence[str]] = ()) -> None:
        self._parts = [p for p in parts if len(p)]
        self._ends = list(itertools.accumulate(len(p) for p in self._parts))
        self._list: list[str] | None = None

    @classmethod
    def of(cls, names: Sequence[str]) -> FeatureNames:
        """``names`` as :class:`FeatureNames` (returned as is when it already is one)."""
        return names if isinstance(names, FeatureNames) else cls([list(names)])

    def __len__(self) -> int:
        return self._ends[-1] if self._ends else 0

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return self.take(np.arange(len(self))[index])
        i = operator.index(index)
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("feature index out of range")
        if self._list is not None:
            return self._list[i]
        p = bisect.bisect_right(self._ends, i)
        return self._parts[p][i - (self._ends[p - 1] if p else 0)]

    def take(self, index: np.ndarray | Sequence[int]) -> list[str]:
        """Names at positions ``index`` (in that order), spelling only those."""
        index = np.asarray(index, dtype=np.int64).ravel()
        if self._list is not None:
            return [self._list[i] for i in index.tolist()]
        n = len(self)
        if index.size and (index.min() < -n or index.max() >= n):
            raise IndexError("feature index out of range")
        index = np.where(index < 0, index + n, index)
        part = np.searchsorted(np.asarray(self._ends), index, side="right")
        out: list[Any] = [None] * len(index)
        starts = [0, *self._ends[:-1]]
        for p in np.unique(part).tolist():
            where = np.flatnonzero(part == p)
            local = index[where] - starts[p]
            source = self._parts[p]
            names = source.take(local) if hasattr(source, "take") else [source[j] for j in local.tolist()]
            for w, name in zip(where.tolist(), names):
                out[w] = name
        return out

    def tolist(self) -> list[str]:
        """Every name, as a list (spelled once, then kept)."""
        if self._list is None:
            out: list[str] = []
            for part in self._parts:
                out.extend(part.tolist() if hasattr(part, "tolist") else part)
            self._list = out
        return self._list

    def __iter__(self) -> Iterator[str]:
        return iter(self.tolist())

    def __contains__(self, name: object) -> bool:
        return name in self.tolist()

    def index(self, name: Any, start: int = 0, stop: int | None = None) -> int:
        """Position of the first column called ``name`` (``ValueError`` if none)."""
        names = self.tolist()
        return names.index(name, start, len(names) if stop is None else stop)

    def count(self, name: Any) -> int:
        return self.tolist().count(name)

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if isinstance(other, (FeatureNames, list, tuple)):
            return len(self) == len(other) and self.tolist() == list(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"FeatureNames({len(self):,} names)"
