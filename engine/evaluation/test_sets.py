"""Datasets (or one split of them) marked as test sets, each with a role, stored in the project."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.evaluation.errors import BadTestSetError
from engine.store.project import ExampleQuery
from engine.store.schema import now

if TYPE_CHECKING:
    from engine.store import Project

__all__ = ["ROLES", "TestSet", "mark_test_set", "parse_test_set", "test_rows", "test_sets", "unmark_test_set"]

#: What a test set measures: the training distribution, counterfactual (label-flipping) edits,
#: or another distribution.
ROLES = ("in-domain", "counterfactual", "out-of-domain")


@dataclass(frozen=True)
class TestSet:
    """A dataset (all rows, or one split) evaluated as a test set.

    Attributes
    ----------
    name
        Shown in tables (default ``dataset`` or ``dataset:split``).
    dataset_id
        The dataset version.
    split
        The split, ``""`` for every row.
    role
        One of :data:`ROLES`.
    """

    __test__ = False  # not a pytest class

    name: str
    dataset_id: int
    split: str
    role: str

    def key(self, project: Project) -> str:
        """Identity of the rows tested (dataset id, its creation time and size, the split)."""
        d = project.dataset(self.dataset_id)
        raw = json.dumps([d.id, d.created_at, d.row_count, self.split])
        return hashlib.sha256(raw.encode()).hexdigest()[:16]


def _check_role(role: str) -> str:
    if role not in ROLES:
        raise BadTestSetError(f"Unknown test role {role!r}.", f"Use one of: {', '.join(ROLES)}.")
    return role


def parse_test_set(text: str) -> tuple[str, str, str | None]:
    """``DATASET[:SPLIT][=ROLE]`` -> (dataset, split or ``""``, role or ``None``).

    Examples
    --------
    >>> parse_test_set("cad-dev:dev=counterfactual")
    ('cad-dev', 'dev', 'counterfactual')
    >>> parse_test_set("contrast")
    ('contrast', '', None)
    """
    spec, _, role = text.partition("=")
    dataset, _, split = spec.rpartition(":") if ":" in spec else (spec, "", "")
    if not dataset.strip():
        raise BadTestSetError(f"Test set {text!r} names no dataset.", "Write DATASET[:SPLIT][=ROLE].")
    return dataset.strip(), split.strip(), (_check_role(role.strip()) if role else None)


def mark_test_set(project: Project, dataset: int | str, split: str = "", role: str = "in-domain",
                  name: str | None = None) -> TestSet:
    """Mark a dataset (or one split) as a test set with ``role``; marking it again updates the role.

    Raises
    ------
    BadTestSetError
        For an unknown role or a split without rows.
    engine.errors.DatasetNotFoundError
        For an unknown dataset.
    """
    _check_role(role)
    d = project.dataset(dataset)
    if split and not len(project.example_ids(ExampleQuery(d.id, splits=(split,)))):
        found = ", ".join(str(s) for s in project.split_counts(d.id)) or "none"
        raise BadTestSetError(f"Dataset {d.name!r} has no rows in split {split!r}.", f"Splits there: {found}.")
    name = name or (f"{d.name}:{split}" if split else d.name)

    def write(conn: sqlite3.Connection) -> None:
        conn.execute(
            "INSERT INTO test_sets (name, dataset_id, split, role, created_at) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (dataset_id, split) DO UPDATE SET role = excluded.role, name = excluded.name",
            (name, d.id, split, role, now()),
        )

    try:
        project.writer.run(write)
    except sqlite3.IntegrityError as exc:
        raise BadTestSetError(f"A test set called {name!r} already exists.", "Give this one another name.") from exc
    return TestSet(name, d.id, split, role)


def unmark_test_set(project: Project, name: str) -> None:
    """Remove the test-set mark ``name`` (its stored results stay)."""
    project.writer.run(lambda conn: conn.execute("DELETE FROM test_sets WHERE name = ?", (name,)))


def test_sets(project: Project) -> list[TestSet]:
    """Every marked test set, in marking order."""
    return [TestSet(r["name"], r["dataset_id"], r["split"], r["role"])
            for r in project.db.query("SELECT * FROM test_sets ORDER BY id")]


def test_rows(project: Project, test: TestSet) -> list[dict]:
    """The example rows of a test set, in dataset order."""
    query = ExampleQuery(test.dataset_id, splits=(test.split,) if test.split else None)
    return project.examples(project.example_ids(query).tolist())


test_rows.__test__ = False  # type: ignore[attr-defined]
test_sets.__test__ = False  # type: ignore[attr-defined]
