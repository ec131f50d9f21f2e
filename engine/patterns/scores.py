"""How well a pattern picks out a label: precision, recall and F1 over labelled examples."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ScoredPattern", "score_hits"]


@dataclass(frozen=True)
class ScoredPattern:
    """A pattern and how well it picks out a label.

    Attributes
    ----------
    pattern
        The pattern, written in the pattern language.
    label
        The label it stands for.
    precision, recall, f1
        Over the examples it was scored on.
    matched, matched_label
        Examples it matches, and of those, examples of ``label``.
    """

    pattern: str
    label: str
    precision: float
    recall: float
    f1: float
    matched: int
    matched_label: int

    def to_dict(self) -> dict[str, object]:
        return {"pattern": self.pattern, "label": self.label, "precision": self.precision, "recall": self.recall,
                "f1": self.f1, "matched": self.matched, "matched_label": self.matched_label}


def score_hits(texts: set[int], is_label: np.ndarray, n_label: int) -> tuple[float, float, float, int, int]:
    """Precision, recall, F1, matched and matched-with-the-label for the matched example indices ``texts``.

    Examples
    --------
    >>> score_hits({0, 1, 2}, np.array([True, True, False, True]), 3)
    (0.6666666666666666, 0.6666666666666666, 0.6666666666666666, 3, 2)
    """
    matched = len(texts)
    hit = int(sum(bool(is_label[t]) for t in texts))
    precision = hit / matched if matched else 0.0
    recall = hit / n_label if n_label else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1, matched, hit
