"""A sentence with its principal and spurious words highlighted.

Principal words (label-deciding, voted by a majority of diverse models) are shaded blue,
spurious words (important to only some models, or from the user's lists) vermillion — the
Okabe–Ito pair, distinguishable with the common colour-vision deficiencies. The shade's
intensity is the share of members that voted for the word; user-list words are also
underlined. The text is escaped: data never becomes markup.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence

from PySide6.QtWidgets import QTextBrowser, QWidget

PRINCIPAL_RGB = (0, 114, 178)
SPURIOUS_RGB = (213, 94, 0)
MIN_ALPHA = 0.25


def highlight_html(
    text: str,
    spans: Sequence[tuple[int, int, str]],
    strength: Mapping[tuple[int, int], float] | None = None,
    *,
    underline: set[tuple[int, int]] | None = None,
) -> str:
    """HTML for ``text`` with ``(start, end, category)`` spans shaded by category and strength.

    Parameters
    ----------
    text
        The plain text.
    spans
        Non-overlapping character spans with category ``"principal"`` or ``"spurious"``.
    strength
        Span -> value in [0, 1] (share of members); missing spans get full strength.
    underline
        Spans to underline (user-list words).
    """
    strength = strength or {}
    underline = underline or set()
    out: list[str] = []
    pos = 0
    for start, end, category in sorted(spans):
        if start < pos:
            continue
        out.append(_escape(text[pos:start]))
        rgb = PRINCIPAL_RGB if category == "principal" else SPURIOUS_RGB
        alpha = max(MIN_ALPHA, min(1.0, strength.get((start, end), 1.0)))
        style = f"background-color: rgba({rgb[0]}, {rgb[1]}, {rgb[2]}, {alpha:.2f});"
        if alpha > 0.6:
            style += " color: white;"
        if (start, end) in underline:
            style += " text-decoration: underline;"
        title = f"{category} ({alpha:.0%} of members)"
        out.append(f'<span style="{style}" title="{title}">{_escape(text[start:end])}</span>')
        pos = end
    out.append(_escape(text[pos:]))
    return "".join(out)


def _escape(text: str) -> str:
    return html.escape(text).replace("\n", "<br>")


class SentenceView(QTextBrowser):
    """Read-only view of one text field with W_p / W_s highlighting."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.setObjectName("sentenceView")
        self._html = ""

    def show_text(self, fields: Sequence[tuple[str, str, list[tuple[int, int, str]], dict, set]]) -> None:
        """Show ``(title, text, spans, strength, underline)`` for each text field."""
        parts = []
        for title, text, spans, strength, underline in fields:
            heading = f"<p style='color:#555; margin-bottom:2px'><b>{html.escape(title)}</b></p>" if title else ""
            parts.append(heading + f"<p style='font-size:12pt; line-height:150%'>"
                         f"{highlight_html(text, spans, strength, underline=underline)}</p>")
        legend = (
            f"<p style='color:#555'>"
            f"<span style='background-color: rgb{PRINCIPAL_RGB}; color: white'>&nbsp;principal&nbsp;</span> "
            f"<span style='background-color: rgb{SPURIOUS_RGB}; color: white'>&nbsp;spurious&nbsp;</span> "
            f"— shade = share of members voting; underlined = from your word lists</p>"
        )
        self._html = "".join(parts) + legend
        self.setHtml(self._html)

    def clear_text(self, message: str = "") -> None:
        self._html = ""
        self.setPlainText(message)

    @property
    def html_source(self) -> str:
        """The HTML last shown (for tests)."""
        return self._html
