"""The real main window, offscreen: demo project, import through the wizard, export, search."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.main_window import MainWindow
from app.settings import Settings
from engine.demo import ensure_demo_project

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def window(qtbot, tmp_path):
    win = MainWindow(Settings())
    qtbot.addWidget(win)
    win.show()
    yield win
    win.close()


def test_demo_project_shows_rows(window, tmp_path, qtbot):
    path = ensure_demo_project(tmp_path / "demo.cbproj")
    assert window.open_project(path)
    model = window.examples.model
    assert model.rowCount() == 3904
    assert window.current_dataset.name == "CAD sentiment (demo)"
    assert "3,904 rows" in window.examples.count_label.text()
    # The first row is selected and shown in the detail pane.
    assert window.detail.example is not None
    assert window.detail.example["text"].startswith("Long, boring, blasphemous.")
    # Search (debounced) narrows the rows through SQL.
    window.examples.search.setText("blasphemous")
    qtbot.waitUntil(lambda: model.rowCount() < 3904, timeout=3000)
    assert all("blasphemous" in model.example_at(r)["text"].lower() for r in range(model.rowCount()))
    # Label filter.
    window.examples.search.clear()
    qtbot.waitUntil(lambda: model.rowCount() == 3904, timeout=3000)
    window.examples.label_filter.setCurrentText("Positive")
    assert model.rowCount() == 1952
    assert window.settings.recent_projects()[0] == str(path.resolve())


def test_import_through_wizard(window, tmp_path, qtbot, shared_data):
    window.session.new_project(tmp_path / "p.cbproj")
    wizard = window.import_dialog(shared_data / "cad/NLI/original/train.tsv")
    assert wizard.preview_table.rowCount() > 0
    assert wizard.mapping().task == "pair"
    assert wizard.mapping().label == "gold_label"
    wizard.name_edit.setText("snli-cad")
    with qtbot.waitSignal(window.jobs.finished, timeout=20_000):
        wizard.import_button.click()
    qtbot.waitUntil(lambda: window.current_dataset is not None and window.current_dataset.name == "snli-cad")
    assert window.examples.model.rowCount() == 1666
    assert window.examples.model.column_keys[:4] == ("id", "label", "premise", "hypothesis") or \
        "premise" in window.examples.model.column_keys
    assert not wizard.isVisible()


def test_wizard_shows_errors_in_place_and_leaves_project_unchanged(window, tmp_path, qtbot):
    window.session.new_project(tmp_path / "p.cbproj")
    bad = tmp_path / "bad.csv"
    bad.write_text("text,label\nfine,pos\nmissing label,\nok,neg\n", encoding="utf-8")
    wizard = window.import_dialog(bad)
    assert not wizard.error_label.isVisible() or wizard.error_label.text() == ""
    with qtbot.waitSignal(window.jobs.failed, timeout=20_000):
        wizard.import_button.click()
    qtbot.waitUntil(lambda: "CB210" in wizard.error_label.text())
    assert "What to do" in wizard.error_label.text()
    assert wizard.isVisible()
    assert window.session.project.datasets() == []
    # The user fixes the problem in the dialog (skip rows without a label) and retries.
    wizard.skip_missing.setChecked(True)
    with qtbot.waitSignal(window.jobs.finished, timeout=20_000):
        wizard.import_button.click()
    qtbot.waitUntil(lambda: window.examples.model.rowCount() == 2)


def test_wizard_preview_error_for_wrong_delimiter(window, tmp_path, qtbot):
    window.session.new_project(tmp_path / "p.cbproj")
    semi = tmp_path / "semi.csv"
    semi.write_text("text;label\na;x\nb;y\n", encoding="utf-8")
    wizard = window.import_dialog(semi)
    assert "semicolon" in wizard.error_label.text()
    assert not wizard.import_button.isEnabled()
    wizard.delimiter_combo.setCurrentIndex(wizard.delimiter_combo.findData(";"))
    wizard.refresh_preview()
    assert wizard.import_button.isEnabled()
    assert wizard.mapping().text == "text"
    wizard.reject()


def test_export_job(window, tmp_path, qtbot):
    path = ensure_demo_project(tmp_path / "demo.cbproj")
    window.open_project(path)
    out = tmp_path / "out.csv"
    with qtbot.waitSignal(window.jobs.finished, timeout=20_000):
        window.run_export(out)
    assert out.read_text(encoding="utf-8-sig").count("\n") >= 3905


def test_open_bad_project_shows_named_error(window, tmp_path, qtbot):
    junk = tmp_path / "junk.cbproj"
    junk.write_bytes(b"garbage" * 200)
    assert not window.open_project(junk)
    assert window.session.project is None


def test_main_exits_zero_in_subprocess(tmp_path):
    env = {**os.environ, "COUNTERBIAS_HOME": str(tmp_path), "QT_QPA_PLATFORM": "offscreen"}
    shot = tmp_path / "shot.png"
    done = subprocess.run(
        [sys.executable, "-m", "app", "--demo", "--screenshot", str(shot)],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert shot.stat().st_size > 10_000
    assert (tmp_path / "demo.cbproj").is_file()


def test_quit_with_a_running_job_asks_first_and_cancel_keeps_the_window(window, qtbot):
    import time

    from engine.errors import Cancelled

    def wait_for_cancel(*, progress, cancel):
        while not cancel.cancelled:
            time.sleep(0.01)
        raise Cancelled()

    asked = []
    window.ask_before_quit = True  # as on a desktop (offscreen it does not ask: nobody would answer)
    window.confirm_quit = lambda running: asked.append([j.title for j in running]) or False
    job = window.jobs.start(wait_for_cancel, title="Long job")
    qtbot.waitUntil(lambda: job.is_active and job.started_at is not None, timeout=5000)
    window.close()
    assert asked == [["Long job"]] and window.isVisible() and job.is_active  # Cancel: nothing stopped
    window.confirm_quit = lambda running: asked.append([j.title for j in running]) or True
    window.close()
    assert not window.isVisible() and len(asked) == 2
    qtbot.waitUntil(lambda: not job.is_active, timeout=5000)


def test_quit_without_jobs_does_not_ask(window):
    window.ask_before_quit = True
    window.confirm_quit = lambda running: pytest.fail("asked with no job running")
    window.close()
    assert not window.isVisible()


def test_every_tab_fits_a_1366x768_laptop_screen(window, tmp_path, qtbot):
    """The window's minimum size stays within 1366×768 on every tab of the demo (the Report tab's error line once
    widened it past the screen)."""
    from PySide6.QtWidgets import QTabWidget

    window.resize(1366, 768)
    assert window.open_project(ensure_demo_project(tmp_path / "demo.cbproj"))
    tabs = window.findChild(QTabWidget)
    for i in range(tabs.count()):
        tabs.setCurrentIndex(i)
        qtbot.wait(200)  # the tab's first job (statistics, the report) starts and may fail with its error line
        qtbot.waitUntil(lambda: not window.jobs.is_busy, timeout=30_000)
        hint = window.minimumSizeHint()
        assert hint.width() <= 1366 and hint.height() <= 768, (tabs.tabText(i), hint)
        assert window.width() <= 1366, (tabs.tabText(i), window.width())


def test_help_menu_lists_the_shortcuts_and_explains_the_terms(window, qtbot):
    menus = [m.title() for m in window.menuBar().findChildren(type(window.recent_menu)) if m.title()]
    assert "&Help" in menus
    sheet = window.show_shortcuts()
    qtbot.addWidget(sheet)
    text = sheet.browser.toPlainText()
    for shown in ("Open Project", "Undo", "Keyboard Shortcuts", "accept the current candidate"):
        assert shown in text
    assert window.open_action.shortcut().toString() in text  # as this platform writes it
    sheet.close()
    glossary = window.show_glossary()
    qtbot.addWidget(glossary)
    text = glossary.browser.toPlainText()
    for term in ("p̂", "τ", "z-prior", "LFR / SLFR", "Demonstrations per edit", "Accept rule"):
        assert term in text


def test_demonstration_pairs_import_from_the_file_menu(window, tmp_path, qtbot):
    from engine.generation.demo_pairs import pair_counts

    path = ensure_demo_project(tmp_path / "demo.cbproj")
    window.open_project(path)
    assert window.import_demos_action.isEnabled()
    pairs = tmp_path / "train_paired_head.tsv"
    pairs.write_text("Sentiment\tText\tbatch_id\n"
                     "Negative\tThe plot is dull and the cast is wooden.\t4\n"
                     "Positive\tThe plot is gripping and the cast is superb.\t4\n"
                     "Positive\tA warm, funny film.\t5\n"
                     "Negative\tA cold, humourless film.\t5\n", encoding="utf-8")
    dialog = window.projects.import_demos_dialog(pairs)
    qtbot.addWidget(dialog)
    chosen = dialog.columns()  # guessed from CAD's header
    assert (chosen["text_column"], chosen["label_column"], chosen["group_column"], chosen["parent_column"]) == (
        "Text", "Sentiment", "batch_id", None)
    with qtbot.waitSignal(window.jobs.finished, timeout=20_000):
        dialog.accept()
    assert pair_counts(window.session.project, window.session.dataset.id)["imported"] == 2
    assert "2 added" in window.statusBar().currentMessage()
