"""Issue 15 in the import wizard: the preview shows the named error of an unreadable file in place
(no traceback, Import disabled), and the warnings a file's first rows give before importing."""

from __future__ import annotations

import pytest

from tests.reliability._import_files import UNREADABLE, latin1_csv, write, zip_as_csv
from widgets.import_wizard import ImportWizard


@pytest.fixture
def wizard(qtbot):
    dialog = ImportWizard()
    qtbot.addWidget(dialog)
    return dialog


@pytest.mark.parametrize("case", list(UNREADABLE))
def test_wizard_shows_the_named_error(wizard, tmp_path, case):
    make, error = UNREADABLE[case]
    wizard.set_path(make(tmp_path))
    text = wizard.error_label.text()
    if case in ("jsonl_5000_digit_integer", "deeply_nested_json", "lone_surrogate_escape"):
        # The bad row is among the rows shown: no preview, the error in place.
        assert wizard.preview_table.rowCount() == 0
    assert f"[{error.code}]" in text and "What to do:" in text
    assert not wizard.import_button.isEnabled()


@pytest.mark.parametrize("make, code", [(latin1_csv, "CB202"), (zip_as_csv, "CB244")])
def test_wizard_names_encoding_and_containers(wizard, tmp_path, make, code):
    wizard.set_path(make(tmp_path))
    assert f"[{code}]" in wizard.error_label.text()


def test_wizard_shows_warnings_before_importing_and_follows_the_mapping(wizard, tmp_path):
    path = write(tmp_path, "all.csv", "id,text,label\n1,a\x00b,pos\n1,c,pos\u200b\n2,d,neg\n")
    wizard.set_path(path)
    assert wizard.import_button.isEnabled()
    assert [w.code for w in wizard.warnings] == ["CB251", "CB253", "CB254"]
    assert not wizard.warning_label.isHidden()
    assert "[CB251]" in wizard.warning_label.text() and "invisible" in wizard.warning_label.text()
    wizard.role_combos["id"].setCurrentText("—")  # no id column: no duplicate-id warning
    assert [w.code for w in wizard.warnings] == ["CB251", "CB253"]


def test_wizard_duplicate_header_warning_names_the_column(wizard, tmp_path):
    wizard.set_path(write(tmp_path, "duphdr.csv", "text,text,label\nfirst a,second a,pos\nfirst b,second b,neg\n"))
    assert wizard.mapping().text == "text"
    assert "the text column is 'text' (column 1)" in wizard.warning_label.text()
    wizard.role_combos["text"].setCurrentText("text.1")
    assert "the text column is 'text.1' (column 2)" in wizard.warning_label.text()


def test_wizard_clean_file_has_no_warnings(wizard, tmp_path):
    wizard.set_path(write(tmp_path, "ok.csv", "text,label\na,pos\nb,neg\n"))
    assert wizard.warnings == [] and wizard.warning_label.isHidden()
    assert wizard.error_label.isHidden()


def test_window_lists_an_imports_warnings_after_it_finished(qtbot, tmp_path):
    """The warnings of the finished import (not only the preview's) are shown, and the status bar counts them."""
    from app.main_window import MainWindow
    from app.settings import Settings

    window = MainWindow(Settings())
    qtbot.addWidget(window)
    window.show()
    window.session.new_project(tmp_path / "p.cbproj")
    src = tmp_path / "invisible.csv"
    src.write_text("text,label\ngood film,pos\nfine film,pos\u200b\nbad film,neg\nawful film,\u202eneg\n",
                   encoding="utf-8")
    wizard = window.import_dialog(src)
    with qtbot.waitSignal(window.jobs.finished, timeout=20_000):
        wizard.import_button.click()
    box = window.projects.warnings_box
    assert box is not None and box.isVisible() and "CB251" in box.text()
    assert "1 warning(s)" in window.statusBar().currentMessage()
    assert window.session.dataset.labels == ["neg", "pos"]
    window.close()


def test_a_file_of_one_label_imports_with_the_label_set_named(qtbot, tmp_path):
    """Counterfactuals that all flip toward one label: refused with CB211 and a hint to name the labels; with
    them named in the dialog, the import runs and the dataset has both labels."""
    from app.main_window import MainWindow
    from app.settings import Settings

    window = MainWindow(Settings())
    qtbot.addWidget(window)
    window.show()
    window.session.new_project(tmp_path / "p.cbproj")
    wizard = window.import_dialog(write(tmp_path, "flipped.csv", "text,label\ngood film,pos\nfine film,pos\n"))
    wizard.import_button.click()
    qtbot.waitUntil(lambda: "[CB211]" in wizard.error_label.text(), timeout=20_000)
    assert "Labels of the task" in wizard.error_label.text()
    wizard.labels_edit.setText("neg, pos")
    with qtbot.waitSignal(window.jobs.finished, timeout=20_000):
        wizard.import_button.click()
    qtbot.waitUntil(lambda: window.session.dataset is not None, timeout=5_000)
    assert window.session.dataset.labels == ["neg", "pos"]
    window.close()
