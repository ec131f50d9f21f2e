"""The LLM settings dialog: backend, model, server, key variable, sampling, a connection test.

The dialog edits plain values (a dict with the keys of :data:`FIELDS`) and builds an
:class:`~engine.llm.config.LLMConfig` from them; it never holds an API key, only the *name*
of the environment variable that does. "Test connection" emits :attr:`LLMDialog.testRequested`
with the config; the application runs the call as a job and answers with
:meth:`LLMDialog.show_answer` or :meth:`LLMDialog.show_failure`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QCheckBox,
    QDoubleSpinBox,
    QFormLayout,
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from engine.errors import CounterbiasError
from engine.llm.base import Usage
from engine.counterbias.settings import MODES, OPTIONS, GenerateSettings, Option, inactive_options
from engine.llm.config import DEFAULT_PARAMS, LLMConfig

__all__ = ["DEFAULT_VALUES", "FIELDS", "GUI_OPTIONS", "LLMDialog", "config_from_values", "device_text", "settings_from_values",
           "usage_text"]

#: The generation options the dialog shows (declared in :data:`engine.counterbias.settings.OPTIONS`, ``gui`` set).
GUI_OPTIONS: dict[str, Option] = {name: o for name, o in OPTIONS.items() if o.gui is not None}

#: The values the dialog edits, with their defaults: the connection's, then the declared generation options'.
DEFAULT_VALUES: dict[str, Any] = {
    "backend": "local",
    "model": "qwen2.5-coder-1.5b",
    "base_url": "",
    "api_key_env": "",
    "concurrency": 8,
    **{name: o.default for name, o in GUI_OPTIONS.items()},
}
FIELDS = tuple(DEFAULT_VALUES)

_OPENAI_MODELS = ("gpt-4o-mini", "gpt-4o")


def usage_text(usage: Usage | None) -> str:
    """``"1,234 prompt + 56 completion tokens"`` (``"—"`` for ``None``)."""
    if usage is None:
        return "—"
    return f"{usage.prompt_tokens:,} prompt + {usage.completion_tokens:,} completion tokens"


def _local_models() -> list[str]:
    from engine.llm.gguf import MODELS

    return list(MODELS)


class LLMDialog(QDialog):
    """Edit the LLM settings; test them against the server.

    Parameters
    ----------
    values
        Current values (missing keys take :data:`DEFAULT_VALUES`).
    parent
        Parent widget.
    """

    testRequested = Signal(object)
    """``testRequested(LLMConfig)`` — send one tiny chat with this config."""

    def __init__(self, values: Mapping[str, Any] | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("LLM settings")
        self.setObjectName("llmDialog")
        values = {**DEFAULT_VALUES, **(values or {})}
        self.backend = QComboBox()
        self.backend.addItem("local (bundled model, in-process)", "local")
        self.backend.addItem("openai (OpenAI-compatible server)", "openai")
        self.model = QComboBox()
        self.model.setEditable(True)
        self.model.setMinimumContentsLength(24)
        self.base_url = QLineEdit(placeholderText="http://127.0.0.1:8080/v1 (empty: OpenAI's service)")
        self.api_key_env = QLineEdit(placeholderText="e.g. OPENAI_API_KEY (empty: no key)")
        self.api_key_env.setToolTip("The NAME of the environment variable holding the key (or the keyring "
                                    "entry of that name). The key itself is never stored.")
        self.concurrency = QSpinBox(minimum=1, maximum=512)
        self.concurrency.setToolTip("Requests in flight at once")
        for name, declared in GUI_OPTIONS.items():
            setattr(self, name, option_widget(declared))
        form = QFormLayout()
        form.addRow("Backend:", self.backend)
        form.addRow("Model:", self.model)
        form.addRow("Base URL:", self.base_url)
        form.addRow("API key variable:", self.api_key_env)
        form.addRow("Concurrency:", self.concurrency)
        generation = QGroupBox("Generation")
        gen_form = QFormLayout(generation)
        for name, declared in GUI_OPTIONS.items():
            widget = getattr(self, name)
            (form if declared.gui == "llm" else gen_form).addRow("" if declared.kind is bool else declared.label,
                                                                 widget)
        self.device = QLabel("—")
        self.device.setObjectName("llmDevice")
        self.device.setWordWrap(True)
        self.device.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        form.addRow("Runs on:", self.device)

        self.test_button = QPushButton("Test connection")
        self.test_button.clicked.connect(self.request_test)
        self.result = QLabel("Sends one short chat with these settings.")
        self.result.setWordWrap(True)
        self.result.setTextFormat(Qt.TextFormat.PlainText)
        self.result.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.result.setObjectName("llmTestResult")
        test_row = QHBoxLayout()
        test_row.addWidget(self.test_button)
        test_row.addWidget(self.result, 1)

        self.last_usage = QLabel("—")
        self.total_usage = QLabel("—")
        tokens = QGroupBox("Tokens")
        token_form = QFormLayout(tokens)
        token_form.addRow("Last generate run:", self.last_usage)
        token_form.addRow("Project total (generate + triples):", self.total_usage)

        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        body = QWidget()
        inner = QVBoxLayout(body)
        inner.setContentsMargins(0, 0, 0, 0)
        inner.addLayout(form)
        inner.addLayout(test_row)
        inner.addWidget(generation)
        inner.addWidget(tokens)
        #: Everything but the buttons: it scrolls on a screen lower than the dialog (a 768-px laptop).
        self.scroll = QScrollArea()
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.scroll.setWidget(body)
        layout = QVBoxLayout(self)
        layout.addWidget(self.scroll, 1)
        layout.addWidget(buttons)
        screen = (parent.screen() if parent is not None else None) or QGuiApplication.primaryScreen()
        room = screen.availableGeometry().height() - 80 if screen is not None else 700
        wanted = body.sizeHint().height() + buttons.sizeHint().height() + 40
        self.resize(max(560, body.sizeHint().width() + 40), min(wanted, room))

        self.backend.currentIndexChanged.connect(self._backend_changed)
        self.model.currentTextChanged.connect(lambda _: self._show_device())
        for name in GUI_OPTIONS:
            _changed(getattr(self, name)).connect(self._mode_changed)
        self.set_values(values)
        self._mode_changed()

    # ------------------------------------------------------------------ values
    def set_values(self, values: Mapping[str, Any]) -> None:
        """Show ``values`` (keys of :data:`FIELDS`)."""
        values = {**DEFAULT_VALUES, **values}
        index = self.backend.findData(values["backend"])
        self.backend.setCurrentIndex(max(index, 0))
        self._backend_changed()
        self.model.setCurrentText(str(values["model"]))
        self.base_url.setText(str(values["base_url"] or ""))
        self.api_key_env.setText(str(values["api_key_env"] or ""))
        self.concurrency.setValue(int(values["concurrency"]))
        for name, declared in GUI_OPTIONS.items():
            set_option_value(getattr(self, name), declared, values[name])

    def values(self) -> dict[str, Any]:
        """The edited values (keys of :data:`FIELDS`)."""
        return {
            "backend": self.backend.currentData(),
            "model": self.model.currentText().strip(),
            "base_url": self.base_url.text().strip(),
            "api_key_env": self.api_key_env.text().strip(),
            "concurrency": self.concurrency.value(),
            **{name: option_value(getattr(self, name), declared) for name, declared in GUI_OPTIONS.items()},
        }

    def config(self) -> LLMConfig:
        """The :class:`LLMConfig` of the edited values.

        Raises
        ------
        LLMConfigError
            Values an LLM config refuses (no model, a URL with credentials, a key instead of a variable name).
        """
        return config_from_values(self.values())

    def generate_settings(self) -> GenerateSettings:
        """The :class:`GenerateSettings` of the edited values (raises ``GenerationConfigError``)."""
        return settings_from_values(self.values())

    def set_usage(self, last: Usage | None, total: Usage) -> None:
        """Token counters: the last generate run (``None``: none in this session) and the project's total."""
        self.last_usage.setText(usage_text(last))
        self.total_usage.setText(usage_text(total))

    # ------------------------------------------------------------------ the test
    def request_test(self) -> None:
        """Validate the values and ask for a connection test."""
        try:
            config = self.config()
        except CounterbiasError as exc:
            self.show_failure(exc)
            return
        self.set_busy(True)
        self.result.setText(f"Sending a test chat to {config.backend}:{config.model}…")
        self.testRequested.emit(config)

    def set_busy(self, busy: bool) -> None:
        self.test_button.setEnabled(not busy)

    def show_answer(self, text: str, model: str = "", usage: Usage | None = None) -> None:
        """The test chat succeeded: show the (untrusted, plain-text) answer."""
        self.set_busy(False)
        who = f" ({model})" if model else ""
        used = f" — {usage_text(usage)}" if usage is not None else ""
        self.result.setText(f"Connected{who}: {text.strip()[:300]!r}{used}")
        self.result.setStyleSheet("color: #1a6b1a;")

    def show_failure(self, exc: BaseException) -> None:
        """The test (or the settings) failed: show the named error and what to do."""
        self.set_busy(False)
        if isinstance(exc, CounterbiasError):
            text = f"{exc.title} [{exc.code}]: {exc.message}"
            if exc.hint:
                text += f"\nWhat to do: {exc.hint}"
        else:
            text = f"{type(exc).__name__}: {exc}"
        self.result.setText(text)
        self.result.setStyleSheet("color: #a40000;")

    def accept(self) -> None:
        """Close only with values an LLM config accepts."""
        try:
            self.config()
            self.generate_settings()
        except CounterbiasError as exc:
            self.show_failure(exc)
            return
        super().accept()

    def _backend_changed(self) -> None:
        local = self.backend.currentData() == "local"
        current = self.model.currentText()
        self.model.blockSignals(True)
        self.model.clear()
        self.model.addItems(_local_models() if local else list(_OPENAI_MODELS))
        self.model.setCurrentText(current)
        self.model.blockSignals(False)
        self.base_url.setEnabled(not local)
        self.api_key_env.setEnabled(not local)
        self.concurrency.setEnabled(not local)
        self.concurrency.setToolTip("Requests in flight at once" if not local else
                                    "The local model runs as many requests at once as it has parallel slots "
                                    "(see 'Runs on')")
        self._show_device()

    def _mode_changed(self) -> None:
        """Enable the options that take effect with the others (mode, needed options); the rest keep their values,
        greyed out."""
        inactive = inactive_options(self.values())
        for name in GUI_OPTIONS:
            getattr(self, name).setEnabled(name not in inactive)

    def _show_device(self) -> None:
        """Say where the model runs: the local runtime's device, threads and slots, or the server."""
        self.device.setText(device_text(self.backend.currentData(), self.model.currentText().strip()))


def device_text(backend: str, model: str) -> str:
    """Where a model of ``backend`` runs, for the dialog (never loads a model).

    For ``local`` this is :meth:`engine.llm.local_backend.LocalBackend.describe` (the device the
    installed runtime reports, threads and parallel slots); for a server, the server decides.
    """
    if backend != "local":
        return "On the server (its GPU and batch size are set where it is started; see README \"Large runs\")"
    from engine.llm.local_backend import LocalBackend

    try:
        return LocalBackend(LLMConfig(backend="local", model=model or DEFAULT_VALUES["model"])).describe()
    except CounterbiasError as exc:
        return f"{exc.message} {exc.hint}".strip()


def config_from_values(values: Mapping[str, Any]) -> LLMConfig:
    """An :class:`LLMConfig` from dialog values (the local backend ignores URL and key variable).

    Raises
    ------
    LLMConfigError
        Values an LLM config refuses.
    """
    values = {**DEFAULT_VALUES, **values}
    local = values["backend"] == "local"
    return LLMConfig(
        backend=str(values["backend"]),
        model=str(values["model"]).strip(),
        base_url=None if local or not values["base_url"] else str(values["base_url"]).strip(),
        api_key_env=None if local or not values["api_key_env"] else str(values["api_key_env"]).strip(),
        concurrency=int(values["concurrency"]),
        params={**DEFAULT_PARAMS, "temperature": float(values["temperature"])},
    )


def settings_from_values(values: Mapping[str, Any]) -> GenerateSettings:
    """The :class:`GenerateSettings` of dialog values: the shown options that take effect (a greyed-out one is
    kept in the dialog's values but not applied: its default is).

    Raises
    ------
    GenerationConfigError
        Values the settings refuse (e.g. a drop probability out of range).
    """
    values = {**DEFAULT_VALUES, **values}
    chosen = {name: values[name] for name in GUI_OPTIONS}
    inactive = inactive_options(chosen)
    return GenerateSettings(**{name: value for name, value in chosen.items() if name not in inactive}).validate()


def option_widget(declared: Option) -> QWidget:
    """The widget of a declared option: a check box (bool), a combo box (choices), a spin box (number)."""
    widget: QWidget
    if declared.kind is bool:
        widget = QCheckBox(declared.label)
    elif declared.items:
        widget = QComboBox()
        widget.setEditable(not declared.closed)
        for value, label in declared.items:
            widget.addItem(label, value)
    elif declared.kind is int:
        widget = QSpinBox(minimum=int(declared.minimum or 0), maximum=int(declared.maximum or 2**31 - 1))
    elif declared.kind is float:
        widget = QDoubleSpinBox(minimum=declared.minimum or 0.0, maximum=declared.maximum or 1.0,
                                singleStep=declared.step or 0.1, decimals=declared.decimals)
        if declared.off:
            widget.setSpecialValueText(declared.off)
    else:
        widget = QLineEdit()
    scope = "" if set(declared.modes) == set(MODES) else f"{'/'.join(declared.modes).capitalize()} mode"
    if declared.needs:
        scope += (", with " if scope else "With ") + ", ".join(f"“{OPTIONS[n].label}” on" for n in declared.needs)
    text = declared.help[0].upper() + declared.help[1:] + "." + (f" {declared.more}" if declared.more else "")
    widget.setToolTip(f"{scope}: {text}" if scope else text)
    return widget


def _changed(widget: QWidget):
    if isinstance(widget, QCheckBox):
        return widget.toggled
    if isinstance(widget, QComboBox):
        return widget.currentTextChanged
    if isinstance(widget, (QSpinBox, QDoubleSpinBox)):
        return widget.valueChanged
    return widget.textChanged


def set_option_value(widget: QWidget, declared: Option, value: Any) -> None:
    """Show ``value`` in the widget of a declared option."""
    value = declared.default if value is None else value
    if isinstance(widget, QCheckBox):
        widget.setChecked(bool(value))
    elif isinstance(widget, QComboBox):
        if widget.isEditable():
            widget.setCurrentText(str(value or declared.default))
        else:
            widget.setCurrentIndex(max(widget.findData(str(value or declared.default)), 0))
    elif isinstance(widget, QSpinBox):
        widget.setValue(int(value))
    elif isinstance(widget, QDoubleSpinBox):
        widget.setValue(float(value))
    else:
        widget.setText(str(value or ""))


def option_value(widget: QWidget, declared: Option) -> Any:
    """The value the widget of a declared option shows."""
    if isinstance(widget, QCheckBox):
        return widget.isChecked()
    if isinstance(widget, QComboBox):
        if widget.isEditable():
            return widget.currentText().strip() or declared.default
        return widget.currentData()
    if isinstance(widget, QSpinBox):
        return widget.value()
    if isinstance(widget, QDoubleSpinBox):
        return round(widget.value(), declared.decimals)
    return widget.text().strip() or declared.default
