"""Small stored states for tests that need rows the LLM steps would make (no LLM involved)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from engine.io import ImportOptions, import_file
from engine.store import DatasetInfo, ExampleQuery, Project

NOW = "2026-01-01T00:00:00"


def seed_review_state(project: Project, tmp_path: Path) -> tuple[DatasetInfo, int, int]:
    """A dataset 'existing' (2 reviews) whose first example has one triple and one accepted candidate.

    Returns
    -------
    tuple
        ``(dataset, example_id, candidate_id)``.
    """
    small = tmp_path / "small.csv"
    small.write_text("text,label\nThe film was great.,pos\nThe film was awful.,neg\n", encoding="utf-8")
    ds = import_file(project, small, options=ImportOptions(name="existing")).dataset
    example = int(project.example_ids(ExampleQuery(ds.id))[0])

    def add(conn: sqlite3.Connection) -> int:
        run = conn.execute("INSERT INTO runs (kind, dataset_id, started_at, status) VALUES ('generate', ?, ?, 'done')",
                           (ds.id, NOW)).lastrowid
        conn.execute("INSERT INTO triples (run_id, example_id, field, sentence_index, ord, subject, predicate, "
                     "object, created_at) VALUES (?, ?, 'text', 0, 0, 'the film', 'was', 'great', ?)",
                     (run, example, NOW))
        return int(conn.execute("INSERT INTO candidates (run_id, example_id, method, target_label, text, status, "
                                "created_at) VALUES (?, ?, 'coba', 'neg', 'The film was dreadful.', 'accepted', ?)",
                                (run, example, NOW)).lastrowid)

    return ds, example, project.writer.run(add)
