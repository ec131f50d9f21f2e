"""Training conditions: a name and the rows it trains on, drawn from dataset versions.

A condition is a list of sources ``(dataset, split filter, optional limit)``. An augmented
dataset version is already a dataset (originals followed by the accepted edits), so "original",
"augmented by a method", "z-filtered" and "an imported human-counterfactual set" are all one
source each; a size control adds a second source with a limit (e.g. 1,707 more originals from
another dataset). A source with a limit takes a seeded random sample, so the seed varies it.

Text syntax (CLI): ``NAME=SOURCE[+SOURCE...]`` with ``SOURCE = DATASET[:SPLIT][@LIMIT]``;
``SPLIT`` ``*`` or empty means every row. Datasets may be given by id.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from engine.evaluation.errors import BadConditionError
from engine.store.project import ExampleQuery

if TYPE_CHECKING:
    from engine.store import Project

__all__ = ["Condition", "Source", "TrainingRows", "parse_condition", "resolve_condition"]


@dataclass(frozen=True)
class Source:
    """Rows of one dataset version: all, or one split; all of them or a seeded sample of ``limit``."""

    dataset: str
    split: str = ""
    limit: int | None = None

    def to_dict(self) -> dict:
        return {"dataset": self.dataset, "split": self.split, "limit": self.limit}


@dataclass(frozen=True)
class Condition:
    """A named training set made of sources."""

    name: str
    sources: tuple[Source, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "sources", tuple(self.sources))
        if not self.name.strip():
            raise BadConditionError("A training condition needs a name.", "Write NAME=DATASET[:SPLIT][@LIMIT].")
        if not self.sources:
            raise BadConditionError(f"Condition {self.name!r} has no source.", "Name at least one dataset.")
        for s in self.sources:
            if s.limit is not None and s.limit < 1:
                raise BadConditionError(f"Limit {s.limit} in condition {self.name!r} is not positive.",
                                        "Use @N with N ≥ 1, or no limit.")

    def spec(self, project: Project) -> list[dict]:
        """The sources resolved to dataset ids, with what identifies their rows (JSON-ready)."""
        out = []
        for s in self.sources:
            d = project.dataset(s.dataset)
            out.append({"dataset_id": d.id, "dataset": d.name, "created_at": d.created_at, "rows": d.row_count,
                        "split": s.split, "limit": s.limit})
        return out

    def key(self, project: Project) -> str:
        """Identity of the rows this condition can draw (16 hex digits); the name is not part of it."""
        raw = json.dumps(self.spec(project), sort_keys=True)
        return hashlib.sha256(raw.encode()).hexdigest()[:16]


def parse_condition(text: str) -> Condition:
    """Parse ``NAME=DATASET[:SPLIT][@LIMIT][+DATASET...]``.

    Examples
    --------
    >>> parse_condition("size=cad:train+imdb:train@1707")
    Condition(name='size', sources=(Source(dataset='cad', split='train', limit=None), Source(dataset='imdb', split='train', limit=1707)))
    """
    name, eq, rest = text.partition("=")
    if not eq or not name.strip() or not rest.strip():
        raise BadConditionError(f"Cannot read the condition {text!r}.",
                                "Write NAME=DATASET[:SPLIT][@LIMIT][+DATASET[:SPLIT][@LIMIT]...].")
    sources = []
    for part in rest.split("+"):
        part = part.strip()
        limit = None
        head, at, tail = part.rpartition("@")
        if at:
            if not tail.strip().isdigit():
                raise BadConditionError(f"Limit {tail!r} in {text!r} is not a whole number.", "Write @N, e.g. @1707.")
            part, limit = head, int(tail)
        dataset, colon, split = part.rpartition(":")
        if not colon:
            dataset, split = part, ""
        split = "" if split.strip() == "*" else split.strip()
        if not dataset.strip():
            raise BadConditionError(f"A source of {text!r} names no dataset.", "Write DATASET[:SPLIT][@LIMIT].")
        sources.append(Source(dataset.strip(), split, limit))
    return Condition(name.strip(), tuple(sources))


@dataclass(frozen=True)
class TrainingRows:
    """The rows one (condition, seed) trains on."""

    example_ids: tuple[int, ...]
    texts: tuple[tuple[str, ...], ...]
    labels: tuple[str, ...]
    fields: tuple[str, ...]
    task: str


def resolve_condition(project: Project, condition: Condition, seed: int) -> TrainingRows:
    """The rows of ``condition`` for ``seed`` (limits draw a sample seeded by ``seed`` and the source).

    Raises
    ------
    BadConditionError
        A source split without rows, sources of different tasks, or fewer than two labels.
    """
    ids: list[int] = []
    task = None
    for index, s in enumerate(condition.sources):
        d = project.dataset(s.dataset)
        if task is not None and d.task != task:
            raise BadConditionError(f"Condition {condition.name!r} mixes single-text and premise/hypothesis datasets.",
                                    "Use datasets of one task in a condition.")
        task = d.task
        found = project.example_ids(ExampleQuery(d.id, splits=(s.split,) if s.split else None))
        if not len(found):
            splits = ", ".join(str(k) for k in project.split_counts(d.id)) or "none"
            raise BadConditionError(f"Dataset {d.name!r} has no rows in split {s.split!r} (condition {condition.name!r}).",
                                    f"Splits there: {splits}.")
        if s.limit is not None and s.limit < len(found):
            rng = np.random.default_rng([seed, index, d.id])
            found = np.sort(rng.choice(found, size=s.limit, replace=False))
        ids.extend(int(i) for i in found)
    fields = ("premise", "hypothesis") if task == "pair" else ("text",)
    rows = project.examples(ids)
    labels = tuple(r["label"] for r in rows)
    if len(set(labels)) < 2:
        raise BadConditionError(f"Condition {condition.name!r} holds a single label.", "A classifier needs two labels.")
    texts = tuple(tuple(r.get(f) or "" for f in fields) for r in rows)
    return TrainingRows(tuple(int(r["id"]) for r in rows), texts, labels, fields, task or "single")
