"""The LLM settings dialog says where the model runs."""

from __future__ import annotations

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
