"""Issue 52, item 8: a ``$`` in a label or dataset name is text in the report, never matplotlib math markup.

``under $5_or_$10`` holds two ``$``: matplotlib read the text between them as mathtext, failed to
parse ``5_or_`` and the report crashed (exit 1, a traceback) for both HTML and PDF.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from engine.counterbias.review import set_decision
from engine.evaluation.report import build_report
from engine.evaluation.report_render import competency_figure, plain_text, status_figure
from engine.io import ImportOptions, import_file
from engine.store import ExampleQuery, Project
from tests.reliability.integrity import assert_unchanged, snapshot
from tests.reliability.storage_fs import cli

NAME = "under $5_or_$10"
LABEL = "under $5_or_$10"
OTHER = "over $10"
NOW = "2026-01-01T00:00:00"


def _project(path: Path) -> Path:
    """A small project whose dataset, one label and one method hold ``$`` signs, with decided candidates."""
    pos = [f"a {w} film for $5" for w in ("great", "fine", "warm", "funny", "sweet", "clever", "gentle", "lovely")]
    neg = [f"a {w} film for $10" for w in ("dull", "boring", "awful", "weak", "poor", "silly", "flat", "bland")]
    source = path.parent / "cheap.csv"
    source.write_text("text,label\n" + "".join(f"{t},{LABEL}\n" for t in pos) + "".join(f"{t},{OTHER}\n" for t in neg),
                      encoding="utf-8")
    with Project.create(path) as project:
        ds = import_file(project, source, options=ImportOptions(name=NAME, split="train")).dataset
        ids = [int(i) for i in project.example_ids(ExampleQuery(ds.id))]

        def add(conn: sqlite3.Connection) -> list[int]:
            run = conn.execute("INSERT INTO runs (kind, dataset_id, started_at, status) VALUES ('generate', ?, ?, "
                               "'done')", (ds.id, NOW)).lastrowid
            out = []
            for i, text in enumerate(("a dull film for $5", "a weak film for $5", "a poor film for $5")):
                meta = {"original_label": LABEL, "generated": {"text": text}}
                scores = {"judge": {"flipped": True, "left_original": True, "target_prob": 0.8}, "passes": True}
                out.append(int(conn.execute(
                    "INSERT INTO candidates (run_id, example_id, method, target_label, text, scores, meta, status, "
                    "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'proposed', ?)",
                    (run, ids[i], "$x$ edit", OTHER, text, json.dumps(scores), json.dumps(meta), NOW)).lastrowid))
            return out

        for cid in project.writer.run(add):
            set_decision(project, cid, "accepted")
    return path


@pytest.fixture(scope="module")
def proj(tmp_path_factory) -> Path:
    return _project(tmp_path_factory.mktemp("mathtext") / "cheap.cbproj")


def test_item08_report_with_dollar_signs_renders_html_and_pdf(proj, tmp_path):
    html, pdf = tmp_path / "r.html", tmp_path / "r.pdf"
    before = snapshot(proj, root=proj.parent)
    done = cli("report", str(proj), "--dataset", NAME, "--html", str(html), "--pdf", str(pdf), "--no-diversity")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert_unchanged(before, snapshot(proj, root=proj.parent))
    text = html.read_text(encoding="utf-8")
    assert NAME in text and OTHER in text and "$x$ edit" in text  # literally, not as math
    assert pdf.read_bytes().startswith(b"%PDF")
    pdfium = pytest.importorskip("pypdfium2")
    doc = pdfium.PdfDocument(str(pdf))
    try:
        words = "".join(doc[i].get_textpage().get_text_range() for i in range(len(doc)))
    finally:
        doc.close()
    assert NAME in words and "$x$ edit" in words and "\\$" not in words


def test_item08_figure_texts_are_never_mathtext(proj):
    with Project.open(proj, readonly=True) as project:
        report = build_report(project, NAME, diversity=False)
    for fig in (competency_figure(report), status_figure(report)):
        fig.canvas.draw()  # parsing math markup would fail here
        texts = [t for t in fig.findobj(lambda a: hasattr(a, "_preprocess_math")) if t.get_text()]
        shown = {t._preprocess_math(t.get_text()) for t in texts}
        data = {s for s, math in shown if not math}
        assert any(LABEL in s for s in data) or any("$x$ edit" in s for s in data)
        assert all(not math for s, math in shown if "$5_or_$10" in s or "$x$" in s)


@pytest.mark.parametrize("raw", ["under $5_or_$10", "$x$", "a \\$ b", "$", "plain", "back\\slash $a$"])
def test_item08_plain_text_is_drawn_as_written(raw):
    from matplotlib.text import Text

    text = Text(0, 0, plain_text(raw))
    assert text._preprocess_math(text.get_text()) == (raw, False)


def test_item08_simulation_plot_with_dollar_signs_is_drawn(tmp_path):
    from engine.active.simulation import SimulationResult

    result = SimulationResult(dataset=NAME, learner="tfidf-lr", strategies=("$x$ first",), shots=(4, 8), seeds=(0,),
                              cells=(), computed=0, skipped=0, pool_size=10, test_size=4, run_id=None,
                              labels=(LABEL, OTHER))
    png = result.plot(tmp_path / "curve.png")
    assert png.read_bytes().startswith(b"\x89PNG")
    svg = result.plot(tmp_path / "curve.svg")
    assert "<svg" in svg.read_text(encoding="utf-8")
