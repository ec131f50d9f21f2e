"""The typed records a project hands out: :class:`DatasetInfo` (one dataset version) and :class:`ExampleQuery`
(a filter and order over its examples)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engine.store import health

__all__ = ["DatasetInfo", "ExampleQuery"]


@dataclass(frozen=True)
class DatasetInfo:
    """One dataset version as stored in the ``datasets`` table."""

    id: int
    name: str
    kind: str
    parent_id: int | None
    task: str
    labels: list[str]
    source: str | None
    params: dict[str, Any] = field(default_factory=dict)
    row_count: int = 0
    created_at: str = ""

    @property
    def text_fields(self) -> tuple[str, ...]:
        """The example columns holding text: ``("text",)`` or ``("premise", "hypothesis")``."""
        return ("premise", "hypothesis") if self.task == "pair" else ("text",)

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> DatasetInfo:
        return cls(
            id=row["id"],
            name=row["name"],
            kind=row["kind"],
            parent_id=row["parent_id"],
            task=row["task"],
            labels=health.stored_json(row["labels"], "datasets", "labels", row["id"], default=[]),
            source=row["source"],
            params=health.stored_json(row["params"], "datasets", "params", row["id"], default={}),
            row_count=row["row_count"],
            created_at=row["created_at"],
        )


@dataclass(frozen=True)
class ExampleQuery:
    """A filter and order over one dataset version's examples.

    Parameters
    ----------
    dataset_id
        The dataset version.
    labels
        Keep only these labels (``None``: all).
    splits
        Keep only these splits (``None``: all).
    search
        Case-insensitive substring that must occur in a text field.
    example_ids
        Keep only these example ids (e.g. the examples holding a feature).
    order_by
        One of :data:`SORTABLE` or ``"position"`` (file order).
    descending
        Reverse the order.
    """

    dataset_id: int
    labels: tuple[str, ...] | None = None
    splits: tuple[str, ...] | None = None
    search: str = ""
    example_ids: tuple[int, ...] | None = None
    order_by: str = "position"
    descending: bool = False
