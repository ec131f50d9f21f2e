"""Streaming readers for CSV, TSV and JSONL files (optionally gzip-compressed).

A reader yields ``(row_number, line_number, record)`` with ``record`` a dict keyed by
header names, and turns every malformed-input condition into a named
:class:`~engine.errors.ImportDataError` that says where and what to do.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

from engine.errors import (
    CellTooLargeError,
    DelimiterError,
    EmptyFileError,
    EncodingError,
    Location,
    MalformedJsonError,
    QuotingError,
    RaggedRowError,
    UnsupportedFormatError,
)

FORMATS = ("csv", "tsv", "jsonl")
DELIMITER_NAMES = {",": "comma", "\t": "tab", ";": "semicolon", "|": "pipe"}
# The csv module's limit is process-wide; we check our own (per import) limit on each cell
# and keep the module's high enough that a runaway quote is caught without eating memory.
_CSV_MODULE_LIMIT = 16 * 1024 * 1024
if csv.field_size_limit() < _CSV_MODULE_LIMIT:
    csv.field_size_limit(_CSV_MODULE_LIMIT)


@dataclass(frozen=True)
class ReadOptions:
    """How to read a file.

    Parameters
    ----------
    format
        ``"auto"`` (from the extension, ignoring ``.gz``), ``"csv"``, ``"tsv"`` or ``"jsonl"``.
    delimiter
        Field separator for csv/tsv; ``None`` means ``,`` for csv and a tab for tsv, sniffed
        from the header for other extensions.
    quoting
        ``"csv"`` (double quotes wrap fields; most files) or ``"none"`` (quotes are text;
        e.g. the GLUE SST-2 TSVs).
    encoding
        Text encoding; a UTF-8 byte-order mark is always accepted and dropped.
    max_cell_chars
        Longest cell accepted; longer cells raise :class:`CellTooLargeError`.
    """

    format: str = "auto"
    delimiter: str | None = None
    quoting: str = "csv"
    encoding: str = "utf-8"
    max_cell_chars: int = 50_000

    def resolved(self, path: Path) -> ReadOptions:
        """Fill ``format`` and ``delimiter`` from the file name and first line."""
        fmt = self.format
        if fmt == "auto":
            fmt = format_from_name(path)
        if fmt not in FORMATS:
            raise UnsupportedFormatError(
                f"{path.name}: format {fmt!r} is not supported.",
                "Import CSV, TSV or JSONL (optionally .gz); convert other formats to one of these.",
            )
        delimiter = self.delimiter
        if fmt == "tsv" and delimiter is None:
            delimiter = "\t"
        elif fmt == "csv" and delimiter is None:
            delimiter = "," if _suffix(path) == ".csv" else sniff_delimiter(path, self.encoding)
        return replace(self, format=fmt, delimiter=delimiter)


def _suffix(path: Path) -> str:
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    return suffixes[-1] if suffixes else ""


def format_from_name(path: Path) -> str:
    """``csv``, ``tsv`` or ``jsonl`` from the extension (``.gz`` ignored); ``.txt`` reads as delimited."""
    suffix = _suffix(path)
    if suffix in (".tsv", ".tab"):
        return "tsv"
    if suffix in (".csv", ".txt", ""):
        return "csv"
    if suffix in (".jsonl", ".ndjson", ".json"):
        return "jsonl"
    return suffix.lstrip(".") or "unknown"


def open_binary(path: Path) -> IO[bytes]:
    """Open ``path`` for reading bytes, decompressing ``.gz`` transparently."""
    if path.suffix.lower() == ".gz":
        return gzip.open(path, "rb")
    return open(path, "rb")


def _text_encoding(encoding: str) -> str:
    return "utf-8-sig" if encoding.lower().replace("_", "-") in ("utf-8", "utf8", "utf-8-sig") else encoding


def sniff_delimiter(path: Path, encoding: str = "utf-8") -> str:
    """The most frequent of tab, comma, semicolon and pipe on the first line."""
    with open_binary(path) as raw:
        first = raw.readline(1 << 20).decode(_text_encoding(encoding), errors="replace")
    counts = {d: first.count(d) for d in DELIMITER_NAMES}
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] else ","


def _encoding_error(path: Path, encoding: str) -> EncodingError:
    """Find the first undecodable line and suggest an encoding."""
    line_no, bad = 0, b""
    with open_binary(path) as raw:
        for line_no, line in enumerate(raw, start=1):
            try:
                line.decode(encoding)
            except UnicodeDecodeError:
                bad = line
                break
    suggestion = ""
    try:
        from charset_normalizer import from_bytes

        with open_binary(path) as raw:
            sample = raw.read(1 << 20)
        best = from_bytes(sample).best()
        if best is not None and best.encoding.replace("_", "-") not in ("utf-8", "ascii"):
            suggestion = best.encoding.replace("_", "-")
    except Exception:  # pragma: no cover - detection is a courtesy
        suggestion = ""
    if not suggestion:
        suggestion = "cp1252"
    snippet = bad[:60]
    return EncodingError(
        f"the file is not valid {encoding}: undecodable bytes {snippet!r}.",
        f"It looks like {suggestion}: choose encoding {suggestion!r} "
        f"(GUI: Encoding; CLI: --encoding {suggestion}), or re-save the file as UTF-8.",
        location=Location(path.name, line=line_no or None),
    )


class _ProgressTracker:
    """Reports how far through the (compressed) file the reader is."""

    def __init__(self, raw: IO[bytes], total: int) -> None:
        self._raw = raw
        self.total = max(total, 1)

    def fraction(self) -> float:
        try:
            fileobj = getattr(self._raw, "fileobj", None) or self._raw
            return min(fileobj.tell() / self.total, 1.0)
        except (OSError, ValueError):
            return 0.0


class TableReader:
    """An open delimited or JSONL file: ``header`` plus a ``records()`` iterator.

    Use as a context manager.
    """

    def __init__(self, path: str | Path, options: ReadOptions | None = None) -> None:
        self.path = Path(path)
        self.options = (options or ReadOptions()).resolved(self.path)
        self.header: list[str] = []
        self._raw = open_binary(self.path)
        self._tracker = _ProgressTracker(self._raw, self.path.stat().st_size)
        self._text = io.TextIOWrapper(
            self._raw, encoding=_text_encoding(self.options.encoding), errors="strict", newline=""
        )
        try:
            if self.options.format == "jsonl":
                self._records = self._jsonl()
            else:
                self._records = self._delimited()
            self._first = next(self._records, None)  # reads the header (and the first record)
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ public
    def records(self) -> Iterator[tuple[int, int, dict[str, Any]]]:
        """``(row_number, line_number, record)`` for each data row (1-based numbers)."""
        if self._first is None:
            return
        yield self._first
        yield from self._records

    def fraction_read(self) -> float:
        """How far through the file reading has come, in [0, 1]."""
        return self._tracker.fraction()

    def close(self) -> None:
        self._text.close()
        self._raw.close()

    def __enter__(self) -> TableReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ delimited
    def _loc(self, row: int | None = None, line: int | None = None, column: str | None = None) -> Location:
        return Location(self.path.name, row=row, line=line, column=column)

    def _delimited(self) -> Iterator[tuple[int, int, dict[str, Any]]]:
        opts = self.options
        quoting = csv.QUOTE_NONE if opts.quoting == "none" else csv.QUOTE_MINIMAL
        reader = csv.reader(self._text, delimiter=opts.delimiter or ",", quoting=quoting, strict=True)
        limit = opts.max_cell_chars
        rows = self._csv_rows(reader)
        try:
            _, header = next(rows)
        except StopIteration:
            raise EmptyFileError(
                "the file is empty.",
                "Choose a file with a header row and at least one data row.",
                location=self._loc(),
            ) from None
        header = [h.strip() for h in header]
        self.header = header
        self._check_header(header)
        width = len(header)
        row_no = 0
        for line, fields in rows:
            if not fields or (len(fields) == 1 and fields[0] == "" and width > 1):
                continue  # blank line
            row_no += 1
            if len(fields) != width:
                raise RaggedRowError(
                    f"expected {width} fields (as in the header) but found {len(fields)}.",
                    self._ragged_hint(len(fields), width),
                    location=self._loc(row_no, line),
                )
            for name, cell in zip(header, fields):
                if len(cell) > limit:
                    raise CellTooLargeError(
                        f"a cell holds {len(cell):,} characters; the limit is {limit:,}.",
                        "If the text really is that long, raise the limit (GUI: Max cell size; CLI: "
                        "--max-cell-chars); otherwise look for an unclosed quote just above this row.",
                        location=self._loc(row_no, line, name),
                    )
            yield row_no, line, dict(zip(header, fields))
        if row_no == 0:
            raise EmptyFileError(
                "the file has a header row but no data rows.",
                "Choose a file with at least one data row.",
                location=self._loc(),
            )

    def _csv_rows(self, reader: Any) -> Iterator[tuple[int, list[str]]]:
        """Wrap ``csv.reader`` turning its errors into named ones; yield (start line, fields)."""
        while True:
            start = reader.line_num + 1
            try:
                fields = next(reader)
            except StopIteration:
                return
            except UnicodeDecodeError:
                raise _encoding_error(self.path, self.options.encoding) from None
            except csv.Error as exc:
                text = str(exc)
                if "field larger than field limit" in text:
                    raise CellTooLargeError(
                        f"a cell starting on line {start} runs past {_CSV_MODULE_LIMIT:,} characters.",
                        "A quote opened there is probably never closed: fix the quoting, or re-import with "
                        "quoting 'none' if quotes in this file are plain text.",
                        location=self._loc(line=start),
                    ) from None
                raise QuotingError(
                    f"broken quoting ({text}).",
                    "A field that contains quotes must be wrapped in double quotes with inner quotes doubled "
                    '("say ""hi"""). If quotes in this file are plain text (e.g. GLUE SST-2), re-import with '
                    "quoting 'none' (CLI: --quoting none).",
                    location=self._loc(line=start),
                ) from None
            yield start, fields

    def _check_header(self, header: list[str]) -> None:
        if len(header) == 1:
            other = {d: header[0].count(d) for d in DELIMITER_NAMES if d != self.options.delimiter}
            best = max(other, key=lambda d: other[d])
            if other[best]:
                name = DELIMITER_NAMES[best]
                current = DELIMITER_NAMES.get(self.options.delimiter or ",", repr(self.options.delimiter))
                raise DelimiterError(
                    f"the header is a single column {header[0][:80]!r} when split on {current}s; "
                    f"it contains {other[best]} {name}(s).",
                    f"The file looks {name}-separated: choose delimiter {name} "
                    f"(CLI: --delimiter {best!r}).",
                    location=self._loc(line=1),
                )
        empty = [i + 1 for i, h in enumerate(header) if not h]
        if empty and len(header) > 1:
            raise DelimiterError(
                f"header column(s) {empty} have no name.",
                "Give every column a name in the header row, or check the delimiter.",
                location=self._loc(line=1),
            )

    def _ragged_hint(self, found: int, width: int) -> str:
        name = DELIMITER_NAMES.get(self.options.delimiter or ",", "delimiter")
        if self.options.quoting == "none":
            return (
                f"A text field probably contains a {name}. Quote such fields, or re-import with quoting 'csv'."
            )
        return (
            f"A text field probably contains an unquoted {name}, or a quote is unbalanced. Wrap such "
            "fields in double quotes, or check the delimiter; if quotes in this file are plain text, "
            "re-import with quoting 'none'."
        )

    # ------------------------------------------------------------------ JSON lines
    def _jsonl(self) -> Iterator[tuple[int, int, dict[str, Any]]]:
        limit = self.options.max_cell_chars
        row_no = 0
        line_no = 0
        try:
            for line_no, line in enumerate(self._text, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise MalformedJsonError(
                        f"not valid JSON ({exc.msg} at character {exc.pos}).",
                        "Each line must hold one JSON object; fix or remove this line.",
                        location=self._loc(row_no + 1, line_no),
                    ) from None
                if not isinstance(record, dict):
                    raise MalformedJsonError(
                        f"a JSON {type(record).__name__} instead of an object.",
                        'Each line must hold one JSON object such as {"text": "...", "label": "..."}.',
                        location=self._loc(row_no + 1, line_no),
                    )
                row_no += 1
                if row_no == 1:
                    self.header = [str(k) for k in record]
                clean: dict[str, Any] = {}
                for key, value in record.items():
                    if isinstance(value, (dict, list)):
                        raise MalformedJsonError(
                            f"field {key!r} holds a nested {type(value).__name__}.",
                            "Flatten the file so that every mapped field is a string or a number.",
                            location=self._loc(row_no, line_no, key),
                        )
                    if value is not None and not isinstance(value, str):
                        value = json.dumps(value) if isinstance(value, bool) else str(value)
                    if isinstance(value, str) and len(value) > limit:
                        raise CellTooLargeError(
                            f"a field holds {len(value):,} characters; the limit is {limit:,}.",
                            "If the text really is that long, raise the limit (GUI: Max cell size; "
                            "CLI: --max-cell-chars).",
                            location=self._loc(row_no, line_no, key),
                        )
                    clean[str(key)] = value
                yield row_no, line_no, clean
        except UnicodeDecodeError:
            raise _encoding_error(self.path, self.options.encoding) from None
        if row_no == 0:
            raise EmptyFileError(
                "the file holds no JSON records.",
                "Choose a file with one JSON object per line.",
                location=self._loc(),
            )
