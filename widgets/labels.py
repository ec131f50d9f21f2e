"""Label colours: a stable, colour-blind-friendly palette keyed by label index.

A label's colour depends only on its index in the dataset's label set, so it stays the
same in every view, chart and session. The first seven colours are the Okabe–Ito palette
(distinguishable under the common forms of colour blindness), ordered so that the two or
three labels of typical tasks (sentiment, NLI) get the most distinct hues. Label sets
larger than seven reuse the hues in lighter, then darker shades; views should therefore
always show the label *text* beside the colour.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtGui import QColor

#: Okabe–Ito colours, most distinct first (blue, orange, bluish green, vermillion,
#: sky blue, reddish purple, yellow).
BASE_PALETTE: tuple[str, ...] = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#D55E00",
    "#56B4E9",
    "#CC79A7",
    "#F0E442",
)

#: Colour of a label that is not in the dataset's label set.
UNKNOWN_LABEL_COLOR = "#999999"


def label_color(index: int) -> QColor:
    """Colour of the label at ``index`` in a dataset's label set.

    Parameters
    ----------
    index
        Position of the label in :attr:`engine.store.DatasetInfo.labels`; a negative
        index means "unknown label".

    Returns
    -------
    QColor
        A new colour object (safe to modify).
    """
    if index < 0:
        return QColor(UNKNOWN_LABEL_COLOR)
    base = QColor(BASE_PALETTE[index % len(BASE_PALETTE)])
    cycle = index // len(BASE_PALETTE)
    if cycle == 0:
        return base
    if cycle % 2 == 1:
        return base.lighter(100 + 30 * ((cycle + 1) // 2))
    return base.darker(100 + 30 * (cycle // 2))


def label_color_for(label: str | None, labels: Sequence[str]) -> QColor:
    """Colour of ``label`` within the label set ``labels`` (grey when it is absent)."""
    try:
        index = list(labels).index(label) if label is not None else -1
    except ValueError:
        index = -1
    return label_color(index)


def label_palette(labels: Sequence[str]) -> dict[str, QColor]:
    """Map every label of ``labels`` to its colour."""
    return {label: label_color(i) for i, label in enumerate(labels)}


def contrast_text_color(background: QColor) -> QColor:
    """Black or white, whichever reads better on ``background`` (WCAG relative luminance)."""

    def channel(value: float) -> float:
        return value / 12.92 if value <= 0.03928 else ((value + 0.055) / 1.055) ** 2.4

    luminance = (
        0.2126 * channel(background.redF())
        + 0.7152 * channel(background.greenF())
        + 0.0722 * channel(background.blueF())
    )
    # Contrast with black (L+0.05)/0.05 vs with white 1.05/(L+0.05): equal at L ~ 0.179.
    return QColor("#000000") if luminance > 0.179 else QColor("#FFFFFF")


def tint(color: QColor, alpha: float = 0.25) -> QColor:
    """A translucent copy of ``color`` for cell backgrounds (readable on light and dark themes)."""
    out = QColor(color)
    out.setAlphaF(max(0.0, min(1.0, alpha)))
    return out
