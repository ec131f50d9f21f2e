"""Token ids with numpy (ByteVocabulary): exactly the ids of bytes.split and a dict, collisions included."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.stats import token_ids
from engine.stats.token_ids import ByteVocabulary
from engine.stats.tokenize import tokenize, tokenize_many

# words around the 8- and 16-byte boundaries of the numpy keys, multi-byte UTF-8 and the separator
_WORDS = [b"a", b"ab", b"abcdefg", b"abcdefgh", b"abcdefghi", b"abcdefghijklmnop", b"abcdefghijklmnopq",
          b"abcdefghijklmnopqrstuvwxyz0123", "caf\u00e9".encode(), "\u03c3\u03bf\u03c6\u03af\u03b1".encode(),
          b"\x00", b"abcdefgh" * 3, b"b", b"ba"]


def _reference(chunks: list[bytes]) -> tuple[list[list[int]], list[bytes]]:
    """Ids by first occurrence, with a plain dict."""
    index: dict[bytes, int] = {b"\x00": 0}
    out = []
    for data in chunks:
        out.append([index.setdefault(w, len(index)) for w in data.split()])
    return out, list(index)


_chunk = st.lists(st.sampled_from(_WORDS), max_size=40).map(b" ".join)


@settings(max_examples=150, deadline=None)
@given(st.lists(_chunk, min_size=1, max_size=6), st.sampled_from([42, 3, 1]))
def test_ids_match_a_dict(chunks, hash_bits):
    expected, words = _reference(chunks)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(token_ids, "_HASH_BITS", hash_bits)  # 3 or 1 bits: collisions everywhere
        vocab = ByteVocabulary((b"\x00",))
        got = [vocab.ids(data).tolist() for data in chunks]
    assert got == expected
    assert vocab.words == words
    assert vocab.index == {w: i for i, w in enumerate(words)}


def test_collisions_switch_to_the_exact_path():
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(token_ids, "_HASH_BITS", 1)
        vocab = ByteVocabulary((b"\x00",))
        assert vocab.ids(b"x y z x").tolist() == [1, 2, 3, 1]
        assert not vocab._hashing  # three words cannot have distinct 1-bit hashes
        assert vocab.ids(b"z w").tolist() == [3, 4]


def test_spaces_only_and_empty_chunks():
    vocab = ByteVocabulary((b"\x00",))
    assert vocab.ids(b"").tolist() == []
    assert vocab.ids(b"   ").tolist() == []
    assert vocab.ids(b" \x00  a ").tolist() == [0, 1]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from([*"abc xyz'.,-\u00e9\u2019\x00<>/", "<br />", "q" * 20]), max_size=10)
                .map("".join), max_size=12))
def test_tokenize_many_with_colliding_hashes_matches_tokenize(texts):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(token_ids, "_HASH_BITS", 2)
        tok = tokenize_many(texts, chunk_size=3)
    assert [tok.tokens(i) for i in range(len(texts))] == [tokenize(t) for t in texts]


def test_ids_are_int32_in_first_occurrence_order():
    vocab = ByteVocabulary((b"\x00",))
    ids = vocab.ids(b"the cat \x00 the hat")
    assert ids.dtype == np.int32
    assert ids.tolist() == [1, 2, 0, 1, 3]
    assert vocab.words == [b"\x00", b"the", b"cat", b"hat"]
