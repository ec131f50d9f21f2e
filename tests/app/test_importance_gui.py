"""Word importance in the real window: train tiny members, explain rows, see highlights and the grid."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("captum")

from app.main_window import MainWindow  # noqa: E402
from app.settings import Settings  # noqa: E402
from engine.io import ImportOptions, import_file  # noqa: E402

TINY = ["tiny-distilbert", "tiny-electra", "tiny-albert"]


@pytest.fixture
def window(qtbot, tmp_path, shared_data):
    import csv

    rows = list(csv.reader(open(shared_data / "cad/sentiment/combined/dev.tsv", newline="", encoding="utf-8"),
                           delimiter="\t"))[1:]
    rows = rows[:40] + rows[-40:]
    src = tmp_path / "small.csv"
    with open(src, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["text", "label"])
        for label, text in rows:
            w.writerow([text[:200], label])
    win = MainWindow(Settings())
    qtbot.addWidget(win)
    win.resize(1500, 950)
    win.show()
    win.session.new_project(tmp_path / "p.cbproj")
    import_file(win.session.project, src, options=ImportOptions(name="cad-small"))
    win.session.refresh_datasets()
    yield win
    win.close()


def test_train_explain_and_highlight(window, qtbot):
    panel = window.importance_panel
    window.show_importance_tab()
    with qtbot.waitSignal(window.jobs.done, timeout=240_000):
        window.importance.train(TINY, "fast-cpu")
    members = window.importance.members()
    assert sorted(m.name.split(":")[-1] for m in members) == sorted(TINY)
    label = panel.members_label.text()
    assert "dev accuracy" in label and "(fast-cpu: fine-tuned, 72 rows)" in label  # what the preset did, how many rows
    # Select three rows and explain them (IG, cached per member).
    table = window.examples.table
    table.selectRow(0)
    assert window.session.example_id == window.examples.model.example_id_at(0)
    with qtbot.waitSignal(window.jobs.done, timeout=240_000):
        window.importance.explain("selection")
    assert window.importance.vote_set_id is not None
    # The panel follows the session's example: once explained it is shown, with no other click.
    html = panel.sentence.html_source
    assert "background-color: rgba(" in html, "principal or spurious words are highlighted"
    name = members[0].name
    cell = panel.grid.cell_text(name, "ig")
    assert cell and cell != "—"
    # Unticking a member re-votes without it (cheap, no job).
    panel.grid.member_boxes[name].setChecked(False)
    assert panel.grid.table.item(0, 0).foreground().color().red() == 160
    # Word tables list principal / spurious words of the explained rows.
    assert panel.principal_model.rowCount() + panel.spurious_model.rowCount() > 0


def test_reopening_shows_the_stored_vote_with_its_settings(window, qtbot):
    """A project voted with IG + LIME and K = 3 shows both methods and K = 3 when opened again."""
    from engine.attribution import VoteSettings, find_principal_words
    from engine.models import EnsembleConfig, MemberSpec, train_ensemble, train_preset

    project = window.session.project
    dataset = window.current_dataset
    path = project.path
    train = train_preset("fast-cpu", epochs=1, max_length=48)
    config = EnsembleConfig(tuple(MemberSpec(f"v:{b}", b, {}, train) for b in TINY))
    train_ensemble(project, dataset.id, config)
    ids = [window.examples.model.example_id_at(0)]
    find_principal_words(project, dataset.id, [m.name for m in config.members],
                         methods={"ig": {"n_steps": 8}, "lime": {"num_samples": 20}},
                         vote=VoteSettings(k=3), wordlists=("gender",), example_ids=ids)
    window.session.close_project()
    assert window.open_project(path)
    panel = window.importance_panel
    window.show_importance_tab()
    assert panel.methods() == ["ig", "lime"] and panel.k.value() == 3 and panel.gender.isChecked()
    assert panel.rule.currentText() == "z-prior"  # the stored vote's rule (the default)
    window.session.set_example(window.examples.model.example_at(0))
    window.importance.refresh_example()
    name = window.importance.members()[0].name
    assert panel.grid.cell_text(name, "lime") not in ("", "—")


def test_a_top_layer_member_judges_but_does_not_explain_by_default(window, qtbot, monkeypatch):
    """Two fine-tuned members and one trained on its top layer: the vote is the two fine-tuned ones'."""
    import engine.models.device as device
    from engine.attribution.vote_store import vote_sets
    from engine.models import EnsembleConfig, MemberSpec, train_ensemble, train_preset

    project, dataset = window.session.project, window.current_dataset
    tuned = train_preset("fast-cpu", epochs=1, max_length=48)
    top = train_preset("top-cpu", epochs=1, max_length=48)
    config = EnsembleConfig((MemberSpec("j:tiny-distilbert", "tiny-distilbert", {}, tuned),
                             MemberSpec("j:tiny-albert", "tiny-albert", {}, tuned),
                             MemberSpec("j:tiny-electra", "tiny-electra", {}, top)))
    train_ensemble(project, dataset.id, config)
    assert [m.strategy for m in window.importance.members()] == ["fine-tune", "fine-tune", "cached-top"]
    window.session.refresh_datasets()
    asked = []  # the GUI thread decides the budget without importing torch (a cheap guess), the job follows it
    real = device.has_gpu
    monkeypatch.setattr(device, "has_gpu", lambda *, import_torch=True: asked.append(import_torch) or real(import_torch=False))
    window.importance.dataset_changed(window.current_dataset)
    panel = window.importance_panel
    window.show_importance_tab()
    label = panel.members_label.text()
    assert "explaining: j:tiny-distilbert, j:tiny-albert (τ = 2 of 2)" in label and "judging only: j:tiny-electra" in label
    boxes = panel.grid.member_boxes
    assert [boxes[n].isChecked() for n in ("j:tiny-distilbert", "j:tiny-albert", "j:tiny-electra")] == [True, True, False]
    assert "top layer" in boxes["j:tiny-electra"].toolTip()
    window.examples.table.selectRow(0)
    with qtbot.waitSignal(window.jobs.done, timeout=240_000):
        window.importance.explain("selection")
    stored = vote_sets(project, dataset.id)
    assert stored[0]["params"]["models"] == ["j:tiny-distilbert", "j:tiny-albert"]
    expected = "full" if real(import_torch=False) else "fast"  # fast on a machine without a GPU
    assert asked and not any(asked) and stored[0]["params"]["methods"]["ig"]["budget"] == expected
    assert "principal:" in panel.status.text()  # the shown row reads the scores the job stored
    # the analyst ticks the third member back on: the next explanation uses all three
    boxes["j:tiny-electra"].setChecked(True)
    with qtbot.waitSignal(window.jobs.done, timeout=240_000):
        window.importance.explain("selection")
    assert vote_sets(project, dataset.id)[0]["params"]["models"] == [m.name for m in config.members]
    # reopened, the ticks are those of the newest vote
    boxes["j:tiny-electra"].setChecked(False)
    window.importance.dataset_changed(window.current_dataset)
    assert all(b.isChecked() for b in panel.grid.member_boxes.values())


def test_rows_are_explained_while_the_last_member_still_trains(window, qtbot, monkeypatch):
    """Each member is shown as soon as it is stored; Explain runs with those while the last one trains."""
    import threading

    import engine.models.train as train_module
    from engine.attribution.vote_store import vote_sets

    release = threading.Event()
    real = train_module.train_member

    def train_member(project, dataset_id, spec, **kwargs):
        if spec.name.endswith(TINY[-1]):  # the last member trains until the test lets it finish
            while not release.wait(0.05):
                kwargs["progress"](0.5, f"{spec.name}: epoch 1/2")
        return real(project, dataset_id, spec, **kwargs)

    monkeypatch.setattr(train_module, "train_member", train_member)
    panel = window.importance_panel
    window.show_importance_tab()
    job = window.importance.train(TINY, "fast-cpu")
    job_names = window.importance._train_job_names
    assert panel.members_label.text().startswith("Training ") and all(n in panel.members_label.text() for n in job_names)
    try:
        qtbot.waitUntil(lambda: len(panel.grid.member_boxes) == 2, timeout=240_000)
        assert job.is_active and not panel.train_button.isEnabled()
        assert panel.explain_selection.isEnabled() and panel.explain_dataset.isEnabled()
        assert "Explain works now with" in window.statusBar().currentMessage()
        assert panel.members_label.text().endswith(f"still training: {job_names[-1]}")
        window.examples.table.selectRow(0)
        with qtbot.waitSignal(window.jobs.done, timeout=240_000) as ended:
            window.importance.explain("selection")
        assert ended.args[0] is not job and job.is_active
        stored = vote_sets(window.session.project, window.current_dataset.id)
        assert [n.split(":")[-1] for n in stored[0]["params"]["models"]] == TINY[:2]
        assert "background-color: rgba(" in panel.sentence.html_source
        assert not panel.train_button.isEnabled()  # still training
    finally:
        release.set()
    qtbot.waitUntil(lambda: not job.is_active, timeout=240_000)
    assert len(panel.grid.member_boxes) == 3 and panel.train_button.isEnabled()
