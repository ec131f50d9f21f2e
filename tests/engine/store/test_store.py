"""The project store: migrations, WAL, the single writer, dataset versions."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from engine import errors
from engine.io import import_file
from engine.store import SCHEMA_VERSION, ExampleQuery, Project
from engine.store import schema


def test_new_project_is_wal_and_migrated(tmp_path):
    path = tmp_path / "p.cbproj"
    with Project.create(path) as project:
        assert project.schema_version == SCHEMA_VERSION
        assert project.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert {"datasets", "examples", "dataset_members", "runs", "models", "attributions", "triples",
                "candidates", "decisions", "llm_cache"} <= set(project.db.table_names())
    with pytest.raises(errors.ProjectError):
        Project.create(path)


def test_pending_migration_runs_on_open(tmp_path, monkeypatch):
    path = tmp_path / "p.cbproj"
    Project.create(path).close()
    monkeypatch.setattr(schema, "MIGRATIONS", [*schema.MIGRATIONS, "CREATE TABLE extra (x INTEGER);"])
    monkeypatch.setattr(schema, "SCHEMA_VERSION", len(schema.MIGRATIONS))
    with Project.open(path) as project:
        assert project.schema_version == SCHEMA_VERSION + 1
        assert "extra" in project.db.table_names()


def test_newer_schema_is_refused(tmp_path):
    path = tmp_path / "p.cbproj"
    Project.create(path).close()
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO schema_version VALUES (999, 'future')")
    conn.commit()
    conn.close()
    with pytest.raises(errors.SchemaTooNewError):
        Project.open(path)


def test_not_a_project(tmp_path):
    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    with pytest.raises(errors.NotAProjectError):
        Project.open(other)
    junk = tmp_path / "junk.cbproj"
    junk.write_bytes(b"not sqlite at all" * 100)
    with pytest.raises(errors.NotAProjectError):
        Project.open(junk)
    with pytest.raises(errors.ProjectNotFoundError):
        Project.open(tmp_path / "missing.cbproj")


def test_reads_are_readonly(project):
    with pytest.raises(sqlite3.OperationalError):
        project.db.execute("INSERT INTO meta VALUES ('x', 'y')")


def test_writer_serialises_threads_and_rolls_back(project):
    def add(conn, key):
        conn.execute("INSERT INTO meta VALUES (?, 'v')", (key,))

    threads = [threading.Thread(target=project.writer.run, args=(add, f"k{i}")) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert project.db.execute("SELECT COUNT(*) FROM meta WHERE key LIKE 'k%'").fetchone()[0] == 20

    def fail(conn):
        conn.execute("INSERT INTO meta VALUES ('partial', 'v')")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        project.writer.run(fail)
    assert project.db.execute("SELECT COUNT(*) FROM meta WHERE key = 'partial'").fetchone()[0] == 0


def test_derived_version_shares_examples(project, tmp_path):
    src = tmp_path / "d.csv"
    src.write_text("text,label\n" + "".join(f"t{i},{'ab'[i % 2]}\n" for i in range(10)))
    ds = import_file(project, src).dataset
    ids = project.example_ids(ExampleQuery(ds.id, labels=("a",)))
    assert len(ids) == 5
    sub = project.add_derived_dataset("only a", kind="filtered", parent_id=ds.id, example_ids=ids,
                                      params={"why": "test"})
    assert sub.row_count == 5 and sub.parent_id == ds.id and sub.params == {"why": "test"}
    assert project.label_counts(sub.id) == {"a": 5}
    assert project.counts()["examples"] == 10
    with pytest.raises(errors.ProjectError):
        project.delete_dataset(ds.id)
    project.delete_dataset(sub.id)
    project.delete_dataset(ds.id)
    assert project.counts()["examples"] == 0


def test_example_query_search_and_sort(project, tmp_path):
    src = tmp_path / "d.csv"
    src.write_text("text,label\nzeta 100%,b\nalpha_1,a\nmiddle,b\n")
    ds = import_file(project, src).dataset
    by_text = project.examples(project.example_ids(ExampleQuery(ds.id, order_by="text")))
    assert [e["text"] for e in by_text] == ["alpha_1", "middle", "zeta 100%"]
    hits = project.example_ids(ExampleQuery(ds.id, search="100%"))
    assert [e["text"] for e in project.examples(hits)] == ["zeta 100%"]
    assert len(project.example_ids(ExampleQuery(ds.id, search="A_"))) == 1  # literal underscore, any case
    desc = project.example_ids(ExampleQuery(ds.id, order_by="position", descending=True))
    assert [e["text"] for e in project.examples(desc)][0] == "middle"


def test_delete_dataset_with_results_attached(project, tmp_path):
    """Attributions, votes, triples and candidates on a dataset do not block deleting it."""
    src = tmp_path / "d.csv"
    src.write_text("text,label\n" + "".join(f"t{i},{'ab'[i % 2]}\n" for i in range(4)))
    ds = import_file(project, src).dataset
    ex = int(project.example_ids(ExampleQuery(ds.id))[0])
    now = "2026-01-01T00:00:00"

    def add_results(conn):
        run = conn.execute("INSERT INTO runs (kind, dataset_id, started_at) VALUES ('train', ?, ?)", (ds.id, now)).lastrowid
        model = conn.execute("INSERT INTO models (run_id, name, backbone, created_at) VALUES (?, 'm', 'b', ?)", (run, now)).lastrowid
        conn.execute("INSERT INTO attributions (model_id, method, settings_key, example_id, words, scores, created_at) "
                     "VALUES (?, 'ig', 'k', ?, '[]', '[]', ?)", (model, ex, now))
        vs = conn.execute("INSERT INTO vote_sets (vote_key, dataset_id, run_id, created_at) VALUES ('v', ?, ?, ?)",
                          (ds.id, run, now)).lastrowid
        conn.execute("INSERT INTO word_votes (vote_set_id, example_id, principal, spurious, votes, member_words, created_at) "
                     "VALUES (?, ?, '[]', '[]', '{}', '{}', ?)", (vs, ex, now))
        conn.execute("INSERT INTO triples (run_id, example_id, field, sentence_index, ord, subject, predicate, object, created_at) "
                     "VALUES (?, ?, 'text', 0, 0, 's', 'p', 'o', ?)", (run, ex, now))
        cand = conn.execute("INSERT INTO candidates (run_id, example_id, method, target_label, text, created_at) "
                            "VALUES (?, ?, 'coba', 'b', 'x', ?)", (run, ex, now)).lastrowid
        conn.execute("INSERT INTO decisions (candidate_id, decision, decided_at) VALUES (?, 'accept', ?)", (cand, now))

    project.writer.run(add_results)
    project.delete_dataset(ds.id)
    counts = project.counts()
    assert counts["examples"] == counts["attributions"] == counts["triples"] == counts["candidates"] == 0
    assert counts["models"] == 1 and counts["runs"] >= 1  # provenance stays
    assert project.db.execute("SELECT COUNT(*) FROM word_votes").fetchone()[0] == 0
