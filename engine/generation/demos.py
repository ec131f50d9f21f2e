"""The demonstration pool: the sentence edits of a dataset's human pairs and accepted candidates, retrieved as the
few-shot examples of each sentence edit request.

Each pair (:mod:`engine.generation.demo_pairs`) is cut into sentences and aligned (:func:`sentence_edits`); every
sentence the revision rewrote one for one — a minimal edit, not a new text — is a :class:`Demo`. An edit request of
the first try (prompt ``edit_sentence``) takes the ``k`` demos nearest to its sentence (cosine of MiniLM vectors,
exact) that go the same way (original label → target) in place of the prompt's invented examples; the demos of the
example's own text are never offered. The pool is read again before each chunk, so that candidates accepted while
a run goes on teach the next chunk. With no pair at all, nothing changes: the invented examples stay.
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.generation.demo_pairs import Pair, accepted_pairs, imported_pairs
from engine.text.distance import word_edit_distance, words
from engine.text.sentences import split_sentences

if TYPE_CHECKING:
    from engine.retrieval.encoders import Encoder
    from engine.store.project import Project

__all__ = ["DEMO_PROMPT", "Demo", "DemoPool", "sentence_edits", "text_hash", "with_demos"]

#: The prompt whose invented examples demonstrations replace.
DEMO_PROMPT = "edit_sentence"
#: Word edit distance above which an aligned sentence pair is a rewrite, not an edit (not a demonstration).
MAX_DISTANCE = 0.6
#: Shortest sentence (words) taken as a demonstration.
MIN_WORDS = 3
#: Longest sentence (characters) taken: a demonstration is shown inside every request that retrieves it.
MAX_CHARS = 400


def text_hash(text: str) -> str:
    """The identity of a text for "not the example's own pair": its words, lower-cased."""
    return hashlib.sha256(" ".join(words(text)).encode()).hexdigest()[:24]


@dataclass(frozen=True)
class Demo:
    """One sentence of an original text and its edit in the counterfactual, with the neighbouring sentences."""

    id: str
    source: str
    label: str
    target: str
    before: str
    sentence: str
    after: str
    edited: str
    change: tuple[str, ...]
    origin: str

    def to_dict(self) -> dict[str, Any]:
        """What a candidate records of a demonstration it was shown."""
        return {"id": self.id, "source": self.source, "sentence": self.sentence, "edited": self.edited}


def sentence_edits(original: str, revised: str) -> list[tuple[int, str, str]]:
    """``(index, sentence, edited)`` of every sentence of ``original`` that ``revised`` rewrote one for one, within
    :data:`MAX_DISTANCE` (sentences added, removed, merged or rewritten from scratch are left out).

    Examples
    --------
    >>> sentence_edits("I saw it. The plot is dull. Bye.", "I saw it. The plot is gripping. Bye.")
    [(1, 'The plot is dull.', 'The plot is gripping.')]
    """
    a, b = split_sentences(original), split_sentences(revised)
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op != "replace" or i2 - i1 != j2 - j1:
            continue
        for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
            if (len(words(a[i])) >= MIN_WORDS and len(a[i]) <= MAX_CHARS and len(b[j]) <= MAX_CHARS
                    and word_edit_distance(a[i], b[j]) <= MAX_DISTANCE):
                out.append((i, a[i], b[j]))
    return out


def _demos(pair: Pair) -> list[Demo]:
    sentences = split_sentences(pair.original)
    origin = text_hash(pair.original)
    out = []
    for i, sentence, edited in sentence_edits(pair.original, pair.revised):
        new = set(words(edited))
        change = tuple(dict.fromkeys(w for w in words(sentence) if w not in new))
        out.append(Demo(f"{pair.ref}:{i}", pair.source, pair.label, pair.target,
                        sentences[i - 1] if i else "", sentence, sentences[i + 1] if i + 1 < len(sentences) else "",
                        edited, change, origin))
    return out


class DemoPool:
    """The demonstrations of one dataset with their sentence vectors (cached in the project by encoder and text).

    Parameters
    ----------
    project, dataset_id
        Where the pairs are read from.
    encoder
        The sentence encoder (default: MiniLM-L6, as CORE's index); created on first use.
    """

    def __init__(self, project: Project, dataset_id: int, encoder: Encoder | None = None) -> None:
        self.project, self.dataset_id = project, dataset_id
        self._encoder = encoder
        self.demos: list[Demo] = []
        self._vectors = np.zeros((0, 0), dtype=np.float32)
        self._seen: set[str] = set()
        self._queries: dict[str, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.demos)

    @property
    def encoder(self) -> Encoder:
        if self._encoder is None:
            from engine.retrieval.encoders import make_encoder

            self._encoder = make_encoder("minilm-l6")
        return self._encoder

    def refresh(self) -> int:
        """Read pairs stored since the last call (imported, or accepted in review); return the demos added."""
        pairs = [p for p in (*imported_pairs(self.project, self.dataset_id),
                             *accepted_pairs(self.project, self.dataset_id)) if p.ref not in self._seen]
        self._seen.update(p.ref for p in pairs)
        new = [d for p in pairs for d in _demos(p)]
        if not new:
            return 0
        vectors = self._embed([d.sentence for d in new])
        self._vectors = vectors if not self.demos else np.vstack([self._vectors, vectors])
        self.demos.extend(new)
        return len(new)

    def _embed(self, sentences: Sequence[str]) -> np.ndarray:
        """Unit vectors of ``sentences``, from the project's cache where it has them (new ones are stored)."""
        prefix = self.encoder.key
        keys = [hashlib.sha256(f"{prefix}\0{s}".encode()).hexdigest() for s in sentences]
        cached: dict[str, bytes] = {}
        for start in range(0, len(keys), 500):
            part = keys[start:start + 500]
            rows = self.project.db.execute(
                f"SELECT key, vector FROM demo_vectors WHERE key IN ({','.join('?' * len(part))})", part).fetchall()
            cached.update({k: v for k, v in rows})
        todo: dict[str, str] = {}
        for key, sentence in zip(keys, sentences, strict=True):
            if key not in cached:
                todo.setdefault(key, sentence)
        if todo:
            fresh = self.encoder.encode(list(todo.values())).astype(np.float32)
            rows = {key: vector.tobytes() for key, vector in zip(todo, fresh, strict=True)}
            if not self.project.readonly:
                self.project.writer.run(lambda conn: conn.executemany(
                    "INSERT OR IGNORE INTO demo_vectors (key, vector) VALUES (?, ?)", list(rows.items())))
            cached.update(rows)
        return np.vstack([np.frombuffer(cached[k], dtype=np.float32) for k in keys])

    def nearest(self, sentence: str, label: str, target: str, k: int, *, exclude: str = "") -> list[Demo]:
        """The ``k`` demos nearest to ``sentence`` that edit ``label`` toward ``target``, nearest first, one per
        edited sentence, none of the text whose :func:`text_hash` is ``exclude``."""
        if k <= 0 or not self.demos:
            return []
        rows = [i for i, d in enumerate(self.demos) if d.label == label and d.target == target and d.origin != exclude]
        if not rows:
            return []
        if sentence not in self._queries:
            self._queries[sentence] = self._embed([sentence])[0]
        scores = self._vectors[rows] @ self._queries[sentence]
        out: list[Demo] = []
        for n in np.argsort(-scores, kind="stable"):
            demo = self.demos[rows[int(n)]]
            if demo.sentence != sentence and all(demo.edited != d.edited for d in out):
                out.append(demo)
            if len(out) == k:
                break
        return out


def with_demos(messages: list[dict[str, str]], demos: Sequence[Demo], render: Callable[[Demo], str],
               ) -> list[dict[str, str]]:
    """The request's messages with its invented examples (every turn between the system message and the last user
    message) replaced by ``demos``: each a user turn rendered like the real one, the edited sentence as the answer."""
    if not demos:
        return messages
    turns = []
    for demo in demos:
        turns += [{"role": "user", "content": render(demo)}, {"role": "assistant", "content": demo.edited}]
    return [messages[0], *turns, messages[-1]]
