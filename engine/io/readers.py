"""Streaming readers for CSV, TSV and JSONL files (optionally gzip-compressed).

A reader yields ``(row_number, line_number, record)`` with ``record`` a dict keyed by
header names, and turns every malformed-input condition into a named
:class:`~engine.errors.ImportDataError` that says where and what to do.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import math
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

from engine.errors import (
    BinaryFileError,
    CellTooLargeError,
    DelimiterError,
    EmptyFileError,
    EncodingError,
    InvalidCharacterError,
    JsonNumberTooLongError,
    JsonTooDeepError,
    Location,
    MalformedJsonError,
    QuotingError,
    RaggedRowError,
    UnknownEncodingError,
    UnsupportedFormatError,
)
from engine.io.checks import DataWarning, HeaderInfo, dedupe_header
from engine.io.sniffing import (
    HEAD_BYTES,
    bom_encoding,
    control_fraction,
    detect_container,
    guess_encoding,
    looks_binary,
    utf16_byte_order,
)
from engine.io.sources import InputStream, check_path, open_input, read_head

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

    def resolved(self, path: Path, head: bytes | None = None) -> ReadOptions:
        """Fill ``format`` and ``delimiter`` from the file name and first line (``head``, read if not given)."""
        fmt = self.format
        if fmt == "auto":
            fmt = format_from_name(path)
        if fmt not in FORMATS:
            raise UnsupportedFormatError(
                f"{path.name}: format {fmt!r} is not supported.",
                "Import CSV, TSV or JSONL (optionally .gz); convert other formats to one of these.",
            )
        delimiter = _checked_delimiter(self.delimiter, self.quoting, path) if fmt != "jsonl" else self.delimiter
        if fmt == "tsv" and delimiter is None:
            delimiter = "\t"
        elif fmt == "csv" and delimiter is None:
            if _suffix(path) == ".csv":
                delimiter = ","
            else:
                delimiter = sniff_delimiter(path, self.encoding, head)
        return replace(self, format=fmt, delimiter=delimiter)


def _checked_delimiter(delimiter: str | None, quoting: str, path: Path) -> str | None:
    """``delimiter`` if it can separate fields (``\\t`` and ``tab`` mean a tab); else :class:`DelimiterError`."""
    if delimiter in ("\\t", "tab", "TAB"):
        return "\t"
    if delimiter is None or (len(delimiter) == 1 and delimiter not in "\r\n" and not (quoting == "csv" and delimiter == '"')):
        return delimiter
    if delimiter in ("\r", "\n"):
        why = "a line break cannot separate fields"
    elif delimiter == '"':
        why = "the double quote wraps fields (use --quoting none to split on it)"
    else:
        why = f"a delimiter is exactly one character, this is {len(delimiter)}"
    raise DelimiterError(
        f"{path.name}: the delimiter {delimiter!r} cannot be used: {why}.",
        "Give one character, e.g. --delimiter ';' or --delimiter '|'; for a tab give --delimiter tab (or $'\\t' in "
        "bash), or leave it out to take it from the file's extension.",
    )


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
    """Open ``path`` for reading bytes, decompressing gzip (recognised by content) transparently.

    Read failures (truncated or corrupt gzip, I/O errors) raise named errors.
    """
    return open_input(path).stream


def _is_utf8(encoding: str) -> bool:
    return encoding.lower().replace("_", "-") in ("utf-8", "utf8", "utf-8-sig", "u8")


def _text_encoding(encoding: str) -> str:
    return "utf-8-sig" if _is_utf8(encoding) else encoding


def sniff_delimiter(path: Path, encoding: str = "utf-8", head: bytes | None = None) -> str:
    """The most frequent of tab, comma, semicolon and pipe on the first line."""
    if head is None:
        head = read_head(path)[1]
    try:
        first = head.decode(_text_encoding(encoding), errors="replace").split("\n", 1)[0]
    except LookupError:
        first = ""
    counts = {d: first.count(d) for d in DELIMITER_NAMES}
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] else ","


def _encoding_error(path: Path, encoding: str) -> EncodingError:
    """Find the first undecodable line and suggest an encoding (see :func:`guess_encoding`)."""
    if codecs.lookup(encoding).name.startswith(("utf-16", "utf-32")):
        return EncodingError(
            f"the file is not valid {encoding}: it has an odd number of bytes or a broken surrogate pair.",
            "The file is damaged or not in this encoding: choose another encoding (GUI: Encoding; "
            "CLI: --encoding), or re-save the file as UTF-8.",
            location=Location(path.name),
        )
    line_no, bad, offset = 0, b"", 0
    with open_input(path) as source:
        for line_no, line in enumerate(source.stream, start=1):
            try:
                line.decode(_text_encoding(encoding))
            except UnicodeDecodeError:
                bad = line
                break
            offset += len(line)
        else:
            line_no = 0
    with open_input(path) as source:
        source_head = source.stream.read(1 << 20)
    sample = source_head if bad[:200] in source_head else source_head + b"\n" + bad
    guess = guess_encoding(sample, encoding)
    snippet = bad[:60]
    if guess.encoding:
        shown = ""
        try:
            shown = f" With it, line {line_no} reads {bad[:80].decode(guess.encoding).rstrip()!r}."
        except (UnicodeDecodeError, LookupError):
            pass
        hint = (f"It looks like {guess.description}: choose encoding {guess.encoding!r} (GUI: Encoding; "
                f"CLI: --encoding {guess.encoding}), or re-save the file as UTF-8.{shown}")
    elif guess.description.startswith("mostly UTF-8"):
        hint = (f"It looks like {guess.description}. Fix or remove line {line_no}, or re-save the whole "
                "file as UTF-8 from the program that wrote it.")
    else:
        hint = (f"It looks like {guess.description}. Re-save the file as UTF-8 text, or choose its encoding "
                "(GUI: Encoding; CLI: --encoding).")
    return EncodingError(
        f"the file is not valid {encoding}: undecodable bytes {snippet!r}.",
        hint,
        location=Location(path.name, line=line_no or None),
    )


def _check_encoding_name(path: Path, encoding: str) -> None:
    try:
        info = codecs.lookup(encoding)
    except LookupError:
        raise UnknownEncodingError(
            f"there is no text encoding called {encoding!r}.",
            "Choose one such as utf-8, cp1252, latin-1, utf-16, gb18030 or shift_jis.",
            location=Location(path.name),
        ) from None
    if not getattr(info, "_is_text_encoding", True):
        raise UnknownEncodingError(
            f"{encoding!r} is not a text encoding.",
            "Choose one such as utf-8, cp1252, latin-1, utf-16, gb18030 or shift_jis.",
            location=Location(path.name),
        )


def resolve_encoding(path: Path, requested: str, raw_head: bytes, head: bytes) -> str:
    """The encoding to read ``path`` with, or a named error that says what the bytes are.

    A UTF-16/UTF-32 byte-order mark is followed when UTF-8 (the default) was asked for;
    UTF-16 without a mark is named (with its byte order) in an error; archives, documents
    and other binary files raise :class:`BinaryFileError`.
    """
    _check_encoding_name(path, requested)
    loc = Location(path.name)
    for data, inner in ((raw_head, ""), (head, " inside the gzip compression")):
        container = detect_container(data)
        if container is not None:
            raise BinaryFileError(f"this is {container.what}{inner}, not a CSV, TSV or JSONL text file.",
                                  container.hint, location=loc)
    norm = codecs.lookup(requested).name
    bom = bom_encoding(head)
    if bom:
        if _is_utf8(requested) or norm == bom.replace("-", "_") or norm == bom:
            return bom
        return requested
    order = utf16_byte_order(head)
    if order:
        if norm in ("utf-16", "utf_16"):
            return order
        if norm.startswith("utf-16") or norm.startswith("utf_16"):
            return requested
        raise EncodingError(
            f"the file is {order.upper()} text without a byte-order mark (every other byte is 0), "
            f"not {requested}.",
            f"Choose encoding {order!r} (GUI: Encoding; CLI: --encoding {order}), or re-save the file as UTF-8.",
            location=loc,
        )
    if looks_binary(head) and not norm.startswith(("utf_16", "utf_32", "utf-16", "utf-32")):
        raise BinaryFileError(
            f"this does not look like a text file: {control_fraction(head[:HEAD_BYTES]):.0%} of its first "
            "bytes are control codes.",
            "Choose the CSV, TSV or JSONL file holding the data; if this is one, re-save it as UTF-8 text.",
            location=loc,
        )
    return requested


class _ProgressTracker:
    """Reports how far through the (compressed) file the reader is."""

    def __init__(self, source: InputStream) -> None:
        self._source = source
        self.total = max(source.size, 1)

    def fraction(self) -> float:
        return min(self._source.tell_raw() / self.total, 1.0)


class TableReader:
    """An open delimited or JSONL file: ``header`` plus a ``records()`` iterator.

    Use as a context manager.
    """

    def __init__(self, path: str | Path, options: ReadOptions | None = None) -> None:
        self.path = Path(path)
        options = options or ReadOptions()
        check_path(self.path)
        if (options.format if options.format != "auto" else format_from_name(self.path)) not in FORMATS:
            options.resolved(self.path, b"")  # raises UnsupportedFormatError
        raw_head, head = read_head(self.path)
        encoding = resolve_encoding(self.path, options.encoding, raw_head, head)
        self.options = replace(options, encoding=encoding).resolved(self.path, head)
        self.header: list[str] = []
        #: Header-level warnings (duplicate column names); see :mod:`engine.io.checks`.
        self.header_info = HeaderInfo()
        #: Columns of the row last yielded that held JSON NaN/Infinity (read as ``None``).
        self.row_nonfinite: tuple[str, ...] = ()
        #: The column mapping in use, if the caller sets it (named in warnings).
        self.mapping: Any = None
        self._source: InputStream = open_input(self.path)
        self._raw = self._source.stream
        self._tracker = _ProgressTracker(self._source)
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

    @property
    def warnings(self) -> list[DataWarning]:
        """Warnings about the file's structure found so far (duplicate header names)."""
        warning = self.header_info.warning(self.mapping.as_dict() if self.mapping is not None else None)
        return [warning] if warning else []

    def close(self) -> None:
        try:
            self._text.close()
        except Exception:  # closing a stream that failed mid-read must not hide the error
            pass
        self._source.close()

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
        header = [h.replace("\x00", "").strip() for h in header]
        self._check_header(header)
        header, self.header_info = dedupe_header(header)
        self.header = header
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
                loc = self._loc(row_no + 1, line_no)
                record = _parse_json_line(line, loc)
                if not isinstance(record, dict):
                    raise MalformedJsonError(
                        f"a JSON {type(record).__name__} instead of an object.",
                        'Each line must hold one JSON object such as {"text": "...", "label": "..."}.',
                        location=loc,
                    )
                row_no += 1
                if row_no == 1:
                    self.header = [str(k) for k in record]
                clean: dict[str, Any] = {}
                nonfinite: list[str] = []
                check_surrogates = "\\u" in line
                for key, value in record.items():
                    if isinstance(value, (dict, list)):
                        raise MalformedJsonError(
                            f"field {key!r} holds a nested {type(value).__name__}.",
                            "Flatten the file so that every mapped field is a string or a number.",
                            location=self._loc(row_no, line_no, key),
                        )
                    if value is _NON_FINITE:
                        nonfinite.append(key)
                        value = None
                    elif value is not None and not isinstance(value, str):
                        value = json.dumps(value) if isinstance(value, bool) else str(value)
                    if isinstance(value, str) and len(value) > limit:
                        raise CellTooLargeError(
                            f"a field holds {len(value):,} characters; the limit is {limit:,}.",
                            "If the text really is that long, raise the limit (GUI: Max cell size; "
                            "CLI: --max-cell-chars).",
                            location=self._loc(row_no, line_no, key),
                        )
                    if check_surrogates:
                        self._check_surrogates(key, value, row_no, line_no)
                    clean[str(key)] = value
                self.row_nonfinite = tuple(nonfinite)
                yield row_no, line_no, clean
        except UnicodeDecodeError:
            raise _encoding_error(self.path, self.options.encoding) from None
        if row_no == 0:
            raise EmptyFileError(
                "the file holds no JSON records.",
                "Choose a file with one JSON object per line.",
                location=self._loc(),
            )

    def _check_surrogates(self, key: str, value: str | None, row: int, line: int) -> None:
        for text, what in ((key, "field name"), (value, "value")):
            if text and _SURROGATE.search(text):
                bad = _SURROGATE.search(text).group()  # type: ignore[union-attr]
                raise InvalidCharacterError(
                    f"the {what} holds a lone surrogate escape '\\u{ord(bad):04x}', which is not a character "
                    "(surrogates only come in pairs, e.g. '\\ud83d\\ude00' for one emoji).",
                    "Fix the escape (or remove the row): the program that wrote the file split an emoji or "
                    "cut a string in the middle of a character.",
                    location=self._loc(row, line, key),
                )


_SURROGATE = re.compile("[\ud800-\udfff]")


class _NonFinite:
    """JSON ``NaN``, ``Infinity``, ``-Infinity`` or a float that overflows (read as ``None``)."""

    def __repr__(self) -> str:
        return "NaN"


_NON_FINITE = _NonFinite()


class _JsonNumberTooLong(Exception):
    def __init__(self, digits: int) -> None:
        super().__init__(digits)
        self.digits = digits


def _parse_int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise _JsonNumberTooLong(len(text.lstrip("-"))) from None


def _parse_float(text: str) -> float | _NonFinite:
    value = float(text)
    return value if math.isfinite(value) else _NON_FINITE


def _parse_json_line(line: str, loc: Location) -> Any:
    """``json.loads`` with NaN/Infinity read as missing and its limits turned into named errors."""
    try:
        return json.loads(line, parse_int=_parse_int, parse_float=_parse_float,
                          parse_constant=lambda _: _NON_FINITE)
    except json.JSONDecodeError as exc:
        raise MalformedJsonError(
            f"not valid JSON ({exc.msg} at character {exc.pos}).",
            "Each line must hold one JSON object; fix or remove this line.",
            location=loc,
        ) from None
    except _JsonNumberTooLong as exc:
        raise JsonNumberTooLongError(
            f"a JSON number with {exc.digits:,} digits; numbers are limited to "
            f"{sys.get_int_max_str_digits():,} digits.",
            "If it is an identifier or text, write it as a JSON string (in quotes); otherwise fix or remove "
            "the row.",
            location=loc,
        ) from None
    except RecursionError:
        raise JsonTooDeepError(
            "a JSON value is nested too deeply to read (thousands of brackets).",
            "Each line must hold one flat JSON object; fix or remove this line.",
            location=loc,
        ) from None
