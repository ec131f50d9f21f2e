"""Input files for the reliability tests of importing (issue 15), and the checks they share."""

from __future__ import annotations

import gzip
import hashlib
import io
import zipfile
from pathlib import Path

import pytest

from engine import errors

GOOD = "text,label\n" + "".join(f"row number {i} is here,{'pos' if i % 2 else 'neg'}\n" for i in range(200))
WESTERN = ["crème brûlée", "naïve café", "déjà vu", "über cool", "façade"]


def digest(project) -> str:
    """A digest of every row of every table: equal digests mean an unchanged project."""
    h = hashlib.sha256()
    for table in sorted(project.db.table_names()):
        for row in project.db.execute(f"SELECT * FROM [{table}] ORDER BY 1"):
            h.update(repr(row).encode())
    return h.hexdigest()


def write(folder: Path, name: str, content: str | bytes) -> Path:
    path = folder / name
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return path


def truncated_gz(folder: Path) -> Path:
    packed = gzip.compress(GOOD.encode())
    return write(folder, "truncated.csv.gz", packed[: len(packed) // 2])


def not_gzip(folder: Path) -> Path:
    return write(folder, "notgzip.csv.gz", GOOD)


def bad_crc_gz(folder: Path) -> Path:
    packed = bytearray(gzip.compress(GOOD.encode()))
    packed[-8] ^= 0xFF  # the CRC-32 in the trailer
    return write(folder, "badcrc.csv.gz", bytes(packed))


def directory(folder: Path) -> Path:
    path = folder / "adir.csv"
    path.mkdir()
    (path / "inside.csv").write_text(GOOD)
    return path


def missing(folder: Path) -> Path:
    return folder / "missing.csv"


def big_integer(folder: Path) -> Path:
    return write(folder, "bigint.jsonl", '{"text":"a","label":"pos"}\n{"text":"b","label":' + "9" * 5000 + "}\n")


def deep_json(folder: Path) -> Path:
    return write(folder, "nested.jsonl",
                 '{"text":"a","label":"pos"}\n{"text":"b","label":"neg","x":' + "[" * 100_000 + "]" * 100_000 + "}\n")


def lone_surrogate(folder: Path) -> Path:
    return write(folder, "surrogate.jsonl", '{"text":"a","label":"pos"}\n{"text":"b \\ud800 c","label":"neg"}\n')


def latin1_csv(folder: Path) -> Path:
    body = "text,label\n" + "".join(f"{w} number {i},{'pos' if i % 2 else 'neg'}\n"
                                    for i, w in enumerate(WESTERN * 8))
    return write(folder, "latin1.csv", body.encode("latin-1"))


def zip_as_csv(folder: Path) -> Path:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("data.csv", GOOD)
    return write(folder, "zipped.csv", buf.getvalue())


def utf16(folder: Path, order: str) -> Path:
    return write(folder, f"utf16{order}.csv", GOOD.encode(f"utf-16-{order}"))


#: The cases that used to end in a traceback, with the named error each must raise now.
UNREADABLE = {
    "truncated_gz": (truncated_gz, errors.CompressionError),
    "not_gzip": (not_gzip, errors.CompressionError),
    "bad_crc_gz": (bad_crc_gz, errors.CompressionError),
    "directory": (directory, errors.NotAFileError),
    "missing_path": (missing, errors.InputNotFoundError),
    "jsonl_5000_digit_integer": (big_integer, errors.JsonNumberTooLongError),
    "deeply_nested_json": (deep_json, errors.JsonTooDeepError),
    "lone_surrogate_escape": (lone_surrogate, errors.InvalidCharacterError),
}


def refuses(project, path: Path, error: type[errors.CounterbiasError], **kwargs) -> errors.CounterbiasError:
    """Import ``path``; it must raise ``error`` with a hint and the file name, leaving the project unchanged."""
    from engine.io import import_file

    before = digest(project)
    with pytest.raises(error) as info:
        import_file(project, path, **kwargs)
    exc = info.value
    assert exc.hint, "every error says what to do"
    assert path.name in str(exc)
    assert digest(project) == before, "a refused import must leave the project unchanged"
    return exc


@pytest.fixture
def seeded(project, tmp_path):
    """A real project file that already holds one dataset, so 'unchanged' is meaningful."""
    from engine.io import ImportOptions, import_file

    good = tmp_path / "good.csv"
    good.write_text("text,label\nnice film,pos\nawful film,neg\n", encoding="utf-8")
    import_file(project, good, options=ImportOptions(name="existing"))
    return project
