"""Issue 15, round trip and CSV styles: import -> export -> import -> export is byte-stable (3 cycles,
CSV and JSONL), provenance does not nest, ``created_at`` is kept, and a raw CSV style exists for programs."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from engine.errors import ExportError
from engine.io import ImportOptions, export_dataset, import_file
from engine.store import ExampleQuery, Project
from tests.reliability.storage_fs import cli

ROWS = [
    ("r0", "=HYPERLINK(\"http://x\",\"click\")", "-1", "train"),
    ("r1", "+1 for this film", "1", "train"),
    ("=r2", "@mention me", "-1", "test"),
    ("r3", "'=already quoted", "'-1", "test"),
    ("r4", "line one\nline two\r\nend, \"quoted\"", "1", "train"),
    ("r5", "accents: café, emoji 🎬, CJK 映画", "=pos", "train"),
]


def _source_project(folder: Path, split: str | None = None) -> tuple[Project, str]:
    """An imported dataset plus an augmented version holding rows with provenance."""
    src = folder / "src.jsonl"
    with open(src, "w", encoding="utf-8") as f:
        for ext_id, text, label, row_split in ROWS:
            f.write(json.dumps({"id": ext_id, "text": text, "label": label, "split": split or row_split}) + "\n")
    project = Project.create(folder / "p0.cbproj")
    original = import_file(project, src).dataset

    def augment(conn) -> list[int]:
        ids = []
        for k, parent in enumerate((1, 3)):
            cursor = conn.execute(
                "INSERT INTO examples (dataset_id, text, label, split, source, method, parent_id, target_label, "
                "created_at, meta) VALUES (?, ?, ?, ?, 'augmented', 'coba', ?, ?, ?, ?)",
                (original.id, f"-edited {k}: a =formula", "1", split or "train", parent, "1",
                 "2026-01-02T03:04:05+00:00", json.dumps({"judge": {"score": 0.9, "backend": "local"}, "k": k})),
            )
            ids.append(int(cursor.lastrowid))
        return ids

    new_ids = project.writer.run(augment)
    members = [int(i) for i in project.example_ids(ExampleQuery(original.id))]
    aug = project.add_derived_dataset("aug", kind="augmented", parent_id=original.id, example_ids=members + new_ids)
    return project, aug.name


def _cycles(folder: Path, fmt: str, *, split: str | None = None, n: int = 3) -> list[bytes]:
    project, name = _source_project(folder, split)
    outs = []
    out = folder / f"e0.{fmt}"
    export_dataset(project, name, out)
    project.close()
    outs.append(out.read_bytes())
    for cycle in range(1, n + 1):
        with Project.create(folder / f"p{cycle}.cbproj") as fresh:
            ds = import_file(fresh, out, options=ImportOptions(name=f"cycle{cycle}")).dataset
            out = folder / f"e{cycle}.{fmt}"
            export_dataset(fresh, ds.id, out)
        outs.append(out.read_bytes())
    return outs


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_round_trip_import_export_three_cycles_is_byte_stable(tmp_path, fmt):
    outs = _cycles(tmp_path, fmt)
    assert outs[1] == outs[0]
    assert outs[2] == outs[0]
    assert outs[3] == outs[0]


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_round_trip_keeps_created_at_and_provenance_without_nesting(tmp_path, fmt):
    _cycles(tmp_path, fmt, n=2)
    last = tmp_path / f"e2.{fmt}"
    if fmt == "csv":
        with open(last, encoding="utf-8-sig", newline="") as f:
            rows = list(csv.DictReader(f))
    else:
        rows = [json.loads(line) for line in last.read_text(encoding="utf-8").splitlines()]
    augmented = [r for r in rows if r["source"] == "augmented"]
    assert [r["created_at"] for r in augmented] == ["2026-01-02T03:04:05+00:00"] * 2
    assert [str(r["parent_id"]) for r in augmented] == ["1", "3"]
    for k, r in enumerate(augmented):
        assert json.loads(r["provenance"]) == {"judge": {"score": 0.9, "backend": "local"}, "k": k}
        assert "imported_provenance" not in r["provenance"]
    assert [r["label"] for r in rows][:6] == (
        ["'-1", "1", "'-1", "''-1", "1", "'=pos"] if fmt == "csv" else ["-1", "1", "-1", "'-1", "1", "=pos"]
    )


def test_round_trip_of_a_split_starting_with_a_formula_trigger_is_stable(tmp_path):
    outs = _cycles(tmp_path, "csv", split="@dev", n=2)
    assert outs[1] == outs[0] and outs[2] == outs[0]


def test_csv_style_raw_writes_values_as_they_are_and_spreadsheet_escapes(tmp_path):
    project, name = _source_project(tmp_path)
    raw = export_dataset(project, name, tmp_path / "raw.csv", csv_style="raw")
    sheet = export_dataset(project, name, tmp_path / "sheet.csv")
    project.close()
    raw_bytes = (tmp_path / "raw.csv").read_bytes()
    assert not raw_bytes.startswith(b"\xef\xbb\xbf")
    assert (tmp_path / "sheet.csv").read_bytes().startswith(b"\xef\xbb\xbf")
    with open(tmp_path / "raw.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["label"] for r in rows][:6] == ["-1", "1", "-1", "'-1", "1", "=pos"]
    assert rows[0]["text"] == ROWS[0][1]
    assert "raw CSV for programs" in raw.describe() and "for spreadsheets" in sheet.describe()


def test_unknown_csv_style_is_a_named_error(project, tmp_path):
    src = tmp_path / "s.csv"
    src.write_text("text,label\na,x\nb,y\n")
    ds = import_file(project, src).dataset
    with pytest.raises(ExportError, match="CSV style"):
        export_dataset(project, ds.id, tmp_path / "o.csv", csv_style="excel")


def test_cli_export_csv_style_says_which_in_its_output(tmp_path):
    project, name = _source_project(tmp_path)
    project.close()
    done = cli("export", str(tmp_path / "p0.cbproj"), name, str(tmp_path / "o.csv"), "--csv-style", "raw")
    assert done.returncode == 0, done.stderr
    assert "raw CSV for programs" in done.stdout
    assert "\n-1," not in (tmp_path / "o.csv").read_text()  # the label column is not first
    assert ",-1," in (tmp_path / "o.csv").read_text()
