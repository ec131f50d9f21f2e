"""Tokenization for bias statistics, following Gardner et al. (2021).

Text is lower-cased, punctuation is removed and the rest is split on whitespace:

* apostrophes (``'``, `````, ``‘``, ``’``, ``ʼ``) are deleted, so ``don't`` -> ``dont`` and
  ``film's`` -> ``films``;
* every other punctuation or symbol character (anything that is neither a word character
  nor whitespace, plus ``_``) becomes a space, so ``well-made`` -> ``well made``;
* simple HTML tags such as IMDb's ``<br />`` are replaced by a space first;
* non-ASCII text is NFC-normalised so that composed and decomposed accents agree.

:func:`tokenize` handles one text; :func:`tokenize_many` handles a whole column: the texts
of a chunk are normalised together as bytes with a few whole-buffer operations (the rare
non-ASCII texts one by one with :func:`tokenize`'s rules) and token ids are found with numpy
(:mod:`engine.stats.token_ids`), over a shared vocabulary. Both give exactly the same tokens.

Counting modes (every occurrence, or each token at most once per example) are applied
when features are counted: see :func:`count_tokens` and
:class:`engine.stats.features.FeatureConfig`.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress
from engine.stats.token_ids import ByteVocabulary

#: Characters deleted outright (apostrophes and their look-alikes).
APOSTROPHES = "'`\u2018\u2019\u02bc"

_HTML_TAG = re.compile(r"<\s*/?\s*[a-z][a-z0-9]*\s*/?\s*>")
_DELETE = re.compile("[" + re.escape(APOSTROPHES) + "]")
# Anything that is not a word character, whitespace or the document separator.
_PUNCT = re.compile(r"[^\w\s\x00]|_")

_SEP = "\x00"  # joins documents in tokenize_many; never survives as part of a token
_SEP_JOIN = " \x00 "
_CHUNK_CHARS = 1_000_000  # characters tokenized at a time (bounds temporaries; see token_ids)


def _ascii_tables() -> tuple[bytes, bytes, bytes]:
    """Byte tables: for single texts (whitespace kept) and for joined chunks (whitespace -> space)."""
    table = bytearray(range(256))
    for i in range(128):
        ch = chr(i)
        if not (ch.isalnum() or ch.isspace() or i == 0):
            table[i] = ord(" ")
    for ch in string.ascii_uppercase:
        table[ord(ch)] = ord(ch.lower())
    # bytes.split() splits on fewer characters than str.split() (not on \x1c-\x1f): make every
    # ASCII whitespace character a plain space so both split the same
    chunk_table = bytearray(table)
    for i in range(128):
        if chr(i).isspace():
            chunk_table[i] = ord(" ")
    delete = "".join(c for c in APOSTROPHES if ord(c) < 128).encode("ascii")
    return bytes(table), bytes(chunk_table), delete


_ASCII_TABLE, _CHUNK_TABLE, _ASCII_DELETE = _ascii_tables()
# _HTML_TAG for lower-cased ASCII bytes: ``\s`` of a str pattern also matches \x1c-\x1f
_WS = rb"[\t-\r\x1c-\x1f ]"
_HTML_TAG_BYTES = re.compile(rb"<" + _WS + rb"*/?" + _WS + rb"*[a-z][a-z0-9]*" + _WS + rb"*/?" + _WS + rb"*>")


def _normalise(text: str) -> str:
    """Lower-case ``text`` and turn punctuation into spaces (``\\x00`` is kept)."""
    text = text.lower()
    if "<" in text:
        text = _HTML_TAG.sub(" ", text)
    if text.isascii():
        return text.encode("ascii").translate(_ASCII_TABLE, _ASCII_DELETE).decode("ascii")
    text = unicodedata.normalize("NFC", text)
    text = _DELETE.sub("", text)
    return _PUNCT.sub(" ", text)


def tokenize(text: str | None) -> list[str]:
    """Tokens of one text: lower-cased, punctuation removed, split on whitespace.

    Parameters
    ----------
    text
        The text (``None`` counts as empty).

    Returns
    -------
    list of str
        Every token occurrence, in order.

    Examples
    --------
    >>> tokenize("It's GREAT, isn't it?<br /><br />Well-made.")
    ['its', 'great', 'isnt', 'it', 'well', 'made']
    """
    if not text:
        return []
    if _SEP in text:
        text = text.replace(_SEP, " ")
    return _normalise(text).split()


def count_tokens(tokens: Sequence[str], *, per_document: bool = False) -> Counter[str]:
    """Count ``tokens``: every occurrence, or each distinct token once (``per_document``)."""
    return Counter(set(tokens)) if per_document else Counter(tokens)


@dataclass(frozen=True)
class TokenizedTexts:
    """Token ids of a column of texts over one vocabulary.

    Identical texts are tokenized once: ``offsets``/``ids`` describe the *distinct* texts
    and ``inverse`` maps every input text to its distinct row.

    Attributes
    ----------
    vocab
        Word of each token id.
    ids
        Token ids of all distinct texts, concatenated (int32).
    offsets
        Row ``u`` holds ``ids[offsets[u]:offsets[u + 1]]`` (int64, length ``n_unique + 1``).
    inverse
        Distinct row of each input text (int64, length ``n_texts``).
    """

    vocab: list[str]
    ids: np.ndarray
    offsets: np.ndarray
    inverse: np.ndarray

    @property
    def n_texts(self) -> int:
        """Number of input texts."""
        return len(self.inverse)

    @property
    def n_unique(self) -> int:
        """Number of distinct texts."""
        return len(self.offsets) - 1

    @property
    def unique_lengths(self) -> np.ndarray:
        """Token count of each distinct text."""
        return np.diff(self.offsets)

    @property
    def lengths(self) -> np.ndarray:
        """Token count of each input text."""
        return self.unique_lengths[self.inverse]

    def tokens(self, i: int) -> list[str]:
        """Tokens of input text ``i`` (for inspection and tests)."""
        u = self.inverse[i]
        return [self.vocab[t] for t in self.ids[self.offsets[u] : self.offsets[u + 1]]]


class _Vocab(dict):
    """Key -> id; a missing key gets the next id (so ids follow first occurrence)."""

    def __missing__(self, key: object) -> int:
        self[key] = i = len(self)
        return i


def _chunk_bytes(chunk: list[str]) -> bytes:
    """Normalised UTF-8 bytes of ``chunk``, documents separated by ``b" \\x00 "``.

    ASCII texts (``str.isascii`` is O(1)) are normalised together on the joined bytes with
    ``bytes.lower``, one bytes regex for HTML tags (only if a ``<`` occurs) and one
    ``bytes.translate``. The rare non-ASCII texts go through :func:`_normalise` one by one
    first, with their Unicode whitespace turned into plain spaces; the byte table leaves
    their non-ASCII bytes alone and changes nothing else in them. The result splits
    (``bytes.split``) into exactly the tokens of :func:`tokenize`.
    """
    ascii_ = np.fromiter(map(str.isascii, chunk), dtype=bool, count=len(chunk))
    if not ascii_.all():
        chunk = list(chunk)
        for i in np.flatnonzero(~ascii_).tolist():
            chunk[i] = " ".join(_normalise(chunk[i].replace(_SEP, " ")).split())
    joined = _SEP_JOIN.join(chunk)
    if joined.count(_SEP) != len(chunk) - 1:  # a text holds the separator itself
        joined = _SEP_JOIN.join(t.replace(_SEP, " ") for t in chunk)
    data = joined.encode("utf-8")
    del joined
    if b"<" in data:
        data = _HTML_TAG_BYTES.sub(b" ", data.lower())
    return data.translate(_CHUNK_TABLE, _ASCII_DELETE)


def _chunks(texts: Sequence[str], max_texts: int, max_chars: int) -> list[tuple[int, int]]:
    """``(start, stop)`` of consecutive runs of ``texts`` with at most ``max_texts`` texts and
    about ``max_chars`` characters (a longer text makes a chunk of its own)."""
    if not texts:
        return []
    ends = np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)) + len(_SEP_JOIN))
    bounds = []
    start = 0
    while start < len(texts):
        before = int(ends[start - 1]) if start else 0
        stop = int(np.searchsorted(ends, before + max_chars, side="right"))
        stop = min(max(stop, start + 1), start + max(max_texts, 1))
        bounds.append((start, stop))
        start = stop
    return bounds


def tokenize_many(
    texts: Sequence[str | None],
    *,
    dedupe: bool = True,
    chunk_size: int = 50_000,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> TokenizedTexts:
    """Tokenize a column of texts into ids over a shared vocabulary.

    The texts of a chunk (up to ``chunk_size`` texts, about a million characters) are joined
    with a separator token and normalised as bytes with a few whole-buffer operations
    (:func:`_chunk_bytes`); :class:`~engine.stats.token_ids.ByteVocabulary` finds the token
    ids with array operations (ids in order of first occurrence, hash collisions detected
    and resolved exactly); the separator positions give the document boundaries. Only the
    vocabulary is decoded back to ``str``.

    Parameters
    ----------
    texts
        The texts (``None`` counts as empty).
    dedupe
        Tokenize each distinct text once (identical texts share a row). Results are the
        same either way; turning it off only costs time.
    chunk_size
        At most this many distinct texts per chunk (chunks also stop at about a million
        characters, which bounds the memory of intermediate arrays).
    progress, cancel
        Progress callback and cancel token, polled once per chunk.

    Returns
    -------
    TokenizedTexts
    """
    token = ensure_token(cancel)
    if None in texts:
        texts = ["" if t is None else t for t in texts]
    if dedupe:
        # one pass: a text's distinct row is its first-occurrence rank
        position = _Vocab()
        inverse = np.fromiter(map(position.__getitem__, texts), dtype=np.int64, count=len(texts))
        unique: list[str] = list(position)
        del position
    else:
        unique = texts
        inverse = np.arange(len(texts), dtype=np.int64)
    del texts

    vocab = ByteVocabulary((_SEP.encode("ascii"),))  # the separator is word 0
    id_chunks: list[np.ndarray] = []
    length_chunks: list[np.ndarray] = []
    n_unique = len(unique)
    for start, stop in _chunks(unique, chunk_size, _CHUNK_CHARS):
        token.raise_if_cancelled()
        ids = vocab.ids(_chunk_bytes(unique[start:stop]))
        ids = np.append(ids, np.int32(0))  # close the last document
        is_sep = ids == 0
        ends = np.flatnonzero(is_sep)
        # tokens per document = gap between consecutive separators
        length_chunks.append(np.diff(ends, prepend=-1) - 1)
        id_chunks.append(ids[~is_sep])
        progress(stop / n_unique, "Tokenizing")

    lengths = np.concatenate(length_chunks) if length_chunks else np.zeros(0, np.int64)
    offsets = np.zeros(n_unique + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    ids = np.concatenate(id_chunks) if id_chunks else np.zeros(0, np.int32)
    del id_chunks
    # drop the separator from the vocabulary: shift every id down by one
    ids -= 1
    words_out = [w.decode("utf-8") for w in vocab.words[1:]]
    return TokenizedTexts(vocab=words_out, ids=ids, offsets=offsets, inverse=inverse)
