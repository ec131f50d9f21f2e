"""The dialog of *File ▸ Import Demonstration Pairs…*: which columns of a pair file hold the text, the label and
the pairing (a shared group value, or a parent id)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QRadioButton,
    QVBoxLayout,
    QWidget,
)

__all__ = ["DemoPairsDialog"]


class DemoPairsDialog(QDialog):
    """Choose the columns of a pair file; :meth:`columns` gives :func:`~engine.generation.demo_pairs.import_pairs`
    its keyword arguments."""

    def __init__(self, file_name: str, header: Sequence[str], guess: Mapping[str, str | None],
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Import demonstration pairs")
        intro = QLabel(f"<b>{file_name}</b>: human counterfactual pairs. Edit requests show the sentence edits nearest "
                       "to the sentence being edited as examples; candidates you accept join them.")
        intro.setWordWrap(True)

        def combo(key: str) -> QComboBox:
            box = QComboBox()
            box.addItems(list(header))
            if guess.get(key):
                box.setCurrentText(str(guess[key]))
            return box

        self.text, self.label = combo("text_column"), combo("label_column")
        self.group, self.parent_col, self.id_col = combo("group_column"), combo("parent_column"), combo("id_column")
        self.by_group = QRadioButton("Rows sharing a value form a pair, the first the original:")
        self.by_parent = QRadioButton("Each counterfactual row names its original's id:")
        (self.by_parent if guess.get("parent_column") else self.by_group).setChecked(True)
        self.by_group.toggled.connect(self._mode_changed)
        form = QFormLayout()
        form.addRow("Text column:", self.text)
        form.addRow("Label column:", self.label)
        form.addRow(self.by_group)
        form.addRow("    Pair column:", self.group)
        form.addRow(self.by_parent)
        form.addRow("    Parent column:", self.parent_col)
        form.addRow("    Id column:", self.id_col)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Import")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addLayout(form)
        layout.addWidget(buttons)
        self._mode_changed()

    def _mode_changed(self) -> None:
        grouped = self.by_group.isChecked()
        self.group.setEnabled(grouped)
        self.parent_col.setEnabled(not grouped)
        self.id_col.setEnabled(not grouped)

    def columns(self) -> dict[str, str | None]:
        grouped = self.by_group.isChecked()
        return {"text_column": self.text.currentText(), "label_column": self.label.currentText(),
                "group_column": self.group.currentText() if grouped else None,
                "parent_column": None if grouped else self.parent_col.currentText(),
                "id_column": self.id_col.currentText() or "id"}
