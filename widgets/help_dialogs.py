"""The Help menu's sheets: the keyboard shortcuts (read from the window's actions) and a glossary of the
statistics and options the tabs name."""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QTextBrowser, QVBoxLayout, QWidget

__all__ = ["GLOSSARY", "REVIEW_KEYS", "HelpSheet", "glossary_html", "shortcuts_html"]

#: Keys of the candidates table (Counterbias tab) and of the Annotate queue, which are not menu actions.
REVIEW_KEYS: tuple[tuple[str, str], ...] = (
    ("A", "Counterbias tab: accept the current candidate"),
    ("X", "Counterbias tab: reject it"),
    ("E", "Counterbias tab: edit its text (saving accepts it)"),
    ("↑ / ↓", "the previous / next candidate or example"),
)

#: ``(term, what it means)``, in the order the tabs show them.
GLOSSARY: tuple[tuple[str, str], ...] = (
    ("n", "Bias statistics: the number of examples a word (feature) occurs in."),
    ("p̂", "Bias statistics: p̂(label | word), the share of the examples holding the word that carry the label. "
          "With no bias every word would sit at the label's share of the whole dataset."),
    ("z", "Bias statistics: how far p̂ lies from the label's base rate, in standard errors of a binomial with n "
          "trials (Gardner et al. 2021). Words beyond the significance curve of the competency plot are "
          "candidate spurious correlations."),
    ("z-filtering", "A dataset version without the examples that make the most significant words' statistics "
                    "biased (Wu et al.'s z-filter)."),
    ("Principal words (W_p)", "Word importance: the words the ensemble's explanations agree carry the label; "
                              "counterbias generation changes them."),
    ("Spurious words (W_s)", "Word importance: words some member relied on but the vote did not keep, plus your "
                             "own lists (the gender words by default); a counterbias candidate keeps them."),
    ("τ", "Word importance: how many members must vote for a word for it to be principal: a majority (2 of 3 "
          "members, 3 of 4 or 5)."),
    ("z-prior", "Word importance: the default vote rule; rankings averaged across members and methods, blended "
                "with the labels' word z-statistics as a prior."),
    ("IG, LIME, Shapley", "Word importance: three ways to explain one prediction (integrated gradients, local "
                          "linear surrogates, KernelSHAP); a member votes for a word in the top K of a majority of "
                          "them."),
    ("Preset (sample-cpu, top-cpu)", "Training: how much of a member is trained. sample-cpu trains on a sample of "
                                     "rows (minutes on a CPU); top-cpu trains only the top layer and head, so such a "
                                     "member judges flips but does not explain."),
    ("Edit sentences read as original, P ≥", "LLM settings: sentences the sentence reader gives the original "
                                             "label with at least this probability are edited too, even without a "
                                             "principal word."),
    ("Demonstrations per edit", "LLM settings: how many sentence edits of your accepted candidates and imported "
                                "human pairs each edit request is shown, in place of the prompt's invented examples."),
    ("Accept rule", "Counterbias tab: a candidate passes when none of its checks fails (spurious words kept, no "
                    "prompt leak, no sentence still read as the original label…) and every judge member gives the "
                    "target a probability of at least 0.85 (verify --require, --min-member-prob). With a small "
                    "model a ranking aid, not a verdict."),
    ("LFR / SLFR", "Report: the label-flip rate (the share of candidates the ensemble labels with the target) and "
                   "the soft one (the share it no longer labels with the original label), per method."),
    ("Edit distance", "Word-level Levenshtein distance to the original, divided by the longer text's words: 0 for "
                      "the same text; human CAD revisions sit near 0.2."),
    ("Self-BLEU", "Report: how alike the candidates are to each other (lower: more diverse)."),
)


def shortcuts_html(actions: Iterable[QAction], keys: Sequence[tuple[str, str]] = REVIEW_KEYS) -> str:
    """A table of every action that has a shortcut (as this platform writes it) and of ``keys``."""
    rows = []
    for action in actions:
        shortcut = action.shortcut()
        if shortcut.isEmpty() or not action.text():
            continue
        rows.append((shortcut.toString(QKeySequence.SequenceFormat.NativeText), action.text().replace("&", "")))
    rows += list(keys)
    body = "".join(f"<tr><td><b>{html.escape(k)}</b></td><td>{html.escape(v.rstrip('…'))}</td></tr>"
                   for k, v in rows)
    return f"<h3>Keyboard shortcuts</h3><table cellpadding='4'>{body}</table>"


def glossary_html(entries: Sequence[tuple[str, str]] = GLOSSARY) -> str:
    body = "".join(f"<dt><b>{html.escape(term)}</b></dt><dd>{html.escape(text)}</dd>" for term, text in entries)
    return f"<h3>Glossary</h3><dl>{body}</dl>"


class HelpSheet(QDialog):
    """A read-only page of help (HTML) with a Close button."""

    def __init__(self, title: str, text: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.browser = QTextBrowser(self)
        self.browser.setOpenExternalLinks(True)
        self.browser.setHtml(text)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, parent=self)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.browser)
        layout.addWidget(buttons)
        self.resize(560, 520)
