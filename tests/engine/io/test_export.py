"""Export: provenance columns, formula escaping, exact round trips."""

from __future__ import annotations

import csv
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.io import ImportOptions, escape_cell, export_dataset, import_file, unescape_cell
from engine.io.exporter import export_columns


def _texts(project, dataset_id, field="text"):
    return [e[field] for e in project.iter_examples(dataset_id)]


@given(st.text())
def test_escape_is_reversible(s):
    assert unescape_cell(escape_cell(s)) == s


def test_escape_neutralises_every_trigger():
    for trigger in ("=", "+", "-", "@", "\t", "\r"):
        escaped = escape_cell(trigger + "1+1")
        assert escaped.startswith("'")
    assert escape_cell("hello =1") == "hello =1"
    assert escape_cell("'") == "'"


TRICKY = [
    "=HYPERLINK(\"http://x\",\"click\")",
    "+1 for this film",
    "-- a dash opener",
    "@mention me",
    "\tstarts with a tab",
    "\rstarts with CR",
    "'=already quoted",
    "line one\nline two\r\nline three\rend",
    'quotes "inside", commas, and\ttabs',
    "accents: café, naïve, Zoë; emoji 🎬👍; CJK 映画",
    "  leading and trailing spaces  ",
]


def test_round_trip_csv_and_jsonl_keep_every_byte(project, tmp_path):
    src = tmp_path / "src.jsonl"
    with open(src, "w", encoding="utf-8") as f:
        for i, text in enumerate(TRICKY):
            f.write(json.dumps({"id": f"r{i}", "text": text, "label": "=pos" if i % 2 else "neg"}) + "\n")
    first = import_file(project, src)
    assert _texts(project, first.dataset.id) == TRICKY

    for fmt in ("csv", "jsonl"):
        out = tmp_path / f"out.{fmt}"
        result = export_dataset(project, first.dataset.id, out)
        assert result.rows == len(TRICKY)
        again = import_file(project, out, options=ImportOptions(name=f"again-{fmt}"))
        assert _texts(project, again.dataset.id) == TRICKY, fmt
        assert [e["label"] for e in project.iter_examples(again.dataset.id)] == [
            e["label"] for e in project.iter_examples(first.dataset.id)
        ]
        assert [e["ext_id"] for e in project.iter_examples(again.dataset.id)] == [f"r{i}" for i in range(len(TRICKY))]


def test_csv_cells_are_neutralised_on_disk(project, tmp_path):
    src = tmp_path / "src.jsonl"
    src.write_text(
        "\n".join(json.dumps({"text": t, "label": l}) for t, l in [("=1+1", "a"), ("@SUM(A1)", "b"), ("ok", "a")]),
        encoding="utf-8",
    )
    ds = import_file(project, src).dataset
    out = tmp_path / "out.csv"
    export_dataset(project, ds.id, out)
    with open(out, encoding="utf-8-sig", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["text"] for r in rows] == ["'=1+1", "'@SUM(A1)", "ok"]
    assert list(rows[0]) == export_columns("single")
    assert rows[0]["source"] == "original" and rows[0]["created_at"]


def test_pair_export_columns(project, tmp_path):
    src = tmp_path / "nli.tsv"
    src.write_text("premise\thypothesis\tlabel\nA dog runs.\tAn animal moves.\tentailment\nA cat.\tA dog.\tcontradiction\n")
    ds = import_file(project, src).dataset
    out = tmp_path / "nli.csv"
    result = export_dataset(project, ds.id, out, bom=False)
    assert result.columns[:6] == ["example_id", "id", "premise", "hypothesis", "label", "split"]
    again = import_file(project, out, options=ImportOptions(name="nli2"))
    assert again.dataset.task == "pair"
    assert _texts(project, again.dataset.id, "hypothesis") == ["An animal moves.", "A dog."]


def test_export_unknown_format_writes_nothing(project, tmp_path):
    from engine.errors import ExportError

    src = tmp_path / "s.csv"
    src.write_text("text,label\na,x\nb,y\n")
    ds = import_file(project, src).dataset
    try:
        export_dataset(project, ds.id, tmp_path / "out.xlsx")
    except ExportError as exc:
        assert exc.hint
    else:  # pragma: no cover
        raise AssertionError("expected ExportError")
    assert not list(tmp_path.glob("out.*"))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.text(min_size=1).filter(lambda s: s.strip() and "\x00" not in s), min_size=2, max_size=8))
def test_round_trip_property(project, tmp_path_factory, texts):
    folder = tmp_path_factory.mktemp("rt")
    src = folder / "src.jsonl"
    src.write_text(
        "".join(json.dumps({"text": t, "label": str(i % 2)}) + "\n" for i, t in enumerate(texts)), encoding="utf-8"
    )
    ds = import_file(project, src, options=ImportOptions(name=project.unique_dataset_name("p"))).dataset
    out = folder / "out.csv"
    export_dataset(project, ds.id, out)
    again = import_file(project, out, options=ImportOptions(name=project.unique_dataset_name("q"))).dataset
    assert _texts(project, again.id) == texts


def test_every_exported_row_has_an_id_the_source_id_or_its_example_id(project, tmp_path):
    src = tmp_path / "src.jsonl"  # no id column, as CAD's TSV files
    src.write_text("\n".join(json.dumps({"text": t, "label": lab}) for t, lab in (("one", "a"), ("two", "b"), ("three", "a"))),
                   encoding="utf-8")
    ds = import_file(project, src).dataset
    for fmt in ("csv", "jsonl"):
        out = tmp_path / f"out.{fmt}"
        export_dataset(project, ds.id, out)
        if fmt == "csv":
            with open(out, encoding="utf-8-sig", newline="") as f:
                rows = list(csv.DictReader(f))
        else:
            rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
        assert [r["id"] for r in rows] == [str(r["example_id"]) for r in rows], fmt
        assert len({r["id"] for r in rows}) == 3
        again = import_file(project, out, options=ImportOptions(name=f"again-{fmt}"))  # the id survives a round trip
        assert [e["ext_id"] for e in project.iter_examples(again.dataset.id)] == [r["id"] for r in rows]
