"""Issue 15, "wrong or missing diagnosis": encodings and binary containers are named correctly,
and following the hint imports the text unchanged."""

from __future__ import annotations

import gzip

import pytest

from engine import errors
from engine.cli import main
from engine.io import ImportOptions, ReadOptions, import_file, preview_file
from engine.io.sniffing import guess_encoding, utf16_byte_order
from tests.reliability._import_files import (  # noqa: F401
    GOOD,
    WESTERN,
    latin1_csv,
    refuses,
    seeded,
    utf16,
    write,
    zip_as_csv,
)


def _texts(project, dataset_id):
    return [e["text"] for e in project.iter_examples(dataset_id)]


def test_latin1_csv_is_not_reported_as_cp1250(seeded, tmp_path):  # noqa: F811
    path = latin1_csv(tmp_path)
    exc = refuses(seeded, path, errors.EncodingError)
    assert "'cp1252'" in exc.hint and "Latin-1" in exc.hint
    assert "cp1250" not in exc.hint and "cp1257" not in exc.hint
    assert "crème brûlée number 0" in exc.hint  # the bad line as the suggested encoding reads it
    # Following the hint stores the words as written: no "brűlée", "naďve", "crčme".
    result = import_file(seeded, path, read_options=ReadOptions(encoding="cp1252"))
    texts = _texts(seeded, result.dataset.id)
    assert texts[:5] == [f"{w} number {i}" for i, w in enumerate(WESTERN)]


def test_cp1252_punctuation_is_named_cp1252(seeded, tmp_path):  # noqa: F811
    body = "text,label\n" + "".join(f"\u201cgreat\u201d \u2013 {i} \u20ac,{'pos' if i % 2 else 'neg'}\n"
                                    for i in range(20))
    path = write(tmp_path, "smart.csv", body.encode("cp1252"))
    exc = refuses(seeded, path, errors.EncodingError)
    assert "'cp1252'" in exc.hint and "same as Latin-1" not in exc.hint


def test_cyrillic_cp1251_is_not_called_western(seeded, tmp_path):  # noqa: F811
    body = "text,label\n" + "".join(f"Привет мир, как дела {i},{'pos' if i % 2 else 'neg'}\n" for i in range(30))
    guess = guess_encoding(body.encode("cp1251"))
    assert guess.encoding not in ("cp1252", "latin-1")


def test_mostly_utf8_with_one_bad_byte_names_the_line(seeded, tmp_path):  # noqa: F811
    body = ("text,label\n" + "".join(f"crème brûlée {i},{'pos' if i % 2 else 'neg'}\n" for i in range(30))).encode()
    body += "bad caf\u00e9,neg\n".encode("latin-1")
    exc = refuses(seeded, write(tmp_path, "mixed.csv", body), errors.EncodingError)
    assert exc.location.line == 32
    assert "mostly UTF-8" in exc.hint and "line 32" in exc.hint


def test_zip_renamed_csv(seeded, tmp_path):  # noqa: F811
    exc = refuses(seeded, zip_as_csv(tmp_path), errors.BinaryFileError)
    assert "ZIP archive" in exc.message and "data.csv" in exc.message
    assert "Unzip it first" in exc.hint
    assert "cp1252" not in str(exc)


def test_xlsx_renamed_csv(seeded, tmp_path):  # noqa: F811
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("[Content_Types].xml", "<Types/>")
        z.writestr("xl/workbook.xml", "<workbook/>")
    exc = refuses(seeded, write(tmp_path, "sheet.csv", buf.getvalue()), errors.BinaryFileError)
    assert "Excel workbook" in exc.message and "CSV UTF-8" in exc.hint


def test_binary_inside_gzip(seeded, tmp_path):  # noqa: F811
    path = write(tmp_path, "data.csv.gz", gzip.compress(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4))
    exc = refuses(seeded, path, errors.BinaryFileError)
    assert "PNG image inside the gzip" in exc.message


def test_gzip_without_gz_name_is_read(seeded, tmp_path):  # noqa: F811
    path = write(tmp_path, "packed.csv", gzip.compress(GOOD.encode()))
    assert import_file(seeded, path, options=ImportOptions(name="packed")).rows == 200


def test_utf16be_without_bom(seeded, tmp_path):  # noqa: F811
    path = utf16(tmp_path, "be")
    exc = refuses(seeded, path, errors.EncodingError)
    assert "UTF-16-BE" in exc.message and "'utf-16-be'" in exc.hint
    assert "t e x t" not in str(exc)
    result = import_file(seeded, path, read_options=ReadOptions(encoding="utf-16-be"))
    assert result.rows == 200 and _texts(seeded, result.dataset.id)[0] == "row number 0 is here"


def test_utf16le_without_bom(seeded, tmp_path):  # noqa: F811
    exc = refuses(seeded, utf16(tmp_path, "le"), errors.EncodingError)
    assert "'utf-16-le'" in exc.hint


def test_utf16_without_bom_and_generic_utf16_picks_the_byte_order(seeded, tmp_path):  # noqa: F811
    result = import_file(seeded, utf16(tmp_path, "be"), read_options=ReadOptions(encoding="utf-16"))
    assert result.rows == 200 and result.label_counts == {"neg": 100, "pos": 100}


def test_utf16_with_bom_is_read_without_choosing(seeded, tmp_path):  # noqa: F811
    path = write(tmp_path, "bom16.csv", GOOD.encode("utf-16"))
    result = import_file(seeded, path)
    assert result.rows == 200
    assert result.dataset.params["imports"][0]["read_options"]["encoding"] == "utf-16"


def test_utf16_detection_needs_the_pattern():
    assert utf16_byte_order("text,label\nnice,pos\n".encode("utf-16-le")) == "utf-16-le"
    assert utf16_byte_order(b"text,label\nhello\x00world,pos\nbad,neg\n") is None


def test_random_binary_is_named(seeded, tmp_path):  # noqa: F811
    import random

    rng = random.Random(0)
    path = write(tmp_path, "noise.csv", bytes(rng.randrange(256) for _ in range(4000)))
    exc = refuses(seeded, path, errors.ImportDataError)
    assert isinstance(exc, (errors.BinaryFileError, errors.EncodingError))


def test_preview_names_the_same_problems(tmp_path):
    for make, error in ((zip_as_csv, errors.BinaryFileError), (latin1_csv, errors.EncodingError)):
        try:
            preview_file(make(tmp_path))
        except error as exc:
            assert exc.hint
        else:  # pragma: no cover
            raise AssertionError(f"{make.__name__}: no {error.__name__}")


def test_cli_latin1_hint(seeded, tmp_path, capsys):  # noqa: F811
    path = latin1_csv(tmp_path)
    seeded.close()
    assert main(["-q", "import", str(seeded.path), str(path)]) == 3
    assert "--encoding cp1252" in capsys.readouterr().err
    assert main(["-q", "import", str(seeded.path), str(path), "--encoding", "cp1252"]) == 0


@pytest.mark.parametrize("text, encoding, expected", [
    ("Größe und Übermut schön", "latin-1", "cp1252"),
    ("El niño comió piña mañana", "latin-1", "cp1252"),
    ("Rødgrød med fløde på bordet", "latin-1", "cp1252"),
    ("Zażółć gęślą jaźń, proszę", "cp1250", "cp1250"),
    ("Příliš žluťoučký kůň úpěl ďábelské ódy", "cp1250", "cp1250"),
    ("Съешь же ещё этих мягких булок", "cp1251", "cp1251"),
    ("Καλημέρα κόσμε", "cp1253", "cp1253"),
])
def test_single_byte_code_pages_are_told_apart(text, encoding, expected):
    sample = ("text,label\n" + "".join(f"{text} {i},pos\n" for i in range(20))).encode(encoding)
    assert guess_encoding(sample).encoding == expected
