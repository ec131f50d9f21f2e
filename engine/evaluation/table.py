"""The result table: mean ± 95% CI over seeds per condition × classifier × test set."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from engine.evaluation.intervals import MeanCI, mean_ci
from engine.evaluation.results_store import CellResult

__all__ = ["TableRow", "format_table", "summarise", "write_csv"]


@dataclass(frozen=True)
class TableRow:
    """One cell of the table.

    Attributes
    ----------
    condition, classifier, test_set, role
        What was trained and where it was tested.
    accuracy, macro_f1
        Mean and confidence interval over seeds.
    seeds
        The seeds behind it.
    n
        Test rows.
    train_rows
        Mean training rows over the seeds.
    """

    condition: str
    classifier: str
    test_set: str
    role: str
    accuracy: MeanCI
    macro_f1: MeanCI
    seeds: tuple[int, ...]
    n: int
    train_rows: float


def summarise(cells: Sequence[CellResult], level: float = 0.95) -> list[TableRow]:
    """Group cells by (condition, classifier, test set) in first-seen order and average over seeds."""
    groups: dict[tuple[str, str, str], list[CellResult]] = {}
    for c in cells:
        groups.setdefault((c.condition, c.classifier, c.test_set), []).append(c)
    rows = []
    for (condition, classifier, test_set), group in groups.items():
        group = sorted(group, key=lambda c: c.seed)
        rows.append(TableRow(
            condition, classifier, test_set, group[0].role,
            mean_ci([c.accuracy for c in group], level), mean_ci([c.macro_f1 for c in group], level),
            tuple(c.seed for c in group), group[0].n, sum(c.train_rows for c in group) / len(group),
        ))
    return rows


def format_table(rows: Sequence[TableRow]) -> str:
    """A plain-text pivot: one line per (condition, classifier), one column per test set (accuracy %)."""
    tests = list(dict.fromkeys(r.test_set for r in rows))
    lines = {}
    for r in rows:
        lines.setdefault((r.condition, r.classifier), {})[r.test_set] = r.accuracy.format()
    head = ["condition", "classifier", *tests]
    body = [[c, k, *(cells.get(t, "-") for t in tests)] for (c, k), cells in lines.items()]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    out = ["  ".join(str(x).ljust(w) for x, w in zip(line, widths)) for line in [head, *body]]
    return "\n".join(out)


def write_csv(rows: Sequence[TableRow], path: str | Path, *, project: str | Path | None = None) -> None:
    """One CSV line per table row: means, CI bounds and half-widths (fractions, not %).

    Written atomically by :func:`engine.io.output.open_output`, which refuses ``project`` (the
    open project file), its side files and folder, any other project, a folder, a device, FIFO
    or link (:class:`~engine.errors.OutputPathError`).
    """
    from engine.io.output import open_output

    with open_output(path, project=project, what="the evaluation CSV", newline="") as f:
        w = csv.writer(f)
        w.writerow(["condition", "classifier", "test_set", "role", "seeds", "n_test", "train_rows", "accuracy_mean",
                    "accuracy_ci95", "macro_f1_mean", "macro_f1_ci95"])
        for r in rows:
            w.writerow([r.condition, r.classifier, r.test_set, r.role, " ".join(map(str, r.seeds)), r.n,
                        round(r.train_rows, 1), r.accuracy.mean, r.accuracy.half_width, r.macro_f1.mean,
                        r.macro_f1.half_width])
