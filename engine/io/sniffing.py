"""What kind of bytes a file holds: containers, byte-order marks, UTF-16 and single-byte text.

These checks look at the first bytes of a file (after gzip decompression) so that a reader
can name the problem instead of failing on it later: a ZIP archive renamed ``.csv``, UTF-16
text without a byte-order mark (every other byte is NUL), or a Latin-1 file opened as UTF-8.

:func:`guess_encoding` prefers Windows-1252/Latin-1 when those decode the bytes into
plausible Western European text, because a general-purpose detector on a short sample
often names another single-byte code page (cp1250, cp1257) that decodes the same bytes into
wrong letters ("brűlée" for "brûlée").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: How many bytes of a file the checks look at.
HEAD_BYTES = 1 << 16

# (magic at offset 0, what it is, what to do)
_MAGIC: tuple[tuple[bytes, str, str], ...] = (
    (b"PK\x03\x04", "a ZIP archive", "Unzip it first and import the CSV/TSV/JSONL file inside."),
    (b"PK\x05\x06", "an empty ZIP archive", "Unzip it first and import the CSV/TSV/JSONL file inside."),
    (b"PK\x07\x08", "a ZIP archive", "Unzip it first and import the CSV/TSV/JSONL file inside."),
    (b"BZh", "a bzip2-compressed file", "Decompress it first (bunzip2), or re-compress it with gzip (.gz), "
     "which imports directly."),
    (b"\xfd7zXZ\x00", "an xz-compressed file", "Decompress it first (unxz), or re-compress it with gzip (.gz), "
     "which imports directly."),
    (b"\x28\xb5\x2f\xfd", "a zstd-compressed file", "Decompress it first (unzstd), or re-compress it with "
     "gzip (.gz), which imports directly."),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive", "Extract it first and import the CSV/TSV/JSONL file inside."),
    (b"Rar!\x1a\x07", "a RAR archive", "Extract it first and import the CSV/TSV/JSONL file inside."),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an old Office document (.xls/.doc)",
     "Open it in your spreadsheet program and save the sheet as 'CSV UTF-8', then import that."),
    (b"%PDF-", "a PDF document", "Export the table from the PDF as CSV first."),
    (b"SQLite format 3\x00", "an SQLite database (perhaps a project file)",
     "Open project files with File > Open; export a table as CSV to import it."),
    (b"PAR1", "a Parquet file", "Convert it to CSV or JSONL first (e.g. pandas.read_parquet(...).to_csv(...))."),
    (b"\x89PNG", "a PNG image", "Choose the CSV/TSV/JSONL file holding the data."),
    (b"\xff\xd8\xff", "a JPEG image", "Choose the CSV/TSV/JSONL file holding the data."),
    (b"GIF8", "a GIF image", "Choose the CSV/TSV/JSONL file holding the data."),
    (b"\x7fELF", "a program (ELF executable)", "Choose the CSV/TSV/JSONL file holding the data."),
    (b"MZ", "a Windows program", "Choose the CSV/TSV/JSONL file holding the data."),
)
GZIP_MAGIC = b"\x1f\x8b"

_BOMS: tuple[tuple[bytes, str], ...] = (
    (b"\xff\xfe\x00\x00", "utf-32"),
    (b"\x00\x00\xfe\xff", "utf-32"),
    (b"\xff\xfe", "utf-16"),
    (b"\xfe\xff", "utf-16"),
)


@dataclass(frozen=True)
class Container:
    """A binary format recognised from its first bytes."""

    what: str
    hint: str


def detect_container(head: bytes) -> Container | None:
    """Name the archive/document/binary format that ``head`` starts with, if any.

    Examples
    --------
    >>> detect_container(b"PK\\x03\\x04" + bytes(26)).what
    'a ZIP archive'
    >>> detect_container(b"text,label\\n") is None
    True
    """
    for magic, what, hint in _MAGIC:
        if head.startswith(magic):
            if magic == b"MZ" and _mostly_text(head):
                continue  # a text file that happens to start with "MZ"
            if what == "a ZIP archive":
                return _zip_container(head)
            return Container(what, hint)
    if len(head) > 262 and head[257:262] == b"ustar":
        return Container("a tar archive", "Extract it first (tar -xf) and import the CSV/TSV/JSONL file inside.")
    return None


def _zip_container(head: bytes) -> Container:
    """A ZIP archive, named more precisely when it is a spreadsheet; with its first member."""
    member = ""
    if len(head) >= 30:
        n = int.from_bytes(head[26:28], "little")
        member = head[30:30 + n].decode("utf-8", errors="replace")
    if b"xl/" in head or (b"[Content_Types].xml" in head and b"word/" not in head):
        return Container("an Excel workbook (.xlsx)",
                         "Open it in your spreadsheet program and save the sheet as 'CSV UTF-8', then import that.")
    if b"opendocument.spreadsheet" in head:
        return Container("an OpenDocument spreadsheet (.ods)",
                         "Open it in your spreadsheet program and save the sheet as 'CSV UTF-8', then import that.")
    if b"word/" in head or b"opendocument.text" in head:
        return Container("a word-processor document", "Save the table as CSV first.")
    inside = f" holding {member!r}" if member else ""
    return Container(f"a ZIP archive{inside}",
                     f"Unzip it first and import the file inside{f' ({member})' if member else ''}; "
                     "gzip-compressed files (.gz) can be imported directly.")


def bom_encoding(head: bytes) -> str | None:
    """``"utf-16"`` or ``"utf-32"`` when ``head`` starts with that byte-order mark."""
    for bom, encoding in _BOMS:
        if head.startswith(bom):
            return encoding
    return None


def utf16_byte_order(head: bytes) -> str | None:
    """``"utf-16-le"``/``"utf-16-be"`` when ``head`` looks like UTF-16 text without a BOM.

    UTF-16 text in Latin script has a NUL byte in every other position: after each
    character (little-endian) or before it (big-endian). We require at least 16 bytes, at
    least 40% NULs at one parity and at most 5% at the other.

    Examples
    --------
    >>> utf16_byte_order("text,label\\n".encode("utf-16-be"))
    'utf-16-be'
    >>> utf16_byte_order("text,label\\n".encode("utf-8")) is None
    True
    """
    sample = head[: HEAD_BYTES - HEAD_BYTES % 2]
    if len(sample) < 16:
        return None
    even, odd = sample[0::2], sample[1::2]
    even_nul = even.count(0) / len(even)
    odd_nul = odd.count(0) / len(odd)
    if even_nul >= 0.4 and odd_nul <= 0.05:
        return "utf-16-be"
    if odd_nul >= 0.4 and even_nul <= 0.05:
        return "utf-16-le"
    return None


_CONTROL = bytes(set(range(32)) - {9, 10, 11, 12, 13, 27}) + b"\x7f"


def control_fraction(head: bytes) -> float:
    """Share of C0 control bytes (NUL, BEL… but not tab/newline/form feed) in ``head``."""
    if not head:
        return 0.0
    return sum(head.count(c) for c in _CONTROL) / len(head)


def _mostly_text(head: bytes) -> bool:
    return control_fraction(head) < 0.02


def looks_binary(head: bytes) -> bool:
    """More than 10% control bytes: not a text file in an ASCII-compatible encoding."""
    return control_fraction(head[:HEAD_BYTES]) > 0.10


@dataclass(frozen=True)
class EncodingGuess:
    """A suggested encoding and how to say it to the user."""

    encoding: str | None
    description: str


# cp1252 punctuation that Western text uses in the 0x80-0x9F range.
_CP1252_PUNCT = set("€‚„…†‡ˆ‰‹‘’“”•–—˜™›")
_WORD = re.compile(r"[^\W\d_]+")


def western_score(text: str) -> bool:
    """Whether ``text`` (decoded as cp1252/Latin-1) reads like Western European text.

    Western text has accented letters inside otherwise ASCII words ("crème", "naïve") and
    few of them; text in another code page (Cyrillic, Greek, Polish) read as cp1252 gives
    words made only of accented letters ("Ïðèâåò") or symbols between letters ("za¿ó³æ").
    """
    words = _WORD.findall(text)
    accented = [w for w in words if any(ord(c) > 127 for c in w)]
    letters = sum(len(w) for w in words)
    high_letters = sum(1 for w in accented for c in w if ord(c) > 127)
    symbols_in_words = len(re.findall(r"(?<=[^\W\d_])[\u00a1-\u00bf\u0152\u0153\u0178\u0160\u0161]"
                                      r"(?=[^\W\d_])", text))
    if not accented:
        # Only punctuation is non-ASCII: fine when it is cp1252 punctuation or Latin-1 symbols.
        odd = [c for c in text if ord(c) > 127 and c not in _CP1252_PUNCT and not ("\u00a0" <= c <= "\u00bf")]
        return not odd
    mixed = sum(1 for w in accented if any(ord(c) < 128 for c in w))
    if symbols_in_words > max(2, len(accented) // 10):
        return False
    return mixed / len(accented) >= 0.5 and high_letters / max(letters, 1) <= 0.3


def guess_encoding(sample: bytes, failed: str = "utf-8") -> EncodingGuess:
    """Suggest the encoding of ``sample``, whose decoding as ``failed`` went wrong.

    Order: UTF-16 (NUL pattern), binary data, mostly-UTF-8 with a few bad bytes, Western
    European (cp1252, else Latin-1), then :mod:`charset_normalizer`.
    """
    failed_norm = failed.lower().replace("_", "-")
    bom = bom_encoding(sample)
    if bom:
        return EncodingGuess(bom, f"{bom.upper()} text (it starts with a byte-order mark)")
    order = utf16_byte_order(sample)
    if order:
        return EncodingGuess(order, f"{order.upper()} text without a byte-order mark (every other byte is 0)")
    if looks_binary(sample):
        return EncodingGuess(None, f"binary data, not text ({control_fraction(sample):.0%} of its first bytes "
                                   "are control codes)")
    if failed_norm not in ("utf-8", "utf8", "utf-8-sig"):
        try:
            sample.decode("utf-8")
            return EncodingGuess("utf-8", "UTF-8 text")
        except UnicodeDecodeError as exc:
            if exc.start >= len(sample) - 4:  # cut in the middle of a character
                return EncodingGuess("utf-8", "UTF-8 text")
    else:
        decoded = sample.decode("utf-8", errors="replace")
        bad = decoded.count("\ufffd")
        good = sum(1 for c in decoded if ord(c) > 127 and c != "\ufffd")
        if good and good >= 2 * bad:
            return EncodingGuess(None, f"mostly UTF-8 ({good:,} characters) with {bad:,} bytes that are not: "
                                       "the file mixes encodings or is damaged")
    for candidate, name in (("cp1252", "Windows-1252"), ("latin-1", "ISO-8859-1 (Latin-1)")):
        if candidate.replace("-", "") == failed_norm.replace("-", "").replace("iso88591", "latin1"):
            continue
        try:
            text = sample.decode(candidate)
        except UnicodeDecodeError:
            continue
        if western_score(text):
            same = ""
            if candidate == "cp1252" and not any(0x80 <= b <= 0x9F for b in sample):
                same = ", which for the bytes in this file is the same as Latin-1/ISO-8859-1"
            return EncodingGuess(candidate, f"Western European text in {name} ({candidate}{same})")
        break
    try:
        from charset_normalizer import from_bytes

        best = from_bytes(sample).best()
    except Exception:  # pragma: no cover - detection is a courtesy
        best = None
    if best is not None:
        encoding = best.encoding.replace("_", "-")
        if encoding not in ("utf-8", "ascii", failed_norm):
            return EncodingGuess(encoding, f"{encoding} ({best.language or 'unknown language'})")
    return EncodingGuess(None, "an encoding that could not be recognised")
