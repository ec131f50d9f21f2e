"""Tokenization for bias statistics, following Gardner et al. (2021).

Text is lower-cased, punctuation is removed and the rest is split on whitespace:

* apostrophes (``'``, `````, ``‘``, ``’``, ``ʼ``) are deleted, so ``don't`` -> ``dont`` and
  ``film's`` -> ``films``;
* every other punctuation or symbol character (anything that is neither a word character
  nor whitespace, plus ``_``) becomes a space, so ``well-made`` -> ``well made``;
* simple HTML tags such as IMDb's ``<br />`` are replaced by a space first;
* non-ASCII text is NFC-normalised so that composed and decomposed accents agree.

:func:`tokenize` handles one text; :func:`tokenize_many` handles a whole column with a
handful of calls on one joined string (no per-character Python loop) and returns integer
token ids over a shared vocabulary. Both give exactly the same tokens.

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

#: Characters deleted outright (apostrophes and their look-alikes).
APOSTROPHES = "'`\u2018\u2019\u02bc"

_HTML_TAG = re.compile(r"<\s*/?\s*[a-z][a-z0-9]*\s*/?\s*>")
_DELETE = re.compile("[" + re.escape(APOSTROPHES) + "]")
# Anything that is not a word character, whitespace or the document separator.
_PUNCT = re.compile(r"[^\w\s\x00]|_")

_SEP = "\x00"  # joins documents in tokenize_many; never survives as part of a token
_SEP_JOIN = " \x00 "


def _ascii_tables() -> tuple[bytes, bytes]:
    table = bytearray(range(256))
    for i in range(256):
        ch = chr(i)
        if i < 128 and not (ch.isalnum() or ch.isspace() or i == 0):
            table[i] = ord(" ")
    for ch in string.ascii_uppercase:
        table[ord(ch)] = ord(ch.lower())
    delete = "".join(c for c in APOSTROPHES if ord(c) < 128).encode("ascii")
    return bytes(table), delete


_ASCII_TABLE, _ASCII_DELETE = _ascii_tables()


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
    """Word -> id; a missing word gets the next id (so ids follow first occurrence)."""

    def __missing__(self, word: str) -> int:
        self[word] = i = len(self)
        return i


def tokenize_many(
    texts: Sequence[str | None],
    *,
    dedupe: bool = True,
    chunk_size: int = 50_000,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> TokenizedTexts:
    """Tokenize a column of texts into ids over a shared vocabulary.

    The texts of a chunk are joined with a separator token, normalised with a few
    whole-string operations (``str.lower``, ``bytes.translate`` or one regex) and split
    once; the separator positions give the document boundaries. Words become ids through
    one dictionary look-up per token (a C-level ``map``).

    Parameters
    ----------
    texts
        The texts (``None`` counts as empty).
    dedupe
        Tokenize each distinct text once (identical texts share a row). Results are the
        same either way; turning it off only costs time.
    chunk_size
        Distinct texts per chunk (bounds the memory of intermediate token lists).
    progress, cancel
        Progress callback and cancel token, polled once per chunk.

    Returns
    -------
    TokenizedTexts
    """
    token = ensure_token(cancel)
    texts = ["" if t is None else t for t in texts]
    if dedupe:
        first = dict.fromkeys(texts)
        position = {t: i for i, t in enumerate(first)}
        inverse = np.fromiter(map(position.__getitem__, texts), dtype=np.int64, count=len(texts))
        unique = list(first)
    else:
        unique = texts
        inverse = np.arange(len(texts), dtype=np.int64)

    vocab = _Vocab({_SEP: 0})
    id_chunks: list[np.ndarray] = []
    length_chunks: list[np.ndarray] = []
    n_unique = len(unique)
    for start in range(0, max(n_unique, 1), chunk_size):
        token.raise_if_cancelled()
        chunk = unique[start : start + chunk_size]
        if not chunk:
            break
        joined = _SEP_JOIN.join(chunk)
        if joined.count(_SEP) != len(chunk) - 1:  # a text holds the separator itself
            joined = _SEP_JOIN.join(t.replace(_SEP, " ") for t in chunk)
        words = _normalise(joined).split()
        words.append(_SEP)  # close the last document
        # one C-level dict look-up per token; unseen words get the next id (_Vocab.__missing__)
        ids = np.fromiter(map(vocab.__getitem__, words), dtype=np.int32, count=len(words))
        is_sep = ids == 0
        ends = np.flatnonzero(is_sep)
        # tokens per document = gap between consecutive separators
        length_chunks.append(np.diff(ends, prepend=-1) - 1)
        id_chunks.append(ids[~is_sep])
        progress(min(1.0, (start + len(chunk)) / max(n_unique, 1)), "Tokenizing")

    lengths = np.concatenate(length_chunks) if length_chunks else np.zeros(0, np.int64)
    offsets = np.zeros(n_unique + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    ids = np.concatenate(id_chunks) if id_chunks else np.zeros(0, np.int32)
    # drop the separator from the vocabulary: shift every id down by one
    ids -= 1
    words_out = list(vocab)[1:]
    return TokenizedTexts(vocab=words_out, ids=ids, offsets=offsets, inverse=inverse)
