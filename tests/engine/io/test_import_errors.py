"""Every kind of bad input gives a named error (file, row, column, what to do) and leaves the
project exactly as it was."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest

from engine import errors
from engine.io import ColumnMapping, ImportOptions, ReadOptions, import_file, preview_file


def _snapshot(project) -> str:
    """A digest of every row of every table: equal digests mean an unchanged project."""
    h = hashlib.sha256()
    for table in sorted(project.db.table_names()):
        for row in project.db.execute(f"SELECT * FROM [{table}] ORDER BY 1"):
            h.update(repr(row).encode())
    return h.hexdigest()


@pytest.fixture
def seeded(project, tmp_path):
    """A project that already holds one dataset, so 'unchanged' is meaningful."""
    good = tmp_path / "good.csv"
    good.write_text("text,label\nnice film,pos\nawful film,neg\n", encoding="utf-8")
    import_file(project, good, options=ImportOptions(name="existing"))
    return project


def _write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8", newline="")
    return path


def _fails(project, path, error, mapping=None, read=None, **loc):
    before = _snapshot(project)
    with pytest.raises(error) as info:
        import_file(project, path, mapping, read)
    exc = info.value
    assert isinstance(exc, errors.ImportDataError) or isinstance(exc, errors.CounterbiasError)
    assert exc.hint, "every error says what to do"
    assert path.name in str(exc)
    for key, value in loc.items():
        assert getattr(exc.location, key) == value, (key, exc.location)
    assert _snapshot(project) == before, "a failed import must leave the project unchanged"
    return exc


def test_wrong_delimiter(seeded, tmp_path):
    path = _write(tmp_path, "semi.csv", "text;label\nnice;pos\nbad;neg\n")
    exc = _fails(seeded, path, errors.DelimiterError, line=1)
    assert "semicolon" in exc.hint


def test_tsv_read_as_csv(seeded, tmp_path):
    path = _write(tmp_path, "tabs.csv", "text\tlabel\nnice\tpos\nbad\tneg\n")
    exc = _fails(seeded, path, errors.DelimiterError)
    assert "tab" in exc.hint


def test_ragged_row(seeded, tmp_path):
    path = _write(tmp_path, "ragged.csv", "text,label\nnice,pos\nbad, really bad,neg\nok,pos\n")
    exc = _fails(seeded, path, errors.RaggedRowError, row=2, line=3)
    assert "expected 2 fields" in exc.message and "found 3" in exc.message


def test_broken_quoting(seeded, tmp_path):
    path = _write(tmp_path, "quotes.csv", 'text,label\n"nice" film,pos\nbad,neg\n')
    exc = _fails(seeded, path, errors.QuotingError, line=2)
    assert "quoting 'none'" in exc.hint


def test_unclosed_quote_runs_away(seeded, tmp_path):
    body = 'text,label\n"never closed,pos\n' + "".join(f"row {i},neg\n" for i in range(50))
    path = _write(tmp_path, "runaway.csv", body)
    _fails(seeded, path, errors.QuotingError, line=2)


def test_non_utf8_names_the_encoding(seeded, tmp_path):
    text = "text,label\nplain,pos\n" + "".join(f"caf\u00e9 cr\u00e8me br\u00fbl\u00e9e num\u00e9ro {i},neg\n" for i in range(40))
    path = _write(tmp_path, "latin.csv", text.encode("cp1252"))
    exc = _fails(seeded, path, errors.EncodingError, line=3)
    assert "encoding" in exc.hint.lower()
    # With the suggested encoding it imports.
    result = import_file(seeded, path, read_options=ReadOptions(encoding="cp1252"))
    assert result.rows == 41
    assert next(seeded.iter_examples(result.dataset.id))["text"] == "plain"


def test_bom_is_dropped(seeded, tmp_path):
    path = _write(tmp_path, "bom.csv", "\ufefftext,label\nnice,pos\nbad,neg\n".encode("utf-8"))
    result = import_file(seeded, path)
    assert result.rows == 2
    assert result.dataset.params["imports"][0]["mapping"]["text"] == "text"


@pytest.mark.parametrize("content", ["", "text,label\n", "text,label\n\n\n"])
def test_empty_file(seeded, tmp_path, content):
    path = _write(tmp_path, "empty.csv", content)
    _fails(seeded, path, errors.EmptyFileError)


def test_mapped_column_missing(seeded, tmp_path):
    path = _write(tmp_path, "cols.csv", "review,stars\nnice,5\nbad,1\n")
    exc = _fails(seeded, path, errors.MissingColumnError, mapping=ColumnMapping(text="review", label="label"))
    assert "'review', 'stars'" in exc.message


def test_no_label_column_detected(seeded, tmp_path):
    path = _write(tmp_path, "nolabel.csv", "review,stars\nnice,5\nbad,1\n")
    _fails(seeded, path, errors.MappingError)


def test_empty_text(seeded, tmp_path):
    path = _write(tmp_path, "emptytext.csv", "text,label\nnice,pos\n   ,neg\nbad,neg\n")
    _fails(seeded, path, errors.EmptyTextError, row=2, line=3, column="text")
    result = import_file(seeded, path, options=ImportOptions(skip_empty_text=True, name="skipped"))
    assert (result.rows, result.skipped_empty_text) == (2, 1)


def test_single_class(seeded, tmp_path):
    path = _write(tmp_path, "oneclass.csv", "text,label\nnice,pos\ngreat,pos\n")
    exc = _fails(seeded, path, errors.SingleClassError, column="label")
    assert "'pos'" in exc.message and "--labels" in exc.hint


def test_single_class_with_the_label_set_named(seeded, tmp_path):
    """Counterfactuals that all flip toward one label are a dataset of a two-label task."""
    path = _write(tmp_path, "oneclass.csv", "text,label\nnice,pos\ngreat,pos\n")
    result = import_file(seeded, path, options=ImportOptions(name="flipped", labels=("neg", "pos")))
    assert result.rows == 2 and result.label_counts == {"pos": 2}
    assert sorted(result.dataset.labels) == ["neg", "pos"]


def test_missing_label(seeded, tmp_path):
    path = _write(tmp_path, "nolabels.csv", "text,label\nnice,pos\nbad,\nworse,neg\n")
    _fails(seeded, path, errors.MissingLabelError, row=2, line=3, column="label")


def test_huge_cell(seeded, tmp_path):
    path = _write(tmp_path, "huge.csv", "text,label\nnice,pos\n" + "x" * 100_000 + ",neg\n")
    exc = _fails(seeded, path, errors.CellTooLargeError, row=2, column="text")
    assert "100,000" in exc.message
    result = import_file(seeded, path, read_options=ReadOptions(max_cell_chars=200_000), options=ImportOptions(name="big"))
    assert result.rows == 2


def test_malformed_jsonl(seeded, tmp_path):
    path = _write(tmp_path, "bad.jsonl", '{"text": "a", "label": "x"}\n{"text": "b", "label": \n')
    _fails(seeded, path, errors.MalformedJsonError, line=2)


def test_jsonl_with_numbers_as_labels(seeded, tmp_path):
    lines = [json.dumps({"sentence": f"s{i}", "label": i % 2}) for i in range(10)]
    path = _write(tmp_path, "ok.jsonl", "\n".join(lines) + "\n")
    result = import_file(seeded, path)
    assert result.label_counts == {"0": 5, "1": 5}


def test_unsupported_format(seeded, tmp_path):
    path = _write(tmp_path, "data.parquet", b"PAR1")
    _fails(seeded, path, errors.UnsupportedFormatError)


def test_name_taken_does_not_write(seeded, tmp_path):
    path = _write(tmp_path, "x.csv", "text,label\na,p\nb,n\n")
    before = _snapshot(seeded)
    with pytest.raises(errors.DatasetNameTakenError):
        import_file(seeded, path, options=ImportOptions(name="existing"))
    assert _snapshot(seeded) == before


def test_cancel_leaves_project_unchanged(seeded, tmp_path):
    from engine.progress import CancelToken

    path = tmp_path / "big.csv.gz"
    with gzip.open(path, "wt", encoding="utf-8", newline="") as f:
        f.write("text,label\n")
        for i in range(30_000):
            f.write(f"row {i},{'pos' if i % 2 else 'neg'}\n")
    token = CancelToken()
    seen = []

    def progress(fraction, message=""):
        seen.append(fraction)
        if len(seen) == 3:
            token.cancel()

    before = _snapshot(seeded)
    with pytest.raises(errors.Cancelled):
        import_file(seeded, path, progress=progress, cancel=token)
    assert _snapshot(seeded) == before
    assert import_file(seeded, path).rows == 30_000


def test_label_normalisation(seeded, tmp_path):
    path = _write(tmp_path, "labels.csv", "text,label\na, Positive\nb,positive\nc,NEGATIVE \nd,negative\n")
    result = import_file(seeded, path)
    assert result.label_counts == {"NEGATIVE": 2, "Positive": 2}


def test_preview_detects_mapping(tmp_path):
    path = _write(tmp_path, "nli.tsv", "sentence1\tsentence2\tgold_label\nA\tB\tneutral\nC\tD\tentailment\n")
    preview = preview_file(path)
    assert preview.mapping == ColumnMapping(premise="sentence1", hypothesis="sentence2", label="gold_label")
    assert preview.options.delimiter == "\t"
    assert len(preview.rows) == 2
