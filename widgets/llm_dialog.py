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
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QCheckBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from engine.errors import CounterbiasError
from engine.llm.base import Usage
from engine.counterbias.settings import GenerateSettings
from engine.llm.config import DEFAULT_PARAMS, LLMConfig

__all__ = ["DEFAULT_VALUES", "FIELDS", "LLMDialog", "config_from_values", "device_text", "settings_from_values",
           "usage_text"]

#: The values the dialog edits, with their defaults.
DEFAULT_VALUES: dict[str, Any] = {
    "backend": "local",
    "model": "qwen2.5-coder-1.5b",
    "base_url": "",
    "api_key_env": "",
    "concurrency": 8,
    "temperature": 0.7,
    "samples": 1,
    # generation (CoBA) options
    "targets": "other",
    "seed": 13,
    "shuffle": True,
    "drop_prob": 0.1,
    "swap_gender": True,
    "mode": "edit",
    "edit_polar": 0.8,
    "edit_moved": 0.25,
    "edit_fresh": True,
    "edit_opinion": True,
    "edit_hold": True,
    "edit_swap": True,
    "edit_remove": True,
    "edit_triples": False,
    "sentence_reader": "llm",
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
        self.temperature = QDoubleSpinBox(minimum=0.0, maximum=2.0, singleStep=0.1, decimals=2)
        self.samples = QSpinBox(minimum=1, maximum=50)
        self.samples.setToolTip("Candidates per example and target label")
        form = QFormLayout()
        form.addRow("Backend:", self.backend)
        form.addRow("Model:", self.model)
        form.addRow("Base URL:", self.base_url)
        form.addRow("API key variable:", self.api_key_env)
        form.addRow("Concurrency:", self.concurrency)
        form.addRow("Temperature:", self.temperature)
        self.device = QLabel("—")
        self.device.setObjectName("llmDevice")
        self.device.setWordWrap(True)
        self.device.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        form.addRow("Runs on:", self.device)

        self.targets = QComboBox()
        self.targets.setEditable(True)
        self.targets.addItem("other", "other")
        self.targets.addItem("each", "each")
        self.targets.setToolTip("Target labels: 'other' (binary: the other label; multi-class: every other "
                                "label), 'each' (every other label), or label names separated by commas")
        self.seed = QSpinBox(minimum=0, maximum=2**31 - 1)
        self.seed.setToolTip("Seeds the shuffle/drop of normal triples and the LLM's sampling")
        self.shuffle = QCheckBox("Shuffle normal triples")
        self.drop_prob = QDoubleSpinBox(minimum=0.0, maximum=0.9, singleStep=0.05, decimals=2)
        self.drop_prob.setToolTip("Chance to drop each normal triple (never a principal or spurious one)")
        self.swap_gender = QCheckBox("Swap gendered words (binary word-pair list)")
        self.swap_gender.setToolTip(
            "Replace each word naming a person's gender by its counterpart (he/she, actor/actress) with the bundled "
            "WinoBias and GN-GloVe pairs, in edited and untouched sentences alike. Not swapped: a text that names a "
            "person, names (\"Stephen King\"), verbs (\"miss it\"), exclamations (\"Oh boy\"), idioms, the deity, "
            "and pairs that name no person of either gender (gay/lesbian, anatomy, animals: not_swapped.txt).")
        self.sentence_reader = QComboBox()
        self.sentence_reader.addItem("The LLM (one short request per sentence)", "llm")
        self.sentence_reader.addItem("The ensemble members", "members")
        self.sentence_reader.setToolTip("Edit mode: who reads single sentences — to find the sentences that speak for "
                                        "the original label, to see whether an edit moved, and to hold back "
                                        "candidates with a sentence still read as the original label. The members "
                                        "are trained on whole texts and misread short sentences.")
        self.edit_polar = QDoubleSpinBox(minimum=0.0, maximum=1.0, singleStep=0.05, decimals=2)
        self.edit_polar.setSpecialValueText("off")
        self.edit_polar.setToolTip("Edit mode: also edit every sentence that the sentence reader, reading it alone, "
                                   "gives the original label (the members: with at least this probability; 0: off, "
                                   "only sentences holding principal words are edited)")
        self.edit_moved = QDoubleSpinBox(minimum=0.0, maximum=1.0, singleStep=0.05, decimals=2)
        self.edit_moved.setSpecialValueText("off")
        self.edit_moved.setToolTip("Edit mode: an edited sentence the sentence reader still does not give "
                                   "the target label (P < 0.5, risen by less than this) is sent back once, saying it "
                                   "still reads as the original label (a synonym instead of the opposite); 0: off")
        self.edit_fresh = QCheckBox("Try an unusable or unmoved edit once more, in a fresh conversation")
        self.edit_fresh.setToolTip("Edit mode: a sentence whose edit and repair were both unusable, or that the "
                                   "ensemble still reads as unmoved, gets one more request with a new seed (about "
                                   "one sentence in four with the bundled model)")
        self.edit_opinion = QCheckBox("Ask which words carry the opinion of a sentence read as original")
        self.edit_opinion.setToolTip("Edit mode: for each sentence read as the original label, the LLM marks the "
                                     "words that make it so (one short request each); they are named to change, "
                                     "and spurious words among them may change too (recorded with the candidate)")
        self.edit_hold = QCheckBox("Keep spurious opinion words: turn the opinion around them first")
        self.edit_hold.setToolTip("Edit mode, with the opinion words: a spurious word among the marked words "
                                  "(\"heartfelt\", \"masterpiece\") is first kept and the opinion turned around it "
                                  "(\"hardly a heartfelt movie\"), as a counterbias example needs; it is released "
                                  "only when that edit and its repair fail their checks or are not read as the "
                                  "target (one or two more requests per such sentence)")
        self.edit_swap = QCheckBox("Swap each opinion phrase for its opposite where every edit failed")
        self.edit_swap.setToolTip("Edit mode, with the opinion words: a sentence that still reads as the original "
                                  "label after every edit gets one more try; the LLM gives the opposite of each "
                                  "marked phrase, which replaces it in the sentence as written (every other word "
                                  "stays), kept only when the sentence then reads more as the target")
        self.edit_remove = QCheckBox("Remove a sentence still read as original after every try")
        self.edit_remove.setToolTip("Edit mode: a sentence read as the original label that has no usable edit after "
                                    "every try (\"Very recommendable.\" sent back unchanged) is removed, as human "
                                    "editors often do, when it holds no word to keep, another sentence was edited "
                                    "and at most a third of the sentences go; off, it stays and the residual check "
                                    "counts it")
        self.edit_triples = QCheckBox("Also edit sentences holding a principal triple (one more LLM request per "
                                      "sentence)")
        self.edit_triples.setToolTip("Edit mode: extract the fact triples of every sentence first (as the "
                                     "reconstruct mode does) and edit the sentences whose triples hold a principal "
                                     "word; off, sentences are chosen by their principal words alone and no triple "
                                     "request is sent")
        self.mode = QComboBox()
        self.mode.addItem("Edit sentences (keeps the rest of the text)", "edit")
        self.mode.addItem("Reconstruct from triples (CoBA paper)", "reconstruct")
        self.mode.setToolTip("Edit: only sentences holding principal words are rewritten, every other sentence "
                             "is kept as it is. Reconstruct: the whole text is rewritten from its triples "
                             "(shuffle and drop apply only here).")
        generation = QGroupBox("Generation")
        gen_form = QFormLayout(generation)
        gen_form.addRow("Mode:", self.mode)
        gen_form.addRow("Samples:", self.samples)
        gen_form.addRow("Target labels:", self.targets)
        gen_form.addRow("Seed:", self.seed)
        gen_form.addRow("", self.shuffle)
        gen_form.addRow("Drop probability:", self.drop_prob)
        gen_form.addRow("", self.swap_gender)
        gen_form.addRow("Sentences read by:", self.sentence_reader)
        gen_form.addRow("Edit sentences read as original, P ≥", self.edit_polar)
        gen_form.addRow("Repair edits that did not move, gain <", self.edit_moved)
        gen_form.addRow("", self.edit_fresh)
        gen_form.addRow("", self.edit_opinion)
        gen_form.addRow("", self.edit_hold)
        gen_form.addRow("", self.edit_swap)
        gen_form.addRow("", self.edit_remove)
        gen_form.addRow("", self.edit_triples)

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
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addLayout(test_row)
        layout.addWidget(generation)
        layout.addWidget(tokens)
        layout.addWidget(buttons)
        self.resize(560, self.sizeHint().height())

        self.backend.currentIndexChanged.connect(self._backend_changed)
        self.model.currentTextChanged.connect(lambda _: self._show_device())
        self.mode.currentIndexChanged.connect(self._mode_changed)
        self.edit_opinion.toggled.connect(self._mode_changed)
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
        self.temperature.setValue(float(values["temperature"]))
        self.samples.setValue(int(values["samples"]))
        self.targets.setCurrentText(str(values["targets"] or "other"))
        self.seed.setValue(int(values["seed"]))
        self.shuffle.setChecked(bool(values["shuffle"]))
        self.drop_prob.setValue(float(values["drop_prob"]))
        self.swap_gender.setChecked(bool(values["swap_gender"]))
        self.edit_polar.setValue(float(values.get("edit_polar", DEFAULT_VALUES["edit_polar"])))
        self.edit_moved.setValue(float(values.get("edit_moved", DEFAULT_VALUES["edit_moved"])))
        self.edit_fresh.setChecked(bool(values.get("edit_fresh", DEFAULT_VALUES["edit_fresh"])))
        self.edit_opinion.setChecked(bool(values.get("edit_opinion", DEFAULT_VALUES["edit_opinion"])))
        self.edit_hold.setChecked(bool(values.get("edit_hold", DEFAULT_VALUES["edit_hold"])))
        self.edit_swap.setChecked(bool(values.get("edit_swap", DEFAULT_VALUES["edit_swap"])))
        self.edit_remove.setChecked(bool(values.get("edit_remove", DEFAULT_VALUES["edit_remove"])))
        self.edit_triples.setChecked(bool(values.get("edit_triples", DEFAULT_VALUES["edit_triples"])))
        self.mode.setCurrentIndex(max(self.mode.findData(str(values.get("mode") or "edit")), 0))
        self.sentence_reader.setCurrentIndex(max(self.sentence_reader.findData(
            str(values.get("sentence_reader") or DEFAULT_VALUES["sentence_reader"])), 0))

    def values(self) -> dict[str, Any]:
        """The edited values (keys of :data:`FIELDS`)."""
        return {
            "backend": self.backend.currentData(),
            "model": self.model.currentText().strip(),
            "base_url": self.base_url.text().strip(),
            "api_key_env": self.api_key_env.text().strip(),
            "concurrency": self.concurrency.value(),
            "temperature": round(self.temperature.value(), 2),
            "samples": self.samples.value(),
            "targets": self.targets.currentText().strip() or "other",
            "seed": self.seed.value(),
            "shuffle": self.shuffle.isChecked(),
            "drop_prob": round(self.drop_prob.value(), 2),
            "swap_gender": self.swap_gender.isChecked(),
            "mode": self.mode.currentData(),
            "edit_polar": round(self.edit_polar.value(), 2),
            "edit_moved": round(self.edit_moved.value(), 2),
            "edit_fresh": self.edit_fresh.isChecked(),
            "edit_opinion": self.edit_opinion.isChecked(),
            "edit_hold": self.edit_hold.isChecked(),
            "edit_swap": self.edit_swap.isChecked(),
            "edit_remove": self.edit_remove.isChecked(),
            "edit_triples": self.edit_triples.isChecked(),
            "sentence_reader": self.sentence_reader.currentData(),
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
        """Enable the controls the chosen mode reads; the others keep their values, greyed out."""
        reconstruct = self.mode.currentData() == "reconstruct"
        for widget in (self.shuffle, self.drop_prob):
            widget.setEnabled(reconstruct)
        for widget in (self.sentence_reader, self.edit_polar, self.edit_moved, self.edit_fresh, self.edit_opinion,
                       self.edit_remove, self.edit_triples):
            widget.setEnabled(not reconstruct)
        self.edit_swap.setEnabled(not reconstruct and self.edit_opinion.isChecked())  # swaps the marked phrases
        self.edit_hold.setEnabled(not reconstruct and self.edit_opinion.isChecked())  # holds words of those phrases

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
    """The :class:`GenerateSettings` of dialog values (samples, temperature, targets, seed, shuffle/drop, gender).

    Raises
    ------
    GenerationConfigError
        Values the settings refuse (e.g. a drop probability out of range).
    """
    values = {**DEFAULT_VALUES, **values}
    return GenerateSettings(
        samples=int(values["samples"]),
        temperature=float(values["temperature"]),
        targets=str(values["targets"] or "other").strip(),
        seed=int(values["seed"]),
        shuffle=bool(values["shuffle"]),
        drop_prob=float(values["drop_prob"]),
        swap_gender=bool(values["swap_gender"]),
        mode=str(values["mode"] or "edit"),
        edit_polar=float(values["edit_polar"]),
        edit_moved=float(values["edit_moved"]),
        edit_fresh=bool(values["edit_fresh"]),
        edit_opinion=bool(values.get("edit_opinion", True)),
        edit_hold=bool(values.get("edit_hold", True)),
        edit_swap=bool(values.get("edit_swap", True)),
        edit_remove=bool(values.get("edit_remove", True)),
        edit_triples=bool(values.get("edit_triples", False)),
        sentence_reader=str(values["sentence_reader"] or "llm"),
    )
