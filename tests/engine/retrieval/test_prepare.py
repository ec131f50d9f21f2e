"""One job makes a corpus ready for CORE: import, label, embed and index; resumable and cheap to repeat."""

from __future__ import annotations

import pytest

from engine.errors import Cancelled
from engine.progress import CancelToken
from engine.retrieval.corpus import corpus_labels, get_corpus
from engine.retrieval.errors import CorpusNotFoundError
from engine.retrieval.prepare import prepare_corpus
from engine.retrieval.retrieve import open_retriever

from .conftest import need_faiss

TEXT = ("An unexpectedly charming little film. Loved every minute of it.\n"
        "A tedious, joyless slog. The actors look bored.\n"
        "Warm, funny and beautifully shot.\n")


def test_import_label_and_index_in_one_job_then_reopen(labelled_project, tmp_path):
    need_faiss()
    src = tmp_path / "reviews.txt"
    src.write_text(TEXT, encoding="utf-8")
    seen: list[float] = []
    done = prepare_corpus(labelled_project, "mine", path=src, member="judge", index_kind="flat",
                          progress=lambda f, m="": seen.append(f))
    assert done.sentences == 5 and done.imported.sentences_added == 5 and done.index_built
    assert done.labelled.labelled_now == 5 and sum(done.labelled.label_counts.values()) == 5
    assert seen == sorted(seen) and seen[-1] == 1.0 and "5 sentences" in done.summary()
    labels = corpus_labels(labelled_project, "mine", "judge")
    assert len(labels.index) == 5
    hits = open_retriever(labelled_project, "mine", "judge", kind="flat").search(["A dreadful bore."], ["Negative"], k=2)
    assert hits[0] and all(h.label == "Positive" for h in hits[0])
    # again, without the file: nothing to label, the index reopened from disk
    again = prepare_corpus(labelled_project, "mine", member="judge", index_kind="flat")
    assert again.imported is None and again.labelled.labelled_now == 0 and not again.index_built


def test_cancel_keeps_what_was_done_and_missing_corpus_is_named(labelled_project, tmp_path):
    need_faiss()
    src = tmp_path / "reviews.txt"
    src.write_text(TEXT, encoding="utf-8")
    token = CancelToken()

    def cancel_when_labelling(fraction: float, message: str = "") -> None:
        if message.startswith("labelling"):
            token.cancel()

    with pytest.raises(Cancelled):
        prepare_corpus(labelled_project, "mine", path=src, member="judge", index_kind="flat",
                       progress=cancel_when_labelling, cancel=token)
    assert get_corpus(labelled_project, "mine").sentence_count == 5      # the import stays
    done = prepare_corpus(labelled_project, "mine", member="judge", index_kind="flat")
    assert done.labelled.labelled_now == 5 and done.index_built
    with pytest.raises(CorpusNotFoundError):
        prepare_corpus(labelled_project, "nope", member="judge")
