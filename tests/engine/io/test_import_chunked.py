"""A streamed import commits in short slices: GUI-thread writes never wait behind it, and it
stays all or nothing (failure, cancel, a killed process, appends included). Real SQLite files."""

from __future__ import annotations

import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from engine import errors
from engine.counterbias.review import load_candidate, set_decision
from engine.io import ImportOptions, import_file
from engine.progress import CancelToken
from engine.store import ExampleQuery, Project
from engine.counterbias.triple_store import load_triple_records, replace_triples
from tests.seeding import NOW, seed_review_state

REPO = Path(__file__).resolve().parents[3]


def _snapshot(project: Project) -> str:
    """A digest of every row of every table: equal digests mean an unchanged project."""
    h = hashlib.sha256()
    for table in sorted(project.db.table_names()):
        for row in project.db.execute(f"SELECT * FROM [{table}] ORDER BY 1"):
            h.update(repr(row).encode())
    return h.hexdigest()


def _big_csv(path: Path, rows: int, *, bad_last: bool = False) -> Path:
    """``rows`` short reviews, two labels; with ``bad_last`` the last row has no label."""
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write("text,label\n")
        for i in range(rows - 1):
            f.write(f"review number {i} of a film that was {'good' if i % 2 else 'bad'},{'pos' if i % 2 else 'neg'}\n")
        f.write(f"the last review {rows},{'' if bad_last else 'pos'}\n")
    return path


@pytest.fixture
def seeded(project: Project, tmp_path: Path) -> Project:
    """A project with a small dataset 'existing', one candidate and one triple on its first example."""
    seed_review_state(project, tmp_path)
    return project


def _ids(project: Project) -> tuple[int, int, int]:
    ds = project.dataset("existing")
    example = int(project.example_ids(ExampleQuery(ds.id))[0])
    candidate = project.db.execute("SELECT id FROM candidates").fetchone()[0]
    return ds.id, example, candidate


def _streaming(project: Project) -> bool:
    """Whether an import is under way and has committed rows already."""
    return bool(project.db.execute(
        "SELECT COUNT(*) FROM imports i JOIN dataset_members m ON m.dataset_id = i.dataset_id "
        "AND m.position >= i.first_position").fetchone()[0])


def test_gui_writes_return_within_50ms_while_200k_rows_stream(seeded, tmp_path):
    _, example, candidate = _ids(seeded)
    # Warm up both paths (spaCy's sentence splitter loads on first use).
    set_decision(seeded, candidate, "rejected")
    replace_triples(seeded, example, "text", 0, [("warm", "up", "call")])
    big = _big_csv(tmp_path / "big.csv", 200_000)
    outcome: list = []

    def run_import() -> None:
        try:
            outcome.append(import_file(seeded, big, options=ImportOptions(name="big")))
        except BaseException as exc:  # reported below
            outcome.append(exc)

    worker = threading.Thread(target=run_import)
    worker.start()
    deadline = time.monotonic() + 60
    while not _streaming(seeded):
        assert worker.is_alive() and time.monotonic() < deadline, outcome
        time.sleep(0.005)
    assert "big" not in [d.name for d in seeded.datasets()], "a dataset being imported is not listed"

    decision_s, triple_s = [], []
    for k in range(8):
        status = ("accepted", "rejected")[k % 2]
        started = time.perf_counter()
        set_decision(seeded, candidate, status)
        decision_s.append(time.perf_counter() - started)
        assert load_candidate(seeded, candidate)["status"] == status

        started = time.perf_counter()
        replace_triples(seeded, example, "text", 0, [(f"subject {k}", "was", "edited")])
        triple_s.append(time.perf_counter() - started)
        assert [r.triple.subject for r in load_triple_records(seeded, example)] == [f"subject {k}"]
        time.sleep(0.03)
    assert worker.is_alive() and _streaming(seeded), "the writes were measured while the import streamed"

    worker.join(120)
    assert not worker.is_alive()
    result = outcome[0]
    assert not isinstance(result, BaseException), result
    assert result.rows == 200_000 and result.dataset.row_count == 200_000
    assert len(seeded.example_ids(ExampleQuery(result.dataset.id))) == 200_000
    assert seeded.label_counts(result.dataset.id) == {"neg": 100_000, "pos": 100_000}
    assert seeded.db.execute("SELECT COUNT(*) FROM imports").fetchone()[0] == 0
    decisions = seeded.db.execute("SELECT COUNT(*) FROM decisions WHERE candidate_id = ?", [candidate]).fetchone()[0]
    assert decisions == 1 + 8
    slowest = max(decision_s + triple_s)
    assert slowest < 0.050, (
        f"slowest GUI write {slowest * 1000:.1f} ms; decisions {[round(s * 1000, 1) for s in decision_s]} ms, "
        f"triple edits {[round(s * 1000, 1) for s in triple_s]} ms")


class _Watch:
    """Progress callback that checks, between batches, that nothing of the import is visible yet."""

    def __init__(self, project: Project, existing: int, cancel: CancelToken | None = None,
                 cancel_after: int = 0) -> None:
        self.project, self.existing, self.cancel, self.cancel_after = project, existing, cancel, cancel_after
        self.names = [d.name for d in project.datasets()]
        self.ids = project.example_ids(ExampleQuery(existing)).tolist()
        self.labels = project.label_counts(existing)
        self.most_committed = 0

    def __call__(self, fraction: float, message: str = "") -> None:
        p = self.project
        committed = p.db.execute("SELECT COUNT(*) FROM examples").fetchone()[0] - len(self.ids)
        self.most_committed = max(self.most_committed, committed)
        assert [d.name for d in p.datasets()] == self.names
        assert p.example_ids(ExampleQuery(self.existing)).tolist() == self.ids
        assert p.label_counts(self.existing) == self.labels
        assert p.dataset(self.existing).row_count == len(self.ids)
        if self.cancel is not None and committed >= self.cancel_after:
            self.cancel.cancel()


@pytest.mark.parametrize("append", [False, True], ids=["new", "append"])
def test_bad_row_at_the_end_of_a_large_file_leaves_the_project_unchanged(seeded, tmp_path, append):
    existing, _, _ = _ids(seeded)
    before = _snapshot(seeded)
    bad = _big_csv(tmp_path / "bad_end.csv", 60_000, bad_last=True)
    watch = _Watch(seeded, existing)
    options = ImportOptions(append_to=existing) if append else ImportOptions(name="bad")
    with pytest.raises(errors.MissingLabelError) as info:
        import_file(seeded, bad, options=options, progress=watch)
    assert info.value.location.row == 60_000 and "bad_end.csv" in str(info.value)
    assert watch.most_committed >= 20_000, "rows were committed in slices before the bad row was read"
    assert _snapshot(seeded) == before
    # The project still takes writes and imports.
    good = _big_csv(tmp_path / "good.csv", 1_000)
    result = import_file(seeded, good, options=options)
    assert result.dataset.row_count == (1_002 if append else 1_000)


@pytest.mark.parametrize("append", [False, True], ids=["new", "append"])
def test_cancel_mid_import_leaves_the_project_unchanged(seeded, tmp_path, append):
    existing, _, _ = _ids(seeded)
    before = _snapshot(seeded)
    big = _big_csv(tmp_path / "big.csv", 100_000)
    token = CancelToken()
    watch = _Watch(seeded, existing, cancel=token, cancel_after=20_000)
    options = ImportOptions(append_to=existing) if append else ImportOptions(name="big")
    with pytest.raises(errors.Cancelled):
        import_file(seeded, big, options=options, progress=watch, cancel=token)
    assert watch.most_committed >= 20_000
    assert _snapshot(seeded) == before


def test_single_class_found_at_the_end_removes_the_committed_rows(seeded, tmp_path):
    before = _snapshot(seeded)
    one = tmp_path / "one.csv"
    one.write_text("text,label\n" + "".join(f"row {i},pos\n" for i in range(30_000)), encoding="utf-8")
    with pytest.raises(errors.SingleClassError):
        import_file(seeded, one)
    assert _snapshot(seeded) == before


_KILLED_IMPORT = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[1])
    from engine.io import ImportOptions, import_file
    from engine.store import Project
    project = Project.open(sys.argv[2])
    append = sys.argv[4] == "append"
    options = ImportOptions(append_to=project.dataset("existing").id) if append else ImportOptions(name="big")
    import_file(project, sys.argv[3], options=options)
    print("finished")
""")


@pytest.mark.parametrize("append", [False, True], ids=["new", "append"])
def test_import_killed_mid_way_is_swept_on_the_next_open(seeded, tmp_path, append):
    path = seeded.path
    before = _snapshot(seeded)
    seeded.close()
    big = _big_csv(tmp_path / "big.csv", 400_000)
    child = subprocess.Popen([sys.executable, "-c", _KILLED_IMPORT, str(REPO), str(path), str(big),
                              "append" if append else "new"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    watcher = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline
            try:
                staged = watcher.execute(
                    "SELECT COUNT(*) FROM imports i JOIN dataset_members m ON m.dataset_id = i.dataset_id "
                    "AND m.position >= i.first_position").fetchone()[0]
            except sqlite3.OperationalError:  # the child is still migrating the file
                staged = 0
            if staged >= 30_000:
                break
            time.sleep(0.01)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        # The crash left a partial import in the file...
        assert watcher.execute("SELECT COUNT(*) FROM imports").fetchone()[0] == 1
        if not append:
            assert watcher.execute("SELECT state FROM datasets WHERE name = 'big'").fetchone() == ("importing",)
    finally:
        watcher.close()
    # ... which a reader never sees, and the next open removes.
    with Project.open(path) as reopened:
        assert [d.name for d in reopened.datasets()] == ["existing"]
        assert _snapshot(reopened) == before


def test_open_leaves_a_running_import_alone(seeded, tmp_path):
    big = _big_csv(tmp_path / "big.csv", 100_000)
    outcome: list = []
    worker = threading.Thread(target=lambda: outcome.append(import_file(seeded, big, options=ImportOptions(name="big"))))
    worker.start()
    deadline = time.monotonic() + 60
    while not _streaming(seeded):
        assert worker.is_alive() and time.monotonic() < deadline
        time.sleep(0.005)
    with Project.open(seeded.path) as other:  # a second open of the same file, as another window would
        assert "big" not in [d.name for d in other.datasets()]
        assert other.db.execute("SELECT COUNT(*) FROM imports").fetchone()[0] == 1
    worker.join(120)
    assert outcome and outcome[0].rows == 100_000
    assert seeded.dataset("big").row_count == 100_000


def test_an_import_into_a_dataset_is_exclusive(seeded, tmp_path):
    existing, _, _ = _ids(seeded)
    big = _big_csv(tmp_path / "big.csv", 100_000)
    small = _big_csv(tmp_path / "small2.csv", 10)
    errors_seen: list[BaseException] = []

    def during(fraction: float, message: str = "") -> None:
        if errors_seen or not _streaming(seeded):
            return
        for attempt in (lambda: import_file(seeded, small, options=ImportOptions(append_to=existing)),
                        lambda: seeded.delete_dataset(existing)):
            try:
                attempt()
            except errors.ProjectError as exc:
                errors_seen.append(exc)

    result = import_file(seeded, big, options=ImportOptions(append_to=existing), progress=during)
    assert len(errors_seen) == 2 and all("being imported" in str(e) for e in errors_seen)
    assert result.dataset.row_count == 100_002
    positions = [r[0] for r in seeded.db.execute(
        "SELECT position FROM dataset_members WHERE dataset_id = ? ORDER BY position", [existing])]
    assert positions == list(range(100_002))


def test_ordinary_writes_jump_ahead_of_queued_bulk_slices(project):
    finished: list[str] = []
    gate = threading.Event()

    def bulk(conn: sqlite3.Connection, k: int) -> None:
        gate.wait(5)
        time.sleep(0.02)
        finished.append(f"bulk {k}")

    def ordinary(conn: sqlite3.Connection, k: int) -> None:
        conn.execute("INSERT INTO meta VALUES (?, 'v')", (f"ordinary {k}",))
        finished.append(f"ordinary {k}")

    slices = [project.writer.submit_bulk(bulk, k) for k in range(4)]
    time.sleep(0.05)  # bulk 0 is running, held at the gate
    first, second = project.writer.submit(ordinary, 0), project.writer.submit(ordinary, 1)
    gate.set()
    for future in [*slices, first, second]:
        future.result(5)
    # The running slice finishes; then the ordinary writes, in their order; then the other slices.
    assert finished == ["bulk 0", "ordinary 0", "ordinary 1", "bulk 1", "bulk 2", "bulk 3"]


def test_a_project_from_schema_2_opens_with_its_datasets_ready(tmp_path, monkeypatch):
    from engine.store import schema
    from engine.store.project import APP_ID

    path = tmp_path / "old.cbproj"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(f"PRAGMA application_id = {APP_ID}")
    with monkeypatch.context() as old:  # the file as the build before schema 3 left it
        old.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:2])
        old.setattr(schema, "SCHEMA_VERSION", 2)
        schema.migrate(conn)
    conn.isolation_level = ""
    conn.execute("INSERT INTO datasets (name, kind, task, labels, row_count, created_at) "
                 "VALUES ('old', 'original', 'single', '[\"a\", \"b\"]', 1, ?)", (NOW,))
    conn.execute("INSERT INTO examples (id, dataset_id, text, label, created_at) VALUES (1, 1, 'x', 'a', ?)", (NOW,))
    conn.execute("INSERT INTO dataset_members VALUES (1, 0, 1)")
    conn.commit()
    conn.close()
    with Project.open(path) as project:
        assert project.schema_version == schema.SCHEMA_VERSION
        assert [d.name for d in project.datasets()] == ["old"]
        assert project.example_ids(ExampleQuery(1)).tolist() == [1]
