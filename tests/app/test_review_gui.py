"""The Counterbias tab in the real window: LLM settings and test, generate, review by keyboard, undo,
edit triples, build the augmented dataset. The LLM is a real loopback HTTP server with scripted answers."""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest

pytest.importorskip("torch")

from PySide6.QtCore import QItemSelection, QItemSelectionModel, Qt  # noqa: E402

from app.main_window import MainWindow  # noqa: E402
from app.settings import Settings  # noqa: E402
from engine.counterbias import candidate_rows, load_candidate  # noqa: E402
from engine.errors import CounterbiasError  # noqa: E402
from engine.counterbias.triple_store import TripleEditError, load_triple_records, replace_triples  # noqa: E402
from tests.engine.counterbias.conftest import voted_project_template  # noqa: E402, F401
from tests.engine.counterbias.scripted_llm import scripted_reply  # noqa: E402
from tests.engine.llm.stub_server import StubServer  # noqa: E402


@pytest.fixture
def server():
    s = StubServer(reply=scripted_reply).start()
    yield s
    s.close()


@pytest.fixture
def window(qtbot, tmp_path, voted_project_template):  # noqa: F811
    src = voted_project_template
    dst = tmp_path / src.name
    shutil.copy(src, dst)
    files = src.parent / f"{src.stem}_files"
    if files.exists():
        shutil.copytree(files, tmp_path / f"{src.stem}_files")
    win = MainWindow(Settings())
    qtbot.addWidget(win)
    win.resize(1500, 950)
    win.show()
    assert win.open_project(dst)
    yield win
    win.jobs.wait_for_done(30_000)
    win.close()


def _select_rows(win, rows):
    table = win.examples.table
    model = table.model()
    selection = QItemSelection()
    for r in rows:
        selection.select(model.index(r, 0), model.index(r, model.columnCount() - 1))
    table.selectionModel().select(selection, QItemSelectionModel.SelectionFlag.ClearAndSelect
                                  | QItemSelectionModel.SelectionFlag.Rows)


def _sha1(text):
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def _configure_llm(win, qtbot, server):
    dialog = win.review.open_llm_dialog()
    dialog.backend.setCurrentIndex(dialog.backend.findData("openai"))
    dialog.model.setCurrentText("stub")
    dialog.base_url.setText(server.base_url)
    dialog.api_key_env.setText("")
    dialog.samples.setValue(1)
    # generation options: seeded, no dropping, no shuffling, gender swap off
    dialog.seed.setValue(7)
    dialog.drop_prob.setValue(0.0)
    dialog.shuffle.setChecked(False)
    dialog.swap_gender.setChecked(False)
    dialog.targets.setCurrentText("other")
    with qtbot.waitSignal(win.jobs.done, timeout=30_000):
        dialog.test_button.click()
    assert dialog.result.text().startswith("Connected"), dialog.result.text()
    # a bad address is a named error shown in the dialog
    dialog.base_url.setText("ftp://nowhere")
    dialog.test_button.click()
    assert "[CB7" in dialog.result.text() and "What to do" in dialog.result.text()
    dialog.base_url.setText(server.base_url)
    dialog.accept()
    assert win.settings.get("llm_backend") == "openai"
    assert win.settings.get("llm_base_url") == server.base_url
    assert "stub" in win.review_panel.llm_label.text()
    assert win.settings.get("llm_seed") == 7 and win.settings.get("llm_shuffle") is False
    assert win.settings.get("llm_drop_prob") == 0.0 and win.settings.get("llm_swap_gender") is False


def test_generate_review_undo_and_augment(window, qtbot, server):
    win, panel, ctl = window, window.review_panel, window.review
    project = win.session.project
    dataset = win.current_dataset
    _configure_llm(win, qtbot, server)

    _select_rows(win, [0, 1, 2])
    win.show_review_tab()
    ids = win.session.selected_or_current()
    assert len(ids) == 3
    with qtbot.waitSignal(win.jobs.done, timeout=120_000):
        panel.generate_selection.click()
    rows = candidate_rows(project, dataset_id=dataset.id)
    assert {r["example_id"] for r in rows} == set(ids)
    proposed = [r for r in rows if r["status"] == "proposed"]
    assert proposed, [r["meta"].get("error") for r in rows]
    assert "candidate(s) made" in panel.message.text()
    run = project.db.execute("SELECT params FROM runs WHERE kind = 'generate' ORDER BY id DESC").fetchone()
    used = json.loads(run[0])["settings"]
    assert (used["seed"], used["swap_gender"]) == (7, False)
    # shuffle and drop apply to the reconstruct mode only: greyed out in the edit mode, they are not applied
    assert (used["drop_prob"], used["shuffle"]) == (0.1, True)
    assert used["mode"] == "edit"  # the default: edited sentences, the rest of the text kept
    assert ctl.last_usage is not None and ctl.last_usage.total_tokens > 0
    assert "project total" in panel.tokens_label.text()

    # the edit mode extracts no triples, and the triples view says why
    assert not panel.triples.sentences() and "by their principal words" in panel.triples.message.text()

    # whole-dataset scope lists every candidate; diff and scores in the detail
    panel.scope.setCurrentIndex(panel.scope.findData("dataset"))
    assert panel.proxy.rowCount() == len(rows)
    table = panel.table
    table.setFocus()
    panel.select_candidate(proposed[0]["id"])
    html = panel.detail.html_source
    assert "Ensemble judge" in html and "P(target)" in html
    # the edit distance to the original, in the detail and in its own column
    assert "Edit distance" in html
    cell = panel.model.index(panel.model.row_of(proposed[0]["id"]), panel.model.EDIT).data()
    assert cell != "—" and 0.0 < float(cell) <= 1.0
    assert "line-through" in html or "#dcf5dc" in html  # the word diff
    # in that scope, a candidate of another example brings its example (triples left, original in the dock)
    other = next(r for r in rows if r["example_id"] != proposed[0]["example_id"])
    panel.select_candidate(other["id"])
    assert panel.shown_example_id == other["example_id"] == int(win.session.example["id"])
    assert panel.proxy.rowCount() == len(rows) and panel.current_candidate_id() == other["id"]
    panel.select_candidate(proposed[0]["id"])
    assert panel.shown_example_id == proposed[0]["example_id"]

    # keyboard review: a, down, x, e
    first = panel.current_candidate_id()
    qtbot.keyClick(table, Qt.Key.Key_A)
    assert load_candidate(project, first)["status"] == "accepted"
    assert win.undo_action.isEnabled()
    panel.select_candidate(first)
    qtbot.keyClick(table, Qt.Key.Key_Down)
    second = panel.current_candidate_id()
    assert second != first
    qtbot.keyClick(table, Qt.Key.Key_X)
    assert load_candidate(project, second)["status"] == "rejected"

    # undo / redo through the Edit menu actions
    win.undo_action.trigger()
    assert load_candidate(project, second)["status"] == "proposed"
    win.redo_action.trigger()
    assert load_candidate(project, second)["status"] == "rejected"
    win.undo_action.trigger()

    # edit: the dialog's text is saved as accepted; undo puts the generated text back
    panel.select_candidate(second)
    before = load_candidate(project, second)
    qtbot.keyClick(table, Qt.Key.Key_E)
    dialog = panel.edit_dialog
    assert dialog is not None
    dialog.editor.setPlainText("An analyst's counterfactual sentence.")
    with qtbot.waitSignal(win.jobs.done, timeout=60_000):  # the edited text is judged again
        dialog.accept()
    edited = load_candidate(project, second)
    assert edited["status"] == "accepted" and edited["text"] == "An analyst's counterfactual sentence."
    assert edited["scores"]["judged_text_sha1"] == _sha1(edited["text"]) != before["scores"]["judged_text_sha1"]
    assert "Edited by you" in panel.detail.html_source
    win.undo_action.trigger()
    qtbot.waitUntil(lambda: not ctl._judging, timeout=60_000)
    restored = load_candidate(project, second)
    assert restored["status"] == before["status"] and restored["text"] == before["text"]
    assert restored["scores"]["judged_text_sha1"] == _sha1(before["text"])
    win.redo_action.trigger()
    qtbot.waitUntil(lambda: not ctl._judging, timeout=60_000)
    assert load_candidate(project, second)["status"] == "accepted"

    # failed candidates show their error (if the scripted LLM produced any)
    for r in rows:
        if r["status"] == "failed":
            panel.select_candidate(r["id"])
            assert "Failed at step" in panel.detail.html_source

    # status filter
    panel.status_filter.setCurrentIndex(panel.status_filter.findText("Accepted"))
    assert {c["status"] for c in panel.visible_candidates()} == {"accepted"}
    panel.status_filter.setCurrentIndex(0)

    # build the augmented dataset: a new 'augmented' version with the accepted candidates
    n_before = len(win.session.datasets)
    # the augment job's own end: the judging job of the redo above may still send its ``done`` after its result
    with qtbot.waitSignal(win.jobs.done, timeout=30_000, check_params_cb=lambda job: job.kind == "augment"):
        panel.augment_button.click()
    datasets = win.session.datasets
    assert len(datasets) == n_before + 1
    augmented = datasets[-1]
    assert augmented.kind == "augmented" and augmented.row_count == dataset.row_count + 2
    assert win.datasets_view.model.rowCount() == len(datasets)


def test_editing_triples_discards_undecided_candidates(window, qtbot, server):
    win, panel, ctl = window, window.review_panel, window.review
    project = win.session.project
    dataset = win.current_dataset
    ctl.set_llm_values({"backend": "openai", "model": "stub", "base_url": server.base_url, "samples": 1,
                        "edit_triples": True})
    win.examples.table.selectRow(3)
    win.show_review_tab()
    example_id = win.session.example_id
    with qtbot.waitSignal(win.jobs.done, timeout=120_000):
        panel.generate_selection.click()
    made = candidate_rows(project, example_ids=[example_id])
    assert made
    # the selected example's triples are shown, coloured by category
    shown = panel.triples.sentences()
    assert shown and any(s.triples for s in shown)
    assert {c for s in shown for c in s.categories} <= {"principal", "spurious", "normal"}

    # edit the subject of the first triple in the table: the stale candidates go, and the
    # rest of the pipeline (rewrite, reconstruction, judge) re-runs for this example at once
    view = panel.triples
    row = view.row_of(0, 0)
    assert row is not None
    with qtbot.waitSignal(win.jobs.done, timeout=120_000):
        view.table.item(row, view.SUBJECT).setText("The analyst")
        records = load_triple_records(project, example_id)
        first = [r for r in records if r.sentence_index == 0][0]
        assert first.triple.subject == "The analyst" and first.edited
        assert not candidate_rows(project, example_ids=[example_id])  # the stale ones are gone
    again = candidate_rows(project, example_ids=[example_id])
    assert len(again) == len(made) and {r["run_id"] for r in again}.isdisjoint({m["run_id"] for m in made})
    fields = again[0]["meta"]["fields"][0]
    assert fields["triples"][0][0] == "The analyst"
    # the edited triple stays marked (italic) and is categorised again by the new generation
    assert view.table.item(view.row_of(0, 0), view.SUBJECT).font().italic()
    assert panel.proxy.rowCount() == len(again)

    # an incomplete triple is not stored; a bad sentence index is a named error
    view.add_triple()
    assert "needs a subject" not in view.message.text()
    with pytest.raises(TripleEditError):
        replace_triples(project, example_id, "text", 99, [("a", "b", "c")])
    with pytest.raises(CounterbiasError):
        replace_triples(project, example_id, "text", 0, [("a", "", "c")])
    assert dataset.id == win.current_dataset.id


def test_candidates_are_listed_while_generation_runs(window, qtbot):
    """Each stored batch shows up in the candidates table before the job ends."""
    win, panel, ctl = window, window.review_panel, window.review
    slow = StubServer(reply=scripted_reply, latency=0.15).start()
    try:
        ctl.set_llm_values({"backend": "openai", "model": "stub", "base_url": slow.base_url, "samples": 1,
                            "concurrency": 1})
        ctl.chunk_size, ctl.live_interval_s = 1, 0.0
        listed: list[int] = []
        win.jobs.progressed.connect(lambda job, fraction, message: listed.append(panel.proxy.rowCount()))
        panel.scope.setCurrentIndex(panel.scope.findData("dataset"))
        _select_rows(win, [0, 1, 2, 3, 4])
        win.show_review_tab()
        with qtbot.waitSignal(win.jobs.done, timeout=120_000):
            panel.generate_selection.click()
        assert panel.proxy.rowCount() == 5
        assert any(0 < n < 5 for n in listed), listed  # batches were listed as they were stored
    finally:
        slow.close()


def test_candidates_made_while_a_judge_trains_say_so_and_verify_adds_it(window, qtbot, server, monkeypatch):
    """Highlights and candidates may come while the judge (trained last) still trains: the message names it, and
    once it is stored, Run checks again judges the candidates with it too."""
    from engine.models.config import default_ensemble
    from engine.store.runs import recorded_run

    win, panel, ctl = window, window.review_panel, window.review
    project = win.session.project
    dataset = win.current_dataset
    _configure_llm(win, qtbot, server)
    stored = ["r:tiny-distilbert", "r:tiny-roberta", "r:tiny-mpnet"]
    config = default_ensemble("r:", backbones=("tiny-distilbert", "tiny-roberta", "tiny-mpnet", "minilm-l6", "bert"))
    _select_rows(win, [0])
    win.show_review_tab()
    with recorded_run(project, "train", dataset.id, {"ensemble": config.to_dict()}):
        with qtbot.waitSignal(win.jobs.done, timeout=120_000):
            panel.generate_selection.click()
    text = panel.message.text()
    assert "candidate(s) made" in text and "r:minilm-l6, r:bert was still training" in text, text
    assert "Judged by " + ", ".join(stored) in text
    made = [r for r in candidate_rows(project, dataset_id=dataset.id) if r["status"] != "failed"]
    assert made and list(made[0]["scores"]["judge"]["members"]) == stored
    # the judge is stored now (here: the candidates' judges plus a member the default judges name)
    import engine.attribution.explainers as explainers

    monkeypatch.setattr(explainers, "default_judges", lambda project, dataset_id, voted=None: [*stored, "missing"])
    judges = ctl._judge_members()
    assert sorted(judges) == sorted(stored)  # no repeats, and a name that is not stored is left out


def test_verification_panel_shows_every_check_and_the_llm_judge(window, qtbot, server, tmp_path):
    """One panel per candidate: every check's verdict and reason; the LLM judge runs as a job and fills its row."""
    win, panel = window, window.review_panel
    project = win.session.project
    dataset = win.current_dataset
    _configure_llm(win, qtbot, server)
    _select_rows(win, [0, 1, 2])
    win.show_review_tab()
    with qtbot.waitSignal(win.jobs.done, timeout=120_000):
        panel.generate_selection.click()
    panel.scope.setCurrentIndex(panel.scope.findData("dataset"))
    cand = panel.current_candidate()
    assert cand is not None and cand["status"] != "failed"
    view = panel.verification
    shown = {name: (status, reason) for name, status, reason in view.rows()}
    from engine.verification.checks import CHECKS

    assert list(shown) == CHECKS.names()
    assert shown["refusal"][0] == "pass" and shown["llm-judge"][0] == "skip"
    assert shown["label-flip"][0] in ("pass", "fail") and "predicts" in shown["label-flip"][1]
    assert ("Passes the accept rule" in view.summary.text()) == bool(cand["scores"]["passes"])
    assert "label not judged" not in view.summary.text()          # the ensemble read its label

    # the LLM judge: the stub answers with the target label for every text (scripted_reply's fallback
    # would give triples, so a dedicated reply answers the judge prompt)
    targets = {r["text"]: r["target_label"] for r in candidate_rows(project, dataset_id=dataset.id)}

    def judge_reply(body):
        user = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
        if user.startswith("Task:") and "\nText: " in user:
            return targets.get(user.split("\nText: ", 1)[1], "Positive")
        return scripted_reply(body)

    server.reply = judge_reply
    with qtbot.waitSignal(win.jobs.done, timeout=60_000):
        view.llm_button.click()
    qtbot.waitUntil(lambda: "LLM judge:" in panel.message.text(), timeout=10_000)
    shown = {name: (status, reason) for name, status, reason in panel.verification.rows()}
    assert shown["llm-judge"][0] == "pass" and shown["llm-judge"][1].startswith("pass: reads as")
    stored = load_candidate(project, panel.current_candidate_id())["scores"]
    assert stored["llm_judge"]["label"] == stored["verdicts"]["llm-judge"]["reason"].split()[-1]
    import os

    shot = os.environ.get("SHOT_VERIFY")
    if shot:  # a screenshot for a person to look at (run under xvfb)
        panel.verification.table.resizeRowsToContents()
        qtbot.wait(200)
        win.grab().save(shot)


def _generated_for_three(win, qtbot, server):
    """The window after generating for its first three examples with the scripted LLM."""
    panel = win.review_panel
    _configure_llm(win, qtbot, server)
    _select_rows(win, [0, 1, 2])
    win.show_review_tab()
    with qtbot.waitSignal(win.jobs.done, timeout=120_000):
        panel.generate_selection.click()
    return win, panel, win.session.project, win.current_dataset


def test_accept_all_passing_is_one_undo_step(window, qtbot, server):
    win, panel, project, dataset = _generated_for_three(window, qtbot, server)
    proposed = [r for r in candidate_rows(project, dataset_id=dataset.id) if r["status"] == "proposed"]
    assert len(proposed) >= 2
    passing = [r["id"] for r in proposed[:2]]

    def mark(conn):  # which candidates pass is the accept rule's business; here two are made to pass
        conn.execute("UPDATE candidates SET scores = json_set(scores, '$.passes', json('false'))")
        conn.executemany("UPDATE candidates SET scores = json_set(scores, '$.passes', json('true')) WHERE id = ?",
                         [(i,) for i in passing])

    project.writer.run(mark)
    panel.accept_passing_button.click()
    statuses = {r["id"]: r["status"] for r in candidate_rows(project, dataset_id=dataset.id)}
    assert [statuses[i] for i in passing] == ["accepted", "accepted"]
    assert all(s != "accepted" for i, s in statuses.items() if i not in passing)
    assert "Accepted 2 passing candidates" in win.statusBar().currentMessage()
    assert win.undo_action.text() == "&Undo Accept 2 passing candidates"
    win.undo_action.trigger()
    assert [load_candidate(project, i)["status"] for i in passing] == ["proposed", "proposed"]
    panel.accept_passing_button.click()  # again, then nothing is left to accept
    panel.accept_passing_button.click()
    assert "No undecided candidate passes" in win.statusBar().currentMessage()


def test_a_decision_moves_to_the_next_candidate_unless_turned_off(window, qtbot, server):
    win, panel, project, dataset = _generated_for_three(window, qtbot, server)
    panel.scope.setCurrentIndex(panel.scope.findData("dataset"))
    panel.status_filter.setCurrentIndex(0)  # all statuses: a decided candidate stays listed
    decidable = [r["id"] for r in candidate_rows(project, dataset_id=dataset.id) if r["status"] == "proposed"]
    assert len(decidable) >= 2 and panel.advance.isChecked() and win.settings.get("review_advance") is True
    panel.select_candidate(decidable[0])
    row = panel.table.currentIndex().row()
    qtbot.keyClick(panel.table, Qt.Key.Key_A)
    assert load_candidate(project, decidable[0])["status"] == "accepted"
    assert panel.table.currentIndex().row() == row + 1
    panel.advance.setChecked(False)
    assert win.settings.get("review_advance") is False
    current = panel.current_candidate_id()
    qtbot.keyClick(panel.table, Qt.Key.Key_X)
    assert panel.current_candidate_id() == current  # stays where it is
