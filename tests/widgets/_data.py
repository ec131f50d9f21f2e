"""Fill test projects with datasets quickly (raw SQL through the project's writer)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

from engine.store import Project, insert_dataset

SPLITS = ("train", "dev", "test")


def single_row(i: int, labels: Sequence[str]) -> dict[str, Any]:
    """A deterministic single-text example number ``i``."""
    return {
        "ext_id": f"r{i}",
        "text": f"text {i:06d} about item {i % 7}",
        "label": labels[i % len(labels)],
        "split": SPLITS[i % len(SPLITS)],
    }


def pair_row(i: int, labels: Sequence[str]) -> dict[str, Any]:
    """A deterministic premise/hypothesis example number ``i``."""
    return {
        "ext_id": f"p{i}",
        "premise": f"premise {i:06d}\nsecond line",
        "hypothesis": f"hypothesis {i % 11}",
        "label": labels[i % len(labels)],
        "split": SPLITS[i % len(SPLITS)],
    }


def make_dataset(
    project: Project,
    n: int = 300,
    *,
    name: str = "data",
    task: str = "single",
    labels: Sequence[str] = ("negative", "positive"),
    row: Callable[[int, Sequence[str]], dict[str, Any]] | None = None,
) -> int:
    """Insert an original dataset of ``n`` examples and return its id.

    Parameters
    ----------
    project
        Where to write.
    n
        Number of examples (positions 0..n-1; example ``i`` is built by ``row(i, labels)``).
    name, task, labels
        The ``datasets`` row.
    row
        Builds one example's fields (``ext_id``, ``text``/``premise``/``hypothesis``,
        ``label``, ``split``; optional ``source``, ``method``, ``parent_id``,
        ``target_label``, ``meta``). Defaults to :func:`single_row` / :func:`pair_row`.
    """
    build = row or (pair_row if task == "pair" else single_row)

    def write(conn: sqlite3.Connection) -> int:
        dataset_id = insert_dataset(conn, name=name, kind="original", task=task, labels=list(labels))
        first = conn.execute("SELECT coalesce(max(id), 0) + 1 FROM examples").fetchone()[0]

        def examples():
            for i in range(n):
                r = build(i, labels)
                yield (
                    first + i,
                    dataset_id,
                    r.get("ext_id"),
                    r.get("text"),
                    r.get("premise"),
                    r.get("hypothesis"),
                    r["label"],
                    r.get("split"),
                    r.get("source", "original"),
                    r.get("method"),
                    r.get("parent_id"),
                    r.get("target_label"),
                    "2024-01-01T00:00:00+00:00",
                    r.get("meta"),
                )

        conn.executemany(
            "INSERT INTO examples (id, dataset_id, ext_id, text, premise, hypothesis, label, split, "
            "source, method, parent_id, target_label, created_at, meta) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            examples(),
        )
        conn.executemany(
            "INSERT INTO dataset_members (dataset_id, position, example_id) VALUES (?, ?, ?)",
            ((dataset_id, i, first + i) for i in range(n)),
        )
        conn.execute("UPDATE datasets SET row_count = ? WHERE id = ?", (n, dataset_id))
        return dataset_id

    return project.writer.run(write)
