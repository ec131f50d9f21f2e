"""The Annotate tab in the real window: choose 10 examples, label them by key and button, see their
counterfactuals with the checks' verdicts, accept / fix / reject, retrain in the background, the curve grows,
and the session is restored after reopening. The LLM is a real loopback HTTP server with scripted answers."""

from __future__ import annotations

import os

import pytest

from app.main_window import MainWindow
from app.settings import Settings
from engine.active.annotation import annotation_setup, annotations, learning_curve
from engine.counterbias import candidate_rows
from engine.io import ImportOptions, import_file
from engine.store import Project
from tests.engine.active.test_annotation import MORE_NEG, MORE_POS
from tests.engine.active.test_llm_source import NEG, POS
from tests.engine.counterbias.scripted_llm import edit_sentence
from tests.engine.llm.stub_server import StubServer


def _reply(body):
    user = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
    if "\nText: " in user:
        return edit_sentence(user.split("\nText: ", 1)[1])
    return "CANNOT"


@pytest.fixture
def server():
    s = StubServer(reply=_reply).start()
    yield s
    s.close()


def _open_window(qtbot, csv_text, name, server, tmp_path):
    """A real main window on a new project holding one imported dataset, the LLM set to ``server``."""
    csv = tmp_path / f"{name}.csv"
    csv.write_text(csv_text, encoding="utf-8")
    path = tmp_path / f"{name}.cbproj"
    with Project.create(path) as p:
        import_file(p, csv, options=ImportOptions(name=name))
    settings = Settings()
    for key, value in {"backend": "openai", "model": "stub", "base_url": server.base_url, "samples": 1}.items():
        settings.set(f"llm_{key}", value)
    win = MainWindow(settings)
    qtbot.addWidget(win)
    win.resize(1500, 950)
    win.show()
    assert win.open_project(path)
    win.select_dataset(win.session.project.dataset(name).id)
    return win


@pytest.fixture
def window(qtbot, tmp_path, server):
    rows = [(t, "pos") for t in POS + MORE_POS] + [(t, "neg") for t in NEG + MORE_NEG]
    win = _open_window(qtbot, "text,label\n" + "".join(f'"{t}",{lab}\n' for t, lab in rows), "reviews", server,
                       tmp_path)
    yield win
    win.jobs.wait_for_done(60_000)
    win.close()


def _idle(win, qtbot):
    qtbot.waitUntil(lambda: not win.jobs.active_jobs(), timeout=120_000)


def test_label_ten_see_counterfactuals_decide_and_the_curve_grows(window, qtbot, tmp_path):
    win = window
    ctl, panel = win.annotation, win.annotation_panel
    win.annotation.learner = "tfidf-lr"  # fast; the default embed-lr is covered by the engine tests
    win.show_annotation_tab()
    _idle(win, qtbot)
    assert [b.text() for b in panel.label_buttons] == ["1  neg", "2  pos"]
    panel.strategy.setCurrentIndex(panel.strategy.findData("random"))
    panel.batch.setValue(10)
    panel.counterfactuals.setCurrentIndex(panel.counterfactuals.findData("llm"))
    panel.next_button.click()
    qtbot.waitUntil(lambda: panel.queue.count() == 10, timeout=60_000)
    assert ctl.current == ctl.queue[0]
    project = win.session.project
    dataset = win.session.dataset
    gold = {int(r["id"]): str(r["label"]) for r in project.examples(ctl.queue)}
    for k in range(10):
        example = ctl.current
        if k % 2:
            panel.label_buttons[dataset.labels.index(gold[example])].click()
        else:
            qtbot.keyClick(panel.text, str(dataset.labels.index(gold[example]) + 1))  # keys 1..9 give labels
        qtbot.waitUntil(lambda example=example: example in ctl.labels, timeout=10_000)
    assert ctl.labels == gold
    assert all(panel.queue.item(k).text().startswith("✓") for k in range(10))
    _idle(win, qtbot)
    stored = annotations(project, dataset.id)
    assert len(stored) == 10 and {a.strategy for a in stored} == {"random"}

    # every labelled example got its counterfactuals, checked
    made = [r for r in candidate_rows(project, example_ids=ctl.queue) if r["method"] == "llm"]
    assert {r["example_id"] for r in made} == set(ctl.queue)
    first = ctl.queue[0]
    panel.queue.setCurrentRow(0)
    qtbot.waitUntil(lambda: ctl.current == first, timeout=5_000)
    usable = [r for r in made if r["example_id"] == first and r["status"] != "failed"]
    assert usable and panel.cf_table.rowCount() == len([r for r in made if r["example_id"] == first])
    verdicts = panel.cf_table.item(0, 2).text()  # the checks' verdicts; no member here, so the label is not judged
    assert verdicts.startswith(("✗", "? label not judged")) and not verdicts.startswith("✓"), verdicts
    panel.select_counterfactual(0)
    panel.accept_button.click()
    cid = usable[0]["id"]
    assert ctl.cf_labels[cid] == usable[0]["target_label"]
    assert panel.cf_table.item(0, 3).text() == usable[0]["target_label"]

    # fix the label of another example's counterfactual, reject a third
    second, third = ctl.queue[1], ctl.queue[2]
    panel.queue.setCurrentRow(1)
    qtbot.waitUntil(lambda: ctl.current == second, timeout=5_000)
    panel.select_counterfactual(0)
    panel.fix_label.setCurrentText(gold[second])  # the analyst says the edit did not flip it
    panel.fix_button.click()
    panel.queue.setCurrentRow(2)
    qtbot.waitUntil(lambda: ctl.current == third, timeout=5_000)
    panel.select_counterfactual(0)
    panel.reject_button.click()
    _idle(win, qtbot)
    cands = {r["id"]: r for r in candidate_rows(project, example_ids=[first, second, third])}
    assert cands[cid]["status"] == "accepted"
    assert sorted(r["status"] for r in cands.values() if r["status"] != "proposed") == ["accepted", "accepted",
                                                                                           "rejected"]

    # the learner retrained in the background: the curve shows the last retraining with both counterfactuals
    setup = annotation_setup(project, dataset.id)
    curve = learning_curve(project, setup, learner="tfidf-lr")
    assert curve and curve[-1].annotations == 10 and curve[-1].counterfactuals == 2
    xs, ys = panel.curve.getData()
    assert list(xs)[-1] == 10 and 0.0 <= list(ys)[-1] <= 1.0
    assert "2 counterfactuals" in panel.curve_label.text()
    win.grab().save(str(tmp_path / "annotate.png"))

    # reopening restores the labelled queue and the curve
    path = project.path
    win.session.close_project()
    assert win.open_project(path)
    win.select_dataset(win.session.project.dataset("reviews").id)
    _idle(win, qtbot)
    qtbot.waitUntil(lambda: panel.queue.count() == 10, timeout=30_000)
    assert len(panel.curve.getData()[0]) == len(curve)


PAIRS = [
    ("A woman in a red coat feeds pigeons in a square.", "A woman is feeding birds.", "entailment"),
    ("A woman in a red coat feeds pigeons in a square.", "A woman is asleep at home.", "contradiction"),
    ("A woman in a red coat feeds pigeons in a square.", "A woman is waiting for her son.", "neutral"),
    ("Two boys race paper boats down a gutter after rain.", "Children are playing outside.", "entailment"),
    ("Two boys race paper boats down a gutter after rain.", "The boys are indoors doing homework.", "contradiction"),
    ("Two boys race paper boats down a gutter after rain.", "The boys are brothers.", "neutral"),
    ("An old man tunes a violin on a porch.", "A man holds an instrument.", "entailment"),
    ("An old man tunes a violin on a porch.", "A man is swimming.", "contradiction"),
    ("An old man tunes a violin on a porch.", "The man plays in an orchestra.", "neutral"),
]


def _pair_reply(body):
    user = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
    if "\nHypothesis: " in user:
        return "Nobody " + user.split("\nHypothesis: ", 1)[1].split(" ", 2)[-1]
    return "CANNOT"


def test_pairs_show_premise_and_hypothesis_and_their_new_hypotheses(qtbot, tmp_path):
    """A premise/hypothesis dataset in the Annotate tab: the example shows both texts; each labelled pair gets plain
    edits of its hypothesis (the premise kept), listed by their new hypothesis."""
    server = StubServer(reply=_pair_reply).start()
    win = _open_window(qtbot, "premise,hypothesis,label\n" + "".join(f'"{p}","{h}",{lab}\n' for p, h, lab in PAIRS),
                       "nli", server, tmp_path)
    try:
        ctl, panel = win.annotation, win.annotation_panel
        ctl.learner = "tfidf-lr"
        win.show_annotation_tab()
        _idle(win, qtbot)
        panel.strategy.setCurrentIndex(panel.strategy.findData("random"))
        panel.batch.setValue(3)
        panel.counterfactuals.setCurrentIndex(panel.counterfactuals.findData("llm"))
        panel.next_button.click()
        qtbot.waitUntil(lambda: panel.queue.count() == 3, timeout=60_000)
        project, dataset = win.session.project, win.session.dataset
        rows = {int(r["id"]): r for r in project.examples(ctl.queue)}
        shown = panel.text.toPlainText()
        first = rows[ctl.current]
        assert f"premise: {first['premise']}" in shown and f"hypothesis: {first['hypothesis']}" in shown
        for _ in range(3):
            example = ctl.current
            panel.label_buttons[dataset.labels.index(str(rows[example]["label"]))].click()
            qtbot.waitUntil(lambda example=example: example in ctl.labels, timeout=10_000)
        _idle(win, qtbot)
        panel.queue.setCurrentRow(0)
        qtbot.waitUntil(lambda: ctl.current == ctl.queue[0], timeout=5_000)
        made = [r for r in candidate_rows(project, example_ids=[ctl.queue[0]]) if r["method"] == "llm"]
        assert len(made) == 2 and all(r["premise"] == rows[ctl.queue[0]]["premise"] for r in made)
        assert panel.cf_table.rowCount() == 2
        assert {r["status"] for r in made} == {"proposed"} and all(r["text"] is None for r in made)
        cells = {panel.cf_table.item(k, 0).text() for k in range(2)}
        assert cells == {r["hypothesis"] for r in made} and all(c.startswith("Nobody ") for c in cells)
        win.grab().save(str(tmp_path / "annotate_pairs.png"))
        if os.environ.get("CB_SHOT_DIR"):
            win.grab().save(os.path.join(os.environ["CB_SHOT_DIR"], "annotate_pairs.png"))
    finally:
        win.jobs.wait_for_done(60_000)
        win.close()
        server.close()
