"""Dialog for z-filtering (Wu et al. 2022): plain, conditional, or a Z-Aug / Par-Z / Seq-Z preset."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QSpinBox,
    QWidget,
)

from engine.stats import ZFilterConfig
from engine.stats.zfilter import auto_batch_size
from engine.store import DatasetInfo

MODES = (
    ("plain", "Z(D): filter this dataset"),
    ("conditional", "Z(D | seed): filter this dataset, starting from a seed dataset's statistics"),
    ("z-aug", "Z-Aug: seed ∪ Z(D | seed)"),
    ("par-z", "Par-Z: Z(seed) ∪ Z(D)"),
    ("seq-z", "Seq-Z: Z(seed) ∪ Z(D | Z(seed))"),
)


@dataclass(frozen=True)
class ZFilterRequest:
    """What the user asked for."""

    mode: str
    dataset_id: int
    seed_id: int | None
    config: ZFilterConfig
    name: str | None


class ZFilterDialog(QDialog):
    """Choose the z-filtering mode and settings for ``dataset`` (``D`` or ``D′``)."""

    def __init__(self, dataset: DatasetInfo, datasets: list[DatasetInfo], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"z-filter {dataset.name}")
        self.dataset = dataset
        self.mode = QComboBox()
        for key, text in MODES:
            self.mode.addItem(text, key)
        self.seed = QComboBox()
        for d in datasets:
            if d.id != dataset.id and d.task == dataset.task and set(d.labels) == set(dataset.labels):
                self.seed.addItem(d.name, d.id)
        defaults = ZFilterConfig()
        self.k = QSpinBox(minimum=1, maximum=10_000, value=defaults.k)
        self.batch = QSpinBox(minimum=0, maximum=10_000_000, singleStep=1000, value=0)
        self.batch.setSpecialValueText(f"auto ({auto_batch_size(dataset.row_count):,} rows)")
        self.min_count = QSpinBox(minimum=1, maximum=1_000_000, value=defaults.min_count)
        self.significant_only = QCheckBox("only features above the Bonferroni threshold join B_Z(l)")
        self.name = QLineEdit(placeholderText="default: derived from the dataset names")
        self.note = QLabel(
            "Each batch is accepted against the biased features B_Z(l) — the top-k features by z for "
            "each label — of the data accepted so far; the counts grow incrementally."
        )
        self.note.setWordWrap(True)
        form = QFormLayout(self)
        form.addRow("Mode", self.mode)
        form.addRow("Seed / D0", self.seed)
        form.addRow("top-k per label", self.k)
        form.addRow("batch size", self.batch)
        form.addRow("min count", self.min_count)
        form.addRow(self.significant_only)
        form.addRow("New dataset name", self.name)
        form.addRow(self.note)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)
        self.ok_button = buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.mode.currentIndexChanged.connect(self._mode_changed)
        self._mode_changed()

    def _mode_changed(self) -> None:
        needs_seed = self.mode.currentData() != "plain"
        self.seed.setEnabled(needs_seed)
        self.ok_button.setEnabled(not needs_seed or self.seed.count() > 0)

    def request(self) -> ZFilterRequest:
        """The filtering described by the dialog."""
        mode = self.mode.currentData()
        return ZFilterRequest(
            mode=mode,
            dataset_id=self.dataset.id,
            seed_id=self.seed.currentData() if mode != "plain" else None,
            config=ZFilterConfig(
                k=self.k.value(), batch_size=self.batch.value() or auto_batch_size(self.dataset.row_count),
                min_count=self.min_count.value(),
                significant_only=self.significant_only.isChecked(),
            ),
            name=self.name.text().strip() or None,
        )
