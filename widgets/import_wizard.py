"""Import dialog: pick a file, see its first rows with the detected mapping, adjust, import.

The dialog does not import by itself: it emits :attr:`ImportWizard.importRequested` with an
:class:`ImportRequest`, and the application runs the import as a job and reports back with
:meth:`ImportWizard.show_error` (the dialog stays open, the error shown in place) or
:meth:`ImportWizard.accept`.

Warnings about the data (duplicate header names, labels with invisible characters, NaN
labels, NUL bytes, duplicate ids, very many classes; :mod:`engine.io.checks`) found in the
first rows are shown below the preview before importing, and follow mapping changes;
:meth:`ImportWizard.show_warnings` shows an import result's warnings.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from engine.errors import CounterbiasError
from engine.io import ColumnMapping, DataWarning, ImportOptions, Preview, ReadOptions, preview_file
from engine.store import DatasetInfo

NONE = "—"
ROLES = (
    ("text", "Text"),
    ("premise", "Premise"),
    ("hypothesis", "Hypothesis"),
    ("label", "Label"),
    ("id", "Id"),
    ("split", "Split"),
)
DELIMITERS = (("auto", None), ("comma  ,", ","), ("tab", "\t"), ("semicolon  ;", ";"), ("pipe  |", "|"))
FILE_FILTER = "Labelled text (*.csv *.tsv *.tab *.txt *.jsonl *.ndjson *.json *.gz);;All files (*)"


@dataclass(frozen=True)
class ImportRequest:
    """Everything :func:`engine.io.import_file` needs."""

    path: Path
    mapping: ColumnMapping
    read_options: ReadOptions
    options: ImportOptions


class ImportWizard(QDialog):
    """Preview a file with an editable column mapping, then ask for the import."""

    importRequested = Signal(object)
    """Emitted with an :class:`ImportRequest` when the user presses Import."""

    def __init__(self, datasets: list[DatasetInfo] | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Import dataset")
        self.resize(980, 680)
        self._datasets = [d for d in (datasets or []) if d.kind == "original"]
        self._preview: Preview | None = None
        self._refresh = QTimer(self, singleShot=True, interval=150)
        self._refresh.timeout.connect(self.refresh_preview)

        self.path_edit = QLineEdit(placeholderText="CSV, TSV or JSONL file (optionally .gz)")
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        file_row = QHBoxLayout()
        file_row.addWidget(self.path_edit, 1)
        file_row.addWidget(browse)

        self.format_combo = QComboBox()
        self.format_combo.addItems(["auto", "csv", "tsv", "jsonl"])
        self.delimiter_combo = QComboBox()
        for text, value in DELIMITERS:
            self.delimiter_combo.addItem(text, value)
        self.quoting_combo = QComboBox()
        self.quoting_combo.addItem("double quotes (CSV)", "csv")
        self.quoting_combo.addItem("none: quotes are text", "none")
        self.encoding_combo = QComboBox(editable=True)
        self.encoding_combo.addItems(["utf-8", "cp1252", "latin-1", "utf-16", "gb18030", "shift_jis"])
        self.max_cell_spin = QSpinBox(minimum=1_000, maximum=10_000_000, singleStep=10_000, value=50_000)
        self.max_cell_spin.setSuffix(" chars")
        reading = QGroupBox("Reading")
        rform = QFormLayout(reading)
        rform.addRow("Format", self.format_combo)
        rform.addRow("Delimiter", self.delimiter_combo)
        rform.addRow("Quoting", self.quoting_combo)
        rform.addRow("Encoding", self.encoding_combo)
        rform.addRow("Max cell size", self.max_cell_spin)

        self.role_combos: dict[str, QComboBox] = {}
        mapping_box = QGroupBox("Columns")
        mgrid = QGridLayout(mapping_box)
        for i, (role, title) in enumerate(ROLES):
            combo = QComboBox()
            combo.setObjectName(f"map_{role}")
            self.role_combos[role] = combo
            mgrid.addWidget(QLabel(title), i // 2, (i % 2) * 2)
            mgrid.addWidget(combo, i // 2, (i % 2) * 2 + 1)
        self.task_label = QLabel()
        mgrid.addWidget(self.task_label, 3, 0, 1, 4)

        self.name_edit = QLineEdit(placeholderText="default: from the folder and file name (e.g. sst2-train)")
        self.split_edit = QLineEdit("train")
        self.append_combo = QComboBox()
        self.append_combo.addItem("a new dataset", None)
        for d in self._datasets:
            self.append_combo.addItem(f"append to {d.name} ({d.task})", d.id)
        self.skip_empty = QCheckBox("Skip rows with empty text")
        self.skip_missing = QCheckBox("Skip rows without a label")
        self.labels_edit = QLineEdit(placeholderText="only if the file holds some of them, e.g. Negative, Positive")
        self.labels_edit.setObjectName("import_labels")
        target = QGroupBox("Into")
        tform = QFormLayout(target)
        tform.addRow("Import into", self.append_combo)
        tform.addRow("Dataset name", self.name_edit)
        tform.addRow("Split (if no split column)", self.split_edit)
        tform.addRow("Labels of the task", self.labels_edit)
        tform.addRow(self.skip_empty)
        tform.addRow(self.skip_missing)

        self.preview_table = QTableWidget(0, 0)
        self.preview_table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.preview_table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.preview_table.setWordWrap(False)
        self.error_label = QLabel(wordWrap=True, textInteractionFlags=Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error_label.setObjectName("importError")
        self.error_label.setStyleSheet("QLabel#importError { color: #b00020; padding: 4px; }")
        self.error_label.hide()
        self.warning_label = QLabel(wordWrap=True,
                                    textInteractionFlags=Qt.TextInteractionFlag.TextSelectableByMouse)
        self.warning_label.setObjectName("importWarnings")
        self.warning_label.setStyleSheet("QLabel#importWarnings { color: #8a5300; padding: 4px; }")
        self.warning_label.hide()
        self.warnings: list[DataWarning] = []

        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.import_button = self.buttons.addButton("Import", QDialogButtonBox.ButtonRole.AcceptRole)
        self.import_button.setEnabled(False)
        self.buttons.accepted.connect(self._request)
        self.buttons.rejected.connect(self.reject)

        top = QHBoxLayout()
        top.addWidget(reading)
        top.addWidget(mapping_box, 1)
        top.addWidget(target)
        layout = QVBoxLayout(self)
        layout.addLayout(file_row)
        layout.addLayout(top)
        layout.addWidget(QLabel("First rows:"))
        layout.addWidget(self.preview_table, 1)
        layout.addWidget(self.error_label)
        layout.addWidget(self.warning_label)
        layout.addWidget(self.buttons)

        self.path_edit.editingFinished.connect(self._refresh.start)
        for combo in (self.format_combo, self.delimiter_combo, self.quoting_combo):
            combo.currentIndexChanged.connect(self._refresh.start)
        self.encoding_combo.currentTextChanged.connect(self._refresh.start)
        self.max_cell_spin.valueChanged.connect(self._refresh.start)
        for combo in self.role_combos.values():
            combo.currentIndexChanged.connect(self._mapping_changed)

    # ------------------------------------------------------------------ public
    def set_path(self, path: str | Path) -> None:
        """Choose the file and preview it now."""
        self.path_edit.setText(str(path))
        self.refresh_preview()

    def read_options(self) -> ReadOptions:
        """The reading options chosen in the dialog."""
        return ReadOptions(
            format=self.format_combo.currentText(),
            delimiter=self.delimiter_combo.currentData(),
            quoting=self.quoting_combo.currentData(),
            encoding=self.encoding_combo.currentText().strip() or "utf-8",
            max_cell_chars=self.max_cell_spin.value(),
        )

    def mapping(self) -> ColumnMapping:
        """The column mapping chosen in the dialog."""
        values = {}
        for role, combo in self.role_combos.items():
            text = combo.currentText()
            values[role] = None if text in ("", NONE) else text
        return ColumnMapping(**values)

    def request(self) -> ImportRequest:
        """The import the dialog currently describes."""
        return ImportRequest(
            path=Path(self.path_edit.text().strip()),
            mapping=self.mapping(),
            read_options=self.read_options(),
            options=ImportOptions(
                name=self.name_edit.text().strip() or None,
                split=self.split_edit.text().strip() or "train",
                append_to=self.append_combo.currentData(),
                skip_empty_text=self.skip_empty.isChecked(),
                skip_missing_labels=self.skip_missing.isChecked(),
                labels=tuple(x.strip() for x in self.labels_edit.text().split(",") if x.strip()),
            ),
        )

    def show_error(self, exc: BaseException) -> None:
        """Show ``exc`` in place (below the preview) and let the user adjust and retry."""
        self.set_busy(False)
        if isinstance(exc, CounterbiasError):
            text = f"<b>{exc.title}</b> [{exc.code}]: {_escape(exc.message)}"
            if exc.hint:
                text += f"<br><b>What to do:</b> {_escape(exc.hint)}"
        else:
            text = f"<b>{type(exc).__name__}</b>: {_escape(str(exc))}"
        self.error_label.setText(text)
        self.error_label.show()

    def show_warnings(self, warnings: list[DataWarning]) -> None:
        """Show data warnings (code, message) below the preview; an empty list hides the area."""
        self.warnings = list(warnings)
        if not warnings:
            self.warning_label.clear()
            self.warning_label.hide()
            return
        items = "".join(f"<li><b>[{w.code}]</b> {_escape(w.message)}</li>" for w in warnings)
        self.warning_label.setText(f"<b>Warnings</b> (the import goes ahead; check these):<ul>{items}</ul>")
        self.warning_label.show()

    def clear_error(self) -> None:
        self.error_label.clear()
        self.error_label.hide()

    def set_busy(self, busy: bool) -> None:
        """Disable the Import button while the import job runs."""
        self.import_button.setEnabled(not busy and self._preview is not None)
        self.import_button.setText("Importing…" if busy else "Import")

    # ------------------------------------------------------------------ preview
    def refresh_preview(self) -> None:
        """Re-read the first rows with the current options."""
        text = self.path_edit.text().strip()
        self._preview = None
        self.import_button.setEnabled(False)
        self.show_warnings([])
        if not text:
            return
        try:
            preview = preview_file(Path(text), self.read_options())
        except (CounterbiasError, OSError) as exc:  # named errors: missing file, folder, encoding, …
            self._fill_table([], [])
            self.show_error(exc)
            return
        self.clear_error()
        self._preview = preview
        self._fill_table(preview.header, preview.rows)
        self._set_mapping(preview.header, preview.mapping)
        self.import_button.setEnabled(True)
        if preview.problem is not None:  # further down than the rows shown; the import would stop there
            self.show_error(preview.problem)

    def _fill_table(self, header: list[str], rows: list[dict]) -> None:
        table = self.preview_table
        table.clear()
        table.setColumnCount(len(header))
        table.setRowCount(len(rows))
        table.setHorizontalHeaderLabels(header)
        for r, record in enumerate(rows):
            for c, column in enumerate(header):
                value = record.get(column)
                text = "" if value is None else str(value)
                item = QTableWidgetItem(text[:300].replace("\n", " ⏎ "))
                item.setToolTip(text[:2000])
                table.setItem(r, c, item)
        for c in range(len(header)):
            table.setColumnWidth(c, 320 if header[c] in self._text_like(header) else 110)

    def _text_like(self, header: list[str]) -> set[str]:
        if self._preview is None:
            return set()
        return {v for v in self._preview.mapping.text_columns.values() if v}

    def _set_mapping(self, header: list[str], mapping: ColumnMapping) -> None:
        chosen = mapping.as_dict()
        for role, combo in self.role_combos.items():
            combo.blockSignals(True)
            combo.clear()
            combo.addItem(NONE)
            combo.addItems(header)
            value = chosen.get(role)
            combo.setCurrentText(value if value else NONE)
            combo.blockSignals(False)
        self._mapping_changed()

    def _mapping_changed(self) -> None:
        mapping = self.mapping()
        if self._preview is not None:
            self.show_warnings(self._preview.check(mapping))
        if mapping.task == "pair":
            self.task_label.setText("Task: <b>pairs</b> (premise + hypothesis, e.g. NLI)")
        else:
            self.task_label.setText("Task: <b>single text</b> (e.g. sentiment)")

    def _browse(self) -> None:
        start = str(Path(self.path_edit.text()).parent) if self.path_edit.text() else ""
        path, _ = QFileDialog.getOpenFileName(self, "Import dataset", start, FILE_FILTER)
        if path:
            self.set_path(path)

    def _request(self) -> None:
        if self._preview is None:
            return
        request = self.request()
        try:
            request.mapping.validate(self._preview.header, request.path.name)
        except CounterbiasError as exc:
            self.show_error(exc)
            return
        self.clear_error()
        self.set_busy(True)
        self.importRequested.emit(request)


def show_import_warnings(parent: QWidget | None, dataset: str, warnings: list[DataWarning]) -> QMessageBox:
    """A non-blocking message listing what an import changed or found (already open; returned for tests)."""
    items = "".join(f"<li><b>[{w.code}]</b> {_escape(w.message)}</li>" for w in warnings)
    box = QMessageBox(QMessageBox.Icon.Information, "Imported with warnings",
                      f"<p>{_escape(dataset)} was imported. Check these:</p><ul>{items}</ul>",
                      QMessageBox.StandardButton.Ok, parent)
    box.setTextFormat(Qt.TextFormat.RichText)
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    box.open()
    return box


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\n", "<br>")
