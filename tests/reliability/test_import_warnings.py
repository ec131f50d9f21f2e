"""Issue 15, "silently accepted": duplicate header names, labels that differ only by invisible
characters, JSON NaN/Infinity labels, NUL bytes, duplicate ids and very many classes import with
a structured warning (code, message, count, sample rows) in the result, on the CLI's stderr and
in the preview; a detected mapping on a repeated column name is refused."""

from __future__ import annotations

import json

import pytest

from engine import errors
from engine.cli import main
from engine.io import ColumnMapping, ImportOptions, import_file, preview_file
from tests.reliability._import_files import refuses, seeded, write  # noqa: F401


def _codes(warnings):
    return [w.code for w in warnings]


def _one(warnings, code):
    found = [w for w in warnings if w.code == code]
    assert len(found) == 1, warnings
    return found[0]


def test_duplicate_header_detected_mapping_is_refused(seeded, tmp_path):  # noqa: F811
    path = write(tmp_path, "duphdr.csv", "text,text,label\nfirst a,second a,pos\nfirst b,second b,neg\n")
    exc = refuses(seeded, path, errors.DuplicateColumnError)
    assert "columns 1, 2" in exc.message and "'text.1'" in exc.hint


@pytest.mark.parametrize("column, expected", [("text", "first a"), ("text.1", "second a")])
def test_duplicate_header_explicit_mapping_says_which_column(seeded, tmp_path, column, expected):  # noqa: F811
    path = write(tmp_path, "duphdr.csv", "text,text,label\nfirst a,second a,pos\nfirst b,second b,neg\n")
    result = import_file(seeded, path, ColumnMapping(text=column, label="label"),
                         options=ImportOptions(name=column))
    assert next(seeded.iter_examples(result.dataset.id))["text"] == expected
    warning = _one(result.warnings, "CB250")
    position = 1 if column == "text" else 2
    assert f"the text column is {column!r} (column {position})" in warning.message
    assert warning.count == 2


def test_duplicate_unmapped_header_only_warns(seeded, tmp_path):  # noqa: F811
    path = write(tmp_path, "dupnote.csv", "text,note,note,label\na,x,y,pos\nb,x,y,neg\n")
    result = import_file(seeded, path, options=ImportOptions(name="notes"))
    assert _codes(result.warnings) == ["CB250"]


def test_labels_differing_only_by_invisible_characters(seeded, tmp_path):  # noqa: F811
    path = write(tmp_path, "invis.csv", "text,label\na,pos\nb,pos\u200b\nc,neg\nd,\u202eneg\ne,cafe\u0301\nf,caf\u00e9\n")
    result = import_file(seeded, path, options=ImportOptions(name="invis"))
    assert result.label_counts == {"café": 2, "neg": 2, "pos": 2}
    warning = _one(result.warnings, "CB251")
    assert warning.count == 3 and warning.rows == (2, 4, 5)
    assert "'pos\\u200b' → 'pos'" in warning.message and "NFC" in warning.message
    assert sorted(seeded.dataset(result.dataset.id).labels) == ["café", "neg", "pos"]


def test_jsonl_nan_and_infinity_labels_are_missing_labels(seeded, tmp_path):  # noqa: F811
    path = write(tmp_path, "nan.jsonl", '{"text":"a","label":"pos"}\n{"text":"b","label":NaN}\n'
                                        '{"text":"c","label":Infinity}\n{"text":"d","label":"neg"}\n'
                                        '{"text":"e","label":1e999}\n')
    exc = refuses(seeded, path, errors.MissingLabelError)
    assert (exc.location.row, exc.location.column) == (2, "label") and "NaN" in exc.message
    result = import_file(seeded, path, options=ImportOptions(name="nan", skip_missing_labels=True))
    assert result.label_counts == {"neg": 1, "pos": 1} and result.skipped_missing_label == 3
    warning = _one(result.warnings, "CB252")
    assert warning.count == 3 and warning.rows == (2, 3, 5)
    assert "nan" not in result.label_counts and "inf" not in result.label_counts


def test_nul_bytes_in_text_are_stripped(seeded, tmp_path):  # noqa: F811
    path = write(tmp_path, "nul.csv", "text,label\nhello\x00world,pos\nbad,neg\x00\n")
    result = import_file(seeded, path, options=ImportOptions(name="nul"))
    texts = [e["text"] for e in seeded.iter_examples(result.dataset.id)]
    assert texts == ["helloworld", "bad"] and result.label_counts == {"neg": 1, "pos": 1}
    warning = _one(result.warnings, "CB253")
    assert warning.count == 2 and warning.rows == (1, 2)
    assert "'text'" in warning.message and "'label'" in warning.message


def test_duplicate_ids(seeded, tmp_path):  # noqa: F811
    rows = "".join(f"{i // 2},t{i},{'pos' if i % 2 else 'neg'}\n" for i in range(20))
    path = write(tmp_path, "dupid.csv", "id,text,label\n" + rows + "99,last,pos\n")
    result = import_file(seeded, path, options=ImportOptions(name="dupid"))
    warning = _one(result.warnings, "CB254")
    assert warning.count == 10
    assert warning.rows == (2, 4, 6, 8, 10)
    assert "id '0' on data rows 1 and 2" in warning.message and "id '4' on data rows 9 and 10" in warning.message


def test_unique_ids_give_no_warning(seeded, tmp_path):  # noqa: F811
    path = write(tmp_path, "ids.csv", "id,text,label\n1,a,pos\n2,b,neg\n")
    assert import_file(seeded, path, options=ImportOptions(name="ids")).warnings == []


def test_very_many_classes(seeded, tmp_path):  # noqa: F811
    path = write(tmp_path, "many.csv", "text,label\n" + "".join(f"t{i},c{i}\n" for i in range(2000)))
    result = import_file(seeded, path, options=ImportOptions(name="many"))
    warning = _one(result.warnings, "CB255")
    assert warning.count == 2000 and "2,000 distinct values in 2,000 rows" in warning.message
    assert "wrong column" in warning.message


def test_a_hundred_classes_is_fine(seeded, tmp_path):  # noqa: F811
    path = write(tmp_path, "hundred.csv", "text,label\n" + "".join(f"t{i},c{i % 100}\n" for i in range(300)))
    assert import_file(seeded, path, options=ImportOptions(name="hundred")).warnings == []


def test_preview_shows_warnings_before_importing(tmp_path):
    path = write(tmp_path, "all.csv", "id,text,label\n1,a\x00b,pos\n1,c,pos\u200b\n2,d,neg\n")
    preview = preview_file(path)
    assert _codes(preview.warnings) == ["CB251", "CB253", "CB254"]
    # Another mapping, other warnings: with 'text' as the label there are no invisible labels.
    assert _codes(preview.check(ColumnMapping(text="label", label="text", id="id"))) == ["CB253", "CB254"]


def test_cli_prints_warnings_to_stderr_and_json(seeded, tmp_path, capsys):  # noqa: F811
    path = write(tmp_path, "invis.csv", "text,label\na,pos\nb,pos\u200b\nc,neg\nd,\u202eneg\n")
    seeded.close()
    assert main(["-q", "import", str(seeded.path), str(path)]) == 0
    out, err = capsys.readouterr()
    assert "warning: [CB251]" in err
    report = json.loads(out)
    assert report["labels"] == {"neg": 2, "pos": 2}
    assert report["warnings"][0]["code"] == "CB251" and report["warnings"][0]["rows"] == [2, 4]


def test_cli_explicit_column_for_a_duplicate_header(seeded, tmp_path, capsys):  # noqa: F811
    path = write(tmp_path, "duphdr.csv", "text,text,label\nfirst a,second a,pos\nfirst b,second b,neg\n")
    seeded.close()
    assert main(["-q", "import", str(seeded.path), str(path)]) == 3
    assert "[CB248]" in capsys.readouterr().err
    # Only the label given: the detected text column is still ambiguous.
    assert main(["-q", "import", str(seeded.path), str(path), "--label-col", "label"]) == 3
    assert main(["-q", "import", str(seeded.path), str(path), "--text-col", "text.1"]) == 0
    assert "the text column is 'text.1' (column 2)" in capsys.readouterr().err
