"""A review decision and a triple edit made in the window while a 200k-row import streams as a job
are stored at once, between the import's slices (not after it); the import still completes.

The time each write takes is printed, not asserted (it is typically under 50 ms; a loaded CI
machine can stretch it): the assertion is that each write is stored while the import is still
streaming, and takes far less than the import, i.e. it did not wait behind it."""

from __future__ import annotations

import time

from app.jobs import JobStatus
from app.main_window import MainWindow
from app.settings import Settings
from engine.counterbias.review import load_candidate
from engine.counterbias.triple_store import load_triple_records
from engine.io import ImportOptions
from engine.io.mapping import ColumnMapping
from engine.io.readers import ReadOptions
from tests.seeding import seed_review_state
from widgets.import_wizard import ImportRequest

def _big_csv(path, rows: int):
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write("text,label\n")
        for i in range(rows):
            f.write(f"review {i} of a film that was {'good' if i % 2 else 'bad'},{'pos' if i % 2 else 'neg'}\n")
    return path


def _streaming(project) -> bool:
    return bool(project.db.execute(
        "SELECT COUNT(*) FROM imports i JOIN dataset_members m ON m.dataset_id = i.dataset_id "
        "AND m.position >= i.first_position").fetchone()[0])


def test_review_decision_and_triple_edit_do_not_wait_behind_an_import(qtbot, tmp_path):
    window = MainWindow(Settings())
    qtbot.addWidget(window)
    window.resize(1400, 900)
    window.show()
    project = window.session.new_project(tmp_path / "p.cbproj")
    dataset, example, candidate = seed_review_state(project, tmp_path)
    window.session.refresh_datasets(select=dataset.id)
    window.show_review_tab()
    window.examples.table.selectRow(0)
    assert window.session.example_id == example
    review = window.review
    review.regenerate_on_edit = False  # measure the write itself, not a generation job
    # warm up (spaCy's sentence splitter loads on first use)
    review.save_triples("text", 0, [["warm", "up", "call"]])
    assert review.apply_decision(candidate, "rejected")

    big = _big_csv(tmp_path / "big.csv", 200_000)
    request = ImportRequest(big, ColumnMapping(text="text", label="label"), ReadOptions(),
                            ImportOptions(name="big"))
    job = window.projects.run_import(request)
    qtbot.waitUntil(lambda: _streaming(project), timeout=60_000)

    decision_s, triple_s = [], []
    for k in range(6):
        status = ("accepted", "rejected")[k % 2]
        started = time.perf_counter()
        assert review.apply_decision(candidate, status)
        decision_s.append(time.perf_counter() - started)
        assert load_candidate(project, candidate)["status"] == status

        started = time.perf_counter()
        review.save_triples("text", 0, [[f"subject {k}", "was", "edited"]])
        triple_s.append(time.perf_counter() - started)
        assert [r.triple.subject for r in load_triple_records(project, example)] == [f"subject {k}"]
        qtbot.wait(30)  # the event loop runs: progress of the import job is delivered
    assert job.status is JobStatus.RUNNING and _streaming(project), "measured while the import streamed"

    import_started = time.perf_counter()
    assert window.jobs.wait_for_done(180_000)
    rest_of_import = time.perf_counter() - import_started
    assert job.status is JobStatus.DONE
    big_ds = project.dataset("big")
    assert big_ds.row_count == 200_000 and project.label_counts(big_ds.id) == {"neg": 100_000, "pos": 100_000}
    assert window.session.dataset.id == big_ds.id  # the imported dataset is shown
    assert review.undo_stack.count() == 0  # a new dataset: the review's undo history is cleared
    slowest = max(decision_s + triple_s)
    timings = (f"slowest GUI write {slowest * 1000:.1f} ms: decisions {[round(s * 1000, 1) for s in decision_s]}, "
               f"triples {[round(s * 1000, 1) for s in triple_s]}; the rest of the import took {rest_of_import:.1f} s")
    print(timings)
    assert slowest < 0.5, timings  # a write that waited behind the import would take seconds
    window.close()
