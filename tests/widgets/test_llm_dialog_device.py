"""The LLM settings dialog says where the model runs."""

from __future__ import annotations

import pytest

from engine.llm.local_backend import LocalBackend, gpu_of, runtime_devices
from engine.llm.config import LLMConfig
from widgets.llm_dialog import LLMDialog


def test_the_dialog_names_the_local_device_and_the_server_otherwise(qtbot):
    dialog = LLMDialog({"backend": "local", "model": "smollm2-135m"})
    qtbot.addWidget(dialog)
    expected = LocalBackend(LLMConfig(backend="local", model="smollm2-135m")).describe()
    assert dialog.device.text() == expected
    assert ("GPU" if gpu_of(runtime_devices()) else "CPU") in dialog.device.text()
    assert "parallel slot" in dialog.device.text() and not dialog.concurrency.isEnabled()
    dialog.backend.setCurrentIndex(dialog.backend.findData("openai"))
    assert dialog.device.text().startswith("On the server") and dialog.concurrency.isEnabled()


@pytest.mark.parametrize("name", ["edit_fresh", "edit_opinion", "edit_swap", "edit_remove"])
def test_an_edit_switch_on_by_default_goes_from_the_dialog_to_the_generation_settings(qtbot, name):
    from widgets.llm_dialog import DEFAULT_VALUES, settings_from_values

    dialog = LLMDialog({**DEFAULT_VALUES, "backend": "local", "model": "smollm2-135m"})
    qtbot.addWidget(dialog)
    box = getattr(dialog, name)
    assert box.isChecked() and getattr(settings_from_values(dialog.values()), name) is True
    box.setChecked(False)
    assert getattr(settings_from_values(dialog.values()), name) is False
    off = LLMDialog({**DEFAULT_VALUES, name: False})
    qtbot.addWidget(off)
    assert getattr(off, name).isChecked() is False


def test_the_triples_setting_goes_from_the_dialog_to_the_generation_settings(qtbot):
    from widgets.llm_dialog import DEFAULT_VALUES, settings_from_values

    dialog = LLMDialog({**DEFAULT_VALUES, "backend": "local", "model": "smollm2-135m"})
    qtbot.addWidget(dialog)
    assert not dialog.edit_triples.isChecked() and not settings_from_values(dialog.values()).uses_triples
    dialog.edit_triples.setChecked(True)
    assert settings_from_values(dialog.values()).edit_triples is True
    on = LLMDialog({**DEFAULT_VALUES, "edit_triples": True})
    qtbot.addWidget(on)
    assert on.edit_triples.isChecked()


def test_the_mode_enables_only_the_controls_it_reads_and_keeps_the_others_values(qtbot):
    from widgets.llm_dialog import DEFAULT_VALUES, settings_from_values

    dialog = LLMDialog({**DEFAULT_VALUES, "backend": "local", "model": "smollm2-135m", "drop_prob": 0.25})
    qtbot.addWidget(dialog)
    edit_only = (dialog.sentence_reader, dialog.edit_polar, dialog.edit_moved, dialog.edit_fresh, dialog.edit_opinion,
                 dialog.edit_swap, dialog.edit_remove, dialog.edit_triples)
    assert dialog.mode.currentData() == "edit"
    assert not dialog.shuffle.isEnabled() and not dialog.drop_prob.isEnabled()
    assert all(widget.isEnabled() for widget in edit_only)
    dialog.edit_opinion.setChecked(False)  # the phrase swap needs the marked opinion words
    assert not dialog.edit_swap.isEnabled() and dialog.edit_swap.isChecked()
    dialog.edit_opinion.setChecked(True)
    assert dialog.edit_swap.isEnabled()
    dialog.mode.setCurrentIndex(dialog.mode.findData("reconstruct"))
    assert dialog.shuffle.isEnabled() and dialog.drop_prob.isEnabled()
    assert not any(widget.isEnabled() for widget in edit_only)
    settings = settings_from_values(dialog.values())
    assert settings.mode == "reconstruct" and settings.drop_prob == 0.25 and settings.edit_fresh
    opened = LLMDialog({**DEFAULT_VALUES, "mode": "reconstruct"})
    qtbot.addWidget(opened)
    assert opened.drop_prob.isEnabled() and not opened.edit_triples.isEnabled()


def test_the_dialog_fits_the_screen_and_scrolls_its_options(qtbot):
    from PySide6.QtGui import QGuiApplication

    dialog = LLMDialog({"backend": "openai", "model": "stub"})
    qtbot.addWidget(dialog)
    dialog.show()
    room = QGuiApplication.primaryScreen().availableGeometry().height()
    assert dialog.height() <= room
    assert dialog.demonstrations.value() == 2  # every declared option has its control, the newest too
    bar = dialog.scroll.verticalScrollBar()
    if dialog.scroll.widget().sizeHint().height() > dialog.scroll.viewport().height():
        assert bar.maximum() > 0  # what does not fit is reached by scrolling, not cut off
