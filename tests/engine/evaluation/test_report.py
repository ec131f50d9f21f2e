"""The before/after report on a small real project: its figures, the HTML and PDF files, the CLI verb."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from engine.cli import main
from engine.counterbias import build_augmented_dataset
from engine.errors import Cancelled
from engine.evaluation.errors import NothingToReportError, ReportError, ReportExportError
from engine.evaluation.report import SECTIONS, build_report, failing_checks
from engine.evaluation.report_figures import AFTER_COLOR, BEFORE_COLOR
from engine.evaluation.report_render import render_html, write_html, write_pdf
from engine.progress import CancelToken
from engine.store import Project
from tests.engine.evaluation.report_project import build_report_project


@pytest.fixture(scope="module")
def proj(tmp_path_factory):
    return build_report_project(tmp_path_factory.mktemp("report") / "report.cbproj")


@pytest.fixture(scope="module")
def report(proj):
    with Project.open(proj, readonly=True) as p:
        return build_report(p, "reviews")


def test_counts_flip_rates_and_planted_feature(report):
    assert (report.n_original, report.n_added) == (28, 4)
    assert report.augmented == "originals + 4 accepted candidates"
    methods = {m.method: m for m in report.methods}
    assert (methods["coba"].total, methods["coba"].accepted, methods["coba"].rejected, methods["coba"].undecided,
            methods["coba"].failed, methods["coba"].passing) == (4, 3, 1, 0, 0, 2)
    assert (methods["edit"].total, methods["edit"].accepted, methods["edit"].undecided,
            methods["edit"].failed) == (3, 1, 1, 1)
    totals = report.totals()
    assert (totals.total, totals.accepted, totals.rejected, totals.undecided, totals.failed) == (7, 4, 1, 1, 1)
    # reasons: the judge's fields, except for the candidate carrying named verdicts (fluency fails there)
    reasons = {r.reason: (r.candidates, r.accepted, r.rejected, r.undecided) for r in report.reasons}
    assert reasons == {"label_flip": (2, 1, 1, 0), "spurious_kept": (1, 0, 1, 0), "fluency": (1, 1, 0, 0),
                       "(all checks pass)": (3, 2, 0, 1)}
    flips = {f.group: f for f in report.flips}
    assert flips["coba"].judged == 4 and flips["coba"].lfr == 0.5 and flips["coba"].slfr == 0.75
    assert flips["edit"].judged == 2 and flips["edit"].lfr == 1.0  # the failed slot is not judged
    assert flips["accepted only"].judged == 4 and flips["accepted only"].lfr == 0.75
    # the planted word: only in positive rows before; four accepted negative edits keep it
    row = report.delta_of("spielberg")
    assert row.label == "pos" and (row.n_before, row.n_after) == (8, 12)
    assert row.z_before > 2.5 and row.delta_z < -1.5 and row.abs_change < 0
    assert report.dropped(3)[0].abs_change <= row.abs_change
    assert all(r.abs_change > 0 for r in report.rose())
    counts = report.change_counts()
    assert sum(counts.values()) == len(report.delta) == int(report.before.tested.sum())
    # the stored tf-idf evaluation (one condition, two seeds) and the accepted edits' diversity
    assert [(r.condition, r.test_set, r.seeds) for r in report.downstream] == [("original", "heldout", (0, 1))]
    assert report.diversity is not None and report.diversity.pairs == 4
    assert 0 < report.diversity.edit_distance < 1
    assert json.loads(json.dumps(report.summary()))["candidates"]["accepted"] == 4


def test_failing_checks_reads_verdicts_defensively():
    assert failing_checks({"verdicts": {"a": {"status": "FAIL"}, "b": {"passed": False}, "c": {"status": "pass"},
                                        "d": True, "e": "warn", "f": {"status": "rejected", "reason": "r"}}}) == [
        "a", "b", "f"]
    assert failing_checks({"verdicts": {}, "judge": {"flipped": True}, "spurious_kept": False}) == ["spurious_kept"]
    assert failing_checks({"judge": {"flipped": True}, "passes": False}) == ["filter"]
    assert failing_checks({"judged_text_sha1": "x"}) is None


def test_stored_augmented_version_matches_and_errors(proj, tmp_path):
    path = tmp_path / "copy.cbproj"
    path.write_bytes(proj.read_bytes())
    with Project.open(path) as p:
        version = build_augmented_dataset(p, p.dataset("reviews").id).dataset
        stored = build_report(p, version.name, diversity=False)  # an augmented version stands for itself
        in_memory = build_report(p, "reviews", diversity=False)
        assert stored.dataset.name == "reviews" and stored.n_added == 4 and version.name in stored.augmented
        assert stored.delta_of("spielberg") == in_memory.delta_of("spielberg")
        assert stored.diversity is None
        with pytest.raises(NothingToReportError) as err:
            build_report(p, "heldout")
        assert err.value.code == "CB921"
        with pytest.raises(ReportError):
            build_report(p, "reviews", augmented_id="reviews")
        token = CancelToken()
        token.cancel()
        with pytest.raises(Cancelled):
            build_report(p, "reviews", cancel=token)


def test_html_is_self_contained_and_has_every_section(report, tmp_path):
    text = render_html(report)
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", text, re.I)
    assert "url(" not in text and "@import" not in text and "<script" not in text.lower()
    for key, title in SECTIONS:
        assert f'id="{key}"' in text
    assert len(re.findall(r'<img [^>]*src="data:image/png;base64,', text)) == 3  # competency, status, downstream
    assert "spielberg" in text and "&lt;null&gt;" in text and "<null>" not in text  # cells are escaped
    out = write_html(report, tmp_path / "r.html")
    assert out.read_text(encoding="utf-8") == text
    with pytest.raises(ReportExportError):
        write_html(report, tmp_path / "missing" / "r.html")
    assert not list(tmp_path.glob(".*.part"))


def test_pdf_renders_pages_with_both_versions_drawn(report, tmp_path):
    pdfium = pytest.importorskip("pypdfium2")
    path = write_pdf(report, tmp_path / "r.pdf")
    assert path.read_bytes().startswith(b"%PDF")
    pdf = pdfium.PdfDocument(str(path))
    assert len(pdf) >= 2
    first = np.asarray(pdf[0].render(scale=2.0).to_pil().convert("RGB")).astype(int)
    ink = (first.sum(axis=2) < 720).mean()
    assert ink > 0.01  # not blank

    def has(color: str) -> bool:  # drawn pure (curves, legend) or half-transparent on white (points)
        rgb = np.array([int(color[i:i + 2], 16) for i in (1, 3, 5)])
        return any(bool((np.abs(first - c).sum(axis=2) < 40).sum() > 10) for c in (rgb, (rgb + 255) / 2))

    assert has(BEFORE_COLOR) and has(AFTER_COLOR)  # the original and the augmented version are both drawn
    pdf.close()


def test_cli_report(proj, tmp_path, capsys):
    html, pdf = tmp_path / "out.html", tmp_path / "out.pdf"
    assert main(["-q", "report", str(proj), "--dataset", "reviews", "--html", str(html), "--pdf", str(pdf),
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["candidates"]["accepted"] == 4 and out["written"] == [str(html), str(pdf)]
    assert html.stat().st_size > 10_000 and pdf.read_bytes().startswith(b"%PDF")
    assert main(["-q", "report", str(proj), "--dataset", "heldout"]) == 3
    assert "CB921" in capsys.readouterr().err
    assert main(["-q", "report", str(proj), "--dataset", "nope"]) == 3
    assert main(["-q", "report", str(proj), "--dataset", "reviews", "--pdf", str(tmp_path / "no" / "x.pdf")]) == 3
    assert "CB922" in capsys.readouterr().err


def test_pair_task_with_three_labels(tmp_path):
    import sqlite3

    from engine.counterbias.review import set_decision
    from engine.io import ImportOptions, import_file
    from engine.store import ExampleQuery

    rows = [(f"a man plays {x}", f"nobody plays {x}", "contradiction") for x in ("chess", "golf", "piano", "cards",
                                                                                "tennis", "drums")]
    rows += [(f"a man plays {x}", f"a person plays {x}", "entailment") for x in ("chess", "golf", "piano", "cards",
                                                                                "tennis", "drums")]
    rows += [(f"a man plays {x}", f"a man plays {x} for money", "neutral") for x in ("chess", "golf", "piano",
                                                                                    "cards", "tennis", "drums")]
    src = tmp_path / "nli.csv"
    src.write_text("premise,hypothesis,label\n" + "".join(f"{p},{h},{lab}\n" for p, h, lab in rows), encoding="utf-8")
    with Project.create(tmp_path / "nli.cbproj") as p:
        ds = import_file(p, src, options=ImportOptions(name="nli")).dataset
        ids = [int(i) for i in p.example_ids(ExampleQuery(ds.id))]

        def add(conn: sqlite3.Connection) -> list[int]:
            out = []
            for k in range(3):  # "nobody" (contradiction) edited into entailment, keeping the premise
                meta = {"original_label": "contradiction", "generated": {"hypothesis": f"nobody {k} plays"}}
                out.append(int(conn.execute(
                    "INSERT INTO candidates (example_id, method, target_label, premise, hypothesis, scores, meta, "
                    "created_at) VALUES (?, 'coba', 'entailment', ?, ?, '{}', ?, '2026-01-01')",
                    (ids[k], rows[k][0], f"nobody {k} plays", json.dumps(meta))).lastrowid))
            return out

        for cid in p.writer.run(add):
            set_decision(p, cid, "accepted")
        report = build_report(p, "nli")
    assert report.before.labels == ["contradiction", "entailment", "neutral"] and report.n_added == 3
    assert report.delta_of("nobody@hypothesis").delta_z < 0
    assert [(r.reason, r.candidates) for r in report.reasons] == [("(not verified)", 3)] and not report.flips
    assert report.diversity is not None and report.diversity.pairs == 3
    text = render_html(report)
    assert text.count("data:image/png;base64,") == 2 and "label: neutral" not in text  # the plot is an image
    assert write_pdf(report, tmp_path / "nli.pdf").stat().st_size > 10_000
