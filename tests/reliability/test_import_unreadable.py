"""Issue 15, "tracebacks instead of named errors" for import: each case is a named error with the
file (and row/line where there is one) and what to do, the CLI exits 3, the project is unchanged,
and the import wizard's preview path raises the same error."""

from __future__ import annotations

import pytest

from engine import errors
from engine.cli import main
from engine.io import preview_file
from tests.reliability._import_files import UNREADABLE, digest, refuses, seeded  # noqa: F401


@pytest.mark.parametrize("case", list(UNREADABLE))
def test_import_refuses_with_a_named_error(seeded, tmp_path, case):  # noqa: F811
    make, error = UNREADABLE[case]
    refuses(seeded, make(tmp_path), error)


@pytest.mark.parametrize("case", list(UNREADABLE))
def test_preview_raises_the_same_named_error(tmp_path, case):
    make, error = UNREADABLE[case]
    with pytest.raises(error) as info:
        preview_file(make(tmp_path))
    assert info.value.hint


@pytest.mark.parametrize("case", list(UNREADABLE))
def test_cli_import_exits_3_and_leaves_the_project_unchanged(seeded, tmp_path, capsys, case):  # noqa: F811
    make, error = UNREADABLE[case]
    path = make(tmp_path)
    seeded.close()
    from engine.store import Project

    with Project.open(seeded.path) as project:
        before = digest(project)
    code = main(["-q", "import", str(seeded.path), str(path)])
    err = capsys.readouterr().err
    assert code == errors.EXIT_USER_ERROR
    assert f"[{error.code}]" in err and "What to do:" in err and "Traceback" not in err
    with Project.open(seeded.path) as project:
        assert digest(project) == before


def test_truncated_gz(seeded, tmp_path):  # noqa: F811
    exc = refuses(seeded, UNREADABLE["truncated_gz"][0](tmp_path), errors.CompressionError)
    assert "ends early" in exc.message and "again" in exc.hint


def test_non_gzip_gz(seeded, tmp_path):  # noqa: F811
    exc = refuses(seeded, UNREADABLE["not_gzip"][0](tmp_path), errors.CompressionError)
    assert "not gzip-compressed" in exc.message and "rename it without '.gz'" in exc.hint


def test_bad_crc_gz(seeded, tmp_path):  # noqa: F811
    exc = refuses(seeded, UNREADABLE["bad_crc_gz"][0](tmp_path), errors.CompressionError)
    assert "CRC check failed" in exc.message


def test_directory(seeded, tmp_path):  # noqa: F811
    exc = refuses(seeded, UNREADABLE["directory"][0](tmp_path), errors.NotAFileError)
    assert "is a folder" in exc.message and "inside.csv" in exc.hint


def test_missing_path(seeded, tmp_path):  # noqa: F811
    exc = refuses(seeded, UNREADABLE["missing_path"][0](tmp_path), errors.InputNotFoundError)
    assert str(tmp_path / "missing.csv") in exc.message


def test_jsonl_5000_digit_integer(seeded, tmp_path):  # noqa: F811
    exc = refuses(seeded, UNREADABLE["jsonl_5000_digit_integer"][0](tmp_path), errors.JsonNumberTooLongError)
    assert (exc.location.row, exc.location.line) == (2, 2)
    assert "5,000 digits" in exc.message and "JSON string" in exc.hint


def test_deeply_nested_json(seeded, tmp_path):  # noqa: F811
    exc = refuses(seeded, UNREADABLE["deeply_nested_json"][0](tmp_path), errors.JsonTooDeepError)
    assert exc.location.line == 2


def test_lone_surrogate_escape(seeded, tmp_path):  # noqa: F811
    exc = refuses(seeded, UNREADABLE["lone_surrogate_escape"][0](tmp_path), errors.InvalidCharacterError)
    assert (exc.location.row, exc.location.line, exc.location.column) == (2, 2, "text")
    assert "\\ud800" in exc.message


def test_unknown_encoding_name(seeded, tmp_path):  # noqa: F811
    from engine.io import ReadOptions

    path = tmp_path / "ok.csv"
    path.write_text("text,label\na,pos\nb,neg\n")
    refuses(seeded, path, errors.UnknownEncodingError, read_options=ReadOptions(encoding="utf-9"))


def test_cli_subprocess_exit_code(seeded, tmp_path):  # noqa: F811
    """The real ``python -m engine import`` process: exit 3, a named error, no traceback."""
    import subprocess
    import sys

    path = UNREADABLE["truncated_gz"][0](tmp_path)
    seeded.close()
    proc = subprocess.run([sys.executable, "-m", "engine", "-q", "import", str(seeded.path), str(path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stderr
    assert "[CB243]" in proc.stderr and "Traceback" not in proc.stderr


def test_binary_codec_is_not_a_text_encoding(seeded, tmp_path):  # noqa: F811
    from engine.io import ReadOptions

    path = tmp_path / "ok.csv"
    path.write_text("text,label\na,pos\nb,neg\n")
    refuses(seeded, path, errors.UnknownEncodingError, read_options=ReadOptions(encoding="rot13"))


def test_preview_shows_rows_and_reports_an_error_further_down(tmp_path):
    """The wizard's preview shows the first rows and names an error met below them."""
    body = "text,label\n" + "".join(f"row {i},{'pos' if i % 2 else 'neg'}\n" for i in range(80)) + "bad,row,here\n"
    path = tmp_path / "late.csv"
    path.write_text(body)
    preview = preview_file(path, n_rows=50)
    assert len(preview.rows) == 50
    assert isinstance(preview.problem, errors.RaggedRowError) and preview.problem.location.row == 81
