"""Token ids of normalised text bytes, found with numpy instead of one Python object per token.

:func:`~engine.stats.tokenize.tokenize_many` turns a chunk of texts into bytes in which
tokens are runs of non-space bytes and documents are separated by a ``\\x00`` token.
Splitting that into millions of ``bytes`` objects and looking each one up in a dict costs
about 0.2 µs a token. :meth:`ByteVocabulary.ids` does the same with whole-array operations:

1. token boundaries are the changes of ``byte != space``;
2. a token of at most 16 bytes is exactly described by its length and two integers (its
   first 8 bytes and the rest, big-endian), read with one unaligned 8-byte gather each;
3. a 42-bit hash of (length, integers) is packed with the token's position into one int64,
   and one ``np.sort`` groups equal tokens, the first occurrence first in each group;
4. every token is compared with the first token of its group (length and both integers) and
   every group with the vocabulary entry of the same hash: a hash collision is *detected*,
   never trusted. A chunk with one is mapped by the exact Python path (``bytes.split`` and
   a dict) instead, and two vocabulary words with one hash switch the vocabulary to that
   path for good. The few tokens longer than 16 bytes are looked up in the dict one by one.

New words get the next ids in order of first occurrence, so the ids and the vocabulary are
exactly those of the Python path (``tests/engine/stats/test_tokenize.py`` checks both).
"""

from __future__ import annotations

import numpy as np

__all__ = ["ByteVocabulary"]

_SPACE = 0x20
_MAX_KEYED = 16  # tokens up to this many bytes are keyed by (length, first 8 bytes, rest)
_POSITION_BITS = 21  # tokens of one chunk the numpy path handles: < 2**21
_HASH_BITS = 63 - _POSITION_BITS
_K1, _K2, _K3 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F), np.uint64(0x165667B19E3779F9)
_MIX = np.uint64(0xFF51AFD7ED558CCD)


def _hash(length: np.ndarray, first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """A ``_HASH_BITS``-bit hash of (length, first, second) (uint64 arrays), as int64."""
    with np.errstate(over="ignore"):
        h = first * _K1
        h ^= second * _K2
        h ^= length * _K3
        h ^= h >> np.uint64(31)
        h *= _MIX
    h >>= np.uint64(64 - _HASH_BITS)
    return h.view(np.int64)


def _key_of(word: bytes) -> tuple[int, int, int]:
    """(length, first 8 bytes, the rest) of a word of at most 16 bytes, big-endian integers."""
    return len(word), int.from_bytes(word[:8], "big"), int.from_bytes(word[8:16], "big")


class ByteVocabulary:
    """Word (``bytes``) -> id, ids in order of first occurrence; maps chunks of tokens to ids.

    Parameters
    ----------
    first_words
        Words registered up front (ids ``0, 1, …``), e.g. the document separator.

    Attributes
    ----------
    words
        Word of each id.
    index
        Id of each word.
    """

    def __init__(self, first_words: tuple[bytes, ...] = ()) -> None:
        self.index: dict[bytes, int] = {}
        self.words: list[bytes] = []
        self._hashes = np.zeros(0, np.int64)  # sorted hashes of the keyed (short) words
        self._hash_ids = np.zeros(0, np.int64)
        self._hash_keys = np.zeros((0, 3), np.uint64)  # (length, first, second) of each
        self._hashing = True
        self._add([w for w in dict.fromkeys(first_words)])

    def __len__(self) -> int:
        return len(self.words)

    # ------------------------------------------------------------------ registering words

    def _add(self, words: list[bytes], keys: np.ndarray | None = None, keyed: np.ndarray | None = None) -> np.ndarray:
        """Give new ``words`` the next ids, in this order.

        ``keys`` are the (length, first, second) keys of the words ``keyed`` (a mask; all
        words if ``None``) when the caller has them; otherwise they are computed here.
        """
        ids = np.arange(len(self.words), len(self.words) + len(words), dtype=np.int64)
        self.index.update(zip(words, ids.tolist()))
        self.words.extend(words)
        if self._hashing:
            if keys is None:
                keyed = np.array([len(w) <= _MAX_KEYED for w in words], dtype=bool).reshape(-1)
                keys = np.array([_key_of(w) for w, k in zip(words, keyed) if k], dtype=np.uint64).reshape(-1, 3)
            self._register(keys, ids if keyed is None else ids[keyed])
        return ids

    def _register(self, keys: np.ndarray, ids: np.ndarray) -> None:
        """Add short words, given by their (length, first, second) keys, to the hash table."""
        if not len(keys):
            return
        hashes = _hash(keys[:, 0], keys[:, 1], keys[:, 2])
        order = np.argsort(hashes)
        hashes, keys, ids = hashes[order], keys[order], ids[order]
        at = np.searchsorted(self._hashes, hashes)
        known = self._hashes[np.minimum(at, len(self._hashes) - 1)] == hashes if len(self._hashes) else False
        if np.any(hashes[1:] == hashes[:-1]) or np.any(known):
            self._hashing = False  # two words share a hash: the exact Python path from now on
            return
        self._hashes = np.insert(self._hashes, at, hashes)
        self._hash_ids = np.insert(self._hash_ids, at, ids)
        self._hash_keys = np.insert(self._hash_keys, at, keys, axis=0)

    # ------------------------------------------------------------------ mapping a chunk

    def ids_python(self, data: bytes) -> np.ndarray:
        """Token ids of ``data`` with ``bytes.split`` and a dict (the exact reference path)."""
        words = data.split()
        index = self.index
        new = [w for w in dict.fromkeys(words) if w not in index]
        if new:
            self._add(new)
        return np.fromiter(map(index.__getitem__, words), dtype=np.int32, count=len(words))

    def ids(self, data: bytes) -> np.ndarray:
        """Token ids (int32) of the space-separated tokens of ``data``, registering new words."""
        if not self._hashing or not data:
            return self.ids_python(data)
        buf = np.frombuffer(data, np.uint8)
        n = len(buf)
        is_token = buf != _SPACE
        change = np.empty(n + 1, dtype=bool)
        change[0] = is_token[0]
        np.not_equal(is_token[1:], is_token[:-1], out=change[1:n])
        change[n] = is_token[-1]
        edges = np.flatnonzero(change)
        del is_token, change
        starts, lengths = edges[0::2], edges[1::2] - edges[0::2]
        n_tokens = len(starts)
        if n_tokens >= 1 << _POSITION_BITS:
            return self.ids_python(data)
        long_tokens = np.flatnonzero(lengths > _MAX_KEYED)
        if len(long_tokens):
            keyed = np.flatnonzero(lengths <= _MAX_KEYED)
            k_starts, k_lengths = starts[keyed], lengths[keyed]
        else:
            keyed, k_starts, k_lengths = None, starts, lengths

        # (length, first 8 bytes, the rest) of every keyed token
        padded = np.zeros(n + 16, np.uint8)
        padded[:n] = buf
        windows = np.ndarray((n + 8,), dtype=">u8", buffer=padded, strides=(1,))  # every 8-byte window
        length_u = k_lengths.astype(np.uint64)
        first = windows[k_starts].astype(np.uint64)
        first >>= np.uint64(8) * (np.uint64(8) - np.minimum(length_u, np.uint64(8)))
        second = windows[k_starts + 8].astype(np.uint64)
        second >>= np.uint64(8) * (np.uint64(16) - np.maximum(length_u, np.uint64(8)))  # by 64 (-> 0) if short
        del padded, windows

        # group equal tokens: sort (hash, position)
        packed = _hash(length_u, first, second) << _POSITION_BITS
        packed |= np.arange(len(k_starts), dtype=np.int64)
        packed.sort()
        position = packed & ((1 << _POSITION_BITS) - 1)
        packed >>= _POSITION_BITS  # the sorted hashes
        starts_group = np.empty(len(packed), dtype=bool)
        starts_group[:1] = True
        np.not_equal(packed[1:], packed[:-1], out=starts_group[1:])
        group_first = position[starts_group]  # lowest position of each group: its first occurrence
        group_hashes = packed[starts_group]
        group = np.empty(len(packed), dtype=np.int64)
        group[position] = np.cumsum(starts_group) - 1
        del packed, position, starts_group

        # exactness: every token equals the first token of its group ...
        rep = group_first[group]
        if not (
            np.array_equal(length_u[rep], length_u)
            and np.array_equal(first[rep], first)
            and np.array_equal(second[rep], second)
        ):
            return self.ids_python(data)
        del rep
        keys = np.stack([length_u[group_first], first[group_first], second[group_first]], axis=1)
        # ... and every group equals the vocabulary word with its hash, if any
        if len(self._hashes):
            at = np.minimum(np.searchsorted(self._hashes, group_hashes), len(self._hashes) - 1)
            found = self._hashes[at] == group_hashes
            if not np.array_equal(self._hash_keys[at[found]], keys[found]):
                return self.ids_python(data)
        else:
            at = np.zeros(len(group_hashes), np.int64)
            found = np.zeros(len(group_hashes), dtype=bool)
        group_ids = np.empty(len(group_first), dtype=np.int64)
        group_ids[found] = self._hash_ids[at[found]]

        # new words, keyed and long, get ids in order of first occurrence
        new_groups = np.flatnonzero(~found)
        new_first = group_first[new_groups] if keyed is None else keyed[group_first[new_groups]]
        long_words: list[bytes] = []
        if len(long_tokens):
            long_words = [data[s : s + n] for s, n in zip(starts[long_tokens].tolist(), lengths[long_tokens].tolist())]
        new_long: dict[bytes, int] = {}  # new long word -> its first position
        for word, p in zip(long_words, long_tokens.tolist()):
            if word not in self.index and word not in new_long:
                new_long[word] = p
        if len(new_groups) or new_long:
            order = np.argsort(np.concatenate([new_first, np.fromiter(new_long.values(), np.int64)]), kind="stable")
            group_starts = k_starts[group_first[new_groups]].tolist()
            group_lengths = k_lengths[group_first[new_groups]].tolist()
            candidates = [data[s : s + n] for s, n in zip(group_starts, group_lengths)] + list(new_long)
            is_keyed = order < len(new_groups)
            keyed_order = order[is_keyed]
            ids = self._add([candidates[i] for i in order.tolist()], keys[new_groups[keyed_order]], is_keyed)
            group_ids[new_groups[keyed_order]] = ids[is_keyed]
        if keyed is None:
            return group_ids[group].astype(np.int32)
        out = np.empty(n_tokens, dtype=np.int32)
        out[keyed] = group_ids[group]
        out[long_tokens] = np.fromiter(map(self.index.__getitem__, long_words), np.int32, len(long_words))
        return out
