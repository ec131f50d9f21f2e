"""Render a :class:`~engine.evaluation.report.Report` as one self-contained HTML file or as a PDF.

No Qt: the plots are drawn with matplotlib's object API (``Figure`` + the Agg canvas, never
``pyplot``, so no global backend is switched inside the GUI process). The HTML file has its CSS
inline and its plots as base64 PNG ``data:`` URIs, so it opens anywhere with no other file and no
network. The PDF is drawn page by page with matplotlib's ``PdfPages``: text and tables as text,
plots as vector graphics (scatter points rasterised to keep the file small). matplotlib is
imported inside the functions.
"""

from __future__ import annotations

import html
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.evaluation.errors import ReportExportError
from engine.evaluation.report_figures import (
    competency_figure,
    downstream_figure,
    draw_competency,
    draw_downstream,
    draw_status_bars,
    new_figure,
    plain_text,
    png_data_uri,
    status_figure,
)
from engine.evaluation.report import SECTIONS, Report
from engine.io.output import check_output_path, open_output

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["check_target", "competency_figure", "downstream_figure", "plain_text", "render_html", "tables",
           "write_html", "write_pdf", "write_rendered_html"]

TOP_K = 15


# ---------------------------------------------------------------------------- formatting


def _f(x: float, digits: int = 2) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def _pct(x: float) -> str:
    return "–" if x is None or math.isnan(x) else f"{100 * x:.1f}%"


@dataclass(frozen=True)
class Table:
    """A titled table of text cells (what both the HTML and the PDF draw)."""

    key: str
    caption: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    numeric: tuple[bool, ...] = ()


def tables(report: Report, k: int = TOP_K) -> dict[str, list[Table]]:
    """The report's tables by section key, as text cells."""
    delta_head = ("feature", "kind", "label", "n before", "n after", "z before", "z after", "Δz", "Δ|z|")
    num = (False, False, False, True, True, True, True, True, True)

    def delta_rows(rows):
        return tuple((r.feature, r.kind, r.label, f"{r.n_before:,}", f"{r.n_after:,}",
                      _f(r.z_before) + ("*" if r.significant_before else ""),
                      _f(r.z_after) + ("*" if r.significant_after else ""), _f(r.delta_z), _f(r.abs_change))
                     for r in rows)

    totals = report.totals()
    method_rows = [(m.method, f"{m.total:,}", f"{m.accepted:,}", f"{m.rejected:,}", f"{m.undecided:,}",
                    f"{m.failed:,}", f"{m.passing:,}") for m in report.methods]
    if len(report.methods) > 1:
        method_rows.append(("all methods", f"{totals.total:,}", f"{totals.accepted:,}", f"{totals.rejected:,}",
                            f"{totals.undecided:,}", f"{totals.failed:,}", f"{totals.passing:,}"))
    out: dict[str, list[Table]] = {
        "delta-z": [
            Table("biased", f"Features significant in the original (top {k} by z before; * significant)", delta_head,
                  delta_rows(report.biased(k)), num),
            Table("dropped", f"|z| dropped most (top {k}; * significant)", delta_head, delta_rows(report.dropped(k)),
                  num),
            Table("rose", f"|z| rose most (top {k}; * significant)", delta_head, delta_rows(report.rose(k)), num),
        ],
        "candidates": [Table("methods", "Candidates per method and status",
                             ("method", "total", "accepted", "rejected", "undecided", "failed", "pass all checks"),
                             tuple(method_rows), (False,) + (True,) * 6)],
        "reasons": [Table("reasons", "Candidates per failing check (a candidate failing several counts in each)",
                          ("check failed", "candidates", "accepted", "rejected", "undecided"),
                          tuple((r.reason, f"{r.candidates:,}", f"{r.accepted:,}", f"{r.rejected:,}",
                                 f"{r.undecided:,}") for r in report.reasons), (False,) + (True,) * 4)],
        "flip-rates": [Table("flips", "Label-flip rates of the judged candidates",
                             ("group", "judged", "LFR", "SLFR", "spurious words kept"),
                             tuple((f.group, f"{f.judged:,}", _pct(f.lfr), _pct(f.slfr), _pct(f.spurious_kept))
                                   for f in report.flips), (False,) + (True,) * 4)],
        "downstream": [],
        "diversity": [],
    }
    if report.downstream:
        out["downstream"].append(Table(
            "downstream", "Accuracy and macro-F1 (%, mean ± 95% CI over seeds)",
            ("condition", "classifier", "test set", "role", "seeds", "accuracy", "macro-F1", "train rows"),
            tuple((r.condition, r.classifier, r.test_set, r.role, str(len(r.seeds)), r.accuracy.format(),
                   r.macro_f1.format(), f"{r.train_rows:,.0f}") for r in report.downstream),
            (False,) * 4 + (True,) * 4))
    d = report.diversity
    if d is not None:
        out["diversity"].append(Table(
            "diversity", f"{d.pairs:,} accepted edits against their originals",
            ("measure", "value"),
            (("self-BLEU-4 of the edits", _f(d.self_bleu, 3)),
             ("self-BLEU-4 of their originals", _f(d.parent_self_bleu, 3)),
             ("distinct-1 of the edits", _f(d.distinct_1, 3)), ("distinct-2 of the edits", _f(d.distinct_2, 3)),
             ("word edit distance to the original", _f(d.edit_distance, 3))),
            (False, True)))
    return out


def _summary_lines(report: Report) -> list[str]:
    sig_b, sig_a = report.significant_counts()
    changes = report.change_counts()
    totals = report.totals()
    lines = [
        f"Original: {report.dataset.name} ({report.n_original:,} rows, {report.dataset.task} task, labels "
        f"{', '.join(report.dataset.labels)}).",
        f"Augmented: {report.augmented}.",
        f"Features significant for a label: {sig_b:,} before, {sig_a:,} after (Bonferroni z* "
        f"{_f(report.before.z_threshold)} / {_f(report.after.z_threshold)}, α = {report.before.alpha}, n ≥ "
        f"{report.before.min_count}).",
        f"|z| at the over-predicted label: dropped for {changes['dropped']:,} features, rose for "
        f"{changes['rose']:,}, unchanged for {changes['unchanged']:,}.",
        f"Candidates: {totals.total:,} ({totals.accepted:,} accepted, {totals.rejected:,} rejected, "
        f"{totals.undecided:,} undecided, {totals.failed:,} failed to generate).",
    ]
    return lines + list(report.notes)


# ---------------------------------------------------------------------------- HTML

_CSS = """
body { font-family: "DejaVu Sans", Arial, sans-serif; font-size: 13px; color: #222; margin: 24px; max-width: 1200px; }
h1 { font-size: 22px; margin-bottom: 4px; }
h2 { font-size: 17px; margin-top: 28px; border-bottom: 1px solid #ccc; padding-bottom: 3px; }
p.meta { color: #666; margin-top: 0; }
table { border-collapse: collapse; margin: 8px 0 14px 0; }
caption { text-align: left; font-weight: bold; padding: 4px 0; }
th, td { border: 1px solid #ccc; padding: 3px 8px; }
th { background: #eef2f6; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
img { max-width: 100%; }
ul.summary li { margin: 2px 0; }
p.empty { color: #777; font-style: italic; }
"""


def _html_table(table: Table) -> str:
    if not table.rows:
        return f'<p class="empty">{html.escape(table.caption)}: none.</p>'
    numeric = table.numeric or (False,) * len(table.header)
    head = "".join(f"<th>{html.escape(h)}</th>" for h in table.header)
    body = "".join(
        "<tr>" + "".join(f'<td class="num">{html.escape(c)}</td>' if numeric[i] else f"<td>{html.escape(c)}</td>"
                         for i, c in enumerate(row)) + "</tr>"
        for row in table.rows)
    return (f'<table id="{html.escape(table.key)}" border="1" cellspacing="0" cellpadding="3">'
            f"<caption>{html.escape(table.caption)}</caption><tr>{head}</tr>{body}</table>")


def render_html(report: Report, *, dpi: float = 110, max_width_px: int | None = None) -> str:
    """The report as one self-contained HTML document (inline CSS, plots as base64 PNG).

    Parameters
    ----------
    dpi
        Resolution of the plots.
    max_width_px
        Draw each plot at most this wide (a lower resolution for it), e.g. to fit a viewer's width.
    """
    parts = tables(report)
    titles = dict(SECTIONS)
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(report.title)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(report.title)}</h1>",
        f'<p class="meta">Counterbias Studio · built {html.escape(report.created_at)}</p>',
    ]

    def section(key: str, body: str) -> None:
        out.append(f'<h2 id="{key}">{html.escape(titles[key])}</h2>{body}')

    section("summary", '<ul class="summary">' + "".join(f"<li>{html.escape(s)}</li>"
                                                       for s in _summary_lines(report)) + "</ul>")
    section("competency", f'<img alt="competency plot" src="{png_data_uri(competency_figure(report), dpi, max_width_px)}">'
            "<p>Each point is a feature: its count n and the share of its examples with the label. Blue: the "
            "original; orange: the augmented version; dashed: the Bonferroni significance curve of each; arrows: "
            "where the most biased features of the original moved.</p>")
    section("delta-z", "".join(_html_table(t) for t in parts["delta-z"]))
    status = status_figure(report)
    section("candidates", "".join(_html_table(t) for t in parts["candidates"])
            + (f'<img alt="candidates per method" src="{png_data_uri(status, dpi, max_width_px)}">' if status else ""))
    section("reasons", "".join(_html_table(t) for t in parts["reasons"]))
    section("flip-rates", "".join(_html_table(t) for t in parts["flip-rates"])
            if report.flips else '<p class="empty">No candidate has been judged by the ensemble.</p>')
    down = downstream_figure(report)
    section("downstream", "".join(_html_table(t) for t in parts["downstream"])
            + (f'<img alt="downstream accuracy" src="{png_data_uri(down, dpi, max_width_px)}">' if down else
               '<p class="empty">No downstream evaluation is stored in the project (run <code>counterbias evaluate'
               "</code>).</p>"))
    section("diversity", "".join(_html_table(t) for t in parts["diversity"])
            if parts["diversity"] else '<p class="empty">Diversity needs at least two accepted candidates.</p>')
    settings = report.config.to_dict()
    out.append(f'<p class="meta">Statistics settings: {html.escape(str(settings))}</p>')
    out.append("</body></html>")
    return "\n".join(out)


def check_target(path: str | Path, *, project: str | Path | None = None) -> Path:
    """Fail early (before a report is built) when ``path`` cannot or must not be written.

    Raises
    ------
    engine.errors.OutputPathError
        ``path`` is ``project`` (the open project file), its side files or ``_files`` folder (or
        inside it), another project, a folder, a device, FIFO or socket, or a symbolic link; see
        :func:`engine.io.output.check_output_path`.
    ReportExportError
        When the folder is missing or not writable.
    """
    path = Path(path)
    check_output_path(path, project=project)
    if not path.parent.is_dir():
        raise ReportExportError(f"The folder {str(path.parent)!r} does not exist.",
                                "Choose an existing folder for the report.")
    if not os.access(path.parent, os.W_OK):
        raise ReportExportError(f"Cannot write into {str(path.parent)!r}.", "Choose a folder you can write to.")
    return path


def _report_error(exc: OSError, target: Path, part: Path | None) -> ReportExportError:
    if part is None:
        return ReportExportError(f"Cannot write into {str(target.parent)!r}: {exc.strerror}.",
                                 "Choose a folder you can write to.")
    return ReportExportError(f"Cannot write {str(target)!r}: {exc.strerror}.", "Check the path and the free space.")


def _atomic_write(path: str | Path, write: Callable[[Any], None], mode: str,
                  project: str | Path | None = None) -> Path:
    """Check ``path`` and write it through :func:`engine.io.output.open_output` (atomic, umask respected)."""
    path = check_target(path, project=project)
    with open_output(path, mode, project=project, what="the report", on_error=_report_error) as f:
        write(f)
    return path


def write_html(report: Report, path: str | Path, *, dpi: int = 110, project: str | Path | None = None) -> Path:
    """Write :func:`render_html` to ``path`` (atomically) and return it.

    Raises
    ------
    engine.errors.OutputPathError
        ``path`` must not be written (see :func:`check_target`); checked before rendering.
    ReportExportError
        When the folder is missing or not writable.
    """
    check_target(path, project=project)
    return write_rendered_html(render_html(report, dpi=dpi), path, project=project)


def write_rendered_html(text: str, path: str | Path, *, project: str | Path | None = None) -> Path:
    """Write HTML already made by :func:`render_html` to ``path`` (atomically).

    Raises
    ------
    engine.errors.OutputPathError
        ``path`` must not be written (see :func:`check_target`).
    ReportExportError
        When the folder is missing or not writable.
    """
    return _atomic_write(path, lambda f: f.write(text), "w", project)


# ---------------------------------------------------------------------------- PDF

_PAGE = (8.27, 11.69)  # A4 portrait, inches
_MARGIN = 0.6
_LINE = 0.2  # inches per text line / table row


class _Pages:
    """A tiny flow layout over A4 matplotlib figures."""

    def __init__(self, pdf: Any, title: str) -> None:
        self.pdf = pdf
        self.title = title
        self.page = 0
        self.fig: Figure | None = None
        self.y = 0.0

    def _new(self) -> None:
        self.finish()
        self.page += 1
        self.fig = new_figure(*_PAGE)
        self.fig.text(0.5, 0.25 / _PAGE[1], plain_text(f"{self.title} — page {self.page}"), ha="center", fontsize=7,
                      color="#777777")
        self.y = _PAGE[1] - _MARGIN

    def finish(self) -> None:
        if self.fig is not None:
            self.pdf.savefig(self.fig)
            self.fig = None

    def need(self, inches: float) -> None:
        if self.fig is None or self.y - inches < _MARGIN:
            self._new()

    def text(self, s: str, size: float = 9, bold: bool = False, color: str = "#222222", wrap: int = 110) -> None:
        import textwrap

        for line in textwrap.wrap(s, wrap) or [""]:
            self.need(_LINE * size / 9)
            self.fig.text(_MARGIN / _PAGE[0], self.y / _PAGE[1], plain_text(line), fontsize=size, va="top",
                          fontweight="bold" if bold else "normal", color=color)
            self.y -= _LINE * size / 9 * 1.15

    def heading(self, s: str) -> None:
        self.need(0.9)
        self.y -= 0.12
        self.text(s, 12, bold=True)
        self.y -= 0.05

    def table(self, table: Table) -> None:
        from matplotlib.lines import Line2D

        if not table.rows:
            self.text(f"{table.caption}: none.", color="#777777")
            return
        self.need(_LINE * 3)
        self.text(table.caption, 9, bold=True)
        limit = 44
        cells = [tuple(c if len(c) <= limit else c[: limit - 1] + "…" for c in row) for row in table.rows]
        widths = [max(len(h), *(len(r[i]) for r in cells)) + 2 for i, h in enumerate(table.header)]
        scale = (_PAGE[0] - 2 * _MARGIN) / max(sum(widths), 1)
        char = min(scale, 0.075)
        numeric = table.numeric or (False,) * len(table.header)
        xs = [_MARGIN]
        for w in widths[:-1]:
            xs.append(xs[-1] + w * char)
        size = min(8.0, char / 0.075 * 8)

        def row(values: Sequence[str], bold: bool = False) -> None:
            self.need(_LINE)
            for i, v in enumerate(values):
                right = numeric[i]
                x = (xs[i] + (widths[i] - 1) * char) if right else xs[i]
                self.fig.text(x / _PAGE[0], self.y / _PAGE[1], plain_text(v), fontsize=size, va="top",
                              ha="right" if right else "left", fontweight="bold" if bold else "normal")
            self.y -= _LINE

        row(table.header, bold=True)
        line_y = (self.y + _LINE * 0.2) / _PAGE[1]
        self.fig.add_artist(Line2D([_MARGIN / _PAGE[0], (xs[-1] + widths[-1] * char) / _PAGE[0]], [line_y, line_y],
                                   color="#999999", linewidth=0.6))
        for values in cells:
            row(values)
        self.y -= _LINE * 0.5

    def plot(self, height: float, draw: Callable[[Figure, Sequence[float]], None],
             inset: Sequence[float] = (0.55, 0.45, 0.15, 0.6)) -> None:
        """Reserve ``height`` inches and let ``draw(fig, rect)`` draw into that band.

        ``inset`` is (left, bottom, right, top) room in inches kept for tick labels and titles.
        """
        self.need(height)
        left, bottom, right, top = inset
        w = _PAGE[0] - 2 * _MARGIN
        rect = ((_MARGIN + left) / _PAGE[0], (self.y - height + bottom) / _PAGE[1],
                (w - left - right) / _PAGE[0], (height - bottom - top) / _PAGE[1])
        draw(self.fig, rect)
        self.y -= height


def write_pdf(report: Report, path: str | Path, *, project: str | Path | None = None) -> Path:
    """Write the report as a PDF (A4 pages: summary, plots, tables) to ``path`` (atomically).

    Raises
    ------
    engine.errors.OutputPathError
        ``path`` must not be written (see :func:`check_target`).
    ReportExportError
        When the folder is missing or not writable.
    """

    def write(f: Any) -> None:
        from matplotlib.backends.backend_pdf import PdfPages

        parts = tables(report)
        titles = dict(SECTIONS)
        with PdfPages(f, metadata={"Title": report.title, "Creator": "Counterbias Studio"}) as pdf:
            pages = _Pages(pdf, report.title)
            pages.text(report.title, 15, bold=True)
            pages.text(f"Counterbias Studio · built {report.created_at}", 8, color="#666666")
            pages.heading(titles["summary"])
            for line in _summary_lines(report):
                pages.text("• " + line)
            pages.heading(titles["competency"])
            pages.plot(4.2, lambda fig, rect: draw_competency(fig, report, rect), inset=(0.55, 0.45, 0.15, 0.8))
            pages.text("Blue: the original; orange: the augmented version; dashed: each one's significance "
                       "curve; arrows: where the most biased features of the original moved.", 8, color="#555555")
            pages.heading(titles["delta-z"])
            for t in parts["delta-z"]:
                pages.table(t)
            pages.heading(titles["candidates"])
            for t in parts["candidates"]:
                pages.table(t)
            if report.methods:
                pages.plot(0.9 + 0.3 * len(report.methods),
                           lambda fig, rect: draw_status_bars(fig, report, rect), inset=(1.3, 0.45, 0.3, 0.35))
            pages.heading(titles["reasons"])
            for t in parts["reasons"]:
                pages.table(t)
            pages.heading(titles["flip-rates"])
            if report.flips:
                for t in parts["flip-rates"]:
                    pages.table(t)
            else:
                pages.text("No candidate has been judged by the ensemble.", color="#777777")
            pages.heading(titles["downstream"])
            if report.downstream:
                for t in parts["downstream"]:
                    pages.table(t)
                pages.plot(3.2, lambda fig, rect: draw_downstream(fig, report, rect), inset=(0.55, 0.45, 0.15, 0.35))
            else:
                pages.text("No downstream evaluation is stored in the project (run 'counterbias evaluate').",
                           color="#777777")
            pages.heading(titles["diversity"])
            if parts["diversity"]:
                for t in parts["diversity"]:
                    pages.table(t)
            else:
                pages.text("Diversity needs at least two accepted candidates.", color="#777777")
            pages.finish()

    return _atomic_write(path, write, "wb", project)
