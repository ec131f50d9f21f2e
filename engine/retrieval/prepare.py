"""A corpus made ready for CORE in one job: import a file, label its sentences, embed and index them.

The GUI's *Corpus…* dialog runs :func:`prepare_corpus` as one job (the CLI has the same steps as
the verbs ``corpus … --label-with`` and ``index``). Each step is resumable on its own — the import
skips the records already read, labelling the sentences already labelled, embedding the rows
already embedded, and a current index is reopened — so a cancelled or killed preparation goes on
where it stopped when it is started again, and running it on a ready corpus costs seconds.

Progress is shared by cost: on a CPU, labelling and embedding each cost a forward pass of a small
encoder per sentence and take nearly all of the time; reading and splitting the file the rest.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.progress import CancelToken, ProgressFn, ensure_token, no_progress, scaled

if TYPE_CHECKING:
    from engine.retrieval.corpus import CorpusImportResult, LabelResult
    from engine.store import Project

__all__ = ["CorpusPreparation", "prepare_corpus"]

#: Shares of the progress bar: import, label, embed + index (a forward pass per sentence each for
#: the last two; reading and splitting is cheaper).
SHARES = (0.1, 0.45, 0.45)


@dataclass(frozen=True)
class CorpusPreparation:
    """What :func:`prepare_corpus` did.

    Attributes
    ----------
    corpus
        The corpus name.
    sentences
        Sentences it holds now.
    imported
        The import's result (``None`` without a file).
    labelled
        The labelling's result (``None`` without a member).
    index_kind, index_built
        The index kind, and whether this call built it (``False``: a current one was reopened).
    seconds
        Wall time of the call.
    """

    corpus: str
    sentences: int
    imported: CorpusImportResult | None
    labelled: LabelResult | None
    index_kind: str
    index_built: bool
    seconds: float

    def summary(self) -> str:
        """One line for a status bar."""
        parts = [f"corpus {self.corpus!r}: {self.sentences:,} sentences"]
        if self.imported is not None:
            parts.append(f"{self.imported.sentences_added:,} added ({self.imported.duplicates:,} duplicates dropped)")
        if self.labelled is not None:
            counts = ", ".join(f"{k} {v:,}" for k, v in sorted(self.labelled.label_counts.items()))
            parts.append(f"labelled by {self.labelled.model_name} ({counts})")
        parts.append(f"{self.index_kind} index {'built' if self.index_built else 'reopened'}")
        return "; ".join(parts) + f" in {self.seconds:.1f} s"


def prepare_corpus(
    project: Project,
    name: str,
    *,
    path: str | Path | None = None,
    member: str | None = None,
    encoder: str = "minilm-l6",
    encoder_options: dict[str, Any] | None = None,
    index_kind: str = "auto",
    params: dict[str, Any] | None = None,
    progress: ProgressFn = no_progress,
    cancel: CancelToken | None = None,
) -> CorpusPreparation:
    """Import ``path`` into corpus ``name`` (if given), label it with ``member`` (if given), and
    embed and index it, each step resuming what an earlier call left.

    Parameters
    ----------
    project
        The open project.
    name
        The corpus (created by the import when new).
    path
        A CSV/TSV/JSONL/plain-text file to add (:func:`engine.retrieval.corpus.import_corpus`).
    member
        The trained single-text member whose labels CORE filters excerpts by.
    encoder, encoder_options
        The sentence encoder (:func:`engine.retrieval.encoders.make_encoder`).
    index_kind, params
        The index kind (``auto``: exact for small corpora, IVF for large ones) and its settings.
    progress, cancel
        Reported through every step; checked between batches. Cancelling keeps what was done.

    Raises
    ------
    engine.retrieval.errors.RetrievalError
        A missing corpus (no ``path`` and no corpus of that name), an empty file, an unknown
        member, encoder or index kind: each a named error that says what to do.
    engine.errors.Cancelled
    """
    from engine.retrieval.corpus import get_corpus, import_corpus, label_corpus
    from engine.retrieval.encoders import make_encoder
    from engine.retrieval.index import build_index

    token = ensure_token(cancel)
    started = time.perf_counter()
    shares = [SHARES[0] if path is not None else 0.0, SHARES[1] if member else 0.0, SHARES[2]]
    total = sum(shares)
    edges = [sum(shares[:i]) / total for i in range(4)]
    imported = labelled = None
    if path is not None:
        progress(edges[0], f"importing {Path(path).name} into {name!r}")
        imported = import_corpus(project, name, path, progress=scaled(progress, edges[0], edges[1]), cancel=token)
    corpus = get_corpus(project, name)  # a named error when there is no such corpus
    if member:
        progress(edges[1], f"labelling {corpus.sentence_count:,} sentences with {member}")
        labelled = label_corpus(project, name, member, progress=scaled(progress, edges[1], edges[2]), cancel=token)
    token.raise_if_cancelled()
    progress(edges[2], f"embedding and indexing {corpus.sentence_count:,} sentences")
    index = build_index(project, name, make_encoder(encoder, **(encoder_options or {})), kind=index_kind,
                        params=params,
                        progress=scaled(progress, edges[2], 1.0), cancel=token)
    result = CorpusPreparation(name, get_corpus(project, name).sentence_count, imported, labelled,
                               index.kind.name, index.built, time.perf_counter() - started)
    progress(1.0, result.summary())
    return result
