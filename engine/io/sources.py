"""Opening an input file: path checks, gzip recognised by content, and read failures named.

Every failure of the operating system or of the decompressor while an input file is read
(a missing path, a folder, no permission, a truncated or corrupt ``.gz``) becomes a named
:class:`~engine.errors.ImportDataError` here, wherever in the reading it happens: the
stream returned by :func:`open_input` raises them from ``read``.
"""

from __future__ import annotations

import gzip
import io
import os
import stat
import zlib
from pathlib import Path
from typing import IO

from engine.errors import (
    BinaryFileError,
    CompressionError,
    FileReadError,
    InputNotFoundError,
    Location,
    NotAFileError,
)
from engine.io.sniffing import GZIP_MAGIC, HEAD_BYTES, detect_container

#: Extensions listed when the user picks a folder.
_IMPORTABLE = (".csv", ".tsv", ".tab", ".txt", ".jsonl", ".ndjson", ".json", ".gz")


def check_path(path: Path) -> None:
    """Raise a named error unless ``path`` is an existing, regular file.

    Raises
    ------
    InputNotFoundError, NotAFileError
    """
    loc = Location(path.name or str(path))
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        parent = path.parent if str(path.parent) not in ("", ".") else Path.cwd()
        where = f" (relative to the current folder {Path.cwd()})" if not path.is_absolute() else ""
        hint = "Check the path and the file name" + where + "."
        if parent.is_dir():
            similar = sorted(p.name for p in parent.iterdir() if p.name.lower().startswith(path.stem[:3].lower()))
            if similar:
                hint += f" Files with a similar name there: {', '.join(similar[:5])}."
        raise InputNotFoundError(f"there is no file at {str(path)!r}.", hint, location=loc) from None
    except OSError as exc:
        raise FileReadError(f"the file cannot be examined ({exc.strerror or exc}).",
                            "Check that the path is readable by you.", location=loc) from None
    if stat.S_ISDIR(mode):
        try:
            inside = sorted(p.name for p in path.iterdir() if p.suffix.lower() in _IMPORTABLE and p.is_file())
        except OSError:
            inside = []
        listing = f" Importable files in it: {', '.join(inside[:8])}." if inside else ""
        raise NotAFileError(f"{str(path)!r} is a folder, not a file.",
                            "Choose a CSV, TSV or JSONL file (optionally .gz) inside it." + listing, location=loc)
    if not stat.S_ISREG(mode):
        raise NotAFileError(f"{str(path)!r} is not a regular file (a device, pipe or socket).",
                            "Save the data to a file first and import that file.", location=loc)


def _open_raw(path: Path) -> IO[bytes]:
    try:
        return open(path, "rb")
    except PermissionError:
        raise FileReadError("you have no permission to read this file.",
                            "Change its permissions, or copy it somewhere you can read it.",
                            location=Location(path.name)) from None
    except OSError as exc:
        raise FileReadError(f"the file cannot be opened ({exc.strerror or exc}).",
                            "Check the path and that the file is readable.", location=Location(path.name)) from None


def is_gzip_name(path: Path) -> bool:
    return path.suffix.lower() == ".gz"


class _Guarded(io.RawIOBase):
    """A raw stream that turns decompression and I/O failures into named errors."""

    def __init__(self, inner: IO[bytes], path: Path, compressed: bool) -> None:
        super().__init__()
        self._inner = inner
        self._path = path
        self._compressed = compressed
        self.offset = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        try:
            n = self._inner.readinto(buffer)  # type: ignore[attr-defined]
        except EOFError:
            raise self._error(
                "the compressed data ends early: the file is incomplete (an interrupted download or copy?).",
                "Download or copy the file again ('gzip -t FILE' checks a .gz file).",
            ) from None
        except (gzip.BadGzipFile, zlib.error) as exc:
            detail = str(exc)
            if "CRC check failed" in detail or "Incorrect length" in detail:
                what = f"the compressed data is damaged ({detail}): its checksum does not match."
            elif "Not a gzipped file" in detail:
                what = f"the data after the first gzip stream is not gzip data ({detail})."
            else:
                what = f"the compressed data is damaged ({detail})."
            raise self._error(what, "Download or copy the file again ('gzip -t FILE' checks a .gz file).") from None
        except OSError as exc:
            raise FileReadError(
                f"reading failed after {self.offset:,} bytes ({exc.strerror or exc}).",
                "Check the disk or network share the file is on, then try again.",
                location=Location(self._path.name),
            ) from None
        n = n or 0
        self.offset += n
        return n

    def _error(self, what: str, hint: str) -> CompressionError:
        where = f" (after {self.offset:,} bytes of uncompressed text)" if self.offset else ""
        return CompressionError(what.rstrip(".") + where + ".", hint, location=Location(self._path.name))

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            super().close()


class InputStream:
    """An open input file: ``stream`` (buffered, decompressed bytes) and ``tell_raw()`` for progress."""

    def __init__(self, path: Path) -> None:
        check_path(path)
        self.path = path
        self._file = _open_raw(path)
        try:
            magic = self._file.read(2)
            self._file.seek(0)
            self.compressed = magic == GZIP_MAGIC
            if is_gzip_name(path) and not self.compressed:
                container = detect_container(self._file.read(HEAD_BYTES))
                self._file.seek(0)
                if container is not None:
                    raise BinaryFileError(f"the file is named .gz but is {container.what}.", container.hint,
                                          location=Location(path.name))
                shown = magic if magic else b""
                raise CompressionError(
                    f"the file is named .gz but is not gzip-compressed (it starts with {shown!r})"
                    if magic else "the file is named .gz but is empty.",
                    "If it is a plain text file, rename it without '.gz'; otherwise download or copy it again.",
                    location=Location(path.name),
                )
            inner: IO[bytes] = gzip.GzipFile(fileobj=self._file, mode="rb") if self.compressed else self._file
            self.stream = io.BufferedReader(_Guarded(inner, path, self.compressed), buffer_size=1 << 16)
        except BaseException:
            self._file.close()
            raise
        self.size = os.fstat(self._file.fileno()).st_size

    def tell_raw(self) -> int:
        """Bytes of the file on disk read so far (compressed bytes for a ``.gz``)."""
        try:
            return self._file.tell()
        except (OSError, ValueError):
            return 0

    def close(self) -> None:
        self.stream.close()
        self._file.close()

    def __enter__(self) -> InputStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_input(path: str | Path) -> InputStream:
    """Open ``path`` for reading (decompressing gzip, whatever its name); see :class:`InputStream`."""
    return InputStream(Path(path))


def read_head(path: str | Path, n: int = HEAD_BYTES) -> tuple[bytes, bytes]:
    """The first ``n`` bytes of ``path`` as stored and after decompression."""
    with open_input(path) as source:
        source._file.seek(0)
        raw = source._file.read(n)
        source._file.seek(0)
        data = source.stream.read(n) if source.compressed else raw
    return raw, data
