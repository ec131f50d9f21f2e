"""Counterfactual retrieval: the nearest corpus excerpts whose label differs from the query's.

A :class:`Retriever` joins an open index (:mod:`engine.retrieval.index`), the encoder that built
it and the corpus labels of one member (:func:`engine.retrieval.corpus.corpus_labels`). For each
query it asks the index for ``over_fetch × k`` neighbours, drops every excerpt whose label equals
the query's label (or, with a target label, every excerpt not of that label) and every excerpt
that is the query itself; queries left with fewer than ``k`` ask again with four times as many
neighbours, until ``k`` are found or the index has no more to give (all rows, or the lists an IVF
search probes). Same-label excerpts are never returned.

With ``diversity`` > 0 the ``k`` excerpts are chosen from the eligible neighbours by maximal
marginal relevance (Carbonell & Goldstein 1998): each next excerpt maximises
``(1 - diversity) · sim(query, e) - diversity · max sim(e, chosen)``, so that near-duplicates
("This movie was awful." / "This film was awful.") do not fill the list and the keywords the
editor gets cover more than one way of expressing the label.

:func:`retrieve_for_examples` runs it over examples of a dataset (whole texts, or each sentence)
as a job: progress, cancel, and each result stored in ``retrievals`` as it is produced, so a rerun
with the same settings skips what is stored.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress
from engine.retrieval.corpus import CorpusLabels, corpus_labels, get_corpus, sentence_hash, sentences_at
from engine.retrieval.encoders import encode_queries, normalise_rows
from engine.retrieval.errors import LabelSpaceError
from engine.retrieval.keywords import extract_keywords
from engine.store.schema import now

if TYPE_CHECKING:
    from engine.retrieval.encoders import Encoder
    from engine.retrieval.index import CorpusIndex
    from engine.store import Project

__all__ = ["Hit", "Retriever", "RetrievalRun", "mmr_select", "open_retriever", "retrieve_for_examples", "stored_retrievals"]


@dataclass(frozen=True)
class Hit:
    """One retrieved excerpt.

    Attributes
    ----------
    position
        The sentence's corpus position.
    score
        Cosine similarity to the query.
    label, probability
        Its label under the labelling member, and the probability the member gave it.
    """

    position: int
    text: str
    score: float
    label: str
    probability: float

    def to_dict(self) -> dict[str, Any]:
        return {"position": self.position, "text": self.text, "score": round(self.score, 6), "label": self.label,
                "probability": round(self.probability, 6)}


class Retriever:
    """Searches a corpus index for excerpts of another label.

    Parameters
    ----------
    project
        The open project (for the excerpts' texts).
    corpus
        The corpus name.
    index
        Its open index.
    encoder
        The encoder that built the index (queries are encoded with it).
    labels
        The corpus labels of one member.
    """

    def __init__(self, project: Project, corpus: str, index: CorpusIndex, encoder: Encoder,
                 labels: CorpusLabels) -> None:
        self.project = project
        self.corpus = get_corpus(project, corpus)
        self.index = index
        self.encoder = encoder
        self.labels = labels
        self._label_index = {name: i for i, name in enumerate(labels.labels)}

    @property
    def settings_key(self) -> str:
        """Hash of what decides the results (corpus version, encoder, index and its settings, labeller)."""
        raw = json.dumps([self.index.key, self.index.search, self.labels.model_id], sort_keys=True, default=str)
        return hashlib.sha256(raw.encode()).hexdigest()[:16]

    def label_index(self, label: str) -> int:
        """The column of ``label`` among the labelling member's labels.

        Raises
        ------
        LabelSpaceError
        """
        if label not in self._label_index:
            raise LabelSpaceError(
                f"Label {label!r} is not one of the labelling model's labels ({', '.join(self.labels.labels)}).",
                "Label the corpus with a member trained on this dataset's labels.")
        return self._label_index[label]

    def search(
        self,
        queries: Sequence[str],
        labels: Sequence[str],
        *,
        k: int = 5,
        targets: Sequence[str | None] | None = None,
        over_fetch: int = 4,
        diversity: float = 0.0,
        cancel: CancelToken | None = None,
    ) -> list[list[Hit]]:
        """The ``k`` nearest excerpts of another label for each query.

        Parameters
        ----------
        queries
            Query texts.
        labels
            Each query's label: its excerpts must have another label.
        k
            Excerpts per query (fewer when the index has no more of another label).
        targets
            Per query, a label the excerpts must have (``None``: any label but the query's).
        over_fetch
            Neighbours asked for per wanted excerpt in the first search.
        diversity
            0 (default): the ``k`` nearest. Above 0 (at most 1): the ``k`` are picked by maximal
            marginal relevance among the eligible neighbours (at least ``4 k`` of them are
            fetched), trading closeness to the query for difference from the excerpts already
            picked.
        cancel
            Checked between searches.

        Returns
        -------
        list of list of Hit
            Best first.
        """
        cancel = ensure_token(cancel)
        if len(labels) != len(queries):
            raise ValueError("one label per query")
        own = np.array([self.label_index(label) for label in labels], dtype=np.int64)
        want = np.array([-1 if t is None else self.label_index(t) for t in (targets or [None] * len(queries))])
        if len(want) and np.any((want >= 0) & (want == own)):
            raise LabelSpaceError("A target label equals its query's label.", "Ask for another label as target.")
        vectors = encode_queries(self.encoder, queries, cancel=cancel)  # a trained retriever reads them as queries
        query_hashes = [sentence_hash(q) for q in queries]
        found: list[list[tuple[int, float]]] = [[] for _ in queries]
        pending = list(range(len(queries)))
        if not 0.0 <= diversity <= 1.0:
            raise ValueError("diversity must lie in [0, 1]")
        pool = k if diversity <= 0 else 4 * k  # eligible neighbours to choose the k from
        fetch = max(1, pool * max(1, over_fetch))
        rows = self.index.rows
        while pending:
            cancel.raise_if_cancelled()
            fetch = min(fetch, rows)
            scores, ids = self.index.query(vectors[pending], fetch)
            still: list[int] = []
            for row, q in enumerate(pending):
                picked: list[tuple[int, float]] = []
                candidates = [(int(i), float(s)) for i, s in zip(ids[row], scores[row], strict=True) if i >= 0]
                for position, score in candidates:
                    label = int(self.labels.index[position])
                    if label == own[q] or (want[q] >= 0 and label != want[q]):
                        continue
                    picked.append((position, score))
                picked = self._without_query(picked, query_hashes[q], pool)
                found[q] = picked[:pool]
                exhausted = fetch >= rows or len(candidates) < fetch
                if len(found[q]) < pool and not exhausted:
                    still.append(q)
            pending = still
            fetch *= 4
        if diversity > 0:
            found = [self._mmr(vectors[q], hits, k, diversity) for q, hits in enumerate(found)]
        return [[self._hit(position, score) for position, score in hits] for hits in found]

    def _excerpt_vectors(self, positions: Sequence[int]) -> np.ndarray:
        """Vectors of the excerpts at ``positions``, read from the embeddings the open index holds (memory-mapped)."""
        if self.index.exact is None:
            from engine.retrieval.vectors import open_vectors

            self.index.exact = open_vectors(self.project, self.corpus.name, self.encoder.key).vectors
        order = np.argsort(positions)
        rows = np.asarray(self.index.exact[np.asarray(positions)[order]], dtype=np.float32)
        out = np.empty_like(rows)
        out[order] = rows
        return out

    def _mmr(self, query: np.ndarray, hits: list[tuple[int, float]], k: int,
             diversity: float) -> list[tuple[int, float]]:
        """``k`` of ``hits`` by maximal marginal relevance (scores stay the index's)."""
        if len(hits) <= 1:
            return hits[:k]
        chosen = mmr_select(query, self._excerpt_vectors([p for p, _ in hits]), k, diversity)
        return [hits[i] for i in chosen]

    def _without_query(self, picked: list[tuple[int, float]], query_hash: str, k: int) -> list[tuple[int, float]]:
        """``picked`` without excerpts that are the query itself (checked on the first k + a few only)."""
        head = picked[: k + 4]
        texts = sentences_at(self.project, self.corpus.id, [p for p, _ in head])
        drop = {p for (p, _), text in zip(head, texts, strict=True) if sentence_hash(text) == query_hash}
        return [(p, s) for p, s in picked if p not in drop]

    def _hit(self, position: int, score: float) -> Hit:
        label = int(self.labels.index[position])
        text = sentences_at(self.project, self.corpus.id, [position])[0]
        return Hit(position, text, score, self.labels.labels[label], float(self.labels.probs[position, label]))


def mmr_select(query: np.ndarray, candidates: np.ndarray, k: int, diversity: float) -> list[int]:
    """Indices of ``k`` rows of ``candidates`` picked by maximal marginal relevance.

    Each next pick maximises ``(1 - diversity) · cos(query, c) - diversity · max cos(c, picked)``;
    the first is always the most similar to the query. ``diversity`` 0 gives the nearest ``k``.

    Examples
    --------
    >>> q = np.array([1.0, 0.0])
    >>> c = np.array([[1.0, 0.0], [0.99, 0.14], [0.8, -0.6]])
    >>> mmr_select(q, c, 2, 0.0), mmr_select(q, c, 2, 0.7)
    ([0, 1], [0, 2])
    """
    vectors = normalise_rows(candidates)
    relevance = vectors @ normalise_rows(np.asarray(query, dtype=np.float32)[None, :])[0]
    chosen: list[int] = []
    closest = np.full(len(vectors), -np.inf, dtype=np.float32)  # max similarity to a picked row
    left = list(range(len(vectors)))
    while left and len(chosen) < k:
        penalty = np.where(np.isfinite(closest[left]), closest[left], 0.0)
        gain = (1.0 - diversity) * relevance[left] - diversity * penalty
        best = left[int(np.argmax(gain))]
        chosen.append(best)
        left.remove(best)
        closest = np.maximum(closest, vectors @ vectors[best])
    return chosen


def open_retriever(
    project: Project,
    corpus: str,
    model_name: str,
    *,
    encoder: str = "minilm-l6",
    encoder_options: dict[str, Any] | None = None,
    kind: str = "auto",
    params: dict[str, Any] | None = None,
) -> Retriever:
    """A :class:`Retriever` over the stored index (never builds; see :func:`engine.retrieval.index.build_index`).

    Raises
    ------
    engine.retrieval.errors.IndexNotBuiltError, NotLabelledError, CorpusNotFoundError, EncoderError
    """
    from engine.retrieval.encoders import make_encoder
    from engine.retrieval.index import open_index

    enc = make_encoder(encoder, **(encoder_options or {}))
    index = open_index(project, corpus, enc.key, kind=kind, params=params)
    return Retriever(project, corpus, index, enc, corpus_labels(project, corpus, model_name))


# --------------------------------------------------------------------------- over a dataset


@dataclass(frozen=True)
class RetrievalRun:
    """What :func:`retrieve_for_examples` did: queries answered now, skipped (stored), and the results."""

    settings_key: str
    computed: int
    skipped: int
    results: list[dict[str, Any]]


def _queries(project: Project, example_ids: Sequence[int], field: str, per_sentence: bool) -> list[dict[str, Any]]:
    from engine.text.sentences import split_sentences

    out = []
    for row in project.examples(list(example_ids)):
        text = row.get(field) or ""
        pieces = list(enumerate(split_sentences(text))) if per_sentence else [(-1, text)]
        for index, query in pieces:
            if query.strip():
                out.append({"example_id": int(row["id"]), "sentence_index": index, "query": query,
                            "label": row["label"]})
    return out


def retrieve_for_examples(
    project: Project,
    retriever: Retriever,
    example_ids: Sequence[int],
    *,
    k: int = 5,
    per_sentence: bool = False,
    field: str = "text",
    max_keywords: int | None = 20,
    batch: int = 64,
    diversity: float = 0.0,
    run_id: int | None = None,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> RetrievalRun:
    """Retrieve other-label excerpts and their keywords for examples; store each result.

    Parameters
    ----------
    example_ids
        The examples (their gold label is the query label).
    k
        Excerpts per query.
    per_sentence
        One query per sentence of the text (CORE retrieves for the sentences that carry the
        label); else one query per text.
    field
        The text field (``text``, or ``hypothesis``/``premise`` for pairs).
    max_keywords
        Keywords kept per query.
    batch
        Queries per search.
    diversity
        Maximal-marginal-relevance weight of :meth:`Retriever.search` (0: the nearest; part of
        the stored results' key).
    run_id
        The ``runs`` row the results belong to.
    progress, cancel
        Reported and checked per batch.
    """
    cancel = ensure_token(cancel)
    key = f"{retriever.settings_key}-k{k}" + (f"-mmr{diversity:g}" if diversity > 0 else "")
    queries = _queries(project, example_ids, field, per_sentence)
    # a stored query of another text (a sentence numbered by an older splitter) is asked again
    done = {(int(r[0]), int(r[1]), r[2]) for r in project.db.execute(
        "SELECT example_id, sentence_index, query FROM retrievals WHERE corpus_id = ? AND settings_key = ?",
        [retriever.corpus.id, key]).fetchall()}
    todo = [q for q in queries if (q["example_id"], q["sentence_index"], q["query"]) not in done]
    for q in todo:
        retriever.label_index(q["label"])  # a foreign label fails before any work
    computed = 0
    for start in range(0, len(todo), batch):
        cancel.raise_if_cancelled()
        chunk = todo[start : start + batch]
        hits = retriever.search([q["query"] for q in chunk], [q["label"] for q in chunk], k=k, diversity=diversity,
                                cancel=cancel)
        rows = []
        for q, found in zip(chunk, hits, strict=True):
            words = extract_keywords([h.text for h in found], exclude=q["query"], max_words=max_keywords)
            rows.append((run_id, retriever.corpus.id, key, q["example_id"], q["sentence_index"], q["query"],
                         q["label"], json.dumps([h.to_dict() for h in found], ensure_ascii=False),
                         json.dumps(words, ensure_ascii=False), now()))

        def write(conn: sqlite3.Connection, rows: list[tuple] = rows) -> None:
            conn.executemany(
                "INSERT OR REPLACE INTO retrievals (run_id, corpus_id, settings_key, example_id, sentence_index, query, "
                "query_label, hits, keywords, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)

        project.writer.run(write)
        computed += len(chunk)
        progress(computed / len(todo), f"retrieved for {computed:,}/{len(todo):,} queries")
    progress(1.0, f"retrieved for {computed:,} queries ({len(queries) - len(todo):,} already stored)")
    return RetrievalRun(key, computed, len(queries) - len(todo),
                        stored_retrievals(project, retriever.corpus.id, key, example_ids))


def stored_retrievals(project: Project, corpus_id: int, settings_key: str,
                      example_ids: Sequence[int] | None = None) -> list[dict[str, Any]]:
    """Stored results (``example_id``, ``sentence_index``, ``query``, ``query_label``, ``hits``, ``keywords``)."""
    rows = project.db.execute(
        "SELECT example_id, sentence_index, query, query_label, hits, keywords FROM retrievals "
        "WHERE corpus_id = ? AND settings_key = ? ORDER BY example_id, sentence_index", [corpus_id, settings_key]
    ).fetchall()
    wanted = None if example_ids is None else {int(i) for i in example_ids}
    return [{"example_id": r[0], "sentence_index": r[1], "query": r[2], "query_label": r[3],
             "hits": json.loads(r[4]), "keywords": json.loads(r[5])}
            for r in rows if wanted is None or r[0] in wanted]
